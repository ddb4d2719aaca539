"""Tiny training runs that a test module trains once, and fresh copies for each test to change or
damage (training is the slow part; copying a run folder is not)."""
import shutil

from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf


def train_run(folder, argv):
    """Train ``crnn-train argv`` into ``folder``/run in a graph of its own; the run folder."""
    out = str(folder / "run")
    with tf.Graph().as_default():
        assert train.main(["--out", out] + list(argv)) == 0
    return out


def copy_of_run(run_dir, tmp_path, name="run"):
    """A fresh copy of the run folder ``run_dir`` at ``tmp_path``/``name``."""
    copy = str(tmp_path / name)
    shutil.copytree(run_dir, copy)
    return copy
