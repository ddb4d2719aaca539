"""Issue 35: a run folder is held by one crnn-train at a time.

crnn-train takes an exclusive ``flock`` on ``OUT/.crnn-train.lock`` before it reads its data
and holds it for the whole run; a second crnn-train on the same --out is refused at once in
one line naming the folder and the holder. The kernel releases the lock of a process that
dies, so a killed trainer leaves none behind. Before, both started, and both failed at the
final save, one losing its checkpoint. Tests wait for states, never for durations.
"""
import os
import signal
import subprocess
import sys

import pytest

from assertions import one_error_line
from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf
from crnn_multigpu.runtime.checkpoints import checkpoint_step, latest_checkpoint
from waiting import first_checkpoint, wait_until

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--model", "tiny", "--batch-size", "8", "--log-every", "0", "--validate-every", "0"]


def run_train(argv, capsys):
    with tf.Graph().as_default():
        code = train.main(argv)
    return code, capsys.readouterr().err


def refusal(out, holder):
    return ("error: another crnn-train (process %d) holds the run folder %s (its lock %s): wait "
            "for it to end, or choose another --out"
            % (holder, out, os.path.join(out, ".crnn-train.lock")))


def test_a_held_folder_refuses_a_trainer_before_it_reads_anything(tmp_path, capsys):
    from crnn_multigpu.runtime.checkpoints import run_folder_lock
    out = str(tmp_path / "run")
    os.makedirs(out)
    with run_folder_lock(out):
        # A --train that does not exist: the refusal comes before any data is read.
        code, err = run_train(["--train", str(tmp_path / "nowhere"), "--out", out] + TINY,
                              capsys)
        assert one_error_line(code, err) == refusal(out, os.getpid())
        assert os.listdir(out) == [".crnn-train.lock"], "nothing else is written"
    with run_folder_lock(out):  # released when the block ends
        pass
    assert open(os.path.join(out, ".crnn-train.lock")).read() == "", "no stale process id"


def test_a_running_trainer_holds_its_folder_and_a_killed_one_frees_it(tiny_dataset, tmp_path,
                                                                      capsys):
    out, log_path = str(tmp_path / "run"), str(tmp_path / "first.log")
    first = subprocess.Popen(
        [sys.executable, "-m", "crnn_multigpu.cli.train", "--train", tiny_dataset, "--out", out,
         "--steps", "100000", "--checkpoint-every", "1"] + TINY,
        stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED="1"))
    try:
        wait_until(lambda: first_checkpoint(out), first, log_path, "a first checkpoint")
        step = checkpoint_step(first_checkpoint(out))
        second = ["--train", tiny_dataset, "--out", out, "--steps", "100000", "--resume",
                  "--checkpoint-every", "1", "--stop-at", str(step + 2)] + TINY
        code, err = run_train(second, capsys)
        assert one_error_line(code, err) == refusal(out, first.pid)
        assert first.poll() is None, "the first trainer goes on"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # SIGKILL ran no clean-up, yet the lock went with the process.
    resumed_from = checkpoint_step(latest_checkpoint(out))
    second[second.index("--stop-at") + 1] = str(resumed_from + 1)
    code, err = run_train(second, capsys)
    assert code == 0, err
    assert checkpoint_step(latest_checkpoint(out)) == resumed_from + 1


@pytest.mark.parametrize("holder", ["crnn-train", "nothing"])
def test_the_lock_is_free_after_a_run_ends(holder, tiny_dataset, tmp_path, capsys):
    from crnn_multigpu.runtime.checkpoints import RunFolderInUse, run_folder_lock
    out = str(tmp_path / "run")
    if holder == "crnn-train":
        code, err = run_train(["--train", tiny_dataset, "--out", out, "--steps", "1"] + TINY,
                              capsys)
        assert code == 0, err
    else:
        os.makedirs(out)
    with run_folder_lock(out):
        with pytest.raises(RunFolderInUse, match="holds the run folder %s" % out):
            with run_folder_lock(out):
                pass
