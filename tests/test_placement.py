"""One placement resolver (runtime.placement) for training and reading, on faked device lists;
and crnn-train's validation reader (ocr.validation)."""
import os
import shutil

import pytest

from assertions import one_error_line, run_captured
from crnn_multigpu.cli import evaluate, main_job, predict, train
from crnn_multigpu.datasets import open_dataset
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.validation import ValidationReader
from crnn_multigpu.runtime.placement import Placement, resolve_placement
from crnn_multigpu.wrapper import devices

CLUSTER = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"], "ps": ["127.0.0.1:2224"]}
THREE_ON_TWO = ("error: --towers 3 but only 2 GPU(s) are visible (/gpu:0, /gpu:1): use --towers "
                "2 or fewer (towers are GPUs when there are any; with CUDA_VISIBLE_DEVICES= they "
                "are virtual CPU devices)")


@pytest.fixture
def gpus(monkeypatch):
    """Fake this machine's GPUs: ``gpus(n)`` makes the local device listing show n of them."""
    def fake(count):
        monkeypatch.setattr(devices, "visible_gpus", lambda: ["/gpu:%d" % i for i in range(count)])
    return fake


def test_without_gpus_towers_are_virtual_cpus(gpus):
    gpus(0)
    assert resolve_placement() == Placement(("/cpu:0",), "/cpu:0", 1, "")
    assert resolve_placement(3) == Placement(("/cpu:0", "/cpu:1", "/cpu:2"), "/cpu:0", 3, "")
    config = resolve_placement(3).session_config()
    assert config.device_count["CPU"] == 3 and config.allow_soft_placement


def test_with_gpus_towers_are_gpus_and_more_are_refused(gpus):
    gpus(2)
    assert resolve_placement() == Placement(("/gpu:0", "/gpu:1"), "/cpu:0", 1, "")
    assert resolve_placement(1) == Placement(("/gpu:0",), "/cpu:0", 1, "")
    assert resolve_placement(2).session_config().device_count["CPU"] == 1
    with pytest.raises(ValueError) as refused:
        resolve_placement(3)
    assert "error: %s" % refused.value == THREE_ON_TWO
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="--towers must be a positive whole number"):
            resolve_placement(bad)


def test_a_cluster_places_towers_on_its_workers(gpus):
    gpus(0)  # this machine's devices do not matter
    assert resolve_placement(cluster=CLUSTER) == Placement(
        ("/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"), "/job:ps/task:0/cpu:0", 1,
        "grpc://127.0.0.1:2222")
    assert resolve_placement(4, {"worker": CLUSTER["worker"]}, gpus_per_task=2).devices[-1] == \
        "/job:worker/task:1/gpu:1"
    with pytest.raises(ValueError, match=r"^--towers 3 but the cluster has 2 tower\(s\) "):
        resolve_placement(3, CLUSTER)


def test_three_towers_on_two_gpus_are_refused_alike_by_every_tool(gpus, tiny_dataset,
                                                                   tmp_path, capsys):
    gpus(2)
    image = os.path.join(tiny_dataset, "images", sorted(os.listdir(
        os.path.join(tiny_dataset, "images")))[0])
    out = str(tmp_path / "run")
    tools = {
        "crnn-train": (train.main, ["--train", tiny_dataset, "--out", out, "--towers", "3",
                                    "--model", "tiny", "--steps", "2"]),
        "crnn-predict": (predict.main, ["--towers", "3", image]),
        "crnn-evaluate": (evaluate.main, ["--towers", "3", "--data", tiny_dataset]),
        "the main job": (main_job.main, ["--towers", "3", "--out", str(tmp_path / "job")]),
    }
    for name, (main, argv) in tools.items():
        code, _, err = run_captured(main, argv, capsys)
        if name == "the main job":  # it says which fonts it found first
            err = "\n".join(line for line in err.splitlines()
                             if not line.startswith(("fonts: ", "warning: only")))
        assert one_error_line(code, err) == THREE_ON_TWO, name
    # The main job refuses before it renders anything.
    assert not os.path.exists(str(tmp_path / "job" / "data"))


def test_the_validation_reader_reads_scores_and_names_the_unreadable(tiny_dataset, tmp_path):
    root = str(tmp_path / "val")
    shutil.copytree(tiny_dataset, root)
    first = os.path.join(root, "images", sorted(os.listdir(os.path.join(root, "images")))[0])
    with open(first, "r+b") as stream:
        stream.truncate(40)  # a truncated PNG
    dataset = open_dataset(root, charset=Charset.default())
    recognizer = Recognizer.shipped("text")
    try:
        unreadable = []
        reader = ValidationReader(recognizer.towers, dataset, recognizer.charset,
                                  recognizer.image_width, recognizer.model_cls, limit=5,
                                  batch_size=2, unreadable=unreadable)
        figures = reader(recognizer.session, step=10)
        assert figures["n"] == 5 and figures["unreadable"] == 1 and reader.unreadable is unreadable
        assert unreadable == [first]
        # The unreadable image is a wrong, empty reading: the other four decide the rest.
        assert figures["word_accuracy"] <= 0.8
        everything = ValidationReader(recognizer.towers, dataset, recognizer.charset,
                                      recognizer.image_width, recognizer.model_cls)
        assert everything(recognizer.session)["n"] == len(dataset)
    finally:
        recognizer.close()
