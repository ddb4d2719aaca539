"""The batches of steps shared by the towers of a feed-free input (``feeding.StepInput``): each
step's batch made once, by whichever tower asks first, split, and handed out shard by shard."""
import collections
import threading
from concurrent.futures import Future
from contextlib import nullcontext

import numpy as np

from crnn_multigpu.wrapper.sharding import split_batch


def _field(batch, name):
    return batch[name] if isinstance(batch, dict) else getattr(batch, name)


class StepShards(object):
    """``shard(step, k)``: tower ``k``'s shard of the global batch of ``step``, thread-safe.

    The first tower asking for a step computes its batch; the others wait for it. A step's
    entry is dropped once all towers took their shard (and the oldest ones beyond ``keep``):
    data is a pure function of the step, so a late request recomputes. Shards are tuples of
    the ``signature``'s fields (``(name, (dtype, shape))`` pairs), in its order.
    """

    def __init__(self, source, n_towers, signature, keep=64, thread_safe=True):
        self.source, self.n_towers, self.signature, self.keep = source, n_towers, signature, keep
        self._lock = threading.Lock()
        # A source that is not thread-safe is called by one thread at a time.
        self._serial = nullcontext() if thread_safe else threading.Lock()
        self._entries = collections.OrderedDict()  # step -> [Future, set of towers served]
        self.error = None  # the first Python exception of the source, for a readable message

    def shard(self, step, tower):
        """Tower ``tower``'s shard of step ``step``'s batch, as a tuple of arrays."""
        step = int(step)
        with self._lock:
            entry = self._entries.get(step)
            owner = entry is None
            if owner:
                entry = self._entries[step] = [Future(), set()]
        future = entry[0]
        if owner:
            try:
                with self._serial:
                    shards = split_batch(self.source(step), self.n_towers)
                future.set_result([tuple(np.asarray(_field(s, name), dtype)
                                         for name, (dtype, _) in self.signature) for s in shards])
            except Exception as error:  # noqa: B902 (re-raised in every tower)
                self.error = self.error or error
                future.set_exception(error)
        result = future.result()
        with self._lock:
            entry[1].add(tower)
            if len(entry[1]) >= self.n_towers and self._entries.get(step) is entry:
                del self._entries[step]
            while len(self._entries) > self.keep:
                oldest = next(iter(self._entries))
                if not self._entries[oldest][0].done():
                    break
                del self._entries[oldest]
        return result[tower]
