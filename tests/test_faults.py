"""Faults lose nothing: SIGKILL at random moments, SIGTERM, failed saves, NaN losses, determinism.

Run alone with ``pytest -m faults``; part of ``make test`` like everything else.
"""
import io
import os
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import toy_models as toys
from waiting import HANG_GUARD, first_checkpoint, wait_until
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.runtime.checkpoints import CheckpointSaver, latest_checkpoint
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.runtime.training import NonFiniteLossError, Trainer

pytestmark = pytest.mark.faults
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


CHECKPOINT_EVERY = 3
# Runs that are killed are asked for more steps than they can reach before the test kills
# them, on any CPU: the test kills at states it observes (a step was logged, a checkpoint
# exists), never after a duration, so the speed of the machine does not matter.
ENDLESS = 100000


def train_command(dataset, out, steps, *extra):
    return [sys.executable, "-m", "crnn_multigpu.cli.train", "--train", dataset, "--out", out,
            "--model", "tiny", "--batch-size", "8", "--steps", str(steps), "--log-every", "1",
            "--checkpoint-every", str(CHECKPOINT_EVERY), "--validate-every", "0"] + list(extra)


def start(command, log_path):
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1")
    return subprocess.Popen(command, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=env)


def wait_for_step(log_path, process, step=1):
    """Wait until the run has logged global step ``step`` or a later one."""
    wait_until(lambda: last_logged_step(log_path) >= step, process, log_path,
               "a logged step %d" % step)


def readable_step(run_dir):
    """Global step of the newest checkpoint (0: none yet), after reading every tensor in it."""
    if latest_checkpoint(run_dir) is None:
        return 0
    reader = tf.train.load_checkpoint(latest_checkpoint(run_dir))
    for name in reader.get_variable_to_shape_map():
        assert np.all(np.isfinite(reader.get_tensor(name))), name
    return int(reader.get_tensor("global_step"))


def last_logged_step(log_path):
    steps = [int(line.split("] step ")[1].split("/")[0]) for line in open(log_path)
             if "] step " in line and "/" in line.split("] step ")[1]]
    return steps[-1] if steps else 0


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume(tiny_dataset, tmp_path):
    """SIGKILL at random states of runs that cannot finish first; resuming loses nothing.

    Each attempt is killed once it has logged a random step a few steps past the checkpoint
    it resumed from: in the middle of a step, just before, during or after a save.
    """
    # The steps to kill at are seeded; the moment within a step still varies with the machine.
    out, rng = str(tmp_path / "run"), random.Random(54)
    previous = 0
    for attempt in range(3):
        log_path = str(tmp_path / ("attempt%d.log" % attempt))
        extra = ["--resume"] if latest_checkpoint(out) else []
        # The first attempt must leave a checkpoint, so the resume path always runs.
        target = previous + rng.randint(1 if attempt else CHECKPOINT_EVERY,
                                        2 * CHECKPOINT_EVERY + 1)
        process = start(train_command(tiny_dataset, out, ENDLESS, *extra), log_path)
        try:
            wait_for_step(log_path, process, target)
            if attempt == 0:
                wait_until(lambda: first_checkpoint(out) is not None, process, log_path,
                           "checkpoint")
        finally:
            process.kill()
            process.wait()
        logged = last_logged_step(log_path)
        step = readable_step(out)
        assert process.returncode == -signal.SIGKILL, "the run ended before it was killed"
        assert attempt > 0 or step > 0, "no checkpoint after the first attempt"
        assert step >= previous, "a checkpoint went backwards"
        assert step >= logged - CHECKPOINT_EVERY - 1, \
            "lost more than one checkpoint interval (%d vs %d)" % (step, logged)
        previous = step
    # Finish a slice of the same schedule: --stop-at saves and exits at a given step.
    stop_at = previous + 2 * CHECKPOINT_EVERY
    log_path = str(tmp_path / "final.log")
    process = start(train_command(tiny_dataset, out, ENDLESS, "--resume", "--stop-at",
                                  str(stop_at)), log_path)
    assert process.wait(timeout=HANG_GUARD) == 0, open(log_path).read()
    assert "resumed from" in open(log_path).read()
    assert readable_step(out) == stop_at


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_saves_and_says_how_to_resume(tiny_dataset, tmp_path, sig):
    out, log_path = str(tmp_path / "run"), str(tmp_path / "log")
    process = start(train_command(tiny_dataset, out, ENDLESS), log_path)
    try:
        wait_for_step(log_path, process)
        process.send_signal(sig)
        assert process.wait(timeout=HANG_GUARD) == 128 + sig  # 130 / 143, after saving
    finally:
        if process.poll() is None:
            process.kill()
    text = open(log_path).read()
    assert "%s received at step" % sig.name in text and "--resume" in text
    stopped_at = int(text.split("received at step ")[1].split(":")[0])
    assert readable_step(out) == stopped_at


# A model that stops where the test wants the signal to land, until the file $BLOCK_RELEASE
# exists: in its __init__ (crnn-train is setting up) or in every training step.
BLOCKING_MODEL = """
import os
import sys
import threading
import time

import numpy as np

from crnn_multigpu.compat import tf
from tests.models_for_tools import SmallConvCTC


def _block(where):
    sys.stderr.write("test model: blocked in %s\\n" % where)
    sys.stderr.flush()
    while not os.path.exists(os.environ["BLOCK_RELEASE"]):  # a state, polled
        time.sleep(0.01)
    return np.float32(0)


class Blocking(SmallConvCTC):
    def __init__(self, **kwargs):
        if os.environ["BLOCK_WHERE"] == "__init__":
            _block("__init__")
        SmallConvCTC.__init__(self, **kwargs)
        if os.environ["BLOCK_WHERE"] == "step":
            gate = tf.py_func(lambda: _block("a step"), [], tf.float32, stateful=True)
            self.loss = self.loss + tf.stop_gradient(gate)
"""


@pytest.mark.parametrize("where, situation", [("__init__", "while setting up"),
                                              ("step", "at step 0, before it completed")])
def test_a_stop_signal_before_the_first_step_completes_leaves_at_once(where, situation,
                                                                     tiny_dataset, tmp_path):
    """Issue 35: with --towers 99 the first step takes a minute, and SIGTERM, acknowledged at
    once, was acted on after it; during set-up it killed the process without a word. Until
    the first step completes there is nothing to save, so the process leaves at once: the
    model here blocks until released, so waiting for the step shows as the acknowledgement
    ("stopping after the step in progress"), not as a hang."""
    (tmp_path / "blocking_model_35.py").write_text(BLOCKING_MODEL)
    out, log_path, release = str(tmp_path / "run"), str(tmp_path / "log"), tmp_path / "release"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path)]),
               PYTHONUNBUFFERED="1", BLOCK_WHERE=where, BLOCK_RELEASE=str(release))
    process = subprocess.Popen(
        [sys.executable, "-m", "crnn_multigpu.cli.train", "--train", tiny_dataset, "--out", out,
         "--model-class", "blocking_model_35:Blocking", "--width", "0", "--towers", "2",
         "--batch-size", "8", "--steps", str(ENDLESS), "--log-every", "1"],
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT, env=env)
    try:
        wait_until(lambda: "test model: blocked in" in open(log_path).read(), process, log_path,
                   "the model blocked")
        process.send_signal(signal.SIGTERM)
        wait_until(lambda: process.poll() is not None or
                   "stopping after the step in progress" in open(log_path).read(),
                   process, log_path, "the exit or its acknowledgement")
    finally:
        release.write_text("")
        if process.poll() is None:
            process.kill()
        process.wait()
    lines = open(log_path).read().splitlines()
    assert (process.returncode, lines[-1]) == (128 + signal.SIGTERM, (
        "SIGTERM received %s: nothing to save; run the same command again" % situation)), lines
    assert not [line for line in lines if "] step " in line]
    assert latest_checkpoint(out) is None


def test_failed_save_keeps_the_previous_checkpoint(tmp_path, make_session):
    variable = tf.get_variable("v", initializer=1.0)
    saver = CheckpointSaver(str(tmp_path))
    session = make_session()
    session.run(tf.global_variables_initializer())
    assert saver.save(session, 1)
    checkpoint_dir = saver.directory
    os.rename(checkpoint_dir, checkpoint_dir + ".moved")
    open(checkpoint_dir, "w").close()  # the folder is now a file: every write fails
    assert saver.save(session, 2) is None
    os.remove(checkpoint_dir)
    os.rename(checkpoint_dir + ".moved", checkpoint_dir)
    assert latest_checkpoint(str(tmp_path)).endswith("model.ckpt-1")
    assert session.run(variable) == 1.0


def nan_at(step_with_nan):
    def batch_for_step(step):
        batch = toys.make_batch(4, seed=step)
        if step == step_with_nan:
            batch["y"][0, 0] = np.nan
        return batch
    return batch_for_step


def test_nonfinite_stops_with_step_and_keeps_checkpoint_clean(tmp_path, make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    trainer = Trainer(wrapper, nan_at(3), str(tmp_path), checkpoint_every=2, log_every=0)
    with pytest.raises(NonFiniteLossError, match="step 3"):
        trainer.train(make_session(), steps=10)
    assert readable_step(str(tmp_path)) == 3


def test_nonfinite_skip_policy_skips_the_batch(tmp_path, make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    trainer = Trainer(wrapper, nan_at(3), str(tmp_path), log_every=0, on_nonfinite="skip")
    assert trainer.train(make_session(), steps=8) == 8
    assert trainer.skipped_steps == [3] and readable_step(str(tmp_path)) == 8


@pytest.mark.slow
def test_same_seed_same_losses(tiny_dataset, tmp_path):
    from crnn_multigpu.cli import train
    logs = []
    for run in ("a", "b"):
        graph = tf.Graph()
        with graph.as_default():
            assert train.main(["--train", tiny_dataset, "--out", str(tmp_path / run), "--model",
                               "tiny", "--batch-size", "8", "--steps", "8", "--towers", "2",
                               "--validate-every", "0", "--log-every", "1"]) == 0
        logs.append(variables(str(tmp_path / run)))
    for name in logs[0]:
        np.testing.assert_array_equal(logs[0][name], logs[1][name], err_msg=name)


def variables(run_dir):
    reader = tf.train.load_checkpoint(latest_checkpoint(run_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def input_waits(text):
    return [float(line.split("input wait ")[1].split()[0]) for line in text.splitlines()
            if "input wait" in line]


class StepClock(object):
    """The clock of the trainer and its fed input, moved only by the test: :data:`STEP_SECONDS`
    by every training step, and by a source while the step waits for its batch. A wait is then
    as long as the test says, on a busy machine as on an idle one. ``time`` is the trainer's
    clock; ``input_clock`` the fed input's, whose readings are counted."""

    def __init__(self):
        self.now, self.readings = 0.0, 0
        self.changed = threading.Condition()
        clock = self

        class InputClock(object):
            @staticmethod
            def time():
                with clock.changed:
                    clock.readings += 1
                    clock.changed.notify_all()
                    return clock.now
        self.input_clock = InputClock

    def time(self):
        return self.now

    def advance(self, seconds):
        with self.changed:
            self.now += seconds

    def wait_for_reading(self, count):
        """Block until the clock has been read ``count`` times."""
        with self.changed:
            self.changed.wait_for(lambda: self.readings >= count, timeout=HANG_GUARD)
            assert self.readings >= count, "the input never asked for its batch"


STEP_SECONDS, SLOW_BATCH_SECONDS = 1.0, 3.0


def test_progress_reports_the_share_of_time_spent_waiting_for_batches(tmp_path, make_session,
                                                                      monkeypatch):
    """A data path slower than the step shows up as input wait; a ready one does not."""
    from crnn_multigpu.runtime import training
    from crnn_multigpu.wrapper import feeding
    clock = StepClock()
    monkeypatch.setattr(training, "time", clock)
    monkeypatch.setattr(feeding, "time", clock.input_clock)
    run_step = Trainer._run_step

    def timed_step(self, *args):
        clock.advance(STEP_SECONDS)
        return run_step(self, *args)
    monkeypatch.setattr(Trainer, "_run_step", timed_step)
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    made = toys.make_batch(4, seed=0)
    ready, slow = io.StringIO(), io.StringIO()

    def slow_batch(step):
        # The fed input reads the clock twice around each batch it waits for: batch ``step``
        # is made once its first reading is taken, so the time it takes lies inside the wait.
        clock.wait_for_reading(done_before + 2 * step + 1)
        clock.advance(SLOW_BATCH_SECONDS)
        return made

    Trainer(wrapper, lambda step: made, str(tmp_path / "ready"), checkpoint_every=0,
            log_every=10, stream=ready).train(make_session(), steps=20)
    done_before = clock.readings  # the input's readings in the ready run
    Trainer(wrapper, slow_batch, str(tmp_path / "slow"), checkpoint_every=0, log_every=10,
            stream=slow).train(make_session(), steps=20)
    # A prefetched batch that is ready costs no wait; one made while the step waits costs all
    # of its time: 3 s of every 3 s + 1 s step.
    assert input_waits(ready.getvalue()) == [0, 0], ready.getvalue()
    assert input_waits(slow.getvalue()) == [75, 75], slow.getvalue()
