"""Reading speed beside the peers: pages per second of this project (on TensorFlow and on ONNX
Runtime), Tesseract 5 and PP-OCRv4 on the same pages, read in turn; one table.

Usage::

    make benchmark-reading                                   # 8 English pages, 3 rounds
    python scripts/benchmark_reading.py --pages 12 --rounds 5 --out reading.json
    python scripts/benchmark_reading.py --language zh        # Chinese pages, the zh model

Pages: ``--pages`` body pages (at least :data:`MIN_ROWS` rows of text) drawn with ``--seed``
from a fixed list of TeX Live manuals (:data:`PDF_SETS`; English: texlive-base's, Chinese:
texlive-lang-chinese's without lshort-zh-cn.pdf and ctex-faq.pdf, which the project reserves),
or from ``--pdf``; a PDF scripts/pdf_training_set.py would refuse (reserved, a font not embedded
or maybe a reserved face) is left out. Each page is rasterised in grey by ``pdftoppm`` at
``--dpi`` (150). The models may have trained on other pages of these manuals: the CER printed
beside the speed shows that the systems read the pages, not how well they read unseen ones
(``make compare`` and ``make compare-zh`` score on reserved material).

Systems: this project as ``crnn-predict --page`` reads (``ocr.page_reader.PageReader``), in a
process of its own on TensorFlow and another on ONNX Runtime (``--engine onnx``, the model
exported by ``crnn-export --format onnx`` into a temporary folder unless ``--onnx`` names one);
Tesseract one process per page as its users run it (``--psm 4``, ``-l eng`` or ``chi_sim``,
``OMP_THREAD_LIMIT`` = ``--threads``); PP-OCRv4 (``scripts/rapidocr_read.py --list -`` in
``.venv-rapidocr``), one process answering page by page. The other systems use their own thread
defaults (all cores).

Timing: the processes are started first; a start-up (launch to ready: interpreter, imports,
model load) is reported once, apart. Then ``--rounds`` rounds: each page is read by every system
before the next page, the systems' order turned by one from page to page and round to round, so
that what else the machine does falls on all alike. A page's time is what its caller waits (path
sent to rows back; Tesseract's whole process). Per system: the median over rounds of its seconds
per page (pages/s is its inverse), lines/s (the rows it wrote over that time), and the median
over rounds of Tesseract's time over its own (above 1: faster than Tesseract). The first round
carries first-use costs (graph optimisation, allocations), which the median of three rounds or
more leaves out.

Idle: the 1-minute load average before and after, and the share of all CPU time (``/proc/stat``)
that other processes used during the rounds: everything but this script, its workers
(``/proc/PID/stat``) and its finished children (rusage). Above 5 % the table says NOT IDLE: its
figures are then no result. A missing peer is skipped with one line saying what to install; if
the project itself cannot read, the script stops with one ``error:`` line (exit 2).
"""
import argparse
import collections
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from crnn_multigpu.ocr.shipped import shipped_model  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.ocr.metrics import SCORINGS, edit_distance, scoring_fold  # noqa: E402
from page_check import layout_rows, rasterise  # noqa: E402
from pdf_training_set import page_count, refusal  # noqa: E402
from cpu_accounting import (cpu_window, idle_verdict, load_average, others_share,  # noqa: E402
                            own_cpu_seconds, read_proc_stat, steal_share)
from reading_systems import INSTALL_COMPARE, TESSERACT, readers  # noqa: E402
from reports import one_line_errors, write_json  # noqa: E402

TEXLIVE = "/usr/share/doc/texlive-doc/"
# language -> (the Debian package of the PDFs, the PDFs): manuals of running prose, code and
# tables whose fonts are all embedded and none reserved (checked again at run time).
PDF_SETS = {
    "en": ("texlive-base", [TEXLIVE + path for path in (
        "texlive/texlive-en/texlive-en.pdf", "kpathsea/kpathsea.pdf", "web2c/web2c.pdf",
        "dvips/dvips.pdf", "etex/base/etex_man.pdf", "texlive/tlbuild/tlbuild.pdf",
        "bibtex/base/btxdoc.pdf", "support/makeindex/makeindex.pdf", "dvipdfmx/dvipdfmx.pdf",
        "support/texdoc/texdoc.pdf")]),
    "zh": ("texlive-lang-chinese", [TEXLIVE + path for path in (
        "latex/install-latex-guide-zh-cn/install-latex-guide-zh-cn.pdf",
        "latex/fduthesis/fduthesis.pdf", "support/tlmgr-intro-zh-cn/tlmgr-intro-zh-cn.pdf",
        "support/asymptote-manual-zh-cn/asymptote-manual-zh-cn.pdf",
        "support/asymptote-by-example-zh-cn/asymptote-by-example-zh-cn.pdf",
        "xelatex/exam-zh/doc/exam-zh-doc.pdf")]),
}
MODELS = {"en": shipped_model("text"), "zh": shipped_model("zh")}
MIN_ROWS = 15   # a body page: a title page or a figure would time the page reader on nothing

Page = collections.namedtuple("Page", "pdf number path truth")


# ----- the pages ------------------------------------------------------------------------

def usable_pdfs(pdfs):
    """``(usable, notes)``: the PDFs that exist and that pdf_training_set.refusal accepts."""
    usable, notes = [], []
    for pdf in pdfs:
        why = "not found" if not os.path.isfile(pdf) else refusal(pdf)
        if why:
            notes.append("%s left out: %s" % (pdf, why))
        else:
            usable.append(pdf)
    return usable, notes


def truth_rows(pdf, number, language):
    """The text layer's rows of a page (``page_check.layout_rows``), as ``language`` writes."""
    rows = [language.spell(language.join_pieces(word[4] for word in sorted(words)))
            for _, words in layout_rows(pdf, number)]
    return [row for row in rows if row]


def choose_pages(pdfs, count, seed, rows_of, min_rows=MIN_ROWS):
    """``[(pdf, page number, truth rows)]``: ``count`` pages with ``min_rows`` rows of text
    (``rows_of(pdf, number)``), one PDF after another, each PDF's pages (its first, the title,
    left out) in an order drawn with ``seed``."""
    rng, queues = random.Random(seed), []
    for pdf in pdfs:
        numbers = list(range(2, page_count(pdf) + 1))
        rng.shuffle(numbers)
        queues.append((pdf, numbers))
    chosen = []
    while len(chosen) < count and any(numbers for _, numbers in queues):
        for pdf, numbers in queues:
            while numbers and len(chosen) < count:
                number = numbers.pop()
                rows = rows_of(pdf, number)
                if len(rows) >= min_rows:
                    chosen.append((pdf, number, rows))
                    break
    return chosen


def make_pages(chosen, folder, dpi):
    """The chosen pages rasterised in ``folder``: :data:`Page` records."""
    return [Page(pdf, number, rasterise(pdf, number, dpi, os.path.join(folder, "page%02d" % i)),
                 rows) for i, (pdf, number, rows) in enumerate(chosen)]


# ----- the rounds and the figures -------------------------------------------------------

def interleaved(systems, paths, rounds, progress=None):
    """``(seconds, rows)``: ``seconds[name][round][page]`` each system took on each page, and
    ``rows[name][page]`` it read in the first round. Every page is read by every system before
    the next page, their order turned by one from page to page and round to round."""
    seconds = collections.OrderedDict((s.name, [[0.0] * len(paths) for _ in range(rounds)])
                                      for s in systems)
    rows = collections.OrderedDict((s.name, [None] * len(paths)) for s in systems)
    for round_ in range(rounds):
        for index, path in enumerate(paths):
            shift = (round_ + index) % len(systems)
            for system in systems[shift:] + systems[:shift]:
                began = time.perf_counter()
                read = system.read(path)
                seconds[system.name][round_][index] = time.perf_counter() - began
                if round_ == 0:
                    rows[system.name][index] = read
            if progress:
                progress("round %d/%d, page %d/%d: %s" % (
                    round_ + 1, rounds, index + 1, len(paths), ", ".join(
                        "%s %.2f s" % (name, took[round_][index])
                        for name, took in seconds.items())))
    return seconds, rows


def character_error_rate(pages_read, truths, fold):
    """Edits over the truth's characters, each page's rows joined by newlines and folded."""
    edits = chars = 0
    for read, truth in zip(pages_read, truths):
        truth_text = fold("\n".join(truth))
        edits += edit_distance(fold("\n".join(read)), truth_text)
        chars += len(truth_text)
    return edits / float(max(1, chars))


def summarize(seconds, rows, startups, truths, fold, reference=TESSERACT):
    """Per system: start-up (None: in each page), the median over rounds of seconds per page, pages/s and lines/s
    at that pace, the median over rounds of ``reference``'s time over its own, lines and CER."""
    summary = collections.OrderedDict()
    for name, rounds in seconds.items():
        per_page = [sum(taken) / len(taken) for taken in rounds]
        median = statistics.median(per_page)
        lines = sum(len(read) for read in rows[name])
        ratios = [sum(theirs) / sum(ours) for theirs, ours in zip(seconds[reference], rounds)] \
            if reference in seconds else []
        summary[name] = {
            "startup_seconds": startups[name], "seconds_per_page": median,
            "seconds_per_page_by_round": per_page, "pages_per_second": 1.0 / median,
            "lines": lines, "lines_per_second": lines / (median * len(rows[name])),
            "vs_tesseract": statistics.median(ratios) if ratios else None,
            "cer": character_error_rate(rows[name], truths, fold)}
    return summary


class CpuMeter(object):
    """Snapshots for ``cpu_accounting.cpu_window``: the machine's ticks and the CPU seconds of
    this process, its finished children and the running processes of ``systems``."""

    def __init__(self, systems, proc="/proc"):
        self.systems, self.proc = systems, proc

    def process_seconds(self, pid):
        """User + system CPU seconds of a running process (0 when it is gone)."""
        try:
            with open(os.path.join(self.proc, str(pid), "stat")) as stream:
                fields = stream.read().rpartition(")")[2].split()
        except (IOError, OSError):
            return 0.0
        # After the command's ")": state is field 3, utime 14 and stime 15 (proc(5)).
        return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))

    def snapshot(self):
        own = own_cpu_seconds(children=True) + sum(
            self.process_seconds(pid) for system in self.systems for pid in system.pids())
        return read_proc_stat(os.path.join(self.proc, "stat")), own


def idle_report(before, after, load_before, load_after):
    """How idle the machine was between two :class:`CpuMeter` snapshots."""
    window = cpu_window(before, after)
    share = others_share(window)
    return {"others_share": share, "steal_share": steal_share(window), "cpus": os.cpu_count(),
            "verdict": idle_verdict(share),
            "load_before": load_before[0] if load_before else None,
            "load_after": load_after[0] if load_after else None}


def table(summary, idle, names):
    """The figures as a markdown table (``names``: system -> column heading), then the idle
    verdict."""
    lines = ["| system | start-up, s | s/page | pages/s | lines/s | vs Tesseract | CER | lines |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in summary.items():
        startup = row["startup_seconds"]
        lines.append("| %s | %s | %.2f | %.2f | %.1f | %s | %.2f %% | %d |" % (
            names.get(name, name), "-" if startup is None else "%.1f" % startup,
            row["seconds_per_page"],
            row["pages_per_second"], row["lines_per_second"],
            "%.2fx" % row["vs_tesseract"] if row["vs_tesseract"] is not None else "-",
            100 * row["cer"], row["lines"]))
    load = ["%.2f" % value if value is not None else "?"
            for value in (idle["load_before"], idle["load_after"])]
    shares = ["?" if idle.get(key) is None else "%.0f %%" % (100 * idle[key])
              for key in ("others_share", "steal_share")]
    lines.append("machine: %s CPUs, load average %s before and %s after; other processes used "
                 "%s of all CPU time during the rounds, the hypervisor kept %s (steal)" % (
                     idle["cpus"], load[0], load[1], shares[0], shares[1]))
    lines.append(idle["verdict"])
    return lines


# ----- the command ----------------------------------------------------------------------

def at_least(minimum):
    """An argparse type: a whole number >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError("must be a whole number, got %r" % text)
        if value < minimum:
            raise argparse.ArgumentTypeError("must be at least %d, got %d" % (minimum, value))
        return value
    return parse


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=sorted(PDF_SETS), default="en")
    parser.add_argument("--pages", type=at_least(1), default=8, help="pages to read (8)")
    parser.add_argument("--rounds", type=at_least(1), default=3,
                        help="rounds over all pages (3); the figures are medians over rounds")
    parser.add_argument("--seed", type=int, default=0, help="draws the pages (0)")
    parser.add_argument("--dpi", type=at_least(50), default=150)
    parser.add_argument("--pdf", action="append", help="read pages of this PDF (repeatable; "
                                                       "default: the language's TeX Live manuals)")
    parser.add_argument("--checkpoint", help="the project's model: a run or model folder "
                                             "(default: the language's shipped model)")
    parser.add_argument("--onnx", help="its ONNX export (default: exported into a temporary "
                                       "folder by crnn-export --format onnx)")
    parser.add_argument("--threads", type=at_least(1), default=os.cpu_count() or 1,
                        help="Tesseract's OMP_THREAD_LIMIT (default: the CPUs, as the others use)")
    parser.add_argument("--timeout", type=at_least(1), default=900,
                        help="seconds a start-up or a page may take (900)")
    parser.add_argument("--out", help="write the figures to this JSON file")
    return parser.parse_args(argv)


def check_out(path):
    """Refuse an ``--out`` that cannot be written, before any page is read."""
    if path and (os.path.isdir(path) or not os.path.isdir(os.path.dirname(os.path.abspath(path)))):
        raise ValueError("--out %s: %s; pass a file path in an existing folder" % (
            path, "is a folder" if os.path.isdir(path) else "its folder does not exist"))


def pick_pages(args, language):
    """The ``(pdf, page, truth rows)`` to read, as the options say; ValueError when there are
    not enough."""
    package, default_pdfs = PDF_SETS[args.language]
    pdfs, notes = usable_pdfs(args.pdf or default_pdfs)
    for note in notes:
        sys.stderr.write("note: %s\n" % note)
    if not pdfs:
        raise ValueError("no PDF to read: %s; install them (%s: %s) or pass --pdf FILE" % (
            "no --pdf usable" if args.pdf else "none of %s's manuals found" % package,
            INSTALL_COMPARE, package))
    chosen = choose_pages(pdfs, args.pages, args.seed,
                          lambda pdf, number: truth_rows(pdf, number, language))
    if len(chosen) < args.pages:
        raise ValueError("only %d pages with %d rows of text in %s; ask for fewer --pages or "
                         "pass more --pdf" % (len(chosen), MIN_ROWS, ", ".join(pdfs)))
    return chosen


def start(systems):
    """``(started, start-up seconds by name)``: each system started in turn; a peer that cannot
    start is left out with one line, the first system (this project) must start."""
    started, startups = [], collections.OrderedDict()
    for system in systems:
        sys.stderr.write("starting %s\n" % system.name)
        try:
            startups[system.name] = system.start()
            started.append(system)
        except ValueError as error:
            system.close()
            if system is systems[0]:
                for other in started:
                    other.close()
                raise
            sys.stderr.write("skipping %s: %s\n" % (system.name, error))
    return started, startups


def main_body(argv=None):
    args = parse(argv)
    language = get_language(args.language)
    check_out(args.out)
    model = args.checkpoint or MODELS[args.language]
    if not os.path.isfile(os.path.join(model, "config.json")):
        raise ValueError("no model at %s (no config.json); pass a run or model folder with "
                         "--checkpoint" % model)
    chosen = pick_pages(args, language)
    scratch = tempfile.mkdtemp(prefix="benchmark_reading_")
    systems = []
    try:
        pages = make_pages(chosen, scratch, args.dpi)
        found, skipped = readers(language, model, args.onnx, scratch, args.threads, args.timeout)
        for line in skipped:
            sys.stderr.write(line + "\n")
        systems, startups = start(found)
        meter = CpuMeter(systems)
        load_before, before = load_average(), meter.snapshot()
        seconds, rows = interleaved(systems, [page.path for page in pages], args.rounds,
                                    lambda line: sys.stderr.write(line + "\n"))
        idle = idle_report(before, meter.snapshot(), load_before, load_average())
    finally:
        for system in systems:
            system.close()
        shutil.rmtree(scratch, ignore_errors=True)
    fold = scoring_fold(**SCORINGS[language.scoring])
    summary = summarize(seconds, rows, startups, [page.truth for page in pages], fold)
    print("\n".join(table(summary, idle, dict((s.name, s.label % s.version) for s in systems))))
    print("%d pages at %d dpi, %d round(s), medians over rounds; pages: %s" % (
        len(pages), args.dpi, args.rounds, ", ".join(
            "%s:%d" % (os.path.basename(page.pdf), page.number) for page in pages)))
    write_json(args.out, {
        "systems": summary, "versions": dict((s.name, s.version) for s in systems), "idle": idle,
        "pages": [{"pdf": page.pdf, "page": page.number, "rows": len(page.truth)}
                  for page in pages],
        "settings": dict((key, getattr(args, key)) for key in (
            "language", "pages", "rounds", "seed", "dpi", "threads")),
        "skipped": skipped, "seconds": seconds})
    return 0


main = one_line_errors(main_body)

if __name__ == "__main__":
    sys.exit(main())
