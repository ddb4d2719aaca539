"""Gradient accumulation: k micro-batches per optimizer step equal one plain step on all of them.

The plain single-device model takes one step per whole batch (all the micro-batches of a
step concatenated); the wrapper takes the micro-batches one run at a time, with uneven
micro-batch and shard sizes, on 3 virtual CPU towers, under each placement strategy.
"""
import json
import os

import numpy as np
import pytest

import toy_models as toys
from assertions import copies, load_values, plain_run, read_values, start
from crnn_multigpu import MultiGpuModel, ParameterServer, Replicated, SpreadParameterServer
from crnn_multigpu.wrapper import layers, precision
from crnn_multigpu.wrapper.accumulation import Accumulation
from crnn_multigpu.runtime.checkpoints import latest_checkpoint
from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.towers import NONFINITE_MESSAGE
from crnn_multigpu.runtime.training import Trainer

STRATEGIES = {
    "ps": lambda: ParameterServer(),
    "ps-towers": lambda: SpreadParameterServer(),
    "replicated": lambda: Replicated(all_reduce="ring"),
    "replicated-packed": lambda: Replicated(all_reduce="ring", num_packs=1),
}
# Two optimizer steps of 3 micro-batches; the shard sizes of each micro-batch on 3 towers.
MICRO = [[[2, 2, 1], [1, 1, 1], [4, 2, 3]], [[1, 1, 1], [3, 3, 2], [2, 1, 1]]]
K = 3


def shards_of(batch, sizes):
    bounds = np.cumsum([0] + list(sizes))
    return [{k: v[a:b] for k, v in batch.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def micro_batches(make=toys.make_batch, seed=0):
    """[[(micro-batch, shard sizes)] per step] and the whole batch of each step."""
    steps, wholes = [], []
    for s, step in enumerate(MICRO):
        batches = [make(sum(sizes), seed=seed + 10 * s + m) for m, sizes in enumerate(step)]
        steps.append(list(zip(batches, step)))
        wholes.append({k: np.concatenate([b[k] for b in batches]) for k in batches[0]})
    return steps, wholes


def adam_schedule(global_step):
    """Adam whose rate halves every optimizer step: the schedule must count steps."""
    return tf.train.AdamOptimizer(tf.train.exponential_decay(0.05, global_step, 1, 0.5))


def sgd(global_step=None):
    return tf.train.GradientDescentOptimizer(0.1)


def loss_of(model):
    return model.loss


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_micro_batches_equal_one_plain_step_on_all_their_examples(make_session, name):
    steps, wholes = micro_batches()
    expected, expected_losses = plain_run(toys.Linear, wholes, make_session, adam_schedule,
                                          counts_steps=True, fetch=loss_of)
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(3), optimizer=adam_schedule,
                            strategy=STRATEGIES[name](), accumulate_steps=K)
    session = start(wrapper, make_session)
    for step, micro in enumerate(steps):
        for position, (batch, sizes) in enumerate(micro):
            before = read_values(session, wrapper.variables + [wrapper.global_step])
            _, step_loss = session.run([wrapper.objective, wrapper.step_loss],
                                       wrapper.feed_dict(shards_of(batch, sizes)))
            after = read_values(session, wrapper.variables + [wrapper.global_step])
            last = position == K - 1
            assert session.run(wrapper.accumulation.position) == (0 if last else position + 1)
            assert after["global_step"] == step + (1 if last else 0)
            if not last:  # micro-batches before the last change no variable
                assert all(np.array_equal(before[n], after[n]) for n in before)
        # The last run reports the whole step's loss, the plain model's on all its examples.
        np.testing.assert_allclose(step_loss, expected_losses[step], rtol=1e-5)
    for tower in copies(wrapper, session):
        for variable in ("w", "b"):
            np.testing.assert_allclose(tower[variable], expected[variable], rtol=1e-5,
                                       atol=1e-6, err_msg=variable)
    got = read_values(session)
    for slot in ("w/Adam", "w/Adam_1", "beta1_power", "global_step"):
        np.testing.assert_allclose(got[slot], expected[slot], rtol=1e-5, atol=1e-7,
                                   err_msg=slot)
    # What a checkpoint holds is what it holds without accumulation.
    saved = {v.op.name for v in wrapper.savable_variables}
    assert not any(n.startswith("accumulation/") for n in saved)
    assert {v.op.name for v in wrapper.variables} == {"w", "b"}
    accumulators = {v.op.name for v in wrapper.accumulation.variables()}
    assert {"accumulation/position", "accumulation/tower_2/examples"} <= accumulators


def test_sgd_steps_are_exact_and_only_the_last_micro_batch_reduces(make_session):
    """SGD moves by the gradient itself, so this compares gradients, not Adam's signs.
    Without the finiteness check, the accumulation's own gate alone holds the step back."""
    steps, wholes = micro_batches(seed=5)
    expected, _ = plain_run(toys.Linear, wholes, make_session, sgd,
                            counts_steps=True, fetch=loss_of)
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(3), optimizer=sgd(),
                            accumulate_steps=K, check_finite=False)
    session = start(wrapper, make_session)
    for micro in steps:
        for batch, sizes in micro:
            session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch, sizes)))
    got = read_values(session)
    for variable in ("w", "b"):
        np.testing.assert_allclose(got[variable], expected[variable], rtol=1e-5, atol=1e-6)
    # The combined gradient exists only on the run that applies: fetched on another
    # micro-batch it is not computed (TF's error for a value not produced).
    feed = wrapper.feed_dict(shards_of(*steps[0][0]))
    with pytest.raises(tf.errors.InvalidArgumentError):
        session.run(wrapper.grads_and_vars[0][0], feed)


def test_embedding_gradients_are_accumulated_densely_and_exactly(make_session):
    steps, wholes = micro_batches(make=toys.make_id_batch)
    assert len(np.unique(wholes[0]["ids"])) < len(wholes[0]["ids"]), "want repeated rows"
    expected, _ = plain_run(toys.Embedding, wholes, make_session, adam_schedule,
                            counts_steps=True, fetch=loss_of)
    wrapper = MultiGpuModel(toys.Embedding, devices=cpu_devices(3), optimizer=adam_schedule,
                            accumulate_steps=K)
    (grad, _), = wrapper.grads_and_vars
    assert not isinstance(grad, tf.IndexedSlices)  # documented: dense accumulation
    session = start(wrapper, make_session)
    before = session.run(wrapper.variables[0])
    for micro in steps:
        for batch, sizes in micro:
            session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch, sizes)))
    after = session.run(wrapper.variables[0])
    np.testing.assert_allclose(after, expected["table"], rtol=1e-5, atol=1e-6)
    # Rows no example used: unchanged, as with the plain model's sparse update.
    untouched = np.setdiff1d(np.arange(toys.VOCAB), np.concatenate([w["ids"] for w in wholes]))
    np.testing.assert_array_equal(after[untouched], before[untouched])


def test_without_accumulation_the_graph_is_unchanged_and_sparse_stays_sparse():
    wrapper = MultiGpuModel(toys.Embedding, devices=cpu_devices(2), accumulate_steps=1)
    assert isinstance(wrapper.grads_and_vars[0][0], tf.IndexedSlices)
    assert wrapper.step_loss is wrapper.loss and wrapper.accumulate_steps == 1
    assert not [op for op in tf.get_default_graph().get_operations()
                if any(word in op.name for word in ("accumulat", "apply_gate", "is_last"))]


def test_update_ops_run_once_per_optimizer_step_from_the_last_micro_batch(make_session):
    wrapper = MultiGpuModel(toys.WithMovingMean, devices=cpu_devices(3), optimizer=sgd(),
                            accumulate_steps=K)
    session = start(wrapper, make_session)
    momentum, expected = toys.WithMovingMean.momentum, np.zeros(toys.IN_DIM)
    steps, _ = micro_batches()
    for micro in steps:
        for batch, sizes in micro:
            shards = shards_of(batch, sizes)
            session.run(wrapper.objective, wrapper.feed_dict(shards))
        expected -= (1 - momentum) * (expected - shards[0]["x"].mean(axis=0))
    got = read_values(session)
    assert got["updates_run"] == len(steps) == got["global_step"]
    np.testing.assert_allclose(got["moving_mean"], expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["ps", "replicated"])
@pytest.mark.parametrize("bad_position", [0, K - 1])
def test_a_nonfinite_micro_batch_skips_the_whole_step(make_session, name, bad_position):
    steps, wholes = micro_batches()
    expected, _ = plain_run(toys.WithMovingMean, wholes[1:], make_session, adam_schedule,
                            counts_steps=True, fetch=loss_of)
    wrapper = MultiGpuModel(toys.WithMovingMean, devices=cpu_devices(3), optimizer=adam_schedule,
                            strategy=STRATEGIES[name](), accumulate_steps=K)
    session = start(wrapper, make_session)
    before = read_values(session)
    poisoned = [dict((k, v.copy()) for k, v in batch.items()) for batch, _ in steps[0]]
    poisoned[bad_position]["y"][-1, 0] = np.nan  # in the last, smallest shard
    for position, (batch, (_, sizes)) in enumerate(zip(poisoned, steps[0])):
        feed = wrapper.feed_dict(shards_of(batch, sizes))
        if position < K - 1:
            session.run(wrapper.objective, feed)  # the step is judged as a whole, at its end
        else:
            with pytest.raises(tf.errors.InvalidArgumentError, match=NONFINITE_MESSAGE):
                session.run(wrapper.objective, feed)
    after = read_values(session)
    for variable in before:
        if not variable.startswith("accumulation/"):
            np.testing.assert_array_equal(after[variable], before[variable], err_msg=variable)
    # The accumulators were reset in the failing run: the next step starts a clean cycle
    # and equals the plain model's first step on its batch (the bad one is simply skipped).
    assert all(np.all(after[v.op.name] == 0) for v in wrapper.accumulation.variables())
    for batch, sizes in steps[1]:
        session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch, sizes)))
    got = read_values(session)
    for variable in ("w", "b", "w/Adam_1", "beta1_power"):
        np.testing.assert_allclose(got[variable], expected[variable], rtol=1e-5, atol=1e-6,
                                   err_msg=variable)
    assert got["updates_run"] == 1 and got["global_step"] == 1


class Dense(object):
    """A dense layer and a squared loss, written with ``layers`` so that it runs in float16."""

    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 3], name="x")
        self.y = tf.placeholder(tf.float32, [None, 2], name="y")
        out = layers.float32(layers.dense(self.x, 2, name="out"))
        self.loss = tf.reduce_mean(tf.reduce_sum(tf.square(out - self.y), axis=1))
        self.batch_size = tf.shape(self.x)[0]

    def feed_dict(self, batch):
        return {self.x: batch["x"], self.y: batch["y"]}


def dense_batch(n, seed=0, scale=1.0):
    rng = np.random.RandomState(seed)
    return dict(x=(rng.randn(n, 3) * scale).astype(np.float32),
                y=rng.randn(n, 2).astype(np.float32))


def dense_start(seed=0):
    """Dense's start, from its own RandomState: a kernel in Glorot's range and a small bias."""
    rng = np.random.RandomState(seed)
    limit = np.sqrt(6.0 / (3 + 2))
    return {"out/kernel": rng.uniform(-limit, limit, (3, 2)).astype(np.float32),
            "out/bias": rng.uniform(-0.5, 0.5, 2).astype(np.float32)}


U16 = 2.0 ** -11  # float16's unit roundoff (11 significant bits)
EPS32 = 2.0 ** -24  # float32's


def float16_sgd_bound(start, micro, lr):
    """``(exact, bound)`` of Dense's SGD update from ``start`` over the micro-batches ``micro``
    ([(batch, shard sizes)]): the exact update (float64), and per element a bound on how far
    the mixed-float16 towers' update may lie from it.

    Each example i of a shard of n examples enters in float16: its output, a sum of 3
    products of rounded inputs and weights plus the rounded bias, is off by at most
    gamma(6) * a_i (a_i = |x_i| @ |W| + |b|, gamma(k) = k u / (1 - k u)); the gradient of
    the output, 2 r_i (r_i the residual) times the scale / n, is rounded once more, and the
    shard's bias and kernel gradients are float16 sums of n such terms (times the rounded
    x_i for the kernel): gamma(n + 2) |r_i| bounds those roundings (one u more than they
    need, which covers every float32 operation after them, 2**13 times finer). The scale is
    a power of two, so unscaling is exact. So the error scales with the size of the summed
    terms (|r_i| and a_i, about 1), not with the gradient, which may be a near-cancelled sum
    of them (issue 35: a bias gradient of 3.6e-3 came out as 2**-8, 7 % off). Last, the
    variable and the reference are rounded to float32 once each.
    """
    def gamma(k):
        return k * U16 / (1 - k * U16)

    x = np.concatenate([b["x"] for b, _ in micro]).astype(np.float64)
    y = np.concatenate([b["y"] for b, _ in micro]).astype(np.float64)
    shard = np.concatenate([np.repeat(sizes, sizes) for _, sizes in micro])[:, None]
    kernel, bias = start["out/kernel"].astype(np.float64), start["out/bias"].astype(np.float64)
    residual = x @ kernel + bias - y
    per_example = gamma(6) * (np.abs(x) @ np.abs(kernel) + np.abs(bias)) + \
        gamma(shard + 2) * np.abs(residual)
    scale = 2.0 * lr / len(x)
    exact = {"out/kernel": -scale * x.T @ residual, "out/bias": -scale * residual.sum(axis=0)}
    bound = {"out/kernel": scale * np.abs(x).T @ per_example,
             "out/bias": scale * per_example.sum(axis=0)}
    for name in bound:
        bound[name] += 2 * EPS32 * (np.abs(start[name]) + np.abs(exact[name]))
    return exact, bound


@pytest.mark.parametrize("name", ["ps", "replicated"])
def test_mixed_float16_unscales_and_an_overflow_skips_the_step(make_session, name):
    # Both: an explicit start (dense_start), and a bound derived from float16's rounding
    # (float16_sgd_bound) instead of a relative tolerance. The start used to come from Dense's
    # own initialiser, unseeded, so a new draw on every run; rtol 1e-2 of the update then
    # failed for 1 to 2 starts in 300 (on both stacks), wherever a gradient is a
    # near-cancelled sum: float16's error is relative to the summed terms, not to their sum.
    # The bound holds for any start and data (errors measured over 300 starts: 0.16 of it).
    steps, wholes = micro_batches(make=dense_batch)
    initial = dense_start()
    expected, _ = plain_run(Dense, wholes[:1], make_session, sgd, start=initial)
    policy = precision.MixedFloat16(initial_scale=2.0 ** 10, growth_steps=100)
    wrapper = MultiGpuModel(Dense, devices=cpu_devices(3), optimizer=sgd(), precision=policy,
                            strategy=STRATEGIES[name](), accumulate_steps=K)
    session = start(wrapper, make_session)
    load_values(session, initial)
    session.run(wrapper.post_init_op)
    start_values = read_values(session)
    for batch, sizes in steps[0]:
        session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch, sizes)))
    got = read_values(session)
    exact, bound = float16_sgd_bound(initial, steps[0], lr=0.1)
    for variable in ("out/kernel", "out/bias"):
        moved = got[variable].astype(np.float64) - start_values[variable]
        # The float32 plain model agrees with the exact update to float32's precision ...
        np.testing.assert_allclose(expected[variable] - start_values[variable],
                                   exact[variable], rtol=1e-4, atol=1e-6, err_msg=variable)
        # ... and the float16 towers to float16's (about 0.5 % of the summed terms' size).
        error = np.abs(moved - exact[variable])
        assert np.all(error <= bound[variable]), (variable, moved, exact[variable],
                                                  bound[variable])
        # The bound is tight enough to see a dropped micro-batch (a missing unscale is 1024x).
        for dropped in range(K):
            kept = steps[0][:dropped] + steps[0][dropped + 1:]
            assert np.any(np.abs(float16_sgd_bound(initial, kept, 0.1)[0][variable]
                                 - exact[variable]) > 4 * bound[variable]), (variable, dropped)
    assert session.run([policy.scale, wrapper.global_step]) == [1024.0, 1]
    # 1e5 exceeds float16's range: the middle micro-batch overflows, and the step is skipped
    # without an error; the scale halves, the global step advances, nothing else changes.
    before = read_values(session)
    for position, (batch, sizes) in enumerate(steps[1]):
        if position == 1:
            batch = dict(batch, x=batch["x"] * 1e5)
        session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch, sizes)))
    after = read_values(session)
    assert session.run([policy.scale, wrapper.global_step]) == [512.0, 2]
    changed = [n for n in before if not np.array_equal(before[n], after[n])
               and n.split("/")[0] not in ("global_step", "loss_scale", "accumulation")]
    assert changed == []
    assert all(np.all(after[v.op.name] == 0) for v in wrapper.accumulation.variables())


def test_function_style_accumulates(make_session):
    steps, wholes = micro_batches(seed=3)
    expected, _ = plain_run(toys.Linear, wholes, make_session, sgd,
                            counts_steps=True, fetch=loss_of)
    x = tf.placeholder(tf.float32, [None, toys.IN_DIM])
    y = tf.placeholder(tf.float32, [None, toys.OUT_DIM])
    kernel, bias = toys.initial_weights()

    def model_fn(inputs):
        return tf.matmul(inputs, tf.get_variable("w", initializer=kernel)) + \
            tf.get_variable("b", initializer=bias)

    wrapper = MultiGpuModel.from_function(
        model_fn, lambda out, labels: tf.reduce_mean(tf.reduce_sum(tf.square(out - labels), 1)),
        x, y, devices=cpu_devices(3), optimizer=sgd(), accumulate_steps=K)
    session = start(wrapper, make_session)
    for micro in steps:
        for batch, _ in micro:
            session.run(wrapper.objective, {x: batch["x"], y: batch["y"]})
    got = read_values(session)
    for variable in ("w", "b"):
        np.testing.assert_allclose(got[variable], expected[variable], rtol=1e-5, atol=1e-6)


def linear_source(micro_sizes):
    """batch_for_step over micro-steps: micro-step i has micro_sizes[i % len] examples."""
    def batch_for_step(micro_step):
        return toys.make_batch(micro_sizes[micro_step % len(micro_sizes)], seed=micro_step)
    return batch_for_step


def test_trainer_counts_optimizer_steps_and_equals_the_plain_schedule(tmp_path, make_session):
    sizes = [5, 3, 4]
    source = linear_source(sizes)
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(3), optimizer=adam_schedule,
                            accumulate_steps=K)
    lines = []
    trainer = Trainer(wrapper, source, str(tmp_path / "run"), checkpoint_every=2, log_every=1,
                      summary_every=1, stream=Lines(lines))
    assert trainer.train(make_session(), steps=4) == 4
    assert [line.split("] ")[1].split()[1] for line in lines] == ["1/4", "2/4", "3/4", "4/4"]
    wholes = [{k: np.concatenate([source(s * K + m)[k] for m in range(K)])
               for k in ("x", "y")} for s in range(4)]
    expected, losses = plain_run(toys.Linear, wholes, make_session, adam_schedule,
                                 counts_steps=True, fetch=loss_of)
    reader = tf.train.load_checkpoint(latest_checkpoint(str(tmp_path / "run")))
    assert reader.get_tensor("global_step") == 4
    assert not any(n.startswith("accumulation") for n in reader.get_variable_to_shape_map())
    for variable in ("w", "b"):
        np.testing.assert_allclose(reader.get_tensor(variable), expected[variable], rtol=1e-5,
                                   atol=1e-6)
    logged = [float(line.split("loss ")[1].split()[0]) for line in lines]
    np.testing.assert_allclose(logged, losses, rtol=1e-3)  # each step's loss, 4 decimals
    # Summaries are written once per optimizer step, at steps 1..4, with the step's loss.
    events = [e for f in os.listdir(str(tmp_path / "run" / "logs"))
              for e in tf.train.summary_iterator(str(tmp_path / "run" / "logs" / f))
              if e.HasField("summary")]
    train_loss = [(e.step, v.simple_value) for e in events for v in e.summary.value
                  if v.tag == "train/loss"]
    assert [s for s, _ in train_loss] == [1, 2, 3, 4]
    np.testing.assert_allclose([v for _, v in train_loss], losses, rtol=1e-5)


class Lines(object):
    def __init__(self, lines):
        self.lines = lines

    def write(self, text):
        self.lines.extend(t for t in text.splitlines() if "] step " in t)

    def flush(self):
        pass


def test_an_error_in_the_middle_of_a_cycle_restarts_it_on_resume(tmp_path, make_session):
    """The trainer saves between optimizer steps only: after a failure in the middle of a
    cycle the checkpoint holds the last whole step, and the resumed run repeats the cycle
    from its first micro-batch, ending where an uninterrupted run ends."""
    sizes = [5, 3, 4]
    source = linear_source(sizes)

    def failing(micro_step):
        if micro_step == 2 * K + 1:  # the second micro-batch of step 2
            raise RuntimeError("the data source failed")
        return source(micro_step)

    def run(out, batch_for_step, steps, resume):
        graph = tf.Graph()
        with graph.as_default():
            wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(3),
                                    optimizer=adam_schedule, accumulate_steps=K)
            trainer = Trainer(wrapper, batch_for_step, out, checkpoint_every=0, log_every=0)
            return trainer.train(make_session(graph), steps=steps, resume=resume)

    straight, interrupted = str(tmp_path / "straight"), str(tmp_path / "interrupted")
    assert run(straight, source, 4, False) == 4
    with pytest.raises(RuntimeError, match="data source failed"):
        run(interrupted, failing, 4, False)
    reader = tf.train.load_checkpoint(latest_checkpoint(interrupted))
    assert reader.get_tensor("global_step") == 2  # the last whole step, not 2 and a third
    assert run(interrupted, source, 4, True) == 4
    a = tf.train.load_checkpoint(latest_checkpoint(straight))
    b = tf.train.load_checkpoint(latest_checkpoint(interrupted))
    for name in a.get_variable_to_shape_map():
        np.testing.assert_array_equal(a.get_tensor(name), b.get_tensor(name), err_msg=name)


def test_trainer_skip_policy_skips_the_whole_step(tmp_path, make_session):
    source = linear_source([5, 3, 4])

    def nan_in_step_1(micro_step):
        batch = source(micro_step)
        if micro_step == K + 1:  # the middle micro-batch of step 1
            batch["y"][0, 0] = np.nan
        return batch

    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(3), accumulate_steps=K)
    trainer = Trainer(wrapper, nan_in_step_1, str(tmp_path), log_every=0, on_nonfinite="skip")
    assert trainer.train(make_session(), steps=3) == 3
    assert trainer.skipped_steps == [1]


def test_post_init_op_starts_a_new_cycle(make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2), accumulate_steps=K)
    session = start(wrapper, make_session)
    session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(toys.make_batch(4))))
    assert session.run(wrapper.accumulation.position) == 1
    session.run(wrapper.post_init_op)
    assert session.run(wrapper.accumulation.position) == 0
    assert all(np.all(session.run(v) == 0) for v in wrapper.accumulation.variables())


@pytest.mark.parametrize("steps", [0, -2, 1.5, True, "2", None])
def test_accumulate_steps_must_be_a_positive_whole_number(steps):
    with pytest.raises(ValueError, match="accumulate_steps must be a whole number >= 1"):
        MultiGpuModel(toys.Linear, devices=cpu_devices(2), accumulate_steps=steps)
    with pytest.raises(ValueError, match="accumulate_steps"):
        Accumulation(steps)


TRAIN = ["--model", "tiny", "--batch-size", "4", "--towers", "2", "--validate-every", "0",
         "--log-every", "1", "--checkpoint-every", "2", "--steps", "4"]


def run_train(args):
    with tf.Graph().as_default():
        return train.main(args)


def checkpoint_values(run_dir):
    reader = tf.train.load_checkpoint(latest_checkpoint(run_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


@pytest.mark.slow
def test_crnn_train_accumulate_resumes_exactly(tiny_dataset, tmp_path, capsys):
    """crnn-train --accumulate 2 with the feed-free input (the Trainer tests above feed):
    progress counts optimizer steps; --stop-at and --resume (which restarts at a cycle
    boundary) end where one run ends, bit for bit."""
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    common = ["--train", tiny_dataset, "--accumulate", "2", "--input", "dataset"] + TRAIN
    assert run_train(common + ["--out", straight]) == 0
    err = capsys.readouterr().err
    assert [line.split("] step ")[1].split()[0] for line in err.splitlines()
            if "] step " in line] == ["1/4", "2/4", "3/4", "4/4"]
    assert "batch 4 x 2 micro-batches" in err
    assert run_train(common + ["--out", resumed, "--stop-at", "2"]) == 0
    assert run_train(common + ["--out", resumed, "--resume", "--accumulate", "3"]) == 2, \
        "another --accumulate changes the data order: refused"
    assert "--resume: accumulate" in capsys.readouterr().err
    assert run_train(common + ["--out", resumed, "--resume"]) == 0
    a, b = checkpoint_values(straight), checkpoint_values(resumed)
    assert set(a) == set(b) and b["global_step"] == 4
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert json.load(open(os.path.join(resumed, "config.json")))["accumulate"] == 2
