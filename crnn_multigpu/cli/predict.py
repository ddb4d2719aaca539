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
``--format hocr`` (with ``--page``) one hOCR document of the pages (crnn_multigpu.ocr.page_result).
``--engine onnx --checkpoint EXPORT``: the model is run by onnxruntime from what
``crnn-export --format onnx`` wrote (TensorFlow's readings, without TensorFlow running it).
"""
import argparse
import functools
import json
import os
import sys

from crnn_multigpu.cli.common import (ArgumentParser, check_output_file, console_entry,
                                      int_range, setup_logging)
from crnn_multigpu.cli.reading import (add_reading_arguments, chosen_recognizer, chosen_run,
                                       lexicon_words)
from crnn_multigpu.datasets import pdf


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
    parser.add_argument("--with-prob", action="store_true", help="add a third column: log probability")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default): path<TAB>text per image, or each page's text; "
                             "json: one JSON object per image, one a line (crops: image, text, "
                             "confidence; --page: the page's rows with their boxes, texts and "
                             "confidences); hocr, with --page: one hOCR document (Tesseract's "
                             "HTML) of the pages")
    add_reading_arguments(parser, picture_help="write a PNG grid of the inputs with their "
                                               "predictions (--page: the page with its line "
                                               "boxes and text)")
    parser.add_argument("--verbose", action="store_true")
    return parser


FORMATS = ("text", "json", "hocr")
MIN_DPI, MAX_DPI, DEFAULT_DPI = pdf.MIN_DPI, pdf.MAX_DPI, pdf.DEFAULT_DPI
# How a page lies that the page reader turned by this many degrees counter-clockwise to read.
TURNED = {90: "by 90 degrees clockwise", 180: "upside down (by 180 degrees)",
          270: "by 90 degrees counter-clockwise"}


def page_selection(text):
    """An argparse type: a :class:`~crnn_multigpu.datasets.pdf.PageSelection`."""
    try:
        return pdf.PageSelection(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error))


def read_page(reader, name, source, picture=None):
    """The :class:`~crnn_multigpu.ocr.page_result.Page` named ``name`` (its path, or a PDF's
    ``file.pdf#page=N``) read from ``source`` (what the page reader reads) by the PageReader
    ``reader``; a note on stderr when the page lay turned, a warning when the way up it was
    read at is in doubt or nothing was read on it."""
    from dataclasses import replace
    page = reader.read(source)
    if page.image != name:
        page = replace(page, image=name)
    if page.turn:
        sys.stderr.write("note: %s lies turned %s: read turned back upright\n"
                         % (name, TURNED[page.turn]))
    if page.doubt:
        sys.stderr.write("warning: page %s: %s\n" % (name, page.doubt))
    if not page.text():
        sys.stderr.write("warning: found no text on page %s (blank, one flat shade, fully "
                         "transparent, or print too faint or small to find): its text is empty; "
                         "check that it is the page you meant\n" % name)
    if picture:
        from crnn_multigpu.ocr.picture import label_font
        page.draw(picture, font=label_font(14))
        sys.stderr.write("wrote %s\n" % picture)
    return page


def page_sources(paths, dpi, selection=None):
    """The pages of ``paths`` in order, ``(name, draw)``: an image is one page named by its
    path; a PDF (known by its first bytes, whatever its name) gives each of its pages (those of
    the PageSelection ``selection``, if one is given), named ``file.pdf#page=N`` and drawn at
    ``dpi`` only when ``draw()`` is called, so one page at a time is held."""
    sources, documents = [], 0
    for path in paths:
        if pdf.is_pdf(path):
            documents += 1
            count = pdf.page_count(path)
            numbers = selection.numbers(count, path) if selection else range(1, count + 1)
            sources.extend((pdf.page_name(path, number),
                            functools.partial(pdf.render_page, path, number, dpi))
                           for number in numbers)
        else:
            sources.append((path, functools.partial(os.fspath, path)))
    if selection and not documents:
        raise ValueError("--pages %s chooses pages of PDF documents, and none of the inputs is "
                         "one: leave --pages out to read the images" % selection.text)
    return sources


def read_pages(recognizer, sources, pictures):
    """The pages of ``sources`` (:func:`page_sources`) read one at a time (a generator), each
    drawn to its picture; of several, each read page is counted on stderr (a long PDF takes
    seconds a page)."""
    from crnn_multigpu.ocr.page_reader import PageReader
    reader = PageReader(recognizer)
    for index, (name, draw) in enumerate(sources):
        page = read_page(reader, name, draw(), pictures[index] if pictures else None)
        if len(sources) > 1:
            sys.stderr.write("read page %d of %d: %s\n" % (index + 1, len(sources), name))
        yield page


def write_pages(pages, form):
    """Print ``pages`` as they are read, in the --format ``form``."""
    from crnn_multigpu.ocr.page_result import hocr_parts
    if form == "hocr":
        parts = hocr_parts(pages)
    elif form == "json":
        parts = (json.dumps(page.to_json(), ensure_ascii=False) + "\n" for page in pages)
    else:
        parts = (("\f" if index else "") + page.text() + "\n"
                 for index, page in enumerate(pages))
    for part in parts:
        sys.stdout.write(part)


def require_a_page_for_hocr(args):
    """Refuse --format hocr without --page: hOCR describes pages, their lines and boxes."""
    if args.format == "hocr" and not args.page:
        raise ValueError("--format hocr describes pages (their lines and where they lie): add "
                         "--page to read the images as pages, or use --format text or json "
                         "for word and line crops")


def require_a_line_reader(recognizer, flag):
    """Refuse a model that cannot read whole lines: one of fixed-width crops, or without the
    space (the shipped words model, by --model or by path, is both)."""
    if recognizer.image_width or " " not in recognizer.charset:
        raise ValueError("%s needs a model that reads whole lines (any width, a charset with the "
                         "space); %s reads %s crops of %d characters: use the text model (drop "
                         "--model and --checkpoint, or --model text)"
                         % (flag, recognizer.checkpoint, "%d px wide" % recognizer.image_width
                            if recognizer.image_width else "single-word", len(recognizer.charset)))


# An image at least this tall in which the page reader finds at least this many lines of text
# is a page, not a word or a line: read as a crop it comes out as a character or two.
PAGE_HINT_MIN_HEIGHT = 100
PAGE_HINT_ROWS = 3


def load_crops(paths, crop_array):
    """``(readable paths, arrays, failed count)`` of word or line crops made arrays by
    ``crop_array`` (the recognizer's); a note on stderr for an unreadable image, and for one
    that looks like a whole page (read it with --page)."""
    readable, arrays, failed = [], [], 0
    for path in paths:
        if pdf.is_pdf(path):
            failed += 1
            sys.stderr.write("skipped: %s is a PDF document: read its pages with --page\n" % path)
            continue
        try:
            arrays.append(crop_array(path))
            readable.append(path)
        except (ValueError, OSError) as error:
            failed += 1
            sys.stderr.write("skipped: %s\n" % error)
            continue
        rows = page_rows(path)
        if rows >= PAGE_HINT_ROWS:
            sys.stderr.write("note: %s looks like a page (%d lines of text) but is read as one "
                             "word or line: pass --page to read its lines\n" % (path, rows))
    return readable, arrays, failed


def page_rows(path):
    """How many lines of text the page reader finds in the image at ``path``; 0 without looking
    for an image shorter than :data:`PAGE_HINT_MIN_HEIGHT` (a word or line crop)."""
    from PIL import Image
    from crnn_multigpu.datasets.images import grey_page
    from crnn_multigpu.ocr.page import find_lines
    with Image.open(path) as header:  # the size only: nothing decoded for a crop
        if header.height < PAGE_HINT_MIN_HEIGHT:
            return 0
    return len(set(box.row for box in find_lines(grey_page(path))))


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


def write_crops(recognizer, args):
    """Read and print the word or line crops of ``args.images``; the exit code."""
    readable, arrays, failed = load_crops(args.images, recognizer.crop_array)
    texts, log_probs = recognizer.read_crops(arrays) if arrays else ([], [])
    for path, text, log_prob, array in zip(readable, texts, log_probs, arrays):
        sys.stdout.write(crop_output(args, path, text, log_prob,
                                   array.shape[1] / float(recognizer.downsample)) + "\n")
    if args.picture and arrays:
        from crnn_multigpu.ocr.picture import prediction_grid
        prediction_grid(arrays, texts, None, args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    return 1 if failed and not readable else 0


def crop_output(args, path, text, log_prob, frames):
    """One crop's output line: ``path<TAB>text`` (``<TAB>log probability`` with --with-prob),
    or with --format json ``{"image", "text", "confidence"}`` (and ``"log_prob"``)."""
    if args.format == "json":
        from crnn_multigpu.ocr.page_result import confidence
        reading = {"image": path, "text": text,
                   "confidence": round(confidence(log_prob, frames), 4)}
        if args.with_prob:
            reading["log_prob"] = round(log_prob, 4)
        return json.dumps(reading, ensure_ascii=False)
    return "%s\t%s\t%.4f" % (path, text, log_prob) if args.with_prob else "%s\t%s" % (path, text)


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    require_a_page_for_hocr(args)
    if args.pages and not args.page:
        raise ValueError("--pages chooses the pages of PDF documents read with --page: add "
                         "--page")
    sources = page_sources(args.images, args.dpi, args.pages) if args.page else []
    pictures = picture_paths(args, len(sources))
    for picture in pictures:
        check_output_file(picture, "--picture", args.overwrite)
    words = lexicon_words(args)
    recognizer = chosen_recognizer(args, chosen_run(args), words)
    if args.lines or args.page:
        require_a_line_reader(recognizer, "--page" if args.page else "--lines")
    if args.page:
        write_pages(read_pages(recognizer, sources, pictures), args.format)
        return 0
    return write_crops(recognizer, args)


main = console_entry(main_body, "crnn-predict")

if __name__ == "__main__":
    sys.exit(main())
