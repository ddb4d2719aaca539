"""The project's OCR of Latin-script languages beside Tesseract 5 and PP-OCRv4, per language.

Usage::

    python scripts/compare_latin.py --model text                  # the full check, a shipped model
    python scripts/compare_latin.py --checkpoint RUN --quick --languages de,vi --json figures.json

The final check of a Latin-script model, on material reserved for it: per language, the reserved
document its description names (``checks.reserved_pdf``: its translation of lshort in Debian's
texlive-lang-* packages; ``scripts/latin_material.py``):

1. lines cut from the document (40 a language, ``--lines``): pages drawn with the seed, a few
   rows a page, rasterised at 150 dpi, rows found by the project's own page reader and labelled
   by the text layer, spelt as the language writes (NFC); rows the charset cannot write are left
   out and counted;
2. its whole body pages (``checks.pages``, one a language) at 150 dpi, scored against the text
   layer's rows.

Every system reads exactly the same image files: the project through its library (one process),
Tesseract one process per image (``--psm 7`` a line, ``--psm 4`` a page, OMP_THREAD_LIMIT=1) with
the language's own model (``checks.tesseract``: ``deu``, ``fra``, ...), with the Latin script
model (``script/Latin``; Debian lists it as ``Latin``) and with ``eng``; PP-OCRv4 through
``scripts/pp_ocr.py`` in its own venv (``make venv-rapidocr``), one process for all lines and
one for all pages. Every system's output is spelt as the truth (the language's spelling: NFC,
ligatures and odd spaces written out, blanks tidied). Scoring is strict: case and punctuation
count. Lines: exactly right and CER; pages: text-layer rows read exactly (each matched once, in
any order) and the CER of the page's rows joined by newlines.

Needs ``scripts/install_system_packages.sh --compare`` and ``make venv-rapidocr``.
"""
import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.ocr.metrics import text_metrics  # noqa: E402
from crnn_multigpu.ocr.shipped import DEFAULT_MODEL, SHIPPED, shipped_model  # noqa: E402
from latin_material import (INSTALL_COMPARE, check_material, checked_languages,  # noqa: E402
                            language_material)
from pdf_material import DPI  # noqa: E402
from pp_ocr import MISSING, PaddleOcr, rapidocr_ready  # noqa: E402
from reports import fail  # noqa: E402
from side_by_side import (Project, Tesseract, cell, check_checkpoint,  # noqa: E402
                          markdown_table, page_scores, shown_chars, tesseract_languages)

SYSTEMS = ("project", "own", "latin", "eng", "paddle")
LATIN_MODELS = ("script/Latin", "Latin")  # tessdata's name, then Debian's
QUICK_LINES = 10


def unchanged(text):
    """The text as read: every system's output is spelt per language after reading."""
    return text


# ----- the peers and what they need ------------------------------------------------------

def latin_model(models):
    """The name under which Tesseract lists its Latin script model, or None."""
    return next((name for name in LATIN_MODELS if name in (models or ())), None)


def missing_peers(languages, models, rapidocr_found):
    """What to install for the peers, one entry each: Tesseract and its models (each
    language's own, the Latin script's, English), PP-OCRv4's venv. ``models`` as
    :func:`tesseract_languages` gives them."""
    missing = []
    if models is None:
        missing.append("Tesseract 5 (%s)" % INSTALL_COMPARE)
    else:
        wanted = [language.checks["tesseract"] for language in languages] + ["eng"]
        absent = [model for model in wanted if model not in models]
        if latin_model(models) is None:
            absent.append("script/Latin")
        if absent:
            missing.append("Tesseract's models %s (%s)" % (", ".join(absent), INSTALL_COMPARE))
    if not rapidocr_found:
        missing.append(MISSING)
    return missing


def require_peers(languages):
    """The Latin script model's name; stops with one line naming what to install when a peer
    is missing."""
    models = tesseract_languages()
    missing = missing_peers(languages, models, rapidocr_ready())
    if missing:
        fail("missing %s" % "; ".join(missing))
    return latin_model(models)


# ----- reading ---------------------------------------------------------------------------

def read_all(material, project, latin, scratch):
    """``(lines, pages, names)``: each system's readings of every language's lines
    (``lines[system][language]``: texts) and pages (``pages[system][language]``: a list of rows
    per page), spelt as the language writes; ``names``: the column headings."""
    lines = dict((system, {}) for system in SYSTEMS)
    pages = dict((system, {}) for system in SYSTEMS)
    paddle = PaddleOcr(unchanged, " ".join)
    # One PP-OCR process for all lines and one for all pages: its start-up paid once a kind.
    paddle_lines = iter(paddle.read("line", [path for _, (samples, _, _) in material
                                             for path, _ in samples], scratch).texts)
    paddle_pages = iter(paddle.read("page", [path for _, (_, whole, _) in material
                                             for path, _, _ in whole], scratch).texts)
    names = {"project": project.name, "paddle": paddle.name}
    for language, (samples, whole, _) in material:
        started = time.time()
        paths, name = [path for path, _ in samples], language.name
        readers = [("project", project), ("own", Tesseract(language.checks["tesseract"])),
                   ("latin", Tesseract(latin)), ("eng", Tesseract("eng"))]
        for system, reader in readers:
            lines[system][name] = reader.read_lines(paths, language.spell)
            pages[system][name] = [reader.read_page(path, language.spell)
                                   for path, _, _ in whole]
        lines["paddle"][name] = [language.spell(next(paddle_lines)) for _ in paths]
        pages["paddle"][name] = [[language.spell(row) for row in next(paddle_pages)]
                                 for _ in whole]
        names.update(own="%s, each language's own model" % readers[1][1].name.rsplit(" ", 1)[0],
                     latin=readers[2][1].name, eng=readers[3][1].name)
        print("%s read: %d lines, %d pages (%.0f s)" % (name, len(paths), len(whole),
                                                          time.time() - started), file=sys.stderr)
    return lines, pages, names


# ----- scoring and the tables ----------------------------------------------------------------

def line_figures(readings, labels):
    """``{"n", "exact", "cer"}`` of readings against labels, scored strictly."""
    scored = text_metrics(readings, labels)
    return dict(n=len(labels), exact=scored["word_accuracy"], cer=scored["cer"])


def page_figures(read_pages, truths):
    """``{"rows", "rows_exact", "cer"}`` of pages read (lists of rows) against their truths."""
    total = np.zeros(4)
    for rows, truth in zip(read_pages, truths):
        total += page_scores(rows, truth, unchanged, "\n")
    return dict(rows=int(total[3]), rows_exact=total[2] / max(1.0, total[3]),
                cer=total[0] / max(1.0, total[1]), edits=total[0], chars=total[1],
                exact_rows=total[2])


def score(material, lines, pages):
    """Figures per language and overall (all lines; those holding a non-ASCII character; the
    all-ASCII ones; all pages), each with a figure per system."""
    figures = collections.OrderedDict()
    kept = dict((key, dict((system, ([], [])) for system in SYSTEMS))
                for key in ("all", "non_ascii", "ascii"))
    for language, (samples, whole, _) in material:
        labels, truths = [label for _, label in samples], [truth for _, truth, _ in whole]
        entry = dict(document=os.path.basename(language.checks["reserved_pdf"]),
                     tesseract=language.checks["tesseract"],
                     pages=[name for _, _, name in whole], lines={}, page={})
        for system in SYSTEMS:
            entry["lines"][system] = line_figures(lines[system][language.name], labels)
            entry["page"][system] = page_figures(pages[system][language.name], truths)
            for text, label in zip(lines[system][language.name], labels):
                kind = "ascii" if all(ord(char) < 128 for char in label) else "non_ascii"
                for key in ("all", kind):
                    kept[key][system][0].append(text)
                    kept[key][system][1].append(label)
        figures[language.name] = entry
    overall = dict((key, dict((system, line_figures(*kept[key][system])) for system in SYSTEMS))
                   for key in kept)
    overall["pages"] = {}
    for system in SYSTEMS:
        summed = [sum(figures[name]["page"][system][part] for name in figures)
                  for part in ("edits", "chars", "exact_rows", "rows")]
        overall["pages"][system] = dict(rows=int(summed[3]),
                                        rows_exact=summed[2] / max(1.0, summed[3]),
                                        cer=summed[0] / max(1.0, summed[1]))
    return figures, overall


def at_or_above(project, own):
    """True when the project's line figures are at or above the own model's: as many lines
    exactly right, no more CER."""
    return project["exact"] >= own["exact"] and project["cer"] <= own["cer"]


def tables(figures, overall, names):
    """The two markdown tables (lines; pages) and the summary line."""
    columns = [names[system] for system in SYSTEMS]
    line_rows = [("%s: %s (%s)" % (name, entry["document"], entry["tesseract"]),
                  str(entry["lines"]["project"]["n"]),
                  [cell(entry["lines"][s]["exact"], entry["lines"][s]["cer"]) for s in SYSTEMS])
                 for name, entry in figures.items()]
    for key, title in (("all", "all %d languages" % len(figures)),
                       ("non_ascii", "lines holding a non-ASCII character"),
                       ("ascii", "all-ASCII lines")):
        line_rows.append(("**%s**" % title, str(overall[key]["project"]["n"]),
                          [cell(overall[key][s]["exact"], overall[key][s]["cer"])
                           for s in SYSTEMS]))
    page_rows = [("%s: %s" % (name, ", ".join(entry["pages"])),
                  str(entry["page"]["project"]["rows"]),
                  [cell(entry["page"][s]["rows_exact"], entry["page"][s]["cer"]) for s in SYSTEMS])
                 for name, entry in figures.items()]
    page_rows.append(("**all %d pages**" % sum(len(entry["pages"]) for entry in figures.values()),
                      str(overall["pages"]["project"]["rows"]),
                      [cell(overall["pages"][s]["rows_exact"], overall["pages"][s]["cer"])
                       for s in SYSTEMS]))
    ahead = [name for name, entry in figures.items()
             if at_or_above(entry["lines"]["project"], entry["lines"]["own"])]
    summary = ("this project at or above Tesseract's own model (lines exactly right and CER): "
               "%d of %d languages (%s); overall: %s" % (
                   len(ahead), len(figures), ", ".join(ahead) or "none",
                   "yes" if at_or_above(overall["all"]["project"], overall["all"]["own"]) else "no"))
    return (markdown_table(columns, line_rows, "lines, %d dpi: exactly right / CER" % DPI),
            markdown_table(columns, page_rows, "whole pages, %d dpi: rows exactly right / page "
                                               "CER" % DPI), summary, ahead)


# ----- the comparison ---------------------------------------------------------------------

def parse(argv):
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--checkpoint", help="the model: a run or model folder")
    which.add_argument("--model", choices=SHIPPED, default=DEFAULT_MODEL,
                       help="a shipped model (default: %(default)s)")
    parser.add_argument("--languages", help="comma-separated, e.g. de,fr,vi (default: every "
                                            "language whose description names a reserved "
                                            "document)")
    parser.add_argument("--lines", type=int, default=40, help="lines a language")
    parser.add_argument("--quick", action="store_true",
                        help="%d lines a language (a smoke run); pages as always" % QUICK_LINES)
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--out", help="keep the images in this folder (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def cut_material(languages, scratch, count, seed):
    """``[(language, (lines, pages, report))]``, reporting what was cut on stderr."""
    material = []
    for language in languages:
        cut = language_material(scratch, language, count, seed)
        report = cut[2]
        print("%s: %d lines cut from %d pages (%d text-layer rows, %d pieces left out, "
              "characters the charset cannot write: %s)" % (
                  language.name, len(cut[0]), report["pages"], report["rows"],
                  report["left_out"], shown_chars(char for char, _ in
                                                  report["unwritable"].most_common(12)) or "none"),
              file=sys.stderr)
        material.append((language, cut))
    return material


def main(argv=None):
    """Cut the reserved material, read it with every system, print the tables."""
    args = parse(argv)
    run_dir = args.checkpoint or shipped_model(args.model)
    check_checkpoint(run_dir)
    languages = checked_languages(args.languages.split(",") if args.languages else None)
    latin = require_peers(languages)
    check_material(languages)
    started = time.time()
    scratch = args.out or tempfile.mkdtemp(prefix="compare_latin-")
    try:
        material = cut_material(languages, scratch, QUICK_LINES if args.quick else args.lines,
                                args.seed)
        lines, pages, names = read_all(material, Project(run_dir), latin, scratch)
    finally:
        if not args.out:
            shutil.rmtree(scratch, ignore_errors=True)
    figures, overall = score(material, lines, pages)
    names["project"] += " (%s)" % (args.checkpoint or "models/%s" % args.model)
    line_table, page_table, summary, ahead = tables(figures, overall, names)
    print(line_table + "\n\n" + page_table + "\n\n" + summary)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(dict(languages=figures, overall=overall, systems=names,
                           at_or_above_own_model=ahead, checkpoint=run_dir, seed=args.seed,
                           quick=args.quick, seconds=time.time() - started), handle, indent=1,
                      ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
