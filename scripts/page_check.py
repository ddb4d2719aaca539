"""Check crnn_multigpu.ocr.page.line_crops (and optionally a line model) on real PDF pages.

Usage::

    python scripts/page_check.py /usr/share/doc/simh/simh_doc.pdf --pages 3-5
    python scripts/page_check.py DOC.pdf --pages 2 --checkpoint runs/lines/run --picture p.png

Each page is rasterised with poppler (``pdftoppm -gray -r DPI``); the truth is poppler's
own text layer (``pdftotext -bbox-layout``: word boxes in PDF points, scaled by dpi/72),
its lines joined into rows (see ``truth_rows``). A row is found exactly when all its words'
centres lie in boxes of one found row and no other row's words do. Prints per page and in
total: rows, rows found, rows found exactly, words inside a box; with ``--checkpoint`` (a line
model's run folder) also CER and exact-row accuracy of the text read on the rows found
exactly, against poppler's words joined by single spaces, typographic characters spelt in
ASCII (curly quotes, dashes, ligatures) in both; rows holding other characters the model's
charset lacks (bullets, arrows), or with ``--ascii-rows`` any beyond printable ASCII, are counted
and left out. The PDFs the project reserves are refused. Needs poppler-utils.
"""
import argparse
import collections
import html
import os
import re
import subprocess
import sys
import tempfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets.lines import ascii_spelling  # noqa: E402
from crnn_multigpu.datasets.pdf import PageSelection, page_count, render_page  # noqa: E402
from crnn_multigpu.ocr.page import draw_lines, line_crops, page_text  # noqa: E402
from crnn_multigpu.datasets.text_sources import is_reserved_document  # noqa: E402

LINE_RE = re.compile(r'<line xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" '
                     r'yMax="([-\d.]+)">(.*?)</line>', re.S)
WORD_RE = re.compile(r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" '
                     r'yMax="([-\d.]+)">(.*?)</word>', re.S)


def rasterise(pdf, page, dpi, prefix):
    """The page as a grey PNG at ``dpi`` (drawn by crnn_multigpu.datasets.pdf), for the peers
    that read files; its path."""
    path = prefix + ".png"
    render_page(pdf, page, dpi).save(path)
    return path


def page_numbers(pdf, text):
    """The pages of ``pdf`` that ``text`` chooses ("3-5", "2", "1,4-"): a PageSelection."""
    return PageSelection(text).numbers(page_count(pdf), pdf)


def layout_rows(pdf, page):
    """Rows of poppler's text layer on ``page``, top to bottom: ``(box, words)`` in points,
    ``box = [x_min, y_min, x_max, y_max]`` and each word ``(x_min, y_min, x_max, y_max, text)``.
    Poppler's lines are joined into one row when their vertical extents overlap by half the
    smaller one (poppler splits a row at font changes and wide spaces; the page reader reads a
    row as one line). Blank words, and lines of nothing else, are dropped."""
    layout = subprocess.run(["pdftotext", "-bbox-layout", "-f", str(page), "-l", str(page),
                             pdf, "-"], check=True, stdout=subprocess.PIPE).stdout.decode("utf-8")
    rows = []
    for line in LINE_RE.finditer(layout):
        box = [float(line.group(i)) for i in range(1, 5)]
        words = [tuple(float(word.group(i)) for i in range(1, 5)) + (html.unescape(word.group(5)),)
                 for word in WORD_RE.finditer(line.group(5)) if word.group(5).strip()]
        if not words:
            continue
        for row_box, row_words in rows:
            shared = min(box[3], row_box[3]) - max(box[1], row_box[1])
            if shared >= 0.5 * min(box[3] - box[1], row_box[3] - row_box[1]):
                row_box[:] = [min(box[0], row_box[0]), min(box[1], row_box[1]),
                              max(box[2], row_box[2]), max(box[3], row_box[3])]
                row_words.extend(words)
                break
        else:
            rows.append((box, words))
    rows.sort(key=lambda row: row[0][1])
    return rows


def truth_rows(pdf, page, dpi):
    """The text layer's rows (``layout_rows``) as lists of words ``(x, y, text)``, centres in
    pixels at ``dpi``, left to right."""
    scale = dpi / 72.0
    return [sorted(((x_min + x_max) * scale / 2, (y_min + y_max) * scale / 2, text)
                   for x_min, y_min, x_max, y_max, text in words)
            for _, words in layout_rows(pdf, page)]


def found_row_of(boxes, x, y):
    """The row of the found box holding the point, or None. Boxes hug the ink while a
    word's centre is that of its font box: a small glyph ("*", "-") may centre a pixel or
    two outside its ink, so boxes are grown by a fifth of their height up and down."""
    for box in boxes:
        grow = 0.2 * (box.bottom - box.top)
        if box.left <= x < box.right and box.top - grow <= y < box.bottom + grow:
            return box.row
    return None


def rows_read_exactly(read_rows, truth_rows):
    """How many of ``truth_rows`` a row of ``read_rows`` equals, each read row matched once,
    in any order (an engine that gives no boxes is scored by its text alone)."""
    left = collections.Counter(read_rows)
    exact = 0
    for row in truth_rows:
        if left[row] > 0:
            left[row] -= 1
            exact += 1
    return exact


def compare_rows(boxes, rows):
    """(words covered, words, rows found exactly, {truth row: found row}) of one page.

    A truth row is found exactly when all its words lie in boxes of one found row and no
    word of another truth row lies in that found row.
    """
    owner = [[found_row_of(boxes, x, y) for x, y, _ in row] for row in rows]
    covered = sum(r is not None for rows_of in owner for r in rows_of)
    truth_rows_in = {}
    for index, rows_of in enumerate(owner):
        for found in rows_of:
            truth_rows_in.setdefault(found, set()).add(index)
    exact = {}
    for index, rows_of in enumerate(owner):
        if len(set(rows_of)) == 1 and rows_of[0] is not None and \
                truth_rows_in[rows_of[0]] == {index}:
            exact[index] = rows_of[0]
    return covered, sum(len(row) for row in rows), exact


def labelled_rows(image, rows, language):
    """The page's rows the page reader found exactly, cut and labelled by the text layer.

    ``rows`` are the text layer's rows (``truth_rows``) at the image's resolution. Each piece
    of a row found exactly is labelled with the words whose centres lie in it, joined and spelt
    as ``language`` (a ``datasets.language.Language``) writes them. Returns ``(kept [(crop,
    label)], left out [spelt text the charset cannot write], rows found exactly)``, top to
    bottom."""
    boxes, crops = line_crops(image)
    _, _, exact = compare_rows(boxes, rows)
    kept, left_out = [], []
    for truth_index, found in sorted(exact.items()):
        for box, crop in zip(boxes, crops):
            if box.row != found:
                continue
            inside = [text for x, y, text in rows[truth_index]
                      if found_row_of([box], x, y) is not None]
            if not inside:
                continue
            label = language.label_of(" ".join(inside))
            if label:
                kept.append((crop, label))
            else:
                left_out.append(language.spell(" ".join(inside)))
    return kept, left_out, len(exact)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdf")
    parser.add_argument("--pages", default="1", help="e.g. 3 or 2-5 or 1,4")
    parser.add_argument("--dpi", type=int, default=110)
    parser.add_argument("--checkpoint", help="a line model's run folder: also read the lines")
    parser.add_argument("--picture", help="PNG of the last page's boxes (and text)")
    parser.add_argument("--errors", action="store_true",
                        help="with --checkpoint: print each misread row, read vs truth")
    parser.add_argument("--ascii-rows", action="store_true",
                        help="with --checkpoint: score only the rows whose truth is printable "
                        "ASCII, so that models of other charsets (text, latin) read the same rows")
    args = parser.parse_args(argv)
    if is_reserved_document(args.pdf):
        sys.exit("error: %s is reserved for the project's independent checks; use another PDF"
                 % os.path.basename(args.pdf))
    recognizer = None
    if args.checkpoint:
        from crnn_multigpu.datasets import load_image
        from pathlib import Path
        from crnn_multigpu.ocr import Reader
        from crnn_multigpu.ocr.metrics import text_metrics
        recognizer = Reader(Path(args.checkpoint)).recognizer  # as crnn-predict reads
        readable = set(recognizer.charset.chars)
        if args.ascii_rows:
            readable &= set(chr(code) for code in range(32, 127))
    totals = dict(words=0, covered=0, rows=0, exact=0, found=0)
    predictions, references, unreadable = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        for page in page_numbers(args.pdf, args.pages):
            raster = rasterise(args.pdf, page, args.dpi, os.path.join(scratch, "page"))
            image = Image.open(raster).convert("L")
            rows = truth_rows(args.pdf, page, args.dpi)
            boxes, crops = line_crops(image)
            covered, words, exact = compare_rows(boxes, rows)
            found_rows = len(set(box.row for box in boxes))
            for key, value in (("words", words), ("covered", covered), ("rows", len(rows)),
                               ("exact", len(exact)), ("found", found_rows)):
                totals[key] += value
            print("page %d: %d text-layer rows, %d rows found, %d found exactly; %d of %d "
                  "words inside a box" % (page, len(rows), found_rows, len(exact), covered, words))
            texts = [""] * len(boxes)
            if recognizer is not None and boxes:
                arrays = [load_image(crop, recognizer.model.height) for crop in crops]
                texts = recognizer.recognize_arrays(arrays)[0]
                lines = page_text(boxes, texts, keep_empty=True).split("\n")
                for truth_index, found_row in exact.items():
                    truth = ascii_spelling(" ".join(text for _, _, text in rows[truth_index]))
                    if not set(truth) <= readable:
                        unreadable.append(truth)  # e.g. a bullet: no character can be right
                        continue
                    # A model of typographic signs (latin) is spelt as the truth is.
                    predictions.append(ascii_spelling(lines[found_row]))
                    references.append(truth)
            if args.picture:
                draw_lines(image, boxes, texts, args.picture)
    print("total: %d text-layer rows, %d found, %d found exactly (%.1f %%); %.1f %% of %d "
          "words inside a box" % (totals["rows"], totals["found"], totals["exact"],
                                  100.0 * totals["exact"] / max(1, totals["rows"]),
                                  100.0 * totals["covered"] / max(1, totals["words"]),
                                  totals["words"]))
    if recognizer is not None and references:
        figures = text_metrics(predictions, references)
        if args.errors:
            for read, truth in zip(predictions, references):
                if read != truth:
                    print("read:  %s\ntruth: %s" % (read, truth))
        print("reading the rows found exactly: CER %.4f, rows exactly right %.4f (n=%d; %d more "
              "rows hold characters outside the model's charset, e.g. bullets, and are left out)"
              % (figures["cer"], figures["word_accuracy"], figures["n"], len(unreadable)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
