"""Mixtures of datasets (datasets/mixture.py, scripts/join_sets.py): every sample of every set
taken its number of times, in order, each from its own set; bad listings named before training."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets import (MixedDataset, dataset_format, epoch_order, open_dataset,
                                    write_labels, write_mixture)
from crnn_multigpu.datasets.charset import Charset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def folder_set(root, texts, width=40):
    """A folder dataset of ``texts``, image ``i`` ``width + i`` pixels wide."""
    os.makedirs(os.path.join(root, "images"))
    entries = []
    for number, text in enumerate(texts):
        name = "images/%d.png" % number
        pixels = np.full((32, width + number), 255, np.uint8)
        pixels[10:20, 5:15] = 0
        Image.fromarray(pixels).save(os.path.join(root, name))
        entries.append((name, text))
    write_labels(root, entries)
    return root


@pytest.fixture
def two_sets(tmp_path):
    synthetic = folder_set(str(tmp_path / "runs" / "synthetic"), ["s0", "s1", "s2", "s3"])
    real = folder_set(str(tmp_path / "runs" / "real"), ["r0", "r1"], width=100)
    return synthetic, real


def test_every_sample_taken_its_copies_in_order(two_sets, tmp_path):
    synthetic, real = two_sets
    mixed_path = str(tmp_path / "runs" / "mixed")
    write_mixture(mixed_path, [(synthetic, 1), (real, 3)])
    assert dataset_format(mixed_path) == "mixture"
    mixed = open_dataset(mixed_path)
    assert isinstance(mixed, MixedDataset) and len(mixed) == 4 + 2 * 3
    assert [mixed[i][1] for i in range(len(mixed))] == \
        ["s0", "s1", "s2", "s3", "r0", "r1", "r0", "r1", "r0", "r1"]
    assert mixed.safe_get(5)[0].shape == (32, 101)  # the sample's own image, from its set
    assert mixed.width_keys([0, 9, 3]) == [40.0, 101.0, 43.0]
    assert mixed.describe(8).endswith(os.path.join("real", "images", "0.png"))
    with pytest.raises(IndexError):
        mixed.safe_get(10)
    # A shuffled epoch visits every sample of the mixture once: the real set three times.
    order = epoch_order(len(mixed), shuffle=True, seed=1, epoch=0)
    assert sorted(mixed[i][1] for i in order).count("r1") == 3


def test_listing_moves_with_its_folder_and_sets_elsewhere_are_absolute(two_sets, tmp_path):
    synthetic, real = two_sets
    mixed_path = str(tmp_path / "runs" / "mixed")
    write_mixture(mixed_path, [(synthetic, 2), (real, 1)])
    with open(os.path.join(mixed_path, "sets.json")) as handle:
        paths = [entry["path"] for entry in json.load(handle)["sets"]]
    assert paths == [os.path.join("..", "synthetic"), os.path.join("..", "real")]
    os.rename(str(tmp_path / "runs"), str(tmp_path / "moved"))
    assert len(open_dataset(str(tmp_path / "moved" / "mixed"))) == 10
    outside = str(tmp_path / "elsewhere" / "mixed")
    write_mixture(outside, [(str(tmp_path / "moved" / "real"), 1)])
    with open(os.path.join(outside, "sets.json")) as handle:
        assert os.path.isabs(json.load(handle)["sets"][0]["path"])


def test_charset_filter_applies_to_each_set(two_sets, tmp_path):
    synthetic, real = two_sets
    mixed_path = str(tmp_path / "runs" / "mixed")
    write_mixture(mixed_path, [(synthetic, 1), (real, 2)])
    mixed = open_dataset(mixed_path, charset=Charset("r01"))
    assert [mixed[i][1] for i in range(len(mixed))] == ["r0", "r1", "r0", "r1"]
    assert sum(len(texts) for texts in mixed.rejected.values()) == 4


def test_bad_sets_and_listings_are_named(two_sets, tmp_path):
    synthetic, _ = two_sets
    with pytest.raises(FileNotFoundError, match="nowhere"):
        write_mixture(str(tmp_path / "m1"), [(str(tmp_path / "nowhere"), 1)])
    with pytest.raises(ValueError, match="copies must be"):
        write_mixture(str(tmp_path / "m2"), [(synthetic, 0)])
    assert not os.path.exists(str(tmp_path / "m1")) and not os.path.exists(str(tmp_path / "m2"))
    broken = tmp_path / "m3"
    broken.mkdir()
    (broken / "sets.json").write_text('{"sets": [{"path": "../x"}]}')
    with pytest.raises(ValueError, match="m3.*sets.json is not a mixture listing"):
        open_dataset(str(broken))


def test_join_sets_writes_a_mixture_crnn_train_reads(two_sets, tmp_path):
    synthetic, real = two_sets
    out = str(tmp_path / "runs" / "joined")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "join_sets.py"),
                           "--out", out, synthetic, real + "x3"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert done.returncode == 0, done.stderr
    assert "real (folder) x 3" in done.stdout
    assert len(open_dataset(out)) == 10
    again = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "join_sets.py"),
                            "--out", out, synthetic], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    assert again.returncode == 2 and again.stderr.strip() == \
        "error: --out %s exists; choose a new folder" % out
    (tmp_path / "empty").mkdir()
    not_a_set = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "join_sets.py"),
                                "--out", str(tmp_path / "new"), str(tmp_path / "empty")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True)
    assert not_a_set.returncode == 2 and len(not_a_set.stderr.splitlines()) == 1
    assert not_a_set.stderr.startswith("error: %s is not a dataset" % (tmp_path / "empty"))
    assert not (tmp_path / "new").exists()
