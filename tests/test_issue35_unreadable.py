"""Unreadable images are skipped and named by one piece of code (issue 35): training by step,
training by epoch and evaluation (crnn-evaluate, crnn-train's validation) name the same truncated
PNG, decompression bomb and bad LMDB record the same way."""
import logging
import os
import shutil

import pytest

from crnn_multigpu.datasets import BatchLoader, open_dataset, write_lmdb
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr.text_reader import evaluate_dataset
from test_hostile_images import bomb_png

CHARSET = Charset.default()
DAMAGED = (2, 5)  # a truncated PNG, then a decompression bomb


def png_bytes(path):
    with open(path, "rb") as stream:
        return stream.read()


@pytest.fixture
def damaged(tiny_dataset, tmp_path):
    """The tiny set's first 8 samples as a folder and as an LMDB, each with the same two
    images damaged: a truncated PNG and a decompression bomb (an LMDB record of garbage too)."""
    pytest.importorskip("lmdb")
    source = open_dataset(tiny_dataset)
    folder = str(tmp_path / "folder")
    os.makedirs(os.path.join(folder, "images"))
    with open(os.path.join(folder, "labels.txt"), "w") as labels:
        for index in range(8):
            name = "images/%d.png" % index
            shutil.copy(source.image_path(index), os.path.join(folder, name))
            labels.write("%s\t%s\n" % (name, source.texts[index]))
    truncated = os.path.join(folder, "images", "%d.png" % DAMAGED[0])
    with open(truncated, "r+b") as stream:
        stream.truncate(os.path.getsize(truncated) // 2)
    bomb_png(os.path.join(folder, "images", "%d.png" % DAMAGED[1]))
    records = [(png_bytes(os.path.join(folder, "images", "%d.png" % index)), source.texts[index])
               for index in range(8)]
    records[6] = (b"not an image", records[6][1])
    write_lmdb(str(tmp_path / "lmdb"), records)
    return {"folder": (folder, ["%s/images/%d.png" % (folder, index) for index in DAMAGED]),
            "lmdb": (str(tmp_path / "lmdb"), ["image-%09d in %s" % (index + 1, tmp_path / "lmdb")
                                              for index in DAMAGED + (6,)])}


def warned(caplog):
    """The images named in 'skipping unreadable image NAME (N so far)' warnings."""
    return [record.getMessage()[len("skipping unreadable image "):].rsplit(" (", 1)[0]
            for record in caplog.records if record.levelno == logging.WARNING and
            record.getMessage().startswith("skipping unreadable image ")]


@pytest.mark.parametrize("kind", ["folder", "lmdb"])
def test_training_and_evaluation_name_the_same_images(kind, damaged, caplog):
    path, names = damaged[kind]
    caplog.set_level(logging.WARNING)
    evaluated = []
    figures, _ = evaluate_dataset(open_dataset(path), lambda arrays: ["x"] * len(arrays),
                                  unreadable=evaluated)
    assert figures["n"] == 8 and figures["unreadable"] == len(names) and evaluated == names
    assert warned(caplog) == []  # evaluation names them at its end, in one note

    by_step = StepBatches(open_dataset(path), CHARSET, 8, seed=3)
    assert len(by_step(0).texts) == 8 - len(names) and len(by_step(1).texts) == 8 - len(names)
    assert sorted(warned(caplog)) == sorted(names) and len(by_step.skipped) == len(names)

    caplog.clear()
    by_epoch = BatchLoader(open_dataset(path), CHARSET, 3, shuffle=False, prefetch=0)
    for epoch in range(2):  # met again in the second epoch: still named and counted once
        assert sum(len(batch.texts) for batch in by_epoch.epoch(epoch)) == 8 - len(names)
    assert warned(caplog) == names and by_epoch.skipped == sorted(
        DAMAGED + ((6,) if kind == "lmdb" else ()))


def test_only_the_first_few_are_named_as_they_are_met(tiny_dataset, tmp_path, caplog):
    from crnn_multigpu.datasets.unreadable import WARN_FIRST, UnreadableImages
    root = str(tmp_path / "gone")
    shutil.copytree(tiny_dataset, root)
    shutil.rmtree(os.path.join(root, "images"))
    dataset = open_dataset(root)
    caplog.set_level(logging.WARNING)
    reader = UnreadableImages(dataset)
    assert all(reader.read(index) is None for index in range(len(dataset)))
    assert len(reader) == len(dataset) and reader.names()[0] == dataset.describe(0)
    assert warned(caplog) == [dataset.describe(index) for index in range(WARN_FIRST)]
    assert caplog.records[-1].getMessage().endswith("(%d so far)" % WARN_FIRST)
