"""The project's OCR and Tesseract 5 side by side, on the same images; one table.

Usage::

    python scripts/compare_tesseract.py                # the reserved material, about 25 minutes
    python scripts/compare_tesseract.py --quick        # fewer samples, a few minutes
    python scripts/compare_tesseract.py --pdf DOC.pdf:3-5 --pdf OTHER.pdf:1   # your own PDFs

Material (by default the project's reserved material, which no model trained, validated or
was chosen on): single words rendered in the reserved type families (Liberation, FreeFont,
URW base35, TeX Gyre) in clean print; words and lines cut from real PDFs and whole pages of them, rasterised
by poppler at 110, 150 and 300 dpi and in a scanner's look (300 dpi, a slight rotation, blur,
noise, grey paper). The truth of a PDF is poppler's text layer (``pdftotext -bbox-layout``),
its typographic characters spelt in ASCII.

Both systems read exactly the same image files: the project through its library (one process,
its start-up counted once), Tesseract (``tesseract``, Debian's ``tesseract-ocr`` and
``tesseract-ocr-eng``; a comparison tool, never a dependency of the package) one process per
image as its command line is used: ``--psm 8`` for a word, ``--psm 7`` for a line, ``--psm 4``
for a page (one column of lines). Words are scored lower-cased with only letters and digits
(the word sets are case-blind); lines and pages exactly (CER, WER, rows exactly right).
Install the material with ``scripts/install_system_packages.sh --compare``.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image, ImageFilter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.ocr.charset import Charset  # noqa: E402
from crnn_multigpu.datasets.lines import ascii_spelling  # noqa: E402
from crnn_multigpu.ocr.metrics import edit_distance, scoring_fold, text_metrics  # noqa: E402
from page_check import layout_rows, page_numbers, rows_read_exactly  # noqa: E402
from pdf_words import MARGIN_PT, find_words, word_crop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The reserved PDFs (Debian libtasn1-doc, shared-mime-info, python-reportlab-doc) and pages.
RESERVED_PAGES = (("/usr/share/doc/libtasn1-doc/libtasn1.pdf", "5-8"),
                  ("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", "3-6"),
                  ("/usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf", "10-12"))
PAGE_LOOKS = ("110 dpi", "150 dpi", "300 dpi", "scanned")
FOLD = scoring_fold(fold_case=True, alnum=True)
PRINTABLE = set(Charset.printable_ascii().chars)


def fail(message):
    sys.exit("error: " + message)


# ----- the two readers -------------------------------------------------------------------

class Tesseract(object):
    """Tesseract's command line, one process per image (as a user runs it)."""

    def __init__(self):
        try:
            version = subprocess.run(["tesseract", "--version"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, check=True).stdout.decode()
        except (OSError, subprocess.CalledProcessError):
            fail("tesseract not found; install it (scripts/install_system_packages.sh --compare, "
                 "or apt-get install tesseract-ocr tesseract-ocr-eng)")
        self.version = version.splitlines()[0]
        self.env = dict(os.environ, OMP_THREAD_LIMIT="1")
        self.read_before = {}  # (path, psm) -> text: both word models are compared on one set

    def read(self, path, psm):
        """The text Tesseract reads in the image file ``path`` with page segmentation ``psm``."""
        if (path, psm) not in self.read_before:
            done = subprocess.run(["tesseract", path, "stdout", "--psm", str(psm), "-l", "eng"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env)
            self.read_before[path, psm] = done.stdout.decode("utf-8", "replace")
        return self.read_before[path, psm]

    def text(self, path, psm):
        """The text read, its typographic characters spelt in ASCII as the truth's are (the
        project's models write ASCII), spaces tidied."""
        return tidy(ascii_spelling(self.read(path, psm)))

    def lines(self, path, psm):
        """Non-empty lines of the text read, spelt and tidied as ``text``."""
        return [tidy(ascii_spelling(line)) for line in self.read(path, psm).splitlines()
                if line.strip()]


class Project(object):
    """The project's readers: the word model for words, the line model for lines and pages."""

    def __init__(self, word_model, line_model):
        from crnn_multigpu.ocr.inference import Recognizer
        started = time.time()
        self.words = Recognizer(word_model) if word_model else None
        self.lines = Recognizer(line_model)
        self.startup = time.time() - started

    def read_words(self, recognizer, paths):
        from crnn_multigpu.datasets import load_image
        arrays = [load_image(path, recognizer.model.height) for path in paths]
        return recognizer.read_crops(arrays)[0]

    def read_page(self, path):
        from crnn_multigpu.ocr.inference import read_page_lines
        from crnn_multigpu.ocr.page import page_text
        with Image.open(path) as image:
            _, boxes, texts = read_page_lines(self.lines, image)
        return [tidy(line) for line in page_text(boxes, texts).split("\n") if line.strip()]


def tidy(text):
    return re.sub(r"\s+", " ", text).strip()


# ----- material --------------------------------------------------------------------------

def rasterise(pdf, page, dpi, prefix):
    subprocess.run(["pdftoppm", "-gray", "-r", str(dpi), "-png", "-singlefile", "-f", str(page),
                    "-l", str(page), pdf, prefix], check=True)
    return prefix + ".png"


def scanned_look(path, rng):
    """The page as a flatbed scanner gives it back: turned by up to 0.5 degrees, a little
    blurred, grey paper with uneven shading, sensor noise."""
    image = Image.open(path).convert("L")
    angle = rng.uniform(-0.5, 0.5)
    image = image.rotate(angle, resample=Image.BICUBIC, expand=False, fillcolor=255)
    image = image.filter(ImageFilter.GaussianBlur(0.8))
    pixels = np.asarray(image, dtype=np.float32) / 255.0
    height, width = pixels.shape
    shade = 0.86 + 0.06 * np.linspace(0, 1, width)[None, :] * np.linspace(1, 0.6, height)[:, None]
    pixels = pixels * shade + rng.normal(0, 0.035, pixels.shape)
    Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8)).save(path)
    return angle


def row_texts(pdf, page):
    """Poppler's text rows of a page (``page_check.layout_rows``), top to bottom: ``[(box in
    points, text)]``, the words of a row joined left to right and spelled in ASCII."""
    return [(box, ascii_spelling(" ".join(word[4] for word in sorted(words))))
            for box, words in layout_rows(pdf, page)]


def render_words(out, count, seed):
    """``count`` dictionary words set in clean print (dark on white, 20-44 px, no neighbours
    or degradations) in the reserved families; ``([(path, label)], number of faces)``."""
    from PIL import ImageDraw
    from crnn_multigpu.datasets.fonts import find_fonts, is_reserved, load_font
    from crnn_multigpu.datasets.words import default_word_list
    fonts = [path for path in find_fonts(chars=Charset.default().chars, include_reserved=True)
             if is_reserved(path)]
    if not fonts:
        fail("no reserved type families installed (Liberation, FreeFont, URW base35, TeX Gyre); "
             "run scripts/install_system_packages.sh --compare")
    if default_word_list() is None:
        fail("no system word list; apt-get install wamerican")
    with open(default_word_list(), encoding="utf-8") as stream:
        words = sorted(set(w for w in stream.read().split() if re.fullmatch(r"[a-z]{2,12}", w)))
    rng, samples = np.random.RandomState(seed), []
    for index in range(count):
        word = words[rng.randint(len(words))]
        word = (word, word.capitalize(), word.upper())[rng.choice(3, p=(0.6, 0.3, 0.1))]
        font = load_font(fonts[rng.randint(len(fonts))], int(rng.randint(20, 45)))
        left, top, right, bottom = font.getbbox(word)
        margin = max(4, (bottom - top) // 3)
        image = Image.new("L", (right - left + 2 * margin, bottom - top + 2 * margin), 255)
        ImageDraw.Draw(image).text((margin - left, margin - top), word, fill=0, font=font)
        path = os.path.join(out, "render%05d.png" % index)
        image.save(path)
        samples.append((path, word))
    return samples, len(set(fonts))


def cut_pdf_words(out, pdfs, count, seed, dpi=110):
    """``count`` words drawn from the PDFs' text layers, cropped at ``dpi``."""
    found = []
    for pdf, _ in pdfs:
        found.extend((pdf, page, box, text) for page, box, text in find_words(pdf)[2])
    rng = np.random.RandomState(seed)
    picked = sorted((found[i] for i in rng.choice(len(found), min(count, len(found)),
                                                  replace=False)), key=lambda s: s[:2])
    return crop_boxes(out, "word", picked, dpi, margin=MARGIN_PT)


def cut_pdf_lines(out, pdfs, count, seed, dpi=150):
    """``count`` printable-ASCII lines of the PDFs' chosen pages, cropped at ``dpi``."""
    found = []
    for pdf, pages in pdfs:
        for page in page_numbers(pages):
            found.extend((pdf, page, box, text) for box, text in row_texts(pdf, page)
                         if text and set(text) <= PRINTABLE)
    rng = np.random.RandomState(seed)
    picked = sorted((found[i] for i in rng.choice(len(found), min(count, len(found)),
                                                  replace=False)), key=lambda s: s[:2])
    return crop_boxes(out, "line", picked, dpi, margin=(3.0, 1.5))


def crop_boxes(out, name, picked, dpi, margin):
    """``[(path, text)]``: each picked ``(pdf, page, box, text)`` cut from its page rasterised at
    ``dpi`` (each page once, in order) with ``margin`` points around the box, saved in ``out``."""
    samples, key, image = [], None, None
    for index, (pdf, page, box, text) in enumerate(picked):
        if (pdf, page) != key:
            image = Image.open(rasterise(pdf, page, dpi, os.path.join(out, "page"))).convert("L")
            key = (pdf, page)
        crop = word_crop(image, box, dpi, margin)
        path = os.path.join(out, "%s%05d.png" % (name, index))
        crop.save(path)
        samples.append((path, text))
    return samples


# ----- scoring ---------------------------------------------------------------------------

def page_scores(read_lines, truth_lines):
    """Edits, characters, word edits, words, rows exactly right and rows of one page."""
    read_text, truth_text = "\n".join(read_lines), "\n".join(truth_lines)
    read_words, truth_words = read_text.split(), truth_text.split()
    # Word-level edit distance: map each distinct word to one character.
    vocabulary = {}
    as_chars = lambda words: "".join(chr(0x100 + vocabulary.setdefault(w, len(vocabulary)))  # noqa
                                     for w in words)
    word_edits = edit_distance(as_chars(read_words), as_chars(truth_words))
    return np.array([edit_distance(read_text, truth_text), len(truth_text), word_edits,
                     len(truth_words), rows_read_exactly(read_lines, truth_lines),
                     len(truth_lines)], dtype=np.float64)


def sample_figures(readings, labels, fold=None):
    if fold is not None:
        readings, labels = [fold(t) for t in readings], [fold(t) for t in labels]
    return text_metrics(readings, labels)


# ----- the comparison --------------------------------------------------------------------

def side_by_side(samples, ours, theirs, path, count=14):
    """A PNG of lines where the two readings differ: the crop, the truth, both readings
    (green when exactly right, red when not)."""
    from PIL import ImageDraw
    from crnn_multigpu.ocr.picture import label_font
    font = label_font(15)
    chosen = [i for i in range(len(samples)) if ours[i] != theirs[i]][:count]
    rows, width = [], 0
    for i in chosen:
        crop = Image.open(samples[i][0]).convert("L")
        crop = crop.resize((max(1, int(crop.width * 36.0 / crop.height)), 36))
        rows.append((crop, samples[i][1], ours[i], theirs[i]))
        width = max(width, crop.width, 14 + 9 * max(len(samples[i][1]), len(ours[i]),
                                                    len(theirs[i])) + 110)
    canvas = Image.new("RGB", (min(width, 1400), sum(36 + 3 * 20 + 12 for _ in rows) or 1),
                       "white")
    draw, y = ImageDraw.Draw(canvas), 0
    for crop, truth, mine, other in rows:
        canvas.paste(crop.convert("RGB"), (0, y))
        y += 38
        for name, text in (("truth", truth), ("project", mine), ("Tesseract", other)):
            colour = (0, 0, 0) if name == "truth" else (0, 120, 0) if text == truth else (190, 0, 0)
            draw.text((4, y), "%-10s %s" % (name, text), fill=colour, font=font)
            y += 20
        y += 12
    canvas.save(path)
    print("wrote %s" % path, file=sys.stderr)


def compare_samples(title, samples, project_read, tesseract, psm, fold, picture=None):
    paths, labels = [p for p, _ in samples], [t for _, t in samples]
    ours = project_read(paths)
    theirs = [tesseract.text(path, psm) for path in paths]
    if picture:
        side_by_side(samples, ours, theirs, picture)
    rows = [sample_figures(ours, labels, fold), sample_figures(theirs, labels, fold)]
    print("%s: n=%d  project %.1f %% exact, CER %.2f %%  |  Tesseract %.1f %% exact, CER %.2f %%"
          % (title, len(samples), 100 * rows[0]["word_accuracy"], 100 * rows[0]["cer"],
             100 * rows[1]["word_accuracy"], 100 * rows[1]["cer"]), file=sys.stderr)
    return rows


def compare_pages(pdfs, project, tesseract, scratch, seed):
    """Per look: summed page scores of both systems, and their seconds per page."""
    rng = np.random.RandomState(seed)
    totals = dict((look, [np.zeros(6), np.zeros(6)]) for look in PAGE_LOOKS)
    seconds = dict((look, [0.0, 0.0]) for look in PAGE_LOOKS)
    pages = [(pdf, page) for pdf, spec in pdfs for page in page_numbers(spec)]
    for pdf, page in pages:
        truth = [text for _, text in row_texts(pdf, page) if text]
        for look in PAGE_LOOKS:
            dpi = 300 if look == "scanned" else int(look.split()[0])
            path = rasterise(pdf, page, dpi, os.path.join(scratch, "%s-%d-%s" % (
                os.path.basename(pdf), page, look.replace(" ", ""))))
            if look == "scanned":
                scanned_look(path, rng)
            started = time.time()
            ours = project.read_page(path)
            middle = time.time()
            theirs = tesseract.lines(path, 4)
            seconds[look][0] += middle - started
            seconds[look][1] += time.time() - middle
            totals[look][0] += page_scores(ours, truth)
            totals[look][1] += page_scores(theirs, truth)
        figures = totals[PAGE_LOOKS[1]]
        print("page %s:%d read (150 dpi so far: project %d, Tesseract %d of %d rows exactly)"
              % (os.path.basename(pdf), page, figures[0][4], figures[1][4], figures[0][5]),
              file=sys.stderr)
    return totals, seconds, len(pages)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", action="append", metavar="FILE:PAGES",
                        help="a PDF and its pages for lines and pages (default: the reserved PDFs)")
    parser.add_argument("--line-model", default=os.path.join(ROOT, "models", "text"))
    parser.add_argument("--word-model", default=os.path.join(ROOT, "models", "words"))
    parser.add_argument("--words", type=int, default=400, help="words per word set")
    parser.add_argument("--lines", type=int, default=300, help="lines cut from the PDFs")
    parser.add_argument("--quick", action="store_true", help="100 words, 100 lines, 1 page a PDF")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--picture", help="a PNG of PDF lines the two systems read differently")
    args = parser.parse_args(argv)
    pdfs = [tuple(spec.rsplit(":", 1)) if ":" in spec else (spec, "1") for spec in args.pdf] \
        if args.pdf else list(RESERVED_PAGES)
    for pdf, pages in pdfs:
        if not os.path.isfile(pdf):
            fail("%s not found; install the reserved PDFs with scripts/install_system_packages.sh "
                 "--compare, or pass --pdf FILE:PAGES" % pdf)
    if args.quick:
        args.words = args.lines = 100
        pdfs = [(pdf, pages.split("-")[0]) for pdf, pages in pdfs]
    tesseract = Tesseract()
    project = Project(args.word_model, args.line_model)
    table = collections.OrderedDict()
    with tempfile.TemporaryDirectory() as scratch:
        rendered, faces = render_words(scratch, args.words, args.seed)
        for title, samples in (("words rendered in %d reserved faces" % faces, rendered),
                               ("words cut from the PDFs, 110 dpi",
                                cut_pdf_words(scratch, pdfs, args.words, args.seed))):
            word_model = compare_samples(title + " (word model)", samples,
                                         lambda p: project.read_words(project.words, p),
                                         tesseract, 8, FOLD)
            text_model = compare_samples(title + " (text model)", samples,
                                         lambda p: project.read_words(project.lines, p),
                                         tesseract, 8, FOLD)
            table[title] = [("word accuracy, word model", word_model[0]["word_accuracy"],
                             word_model[1]["word_accuracy"], len(samples)),
                            ("word accuracy, line model", text_model[0]["word_accuracy"],
                             text_model[1]["word_accuracy"], len(samples))]
        lines = cut_pdf_lines(scratch, pdfs, args.lines, args.seed)
        figures = compare_samples("lines cut from the PDFs, 150 dpi", lines,
                                  lambda p: project.read_words(project.lines, p),
                                  tesseract, 7, None, picture=args.picture)
        table["lines cut from the PDFs, 150 dpi"] = [
            ("lines exactly right", figures[0]["word_accuracy"], figures[1]["word_accuracy"],
             len(lines)),
            ("CER", figures[0]["cer"], figures[1]["cer"], len(lines))]
        totals, seconds, n_pages = compare_pages(pdfs, project, tesseract, scratch, args.seed)
    for look in PAGE_LOOKS:
        ours, theirs = totals[look]
        table["pages, %s" % look] = [
            ("CER", ours[0] / ours[1], theirs[0] / theirs[1], n_pages),
            ("WER", ours[2] / ours[3], theirs[2] / theirs[3], n_pages),
            ("rows exactly right", ours[4] / ours[5], theirs[4] / theirs[5], int(ours[5])),
            ("seconds per page", seconds[look][0] / n_pages + project.startup / n_pages
             / len(PAGE_LOOKS), seconds[look][1] / n_pages, n_pages)]
    print("| material | figure | this project | %s | n |" % tesseract.version)
    print("|---|---|---|---|---|")
    for material, rows in table.items():
        for name, ours, theirs, n in rows:
            as_text = (lambda v: "%.2f" % v) if name.startswith("seconds") else \
                (lambda v: "%.2f %%" % (100 * v)) if name in ("CER", "WER") else \
                (lambda v: "%.1f %%" % (100 * v))
            better = (ours <= theirs) if name in ("CER", "WER") or name.startswith("seconds") \
                else (ours >= theirs)
            print("| %s | %s | %s%s | %s | %d |" % (material, name, as_text(ours),
                                                    "" if better else " (behind)",
                                                    as_text(theirs), n))
    print("pages: %s; project start-up %.1f s, counted once over all pages"
          % (", ".join("%s %s" % (os.path.basename(p), s) for p, s in pdfs), project.startup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
