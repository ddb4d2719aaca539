"""Small, pure transformations of (gradient, variable) lists.

Each function takes and returns plain lists of ``(gradient, variable)`` pairs so
that they compose in one line and can be tested one by one. Sparse gradients
(``tf.IndexedSlices``, from embedding lookups) are never converted to dense
tensors: the tower copies are concatenated, which is exact because the
optimizers sum duplicate indices.
"""
import logging

from crnn_multigpu.compat import tf

log = logging.getLogger(__name__)


def drop_none(grads_and_vars):
    """Remove pairs whose gradient is None (a variable the loss does not use), with a warning.

    The classic ``average_gradients`` crashes on these; the optimizer simply
    leaves such variables unchanged.
    """
    kept = [(g, v) for g, v in grads_and_vars if g is not None]
    unused = [v.op.name for g, v in grads_and_vars if g is None]
    if unused:
        log.warning("no gradient for %d variable(s), left unchanged by training: %s",
                    len(unused), ", ".join(unused))
    return kept


def _scale(grad, factor):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * tf.cast(factor, grad.values.dtype),
                                grad.indices, grad.dense_shape)
    return grad * tf.cast(factor, grad.dtype)


def _sum_sparse(slices):
    """Sum IndexedSlices by concatenation: the update touches only the rows seen."""
    values = tf.concat([s.values for s in slices], axis=0)
    indices = tf.concat([tf.cast(s.indices, tf.int64) for s in slices], axis=0)
    return tf.IndexedSlices(values, indices, slices[0].dense_shape)


def weighted_mean(tower_grads_and_vars, weights=None):
    """Average per-tower gradient lists into one list, tower ``i`` weighted by ``weights[i]``.

    ``tower_grads_and_vars`` holds one list of (gradient, variable) per tower,
    all over the same variables in the same order (None gradients already
    dropped). ``weights`` are scalars (tensors or numbers, e.g. each tower's
    example count); equal weights when omitted. With weights proportional to
    shard sizes, the result equals the gradient of the whole-batch mean loss.
    """
    n_towers = len(tower_grads_and_vars)
    assert n_towers > 0, "weighted_mean needs at least one tower's gradients, got none"
    if weights is None:
        weights = [1.0] * n_towers
    assert len(weights) == n_towers, \
        "got %d weights for %d towers" % (len(weights), n_towers)
    if n_towers == 1:
        return list(tower_grads_and_vars[0])
    weights = [tf.cast(w, tf.float32) for w in weights]
    total = tf.add_n(weights)
    fractions = [w / total for w in weights]
    averaged = []
    for pairs in zip(*tower_grads_and_vars):
        variable = pairs[0][1]
        assert all(v is variable for _, v in pairs), \
            "towers disagree on the variable order at %s: %s" % (
                variable.op.name, [v.op.name for _, v in pairs])
        grads = [_scale(g, f) for (g, _), f in zip(pairs, fractions)]
        if all(isinstance(g, tf.IndexedSlices) for g in grads):
            grad = _sum_sparse(grads)
        else:
            # Mixed dense/sparse across towers cannot stay sparse; this does not
            # happen when towers are built by the same code.
            grad = tf.add_n([tf.convert_to_tensor(g) for g in grads])
        averaged.append((grad, variable))
    return averaged


def clip_by_global_norm(grads_and_vars, clip_norm):
    """Rescale all gradients together so their global norm is at most ``clip_norm``.

    Returns ``(grads_and_vars, global_norm)``. IndexedSlices stay sparse.
    """
    grads = [g for g, _ in grads_and_vars]
    clipped, norm = tf.clip_by_global_norm(grads, clip_norm)
    return list(zip(clipped, [v for _, v in grads_and_vars])), norm


def all_finite(grads_and_vars, extra=()):
    """A boolean scalar: every gradient (and every tensor in ``extra``) is free of NaN/Inf."""
    checks = []
    for grad, _ in grads_and_vars:
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        checks.append(tf.reduce_all(tf.is_finite(values)))
    checks.extend(tf.reduce_all(tf.is_finite(t)) for t in extra)
    return tf.reduce_all(tf.stack(checks))
