"""How many pages the page reader reads the right way up: upright and turned pages of real PDFs
and one-line pages.

Usage::

    python scripts/orientation_check.py --pages 12                  # this checkout
    CRNN_CHECKOUT=/path/to/older/checkout python scripts/orientation_check.py --pages 12
                                  # the same pages read by another checkout (before/after)

``--pages`` pages of PDFs in ``/usr/share/doc/texlive-doc`` (never a reserved one: no lshort
translation, l2kurz, lyhyt2e, ctex-faq or the project's reserved PDFs), chosen by ``--seed``,
rasterised by ``crnn_multigpu.datasets.pdf`` at 110 or 150 dpi, each read as it comes and
turned (by 90, 180 and 270 degrees in turn); beside them as many one-line pages (a title,
"hello world") on an A4 canvas at 150 dpi in DejaVu Sans or Serif Bold, read so too. Printed
per kind: read the
right way up, read turned wrongly, read with a doubt (``Page.doubt``; a warning in the tools),
refused (an older checkout's ``UnknownOrientation``).
"""
import argparse
import glob
import os
import sys

import numpy as np
from PIL import Image, ImageDraw

# The checkout whose page reader reads (CRNN_CHECKOUT: another one, for a before/after).
sys.path.insert(0, os.environ.get("CRNN_CHECKOUT") or
                os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets import pdf  # noqa: E402
from crnn_multigpu.datasets.fonts import load_font  # noqa: E402
from crnn_multigpu.datasets.text_sources import RESERVED_PDFS  # noqa: E402

DOCS = "/usr/share/doc/texlive-doc"
# The lshort translations and their kin (every one reserved), by name.
RESERVED_NAMES = ("lshort", "l2kurz", "lyhyt2e")
TURNS = (90, 180, 270)
LINES = ("hello world", "Annual Report", "Introduction", "A Short Guide to Printing",
         "summer camp 2024", "Chapter One", "name", "Contents")
FACES = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
         "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf")


def usable_pdfs():
    """The texlive documentation PDFs that are not reserved, sorted."""
    paths = sorted(glob.glob(os.path.join(DOCS, "**", "*.pdf"), recursive=True))
    return [path for path in paths if os.path.basename(path) not in RESERVED_PDFS and
            not any(name in path.lower() for name in RESERVED_NAMES)]


def pdf_pages(count, rng):
    """``count`` ``(name, PIL page)`` of PDFs chosen by ``rng``, at 110-150 dpi."""
    paths, pages = usable_pdfs(), []
    while len(pages) < count:
        path = paths[rng.randint(len(paths))]
        try:
            number = 1 + rng.randint(min(pdf.page_count(path), 8))
            page = pdf.render_page(path, number, int(rng.choice([110, 150])))
        except (ValueError, OSError):  # a PDF poppler cannot draw: another
            continue
        pages.append((pdf.page_name(path, number), page.convert("L")))
    return pages


def one_line_pages(count, rng):
    """``count`` ``(name, page)``: one short line on an A4 canvas at 150 dpi."""
    pages = []
    for index in range(count):
        text = LINES[index % len(LINES)]
        page = Image.new("L", (1240, 1754), 255)
        font = load_font(FACES[rng.randint(len(FACES))], int(rng.randint(28, 72)))
        ImageDraw.Draw(page).text((int(rng.randint(80, 500)), int(rng.randint(100, 1400))),
                                  text, fill=0, font=font)
        pages.append(("one line: %s" % text, page))
    return pages


def verdict(reader, page, turn):
    """How ``reader`` read ``page`` turned counter-clockwise by ``turn``: right, wrong, doubt
    (right way up but in doubt, or read upright in doubt when it lay turned: wrong) or
    refused."""
    try:
        read = reader.read(page.rotate(turn, expand=True))
    except ValueError as error:
        if type(error).__name__ == "UnknownOrientation":
            return "refused"
        raise
    right = read.turn == (360 - turn) % 360
    if getattr(read, "doubt", None):
        return "right, doubt" if right else "wrong, doubt"
    return "right" if right else "wrong"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12, help="PDF pages, and as many one-line")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--model", default="text", help="the shipped model that reads")
    args = parser.parse_args()
    from crnn_multigpu.ocr.inference import Recognizer
    from crnn_multigpu.ocr.page_reader import PageReader
    rng = np.random.RandomState(args.seed)
    reader = PageReader(Recognizer.shipped(args.model))
    kinds = (("PDF pages", pdf_pages(args.pages, rng)),
             ("one-line pages", one_line_pages(args.pages, rng)))
    print("%-28s %s" % ("", "  ".join("%12s" % v for v in
                                      ("right", "right, doubt", "wrong", "wrong, doubt",
                                       "refused"))))
    for kind, pages in kinds:
        for how in ("upright", "turned"):
            counts = dict.fromkeys(("right", "right, doubt", "wrong", "wrong, doubt", "refused"), 0)
            for index, (name, page) in enumerate(pages):
                turn = 0 if how == "upright" else TURNS[index % len(TURNS)]
                outcome = verdict(reader, page, turn)
                counts[outcome] += 1
                if not outcome.startswith("right"):
                    sys.stderr.write("%s turned by %d: %s\n" % (name, turn, outcome))
            print("%-28s %s" % ("%s, %s (%d)" % (kind, how, len(pages)),
                                "  ".join("%12d" % count for count in counts.values())),
                  flush=True)


if __name__ == "__main__":
    main()
