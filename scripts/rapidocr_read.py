"""Read image files with PP-OCRv4 (pip's rapidocr-onnxruntime) and print one JSON object per image.

Usage (by the Python of its own venv, ``make venv-rapidocr``; never the project's)::

    .venv-rapidocr/bin/python scripts/rapidocr_read.py --mode line IMAGE...
    .venv-rapidocr/bin/python scripts/rapidocr_read.py --mode page --list PATHS.txt
    .venv-rapidocr/bin/python scripts/rapidocr_read.py --mode page --list -   # paths on stdin

One process reads all the images it is given, so its start-up (imports and model load) is paid
once, as a user of the library pays it. With ``--list -`` it reads a path from stdin whenever one
comes and answers it at once, until stdin closes (scripts/benchmark_reading.py hands the systems
one page at a time, in turn). ``--mode line``: each image is one line of text, read by
the recogniser alone (no detection, no orientation classifier). ``--mode page``: the whole
pipeline (detection, orientation, recognition); the boxes found are put into rows by their
vertical centres (:func:`page_rows`) and each row's pieces are given left to right.

Output, one JSON object a line: first ``{"version": ..., "startup": seconds}``, then per image
``{"path", "seconds"}`` with ``"text"`` (line) or ``"rows"`` (page: a list of rows, each a list of
the texts of its pieces). scripts/pp_ocr.py runs it for both side-by-side scripts, which join
the pieces as their language joins them. This file needs nothing but the standard library until
``main`` runs, so the project's tests import :func:`page_rows` without rapidocr.
"""
import argparse
import itertools
import json
import sys
import time


def box_extent(points):
    """``(left, top, right, bottom)`` of a box given as corner points ``[[x, y], ...]``."""
    xs = [float(point[0]) for point in points]
    ys = [float(point[1]) for point in points]
    return min(xs), min(ys), max(xs), max(ys)


def page_rows(results):
    """The texts of detected boxes in reading order: a list of rows, top to bottom, each the
    list of its pieces' texts, left to right.

    ``results`` is PP-OCR's page result: ``[(corner points, text, score), ...]`` in any order.
    A box joins a row when its vertical centre lies within half a line of the row's centre (half
    the smaller of the two heights): pieces of one printed line sit at the same height whatever
    their widths, while the next line's centre is a full line away. Boxes are taken top to
    bottom, so a row's centre is that of the boxes already in it."""
    boxes = []
    for result in results or ():
        left, top, right, bottom = box_extent(result[0])
        if str(result[1]).strip():
            boxes.append(((top + bottom) / 2.0, bottom - top, left, str(result[1])))
    boxes.sort(key=lambda box: (box[0], box[2]))
    rows = []  # [centre sum, count, height, [(left, text)]]
    for centre, height, left, text in boxes:
        for row in rows:
            row_centre = row[0] / row[1]
            if abs(centre - row_centre) <= 0.5 * max(min(height, row[2]), 1.0):
                row[0] += centre
                row[1] += 1
                row[2] = max(row[2], height)
                row[3].append((left, text))
                break
        else:
            rows.append([centre, 1, height, [(left, text)]])
    rows.sort(key=lambda row: row[0] / row[1])
    return [[text for _, text in sorted(row[3], key=lambda piece: piece[0])] for row in rows]


def line_text(result):
    """The text of a recogniser-only result (``[[text, score], ...]`` or None): its pieces
    joined (one image gives one piece)."""
    return "".join(str(piece[0]) for piece in result or ())


def requested_paths(paths, listing=None):
    """The image paths to read: ``paths``, then those of the file ``listing`` (one a line), or
    with ``listing`` "-" those on stdin, each given as soon as its line comes."""
    if listing and listing != "-":
        with open(listing, encoding="utf-8") as handle:
            paths = list(paths) + [line.rstrip("\n") for line in handle if line.strip()]
    # readline, not iteration: iterating a pipe may wait for more than the one line sent.
    coming = iter(sys.stdin.readline, "") if listing == "-" else ()
    return itertools.chain(paths, (line.rstrip("\n") for line in coming if line.strip()))


def main(argv=None):
    """Read the images named on the command line (and in ``--list``), print JSON lines."""
    started = time.time()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", metavar="IMAGE")
    parser.add_argument("--mode", choices=("line", "page"), required=True)
    parser.add_argument("--list", help="a file of image paths, one a line (-: stdin, each path "
                                       "answered as it comes)")
    args = parser.parse_args(argv)
    try:
        from rapidocr_onnxruntime import RapidOCR
        from importlib.metadata import version
    except ImportError as error:
        from reports import fail  # beside this file
        fail("rapidocr-onnxruntime is not importable here (%s); run this with "
             ".venv-rapidocr/bin/python (make venv-rapidocr)" % error)
    engine = RapidOCR()
    print(json.dumps({"version": version("rapidocr-onnxruntime"),
                      "startup": time.time() - started}), flush=True)
    for path in requested_paths(args.paths, args.list):
        began = time.time()
        if args.mode == "line":
            result, _ = engine(path, use_det=False, use_cls=False, use_rec=True)
            record = {"text": line_text(result)}
        else:
            result, _ = engine(path)
            record = {"rows": page_rows(result)}
        record.update(path=path, seconds=time.time() - began)
        print(json.dumps(record, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
