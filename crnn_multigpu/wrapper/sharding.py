"""Cutting one batch into one shard per tower.

A batch is a namedtuple or a dict whose fields are numpy arrays or Python
lists, all with the same number of examples. Shards keep the batch's type and
differ in size by at most one example, so an uneven last batch (say 8 examples
on 3 towers: 3, 3, 2) is handled instead of crashing a tower.
"""
import numpy as np


def _fields(batch):
    """Return (names, values, rebuild) for a namedtuple or a dict batch."""
    if isinstance(batch, dict):
        names = list(batch.keys())
        return names, [batch[n] for n in names], lambda values: type(batch)(zip(names, values))
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return list(batch._fields), list(batch), lambda values: type(batch)(*values)
    raise TypeError("a batch must be a namedtuple or a dict of arrays/lists, got %s; wrap your "
                    "arrays e.g. as dict(images=..., labels=...)" % type(batch).__name__)


def _length(value):
    if isinstance(value, np.ndarray):
        return value.shape[0] if value.ndim else None
    if isinstance(value, (list, tuple)):
        return len(value)
    return None  # scalars and None travel to every shard unchanged


def batch_size(batch):
    """The number of examples in ``batch``; raises ValueError naming fields that disagree."""
    names, values, _ = _fields(batch)
    lengths = {n: _length(v) for n, v in zip(names, values) if _length(v) is not None}
    if not lengths:
        raise ValueError("the batch has no array or list fields (fields: %s)" % ", ".join(names))
    if len(set(lengths.values())) > 1:
        detail = ", ".join("%s=%d" % item for item in sorted(lengths.items()))
        raise ValueError("the batch's fields disagree on the number of examples (%s); every array "
                         "and list must have one entry per example along its first axis" % detail)
    return next(iter(lengths.values()))


def shard_sizes(n_examples, n_shards):
    """Sizes of ``n_shards`` near-equal shards of ``n_examples`` (the first ones one larger)."""
    base, extra = divmod(n_examples, n_shards)
    return [base + 1 if i < extra else base for i in range(n_shards)]


def check_shards(n_examples, n_shards, name):
    """Raise ValueError unless batches of ``n_examples`` give each of ``n_shards`` towers an
    example: an empty shard would make its tower's mean loss (and batch norm) undefined. The one
    check of it, wherever batches meet towers; ``name`` says which size it is in the message."""
    if n_examples < n_shards:
        raise ValueError("%s %d is smaller than the %d towers: every tower needs at least one "
                         "example, so use at least %d" % (name, n_examples, n_shards, n_shards))


def split_batch(batch, n_shards):
    """Split ``batch`` into ``n_shards`` shards of the same type, sizes differing by at most one.

    Raises ValueError when there are fewer examples than shards (``check_shards``).
    """
    n = batch_size(batch)
    check_shards(n, n_shards, "the batch's size")
    names, values, rebuild = _fields(batch)
    bounds = np.cumsum([0] + shard_sizes(n, n_shards))
    shards = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        shards.append(rebuild([v[start:stop] if _length(v) is not None else v for v in values]))
    return shards
