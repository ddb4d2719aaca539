"""Small, pure transformations of (gradient, variable) lists.

Each function takes and returns plain lists of ``(gradient, variable)`` pairs so
that they compose in one line and can be tested one by one. Sparse gradients
(``tf.IndexedSlices``, from embedding lookups) are never converted to dense
tensors: the tower copies are concatenated, which is exact because the
optimizers sum duplicate indices.
"""
import logging
from contextlib import nullcontext

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


def tower_fractions(weights):
    """Each tower's share ``w_i / sum(w)`` as float32 tensors: the weights of the exact mean.

    With ``w_i`` tower i's examples and ``x_i`` its mean of anything over them (loss, error, a
    gradient), ``sum_i fraction_i * x_i`` is the mean over the whole batch. The one definition
    of that mean: the wrapper's loss and error, ``weighted_mean`` and the strategies use it.
    """
    weights = [tf.cast(w, tf.float32) for w in weights]
    total = tf.add_n(weights)
    return [w / total for w in weights]


def weighted_mean(tower_grads_and_vars, weights=None, num_packs=0, devices=None):
    """Average per-tower gradient lists into one list, tower ``i`` weighted by ``weights[i]``.

    ``tower_grads_and_vars`` holds one list of (gradient, variable) per tower,
    all over the same variables in the same order (None gradients already
    dropped). ``weights`` are scalars (tensors or numbers, e.g. each tower's
    example count); equal weights when omitted. With weights proportional to
    shard sizes, the result equals the gradient of the whole-batch mean loss.

    ``num_packs > 0`` first concatenates each tower's dense gradients into at most that
    many buffers (built on ``devices[i]``, tower ``i``'s device, so each buffer crosses
    to the reducing device in one transfer) and splits the averaged buffers again.
    """
    n_towers = len(tower_grads_and_vars)
    assert n_towers > 0, "weighted_mean needs at least one tower's gradients, got none"
    if weights is None:
        weights = [1.0] * n_towers
    assert len(weights) == n_towers, \
        "got %d weights for %d towers" % (len(weights), n_towers)
    if n_towers == 1:
        return list(tower_grads_and_vars[0])
    variables = [v for _, v in tower_grads_and_vars[0]]
    for pairs in zip(*tower_grads_and_vars):
        assert all(v is pairs[0][1] for _, v in pairs), \
            "towers disagree on the variable order at %s: %s" % (
                pairs[0][1].op.name, [v.op.name for _, v in pairs])
    fractions = tower_fractions(weights)
    grads = [[g for g, _ in pairs] for pairs in tower_grads_and_vars]
    packing = Packing(grads[0], num_packs)
    packs = []
    for index, tower in enumerate(grads):
        with tf.device(devices[index]) if devices else nullcontext():
            packs.append(packing.pack(tower))
    packed = set(packing.members)
    summed = [None if j in packed else
              sum_gradients([_scale(tower[j], f) for tower, f in zip(grads, fractions)])
              for j in range(len(variables))]
    summed_packs = [tf.add_n([_scale(tower[k], f) for tower, f in zip(packs, fractions)])
                    for k in range(len(packing.pack_sizes))]
    return list(zip(packing.unpack(summed_packs, summed), variables))


def sum_gradients(grads):
    """The sum of one variable's gradients from several towers, sparse ones kept sparse."""
    if all(isinstance(g, tf.IndexedSlices) for g in grads):
        return _sum_sparse(grads)
    # Mixed dense/sparse across towers cannot stay sparse; this does not
    # happen when towers are built by the same code.
    return tf.add_n([tf.convert_to_tensor(g) for g in grads])


def scale_all(grads, factor):
    """Every gradient of a list times ``factor`` (IndexedSlices stay sparse)."""
    return [_scale(g, factor) for g in grads]


# -- gradient repacking ----------------------------------------------------------------------

class Packing(object):
    """How a list of dense gradients was cut into a few flat buffers, to undo it exactly.

    Many small tensors cost one transfer (and one reduction) each; a handful of
    concatenated buffers cost a handful. ``packable`` tells which gradients can take
    part: dense, float32 (one dtype per buffer), with a fully known shape.
    """

    def __init__(self, grads, num_packs):
        self.members = [i for i, g in enumerate(grads) if self.packable(g)] if num_packs else []
        self.shapes = [grads[i].shape for i in self.members]
        self.sizes = [s.num_elements() for s in self.shapes]
        total = sum(self.sizes)
        n = max(1, min(int(num_packs), total)) if total else 0
        # Nearly equal buffers: the first `total % n` get one element more.
        self.pack_sizes = [total // n + (1 if i < total % n else 0) for i in range(n)] if n else []

    @staticmethod
    def packable(grad):
        """Dense float32 gradients of known shape can be packed; others pass unchanged."""
        return (not isinstance(grad, tf.IndexedSlices) and grad.dtype == tf.float32
                and grad.shape.is_fully_defined())

    def pack(self, grads):
        """The packed buffers of ``grads`` (a list like the one this packing was made for)."""
        if not self.members:
            return []
        flat = tf.concat([tf.reshape(grads[i], [-1]) for i in self.members], axis=0)
        return tf.split(flat, self.pack_sizes) if len(self.pack_sizes) > 1 else [flat]

    def unpack(self, packs, grads):
        """``grads`` with its packed members replaced by their parts of ``packs``."""
        if not self.members:
            return list(grads)
        flat = tf.concat(packs, axis=0) if len(packs) > 1 else packs[0]
        parts = tf.split(flat, self.sizes) if len(self.sizes) > 1 else [flat]
        out = list(grads)
        for index, part, shape in zip(self.members, parts, self.shapes):
            out[index] = tf.reshape(part, shape)
        return out


# -- all-reduce building blocks ---------------------------------------------------------------

def ring_all_reduce(tensors, devices):
    """Sum ``tensors[i]`` (one per device, same shape) so that every device gets the sum.

    Built from plain ops, so it runs on any device: the flattened tensor is cut into one
    chunk per device; chunk ``c`` is summed hop by hop around the ring, ending on device
    ``c`` (reduce-scatter), then its sum is copied hop by hop to every other device
    (all-gather). Every copy of a sum is the same tensor value, so all devices end with
    bitwise equal results.
    """
    n = len(tensors)
    if n == 1:
        return list(tensors)
    shape = tensors[0].shape
    if not shape.is_fully_defined():
        # The chunks need a known size; sum on the first device and copy the sum out.
        with tf.device(devices[0]):
            total = tf.add_n(tensors)
        results = []
        for device in devices:
            with tf.device(device):
                results.append(tf.identity(total))
        return results
    size = shape.num_elements()
    chunk_sizes = [size // n + (1 if i < size % n else 0) for i in range(n)]
    chunks = []
    for tensor, device in zip(tensors, devices):
        with tf.device(device):
            chunks.append(tf.split(tf.reshape(tensor, [-1]), chunk_sizes))
    gathered = [[None] * n for _ in range(n)]  # gathered[device][chunk]
    for c in range(n):
        first = (c + 1) % n
        total = chunks[first][c]
        for hop in range(2, n + 1):
            d = (c + hop) % n
            with tf.device(devices[d]):
                total = total + chunks[d][c]
        gathered[c][c] = total  # the last hop ended on device c
        for hop in range(1, n):
            d = (c + hop) % n
            with tf.device(devices[d]):
                gathered[d][c] = tf.identity(gathered[(d - 1) % n][c])
    results = []
    for d, device in enumerate(devices):
        with tf.device(device):
            results.append(tf.reshape(tf.concat(gathered[d], axis=0), shape))
    return results


def nccl_all_reduce(tensors, devices):
    """Sum ``tensors[i]`` over GPUs with NCCL: every device gets the sum (GPUs only).

    NCCL ops exist in CPU builds of TensorFlow but have no CPU kernel, so a graph with
    them fails when it runs on CPU devices; ``strategies.Replicated`` refuses that up front.
    """
    if len(tensors) == 1:
        return list(tensors)
    # The per-device ops of one reduction find each other by this name; the first
    # input's op name is unique in the graph.
    shared = "nccl_" + tensors[0].op.name
    results = []
    for tensor, device in zip(tensors, devices):
        with tf.device(device):
            results.append(tf.raw_ops.NcclAllReduce(input=tensor, reduction="sum",
                                                    num_devices=len(tensors), shared_name=shared))
    return results


def all_gather_sparse(slices, devices):
    """Every tower's IndexedSlices concatenated on every device: a sparse all-reduce.

    No densification: each device receives all towers' rows and indices; the optimizer
    sums duplicate indices when it applies them.
    """
    gathered = []
    for device in devices:
        with tf.device(device):
            gathered.append(_sum_sparse(slices))
    return gathered


def clip_by_global_norm(grads_and_vars, clip_norm):
    """Rescale all gradients together so their global norm is at most ``clip_norm``.

    Returns ``(grads_and_vars, global_norm)``. IndexedSlices stay sparse.
    """
    grads = [g for g, _ in grads_and_vars]
    clipped, norm = tf.clip_by_global_norm(grads, clip_norm)
    return list(zip(clipped, [v for _, v in grads_and_vars])), norm


def all_finite(grads_and_vars, extra=()):
    """A boolean scalar: every gradient (and every tensor in ``extra``) is free of NaN/Inf.

    Each tensor is checked on its own device and only its boolean travels: checking a GPU's
    gradients on the host would copy all of them over PCIe every step.
    """
    checks = []
    for tensor in [grad for grad, _ in grads_and_vars] + list(extra):
        values = tensor.values if isinstance(tensor, tf.IndexedSlices) else tensor
        with tf.device(values.device):
            checks.append(tf.reduce_all(tf.is_finite(values)))
    return tf.reduce_all(tf.stack(checks))
