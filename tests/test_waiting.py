"""The suite's own waiting helper: a state reached just before the process ends still counts."""
import pytest

from waiting import wait_until


class Ended(object):
    """A process that has already exited."""
    returncode = 0

    def poll(self):
        return self.returncode


def test_a_state_reached_as_the_process_ends_is_not_a_failure(tmp_path):
    log = tmp_path / "log"
    log.write_text(u"")
    answers = iter([False, True])  # asked before the exit was seen, then after
    wait_until(lambda: next(answers), Ended(), str(log), "the state")


def test_a_process_that_ends_without_the_state_fails_with_its_log(tmp_path):
    log = tmp_path / "log"
    log.write_text(u"the last words")
    with pytest.raises(pytest.fail.Exception, match="exited with 0 before the state:\nthe last"):
        wait_until(lambda: False, Ended(), str(log), "the state")
