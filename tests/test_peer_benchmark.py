"""scripts/peer_benchmark.py without PyTorch: the TF parameter count, the data, the table's
arithmetic and the idle-machine accounting (the PyTorch twin itself is not tested here: torch is
no dependency; `make benchmark-peers PEER_ARGS=--quick` runs it)."""
import os
import sys

import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.towers import MultiGpuModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))

import peer_benchmark as peers  # noqa: E402


def test_trainable_parameter_count_of_the_small_crnn_alone_and_on_two_towers():
    alone, towers = tf.Graph(), tf.Graph()
    with alone.as_default():
        CRNN()
    with towers.as_default():
        MultiGpuModel(CRNN, devices=cpu_devices(2))  # one set of weights for both towers
    assert peers.trainable_parameter_count(alone) == 517525  # the figure of issue #26
    assert peers.trainable_parameter_count(towers) == 517525


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
            "cpu": {"busy": 20.0, "total": 20.0, "own": 19.0}}


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
    table = peers.format_table(summary, {"others_share": 0.0, "cpus": 2})
    assert "failed" in table.splitlines()[2]


def test_idle_accounting_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(u"cpu  100 5 20 800 10 1 2 3 0 0\ncpu0 50 2 10 400 5 0 1 1 0 0\n")
    busy, total = peers.read_proc_stat(str(stat))
    assert (busy, total) == (131, 941)  # idle and iowait are not busy; steal is
    assert peers.read_proc_stat(str(tmp_path / "missing")) is None
    # 2 CPUs for 10 s (2000 ticks at 100 Hz), 1500 busy ticks, 12 s of it our own
    window = peers.cpu_window(((0, 0), 1.0), ((1500, 2000), 13.0), ticks_per_second=100)
    assert window == {"busy": 15.0, "total": 20.0, "own": 12.0}
    assert abs(peers.others_share(window) - 0.15) < 1e-12
    assert peers.others_share(dict(window, own=16.0)) == 0.0  # tick rounding: never negative
    assert peers.cpu_window((None, 1.0), ((1, 2), 2.0)) is None
    assert peers.others_share(peers.add_windows([window, None, window])) == \
        peers.others_share(window)


def test_the_table_says_how_idle_the_machine_was():
    summary = peers.summarize({"tf2_1": [run(100.0)], "torch": [run(50.0)]})
    busy = peers.format_table(summary, {"others_share": 0.4, "cpus": 2, "load_before": 5.0,
                                        "load_after": 6.0})
    assert "NOT IDLE" in busy and "40 %" in busy and "5.00 before, 6.00 after" in busy
    assert "2.000" in busy  # tf2_1 / torch
    idle = peers.format_table(summary, {"others_share": 0.01, "cpus": 2})
    assert "NOT IDLE" not in idle and "idle: other processes stayed under 5 %" in idle
    assert "IDLE UNKNOWN" in peers.format_table(summary, {"others_share": None})
