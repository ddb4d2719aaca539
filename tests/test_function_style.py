"""The function style (MultiGpuModel.from_function) and models written with tf.compat.v1.layers.

The model under test is the seed question's own: an MNIST-shaped ``user_model`` of two
``tf.layers.dense`` under ``tf.variable_scope("user_model", reuse=tf.AUTO_REUSE)`` and its
``my_loss``. Both styles must equal the plain model trained on the whole batch.
"""
import numpy as np
import pytest

from assertions import plain_run, read_values
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import VARIABLE_OP_TYPES, cpu_devices

N_PIXELS, N_HIDDEN, N_CLASSES = 784, 32, 10
LR = 0.5


def user_model(inputs, scope="user_model"):
    """The seed's single-GPU model (hidden width cut from 128 to keep the tests quick)."""
    with tf.variable_scope(scope, reuse=tf.AUTO_REUSE):
        hidden = tf.layers.dense(inputs, N_HIDDEN, activation=tf.nn.relu)
        return tf.layers.dense(hidden, N_CLASSES)


def my_loss(logits, labels):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))


class SeedModel(object):
    """The same model in the class style: placeholders, feed_dict and the shard's size."""

    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, N_PIXELS], name="x")
        self.y = tf.placeholder(tf.int64, [None], name="y")
        self.predict = user_model(self.x)
        self.loss = my_loss(self.predict, self.y)
        self.batch_size = tf.shape(self.x)[0]

    def feed_dict(self, batch):
        return {self.x: batch["x"], self.y: batch["y"]}


def mnist_batch(n, seed):
    rng = np.random.RandomState(seed)
    return dict(x=rng.rand(n, N_PIXELS).astype(np.float32),
                y=rng.randint(0, N_CLASSES, size=n).astype(np.int64))


def sgd():
    return tf.train.GradientDescentOptimizer(LR)


def trainable_values(session):
    return read_values(session, tf.trainable_variables())


def build(style, n_towers):
    """The seed model on ``n_towers`` towers, and a function batch -> feed_dict."""
    if style == "function":
        x = tf.placeholder(tf.float32, [None, N_PIXELS], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        wrapper = MultiGpuModel.from_function(user_model, my_loss, x, y,
                                              devices=cpu_devices(n_towers), optimizer=sgd())
        return wrapper, lambda batch: {x: batch["x"], y: batch["y"]}
    wrapper = MultiGpuModel(SeedModel, devices=cpu_devices(n_towers), optimizer=sgd())
    return wrapper, lambda batch: wrapper.feed_dict(wrapper.split(batch))


@pytest.mark.parametrize("style", ["function", "class"])
@pytest.mark.parametrize("n_towers, batch_size", [(2, 7), (3, 8)])
def test_seed_model_equals_plain_model_on_the_whole_batch(make_session, style, n_towers,
                                                          batch_size):
    wrapper, feed = build(style, n_towers)
    assert sorted(v.op.name for v in tf.trainable_variables()) == [
        "user_model/dense/bias", "user_model/dense/kernel",
        "user_model/dense_1/bias", "user_model/dense_1/kernel"]
    session = make_session()
    session.run(tf.global_variables_initializer())
    start = trainable_values(session)
    batches = [mnist_batch(batch_size, seed) for seed in (1, 2)]
    expected_end, expected = plain_run(SeedModel, batches, make_session, sgd, start=start,
                                       fetch=lambda model: (model.loss, model.predict))
    for batch, (plain_loss, plain_logits) in zip(batches, expected):
        if style == "function":
            # Whole-batch predictions in batch order; only the inputs need feeding.
            x = [k for k in feed(batch) if k.dtype == tf.float32][0]
            logits = session.run(wrapper.predict, {x: batch["x"]})
            np.testing.assert_allclose(logits, plain_logits, rtol=1e-5, atol=1e-5)
        loss, _ = session.run([wrapper.loss, wrapper.objective], feed(batch))
        np.testing.assert_allclose(loss, plain_loss, rtol=1e-5)
    got = trainable_values(session)
    for name, value in expected_end.items():
        # atol 1e-5: oneDNN's kernels (on by default on Intel CPUs) sum in another order.
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
        assert not np.allclose(value, start[name]), "the step changed nothing: %s" % name
    assert session.run(wrapper.global_step) == 2


def test_shards_differ_by_at_most_one_first_ones_larger(make_session):
    wrapper, feed = build("function", 3)
    session = make_session()
    session.run(tf.global_variables_initializer())
    sizes = session.run([m.batch_size for m in wrapper.models], feed(mnist_batch(8, 0)))
    assert list(sizes) == [3, 3, 2]
    sizes = session.run([m.batch_size for m in wrapper.models], feed(mnist_batch(3, 0)))
    assert list(sizes) == [1, 1, 1]


def test_auto_named_layers_are_shared_and_later_towers_create_no_variable():
    def model_fn(inputs):  # no variable scope of its own: the wrapper's scope is all there is
        hidden = tf.layers.dense(inputs, 4, activation=tf.nn.relu)
        return tf.layers.dense(hidden, 2)

    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.int64, [None])
    MultiGpuModel.from_function(model_fn, my_loss, x, y, devices=cpu_devices(3))
    assert sorted(v.op.name for v in tf.trainable_variables()) == [
        "dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]
    variable_ops = [op.name for op in tf.get_default_graph().get_operations()
                    if op.type in VARIABLE_OP_TYPES]
    assert variable_ops and not [name for name in variable_ops if name.startswith("tower_")]


def test_the_seeds_scope_bug_is_refused():
    """The seed passed each tower's name scope as the variable scope: N separate models."""
    def seed_tower(inputs):
        name_scope = tf.get_default_graph().get_name_scope() or "tower_0"
        return user_model(inputs, scope=name_scope)

    x = tf.placeholder(tf.float32, [None, N_PIXELS])
    y = tf.placeholder(tf.int64, [None])
    with pytest.raises(ValueError, match=r"variables were not shared: tower 1 created 4 new "
                                         r"trainable.*tower_1/dense/kernel"):
        MultiGpuModel.from_function(seed_tower, my_loss, x, y, devices=cpu_devices(2))


def test_batch_norm_updates_run_once_from_tower_zero(make_session):
    momentum = 0.5
    training = tf.placeholder_with_default(True, [])

    def model_fn(inputs):
        normalized = tf.layers.batch_normalization(inputs, momentum=momentum, training=training)
        return tf.layers.dense(normalized, N_CLASSES)

    x = tf.placeholder(tf.float32, [None, 5])
    y = tf.placeholder(tf.int64, [None])
    wrapper = MultiGpuModel.from_function(model_fn, my_loss, x, y, devices=cpu_devices(2),
                                          optimizer=sgd())
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 2
    moving_mean, = [v for v in tf.global_variables() if v.op.name.endswith("moving_mean")]
    session = make_session()
    session.run(tf.global_variables_initializer())
    expected = np.zeros(5)
    for seed in range(3):
        rng = np.random.RandomState(seed)
        batch_x, batch_y = rng.randn(7, 5).astype(np.float32) + 3, rng.randint(0, 10, 7)
        session.run(wrapper.objective, {x: batch_x, y: batch_y})
        expected = momentum * expected + (1 - momentum) * batch_x[:4].mean(axis=0)  # tower 0: 4 of 7
    np.testing.assert_allclose(session.run(moving_mean), expected, rtol=1e-5)
    session.run(wrapper.predict, {x: batch_x, training: False})  # inference reads only inputs


def test_checkpoint_restores_into_the_plain_model(make_session, tmp_path):
    x = tf.placeholder(tf.float32, [None, N_PIXELS])
    y = tf.placeholder(tf.int64, [None])
    wrapper = MultiGpuModel.from_function(user_model, my_loss, x, y, devices=cpu_devices(3))
    session = make_session()
    session.run(tf.global_variables_initializer())
    for seed in range(2):
        batch = mnist_batch(10, seed)
        session.run(wrapper.objective, {x: batch["x"], y: batch["y"]})
    test_x = mnist_batch(11, 9)["x"]
    logits = session.run(wrapper.predict, {x: test_x})
    path = tf.train.Saver().save(session, str(tmp_path / "model.ckpt"))

    graph = tf.Graph()
    with graph.as_default():
        plain = SeedModel()
        restored = make_session(graph)
        tf.train.Saver(tf.global_variables()).restore(restored, path)
        np.testing.assert_allclose(restored.run(plain.predict, {plain.x: test_x}), logits,
                                   rtol=1e-5, atol=1e-5)


def test_tf_data_element_with_dict_inputs(make_session):
    rng = np.random.RandomState(4)
    images = rng.rand(10, 6).astype(np.float32)
    offsets = rng.rand(10, 1).astype(np.float32)
    labels = rng.randint(0, 3, size=10).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices(
        ({"image": images, "offset": offsets}, labels)).batch(5)
    features, label_batch = tf.data.make_one_shot_iterator(dataset).get_next()

    def model_fn(inputs):
        return tf.layers.dense(inputs["image"] + inputs["offset"], 3)

    wrapper = MultiGpuModel.from_function(model_fn, my_loss, features, label_batch,
                                          devices=cpu_devices(2))
    session = make_session()
    session.run(tf.global_variables_initializer())
    # One run: the whole-batch logits, the labels and the wrapper's loss of the same batch.
    logits, batch_labels, loss = session.run([wrapper.predict, label_batch, wrapper.loss])
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(loss, -log_probs[np.arange(5), batch_labels].mean(), rtol=1e-5)
    np.testing.assert_array_equal(batch_labels, labels[:5])
    session.run(wrapper.objective)  # the second batch, no feed
    assert session.run(wrapper.global_step) == 1


def test_run_time_errors_are_clear(make_session):
    x = tf.placeholder(tf.float32, [None, N_PIXELS])
    y = tf.placeholder(tf.int64, [None])
    wrapper = MultiGpuModel.from_function(user_model, my_loss, x, y, devices=cpu_devices(3))
    session = make_session()
    session.run(tf.global_variables_initializer())
    batch = mnist_batch(4, 0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"fewer examples .* than there are towers \(3\).*at least 3"):
        session.run(wrapper.objective, {x: batch["x"][:2], y: batch["y"][:2]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"labels and inputs disagree"):
        session.run(wrapper.loss, {x: batch["x"], y: batch["y"][:3]})
    with pytest.raises(TypeError, match="whole-batch tensors"):
        wrapper.feed_dict(wrapper.split(batch))


@pytest.mark.parametrize("model_fn, loss_fn, message", [
    (user_model, lambda logits, labels: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), "loss_fn returned a tensor of shape"),
    (lambda inputs: None, my_loss, "model_fn returned None"),
    (lambda inputs: (user_model(inputs), tf.reduce_mean(inputs)),
     lambda outputs, labels: my_loss(outputs[0], labels), "model_fn returned a scalar"),
])
def test_bad_functions_give_clear_errors(model_fn, loss_fn, message):
    x = tf.placeholder(tf.float32, [None, N_PIXELS])
    y = tf.placeholder(tf.int64, [None])
    with pytest.raises(ValueError, match=message):
        MultiGpuModel.from_function(model_fn, loss_fn, x, y, devices=cpu_devices(2))


def test_scalar_inputs_are_refused():
    with pytest.raises(ValueError, match=r"labels is a scalar.*example axis"):
        MultiGpuModel.from_function(user_model, my_loss, tf.placeholder(tf.float32, [None, 4]),
                                    tf.constant(1), devices=cpu_devices(2))
