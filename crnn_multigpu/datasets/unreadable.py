"""Skipping an image that cannot be read, and naming it: the one path every reader of a dataset
takes (training batches by step or by epoch, crnn-evaluate and crnn-train's validation), so a
truncated PNG, a decompression bomb or a bad LMDB record is named the same way everywhere.
"""
import logging
import threading

log = logging.getLogger(__name__)

# How many unreadable images a reader names in a warning as it meets them.
WARN_FIRST = 5


class UnreadableImages(object):
    """``read(index, degrade=None)``: sample ``index`` of ``dataset`` (``safe_get`` if it has
    one, else indexing), or None when its image cannot be read. Each such index is recorded
    once, in the order met (``indices``; ``names()`` as ``dataset.describe`` gives them), and
    the first ``warn_first`` are named in a warning: 'skipping unreadable image NAME (N so
    far)'. ``warn_first=0`` for a reader that names them all at its end (an evaluation).
    Several threads may read at once.
    """

    def __init__(self, dataset, warn_first=WARN_FIRST):
        self.dataset, self.warn_first = dataset, warn_first
        self.indices = []
        self._seen, self._lock = set(), threading.Lock()

    def read(self, index, degrade=None):
        """The sample ``(array, text)`` at ``index``, or None (recorded) when unreadable.
        ``degrade``: training-time augmentation, passed only when given (datasets of ready
        arrays need not take it)."""
        if not hasattr(self.dataset, "safe_get"):
            return self.dataset[index]
        sample = self.dataset.safe_get(index) if degrade is None else \
            self.dataset.safe_get(index, degrade)
        if sample is None:
            self._record(index)
        return sample

    def _record(self, index):
        with self._lock:
            if index in self._seen:
                return
            self._seen.add(index)
            self.indices.append(index)
            count = len(self.indices)
        if count <= self.warn_first:
            log.warning("skipping unreadable image %s (%d so far)", self.name(index), count)

    def name(self, index):
        """What the dataset calls sample ``index`` (a path, or an LMDB key and its folder)."""
        describe = getattr(self.dataset, "describe", None)
        return describe(index) if describe is not None else "sample %d" % index

    def names(self):
        """The names of the unreadable images met so far, in the order met."""
        return [self.name(index) for index in self.indices]

    def __len__(self):
        return len(self.indices)
