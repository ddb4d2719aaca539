"""Waiting for a subprocess to reach a state: tests wait for states, never for durations."""
import time

import pytest

HANG_GUARD = 1800  # seconds: only to fail instead of hanging; no wait expects to take this long
# (a suite on one core shared with other work has needed over 600 s for the quick benchmark)


def wait_until(condition, process, log_path, what):
    """Poll ``condition()`` until it holds; fail if the process exits first (or hangs)."""
    deadline = time.time() + HANG_GUARD
    while not condition():
        # The process may reach the state and end between the two questions: once it has
        # ended, its output is final, and the condition is asked once more before failing.
        if process.poll() is not None:
            if condition():
                return
            pytest.fail("training exited with %s before %s:\n%s"
                        % (process.returncode, what, open(log_path).read()))
        if time.time() > deadline:
            pytest.fail("no %s after %d s:\n%s" % (what, HANG_GUARD, open(log_path).read()))
        time.sleep(0.02)


def first_checkpoint(directory):
    """The newest intact checkpoint of ``directory``, or None while there is none yet: a first
    save still being written (its data file there, its index not yet) is a state to wait past,
    not the damaged directory ``latest_checkpoint`` reports."""
    from crnn_multigpu.runtime.checkpoints import NoIntactCheckpointError, latest_checkpoint
    try:
        return latest_checkpoint(directory)
    except NoIntactCheckpointError:
        return None
