"""The whole-page reader on pages of every make, beside Tesseract 5 and PP-OCRv4: where it fails.

Usage::

    python scripts/page_makes.py                                   # 8 pages a make, en and zh
    python scripts/page_makes.py --pages-per-make 6 --languages en --json figures.json

Pages (``scripts/page_makes_pages.py``): browser prints of HTML documentation in seeded styles,
TeX Live's typeset PDFs and DocBook-made PDFs, in English and Simplified Chinese, drawn with
``--seed`` from the validation side of the detector's document split, never a reserved document
or face; each page drawn in grey at ``--dpi`` and its truth rows taken from the text layer.

Systems, on the same page images: this project through the library's front door
(``ocr.Reader("text")`` or ``ocr.Reader("zh")``, ``read(path)``: the page reader), Tesseract 5
(``--psm 4`` as the other checks run it and ``--psm 3``, its own analysis of columns and blocks;
``-l eng`` or ``chi_sim``, one process a page, OMP_THREAD_LIMIT=1) and PP-OCRv4
(``scripts/pp_ocr.py``, ``make venv-rapidocr``); a peer that cannot run is skipped with a line.

Figures per make, language and system: pages; pages the project refused (``Document.skipped``)
and read turned (``page.turn``: a quarter or half turn on these upright pages is a misjudged
orientation); text-layer rows read exactly (each matched once by an equal row read, in any
order, as ``page_check.rows_read_exactly``); the page CER (the page's rows joined by newlines
against the truth's, as the compare scripts score: the language's spelling and scoring fold); and
seconds a page (the project's start-up apart). The machine is shared: the load average and the
share of CPU time other processes used are printed with the table. A benchmark, not a test.

Needs ``scripts/install_system_packages.sh --detector`` (Chromium, the HTML documentation,
debian-handbook), ``--chinese`` (debian-reference-zh-cn, the Chinese faces), ``--compare``
(Tesseract and its models) and ``make venv-rapidocr``. Figures of a run: docs/accuracy.md,
"Pages of every make".
"""
import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from crnn_multigpu.datasets.fonts import select_fonts  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.datasets.page_looks import LOOKS  # noqa: E402
from crnn_multigpu.datasets.page_style import printable_faces  # noqa: E402
from crnn_multigpu.ocr.metrics import SCORINGS, scoring_fold  # noqa: E402
from cpu_accounting import cpu_snapshot, cpu_window, load_average, others_share  # noqa: E402
from make_page_material import PROBE  # noqa: E402
from page_makes_pages import MAKES, PageMaker, candidates  # noqa: E402
from pp_ocr import MISSING, PaddleOcr, rapidocr_ready  # noqa: E402
from reading_systems import INSTALL_COMPARE  # noqa: E402
from reports import one_line_errors, write_json  # noqa: E402
from side_by_side import Tesseract, page_scores, tesseract_languages  # noqa: E402

LANGUAGES = {"en": "text", "zh": "zh"}  # language -> the shipped model reading it
# Tesseract reading the page as one column of rows (4), as the other checks run it, and with its
# own analysis of columns and blocks (3, its default), which finds CSS columns itself.
TESSERACT_PSMS = (4, 3)
# What a Chinese face of a browser print must draw (the body, headings and code all in it, so
# that Chromium never falls back on a system face).
ZH_PROBE = u"的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动"
PROJECT, TESSERACT, PADDLE = "this project", "Tesseract", "PP-OCRv4"

Reading = collections.namedtuple("Reading", "rows seconds turned refused")
Reading.__doc__ = """One page read by one system: its rows (spelt as the language writes), the
seconds it took, whether it was read turned and whether it was refused (the project only)."""


class ProjectPages(object):
    """This project through the library's front door, the model opened once."""

    name = PROJECT

    def __init__(self, model):
        from crnn_multigpu import ocr
        started = time.time()
        self.reader = ocr.Reader(model)
        self.startup = time.time() - started

    def read(self, paths, spell):
        """A :data:`Reading` of each page image in ``paths``."""
        readings = []
        for path in paths:
            started = time.time()
            document = self.reader.read(path)
            seconds = time.time() - started
            rows = [spell(line.text) for page in document.pages for line in page.lines
                    if line.text.strip()]
            readings.append(Reading(rows, seconds, any(page.turn for page in document.pages),
                                    bool(document.skipped)))
        return readings


class TesseractPages(object):
    """Tesseract's command line with ``model`` and page segmentation mode ``psm``, one process a
    page (side_by_side.Tesseract)."""

    def __init__(self, model, psm):
        self.tesseract = Tesseract(model, page_psm=psm)
        self.name = "%s --psm %d" % (TESSERACT, psm)
        self.startup = None

    def read(self, paths, spell):
        readings = []
        for path in paths:
            started = time.time()
            rows = self.tesseract.read_page(path, spell)
            readings.append(Reading(rows, time.time() - started, False, False))
        return readings


class PaddlePages(object):
    """PP-OCRv4 in its own venv, one process for all the pages of a language (pp_ocr)."""

    name = PADDLE

    def __init__(self, language, scratch):
        self.paddle = PaddleOcr(lambda text: text, language.join_pieces)
        self.scratch, self.startup = scratch, None

    def read(self, paths, spell):
        done = self.paddle.read("page", paths, self.scratch)
        self.startup = done.startup
        return [Reading([spell(row) for row in rows], seconds, False, False)
                for rows, seconds in zip(done.texts, done.seconds)]


def systems_for(language, scratch, project=ProjectPages):
    """``(systems, skipped)`` reading ``language``: this project first, then the peers that can
    run; ``skipped``: a line for each that cannot, saying what to install."""
    found, skipped = [project(LANGUAGES[language.name])], []
    model = language.checks["tesseract"]
    if model in (tesseract_languages() or ()):
        found += [TesseractPages(model, psm) for psm in TESSERACT_PSMS]
    else:
        skipped.append("skipping Tesseract: its %s model is not installed; run %s"
                       % (model, INSTALL_COMPARE))
    if rapidocr_ready():
        found.append(PaddlePages(language, scratch))
    else:
        skipped.append("skipping PP-OCRv4: missing %s" % MISSING)
    return found, skipped


def figures(pages, readings, language):
    """The figures of one system on ``pages`` (of one make and language) from its
    ``readings``: pages, refused, turned, rows, rows_exact (share), cer, seconds_per_page."""
    fold = scoring_fold(**SCORINGS[language.scoring])
    total = np.zeros(4)
    for page, reading in zip(pages, readings):
        total += page_scores(reading.rows, [language.spell(row) for row in page.truth], fold,
                             "\n")
    return dict(pages=len(pages), refused=sum(r.refused for r in readings),
                turned=sum(r.turned for r in readings), rows=int(total[3]),
                rows_exact=total[2] / max(1.0, total[3]), cer=total[0] / max(1.0, total[1]),
                seconds_per_page=sum(r.seconds for r in readings) / max(1, len(readings)))


def table(results):
    """The figures as a markdown table, a row per make, language and system."""
    lines = ["| make | language | system | pages | refused / read turned | rows exactly right "
             "| page CER | s/page |", "|---|---|---|---|---|---|---|---|"]
    for row in results:
        lines.append("| %s | %s | %s | %d | %s | %.1f %% of %d | %.2f %% | %.1f |" % (
            row["make"], row["language"], row["system"], row["pages"],
            "%d / %d" % (row["refused"], row["turned"]) if row["system"] == PROJECT else "-",
            100 * row["rows_exact"], row["rows"], 100 * row["cer"], row["seconds_per_page"]))
    return "\n".join(lines)


def faces_for(language):
    """The printable training-side faces that draw ``language`` (the English probe or the
    Chinese one)."""
    if language.name == "zh":
        return printable_faces(select_fonts("train", language=language, chars=ZH_PROBE))
    return printable_faces(select_fonts("train", chars=PROBE))


def draw_pages(args, language, scratch, log):
    """``{make: [Page]}`` of ``language`` for every make asked."""
    rng = random.Random("%d:%s" % (args.seed, language.name))
    maker = PageMaker(language.name, faces_for(language), args.dpi, scratch, rng, log,
                      args.per_document, look=args.look)
    drawn = collections.OrderedDict()
    for make in args.makes:
        documents = candidates(make, language.name, args.validation_share, args.split_seed,
                               scratch, rng)
        drawn[make] = maker.pages(make, documents, args.pages_per_make)
        log("%s %s: %d pages from %d validation-side candidate documents" % (
            make, language.name, len(drawn[make]), len(documents)))
    return drawn


def read_language(drawn, language, scratch, log, project=ProjectPages):
    """Every system's readings of the pages of ``language`` (``drawn``: {make: pages}):
    ``(figures, by_page, start-ups, skipped lines)``, the figures one dict per make and system
    (in that order) and ``by_page`` {make: [each page's source and figures by system]}."""
    pages = [page for make_pages in drawn.values() for page in make_pages]
    if not pages:
        return [], {}, {}, []
    systems, skipped = systems_for(language, scratch, project)
    readings, startups = {}, {}
    for system in systems:
        log("%s reads %d %s pages" % (system.name, len(pages), language.name))
        readings[system.name] = dict(zip((page.path for page in pages), system.read(
            [page.path for page in pages], language.spell)))
        startups[system.name] = system.startup
    results, by_page = [], {}
    for make, make_pages in drawn.items():
        for system in systems:
            if make_pages:
                row = figures(make_pages, [readings[system.name][page.path]
                                           for page in make_pages], language)
                row.update(make=make, language=language.name, system=system.name)
                results.append(row)
        by_page[make] = [dict(source=page.source, page=page.number, image=page.path,
                              rows=len(page.truth), systems=dict(
                                  (system.name, figures([page], [readings[system.name][page.path]],
                                                        language)) for system in systems))
                         for page in make_pages]
    return results, by_page, startups, skipped


def machine_report(load_before, before):
    """``(line, share, load_after)``: how busy the machine was since ``load_before``
    (``load_average()``) and ``before`` (``cpu_snapshot(children=True)``) were taken, as a line
    to print, the share of CPU time other processes used and the load average now."""
    share, load_after = others_share(cpu_window(before, cpu_snapshot(children=True))), \
        load_average()
    line = ("machine: %d CPUs, load average %s at the start and %s at the end; other "
            "processes used %s of all CPU time (shared machine: the seconds are not speeds)"
            % (os.cpu_count(), "%.1f" % load_before[0] if load_before else "?",
               "%.1f" % load_after[0] if load_after else "?",
               "?" if share is None else "%.0f %%" % (100 * share)))
    return line, share, load_after


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages-per-make", type=int, default=8, help="pages of each make and "
                        "language (8)")
    parser.add_argument("--languages", default="en,zh", help="comma-separated: en, zh")
    parser.add_argument("--makes", default=",".join(MAKES), help="comma-separated: %s"
                        % ", ".join(MAKES))
    parser.add_argument("--seed", type=int, default=0, help="draws documents, styles, pages")
    parser.add_argument("--dpi", type=int, default=150)
    parser.add_argument("--look", choices=list(LOOKS), default="clean",
                        help="how the pages reach the readers: as drawn (clean), scanned or "
                        "photographed (datasets.page_looks)")
    parser.add_argument("--per-document", type=int, default=2, help="most pages of a document")
    parser.add_argument("--validation-share", type=float, default=0.1,
                        help="the detector split's validation share (train_detector.py's)")
    parser.add_argument("--split-seed", type=int, default=0, help="the detector split's seed")
    parser.add_argument("--keep", help="keep the page images in this folder")
    parser.add_argument("--json", help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    args.languages, args.makes = args.languages.split(","), args.makes.split(",")
    for value, allowed, option in ((args.languages, LANGUAGES, "--languages"),
                                   (args.makes, MAKES, "--makes")):
        if not set(value) <= set(allowed):
            parser.error("%s takes %s; got %s" % (option, ", ".join(allowed), ",".join(value)))
    if args.pages_per_make < 1:
        parser.error("--pages-per-make must be at least 1")
    return args


Measured = collections.namedtuple("Measured", "results pages startups skipped machine share "
                                               "loads seconds")
Measured.__doc__ = """What :func:`measure` gives: the figures of every make, language and system
(``results``), each page's (``pages``, by language), the systems' start-ups by language, the
lines of systems skipped (each once), the machine's line, the share of CPU time other
processes used, the load averages at the start and the end, and the seconds it all took."""


def log(line):
    """A progress line on stderr."""
    print(line, file=sys.stderr, flush=True)


def measure(args, draw, read, prefix):
    """Every language of ``args.languages`` drawn (``draw(args, language, scratch, log)``: the
    pages by make) and read by every system (``read``: :func:`read_language`), the pages kept in
    ``args.keep`` or in a scratch folder named with ``prefix`` and removed; a :class:`Measured`."""
    scratch = args.keep or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(scratch, exist_ok=True)
    started, load_before, before = time.time(), load_average(), cpu_snapshot(children=True)
    results, startups, skipped, pages = [], {}, [], {}
    try:
        for code in args.languages:
            language = get_language(code)
            drawn = draw(args, language, scratch, log)
            found, pages[code], startups[code], missing = read(drawn, language, scratch, log)
            results += found
            skipped += [line for line in missing if line not in skipped]
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    machine, share, load_after = machine_report(load_before, before)
    for line in skipped:
        log(line)
    return Measured(results, pages, startups, skipped, machine, share,
                    [load_before and load_before[0], load_after and load_after[0]],
                    time.time() - started)


def main_body(argv=None):
    args = parse(argv)
    done = measure(args, draw_pages, read_language, "page_makes_")
    print(table(done.results))
    print(done.machine)
    print("%d s in all; pages at %d dpi in the %s look, seed %d, validation side of "
          "split_by_source(share %g, seed %d)" % (done.seconds, args.dpi, args.look,
                                                  args.seed, args.validation_share,
                                                  args.split_seed))
    write_json(args.json, dict(figures=done.results, pages=done.pages,
                               startup_seconds=done.startups, skipped=done.skipped,
                               machine=done.machine, others_share=done.share, load=done.loads,
                               settings=dict((key, getattr(args, key)) for key in (
                                   "pages_per_make", "languages", "makes", "seed", "dpi",
                                   "look", "per_document", "validation_share",
                                   "split_seed"))))
    return 0


main = one_line_errors(main_body)

if __name__ == "__main__":
    sys.exit(main())
