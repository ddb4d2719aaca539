"""Checkpoints verify, fall back, never overwrite: damaged files, NaN state, failed and full saves.

Each damage is made by hand on a copy of one tiny run (checkpoints at steps 3 and 6), then the
tools are run as a user runs them: crnn-train and crnn-evaluate in a subprocess, predict and
export in this process. Tests wait for states (a checkpoint exists, a line was logged), never
for durations.
"""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import toy_models as toys
from tiny_runs import copy_of_run, options, train_run
from waiting import HANG_GUARD, wait_until
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.runtime.checkpoints import (CheckpointSaver, NonFiniteStateError, checkpoint_dir,
                                       checkpoint_problem, checkpoint_prefixes, latest_checkpoint)
from crnn_multigpu.cli import export, predict
from crnn_multigpu.tflog import one_line
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.runtime.training import Trainer

pytestmark = pytest.mark.faults
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_SETTINGS = dict(model="tiny", batch_size=8, log_every=1, validate_every=0,
                     checkpoint_every=3)
TINY = options(**TINY_SETTINGS)
DATA = "model.ckpt-%d.data-00000-of-00001"

# A failure as TensorFlow reports it: the cause buried in a page of graph trace.
TF_TRACE = ("Graph execution error:\n\nDetected at node 'save/SaveV2' defined at (most recent "
            "call last):\n    File \"train.py\", line 1, in <module>\nNode: 'save/SaveV2'\n"
            "%s; No space left on device\n\t [[{{node save/SaveV2}}]]\nHint: If you want to see "
            "a list of allocated tensors when OOM happens, add report_tensor_allocations_upon_oom")

# crnn-train with every save after the first failing the way a full disk makes it fail,
# after leaving a partial temporary file behind.
FAILING_SAVES = """
import sys
from crnn_multigpu.compat import tf
from crnn_multigpu.cli import train
real_save, calls = tf.train.Saver.save, []
def save(self, session, path, global_step=None, **kwargs):
    calls.append(global_step)
    if len(calls) == 1:
        return real_save(self, session, path, global_step=global_step, **kwargs)
    partial = "%s-%d.data-00000-of-00001.tempstate42" % (path, global_step)
    open(partial, "w").write("half a checkpoint")
    raise tf.errors.ResourceExhaustedError(None, None, TRACE % partial)
tf.train.Saver.save = save
sys.exit(train.main(sys.argv[1:]))
"""


def env():
    return dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1")


def tool(name, *args):
    """Run ``python -m crnn_multigpu.cli.NAME ARGS``; returns (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli." + name] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env(), timeout=HANG_GUARD)
    return done.returncode, done.stdout, done.stderr


def train_args(dataset, out, steps, *extra):
    return ["--train", dataset, "--out", out, "--steps", str(steps)] + TINY + list(extra)


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def assert_one_error_line(err, *needles):
    """Exactly one ``error:`` line, the last one, holding every needle; no traceback."""
    errors = lines_with(err, "error:")
    assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], err
    assert "Traceback" not in err and "Node:" not in err and "[[" not in err, err
    for needle in needles:
        assert needle in errors[0], err


def step_of(prefix):
    return int(tf.train.load_checkpoint(prefix).get_tensor("global_step"))


def files(run):
    return sorted(os.listdir(checkpoint_dir(run)))


@pytest.fixture(scope="module")
def base_run(tiny_dataset, tmp_path_factory):
    """A tiny run with intact checkpoints at steps 3 and 6."""
    out = train_run(tmp_path_factory.mktemp("base"),
                    train=tiny_dataset, steps=6, **TINY_SETTINGS)
    assert [step_of(p) for p in checkpoint_prefixes(checkpoint_dir(out))] == [6, 3]
    return out


@pytest.fixture
def run(base_run, tmp_path):
    """A fresh copy of the base run to damage."""
    return copy_of_run(base_run, tmp_path)


def truncate_newest_data(run):
    path = os.path.join(checkpoint_dir(run), DATA % 6)
    with open(path, "r+b") as stream:
        stream.truncate(os.path.getsize(path) // 2)
    return "model.ckpt-6 (unreadable"


def delete_newest_index(run):
    os.remove(os.path.join(checkpoint_dir(run), "model.ckpt-6.index"))
    return "model.ckpt-6 (index file missing)"


@pytest.mark.slow
@pytest.mark.parametrize("damage", [truncate_newest_data, delete_newest_index])
def test_damaged_newest_falls_back_and_resume_continues(damage, run, tiny_dataset, tmp_path):
    """evaluate and --resume use step 3 with one warning; the damaged files are moved aside."""
    skipped = damage(run)
    damaged_files = {name: os.path.getsize(os.path.join(checkpoint_dir(run), name))
                     for name in files(run) if name.startswith("model.ckpt-6")}

    code, out, err = tool("evaluate", "--checkpoint", run, "--data", tiny_dataset)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["checkpoint"].endswith("model.ckpt-3")
    warnings = lines_with(err, "skipped damaged checkpoint")
    assert len(warnings) == 1 and warnings[0].startswith("WARNING") and skipped in warnings[0], err

    code, out, err = tool("train", *train_args(tiny_dataset, run, 9, "--resume"))
    assert code == 0, err
    assert "resumed from %s at step 3" % os.path.join(checkpoint_dir(run), "model.ckpt-3") in err
    assert len(lines_with(err, "skipped damaged checkpoint")) == 1, err
    assert len(lines_with(err, "moved the damaged checkpoint")) == 1, err
    # Step 6 was saved again beside the damaged files, which kept their bytes.
    for name, size in damaged_files.items():
        assert os.path.getsize(os.path.join(checkpoint_dir(run), name + ".damaged")) == size
    assert [step_of(p) for p in checkpoint_prefixes(checkpoint_dir(run))][:2] == [9, 6]
    assert checkpoint_problem(os.path.join(checkpoint_dir(run), "model.ckpt-6")) is None
    assert step_of(latest_checkpoint(run)) == 9


def test_predict_and_export_fall_back(run, tiny_dataset, tmp_path, capsys, caplog):
    truncate_newest_data(run)
    images = os.path.join(tiny_dataset, "images")
    image = os.path.join(images, sorted(os.listdir(images))[0])
    assert predict.main(["--checkpoint", run, image]) == 0
    assert [r.levelname for r in caplog.records if "skipped damaged" in r.getMessage()] == \
        ["WARNING"]
    assert export.main(["--checkpoint", run, "--out", str(tmp_path / "export")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith(
        "exported %s ->" % os.path.join(checkpoint_dir(run), "model.ckpt-3"))


def test_lost_or_garbled_state_file_still_finds_checkpoints(run, tiny_dataset):
    state = os.path.join(checkpoint_dir(run), "checkpoint")
    with open(state, "wb") as stream:
        stream.write(b"\xfe\x00 not a checkpoint state {{")
    assert latest_checkpoint(run).endswith("model.ckpt-6")
    os.remove(state)
    assert latest_checkpoint(run).endswith("model.ckpt-6")
    code, _, err = tool("train", *train_args(tiny_dataset, run, 7, "--resume"))
    assert code == 0, err
    assert "at step 6" in err and "skipped" not in err
    assert step_of(latest_checkpoint(run)) == 7


@pytest.mark.slow
def test_all_damaged_is_one_error_line_and_nothing_changes(run, tiny_dataset):
    truncate_newest_data(run)
    os.remove(os.path.join(checkpoint_dir(run), "model.ckpt-3.index"))
    before = {name: os.path.getsize(os.path.join(checkpoint_dir(run), name)) for name in files(run)}
    for args in (train_args(tiny_dataset, run, 9, "--resume"), train_args(tiny_dataset, run, 9)):
        code, _, err = tool("train", *args)
        assert code == 2
        assert_one_error_line(err, "none is intact", "model.ckpt-6 (unreadable",
                              "model.ckpt-3 (index file missing)")
    code, _, err = tool("evaluate", "--checkpoint", run, "--data", tiny_dataset)
    assert code == 2
    assert_one_error_line(err, "none is intact")
    assert {name: os.path.getsize(os.path.join(checkpoint_dir(run), name))
            for name in files(run)} == before


def diverging_copy(run):
    """Rewrite step 6 with conv1's kernel scaled by 1e25: finite, but its activations are not.

    This is how a run resumed with ``--lr 1e35`` ended with a non-finite newest checkpoint:
    batch norm's variance over such activations overflows to Inf while the loss (after the
    normalisation) and, on TF 2, the gradients stay finite, so the step's finite check
    passes and the moving-variance update writes Inf. The next step's loss is NaN (0 * Inf
    where the moving statistics are blended in), that step stops "with the last checkpoint
    intact", and the save on the way out used to write the Inf state as the newest.
    """
    prefix = os.path.join(checkpoint_dir(run), "model.ckpt-6")
    reader = tf.train.load_checkpoint(prefix)
    with tf.Graph().as_default():
        values = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
        values["crnn/conv1/kernel"] = values["crnn/conv1/kernel"] * np.float32(1e25)
        variables = {name: tf.Variable(value, name="v%d" % i)
                     for i, (name, value) in enumerate(sorted(values.items()))}
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            tf.train.Saver(variables).save(session, prefix, write_meta_graph=False,
                                           write_state=False)
    assert checkpoint_problem(prefix) is None  # finite: a checkpoint like any other
    return prefix


def test_nonfinite_state_is_never_saved(run, tiny_dataset):
    newest = diverging_copy(run)
    code, _, err = tool("train", *train_args(tiny_dataset, run, 9, "--resume",
                                             "--checkpoint-every", "1"))
    assert code == 2
    # TF 2 lets the first step through and refuses to save its Inf moving variance;
    # TF 1's gradients are NaN already, so that step stops before changing anything.
    assert_one_error_line(err)
    assert "refusing to save step 7" in err or "step 6: the loss or a gradient is NaN" in err, err
    assert latest_checkpoint(run) == newest
    for prefix in checkpoint_prefixes(checkpoint_dir(run)):
        assert checkpoint_problem(prefix) is None, prefix


class PoisonedStatistics(toys.Linear):
    """A model whose non-trainable statistic becomes Inf from step 3 while its loss stays finite."""

    def __init__(self):
        toys.Linear.__init__(self)
        statistic = tf.get_variable("statistic", initializer=0.0, trainable=False)
        step = tf.train.get_global_step()
        poison = tf.where(tf.greater_equal(step, 3), np.float32(np.inf), np.float32(0.0))
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(statistic, poison))


def test_trainer_refuses_to_save_nonfinite_variables(tmp_path, make_session):
    wrapper = MultiGpuModel(PoisonedStatistics, devices=cpu_devices(1))
    trainer = Trainer(wrapper, lambda step: toys.make_batch(4, seed=step), str(tmp_path),
                      checkpoint_every=2, log_every=0)
    with pytest.raises(NonFiniteStateError, match=r"refusing to save step 4: 1 variable\(s\) hold "
                                                  r"NaN or Inf \(statistic\); the last good "
                                                  r"checkpoint .*model.ckpt-2 is kept"):
        trainer.train(make_session(), steps=10)
    assert [step_of(p) for p in checkpoint_prefixes(checkpoint_dir(str(tmp_path)))] == [2]


def test_failed_save_is_one_line_and_a_nonzero_exit(tiny_dataset, tmp_path):
    out = str(tmp_path / "run")
    done = subprocess.run([sys.executable, "-c", "TRACE = %r\n%s" % (TF_TRACE, FAILING_SAVES)] +
                          train_args(tiny_dataset, out, 9), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env=env(),
                          timeout=HANG_GUARD)
    err = done.stderr
    assert done.returncode == 2, err
    # The failed save at step 6 is one line and training goes on; the one at the end is the error.
    failed = lines_with(err, "could not save")
    assert len(failed) == 2 and failed[0].startswith("ERROR") and "step 6" in failed[0], err
    assert_one_error_line(err, "could not save the checkpoint of step 9", "No space left on device",
                          "the last good checkpoint %s is kept"
                          % os.path.join(checkpoint_dir(out), "model.ckpt-3"))
    assert "tempstate" not in err and "step 9/9" in err
    assert files(out) == ["checkpoint", DATA % 3, "model.ckpt-3.index"]  # no partial files
    assert step_of(latest_checkpoint(out)) == 3


def test_one_line_of_tensorflow_errors():
    path = "/run/checkpoints/model.ckpt-6.data-00000-of-00001.tempstate7"
    tf2 = tf.errors.ResourceExhaustedError(None, None, TF_TRACE % path)
    tf1 = tf.errors.ResourceExhaustedError(None, None, "%s; No space left on device\n\t [[node "
                                           "save/SaveV2 (defined at x.py:3) ]]\n\nOriginal stack "
                                           "trace for 'save/SaveV2':\n  File \"x.py\"" % path)
    assert one_line(tf2) == one_line(tf1) == "No space left on device"
    assert one_line(IndexError("Read less bytes than requested")) == \
        "Read less bytes than requested"
    assert one_line(ValueError("")) == "ValueError"


def test_saver_keeps_the_same_state_and_moves_damaged_files_aside(tmp_path, make_session):
    tf.get_variable("v", initializer=1.0)
    saver = CheckpointSaver(str(tmp_path))
    session = make_session()
    session.run(tf.global_variables_initializer())
    directory = checkpoint_dir(str(tmp_path))
    first = saver.save(session, 1)
    written = os.path.getmtime(first + ".index")
    assert saver.save(session, 1) == first and os.path.getmtime(first + ".index") == written
    with open(os.path.join(directory, "model.ckpt-2.index"), "w") as stream:
        stream.write("a damaged leftover of another run")
    assert saver.save(session, 2)
    assert open(os.path.join(directory, "model.ckpt-2.index.damaged")).read() == \
        "a damaged leftover of another run"
    assert checkpoint_problem(os.path.join(directory, "model.ckpt-2")) is None
    other = CheckpointSaver(str(tmp_path))  # another run's saver meets an intact step 2
    assert other.save(session, 2) is None
    assert checkpoint_problem(os.path.join(directory, "model.ckpt-2")) is None


def fill(directory):
    """Write zeros into ``directory`` until its file system is full."""
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as stream:
        try:
            while stream.write(b"\0" * 65536):
                pass
        except OSError:  # ENOSPC: full
            pass


def log_has(path, needle):
    return any(needle in line for line in open(path))


def test_full_disk(tiny_dataset, tmp_path):
    """A real full disk: a small tmpfs filled up after the first checkpoint (root only)."""
    mount = str(tmp_path / "disk")
    os.makedirs(mount)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mount],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: %s" % mounted.stdout.strip())
    out, log_path = os.path.join(mount, "run"), str(tmp_path / "log")
    process = subprocess.Popen([sys.executable, "-m", "crnn_multigpu.cli.train"] +
                               train_args(tiny_dataset, out, 100000),
                               stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=env())
    try:
        wait_until(lambda: os.path.isfile(os.path.join(checkpoint_dir(out), "checkpoint")),
                   process, log_path, "a first checkpoint")
        fill(mount)
        wait_until(lambda: log_has(log_path, "could not save"), process, log_path,
                   "a failed save")
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=HANG_GUARD)
        err = open(log_path).read()
        assert code not in (0, None), err
        assert_one_error_line(err, "could not save the checkpoint", "No space left on device",
                              "the last good checkpoint")
        assert all(line.startswith("ERROR") for line in lines_with(err, "could not save")[:-1])
        kept = err.strip().splitlines()[-1].split("the last good checkpoint ")[1].split()[0]
        assert latest_checkpoint(out) == kept and checkpoint_problem(kept) is None
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        subprocess.run(["umount", mount])
