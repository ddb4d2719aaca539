"""The reading benchmark's own arithmetic and wiring (scripts/benchmark_reading.py and
scripts/reading_systems.py) with fake readers on a fake clock: the interleaving, the medians, the
table and the JSON, the idle verdict from /proc, a missing peer's line, and a reader process
answering page by page. No model, Tesseract, PP-OCR or PDF is needed."""
import io
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import benchmark_reading as bench  # noqa: E402
import rapidocr_read  # noqa: E402
import reading_systems  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.ocr.metrics import scoring_fold  # noqa: E402

TICK = float(os.sysconf("SC_CLK_TCK"))


class Clock(object):
    """The script's ``time`` module: its perf_counter moves only when a fake reader works."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now


class FakeReader(object):
    """Reads every page as ``rows`` in ``cost(round, page)`` seconds of the fake clock, writing
    each call into the shared ``log``."""

    def __init__(self, name, clock, log, rows, cost, version="1.0", label=None):
        self.name, self.clock, self.log, self.rows, self.cost = name, clock, log, rows, cost
        self.label, self.version = label or name + " %s", version
        self.fail_start = False
        self.calls, self.closed = 0, False

    def start(self):
        if self.fail_start:
            raise ValueError("%s ended (exit 2) before answering its start: no model" % self.name)
        self.clock.now += 3.0
        return 3.0

    def read(self, path):
        page = int(os.path.basename(path)[4:6])
        self.log.append((self.name, path))
        self.clock.now += self.cost(self.calls // PAGES, page)
        self.calls += 1
        return list(self.rows)

    def pids(self):
        return []

    def close(self):
        self.closed = True


PAGES = 3


def error_line(code, err):
    """The script stopped: exit code 2, no traceback, and its last line on stderr its only
    ``error: ...`` (progress and skipped peers above it); returns that line."""
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, (code, err)
    assert [line for line in lines if line.startswith("error: ")] == lines[-1:], err
    return lines[-1]


def page_paths(folder=""):
    return [os.path.join(folder, "page%02d.png" % i) for i in range(PAGES)]


def test_every_page_is_read_by_every_system_in_turn_the_order_turning(monkeypatch):
    clock, log = Clock(), []
    monkeypatch.setattr(bench, "time", clock)
    systems = [FakeReader(name, clock, log, ["a"], lambda r, p, k=k: k + 0.1 * r)
               for k, name in enumerate("ABCD", 1)]
    seconds, rows = bench.interleaved(systems, page_paths(), rounds=3)
    assert len(log) == 3 * PAGES * 4
    blocks = [log[i:i + 4] for i in range(0, len(log), 4)]
    for index, block in enumerate(blocks):  # one page at a time, every system once
        round_, page = divmod(index, PAGES)
        assert sorted(name for name, _ in block) == list("ABCD")
        assert set(path for _, path in block) == {page_paths()[page]}
        # The order turns by one from page to page and from round to round.
        shift = (round_ + page) % 4
        assert [name for name, _ in block] == list("ABCD"[shift:] + "ABCD"[:shift])
    firsts = [block[0][0] for block in blocks]
    assert sorted(set(firsts)) == list("ABCD")  # no system is always first
    # Each system's own seconds, exact on the fake clock; rows kept from the first round.
    assert seconds["C"] == [[pytest.approx(3 + 0.1 * r)] * PAGES for r in range(3)]
    assert rows["A"] == [["a"]] * PAGES


def test_figures_are_medians_over_rounds_and_the_ratio_a_median_of_round_ratios():
    seconds = {"ours": [[1.0, 1.0], [3.0, 3.0], [2.5, 2.5]],
               bench.TESSERACT: [[2.0, 2.0], [3.0, 3.0], [10.0, 10.0]]}
    rows = {"ours": [["a b", "c"], ["d"]], bench.TESSERACT: [["a b", "c"], ["d", "e"]]}
    truths = [["a b", "c"], ["d"]]
    summary = bench.summarize(seconds, rows, {"ours": 4.0, bench.TESSERACT: 0.0}, truths,
                              scoring_fold())
    ours = summary["ours"]
    assert ours["seconds_per_page"] == 2.5 and ours["pages_per_second"] == 0.4
    assert ours["seconds_per_page_by_round"] == [1.0, 3.0, 2.5]
    # Round ratios 2, 1, 4: their median 2, not the ratio of the medians (3 / 2.5).
    assert ours["vs_tesseract"] == 2.0
    assert ours["lines"] == 3 and ours["lines_per_second"] == pytest.approx(3 / (2.5 * 2))
    assert ours["cer"] == 0.0 and ours["startup_seconds"] == 4.0
    theirs = summary[bench.TESSERACT]
    assert theirs["seconds_per_page"] == 3.0 and theirs["vs_tesseract"] == 1.0
    assert theirs["cer"] == pytest.approx(2 / 6.0)  # "d\ne" for "d": 2 edits, of 5 + 1 chars
    alone = bench.summarize({"ours": seconds["ours"]}, {"ours": rows["ours"]}, {"ours": 1.0},
                            truths, scoring_fold())
    assert alone["ours"]["vs_tesseract"] is None


def test_chinese_pages_are_scored_blind_to_blanks_and_full_width_forms():
    zh = get_language("zh")
    fold = scoring_fold(**bench.SCORINGS[zh.scoring])
    assert bench.character_error_rate([["中文 ，测试"]], [["中文,测试"]], fold) == 0.0
    assert bench.character_error_rate([["中文测"]], [["中文测试"]], fold) == 0.25


def idle(share):
    return {"others_share": share, "cpus": 2, "load_before": 0.12, "load_after": 0.3,
            "verdict": bench.idle_verdict(share)}


def test_the_table_gives_each_system_its_figures_and_the_idle_verdict():
    summary = bench.summarize({"ours": [[0.5]], bench.TESSERACT: [[2.0]]},
                              {"ours": [["x"] * 40], bench.TESSERACT: [["x"] * 38]},
                              {"ours": 12.34, bench.TESSERACT: None}, [["x"] * 40], scoring_fold())
    lines = bench.table(summary, idle(0.01), {"ours": "this project, TensorFlow 2.21.0"})
    assert lines[0].startswith("| system | start-up, s | s/page | pages/s | lines/s | vs Tesseract")
    assert lines[2] == "| this project, TensorFlow 2.21.0 | 12.3 | 0.50 | 2.00 | 80.0 | 4.00x | " \
                       "0.00 % | 40 |"
    assert lines[3].startswith("| Tesseract | - | 2.00 | 0.50 | 19.0 | 1.00x |")
    assert "load average 0.12 before and 0.30 after" in lines[4] and "1 %" in lines[4]
    assert lines[5].startswith("idle: other processes stayed under 5 %")
    assert bench.table(summary, idle(0.4), {})[-1].startswith("NOT IDLE")


def write_stat(folder, busy, idle_ticks, pids=(), steal=0):
    """A fake /proc: the machine's ticks and each ``(pid, utime, stime)``."""
    (folder / "stat").write_text("cpu  %d 0 0 %d 0 0 0 %d 0 0\ncpu0 1 2 3 4\n"
                                 % (busy, idle_ticks, steal))
    for pid, utime, stime in pids:
        (folder / str(pid)).mkdir(exist_ok=True)
        # The command may hold spaces and brackets: fields are counted after the last ")".
        (folder / str(pid) / "stat").write_text(
            "%d (odd (name) x) S 1 1 1 0 -1 0 0 0 0 0 %d %d 0 0 20 0 1 0\n" % (pid, utime, stime))


class Worker(object):
    def __init__(self, pid):
        self.pid = pid

    def pids(self):
        return [self.pid]


@pytest.mark.parametrize("worker_ticks, verdict", [(4.0, "NOT IDLE"), (4.8, "idle:")])
def test_other_processes_share_of_the_cpu_time_decides_idle(tmp_path, monkeypatch, worker_ticks,
                                                            verdict):
    """10 CPU-seconds pass, 6 of them busy; this script used 1 and its worker the rest but for
    1 second (10 %: not idle) or 0.2 (2 %: idle)."""
    own = iter([50.0, 51.0])
    monkeypatch.setattr(bench, "own_cpu_seconds", lambda children: next(own))
    meter = bench.CpuMeter([Worker(4242)], proc=str(tmp_path))
    write_stat(tmp_path, 1000, 5000, [(4242, 300, 100)])
    before = meter.snapshot()
    write_stat(tmp_path, 1000 + 6 * TICK, 5000 + 4 * TICK,
               [(4242, 300 + worker_ticks * TICK / 2, 100 + worker_ticks * TICK / 2)])
    report = bench.idle_report(before, meter.snapshot(), (0.5, 0, 0), (0.7, 0, 0))
    assert report["others_share"] == pytest.approx((6 - 1 - worker_ticks) / 10.0)
    assert report["verdict"].startswith(verdict)
    assert (report["load_before"], report["load_after"]) == (0.5, 0.7)
    assert meter.process_seconds(999) == 0.0  # a process gone counts nothing


def test_time_the_hypervisor_kept_is_reported_apart_from_other_processes(tmp_path, monkeypatch):
    """10 CPU-seconds pass: 5 this script's and its worker's, 1 stolen by the hypervisor (10 %),
    4 idle. Nothing else ran here, so the machine was idle, and the steal is printed."""
    own = iter([50.0, 52.0])
    monkeypatch.setattr(bench, "own_cpu_seconds", lambda children: next(own))
    meter = bench.CpuMeter([Worker(4242)], proc=str(tmp_path))
    write_stat(tmp_path, 1000, 5000, [(4242, 300, 100)], steal=70)
    before = meter.snapshot()
    write_stat(tmp_path, 1000 + 5 * TICK, 5000 + 4 * TICK, [(4242, 300 + 3 * TICK, 100)],
               steal=70 + TICK)
    report = bench.idle_report(before, meter.snapshot(), (0.5, 0, 0), (0.7, 0, 0))
    assert report["others_share"] == pytest.approx(0.0)
    assert report["steal_share"] == pytest.approx(0.1)
    assert report["verdict"].startswith("idle:")
    summary = {"tesseract": {"startup_seconds": None, "seconds_per_page": 1.0,
                             "pages_per_second": 1.0, "lines_per_second": 9.0,
                             "vs_tesseract": 1.0, "cer": 0.02, "lines": 9}}
    assert "the hypervisor kept 10 % (steal)" in "\n".join(bench.table(summary, report, {}))


def test_pages_are_body_pages_drawn_with_the_seed_one_pdf_after_another(monkeypatch):
    monkeypatch.setattr(bench, "page_count", lambda pdf: 30)
    rows_of = lambda pdf, number: ["row"] * (20 if number % 3 else 2)  # noqa: E731
    chosen = bench.choose_pages(["a.pdf", "b.pdf"], 6, 7, rows_of)
    assert chosen == bench.choose_pages(["a.pdf", "b.pdf"], 6, 7, rows_of)
    assert chosen != bench.choose_pages(["a.pdf", "b.pdf"], 6, 8, rows_of)
    assert [pdf for pdf, _, _ in chosen] == ["a.pdf", "b.pdf"] * 3
    assert all(number % 3 and number > 1 for _, number, _ in chosen)
    assert len(bench.choose_pages(["a.pdf"], 50, 0, rows_of)) == 19  # all it has


def test_a_missing_peer_is_one_line_saying_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(reading_systems, "tesseract_languages", lambda: None)
    monkeypatch.setattr(reading_systems, "rapidocr_ready", lambda: False)
    monkeypatch.setattr(reading_systems, "export_onnx", lambda model, folder: (
        None, "error: crnn-export --format onnx needs tf2onnx: pip install crnn_multigpu[onnx]"))
    found, skipped = reading_systems.readers(get_language("en"), "models/text", None,
                                             str(tmp_path), 2, 60)
    assert [reader.name for reader in found] == ["this project (tf)"]
    assert len(skipped) == 3 and all("\n" not in line for line in skipped)
    assert "crnn_multigpu[onnx]" in skipped[0]
    assert "Tesseract" in skipped[1] and "install_system_packages.sh --compare" in skipped[1]
    assert "make venv-rapidocr" in skipped[2]
    monkeypatch.setattr(reading_systems, "tesseract_languages", lambda: {"eng"})
    found, skipped = reading_systems.readers(get_language("zh"), "models/zh", "x.onnx",
                                             str(tmp_path), 2, 60)
    assert [reader.name for reader in found] == ["this project (tf)", "this project (onnx)"]
    assert "chi_sim model not installed" in skipped[0]


@pytest.fixture
def fake_run(monkeypatch, tmp_path):
    """benchmark_reading's main with made-up pages and fake readers; returns the readers."""
    clock, log = Clock(), []
    monkeypatch.setattr(bench, "time", clock)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    pages = [bench.Page("/doc/m.pdf", i + 2, path, ["a line", "b line"])
             for i, path in enumerate(page_paths(str(tmp_path)))]
    monkeypatch.setattr(bench, "pick_pages", lambda args, language: pages)
    monkeypatch.setattr(bench, "make_pages", lambda chosen, folder, dpi: chosen)
    readers = [FakeReader("this project (tf)", clock, log, ["a line", "b line"],
                          lambda r, p: 0.5, version="TensorFlow 2.21.0", label="this project, %s"),
               FakeReader(bench.TESSERACT, clock, log, ["a line"], lambda r, p: 1.5 + r)]
    monkeypatch.setattr(bench, "readers", lambda *args: (readers, ["skipping PP-OCRv4: missing "
                                                                   "it (make venv-rapidocr)"]))
    return readers


def test_the_command_prints_the_table_and_writes_the_json(fake_run, tmp_path, capsys):
    out = str(tmp_path / "reading.json")
    assert bench.main(["--checkpoint", str(tmp_path / "model"), "--rounds", "3",
                       "--out", out]) == 0
    printed, err = capsys.readouterr()
    assert "skipping PP-OCRv4: missing it (make venv-rapidocr)" in err
    assert "| this project, TensorFlow 2.21.0 | 3.0 | 0.50 | 2.00 | 4.0 | 5.00x | 0.00 % | 6 |" \
        in printed
    assert "3 pages at 150 dpi, 3 round(s)" in printed and "m.pdf:2, m.pdf:3" in printed
    with open(out) as handle:
        figures = json.load(handle)
    assert figures["systems"][bench.TESSERACT]["seconds_per_page_by_round"] == [1.5, 2.5, 3.5]
    assert figures["systems"]["this project (tf)"]["vs_tesseract"] == 5.0
    assert figures["seconds"][bench.TESSERACT][2] == [3.5] * PAGES
    assert figures["versions"]["this project (tf)"] == "TensorFlow 2.21.0"
    assert figures["idle"]["verdict"] == bench.idle_verdict(figures["idle"]["others_share"])
    assert figures["settings"]["rounds"] == 3 and len(figures["pages"]) == PAGES
    assert figures["skipped"] == ["skipping PP-OCRv4: missing it (make venv-rapidocr)"]
    assert all(reader.closed for reader in fake_run)


def test_a_peer_that_cannot_start_is_left_out_the_project_must_start(fake_run, tmp_path, capsys):
    fake_run[1].fail_start = True
    model = str(tmp_path / "model")
    assert bench.main(["--checkpoint", model]) == 0
    printed, err = capsys.readouterr()
    assert "skipping Tesseract: Tesseract ended" in err and "| Tesseract" not in printed
    fake_run[0].fail_start = True
    code = bench.main(["--checkpoint", model])
    assert "this project (tf) ended (exit 2)" in error_line(code, capsys.readouterr().err)


def test_bad_options_stop_with_one_line_before_reading(tmp_path, capsys):
    for argv, words in [(["--out", str(tmp_path)], "is a folder"),
                        (["--out", str(tmp_path / "no" / "x.json")], "does not exist"),
                        (["--checkpoint", str(tmp_path)], "no model at"),
                        (["--pdf", str(tmp_path / "none.pdf"), "--checkpoint",
                          bench.MODELS["en"]], "install_system_packages.sh --compare")]:
        line = error_line(bench.main(argv), capsys.readouterr().err)
        assert words in line, line


STREAMER = r'''
import json, sys
print("a line of start-up talk")
print(json.dumps({"version": "9.9"}), flush=True)
for path in iter(sys.stdin.readline, ""):
    path = path.strip()
    if path == "die":
        sys.stderr.write("Traceback\nRuntimeError: out of memory\n")
        sys.exit(1)
    if path != "hang":
        print(json.dumps({"path": path, "rows": [[path, "b"], ["c"]]}), flush=True)
'''


def test_a_reader_process_answers_page_by_page_and_says_why_it_stopped():
    def reader():
        made = reading_systems.Streaming("fake", "fake %s", [sys.executable, "-c", STREAMER],
                                         lambda pieces: "+".join(pieces), 60)
        assert made.start() > 0 and made.version == "9.9" and made.pids()
        return made
    fake = reader()
    assert fake.read("p1") == ["p1+b", "c"] and fake.read("p2") == ["p2+b", "c"]
    with pytest.raises(ValueError) as dead:
        fake.read("die")
    assert str(dead.value) == "fake ended (exit 1) before answering die: RuntimeError: out of memory"
    assert fake.pids() == []
    fake.close()
    silent = reader()
    silent.timeout = 0.3  # started: now it is never to answer
    with pytest.raises(ValueError) as hung:
        silent.read("hang")
    assert "fake gave no answer within 0.3 s to hang" in str(hung.value)
    silent.close()


def test_paths_come_from_stdin_one_at_a_time(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("b.png\n\nc.png\n"))
    assert list(rapidocr_read.requested_paths(["a.png"], "-")) == ["a.png", "b.png", "c.png"]
