"""The input objects (``wrapper.feeding``): the trainer's one path for a fed and a feed-free
input, and the non-finite step it learns of as a value."""
import io

import numpy as np
import pytest

import toy_models as toys
from assertions import assert_refused_by_value, assert_step_refused_changing_nothing, \
    plain_run, start
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.compat import tf
from crnn_multigpu.runtime.checkpoints import latest_checkpoint
from crnn_multigpu.runtime.training import NonFiniteLossError, Trainer
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.feeding import FedInput, StepInput

K, TOWERS, BATCH, STEPS = 2, 2, 5, 3
INPUTS = [FedInput, StepInput]


class InputLinear(object):
    """``toys.Linear``'s least squares, its placeholders defaulting to the tower's input
    tensors when a feed-free input gives them (as CRNN's do)."""

    def __init__(self, inputs=None):
        kernel, bias = toys.initial_weights()
        self.x, self.y = [
            tf.placeholder_with_default(inputs[name], [None, width], name=name) if inputs
            else tf.placeholder(tf.float32, [None, width], name=name)
            for name, width in (("x", toys.IN_DIM), ("y", toys.OUT_DIM))]
        w = tf.get_variable("w", initializer=kernel)
        b = tf.get_variable("b", initializer=bias)
        residual = tf.matmul(self.x, w) + b - self.y
        self.loss = tf.reduce_mean(tf.reduce_sum(tf.square(residual), axis=1))
        self.batch_size = tf.shape(self.x)[0]

    def feed_dict(self, batch):
        return {self.x: batch["x"], self.y: batch["y"]}


class Source(object):
    """A step source: micro-step s's batch of ``batch_size`` examples drawn from s, with a NaN
    in those of ``nan_at``."""

    thread_safe = True
    signature = {"x": (np.float32, [None, toys.IN_DIM]), "y": (np.float32, [None, toys.OUT_DIM])}

    def __init__(self, nan_at=(), batch_size=BATCH):
        self.nan_at, self.batch_size = set(nan_at), batch_size

    def __call__(self, step):
        batch = toys.make_batch(self.batch_size, seed=step)
        if step in self.nan_at:
            batch["y"][0, 0] = np.nan
        return batch


def recorded(input_cls, source):
    """An ``input_cls`` of ``source`` that lists the steps the trainer asks it for."""
    class Recorded(input_cls):
        asked = []

        def micro_batches(self, step):
            self.asked.append(step)
            return input_cls.micro_batches(self, step)
    return Recorded(source)


def wrapper_on(data, **kwargs):
    return MultiGpuModel(InputLinear, devices=cpu_devices(TOWERS), batches=data,
                         accumulate_steps=K, optimizer=tf.train.AdamOptimizer(0.05), **kwargs)


@pytest.mark.parametrize("input_cls", INPUTS, ids=lambda cls: cls.__name__)
def test_the_trainer_runs_either_input_on_its_one_path_to_the_plain_models_steps(
        input_cls, tmp_path, make_session):
    data = recorded(input_cls, Source())
    wrapper = wrapper_on(data)
    assert wrapper.input is data
    progress = io.StringIO()
    trainer = Trainer(wrapper, None, str(tmp_path), log_every=STEPS, checkpoint_every=0,
                      stream=progress)
    assert trainer.train(make_session(), steps=STEPS) == STEPS
    assert data.asked == list(range(STEPS))
    # Only a fed input's wait is the host's to measure.
    assert ("input wait" in progress.getvalue()) == (input_cls is FedInput), progress.getvalue()
    # Each step equals the plain model's on its K micro-batches at once.
    wholes = [{key: np.concatenate([Source()(step * K + m)[key] for m in range(K)])
               for key in ("x", "y")} for step in range(STEPS)]
    expected, _ = plain_run(InputLinear, wholes, make_session, lambda: tf.train.AdamOptimizer(0.05))
    reader = tf.train.load_checkpoint(latest_checkpoint(str(tmp_path)))
    assert reader.get_tensor("global_step") == STEPS
    for name in ("w", "b"):
        np.testing.assert_allclose(reader.get_tensor(name), expected[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("input_cls", INPUTS, ids=lambda cls: cls.__name__)
def test_a_nonfinite_step_reaches_the_trainer_as_a_value(input_cls, tmp_path, make_session):
    """Step 1's second micro-batch holds a NaN: skipped by the policy, or the stop, raised on
    the wrapper's ``step_refused`` (no TensorFlow error is being handled when it is raised)."""
    wrapper = wrapper_on(input_cls(Source(nan_at=[K + 1])))
    skipping = Trainer(wrapper, None, str(tmp_path / "skip"), log_every=0,
                       on_nonfinite="skip")
    assert skipping.train(make_session(), steps=STEPS) == STEPS
    assert skipping.skipped_steps == [1]
    stopping = Trainer(wrapper, None, str(tmp_path / "stop"), log_every=0, checkpoint_every=0)
    session = make_session()
    with pytest.raises(NonFiniteLossError, match="step 1: the loss or a gradient is NaN/Inf; "
                                                 "no variable was changed") as stopped:
        stopping.train(session, steps=STEPS)
    assert stopped.value.__context__ is None, stopped.value.__context__
    assert session.run(wrapper.global_step) == 1


def test_train_op_refuses_a_nonfinite_step_quietly_and_objective_still_fails(make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(TOWERS))
    session = start(wrapper, make_session)
    bad = toys.make_batch(4)
    bad["x"][1, 2] = np.inf
    feed = wrapper.feed_dict(wrapper.split(bad))
    assert_refused_by_value(session, wrapper, feed)
    assert_step_refused_changing_nothing(session, wrapper.objective, feed)
    good = wrapper.feed_dict(wrapper.split(toys.make_batch(4)))
    assert not session.run([wrapper.train_op, wrapper.step_refused], good)[1]
    assert session.run(wrapper.global_step) == 1
    with tf.Graph().as_default():
        unchecked = MultiGpuModel(toys.Linear, devices=cpu_devices(TOWERS), check_finite=False)
    assert unchecked.step_refused is None


def test_batches_smaller_than_the_towers_are_refused_before_any_tower(make_session):
    for data in (FedInput(Source(batch_size=1)), StepInput(Source(batch_size=1))):
        with pytest.raises(ValueError, match="the batch size 1 is smaller than the "
                                             "2 towers: every tower needs at least one example"):
            wrapper_on(data)
        assert not [v for v in tf.global_variables() if v.op.name in ("w", "b")]
    fed = Trainer(MultiGpuModel(toys.Linear, devices=cpu_devices(3)),
                  lambda step: toys.make_batch(2), "unused", log_every=0, is_chief=False)
    with pytest.raises(ValueError, match="the batch's size 2 is smaller than the 3 towers"):
        fed.train(start(fed.wrapper, make_session), steps=1)


def test_an_input_feeds_one_wrapper_and_the_trainer_one_input():
    data = StepInput(Source())
    wrapper = wrapper_on(data)
    with pytest.raises(ValueError, match="an input feeds one wrapper"):
        wrapper_on(data)
    with pytest.raises(ValueError, match="has its own input"):
        Trainer(wrapper, Source(), "unused", is_chief=False)
    with tf.Graph().as_default(), \
            pytest.raises(ValueError, match="needs a wrapper built with batches="):
        Trainer(MultiGpuModel(toys.Linear, devices=cpu_devices(TOWERS)), None, "unused",
                is_chief=False)
