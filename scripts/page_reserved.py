"""The page reader's final check on Debian's reserved manuals, beside Tesseract 5 and PP-OCRv4.

Usage::

    python scripts/page_reserved.py                        # 6 pages a make, en and zh
    python scripts/page_reserved.py --languages zh --pages-per-make 4 --json reserved.json

A final check (issue 51's "Done when"): run it for a chosen page reader, never to choose one.
Its material is reserved, never trained, validated or chosen on: Debian's FAQ, New Maintainers'
Guide and Installation Guide (``debian-faq*``, ``maint-guide*``, ``installation-guide-*``;
``scripts/install_system_packages.sh --compare``), in English and Simplified Chinese, as three
makes:

* ``browser, reserved faces``: their HTML printed by headless Chromium in a seeded CSS style
  (``datasets.page_style.page_recipe``) in the reserved type families that draw the language
  (Liberation, FreeFont, URW base35 and TeX Gyre; AR PL for Chinese);
* ``browser, training faces``: the same in the training side's faces;
* ``shipped PDF``: the PDFs the packages ship (DocBook toolchains), fonts as they are.

The manuals take turns (each its documents in a seeded order), so that every one gives pages.
Pages, systems, figures and table are those of scripts/page_makes.py (a page counts with
``MIN_ROWS`` rows in the language); then a verdict for each make and language against the
"Done when": no page refused, none read turned, rows exactly right at least PP-OCRv4's and a
page CER at most Tesseract's (the better of its two modes). A benchmark, not a test.
"""
import argparse
import collections
import glob
import hashlib
import itertools
import math
import os
import random
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from crnn_multigpu.datasets.fonts import find_fonts, is_reserved  # noqa: E402
from crnn_multigpu.datasets.page_material import MIN_HTML_BYTES  # noqa: E402
from crnn_multigpu.datasets.page_style import printable_faces  # noqa: E402
from make_page_material import PROBE  # noqa: E402
from page_makes import (LANGUAGES, PADDLE, PROJECT, TESSERACT, ZH_PROBE, faces_for,  # noqa: E402
                        measure, read_language, table)
from page_makes_pages import PageMaker, path_language  # noqa: E402
from reports import one_line_errors, write_json  # noqa: E402

MANUALS = collections.OrderedDict((
    ("debian-faq", ("/usr/share/doc/debian/FAQ", "/usr/share/doc/debian-faq*")),
    ("maint-guide", ("/usr/share/doc/maint-guide*",)),
    ("installation-guide", ("/usr/share/doc/installation-guide-*",))))
RESERVED_FACES, TRAINING_FACES, SHIPPED = ("browser, reserved faces", "browser, training faces",
                                          "shipped PDF")
MAKES = (RESERVED_FACES, TRAINING_FACES, SHIPPED)
INSTALL = "scripts/install_system_packages.sh --compare"


def manual_files(manual, kind):
    """The files of one of :data:`MANUALS` of ``kind`` ("html": pages big enough to print, or
    "pdf": ``.pdf`` and ``.pdf.gz``), each content once (the FAQ ships ``x.html`` and
    ``x.en.html`` alike), sorted."""
    found, seen = [], set()
    for pattern in MANUALS[manual]:
        for root in sorted(glob.glob(pattern)):
            for folder, _, names in sorted(os.walk(root)):
                for name in sorted(names):
                    path = os.path.join(folder, name)
                    wanted = name.endswith(".html") and os.path.getsize(path) >= MIN_HTML_BYTES \
                        if kind == "html" else name.endswith((".pdf", ".pdf.gz"))
                    if not wanted:
                        continue
                    with open(path, "rb") as stream:
                        digest = hashlib.sha1(stream.read()).hexdigest()
                    if digest not in seen:
                        seen.add(digest)
                        found.append(path)
    return sorted(found)


def documents(kind, language, rng, files=manual_files):
    """The manuals' files of ``kind`` in ``language`` (by their paths), the manuals taking
    turns, each manual's files in an order drawn by ``rng``."""
    turns = []
    for manual in MANUALS:
        chosen = [path for path in files(manual, kind) if path_language(path) == language]
        rng.shuffle(chosen)
        turns.append(chosen)
    return [path for group in itertools.zip_longest(*turns) for path in group if path]


def reserved_faces(language):
    """The printable faces of the reserved families that draw ``language``'s probe."""
    probe = ZH_PROBE if language.name == "zh" else PROBE
    found = [path for path in find_fonts(chars=probe, include_reserved=True,
                                         language=language) if is_reserved(path)]
    return printable_faces(found)


def draw_pages(args, language, scratch, log, files=manual_files):
    """``{make: [Page]}`` of ``language`` for every make asked; ValueError naming what to install
    when a make has nothing to draw from."""
    rng = random.Random("%d:%s" % (args.seed, language.name))
    drawn = collections.OrderedDict()
    for make in args.makes:
        kind = "pdf" if make == SHIPPED else "html"
        found = documents(kind, language.name, rng, files)
        faces = {RESERVED_FACES: reserved_faces, TRAINING_FACES: faces_for}.get(
            make, lambda _: [])(language)
        if not found or (kind == "html" and not faces):
            raise ValueError("no %s for %s pages of the reserved manuals (%s); run %s" % (
                "faces" if found else "documents", language.name, make, INSTALL))
        per_document = args.per_document if kind == "html" else \
            math.ceil(args.pages_per_make / float(len(found)))
        folder = os.path.join(scratch, re.sub(r"\W+", "_", make))
        os.makedirs(folder, exist_ok=True)
        maker = PageMaker(language.name, faces, args.dpi, folder, rng, log, per_document,
                          fonts_checked=False)
        drawn[make] = maker.pages("typeset" if kind == "pdf" else "browser", found,
                                  args.pages_per_make)
        log("%s %s: %d pages from %d documents" % (make, language.name, len(drawn[make]),
                                                   len(found)))
    return drawn


def verdicts(results):
    """A line for each make and language: whether the project meets the "Done when" there,
    and if not, which part it misses."""
    lines = []
    by_key = collections.OrderedDict()
    for row in results:
        by_key.setdefault((row["make"], row["language"]), {})[row["system"]] = row
    for (make, code), systems in by_key.items():
        ours, misses = systems[PROJECT], []
        if ours["refused"] or ours["turned"]:
            misses.append("%d pages refused, %d read turned" % (ours["refused"], ours["turned"]))
        paddle = systems.get(PADDLE)
        if paddle and ours["rows_exact"] < paddle["rows_exact"]:
            misses.append("rows %.1f %% < PP-OCRv4's %.1f %%" % (100 * ours["rows_exact"],
                                                                 100 * paddle["rows_exact"]))
        tesseract = [row["cer"] for name, row in systems.items() if name.startswith(TESSERACT)]
        if tesseract and ours["cer"] > min(tesseract):
            misses.append("page CER %.2f %% > Tesseract's %.2f %%" % (100 * ours["cer"],
                                                                     100 * min(tesseract)))
        unpeered = "" if paddle and tesseract else " (a peer missing: not judged in full)"
        lines.append("%s, %s: %s%s" % (make, code, "; ".join(misses) if misses else "met",
                                       unpeered))
    return lines


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages-per-make", type=int, default=6, help="pages of each make and "
                        "language (6)")
    parser.add_argument("--languages", default="en,zh", help="comma-separated: en, zh")
    parser.add_argument("--makes", default="reserved,training,shipped",
                        help="comma-separated: reserved (browser prints in the reserved faces), "
                        "training (in the training faces), shipped (the shipped PDFs)")
    parser.add_argument("--seed", type=int, default=0, help="draws documents, styles, pages")
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--per-document", type=int, default=1,
                        help="most pages of one HTML document's print (1)")
    parser.add_argument("--keep", help="keep the page images in this folder")
    parser.add_argument("--json", help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    names = dict(zip(("reserved", "training", "shipped"), MAKES))
    args.languages, makes = args.languages.split(","), args.makes.split(",")
    for value, allowed, option in ((args.languages, LANGUAGES, "--languages"),
                                   (makes, names, "--makes")):
        if not set(value) <= set(allowed):
            parser.error("%s takes %s; got %s" % (option, ", ".join(allowed), ",".join(value)))
    if args.pages_per_make < 1 or args.per_document < 1:
        parser.error("--pages-per-make and --per-document must be at least 1")
    args.makes = [names[make] for make in makes]
    return args


def main_body(argv=None):
    args = parse(argv)
    done = measure(args, draw_pages, read_language, "page_reserved_")
    print(table(done.results))
    print("\nDone when (no page refused or read turned, rows >= PP-OCRv4, page CER <= "
          "Tesseract):")
    done_when = verdicts(done.results)
    for line in done_when:
        print("- " + line)
    print(done.machine)
    print("%d s in all; pages at %d dpi, seed %d" % (done.seconds, args.dpi, args.seed))
    write_json(args.json, dict(figures=done.results, pages=done.pages, skipped=done.skipped,
                               machine=done.machine, others_share=done.share,
                               verdicts=done_when,
                               settings=dict((key, getattr(args, key)) for key in (
                                   "pages_per_make", "languages", "makes", "seed", "dpi",
                                   "per_document"))))
    return 0


main = one_line_errors(main_body)

if __name__ == "__main__":
    sys.exit(main())
