"""scripts/peer_benchmark.py without PyTorch: the TF parameter count at both charsets, the data,
the table's arithmetic, the idle-machine accounting, and a whole run with fake workers (the
PyTorch twin itself is not tested here: torch is no dependency; `make benchmark-peers
PEER_ARGS=--quick` runs it)."""
import json
import os
import sys

import numpy as np
import pytest

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.towers import MultiGpuModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))

import cpu_accounting  # noqa: E402
import peer_benchmark as peers  # noqa: E402
import peer_tf_worker  # noqa: E402


def test_trainable_parameter_count_of_the_small_crnn_alone_and_on_two_towers():
    alone, towers = tf.Graph(), tf.Graph()
    with alone.as_default():
        CRNN()
    with towers.as_default():
        MultiGpuModel(CRNN, devices=cpu_devices(2))  # one set of weights for both towers
    assert peer_tf_worker.trainable_parameter_count(alone) == 517525  # the figure of issue #26
    assert peer_tf_worker.trainable_parameter_count(towers) == 517525


def test_the_chinese_charset_widens_only_the_output_layer_to_6900_classes():
    zh = peer_tf_worker.tf_spec(charset="zh")
    assert peer_tf_worker.charset_of("words").num_classes == 37  # 36 characters + the blank
    assert zh["classes"] == 6900  # 6,899 characters + the blank
    # The output layer is 2 x 64 LSTM units -> classes, with a bias: 129 weights a class; the
    # rest is the 37-class model's (517,525 parameters, above).
    assert zh["params"] - 517525 == 129 * (6900 - 37)
    assert (zh["channels"], zh["lstm_units"], zh["lstm_layers"], zh["height"]) == (
        [16, 32, 64, 64, 128, 128, 128], 64, 2, 32)


def test_synthetic_batches_are_fixed_by_the_seed_with_labels_of_1_to_10(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.npz", "b.npz")]
    for path in paths:
        peers.make_data(path, num_chars=36, batch_size=32, batches=3, infer_batch=64, seed=0)
    a, b = peers.load_data(paths[0]), peers.load_data(paths[1])
    assert a["train_images"].shape == (3, 32, 32, 100) and a["infer_images"].shape == (64, 32, 100)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    lengths, labels = a["train_lengths"], a["train_labels"]
    assert lengths.min() >= 1 and lengths.max() <= 10 and labels.shape == (3, 32, 10)
    assert labels.min() >= 0 and labels.max() < 36
    beyond = np.arange(10)[None, None, :] >= lengths[:, :, None]
    assert not labels[beyond].any()


def run(train, infer=100.0):
    return {"train_images_per_s": train, "infer_images_per_s": infer,
            "cpu": {"busy": 20.0, "total": 20.0, "steal": 0.0, "own": 19.0}}


def test_ratios_are_medians_of_per_repetition_ratios_not_ratios_of_medians():
    runs = {"tf2_1": [run(100.0), run(300.0), run(120.0)],
            "torch": [run(50.0), run(100.0), run(200.0)]}
    summary = peers.summarize(runs)
    assert summary["tf2_1"]["train_images_per_s"] == (100.0, 120.0, 300.0)
    # per repetition 2.0, 3.0, 0.6: the median is 2.0 (the ratio of the medians would be 1.2)
    assert abs(summary["tf2_1"]["train_images_per_s_ratio"] - 2.0) < 1e-12
    assert abs(summary["tf2_1"]["infer_images_per_s_ratio"] - 1.0) < 1e-12
    assert "train_images_per_s_ratio" not in summary["torch"]
    assert abs(summary["torch"]["others_share_all"] - 0.05) < 1e-12


def test_a_failed_repetition_drops_out_of_its_ratio_and_a_failed_config_says_so():
    runs = {"tf2_1": [run(100.0), None, run(90.0)], "tf1_1": [None, None, None],
            "torch": [run(50.0), run(100.0), None]}
    summary = peers.summarize(runs)
    assert summary["tf2_1"]["reps"] == 2 and summary["tf2_1"]["train_images_per_s_ratio"] == 2.0
    assert summary["tf1_1"]["train_images_per_s"] is None
    table = peers.format_table(summary)
    assert "failed" in table.splitlines()[2]


def test_idle_accounting_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(u"cpu  100 5 20 800 10 1 2 3 0 0\ncpu0 50 2 10 400 5 0 1 1 0 0\n")
    cpu = cpu_accounting
    busy, total, steal = cpu.read_proc_stat(str(stat))
    assert (busy, total, steal) == (128, 941, 3)  # idle, iowait and steal are not busy
    assert cpu.read_proc_stat(str(tmp_path / "missing")) is None
    # 2 CPUs for 10 s (2000 ticks at 100 Hz), 1500 busy ticks, 12 s of it our own; the
    # hypervisor kept 100 ticks, which is no other process's time
    window = cpu.cpu_window(((0, 0, 0), 1.0), ((1500, 2000, 100), 13.0), ticks_per_second=100)
    assert window == {"busy": 15.0, "total": 20.0, "steal": 1.0, "own": 12.0}
    assert abs(cpu.others_share(window) - 0.15) < 1e-12
    assert abs(cpu.steal_share(window) - 0.05) < 1e-12
    assert cpu.others_share(dict(window, own=16.0)) == 0.0  # tick rounding: never negative
    assert cpu.cpu_window((None, 1.0), ((1, 2), 2.0)) is None
    assert cpu.others_share(cpu.add_windows([window, None, window])) == cpu.others_share(window)


def test_the_table_says_how_idle_the_machine_was():
    summary = peers.summarize({"tf2_1": [run(100.0)], "torch": [run(50.0)]})
    assert "2.000" in peers.format_table(summary)  # tf2_1 / torch
    busy = peers.format_idle({"others_share": 0.4, "cpus": 2, "load_before": 5.0,
                              "load_after": 6.0})
    assert "NOT IDLE" in busy and "40 %" in busy and "5.00 before, 6.00 after" in busy
    idle = peers.format_idle({"others_share": 0.01, "cpus": 2})
    assert "NOT IDLE" not in idle and "idle: other processes stayed under 5 %" in idle
    assert "IDLE UNKNOWN" in peers.format_idle({"others_share": None})


class FakeWorkers(object):
    """The workers of a run, faked: the TF spec of each charset (its sizes), the twin's check,
    and every timed run (train images/s 100 over the classes in thousands + 1 for TF, 80 likewise
    for the twin; inference twice that), each command kept."""

    def __init__(self):
        self.commands = []

    def __call__(self, command, env, timeout):
        self.commands.append(command)
        value = dict((flag, command[i + 1]) for i, flag in enumerate(command[:-1])
                     if flag.startswith("--"))
        if "--spec" in value:
            open(value["--spec"], "wb").close()
            classes = {"words": 37, "zh": 6900}[value["--charset"]]
            return {"classes": classes, "channels": [1] * 7, "lstm_units": 64, "lstm_layers": 2,
                    "height": 32, "params": 1000 + classes, "tensorflow": "2.x"}
        if "--check" in value:
            diff = {"logits_max_abs_diff": 1e-7, "loss": 1.0, "tf_loss": 1.0}
            return {"check": {"inference": diff, "training": diff}}
        classes = int(value["--classes"])
        train = (80.0 if command[1].endswith("torch_twin.py") else 100.0) / (classes // 1000 + 1)
        return {"train_images_per_s": train, "infer_images_per_s": 2 * train, "version": "v",
                "params": 1000 + classes,
                "cpu": {"busy": 2.0, "total": 2.0, "steal": 0.0, "own": 2.0}}


def test_a_run_times_every_configuration_at_both_charsets_beside_the_gemm_peak(
        monkeypatch, tmp_path, capsys):
    workers, peaks = FakeWorkers(), []

    def peak(**settings):
        peaks.append(settings)
        return {"numpy": {"256": 5e10 * len(peaks)}, "tensorflow": {"256": 4e10},
                "others_share": 0.0}
    monkeypatch.setattr(peers, "run_worker", workers)
    monkeypatch.setattr(peers, "measure_in_subprocess", peak)
    out = str(tmp_path / "peers.json")
    python = sys.executable  # every stack's interpreter: the fakes run nothing
    code = peers.main(["--quick", "--reps", "2", "--configs", "tf2_2,torch", "--json", out,
                       "--python-tf2", python, "--python-tf1", python, "--python-torch", python])
    printed = capsys.readouterr().out
    assert code == 0
    runs = [c for c in workers.commands if "--data" in c]
    assert len(runs) == 2 * 2 * 2  # repetitions x charsets x configurations
    # The twin is built, checked and timed with each charset's classes and parameter count.
    twins = [c for c in workers.commands if c[1].endswith("torch_twin.py")]
    assert sorted(set((c[c.index("--classes") + 1], c[c.index("--expect-params") + 1])
                      for c in twins)) == [("37", "1037"), ("6900", "7900")]
    assert len(twins) == 2 + 2 * 2  # one check per charset, then the timed runs
    assert "37 classes (digits and lower case" in printed
    assert "6,900 classes (the Chinese charset" in printed
    # tf2_2 / torch: 100 / 80 at 37 classes; (100 / 7) / (80 / 7) at 6,900: 1.25 both
    ratios = [line for line in printed.splitlines() if line.startswith("tf2_2 ")][-1].split()
    assert ratios[1:] == ["1.250"] * 4
    assert "train 37 cl." in printed and "train 6,900 cl." in printed
    # The GEMM peak alone, before and after the runs, with TensorFlow's kernel too.
    assert len(peaks) == 2 and all(p["tensorflow"] for p in peaks)
    assert "float32 GEMM peak, each measured alone in a process of its own: numpy 50.0 GFLOP/s, " \
        "TF 40.0 (after the runs: 100.0, 40.0)" in printed
    report = json.load(open(out))
    assert sorted(report["summaries"]) == ["words", "zh"]
    assert report["summaries"]["zh"]["tf2_2"]["train_images_per_s_ratio"] == 1.25
    assert report["gemm_peak"]["after"]["numpy"]["256"] == 1e11


def test_an_unknown_charset_is_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as exit_request:
        peers.main(["--charsets", "words,klingon"])
    assert exit_request.value.code == 2
    assert "--charsets: unknown klingon; choose from words, zh" in capsys.readouterr().err
