"""Placement strategies: every invariant of the wrapper holds under each of them.

Each strategy is compared with the plain single-device model on the whole batch, over 3
virtual CPU towers with uneven shards (4, 3, 1 examples).
"""
import logging

import numpy as np
import pytest

import toy_models as toys
from assertions import assert_step_refused_changing_nothing, copies, plain_run, read_values, start
from crnn_multigpu import MultiGpuModel, ParameterServer, Replicated, SpreadParameterServer
from crnn_multigpu.wrapper import gradients as grad_ops
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.strategies import balance_largest_first

STRATEGIES = {
    "ps": lambda: ParameterServer(),
    "ps-packed": lambda: ParameterServer(num_packs=2),
    "ps-towers": lambda: SpreadParameterServer(),
    "ps-towers-packed": lambda: SpreadParameterServer(num_packs=1),
    "replicated": lambda: Replicated(all_reduce="ring"),
    "replicated-packed": lambda: Replicated(num_packs=2),  # auto: the ring on CPUs
}
SHARDS = [4, 3, 1]
LR = 0.1


def shards_of(batch, sizes=SHARDS):
    bounds = np.cumsum([0] + list(sizes))
    return [{k: v[a:b] for k, v in batch.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def build(model_cls, name, optimizer, n_towers=3):
    return MultiGpuModel(model_cls, devices=cpu_devices(n_towers), optimizer=optimizer(),
                         strategy=STRATEGIES[name]())


def assert_steps_equal_plain_run(wrapper, session, model_cls, batches, make_session,
                                  optimizer):
    """One step per batch over the towers (shards of SHARDS) gives the plain model's loss before
    each step and, on every tower's copy, its variables after the last."""
    expected, before = plain_run(model_cls, batches, make_session, optimizer)
    for batch, (expected_loss, _) in zip(batches, before):
        _, loss = session.run([wrapper.objective, wrapper.loss],
                              wrapper.feed_dict(shards_of(batch)))
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    for tower in copies(wrapper, session):
        assert sorted(tower) == sorted(v.op.name for v in tf.trainable_variables())
        for name, value in tower.items():
            np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-6,
                                       err_msg=name)


def sgd():
    return tf.train.GradientDescentOptimizer(LR)


def adam():
    return tf.train.AdamOptimizer(0.05)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_steps_equal_the_plain_model_and_every_copy_agrees(make_session, name):
    batches = [toys.make_batch(sum(SHARDS), seed=s) for s in range(3)]
    expected, _ = plain_run(toys.Linear, batches, make_session, adam)
    wrapper = build(toys.Linear, name, adam)
    session = start(wrapper, make_session)
    losses = []
    for batch in batches:
        losses.append(session.run([wrapper.objective, wrapper.loss],
                                  wrapper.feed_dict(shards_of(batch)))[1])
    for tower in copies(wrapper, session):
        for variable in ("w", "b"):
            np.testing.assert_allclose(tower[variable], expected[variable], rtol=1e-5, atol=1e-6)
    # The reported loss is the example-weighted mean, the plain model's whole-batch loss.
    model = wrapper.models[0]
    np.testing.assert_allclose(
        session.run(wrapper.loss, wrapper.feed_dict(shards_of(batches[0]))),
        session.run(model.loss, model.feed_dict(batches[0])), rtol=1e-5)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_sparse_gradients_stay_sparse_and_exact(make_session, name):
    batch = toys.make_id_batch(sum(SHARDS))
    expected, _ = plain_run(toys.Embedding, [batch], make_session, sgd)
    wrapper = build(toys.Embedding, name, sgd)
    (grad, _), = wrapper.grads_and_vars
    assert isinstance(grad, tf.IndexedSlices), "the combined embedding gradient was densified"
    graph_ops = tf.get_default_graph().get_operations()
    sparse_updates = [op for op in graph_ops if op.type in (
        "ScatterSub", "ScatterAdd", "ResourceScatterAdd", "ResourceScatterSub")]
    n_copies = wrapper.n_towers if isinstance(wrapper.strategy, Replicated) else 1
    assert len(sparse_updates) == n_copies, [op.name for op in sparse_updates]
    session = start(wrapper, make_session)
    before = session.run(wrapper.variables[0])
    session.run(wrapper.objective, wrapper.feed_dict(shards_of(batch)))
    untouched = np.setdiff1d(np.arange(toys.VOCAB), batch["ids"])
    for tower in copies(wrapper, session):
        np.testing.assert_allclose(tower["table"], expected["table"], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(tower["table"][untouched], before[untouched])


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_update_ops_run_once_per_step(make_session, name):
    wrapper = build(toys.WithMovingMean, name, sgd)
    session = start(wrapper, make_session)
    momentum, expected = toys.WithMovingMean.momentum, np.zeros(toys.IN_DIM)
    for seed in range(3):
        shards = shards_of(toys.make_batch(sum(SHARDS), seed=seed))
        session.run(wrapper.objective, wrapper.feed_dict(shards))
        expected -= (1 - momentum) * (expected - shards[0]["x"].mean(axis=0))
    named = dict((v.op.name, v) for v in tf.global_variables())
    assert [n for n in named if "updates_run" in n or "moving_mean" in n] == \
        ["moving_mean", "updates_run"], "moving statistics must not be replicated"
    assert session.run(named["updates_run"]) == 3
    np.testing.assert_allclose(session.run(named["moving_mean"]), expected, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_nonfinite_step_changes_nothing(make_session, name):
    wrapper = build(toys.WithMovingMean, name, adam)
    session = start(wrapper, make_session)
    batch = toys.make_batch(sum(SHARDS))
    batch["y"][7, 0] = np.nan  # in the last, one-example shard
    assert_step_refused_changing_nothing(session, wrapper.objective,
                                         wrapper.feed_dict(shards_of(batch)))


@pytest.mark.parametrize("source", ["ps", "ps-towers", "replicated"])
def test_checkpoints_hold_plain_names_and_restore_anywhere(make_session, tmp_path, source):
    wrapper = build(toys.WithMovingMean, source, adam)
    session = start(wrapper, make_session)
    for seed in range(2):
        session.run(wrapper.objective, wrapper.feed_dict(shards_of(toys.make_batch(8, seed))))
    saved = read_values(session, wrapper.savable_variables)
    assert {"w", "b", "moving_mean", "global_step", "w/Adam", "w/Adam_1"} <= set(saved)
    assert not [n for n in saved if "replica" in n or "tower" in n], sorted(saved)
    path = tf.train.Saver(var_list=wrapper.savable_variables).save(
        session, str(tmp_path / "model.ckpt"))

    def restore_into(make_wrapper):
        graph = tf.Graph()
        with graph.as_default():
            restored = make_wrapper()
            variables = restored.savable_variables if restored is not None \
                else tf.global_variables()
            session = make_session(graph)
            session.run(tf.global_variables_initializer())  # replicas start elsewhere
            tf.train.Saver(var_list=variables).restore(session, path)
            if restored is not None:
                session.run(restored.post_init_op)
                for tower in copies(restored, session):
                    for variable in ("w", "b"):
                        np.testing.assert_array_equal(tower[variable], saved[variable])
            for variable in variables:
                np.testing.assert_array_equal(session.run(variable), saved[variable.op.name])

    restore_into(lambda: toys.WithMovingMean() and None)  # the plain model
    for target in ("ps", "ps-towers", "replicated"):
        for n_towers in (2, 4):
            restore_into(lambda: MultiGpuModel(toys.WithMovingMean, devices=cpu_devices(n_towers),
                                               optimizer=adam(), strategy=STRATEGIES[target]()))


def test_savable_variables_leave_replicas_out(make_session):
    wrapper = build(toys.Linear, "replicated", adam)
    names = sorted(v.op.name for v in wrapper.savable_variables)
    assert names == sorted(["w", "b", "w/Adam", "w/Adam_1", "b/Adam", "b/Adam_1", "beta1_power",
                            "beta2_power", "global_step"])
    assert sorted(v.op.name for v in wrapper.variables) == ["b", "w"]
    assert sorted(v.op.name for v in tf.trainable_variables()) == ["b", "w"]
    replicas = [v.op.name for v in tf.global_variables() if v.op.name.startswith("replica_")]
    assert sorted(replicas) == sorted("replica_%d/%s%s" % (i, n, s) for i in (1, 2)
                                      for n in ("w", "b") for s in ("", "/Adam", "/Adam_1"))


def test_replicas_live_on_their_towers_and_plain_names_on_tower_zero():
    wrapper = build(toys.Linear, "replicated", sgd)
    for index, device in enumerate(wrapper.devices):
        for variable in wrapper.strategy.tower_variables(index, wrapper.variables):
            assert tf.DeviceSpec.from_string(variable.device).device_index == index, \
                (variable.op.name, variable.device)


def batch_dependent_term(model, index, name, size):
    """A new variable of ``size`` floats in a term of ``model``'s loss, the mean over the
    examples of ``x[0] * sum(variable * r)``: its gradient is the batch's mean ``x[0]`` times
    a vector ``r`` of its own, so averaging it over the towers has to weigh their examples,
    and no two variables step alike."""
    variable = tf.get_variable(name, initializer=tf.zeros([size]))
    own = np.random.RandomState(index).uniform(0.5, 1.5, size).astype(np.float32)
    return tf.reduce_mean(model.x[:, 0]) * tf.reduce_sum(variable * own)


class ThreeSizes(toys.Linear):
    """Variables of 4000, 3000, 2000 and 1000 floats beside w and b, all in the loss."""

    def __init__(self):
        toys.Linear.__init__(self)
        for index, (name, size) in enumerate((("big", 4000), ("large", 3000), ("medium", 2000),
                                              ("small", 1000))):
            self.loss += batch_dependent_term(self, index, name, size)


def test_spread_parameter_server_balances_bytes_over_the_towers(make_session):
    wrapper = build(ThreeSizes, "ps-towers", sgd)
    placed = dict((v.op.name, tf.DeviceSpec.from_string(v.device).device_index)
                  for v in tf.global_variables() if v.op.name != "global_step")
    assert set(placed.values()) == {0, 1, 2}, placed
    loads = [0, 0, 0]
    for variable in tf.global_variables():
        if variable.op.name != "global_step":
            loads[placed[variable.op.name]] += variable.shape.num_elements()
    assert max(loads) <= 4000 + 8, loads  # greedy: nothing piles onto one device
    # Each gradient is averaged where its variable lives.
    for grad, variable in wrapper.grads_and_vars:
        assert tf.DeviceSpec.from_string(grad.device).device_index == placed[variable.op.name], \
            (variable.op.name, grad.device, variable.device)
    # Spread over the towers, every variable still takes the plain model's steps.
    assert_steps_equal_plain_run(wrapper, start(wrapper, make_session), ThreeSizes,
                                 [toys.make_batch(8, seed) for seed in range(2)], make_session,
                                 sgd)


class SmallestFirst(toys.Linear):
    """Beside w (24 bytes) and b (8), three variables of 4000 bytes, then two of 12000.

    Placed as created, each on the least loaded of 3 devices, the two large ones land on
    devices already holding small ones: loads 4024, 16008, 16000 bytes. Largest first:
    12024, 12008, 12000.
    """

    SIZES = (("small_1", 1000), ("small_2", 1000), ("small_3", 1000),
             ("large_1", 3000), ("large_2", 3000))

    def __init__(self, scale=1.0):
        toys.Linear.__init__(self, scale=scale)
        for index, (name, size) in enumerate(self.SIZES):
            self.loss += batch_dependent_term(self, index, name, size)


def device_loads(wrapper):
    """{variable name: tower index} and the bytes per tower of a spread parameter server."""
    placed = dict((v.op.name, tf.DeviceSpec.from_string(v.device).device_index)
                  for v in wrapper.model_variables)
    loads = [0] * wrapper.n_towers
    for variable in wrapper.model_variables:
        loads[placed[variable.op.name]] += variable.shape.num_elements() * variable.dtype.size
    return placed, loads


def test_spread_parameter_server_places_the_largest_variables_first(make_session, caplog):
    with caplog.at_level(logging.WARNING):
        wrapper = build(SmallestFirst, "ps-towers", sgd)
    assert "scratch" not in caplog.text
    placed, loads = device_loads(wrapper)
    assert placed == {"large_1": 0, "large_2": 1, "small_1": 2, "small_2": 2, "small_3": 2,
                      "w": 0, "b": 1}
    assert loads == [12024, 12008, 12000]
    # Placed in another order than created, the variables still take the plain model's steps.
    assert_steps_equal_plain_run(wrapper, start(wrapper, make_session), SmallestFirst,
                                 [toys.make_batch(8, seed) for seed in range(2)], make_session,
                                 sgd)


def test_spread_falls_back_to_creation_order_when_the_scratch_build_fails(caplog):
    # A tensor of the caller's graph as a model argument cannot enter the scratch graph.
    with caplog.at_level(logging.WARNING):
        wrapper = MultiGpuModel(SmallestFirst, devices=cpu_devices(3), optimizer=sgd(),
                                strategy=SpreadParameterServer(), scale=tf.constant(1.0))
    assert "could not build tower 0 in a scratch graph" in caplog.text
    placed, loads = device_loads(wrapper)
    assert loads == [4024, 16008, 16000]  # as created: worse than largest first
    assert placed["large_1"] == 2 and placed["large_2"] == 1


@pytest.mark.parametrize("sizes, n_devices, expected", [
    ([1, 1, 2], 2, [1, 1, 0]),            # as created it would be [0, 1, 0]: loads 3 and 1
    ([5, 5, 5], 3, [0, 1, 2]),            # equal sizes keep their order
    ([3, 3, 2, 2, 2], 2, [0, 1, 0, 1, 0]),  # Graham's worst case: 7 where 6 is possible
    ([], 2, []),
])
def test_balance_largest_first(sizes, n_devices, expected):
    assert balance_largest_first(sizes, n_devices) == expected


def test_nccl_on_cpu_towers_is_refused_naming_the_ring():
    with pytest.raises(ValueError, match=r"nccl.*/cpu:0.*NCCL has no CPU kernel.*all_reduce='ring'"):
        MultiGpuModel(toys.Linear, devices=cpu_devices(2), strategy=Replicated(all_reduce="nccl"))


def test_nccl_graph_is_built_on_gpu_towers():
    """No GPU here: the graph is only built; NCCL's reductions sit on the GPUs."""
    wrapper = MultiGpuModel(toys.Linear, devices=["/gpu:0", "/gpu:1"],
                            strategy=Replicated(num_packs=1))
    assert wrapper.strategy.method == "nccl"
    nccl = [op for op in tf.get_default_graph().get_operations() if op.type == "NcclAllReduce"]
    assert sorted(tf.DeviceSpec.from_string(op.device).device_index for op in nccl) == [0, 1]


@pytest.mark.parametrize("make, message", [
    (lambda: Replicated(all_reduce="mpi"), "all_reduce must be one of"),
    (lambda: Replicated(num_packs=-1), "num_packs must be a whole number"),
    (lambda: ParameterServer(device=3), "device string"),
    (lambda: MultiGpuModel(toys.Linear, devices=cpu_devices(2), variable_device="/cpu:1",
                           strategy=Replicated()), "ParameterServer\\(device='/cpu:1'\\)"),
    (lambda: MultiGpuModel(toys.Linear, devices=cpu_devices(2), strategy="replicated"),
     "strategy must be"),
])
def test_bad_strategy_arguments_give_clear_errors(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_packing_round_trips_and_leaves_sparse_alone(make_session):
    grads = [tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3)),
             tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0]), tf.constant([4, 2])),
             tf.constant(np.float32(7)), tf.constant(np.arange(5, dtype=np.float32))]
    packing = grad_ops.Packing(grads, 2)
    assert packing.members == [0, 2, 3] and packing.pack_sizes == [6, 6]
    packs = packing.pack(grads)
    back = packing.unpack(packs, grads)
    assert back[1] is grads[1]
    session = make_session()
    for original, restored in zip(session.run([grads[i] for i in (0, 2, 3)]),
                                  session.run([back[i] for i in (0, 2, 3)])):
        np.testing.assert_array_equal(original, restored)


def test_ring_all_reduce_gives_every_device_the_sum(make_session):
    devices = cpu_devices(3)
    values = [np.random.RandomState(i).randn(5, 2).astype(np.float32) for i in range(3)]
    summed = grad_ops.ring_all_reduce([tf.constant(v) for v in values], devices)
    assert [tf.DeviceSpec.from_string(t.device).device_index for t in summed] == [0, 1, 2]
    results = make_session().run(summed)
    for result in results:
        np.testing.assert_allclose(result, sum(values), rtol=1e-6)
        np.testing.assert_array_equal(result, results[0])  # bitwise equal copies


@pytest.mark.parametrize("name", ["ps-towers", "replicated-packed"])
def test_function_style_under_a_strategy(make_session, name):
    batch = toys.make_batch(8)
    expected, _ = plain_run(toys.Linear, [batch], make_session, sgd)
    x = tf.placeholder(tf.float32, [None, toys.IN_DIM])
    y = tf.placeholder(tf.float32, [None, toys.OUT_DIM])

    def model_fn(inputs):
        kernel, bias = toys.initial_weights()
        return tf.matmul(inputs, tf.get_variable("w", initializer=kernel)) + \
            tf.get_variable("b", initializer=bias)

    def loss_fn(outputs, labels):
        return tf.reduce_mean(tf.reduce_sum(tf.square(outputs - labels), axis=1))

    wrapper = MultiGpuModel.from_function(model_fn, loss_fn, x, y, devices=cpu_devices(3),
                                          optimizer=sgd(), strategy=STRATEGIES[name]())
    session = start(wrapper, make_session)
    session.run(wrapper.objective, {x: batch["x"], y: batch["y"]})
    for tower in copies(wrapper, session):
        for variable in ("w", "b"):
            np.testing.assert_allclose(tower[variable], expected[variable], rtol=1e-5, atol=1e-6)


def test_ring_all_reduce_of_tensors_of_unknown_shape(make_session):
    devices = cpu_devices(2)
    inputs = [tf.placeholder(tf.float32, [None]) for _ in devices]
    summed = grad_ops.ring_all_reduce(inputs, devices)
    results = make_session().run(summed, {inputs[0]: [1.0, 2.0], inputs[1]: [10.0, 20.0]})
    for result in results:
        np.testing.assert_array_equal(result, [11.0, 22.0])
