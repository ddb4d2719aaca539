"""Tiny training runs that a test module trains once, and fresh copies for each test to change or
damage (training is the slow part; copying a run folder is not). They train through the library
(``ocr.TrainingRun``); ``options`` writes the same settings as crnn-train's options for the
tests that then run a tool."""
import shutil

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.training import TrainingRun
from crnn_multigpu.ocr.training_settings import TrainingSettings, flag


def train_run(folder, **settings):
    """Train ``TrainingSettings(**settings)`` into ``folder``/run in a graph of its own, to its
    end; the run folder."""
    out = str(folder / "run")
    with tf.Graph().as_default():
        result = TrainingRun(TrainingSettings(out=out, **settings)).run()
    assert result.stopped_by is None
    return out


def options(**settings):
    """crnn-train's command-line options for ``settings`` (true flags alone, false ones left
    out)."""
    argv = []
    for name, value in settings.items():
        if value is True:
            argv.append(flag(name))
        elif value is not False:
            argv += [flag(name), str(value)]
    return argv


def copy_of_run(run_dir, tmp_path, name="run"):
    """A fresh copy of the run folder ``run_dir`` at ``tmp_path``/``name``."""
    copy = str(tmp_path / name)
    shutil.copytree(run_dir, copy)
    return copy
