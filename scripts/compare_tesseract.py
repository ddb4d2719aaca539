"""The project's OCR beside Tesseract 5 and PP-OCRv4, on the same images; one table.

Usage::

    python scripts/compare_tesseract.py                # the reserved material, about 25 minutes
    python scripts/compare_tesseract.py --quick        # fewer samples, a few minutes
    python scripts/compare_tesseract.py --pdf DOC.pdf:3-5 --pdf OTHER.pdf:1   # your own PDFs
    python scripts/compare_tesseract.py --faces heldout --words-only --words 1000
                                  # words in the held-out families, material a choice may use
    python scripts/compare_tesseract.py --words-only --photos DIR   # and photographed words

Material (by default the project's reserved material, which no model trained, validated or
was chosen on): single words rendered in the reserved type families (Liberation, FreeFont,
URW base35, TeX Gyre) in clean print; words and lines cut from real PDFs and whole pages of them, rasterised
by poppler at 110, 150 and 300 dpi and in a scanner's look (300 dpi, a slight rotation, blur,
noise, grey paper). The truth of a PDF is poppler's text layer (``pdftotext -bbox-layout``),
its typographic characters spelt in ASCII.

All systems read exactly the same image files: the project through its library (one process,
its start-up counted once), Tesseract (``tesseract``, Debian's ``tesseract-ocr`` and
``tesseract-ocr-eng``; a comparison tool, never a dependency of the package) one process per
image as its command line is used: ``--psm 8`` for a word, ``--psm 7`` for a line, ``--psm 4``
for a page (one column of lines); PP-OCRv4 (pip's rapidocr-onnxruntime 1.4.4 in its own venv,
``make venv-rapidocr``; read through ``scripts/pp_ocr.py``) one process per material, its
start-up counted once: words and lines by its recogniser alone, pages by its whole pipeline
(detection, orientation, recognition; the boxes put into rows, a row's pieces joined by a space).
The peers' output is spelt as the truth is (typographic characters in ASCII, spaces tidied);
full-width forms PP-OCR may write stay as written. Words are scored lower-cased with only
letters and digits (the word sets are case-blind); lines and pages exactly (CER, WER, rows
exactly right). Install the material with ``scripts/install_system_packages.sh --compare``.
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
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.datasets.lines import ascii_spelling  # noqa: E402
from crnn_multigpu.datasets.page_looks import look_of  # noqa: E402
from crnn_multigpu.ocr.metrics import edit_distance, scoring_fold, text_metrics  # noqa: E402
from crnn_multigpu.ocr.shipped import shipped_model  # noqa: E402
from page_check import layout_rows, page_numbers, rasterise, rows_read_exactly  # noqa: E402
from pdf_words import MARGIN_PT, find_words, word_crop  # noqa: E402
from pp_ocr import MISSING, PaddleOcr, rapidocr_ready  # noqa: E402
from reports import fail, save_picture  # noqa: E402

# The reserved PDFs (Debian libtasn1-doc, shared-mime-info, python-reportlab-doc) and pages.
RESERVED_PAGES = (("/usr/share/doc/libtasn1-doc/libtasn1.pdf", "5-8"),
                  ("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", "3-6"),
                  ("/usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf", "10-12"))
PAGE_LOOKS = ("110 dpi", "150 dpi", "300 dpi", "scanned")
FOLD = scoring_fold(fold_case=True, alnum=True)
PRINTABLE = set(Charset.printable_ascii().chars)


# ----- the readers -----------------------------------------------------------------------

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
        """The text read, :func:`spelt` as the truth is."""
        return spelt(self.read(path, psm))

    def lines(self, path, psm):
        """Non-empty lines of the text read, :func:`spelt`."""
        return [spelt(line) for line in self.read(path, psm).splitlines() if line.strip()]


class Project(object):
    """The project's readers: the word model for words, the line model for lines and pages."""

    def __init__(self, word_model, line_model):
        from pathlib import Path
        from crnn_multigpu.ocr import Reader
        started = time.time()
        self.words = Reader(Path(word_model)) if word_model else None
        self.lines = Reader(Path(line_model))
        self.startup = time.time() - started

    def read_words(self, reader, paths):
        return reader.read_lines(paths)

    def read_page(self, path):
        return [tidy(line.text) for page in self.lines.read(path).pages for line in page.lines
                if line.text.strip()]


def tidy(text):
    return re.sub(r"\s+", " ", text).strip()


def spelt(text):
    """A peer's text as the truth is written: typographic characters spelt in ASCII (the
    project's models write ASCII), spaces tidied."""
    return tidy(ascii_spelling(text))


def english_pp_ocr():
    """PP-OCRv4 writing as Tesseract's output is written here (:func:`spelt`), a page row's
    pieces joined by a space; stops with one line when its venv is missing."""
    if not rapidocr_ready():
        fail("missing %s; it reads beside the project and Tesseract" % MISSING)
    return PaddleOcr(spelt, " ".join)


# ----- material --------------------------------------------------------------------------

def row_texts(pdf, page):
    """Poppler's text rows of a page (``page_check.layout_rows``), top to bottom: ``[(box in
    points, text)]``, the words of a row joined left to right and spelled in ASCII."""
    return [(box, ascii_spelling(" ".join(word[4] for word in sorted(words))))
            for box, words in layout_rows(pdf, page)]


def word_faces(side):
    """The faces words are rendered in: ``"reserved"``, the reserved families (Liberation,
    FreeFont, URW base35, TeX Gyre; independent checks only), or ``"heldout"``, the English
    families the font split holds out from training (validation material, which a choice may
    use)."""
    from crnn_multigpu.datasets.fonts import find_fonts, is_reserved, select_fonts
    from crnn_multigpu.datasets.language import get_language
    if side == "heldout":
        return select_fonts("heldout", chars=Charset.default().chars,
                            language=get_language("en"))
    fonts = [path for path in find_fonts(chars=Charset.default().chars, include_reserved=True)
             if is_reserved(path)]
    if not fonts:
        fail("no reserved type families installed (Liberation, FreeFont, URW base35, TeX Gyre); "
             "run scripts/install_system_packages.sh --compare")
    return fonts


def render_words(out, count, seed, fonts):
    """``count`` dictionary words set in clean print (dark on white, 20-44 px, no neighbours
    or degradations) in ``fonts``; ``([(path, label)], number of faces)``."""
    from PIL import ImageDraw
    from crnn_multigpu.datasets.fonts import load_font
    from crnn_multigpu.datasets.words import default_word_list
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
        for page in page_numbers(pdf, pages):
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


def folder_samples(folder):
    """``[(image path, label)]`` of the folder dataset ``folder`` (its ``labels.txt``)."""
    from crnn_multigpu.datasets.folder import LABELS_FILE, read_labels
    return [(os.path.join(folder, path), text)
            for path, text in read_labels(os.path.join(folder, LABELS_FILE))]


# ----- the comparison --------------------------------------------------------------------

def side_by_side(samples, readings, path, count=14):
    """A PNG of lines the systems read differently: the crop, the truth and each system's
    reading (``readings``: ``[(system, texts)]``), green when exactly right, red when not."""
    from PIL import ImageDraw
    from crnn_multigpu.ocr.picture import label_font
    font = label_font(15)
    chosen = [i for i in range(len(samples))
              if len(set(texts[i] for _, texts in readings)) > 1][:count]
    names = ["truth"] + [name for name, _ in readings]
    label = max(len(name) for name in names) + 1
    rows, width = [], 0
    for i in chosen:
        crop = Image.open(samples[i][0]).convert("L")
        crop = crop.resize((max(1, int(crop.width * 36.0 / crop.height)), 36))
        texts = [samples[i][1]] + [texts[i] for _, texts in readings]
        rows.append((crop, texts))
        width = max(width, crop.width, 14 + 9 * (label + max(len(text) for text in texts)))
    block = 38 + 20 * len(names) + 12
    canvas = Image.new("RGB", (min(width, 1400), block * len(rows) or 1), "white")
    draw, y = ImageDraw.Draw(canvas), 0
    for crop, texts in rows:
        canvas.paste(crop.convert("RGB"), (0, y))
        y += 38
        for name, text in zip(names, texts):
            colour = (0, 0, 0) if name == "truth" else (0, 120, 0) if text == texts[0] else \
                (190, 0, 0)
            draw.text((4, y), "%-*s %s" % (label, name, text), fill=colour, font=font)
            y += 20
        y += 12
    save_picture(canvas, path)


def peer_readings(paths, psm, tesseract, paddle, scratch):
    """``[(system, texts)]`` of the two peers on crops: Tesseract with ``psm``, PP-OCR by its
    recogniser alone (one process for all the crops)."""
    theirs = [tesseract.text(path, psm) for path in paths]
    paddle_texts = paddle.read("line", paths, scratch).texts
    return [(tesseract.version, theirs), ("PP-OCRv4", paddle_texts)]


def compare_samples(title, samples, readings, fold, picture=None):
    """Figures (``text_metrics``) of each system's readings of ``samples`` (``readings``:
    ``[(system, texts)]``), all scored alike against the labels, folded with ``fold``."""
    labels = [text for _, text in samples]
    if picture:
        side_by_side(samples, readings, picture)
    rows = [sample_figures(texts, labels, fold) for _, texts in readings]
    print("%s: n=%d  %s" % (title, len(samples), "  |  ".join(
        "%s %.1f %% exact, CER %.2f %%" % (name, 100 * row["word_accuracy"], 100 * row["cer"])
        for (name, _), row in zip(readings, rows))), file=sys.stderr)
    return rows


def compare_pages(pdfs, project, tesseract, paddle, scratch, seed):
    """Per look: summed page scores (a row per system: project, Tesseract, PP-OCR), each
    system's seconds per page (start-ups spread over all pages), and the number of pages."""
    rng = np.random.RandomState(seed)
    pages = [(pdf, page) for pdf, spec in pdfs for page in page_numbers(pdf, spec)]
    images = []
    for pdf, page in pages:
        for look in PAGE_LOOKS:
            dpi = 300 if look == "scanned" else int(look.split()[0])
            path = rasterise(pdf, page, dpi, os.path.join(scratch, "%s-%d-%s" % (
                os.path.basename(pdf), page, look.replace(" ", ""))))
            if look == "scanned":  # a flatbed scanner's copy (datasets.page_looks)
                look_of("scan").draw(Image.open(path), rng).image.save(path)
            images.append((pdf, page, look, path))
    # PP-OCR reads every page in one process, as the project does.
    paddle_read = paddle.read("page", [path for _, _, _, path in images], scratch)
    totals = dict((look, np.zeros((3, 6))) for look in PAGE_LOOKS)
    seconds = dict((look, np.zeros(3)) for look in PAGE_LOOKS)
    truths = {}
    for index, (pdf, page, look, path) in enumerate(images):
        if (pdf, page) not in truths:
            truths[pdf, page] = [text for _, text in row_texts(pdf, page) if text]
        started = time.time()
        ours = project.read_page(path)
        middle = time.time()
        theirs = tesseract.lines(path, 4)
        seconds[look] += (middle - started, time.time() - middle, paddle_read.seconds[index])
        for system, rows in enumerate((ours, theirs, paddle_read.texts[index])):
            totals[look][system] += page_scores(rows, truths[pdf, page])
        if look == PAGE_LOOKS[-1]:
            figures = totals[PAGE_LOOKS[1]]
            print("page %s:%d read (150 dpi so far, rows exactly right of %d: project %d, "
                  "Tesseract %d, PP-OCR %d)" % (os.path.basename(pdf), page, figures[0][5],
                                                figures[0][4], figures[1][4], figures[2][4]),
                  file=sys.stderr)
    print("start-ups: project %.1f s, PP-OCR %.1f s" % (project.startup, paddle_read.startup),
          file=sys.stderr)
    startups = np.array((project.startup, 0.0, paddle_read.startup)) / len(PAGE_LOOKS)
    per_page = dict((look, (seconds[look] + startups) / len(pages)) for look in PAGE_LOOKS)
    return totals, per_page, len(pages)


def table_lines(systems, table):
    """The comparison as markdown: a row per figure (``table``: material -> ``[(figure,
    [a value per system], n)]``), a column per system, the best value of a row in bold."""
    lines = ["| material | figure | %s | n |" % " | ".join(systems),
             "|---|---|%s---|" % ("---|" * len(systems))]
    for material, rows in table.items():
        for name, values, n in rows:
            lower_better = name in ("CER", "WER") or name.startswith("seconds")
            as_text = (lambda v: "%.2f" % v) if name.startswith("seconds") else \
                (lambda v: "%.2f %%" % (100 * v)) if name in ("CER", "WER") else \
                (lambda v: "%.1f %%" % (100 * v))
            best = min(values) if lower_better else max(values)
            cells = [("**%s**" if value == best else "%s") % as_text(value) for value in values]
            lines.append("| %s | %s | %s | %d |" % (material, name, " | ".join(cells), n))
    return lines


def pdf_tables(args, pdfs, project, tesseract, paddle, scratch):
    """The rows of the table for lines cut from ``pdfs`` and for their whole pages."""
    table = collections.OrderedDict()
    lines = cut_pdf_lines(scratch, pdfs, args.lines, args.seed)
    paths = [path for path, _ in lines]
    figures = compare_samples("lines cut from the PDFs, 150 dpi", lines, [
        ("project", project.read_words(project.lines, paths))] +
        peer_readings(paths, 7, tesseract, paddle, scratch), None, picture=args.picture)
    table["lines cut from the PDFs, 150 dpi"] = [
        ("lines exactly right", [row["word_accuracy"] for row in figures], len(lines)),
        ("CER", [row["cer"] for row in figures], len(lines))]
    totals, seconds, n_pages = compare_pages(pdfs, project, tesseract, paddle, scratch,
                                             args.seed)
    for look in PAGE_LOOKS:
        scores = totals[look]
        table["pages, %s" % look] = [
            ("CER", scores[:, 0] / scores[:, 1], n_pages),
            ("WER", scores[:, 2] / scores[:, 3], n_pages),
            ("rows exactly right", scores[:, 4] / scores[:, 5], int(scores[0, 5])),
            ("seconds per page", seconds[look], n_pages)]
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", action="append", metavar="FILE:PAGES",
                        help="a PDF and its pages for lines and pages (default: the reserved PDFs)")
    parser.add_argument("--line-model", default=shipped_model("text"))
    parser.add_argument("--word-model", default=shipped_model("words"))
    parser.add_argument("--words", type=int, default=400, help="words per word set")
    parser.add_argument("--lines", type=int, default=300, help="lines cut from the PDFs")
    parser.add_argument("--quick", action="store_true", help="100 words, 100 lines, 1 page a PDF")
    parser.add_argument("--faces", choices=("reserved", "heldout"), default="reserved",
                        help="the families words are rendered in: the reserved ones (the "
                        "default) or those the font split holds out from training")
    parser.add_argument("--words-only", action="store_true",
                        help="only the rendered words: no PDF words, lines or pages")
    parser.add_argument("--photos", metavar="DIR",
                        help="also the photographed words of a folder dataset (images and "
                        "labels.txt, as scripts/photo_words.py --out DIR writes it)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--picture", help="a PNG of PDF lines the systems read differently")
    args = parser.parse_args(argv)
    pdfs = [tuple(spec.rsplit(":", 1)) if ":" in spec else (spec, "1") for spec in args.pdf] \
        if args.pdf else list(RESERVED_PAGES)
    for pdf, pages in [] if args.words_only else pdfs:
        if not os.path.isfile(pdf):
            fail("%s not found; install the reserved PDFs with scripts/install_system_packages.sh "
                 "--compare, or pass --pdf FILE:PAGES" % pdf)
    if args.quick:
        args.words = args.lines = 100
        pdfs = [(pdf, pages.split("-")[0]) for pdf, pages in pdfs]
    tesseract, paddle = Tesseract(), english_pp_ocr()
    project = Project(args.word_model, args.line_model)
    table = collections.OrderedDict()
    with tempfile.TemporaryDirectory() as scratch:
        rendered, faces = render_words(scratch, args.words, args.seed, word_faces(args.faces))
        word_sets = [("words rendered in %d %s faces" % (faces, args.faces), rendered)]
        if not args.words_only:
            word_sets.append(("words cut from the PDFs, 110 dpi",
                              cut_pdf_words(scratch, pdfs, args.words, args.seed)))
        if args.photos:
            word_sets.append(("photographed words", folder_samples(args.photos)))
        for title, samples in word_sets:
            paths = [path for path, _ in samples]
            peers = peer_readings(paths, 8, tesseract, paddle, scratch)
            table[title] = []
            for model, recognizer in (("word model", project.words), ("line model", project.lines)):
                figures = compare_samples("%s (%s)" % (title, model), samples, [
                    ("project", project.read_words(recognizer, paths))] + peers, FOLD)
                table[title].append(("word accuracy, %s" % model,
                                     [row["word_accuracy"] for row in figures], len(samples)))
        if not args.words_only:
            table.update(pdf_tables(args, pdfs, project, tesseract, paddle, scratch))
    print("\n".join(table_lines(["this project", tesseract.version, paddle.name], table)))
    if not args.words_only:
        print("pages: %s; start-ups counted once over all pages (project %.1f s)"
              % (", ".join("%s %s" % (os.path.basename(p), s) for p, s in pdfs), project.startup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
