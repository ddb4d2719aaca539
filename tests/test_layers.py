import numpy as np
import pytest

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper import layers


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_conv_and_pool_shapes(graph):
    x = tf.placeholder(tf.float32, [None, 8, None, 3])
    a = layers.conv2d(x, 5, name="a")
    b = layers.conv2d(x, 6, strides=(2, 2), name="b")
    c = layers.conv2d(tf.zeros([2, 2, 6, 3]), 7, kernel=(2, 1), padding="VALID",
                      use_bias=False, name="c")
    p = layers.max_pool(a)
    q = layers.max_pool(a, (2, 1))
    assert a.shape.as_list() == [None, 8, None, 5]
    assert c.shape.as_list() == [2, 1, 6, 7]
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["a/bias", "a/kernel", "b/bias", "b/kernel", "c/kernel"]
    feed = {x: np.random.RandomState(0).rand(2, 8, 12, 3)}
    va, vb, vp, vq = _run([a, b, p, q], feed)
    assert va.shape == (2, 8, 12, 5)
    assert vb.shape == (2, 4, 6, 6)
    assert vp.shape == (2, 4, 6, 5)
    assert vq.shape == (2, 4, 12, 5)
    np.testing.assert_allclose(vq[:, 0], np.maximum(va[:, 0], va[:, 1]))


def test_dense_rank3_matches_matmul(graph):
    x = tf.placeholder(tf.float32, [None, None, 4])
    y = layers.dense(x, 3, name="d")
    assert y.shape.as_list() == [None, None, 3]
    xv = np.random.RandomState(1).rand(5, 2, 4).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(tf.global_variables("d/bias")[0], [1.0, 2.0, 3.0]))
        yv, w, b = sess.run([y] + tf.global_variables("d/"), {x: xv})
    np.testing.assert_allclose(yv, xv @ w + b, rtol=1e-5, atol=1e-5)


def test_batch_norm_training_inference_and_update(graph):
    rng = np.random.RandomState(0)
    xv = (rng.randn(16, 4, 5, 3) * [1.0, 2.0, 0.5] + [3.0, -1.0, 0.2]).astype(np.float32)
    x = tf.constant(xv)
    training = tf.placeholder_with_default(False, [])
    y = layers.batch_norm(x, training, momentum=0.9, name="bn")
    mm, mv = tf.global_variables("bn/moving_mean")[0], tf.global_variables("bn/moving_variance")[0]
    trainable = sorted(v.op.name for v in tf.trainable_variables())
    assert trainable == ["bn/beta", "bn/gamma"]
    assert {v.op.name for v in tf.global_variables()} == {
        "bn/beta", "bn/gamma", "bn/moving_mean", "bn/moving_variance"}
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    batch_mean, batch_var = xv.mean(axis=(0, 1, 2)), xv.var(axis=(0, 1, 2))
    old_mean = np.array([1.0, 2.0, -3.0], np.float32)
    old_var = np.array([0.5, 4.0, 2.0], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        yt = sess.run(y, {training: True})
        np.testing.assert_allclose(yt.mean(axis=(0, 1, 2)), 0.0, atol=1e-4)
        np.testing.assert_allclose(yt.var(axis=(0, 1, 2)), 1.0, atol=1e-3)
        # Running y alone never touched the moving statistics.
        np.testing.assert_allclose(sess.run(mm), 0.0)
        sess.run([tf.assign(mm, old_mean), tf.assign(mv, old_var)])
        yi = sess.run(y)  # default: inference mode, uses the moving stats
        np.testing.assert_allclose(yi, (xv - old_mean) / np.sqrt(old_var + 1e-5),
                                   rtol=1e-4, atol=1e-4)
        sess.run(updates)  # inference mode: the moving statistics stay
        np.testing.assert_array_equal(sess.run([mm, mv]), [old_mean, old_var])
        sess.run(updates, {training: True})
        new_mean, new_var = sess.run([mm, mv])
    np.testing.assert_allclose(new_mean - old_mean, 0.1 * (batch_mean - old_mean),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(new_var - old_var, 0.1 * (batch_var - old_var),
                               rtol=1e-4, atol=1e-5)


FUNCTIONAL_CONDS = {"If", "StatelessIf"}


def test_batch_norm_builds_its_cond_as_graph_ops_and_leaves_the_setting(graph):
    # TF 2's functional cond costs a third of a CRNN's build time; the caller's choice of
    # control flow (v2 on TF 2, v1 on TF 1.15) must be what it was after the build.
    setting = tf.control_flow_v2_enabled()
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    training = tf.placeholder_with_default(False, [])
    y = layers.batch_norm(x, training, name="bn")
    gradient = tf.gradients(tf.reduce_sum(tf.square(y)), x)[0]
    assert tf.control_flow_v2_enabled() == setting
    op_types = {op.type for op in graph.get_operations()}
    assert not op_types & FUNCTIONAL_CONDS, sorted(op_types & FUNCTIONAL_CONDS)
    assert {"Switch", "Merge"} <= op_types
    xv = np.random.RandomState(1).randn(8, 4, 4, 3).astype(np.float32)
    yt, gt = _run([y, gradient], {x: xv, training: True})
    np.testing.assert_allclose(yt.mean(axis=(0, 1, 2)), 0.0, atol=1e-4)
    # sum(y^2) is constant under batch statistics (N per channel): no gradient reaches x.
    np.testing.assert_allclose(gt, 0.0, atol=1e-3)


def test_batch_norm_inside_a_function_graph_computes_the_same(graph):
    # ... and leaves the process's control-flow setting as it was (TF 1.15 reports it on inside
    # a function graph: turning it "back" on there switched v2 on for every later graph).
    setting = tf.control_flow_v2_enabled()
    x = tf.constant(np.random.RandomState(2).randn(8, 4, 4, 3).astype(np.float32))
    training = tf.placeholder_with_default(False, [])
    # Resource variables: TF 1.15's reference variables cannot be updated in a function.
    with tf.variable_scope("", use_resource=True):
        y_outside = layers.batch_norm(x, training, name="bn")
    seen = []

    @tf.function
    def normalise(inputs, flag):
        with tf.variable_scope("", reuse=True, use_resource=True):
            result = layers.batch_norm(inputs, flag, name="bn")
        seen.extend(op.type for op in tf.get_default_graph().get_operations())
        return result

    y_inside = normalise(x, training)
    assert tf.control_flow_v2_enabled() == setting
    assert seen and FUNCTIONAL_CONDS & set(seen), sorted(set(seen))
    for flag in (True, False):
        outside, inside = _run([y_outside, y_inside], {training: flag})
        np.testing.assert_allclose(inside, outside, rtol=1e-5, atol=1e-5)


def _build_all(x_img, x_seq, lengths, training):
    h = layers.conv2d(x_img, 4, name="conv")
    h = layers.batch_norm(h, training, name="bn")
    s = layers.bidirectional_lstm(x_seq, lengths, 3, name="bilstm")
    s = layers.lstm(s, lengths, 2, name="lstm")
    return h, layers.dense(s, 5, name="dense")


def test_reuse_creates_no_new_variables(graph):
    x_img = tf.placeholder(tf.float32, [None, 8, 8, 1])
    x_seq = tf.placeholder(tf.float32, [None, None, 3])
    lengths = tf.placeholder(tf.int32, [None])
    training = tf.placeholder_with_default(False, [])
    with tf.variable_scope("model"):
        _build_all(x_img, x_seq, lengths, training)
    first = [v.op.name for v in tf.global_variables()]
    assert len(first) == 14
    assert all(n.startswith("model/") for n in first)
    with tf.variable_scope("model", reuse=True):
        _build_all(x_img, x_seq, lengths, training)
    assert [v.op.name for v in tf.global_variables()] == first
    # The second build brought its own BN update ops (on the shared variables).
    assert len(tf.get_collection(tf.GraphKeys.UPDATE_OPS)) == 4


def test_lstm_matches_numpy_reference(graph):
    T, B, C, U = 4, 2, 3, 5
    x = tf.placeholder(tf.float32, [None, None, C])
    h = layers.lstm(x, tf.fill([tf.shape(x)[1]], tf.shape(x)[0]), U, name="l")
    rng = np.random.RandomState(1)
    xv = rng.randn(T, B, C).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        b = tf.global_variables("l/bias")[0]
        sess.run(tf.assign(b, rng.randn(4 * U).astype(np.float32)))
        w, bv, hv = sess.run([tf.global_variables("l/kernel")[0], b, h], {x: xv})
    assert w.shape == (C + U, 4 * U)
    hp, cs = np.zeros([B, U]), np.zeros([B, U])
    for t in range(T):
        z = np.concatenate([xv[t], hp], axis=1) @ w + bv
        i, ci, f, o = np.split(z, 4, axis=1)  # fused gate order: i, cs, f, o
        cs = _sigmoid(f + 1.0) * cs + _sigmoid(i) * np.tanh(ci)
        hp = _sigmoid(o) * np.tanh(cs)
        np.testing.assert_allclose(hv[t], hp, rtol=1e-4, atol=1e-5)


def test_bidirectional_lstm_padding_does_not_leak(graph):
    T, C, U = 6, 3, 4
    x = tf.placeholder(tf.float32, [None, None, C])
    lengths = tf.placeholder(tf.int32, [None])
    out = layers.bidirectional_lstm(x, lengths, U, name="bi")
    assert out.shape.as_list() == [None, None, 2 * U]
    rng = np.random.RandomState(2)
    xv = rng.randn(T, 2, C).astype(np.float32)
    xv[4:, 0] = 10.0 * rng.randn(2, C)  # junk right padding of example 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        padded = sess.run(out, {x: xv, lengths: [4, 6]})
        alone = sess.run(out, {x: xv[:4, :1], lengths: [4]})
        no_mask = sess.run(out, {x: xv, lengths: [6, 6]})
    assert padded.shape == (T, 2, 2 * U)
    np.testing.assert_allclose(padded[:4, 0], alone[:, 0], rtol=1e-5, atol=1e-6)
    # Sanity: the junk does reach the backward half if lengths are ignored,
    # so the assertion above really tests reverse_sequence.
    assert np.abs(no_mask[:4, 0, U:] - alone[:, 0, U:]).max() > 1e-3
    np.testing.assert_allclose(no_mask[:4, 0, :U], alone[:, 0, :U], rtol=1e-5, atol=1e-6)


def test_lstm_gradients_exist(graph):
    x = tf.placeholder(tf.float32, [None, None, 3])
    lengths = tf.placeholder(tf.int32, [None])
    out = layers.bidirectional_lstm(x, lengths, 4, name="bi")
    out = layers.bidirectional_lstm(out, lengths, 4, name="bi2")
    loss = tf.reduce_sum(tf.square(out))
    variables = tf.trainable_variables()
    assert len(variables) == 8
    grads = tf.gradients(loss, variables + [x])
    assert all(g is not None for g in grads)
    feed = {x: np.random.RandomState(2).randn(5, 3, 3), lengths: [5, 3, 1]}
    values = _run(grads, feed)
    for v, g in zip(variables + [x], values):
        assert np.all(np.isfinite(g)), v.op.name
        assert np.abs(g).max() > 0, v.op.name
