"""crnn-predict: recognise text in image files; one line per image, path<TAB>text.

Every image is read by the shipped text model (models/text: case, spaces, punctuation) unless
``--model words`` (digits and lower case) or ``--checkpoint`` names another. A word or line
crop's text is found and cut with a line's margins (crnn_multigpu.ocr.text_box), whatever
margins and background it came with. ``--lines``: the images are whole printed lines.
``--page``: the images are printed pages: each is turned upright (crnn_multigpu.ocr.page_reader),
straightened and split into its columns (crnn_multigpu.ocr.page_layout), its lines found
(crnn_multigpu.ocr.page) and read, and its text printed one line per line, column after column,
pages separated by a form feed; a PDF document is read page by page (``--pages``: the pages
chosen), each drawn at ``--dpi`` by poppler (crnn_multigpu.datasets.pdf) and named
``file.pdf#page=N``. ``--format json`` prints
one JSON object per image instead,
``--format hocr`` (with ``--page``) one hOCR document of the pages (crnn_multigpu.ocr.page_result),
``--format pdf --out FILE.pdf`` (with ``--page``) a searchable PDF of them
(crnn_multigpu.ocr.searchable_pdf).
``--engine onnx --checkpoint EXPORT``: the model is run by onnxruntime from what
``crnn-export --format onnx`` wrote (TensorFlow's readings, without TensorFlow running it).

This is argparse over :class:`crnn_multigpu.ocr.Reader`, which reads the same way from Python.
Each input is read or skipped on its own (``skipped: NAME: reason`` on stderr, exit status 1);
names are escaped as :mod:`crnn_multigpu.ocr.names` says.
"""
import argparse
import os
import sys

from crnn_multigpu.cli.common import (ArgumentParser, check_output_file, console_entry,
                                      int_range, setup_logging)
from crnn_multigpu.cli.pdf_output import check_pdf_request
from crnn_multigpu.cli.reading import add_reading_arguments, chosen_reader
from crnn_multigpu.datasets import pdf
from crnn_multigpu.ocr.names import escaped, json_line
from crnn_multigpu.ocr.reader import page_sources


def build_parser():
    parser = ArgumentParser(prog="crnn-predict", description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="+",
                        help="image files, any size and mode (with --page also PDF documents: "
                             "every page read)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--lines", action="store_true",
                      help="the images are whole printed lines (case, spaces, punctuation): "
                           "read by the shipped text model unless --checkpoint names another")
    kind.add_argument("--page", action="store_true",
                      help="the images are printed pages (scans at any dpi, turned by up to 5 "
                           "degrees or by a multiple of 90, one or two columns): find their "
                           "lines and print each page's text, one line per line, column after "
                           "column (no photos)")
    parser.add_argument("--dpi", type=int_range(MIN_DPI, MAX_DPI), default=DEFAULT_DPI,
                        help="--page: the resolution PDF pages are drawn at (default %d; the "
                             "page reader reads 110-300 dpi alike)" % DEFAULT_DPI)
    parser.add_argument("--pages", type=page_selection, metavar="PAGES",
                        help="--page: the pages of each PDF to read, numbers and ranges joined "
                             "by commas, e.g. 3-5 or 1,4- (4-: page 4 to the last; default: "
                             "every page); images are read whole")
    add_output_arguments(parser)
    add_reading_arguments(parser, picture_help="write a PNG grid of the inputs with their "
                                               "predictions (--page: the page with its line "
                                               "boxes and text)")
    parser.add_argument("--verbose", action="store_true")
    return parser


def add_output_arguments(parser):
    """--format, --out and --with-prob: what is printed or written."""
    parser.add_argument("--with-prob", action="store_true",
                        help="add a third column: log probability")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default): path<TAB>text per image, or each page's text; "
                             "json: one JSON object per image, one a line (crops: image, text, "
                             "confidence; --page: the page's rows with their boxes, texts and "
                             "confidences); hocr, with --page: one hOCR document (Tesseract's "
                             "HTML) of the pages; pdf, with --page and --out: a searchable PDF, "
                             "each page's image with its text laid invisibly on it")
    parser.add_argument("--out", metavar="FILE.pdf",
                        help="--format pdf: the PDF to write (never replaced unless --overwrite)")


FORMATS = ("text", "json", "hocr", "pdf")
MIN_DPI, MAX_DPI, DEFAULT_DPI = pdf.MIN_DPI, pdf.MAX_DPI, pdf.DEFAULT_DPI
SKIPPED = "skipped: %s: %s\n"
# How a page lies that the page reader turned by this many degrees counter-clockwise to read.
TURNED = {90: "by 90 degrees clockwise", 180: "upside down (by 180 degrees)",
          270: "by 90 degrees counter-clockwise"}


def page_selection(text):
    """An argparse type: a :class:`~crnn_multigpu.datasets.pdf.PageSelection`."""
    try:
        return pdf.PageSelection(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


def page_notes(name, page, picture):
    """On stderr: a note when the page lay turned, a warning when the way up it was read at is
    in doubt or nothing was read on it; its picture drawn."""
    if page.turn:
        sys.stderr.write("note: %s lies turned %s: read turned back upright\n"
                         % (escaped(name), TURNED[page.turn]))
    if page.doubt:
        sys.stderr.write("warning: page %s: %s\n" % (escaped(name), page.doubt))
    if not page.text():
        sys.stderr.write("warning: found no text on page %s (blank, one flat shade, fully "
                         "transparent, or print too faint or small to find): its text is empty; "
                         "check that it is the page you meant\n" % escaped(name))
    if picture:
        from crnn_multigpu.ocr.picture import label_font
        page.draw(picture, font=label_font(14))
        sys.stderr.write("wrote %s\n" % picture)


def read_pages(reader, sources, pictures, skipped):
    """The pages of ``sources`` read one at a time (a generator of PageReadings), each noted
    and drawn to its picture; a page that cannot be read is named on stderr and added to
    ``skipped``; of several, each page is counted on stderr (a long PDF takes seconds a
    page)."""
    for index, reading in enumerate(reader.read_pages(sources)):
        name = reading.source.name
        if reading.page is None:
            skipped.append(name)
            sys.stderr.write(SKIPPED % (escaped(name), reading.reason))
        else:
            page_notes(name, reading.page, pictures[index] if pictures else None)
        if len(sources) > 1:
            sys.stderr.write("read page %d of %d: %s\n" % (index + 1, len(sources), escaped(name)))
        if reading.page is not None:
            yield reading


def write_pages(readings, args):
    """Print the pages of ``readings`` as they are read, in the --format ``form``; with pdf
    write them to --out once all are read."""
    from crnn_multigpu.ocr.page_result import hocr_parts
    form, pages = args.format, (reading.page for reading in readings)
    if form == "pdf":
        write_pdf(list(readings), args.out)
        return
    if form == "hocr":
        parts = hocr_parts(pages)
    elif form == "json":
        parts = (json_line(page.to_json()) + "\n" for page in pages)
    else:
        parts = (("\f" if index else "") + page.text() + "\n"
                 for index, page in enumerate(pages))
    for part in parts:
        sys.stdout.write(part)


def write_pdf(readings, out):
    """Write the pages of ``readings`` to the searchable PDF ``out``, each page's image drawn
    again from its source (the pages read keep no pixels: one page image in memory at a
    time)."""
    from dataclasses import replace
    from crnn_multigpu.ocr.document import Document
    if not readings:
        raise ValueError("no page could be read: %s was not written" % out)
    Document([replace(reading.page, upright=None) for reading in readings],
             sources=[reading.source for reading in readings]).save_pdf(out)
    sys.stderr.write("wrote %s\n" % out)


def check_arguments(args):
    """Refuse --format hocr without --page (hOCR describes pages, their lines and boxes),
    --pages without --page, and a --format pdf that could not be written."""
    if args.format == "hocr" and not args.page:
        raise ValueError("--format hocr describes pages (their lines and where they lie): add "
                         "--page to read the images as pages, or use --format text or json "
                         "for word and line crops")
    if args.pages and not args.page:
        raise ValueError("--pages chooses the pages of PDF documents read with --page: add "
                         "--page")
    if args.out and args.format != "pdf":
        raise ValueError("--out names the file of --format pdf; the other formats print: add "
                         "--format pdf, or drop --out")
    check_pdf_request(args.format, args.page, args.out, args.overwrite)


def picture_path(picture, index, count):
    """``picture`` for one page; ``name-2.png`` for page 2 of several."""
    if count == 1:
        return picture
    stem, extension = os.path.splitext(picture)
    return "%s-%d%s" % (stem, index + 1, extension or ".png")


def picture_paths(args, pages):
    """The --picture file of each of the ``pages`` (--page), or of the grid of crops; [] without
    one."""
    if not args.picture:
        return []
    if not args.page:
        return [args.picture]
    return [picture_path(args.picture, index, pages) for index in range(pages)]


def write_crops(reader, args):
    """Read and print the word or line crops of ``args.images``; the exit code (1 when one was
    skipped)."""
    readings = reader.crop_readings(args.images)
    for reading in readings:
        if reading.reason is not None:
            sys.stderr.write(SKIPPED % (escaped(reading.name), reading.reason))
            continue
        if reading.rows:
            sys.stderr.write("note: %s looks like a page (%d lines of text) but is read as one "
                             "word or line: pass --page to read its lines\n"
                             % (escaped(reading.name), reading.rows))
        elif reader.squeezed(reading):
            sys.stderr.write("note: %s is %.0f times as wide as the %d px crops of single words "
                             "this model reads, its letters squeezed out of shape: read lines "
                             "with the text model (--lines)\n"
                             % (escaped(reading.name), reader.squeezed(reading),
                                reader.recognizer.image_width))
        sys.stdout.write(crop_output(args, reading) + "\n")
    arrays = [reading.array for reading in readings if reading.reason is None]
    if args.picture and arrays:
        from crnn_multigpu.ocr.picture import prediction_grid
        prediction_grid(arrays, [r.text for r in readings if r.reason is None], None, args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    return 1 if len(arrays) < len(readings) else 0


def crop_output(args, reading):
    """One crop's output line: ``name<TAB>text`` (``<TAB>log probability`` with --with-prob),
    or with --format json ``{"image", "text", "confidence"}`` (and ``"log_prob"``)."""
    if args.format == "json":
        line = {"image": reading.name, "text": reading.text,
                "confidence": round(reading.confidence, 4)}
        if args.with_prob:
            line["log_prob"] = round(reading.log_prob, 4)
        return json_line(line)
    columns = [escaped(reading.name), reading.text] + (
        ["%.4f" % reading.log_prob] if args.with_prob else [])
    return "\t".join(columns)


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    check_arguments(args)
    sources = page_sources(args.images, args.pages, args.dpi) if args.page else []
    pictures = picture_paths(args, len(sources))
    for picture in pictures:
        check_output_file(picture, "--picture", args.overwrite)
    reader = chosen_reader(args)
    if args.lines or args.page:
        reader.require_line_model(("--page" if args.page else "--lines"))
    if not args.page:
        return write_crops(reader, args)
    skipped = []
    write_pages(read_pages(reader, sources, pictures, skipped), args)
    return 1 if skipped else 0


main = console_entry(main_body, "crnn-predict")

if __name__ == "__main__":
    sys.exit(main())
