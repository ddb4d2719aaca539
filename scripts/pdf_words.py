"""Cut a word-recognition check set from real typeset PDF documents (issue 10).

Usage::

    python scripts/pdf_words.py --out DIR [--dpi 110] [--max-words N] [--seed S] PDF...
    python scripts/pdf_words.py --out DIR --from-list scripts/pdf_words_sources.txt

Word boxes come from poppler's ``pdftotext -bbox`` (PDF points, scaled by
dpi/72), pages are rasterised with ``pdftoppm -gray -r DPI``. A word is kept
when pdftotext gives it as 1-20 characters of [0-9A-Za-z] (so the crop holds
no punctuation) and its box is a plausible horizontal word box; each is cropped
with a fixed margin (2 pt left/right, 0.5 pt top/bottom) and labelled in lower
case. At most ``--max-words`` are drawn uniformly (over all usable words of all
PDFs, so frequent words like "the" are frequent here too) with ``--seed``, so a
run is reproducible given the same PDFs and poppler. The output is a folder dataset
(``images/000000000.png`` + ``labels.txt``, see crnn_multigpu/datasets/folder.py)
plus ``sources.tsv`` (image, PDF, page, box in points) for tracing a sample back.

``--from-list`` reads ``package path`` lines (``#`` comments); a missing file is
an error naming the Debian package to install. The fonts of the listed PDFs
(their ``pdffonts`` summaries are comments in the list) may overlap with
training fonts (Computer Modern is trained on). The PDFs the project reserves
for its independent checks (``text_sources.is_reserved_document``; scripts/compare_tesseract.py
reads them) are refused. Needs poppler-utils.
"""
import argparse
import html
import os
import random
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.datasets import write_labels  # noqa: E402
from crnn_multigpu.datasets.pdf import poppler, render_page  # noqa: E402
from crnn_multigpu.datasets.text_sources import is_reserved_document  # noqa: E402

WORD_RE = re.compile(r"[0-9A-Za-z]{1,20}")
TOKEN_RE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">|'
                      r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">'
                      r'(.*?)</word>')
# Horizontal, vertical crop margins: pdftotext boxes span the advance width
# (glyphs may overhang it) and the font's ascent..descent (which holds them).
MARGIN_PT = (2.0, 0.5)


def fail(message):
    """End the script with one line: its own name and ``message``."""
    raise SystemExit("%s: %s" % (os.path.splitext(os.path.basename(sys.argv[0]))[0], message))


def or_fail(step, *arguments):
    """``step(*arguments)`` (a crnn_multigpu.datasets.pdf function), its ValueError (the PDF
    named, poppler's word or what to install) turned into the script's one ``error:`` line."""
    try:
        return step(*arguments)
    except ValueError as error:
        fail(str(error))


def run(command, pdf):
    """stdout of the poppler tool ``command`` run on ``pdf``; one ``error:`` line if it fails."""
    return or_fail(poppler, command, pdf)


def drawn(pdf, page, dpi):
    """Page ``page`` of ``pdf`` in grey at ``dpi``; one ``error:`` line if poppler fails."""
    return or_fail(render_page, pdf, page, dpi)


def read_list(path):
    """``path`` lines from a ``package path`` list; exits naming the package of a missing file."""
    pdfs = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2:
                fail("%s line %d: expected 'package path/to/file.pdf', got %r"
                     % (path, number, line.strip()))
            package, pdf = fields
            if not os.path.isfile(pdf):
                fail("%s (listed in %s) is missing: apt-get install %s" % (pdf, path, package))
            pdfs.append(pdf)
    return pdfs


def find_words(pdf, page=None):
    """``(pages, found, [(page, (x0, y0, x1, y1) in points, text)])`` of the words worth keeping,
    of every page or of ``page`` only."""
    only = ["-f", str(page), "-l", str(page)] if page else []
    xml = run(["pdftotext", "-bbox"] + only + [pdf, "-"], pdf).decode("utf-8", "replace")
    pages, found, words = (page - 1 if page else 0), 0, []
    for match in TOKEN_RE.finditer(xml):
        if match.group(1):
            pages += 1
            continue
        found += 1
        text = html.unescape(match.group(7))
        box = tuple(float(v) for v in match.group(3, 4, 5, 6))
        width, height = box[2] - box[0], box[3] - box[1]
        # Skip degenerate boxes and vertical (rotated) words: no horizontal
        # word of 5 or more characters is taller than wide.
        upright = len(text) < 5 or width > height
        if WORD_RE.fullmatch(text) and width > 1 and height > 1 and upright:
            words.append((pages, box, text))
    return pages, found, words


def word_crop(image, box, dpi, margin_pt=MARGIN_PT):
    """The crop of ``box`` (PDF points; a word's by default) from its page ``image`` rasterised
    at ``dpi``, with ``margin_pt`` (x, y) points around it, clipped to the page."""
    scale, (mx, my) = dpi / 72.0, (m * dpi / 72.0 for m in margin_pt)
    x0, y0, x1, y1 = box
    return image.crop((max(0, int(x0 * scale - mx)), max(0, int(y0 * scale - my)),
                       min(image.width, int(round(x1 * scale + mx))),
                       min(image.height, int(round(y1 * scale + my)))))


def crop_words(out, samples, dpi):
    """Rasterise each needed page once and save the crops; returns labels and provenance rows."""
    entries, rows, page_image, page_key = [], [], None, None
    for index, (pdf, page, box, text) in enumerate(samples):
        if (pdf, page) != page_key:
            page_image = drawn(pdf, page, dpi)
            page_key = (pdf, page)
        crop = word_crop(page_image, box, dpi)
        relative = "images/%09d.png" % index
        crop.save(os.path.join(out, relative), compress_level=1)
        entries.append((relative, text.lower()))
        rows.append("%s\t%s\t%d\t%.2f %.2f %.2f %.2f\n" % ((relative, pdf, page) + box))
    return entries, rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", metavar="PDF")
    parser.add_argument("--from-list", help="file of 'package path/to/file.pdf' lines")
    parser.add_argument("--out", required=True, help="folder dataset to write")
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--max-words", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    pdfs = list(args.pdfs) + (read_list(args.from_list) if args.from_list else [])
    if not pdfs:
        parser.error("give PDF files or --from-list")
    for tool in ("pdftotext", "pdftoppm"):
        if shutil.which(tool) is None:
            fail("%s not found; install poppler: apt-get install poppler-utils" % tool)
    candidates, total_pages, total_found = [], 0, 0
    for pdf in pdfs:
        if is_reserved_document(pdf):
            fail("%s is reserved for the project's independent checks; use another PDF" % pdf)
        if not os.path.isfile(pdf):
            fail("cannot read PDF %s: no such file" % pdf)
        pages, found, words = find_words(pdf)
        print("%s: %d pages, %d words, %d usable" % (pdf, pages, found, len(words)))
        total_pages, total_found = total_pages + pages, total_found + found
        candidates.extend((pdf, page, box, text) for page, box, text in words)
    if not candidates:
        fail("no usable words in %s" % ", ".join(pdfs))
    chosen = sorted(random.Random(args.seed).sample(range(len(candidates)),
                                                     min(args.max_words, len(candidates))))
    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    entries, rows = crop_words(args.out, [candidates[i] for i in chosen], args.dpi)
    write_labels(args.out, entries)
    Charset.default().to_file(os.path.join(args.out, "charset.txt"))
    with open(os.path.join(args.out, "sources.tsv"), "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(rows)
    print("%d PDFs, %d pages, %d words found, %d usable, %d kept in %s"
          % (len(pdfs), total_pages, total_found, len(candidates), len(entries), args.out))


if __name__ == "__main__":
    main()
