"""Tiny single-device models that exercise each corner of the tower wrapper."""
import numpy as np

from crnn_multigpu.compat import tf

IN_DIM, OUT_DIM, VOCAB = 3, 2, 50


def initial_weights():
    rng = np.random.RandomState(0)
    return rng.randn(IN_DIM, OUT_DIM).astype(np.float32), rng.randn(OUT_DIM).astype(np.float32)


def make_batch(n, seed=1):
    rng = np.random.RandomState(seed)
    return dict(x=rng.randn(n, IN_DIM).astype(np.float32), y=rng.randn(n, OUT_DIM).astype(np.float32))


class Linear(object):
    """Least squares with a per-example error; variables from get_variable only."""

    def __init__(self, scale=1.0):
        kernel, bias = initial_weights()
        self.x = tf.placeholder(tf.float32, [None, IN_DIM], name="x")
        self.y = tf.placeholder(tf.float32, [None, OUT_DIM], name="y")
        w = tf.get_variable("w", initializer=kernel)
        b = tf.get_variable("b", initializer=bias)
        self.predict = tf.matmul(self.x, w) + b
        residual = (self.predict - self.y) * scale
        self.loss = tf.reduce_mean(tf.reduce_sum(tf.square(residual), axis=1))
        self.error = tf.reduce_mean(tf.reduce_sum(tf.abs(residual), axis=1))
        self.log_prob = -tf.reduce_sum(tf.square(residual), axis=1)
        self.batch_size = tf.shape(self.x)[0]

    def feed_dict(self, batch):
        return {self.x: batch["x"], self.y: batch["y"]}


class LinearWithUnused(Linear):
    """A variable the loss never touches: its gradient is None."""

    def __init__(self):
        Linear.__init__(self)
        self.unused = tf.get_variable("unused", initializer=tf.ones([4]))


class Embedding(object):
    """An embedding table whose gradient is an IndexedSlices."""

    def __init__(self, vocab=VOCAB, dim=OUT_DIM):
        table = np.random.RandomState(2).randn(vocab, dim).astype(np.float32)
        self.ids = tf.placeholder(tf.int32, [None], name="ids")
        self.y = tf.placeholder(tf.float32, [None, dim], name="y")
        self.table = tf.get_variable("table", initializer=table)
        rows = tf.gather(self.table, self.ids)
        self.loss = tf.reduce_mean(tf.reduce_sum(tf.square(rows - self.y), axis=1))
        self.batch_size = tf.shape(self.ids)[0]

    def feed_dict(self, batch):
        return {self.ids: batch["ids"], self.y: batch["y"]}


def make_id_batch(n, seed=3, vocab=VOCAB):
    rng = np.random.RandomState(seed)
    return dict(ids=rng.randint(0, vocab // 2, size=n).astype(np.int32),
                y=rng.randn(n, OUT_DIM).astype(np.float32))


class WithMovingMean(Linear):
    """Linear plus a batch-norm-like moving mean of x and a counter, both via UPDATE_OPS."""
    momentum = 0.5

    def __init__(self):
        Linear.__init__(self)
        self.moving_mean = tf.get_variable("moving_mean", initializer=tf.zeros([IN_DIM]),
                                           trainable=False)
        self.updates_run = tf.get_variable("updates_run", initializer=tf.constant(0), dtype=tf.int32,
                                           trainable=False)
        batch_mean = tf.reduce_mean(self.x, axis=0)
        update = tf.assign_sub(self.moving_mean, (1 - self.momentum) * (self.moving_mean - batch_mean))
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(self.updates_run, 1))


class WithTfVariable(Linear):
    """Creates a trainable tf.Variable, which scope reuse cannot share."""

    def __init__(self):
        Linear.__init__(self)
        self.extra = tf.Variable(tf.ones([2]), name="extra")
        self.loss = self.loss + tf.reduce_sum(self.extra)


class NoLoss(object):
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, IN_DIM])

    def feed_dict(self, batch):
        return {self.x: batch["x"]}


class VectorLoss(Linear):
    def __init__(self):
        Linear.__init__(self)
        self.loss = tf.reduce_sum(tf.square(self.predict - self.y), axis=1)
