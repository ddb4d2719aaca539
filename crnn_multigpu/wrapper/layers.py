"""Graph-mode layers built only from ``tf.get_variable`` and ``tf.nn`` ops.

Every layer opens its own ``tf.variable_scope(name)`` and creates its
variables with ``tf.get_variable`` only, so a tower wrapper can share one set
of weights between towers by re-entering the enclosing variable scope with
``reuse=True`` (no ``tf.Variable``, no Keras).

Layers compute in the dtype of the weights ``tf.get_variable`` hands them: float32
normally, float16 or bfloat16 under a mixed-precision policy (see ``precision``, whose
custom getter casts the float32 variables on read); the input is cast to that dtype
(a no-op in float32, so the float32 graph is unchanged). Batch-norm moments and
normalisation stay float32.

Runs unchanged on TF 1.15 and on TF 2.x through ``tensorflow.compat.v1``.
"""
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.tower_context import current_tower

__all__ = ["float32", "conv2d", "batch_norm", "max_pool", "dense", "lstm", "bidirectional_lstm"]


def _pair(v):
    if isinstance(v, int):
        return (v, v)
    return tuple(int(a) for a in v)


def _to(x, dtype):
    """``x`` in ``dtype``; no op at all when it already is (tf.cast would still take a name)."""
    return x if x.dtype.base_dtype == dtype else tf.cast(x, dtype)


def float32(x):
    """``x`` as float32, for what must stay full precision under a mixed-precision policy
    (CTC, softmax, log-probabilities); no op when ``x`` already is float32."""
    return _to(x, tf.float32)


def _he_init():
    # He et al. 2015: N(0, 2/fan_in), truncated at two standard deviations.
    return tf.variance_scaling_initializer(scale=2.0, mode="fan_in",
                                           distribution="truncated_normal")


def _glorot_init():
    return tf.glorot_uniform_initializer()


def conv2d(x, filters, kernel=(3, 3), strides=(1, 1), padding="SAME", use_bias=True,
           name="conv"):
    """2-D convolution on NHWC input with He-initialised ``kernel`` (+ ``bias``)."""
    kh, kw = _pair(kernel)
    sh, sw = _pair(strides)
    in_ch = int(x.shape[-1])
    with tf.variable_scope(name):
        w = tf.get_variable("kernel", [kh, kw, in_ch, int(filters)], tf.float32,
                            initializer=_he_init())
        y = tf.nn.conv2d(_to(x, w.dtype.base_dtype), w, [1, sh, sw, 1], padding)
        if use_bias:
            b = tf.get_variable("bias", [int(filters)], tf.float32,
                                initializer=tf.zeros_initializer())
            y = tf.nn.bias_add(y, b)
    return y


def batch_norm(x, training, momentum=0.9, epsilon=1e-5, sync=False, name="bn"):
    """Batch normalisation over all axes but the last.

    ``training`` is a boolean scalar tensor (or a Python bool). It picks, with a graph-mode
    ``tf.cond``, one fused kernel (``tf.nn.fused_batch_norm``): batch statistics in training,
    the moving ones otherwise. One fused pass and its fused gradient cost a fraction of the
    half-dozen element-wise passes that ``tf.nn.moments`` + ``tf.nn.batch_normalization`` and
    their gradients make. The moving-average updates ``moving -= (1 - momentum) * (moving -
    batch_stat)`` (``batch_stat`` the biased batch variance, as ``tf.nn.moments`` gives; with
    ``training`` false they change nothing) are added to ``tf.GraphKeys.UPDATE_OPS`` and are
    NOT run implicitly: whoever builds the train op runs them (once per step).

    ``sync=True``: inside a tower wrapper the batch moments are those of the whole global
    batch, not of this tower's shard (see ``_global_moments``); the moving statistics (tower 0's
    updates) then follow the global moments too. Alone, or with one tower, it changes nothing.
    The global moments enter the normalisation through a 0/1 float mask, not ``tf.cond``: the
    cross-tower sum must run in every tower of the step, outside any branch.

    Moments and normalisation are computed in float32 whatever ``x``'s dtype (a
    float16 sum of squares overflows, bfloat16's 8-bit mantissa makes the variance
    coarse); the result is returned in ``x``'s dtype.
    """
    channels = int(x.shape[-1])
    axes = list(range(x.shape.ndims - 1))
    with tf.variable_scope(name):
        gamma = tf.get_variable("gamma", [channels], tf.float32,
                                initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [channels], tf.float32,
                               initializer=tf.zeros_initializer())
        # aggregation=MEAN lets tf.distribute strategies update the statistics from replicas.
        stats = dict(trainable=False, aggregation=tf.VariableAggregation.MEAN,
                     collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                  tf.GraphKeys.MOVING_AVERAGE_VARIABLES])
        moving_mean = tf.get_variable("moving_mean", [channels], tf.float32,
                                      initializer=tf.zeros_initializer(), **stats)
        moving_var = tf.get_variable("moving_variance", [channels], tf.float32,
                                     initializer=tf.ones_initializer(), **stats)
        x32 = _to(x, tf.float32)
        training = tf.convert_to_tensor(training, tf.bool)
        if sync and current_tower().count > 1:
            batch_mean, batch_var = _global_moments(x32, axes, moving_mean)
            t = tf.cast(training, tf.float32)
            y = tf.nn.batch_normalization(x32, t * batch_mean + (1.0 - t) * moving_mean,
                                          t * batch_var + (1.0 - t) * moving_var,
                                          _to(beta, tf.float32), _to(gamma, tf.float32), epsilon)
        else:
            y, batch_mean, batch_var = _fused_batch_norm(x32, training, gamma, beta, moving_mean,
                                                         moving_var, epsilon)
        decay = 1.0 - momentum
        update_mean = tf.assign_sub(moving_mean, decay * (moving_mean - batch_mean),
                                    name="update_moving_mean")
        update_var = tf.assign_sub(moving_var, decay * (moving_var - batch_var),
                                   name="update_moving_variance")
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update_mean)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, update_var)
        return _to(y, x.dtype.base_dtype)


def _fused_batch_norm(x, training, gamma, beta, moving_mean, moving_var, epsilon):
    """Normalised ``x`` (float32, any rank) and the statistics used: the batch's in training
    (mean and biased variance), the moving ones otherwise; one fused kernel either way."""
    channels = int(x.shape[-1])
    # The fused kernel takes NHWC only; any other rank is viewed as [N, 1, 1, C].
    x4 = x if x.shape.ndims == 4 else tf.reshape(x, [-1, 1, 1, channels])
    gamma, beta = _to(gamma, tf.float32), _to(beta, tf.float32)

    def batch_statistics():
        y, mean, unbiased = tf.nn.fused_batch_norm(x4, gamma, beta, epsilon=epsilon,
                                                   is_training=True)[:3]
        # The kernel hands back the variance with Bessel's correction; the moving average
        # follows the biased one, as tf.nn.moments and the synchronised moments give it.
        count = tf.cast(tf.reduce_prod(tf.shape(x4)[:-1]), tf.float32)
        return y, mean, unbiased * (tf.maximum(count - 1.0, 0.0) / count)

    def moving_statistics():
        y = tf.nn.fused_batch_norm(x4, gamma, beta, mean=moving_mean, variance=moving_var,
                                   epsilon=epsilon, is_training=False)[0]
        return y, tf.identity(moving_mean), tf.identity(moving_var)

    y, mean, variance = _graph_cond(training, batch_statistics, moving_statistics)
    y = tf.reshape(y, tf.shape(x)) if x4 is not x else y
    y.set_shape(x.shape)
    return y, mean, variance


def _graph_cond(pred, true_fn, false_fn):
    """``tf.cond`` built as graph-mode Switch/Merge ops, whatever the process's default.

    TF 2's functional cond (``If``, its default) traces each branch into a function and its
    gradient into two more: measured on TF 2.21, the 14 batch-norm conds of a two-tower CRNN
    took a third of the graph's 3.5 s build and half a second of its first step, for the same
    step time afterwards. The caller's setting is restored at once; inside a function graph
    (``tf.function``) TensorFlow builds the functional form whatever the setting, and reports
    the setting as on there: toggling it would switch it on for the whole process.
    """
    if not tf.control_flow_v2_enabled() or tf.get_default_graph().building_function:
        return tf.cond(pred, true_fn, false_fn)
    tf.disable_control_flow_v2()
    try:
        return tf.cond(pred, true_fn, false_fn)
    finally:
        tf.enable_control_flow_v2()


def _global_moments(x, axes, shift):
    """Mean and (biased) variance over all towers' examples, exact for shards of any size.

    Every tower contributes the sums of d and d^2 (d = x - shift) and its element count in one
    cross-tower sum, so each shard counts by its size (not a mean of means). The shift is the
    moving mean, the same value in every tower: it changes nothing mathematically but keeps
    E[d^2] - E[d]^2 from cancelling catastrophically when the mean is large against the spread.
    """
    channels = int(x.shape[-1])
    shift = tf.stop_gradient(shift)
    d = x - shift
    count = tf.cast(tf.reduce_prod(tf.shape(x)[:-1]), x.dtype)
    local = tf.concat([tf.reduce_sum(d, axes), tf.reduce_sum(tf.square(d), axes), [count]], 0)
    total = current_tower().cross_tower_sum(local, name="moments_sum")
    n = total[-1]
    mean_d = total[:channels] / n
    variance = tf.maximum(total[channels:2 * channels] / n - tf.square(mean_d), 0.0)
    return mean_d + shift, variance


def max_pool(x, pool=(2, 2), strides=None, padding="VALID"):
    """Max pooling on NHWC input; ``strides`` defaults to ``pool``."""
    ph, pw = _pair(pool)
    sh, sw = _pair(strides if strides is not None else pool)
    return tf.nn.max_pool(x, [1, ph, pw, 1], [1, sh, sw, 1], padding)


def dense(x, units, name="dense"):
    """Affine map on the last axis of an input of any rank >= 2 (e.g. [T, B, C])."""
    in_dim = int(x.shape[-1])
    with tf.variable_scope(name):
        w = tf.get_variable("kernel", [in_dim, int(units)], tf.float32,
                            initializer=_glorot_init())
        b = tf.get_variable("bias", [int(units)], tf.float32,
                            initializer=tf.zeros_initializer())
        x = _to(x, w.dtype.base_dtype)
        if x.shape.ndims == 2:
            return tf.nn.bias_add(tf.matmul(x, w), b)
        flat = tf.reshape(x, [-1, in_dim])
        y = tf.nn.bias_add(tf.matmul(flat, w), b)
        out_shape = tf.concat([tf.shape(x)[:-1], [int(units)]], axis=0)
        y = tf.reshape(y, out_shape)
        y.set_shape(x.shape[:-1].concatenate([int(units)]))
        return y


def lstm(x, lengths, units, name="lstm"):
    """Unidirectional fused LSTM (``BlockLSTM``) over time-major x [T, B, C].

    Returns h [T, B, units]. Zero initial state, forget bias 1.0, no
    peepholes, no cell clipping. ``lengths`` is accepted for symmetry with
    :func:`bidirectional_lstm`; a forward LSTM is causal, so outputs at valid
    frames never depend on the right padding (frames past a length are junk
    that CTC ignores).

    ``BlockLSTM`` accepts only float16 and float32 (its op definition, on every device and
    both TF stacks), so with bfloat16 weights the cell runs in float32 (weights, input and
    state cast up) and ``h`` is returned in bfloat16.
    """
    del lengths  # causal: padding after the valid frames cannot leak backwards
    in_dim = int(x.shape[-1])
    units = int(units)
    with tf.variable_scope(name):
        # Gate order of the fused kernel: i, cs (cell input), f, o.
        w = tf.get_variable("kernel", [in_dim + units, 4 * units], tf.float32,
                            initializer=_glorot_init())
        b = tf.get_variable("bias", [4 * units], tf.float32,
                            initializer=tf.zeros_initializer())
        dtype = w.dtype.base_dtype
        run = tf.float32 if dtype == tf.bfloat16 else dtype
        x, w, b = _to(x, run), _to(w, run), _to(b, run)
        batch = tf.shape(x)[1]
        zeros_state = tf.zeros(tf.stack([batch, units]), run)
        no_peep = tf.zeros([units], run)  # constants: the op wants them
        outputs = tf.raw_ops.BlockLSTM(
            seq_len_max=tf.cast(tf.shape(x)[0], tf.int64), x=x,
            cs_prev=zeros_state, h_prev=zeros_state, w=w,
            wci=no_peep, wcf=no_peep, wco=no_peep, b=b,
            forget_bias=1.0, cell_clip=-1.0, use_peephole=False)
        h = _to(outputs[6], dtype)
        h.set_shape(x.shape[:-1].concatenate([units]))
        return h


def bidirectional_lstm(x, lengths, units, name="bilstm"):
    """Forward + backward LSTM over time-major x [T, B, C] -> [T, B, 2*units].

    The backward direction reverses only the first ``lengths[b]`` frames of
    each example (``tf.reverse_sequence``) before and after the LSTM, so the
    right padding is read *after* the valid frames and never leaks into them.
    """
    with tf.variable_scope(name):
        fw = lstm(x, lengths, units, name="fw")
        rev = tf.reverse_sequence(x, lengths, seq_axis=0, batch_axis=1)
        bw = lstm(rev, lengths, units, name="bw")
        bw = tf.reverse_sequence(bw, lengths, seq_axis=0, batch_axis=1)
        return tf.concat([fw, bw], axis=-1)
