"""scripts/photo_words.py: the photographed-word check set is cut as listed."""
import os
import subprocess
import sys

from PIL import Image

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets import open_dataset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "photo_words.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import photo_words  # noqa: E402


def test_the_shipped_box_list_is_well_formed():
    rows = photo_words.read_boxes(photo_words.DEFAULT_BOXES)
    assert len(rows) >= 30 and len(set(photo for photo, _, _ in rows)) >= 8
    charset = Charset.default()
    for photo, (x0, y0, x1, y1), label in rows:
        assert photo.startswith("scenetext") and 0 <= x0 < x1 and 0 <= y0 < y1, (photo, label)
        assert label and all(c in charset for c in label), label


def test_boxes_are_cut_into_a_folder_dataset(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.new("RGB", (200, 100), "white").save(str(photos / "scenetext01.jpg"))
    boxes = tmp_path / "boxes.tsv"
    boxes.write_text("# a comment\nscenetext01.jpg\t10\t20\t110\t60\tstop\n"
                     "scenetext01.jpg\t0\t0\t50\t25\tgo\n")
    out = tmp_path / "set"
    done = subprocess.run([sys.executable, SCRIPT, "--out", str(out), "--boxes", str(boxes),
                           "--photos", str(photos)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    assert done.returncode == 0, done.stderr
    dataset = open_dataset(str(out))
    assert len(dataset) == 2
    sizes = [Image.open(str(out / line.split("\t")[0])).size
             for line in (out / "labels.txt").read_text().splitlines()]
    assert sizes == [(100, 40), (50, 25)]
    assert [dataset[i][1] for i in range(2)] == ["stop", "go"]
