"""Images built to hurt: a decompression bomb and float pixels that are NaN. Each is refused
on its own, in one line naming the file, and never changes what its neighbours read."""
import json
import os
import shutil
import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from assertions import run_captured
from crnn_multigpu.cli import evaluate, predict
from crnn_multigpu.datasets import load_image, open_dataset
from crnn_multigpu.datasets.images import MAX_PIXELS_ENV


def bomb_png(path, width=20000, height=20000):
    """A PNG of a few hundred bytes whose header declares ``width x height`` pixels."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + \
            struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    rows = zlib.compress(b"\x00" * (1 + (width + 7) // 8) * 16)  # a few rows; the rest missing
    with open(path, "wb") as stream:
        stream.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                                                         1, 0, 0, 0, 0)) +
                     chunk(b"IDAT", rows) + chunk(b"IEND", b""))
    return path


def nan_tiff(path, like):
    """A float (mode F) copy of the image ``like`` with one NaN pixel."""
    pixels = np.asarray(Image.open(like).convert("L"), dtype=np.float32)
    pixels[pixels.shape[0] // 2, pixels.shape[1] // 2] = np.nan
    Image.fromarray(pixels, mode="F").save(path)
    return path


@pytest.fixture
def hostile(tiny_dataset, tmp_path):
    """The tiny dataset's first images, a bomb and a NaN image among them."""
    images = sorted(os.listdir(os.path.join(tiny_dataset, "images")))[:4]
    good = [os.path.join(tiny_dataset, "images", name) for name in images]
    return dict(good=good, bomb=bomb_png(str(tmp_path / "bomb.png")),
                nan=nan_tiff(str(tmp_path / "nan.tif"), good[0]))


def test_the_loader_names_the_file_and_the_reason(hostile):
    with pytest.raises(ValueError, match="cannot read image .*bomb.png: .*%s" % MAX_PIXELS_ENV):
        load_image(hostile["bomb"])
    with pytest.raises(ValueError, match=r"cannot read image .*nan.tif: 1 of its pixels are NaN"):
        load_image(hostile["nan"])
    # A float image with finite pixels is still read.
    finite = hostile["nan"].replace("nan.tif", "finite.tif")
    Image.fromarray(np.asarray(Image.open(hostile["good"][0]).convert("L"), np.float32),
                    mode="F").save(finite)
    np.testing.assert_allclose(load_image(finite), load_image(hostile["good"][0]), atol=1e-6)


def test_predict_skips_each_bad_image_and_reads_its_neighbours_as_alone(hostile, capsys):
    alone = run_captured(predict.main, hostile["good"], capsys)[1].splitlines()
    mixed = [hostile["good"][0], hostile["bomb"], hostile["good"][1], hostile["nan"]] + \
        hostile["good"][2:]
    code, out, err = run_captured(predict.main, mixed, capsys)
    assert code == 1 and out.splitlines() == alone   # 1: something was skipped
    skipped = [line for line in err.splitlines() if line.startswith("skipped: ")]
    assert len(skipped) == 2 and "bomb.png" in skipped[0] and "nan.tif" in skipped[1], err


def test_a_bomb_page_is_one_skipped_line_before_it_is_decoded(hostile, capsys):
    code, out, err = run_captured(predict.main, ["--page", hostile["bomb"]], capsys)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("INFO ")]
    assert code == 1 and out == "" and len(lines) == 1, err
    assert lines[0].startswith("skipped: %s: it has 400.0 M pixels, more than the 89.5 M"
                               % hostile["bomb"]) and MAX_PIXELS_ENV in lines[0]
    assert "DecompressionBomb" not in err


def test_evaluate_counts_bad_images_as_unreadable(tiny_dataset, hostile, tmp_path, capsys):
    root = str(tmp_path / "data")
    shutil.copytree(tiny_dataset, root)
    shutil.copy(hostile["bomb"], os.path.join(root, "images", "bomb.png"))
    shutil.copy(hostile["nan"], os.path.join(root, "images", "nan.tif"))
    with open(os.path.join(root, "labels.txt"), "a") as labels:
        labels.write("images/bomb.png\tboom\nimages/nan.tif\tnan\n")
    code, out, err = run_captured(evaluate.main, ["--data", root], capsys)
    figures = json.loads(out.strip().splitlines()[-1])
    # Issue 35: every label is scored (the two as wrong, empty readings), and both are named.
    assert code == 0 and figures["unreadable"] == 2 and figures["n"] == len(open_dataset(root))
    assert "note: 2 of the %d images of %s could not be read and count as wrong, empty " \
           "readings: %s, %s (--verbose says why)" % (
               figures["n"], root, os.path.join(root, "images", "bomb.png"),
               os.path.join(root, "images", "nan.tif")) in err, err
    # Bucketing by width reads only headers: the bomb gets a stand-in width, no error.
    assert len(open_dataset(root).width_keys(range(len(open_dataset(root))))) == figures["n"]


@pytest.mark.parametrize("mode", [[], ["--model", "words"]])
def test_a_blank_image_reads_as_nothing(hostile, tmp_path, capsys, mode):
    blank = str(tmp_path / "blank.png")
    Image.new("L", (200, 40), 231).save(blank)
    code, out, _ = run_captured(predict.main, mode + ["--with-prob", blank, hostile["good"][0]],
                                capsys)
    rows = [line.split("\t") for line in out.splitlines()]
    assert code == 0 and rows[0] == [blank, "", "0.0000"], rows
    assert rows[1][1], "an inked image beside it is still read"
