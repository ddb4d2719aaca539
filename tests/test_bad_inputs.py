"""The table of bad inputs: each gives a clear error (type and message) or is skipped and counted.

Command-line cases check the one-line ``error: ...`` and exit code 2 (never a
traceback); library cases check the exception type and message.
"""
import os
import shutil

import numpy as np
import pytest
from PIL import Image

import toy_models as toys
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.charset import Charset
from crnn_multigpu.cli import evaluate, generate, train
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import FolderDataset, open_dataset
from crnn_multigpu.devices import cpu_devices, tower_devices


def cli(main, argv, capsys):
    graph = tf.Graph()
    with graph.as_default():
        code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def broken_copy(tiny_dataset, tmp_path, labels=None, corrupt=()):
    root = str(tmp_path / "broken")
    shutil.copytree(tiny_dataset, root)
    if labels is not None:
        with open(os.path.join(root, "labels.txt"), "w") as stream:
            stream.write(labels)
    for index in corrupt:
        path = os.path.join(root, "images", sorted(os.listdir(os.path.join(root, "images")))[index])
        with open(path, "r+b") as stream:
            stream.truncate(40)  # a truncated PNG
    return root


CONFIG_CASES = {
    "zero towers": (lambda d, t: ["--towers", "0"], "--towers must be at least 1"),
    "batch smaller than towers": (lambda d, t: ["--towers", "4", "--batch-size", "3"],
                                  "smaller than the 4 towers"),
    "unknown charset file": (lambda d, t: ["--charset", str(t / "nope.txt")], "nope.txt does not exist"),
    "missing dataset": (lambda d, t: ["--train", str(t / "missing")], "does not exist"),
    "empty dataset": (lambda d, t: ["--train", broken_copy(d, t, labels="")], "lists no samples"),
    "malformed labels.txt": (lambda d, t: ["--train", broken_copy(d, t, labels="images/a.png\tab\nno-tab-here\n")],
                             "labels.txt line 2"),
    "unwritable --out": (lambda d, t: ["--out", os.path.join(d, "labels.txt", "run")],
                         "cannot write checkpoints"),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_train_configuration_errors(case, tiny_dataset, tmp_path, capsys):
    make_args, message = CONFIG_CASES[case]
    args = {"--train": tiny_dataset, "--out": str(tmp_path / "run"), "--steps": "2",
            "--model": "tiny", "--batch-size": "8"}
    extra = make_args(tiny_dataset, tmp_path)
    args.update(zip(extra[::2], extra[1::2]))
    code, err = cli(train.main, [x for pair in args.items() for x in pair], capsys)
    assert code == 2 and message in err, err
    assert not os.path.exists(os.path.join(str(tmp_path / "run"), "checkpoints", "checkpoint"))


def test_missing_fonts_is_a_clear_error(tmp_path, capsys):
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    os.environ["CRNN_FONT_DIRS"] = str(empty)
    try:
        code, err = cli(generate.main, ["--out", str(tmp_path / "out"), "--count", "2",
                                        "--font-dir", str(empty), "--quiet"], capsys)
    finally:
        del os.environ["CRNN_FONT_DIRS"]
    assert code == 2 and "font" in err.lower() and str(empty) in err


def test_evaluate_without_a_run_is_a_clear_error(tiny_dataset, tmp_path, capsys):
    code, err = cli(evaluate.main, ["--checkpoint", str(tmp_path), "--data", tiny_dataset], capsys)
    assert code == 2 and "not a training run directory" in err


def test_bad_labels_are_dropped_and_counted(tmp_path):
    root = tmp_path / "labels"
    (root / "images").mkdir(parents=True)
    Image.new("L", (40, 20), 255).save(str(root / "images" / "a.png"))
    lines = ["images/a.png\tgood", "images/a.png\t", "images/a.png\tUPPER", "images/a.png\t" + "ab" * 20]
    (root / "labels.txt").write_text("\n".join(lines) + "\n")
    dataset = FolderDataset(str(root), charset=Charset.default(), time_steps=25)
    assert dataset.texts == ["good"]
    counts = {reason: len(texts) for reason, texts in dataset.rejected.items()}
    assert sorted(counts.values()) == [1, 1, 1], counts


def test_corrupt_images_are_skipped_and_counted(tiny_dataset, tmp_path):
    dataset = open_dataset(broken_copy(tiny_dataset, tmp_path, corrupt=(0, 5)),
                           charset=Charset.default())
    loaded = [dataset.safe_get(i) for i in range(len(dataset))]
    assert sum(sample is None for sample in loaded) == 2 and len(dataset.unreadable) == 2


@pytest.mark.parametrize("mode", ["RGB", "P", "LA", "I;16"])
def test_any_image_mode_or_height_is_converted(tmp_path, mode):
    from crnn_multigpu.datasets import load_image
    path = str(tmp_path / "x.png")
    if mode == "I;16":
        image = Image.fromarray(np.full((61, 90), 60000, np.uint16))
    else:
        image = Image.new("RGB", (90, 61), (250, 250, 250)).convert(mode)
    image.save(path)
    assert load_image(path).shape == (32, 47)


MODEL_CASES = {
    "no loss": (toys.NoLoss, TypeError, "has no `loss`"),
    "unshared variables": (toys.WithTfVariable, ValueError, "new trainable variable"),
    "non-scalar loss": (toys.VectorLoss, ValueError, "must be a scalar"),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_bad_models(case):
    model, error, message = MODEL_CASES[case]
    with pytest.raises(error, match=message):
        MultiGpuModel(model, devices=cpu_devices(2))


def test_more_gpus_than_visible_lists_what_is_visible():
    with pytest.raises(ValueError, match=r"n_gpus=3 but only 0 GPU\(s\) are visible \(none\)"):
        tower_devices(n_gpus=3)
    with pytest.raises(ValueError, match="names no device"):
        tower_devices(devices=[])


def test_shard_arrays_of_different_lengths():
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    with pytest.raises(ValueError, match="disagree on the number of examples"):
        wrapper.split(dict(x=np.ones((4, 3)), y=np.ones((3, 2))))
