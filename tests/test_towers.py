"""MultiGpuModel: sharing, exact averaging, None/sparse gradients, update ops, checkpoints."""
import logging

import numpy as np
import pytest

import toy_models as toys
from assertions import assert_step_refused_changing_nothing, plain_run, read_values
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices

LR = 0.1


def sgd():
    return tf.train.GradientDescentOptimizer(LR)


def plain_step(model_cls, batch, make_session, **kwargs):
    """One SGD step of the model alone on the whole batch: its variables, loss and error."""
    variables, [(loss, error)] = plain_run(model_cls, [batch], make_session, sgd, **kwargs)
    return variables, loss, error


def adam():
    return tf.train.AdamOptimizer(0.05)


def assert_same_variables(session, expected, names=None):
    """Each of ``names`` (default: every variable of ``expected``) as the plain run left it."""
    got = read_values(session)
    for name in names or sorted(expected):
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_variables_are_shared_with_plain_names(make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(4), optimizer=sgd())
    names = sorted(v.op.name for v in tf.trainable_variables())
    assert names == ["b", "w"]
    assert len(wrapper.models) == 4 and len(wrapper.predict) == 4 and len(wrapper.log_prob) == 4


@pytest.mark.parametrize("devices, shard_sizes", [
    (cpu_devices(2), [4, 4]), (cpu_devices(2), [3, 5]), (cpu_devices(4), [3, 2, 2, 1])])
def test_one_step_equals_plain_model_on_whole_batch(make_session, devices, shard_sizes):
    batch = toys.make_batch(sum(shard_sizes))
    expected, expected_loss, expected_error = plain_step(toys.Linear, batch, make_session)
    wrapper = MultiGpuModel(toys.Linear, devices=devices, optimizer=sgd())
    bounds = np.cumsum([0] + shard_sizes)
    shards = [{k: v[a:b] for k, v in batch.items()} for a, b in zip(bounds[:-1], bounds[1:])]
    session = make_session()
    session.run(tf.global_variables_initializer())
    _, loss, error = session.run([wrapper.objective, wrapper.loss, wrapper.error],
                                 wrapper.feed_dict(shards))
    got = read_values(session)
    for name in ("w", "b"):
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)
    assert got["global_step"] == 1
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    np.testing.assert_allclose(error, expected_error, rtol=1e-5)


def test_loss_is_not_the_last_towers(make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2), optimizer=sgd())
    batch = toys.make_batch(6)
    session = make_session()
    session.run(tf.global_variables_initializer())
    feed = wrapper.feed_dict(wrapper.split(batch))
    loss, last = session.run([wrapper.loss, wrapper.models[-1].loss], feed)
    whole = session.run(wrapper.models[0].loss, wrapper.models[0].feed_dict(batch))
    np.testing.assert_allclose(loss, whole, rtol=1e-5)
    assert abs(loss - last) > 1e-3


def test_none_gradient_is_skipped_with_warning(make_session, caplog):
    with caplog.at_level(logging.WARNING):
        wrapper = MultiGpuModel(toys.LinearWithUnused, devices=cpu_devices(2), optimizer=sgd())
    assert "unused" in caplog.text
    session = make_session()
    session.run(tf.global_variables_initializer())
    session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(toys.make_batch(4))))
    np.testing.assert_array_equal(read_values(session)["unused"], np.ones(4))


def test_sparse_gradients_stay_sparse_and_exact(make_session):
    batch = toys.make_id_batch(7)
    expected, _, _ = plain_step(toys.Embedding, batch, make_session)
    wrapper = MultiGpuModel(toys.Embedding, devices=cpu_devices(2), optimizer=sgd())
    (grad, variable), = wrapper.grads_and_vars
    assert isinstance(grad, tf.IndexedSlices), "the averaged embedding gradient was densified"
    apply_types = set(op.type for op in tf.get_default_graph().get_operations())
    assert apply_types & {"ScatterSub", "ResourceScatterAdd", "ResourceScatterSub",
                          "ScatterAdd"}, "the update was not applied sparsely"
    session = make_session()
    session.run(tf.global_variables_initializer())
    before = session.run(variable)
    session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(batch)))
    after = session.run(variable)
    np.testing.assert_allclose(after, expected["table"], rtol=1e-5, atol=1e-6)
    untouched = np.setdiff1d(np.arange(toys.VOCAB), batch["ids"])
    np.testing.assert_array_equal(after[untouched], before[untouched])


def test_sparse_gradients_with_adam_equal_plain_adam_steps(make_session):
    # Two Adam steps over shards of 3 and 4 examples, each batch with an id in both shards:
    # the table, both moments and the beta powers must be those of plain Adam on the whole
    # batch (a tower's slices weighted wrongly change the moments and the shared rows).
    batches = [toys.make_id_batch(7, seed=seed) for seed in (3, 4)]
    assert all(set(b["ids"][:3]) & set(b["ids"][3:]) for b in batches)
    expected, before = plain_run(toys.Embedding, batches, make_session, adam)
    wrapper = MultiGpuModel(toys.Embedding, devices=cpu_devices(2), optimizer=adam())
    assert isinstance(wrapper.grads_and_vars[0][0], tf.IndexedSlices)
    session = make_session()
    session.run(tf.global_variables_initializer())
    initial = read_values(session)["table"]
    for batch, (loss_before, _) in zip(batches, before):
        shards = [{k: v[:3] for k, v in batch.items()}, {k: v[3:] for k, v in batch.items()}]
        _, loss = session.run([wrapper.objective, wrapper.loss], wrapper.feed_dict(shards))
        np.testing.assert_allclose(loss, loss_before, rtol=1e-5)
    assert sorted(expected) == ["beta1_power", "beta2_power", "table", "table/Adam",
                                "table/Adam_1"]
    assert_same_variables(session, expected)
    assert read_values(session)["global_step"] == 2
    untouched = np.setdiff1d(np.arange(toys.VOCAB), np.concatenate([b["ids"] for b in batches]))
    assert len(untouched) > 0
    np.testing.assert_array_equal(read_values(session)["table"][untouched], initial[untouched])


def test_update_ops_run_once_per_step_from_tower_zero(make_session):
    wrapper = MultiGpuModel(toys.WithMovingMean, devices=cpu_devices(4), optimizer=sgd())
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    session = make_session()
    session.run(tf.global_variables_initializer())
    momentum, expected = toys.WithMovingMean.momentum, np.zeros(toys.IN_DIM)
    for seed in range(3):
        shards = wrapper.split(toys.make_batch(8, seed=seed))
        session.run(wrapper.objective, wrapper.feed_dict(shards))
        expected -= (1 - momentum) * (expected - shards[0]["x"].mean(axis=0))
    got = read_values(session)
    assert got["updates_run"] == 3
    np.testing.assert_allclose(got["moving_mean"], expected, rtol=1e-5)


def test_unshared_trainable_variable_is_refused():
    with pytest.raises(ValueError, match=r"tower 1 created 1 new trainable.*extra.*tf.get_variable"):
        MultiGpuModel(toys.WithTfVariable, devices=cpu_devices(2))


def test_single_tower_accepts_tf_variable_model(make_session):
    wrapper = MultiGpuModel(toys.WithTfVariable, devices=cpu_devices(1))
    assert "extra" in [v.op.name for v in tf.trainable_variables()]
    assert wrapper.n_towers == 1


def test_placement_of_towers_and_variables():
    wrapper = MultiGpuModel(toys.Linear, devices=["/cpu:1", "/cpu:2"])
    tower1_ops = [op for op in tf.get_default_graph().get_operations()
                  if op.name.startswith("tower_1/") and op.type == "MatMul"]
    assert tower1_ops and all("CPU:2" in op.device.upper() for op in tower1_ops)
    for variable in tf.global_variables():
        assert "CPU:0" in variable.op.device.upper(), (variable.op.name, variable.op.device)
    assert wrapper.variable_device == "/cpu:0"


def test_gpu_device_strings_run_with_soft_placement(make_session):
    wrapper = MultiGpuModel(toys.Linear, devices=["/gpu:0", "/gpu:1"], variable_device="/gpu:0")
    session = make_session()
    session.run(tf.global_variables_initializer())
    loss_before = session.run(wrapper.loss, wrapper.feed_dict(wrapper.split(toys.make_batch(4))))
    for _ in range(5):
        session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(toys.make_batch(4))))
    assert session.run(wrapper.loss, wrapper.feed_dict(wrapper.split(toys.make_batch(4)))) < loss_before


@pytest.mark.parametrize("restore_towers", [None, 4])
def test_checkpoint_moves_between_tower_counts(make_session, tmp_path, restore_towers):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    session = make_session()
    session.run(tf.global_variables_initializer())
    for seed in range(3):
        session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(toys.make_batch(4, seed))))
    saved = read_values(session)
    path = tf.train.Saver().save(session, str(tmp_path / "model.ckpt"))

    graph = tf.Graph()
    with graph.as_default():
        if restore_towers is None:
            toys.Linear()  # the plain model, as single-device inference builds it
            restore_list = tf.global_variables()
        else:
            MultiGpuModel(toys.Linear, devices=cpu_devices(restore_towers))
            restore_list = tf.global_variables()  # includes Adam slots and global_step
        session = make_session(graph)
        tf.train.Saver(restore_list).restore(session, path)
        restored = read_values(session, restore_list)
    assert set(restored) <= set(saved) and {"w", "b"} <= set(restored)
    for name, value in restored.items():
        np.testing.assert_array_equal(value, saved[name])
    assert not np.allclose(restored["w"], toys.initial_weights()[0])


def test_clipping_and_learning_rate_schedule(make_session):
    schedule = lambda step: tf.train.GradientDescentOptimizer(  # noqa: E731
        tf.train.exponential_decay(LR, step, decay_steps=1, decay_rate=0.5))
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2), optimizer=schedule, clip_norm=1e-3)
    session = make_session()
    session.run(tf.global_variables_initializer())
    for expected_lr in (LR, LR / 2):
        before = read_values(session)
        norm, _ = session.run([wrapper.gradient_norm, wrapper.objective],
                              wrapper.feed_dict(wrapper.split(toys.make_batch(4))))
        after = read_values(session)
        moved = np.sqrt(sum(np.sum((after[n] - before[n]) ** 2) for n in ("w", "b")))
        assert norm > 1e-3
        np.testing.assert_allclose(moved, expected_lr * 1e-3, rtol=1e-3)
    assert isinstance(session.run(wrapper.summary_op, wrapper.feed_dict(
        wrapper.split(toys.make_batch(4)))), bytes)


def test_nonfinite_loss_stops_step_before_any_change(make_session):
    wrapper = MultiGpuModel(toys.WithMovingMean, devices=cpu_devices(2), optimizer=sgd())
    session = make_session()
    session.run(tf.global_variables_initializer())
    batch = toys.make_batch(4)
    batch["y"][3, 0] = np.nan
    assert_step_refused_changing_nothing(session, wrapper.objective,
                                         wrapper.feed_dict(wrapper.split(batch)))


@pytest.mark.parametrize("make, message", [
    (lambda w: w.feed_dict(w.split(toys.make_batch(4))[:1]), "got 1 shard.*for 2 tower"),
    (lambda w: w.split(toys.make_batch(1)), "size 1 is smaller than the 2 towers: every tower"),
    (lambda w: w.feed_dict([dict(x=np.ones((2, 3)), y=np.ones((1, 2)))] * 2), "disagree.*x=2.*y=1"),
    (lambda w: w.feed_dict(toys.make_batch(4)), "list of shards"),
])
def test_bad_feeding_gives_clear_errors(make, message):
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    with pytest.raises((ValueError, TypeError), match=message):
        make(wrapper)


@pytest.mark.parametrize("model, message", [
    (toys.NoLoss, "has no `loss`"), (toys.VectorLoss, "must be a scalar")])
def test_bad_models_give_clear_errors(model, message):
    with pytest.raises((TypeError, ValueError), match=message):
        MultiGpuModel(model, devices=cpu_devices(2))


def test_subclass_with_model_cls_builds_it_with_the_model_kwargs(make_session):
    class MultiGpuLinear(MultiGpuModel):
        model_cls = toys.Linear

    batch = toys.make_batch(6)
    expected, [(expected_loss, _)] = plain_run(toys.Linear, [batch], make_session, sgd, scale=2.0)
    _, [(unscaled_loss, _)] = plain_run(toys.Linear, [batch], make_session, sgd)
    assert abs(expected_loss - unscaled_loss) > 0.1 * unscaled_loss  # scale=2.0 shows
    wrapper = MultiGpuLinear(devices=cpu_devices(2), optimizer=sgd(), scale=2.0)
    assert wrapper.model_cls is toys.Linear and wrapper.n_towers == 2
    assert [type(model) for model in wrapper.models] == [toys.Linear, toys.Linear]
    session = make_session()
    session.run(tf.global_variables_initializer())
    feed = wrapper.feed_dict(wrapper.split(batch))
    _, loss = session.run([wrapper.objective, wrapper.loss], feed)
    # Every tower was built with scale=2.0: the loss and the step are those of that model.
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    assert_same_variables(session, expected, ["w", "b"])


def test_gradient_processors_see_the_averaged_gradients(make_session):
    seen = []

    def double(grads_and_vars):
        seen.append([v.op.name for _, v in grads_and_vars])
        return [(2.0 * g, v) for g, v in grads_and_vars]

    batch = toys.make_batch(6)
    expected, _, _ = plain_step(toys.Linear, batch, make_session)
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2), optimizer=sgd(),
                            gradient_processors=[double])
    session = make_session()
    session.run(tf.global_variables_initializer())
    start = read_values(session)
    session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(batch)))
    got = read_values(session)
    assert seen == [["w", "b"]]
    for name in ("w", "b"):
        np.testing.assert_allclose(got[name] - start[name], 2 * (expected[name] - start[name]),
                                   rtol=1e-5, atol=1e-6)
