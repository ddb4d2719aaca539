"""crnn-train's learning-rate schedule, ``runtime.schedule.StepDecay``: where it drops and to
what, and that --lr's help says the same."""
import pytest

from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf
from crnn_multigpu.runtime.schedule import StepDecay


def test_the_rate_drops_x03_at_60_and_to_003_at_85_percent():
    schedule = StepDecay(1e-3, 3000)
    assert schedule.boundaries == [1800, 2550]
    # lr * 0.03, not lr * 0.3 * 0.1 (which rounds apart): the rates of the runs trained so far.
    assert schedule.rates == [1e-3, 1e-3 * 0.3, 1e-3 * 0.03]
    assert StepDecay(5e-4, 7).boundaries == [4, 5]


@pytest.mark.parametrize("step, factor", [(0, 1.0), (599, 1.0), (600, 1.0), (601, 0.3),
                                          (850, 0.3), (851, 0.03), (5000, 0.03)])
def test_the_rate_tensor_follows_the_global_step(step, factor):
    # piecewise_constant: a boundary's own step still takes the rate before it.
    with tf.Graph().as_default():
        global_step = tf.placeholder(tf.int64, [])
        rate = StepDecay(2e-3, 1000)(global_step)
        with tf.Session() as session:
            assert session.run(rate, {global_step: step}) == pytest.approx(2e-3 * factor,
                                                                           rel=1e-6)


def test_the_lr_help_describes_the_schedule(capsys):
    assert StepDecay.describe() == "decays x0.3 at 60% and x0.1 at 85% of --steps"
    with pytest.raises(SystemExit):
        train.build_parser().parse_args(["--help"])
    assert "(decays x0.3 at 60% and x0.1 at 85%" in " ".join(capsys.readouterr().out.split())
