"""Make page material for the text detector: page images and every line's box
(``crnn_multigpu.datasets.page_material``; docs/detector.md).

Usage::

    python scripts/make_page_material.py --out DIR [--pages 300] [--seed 0] [--dpi 96-200]
        [--typeset-share 0.3] [--per-document 3] [--html-root DIR ...] [--pdf-root DIR ...]

HTML documents are printed by headless Chromium in styles drawn from the training side of the
installed faces (``datasets.fonts.select_fonts("train")``: reserved and held-out families never
appear); typeset PDFs are drawn as they ship. Needs chromium and poppler-utils
(``scripts/install_system_packages.sh --detector``). Run it again on the same folder with
another ``--seed`` to add pages.
"""
import argparse
import os
import string
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets import page_material  # noqa: E402
from crnn_multigpu.datasets.fonts import select_fonts  # noqa: E402
from crnn_multigpu.datasets.page_style import printable_faces  # noqa: E402
from crnn_multigpu.datasets.pdf import MAX_DPI, MIN_DPI  # noqa: E402

# What a face must draw to print the documentation in English, German, French, Spanish,
# Italian and Portuguese (debian-reference's languages).
PROBE = string.ascii_letters + string.digits + "äöüßÄÖÜéèêëàâçñõãíóúôîï€"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="material folder (created or continued)")
    parser.add_argument("--pages", type=int, default=300, help="pages the folder should hold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dpi", default="96-200", help="range of resolutions, e.g. 96-200")
    parser.add_argument("--typeset-share", type=float, default=0.3,
                        help="share of prints that are typeset PDFs rather than HTML")
    parser.add_argument("--per-document", type=int, default=3, help="pages drawn per print")
    parser.add_argument("--html-root", action="append", help="folder of HTML documents "
                        "(repeatable; default: %s)" % ", ".join(page_material.HTML_ROOTS))
    parser.add_argument("--pdf-root", action="append", help="folder of typeset PDFs "
                        "(repeatable; default: %s)" % ", ".join(page_material.PDF_ROOTS))
    args = parser.parse_args(argv)
    low, _, high = args.dpi.partition("-")
    dpi = (int(low), int(high or low)) if (low + high).isdigit() else None
    try:
        if dpi is None or not MIN_DPI <= dpi[0] <= dpi[1] <= MAX_DPI:
            raise ValueError("--dpi must be a resolution or a range of them within %d-%d, e.g. "
                             "96-200; got %r" % (MIN_DPI, MAX_DPI, args.dpi))
        faces = printable_faces(select_fonts("train", chars=PROBE))
        writer = page_material.generate(
            args.out, args.pages, faces, seed=args.seed, dpi=dpi,
            typeset_share=args.typeset_share, per_document=args.per_document,
            html_roots=tuple(args.html_root or page_material.HTML_ROOTS),
            pdf_roots=tuple(args.pdf_root or page_material.PDF_ROOTS),
            log=lambda line: print(line, flush=True))
    except (ValueError, OSError) as error:
        print("error: make_page_material: %s" % error, file=sys.stderr)
        return 2
    print("%d pages in %s (%s)" % (writer.count, args.out, writer.index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
