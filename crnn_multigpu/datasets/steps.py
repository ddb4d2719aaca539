"""The batch of a global step: the data order follows from (seed, step) alone.

Training asks for "the batch of step s", never "the next batch", so a run
resumed from a checkpoint at step s sees exactly the data an uninterrupted
run would have seen. Training-time augmentation follows the same rule: the
degradation of a sample is drawn from (seed, step, its slot in the batch).

``StepBatches`` (a dataset) and ``ArrayBatches`` (padded arrays in memory) are step sources
as ``crnn_multigpu.wrapper.feeding`` defines them: ``MultiGpuModel(..., batches=source)``
feeds its towers from one without feeding, ``batches=feeding.FedInput(source)`` through
``feed_dict``.
"""
import collections
import logging
import threading

import numpy as np

from crnn_multigpu.datasets.batching import (TIME_STEP_WIDTH, Batch, EpochBatches,
                                             batch_indices, batch_signature, make_batch,
                                             width_keys)
from crnn_multigpu.datasets.unreadable import UnreadableImages

log = logging.getLogger(__name__)
# A tag word keeps augmentation streams apart from other [seed, ...] streams (the renderer's).
_AUGMENT_STREAM = 0x61756721


class StepBatches(object):
    """``batches(step) -> Batch`` over a dataset, reshuffled every epoch, remainder dropped.

    Unreadable images (``dataset.safe_get`` returns None) are left out of their
    batch, counted in ``skipped`` and the first few named
    (:class:`~crnn_multigpu.datasets.unreadable.UnreadableImages`).

    ``augment``: a ``Degrader`` (``augment(pil_image, rng) -> pil_image``) or None. Each
    sample's raw image is degraded inside ``dataset.safe_get(index, degrade)`` with a
    RandomState seeded by (seed, step, slot in the batch), so batches stay a pure function
    of the step.

    ``bucket``: with varying widths (no ``fixed_width``), sort each window of ``bucket``
    batches by image width (see ``EpochBatches``) so batches are not mostly padding;
    0 or 1 = off. Widths are read a window at a time, when a batch of it is asked for.

    ``width_multiple``: the model's image pixels per CTC time step (its ``DOWNSAMPLE``).
    Varying widths are padded to a multiple of it, and a sample whose label needs more time
    steps than its image gives (``ceil(width / width_multiple)``) is left out and counted in
    ``too_long``.

    Several threads may ask for steps at once (``thread_safe``): the feed-free input decodes
    steps in parallel.
    """

    thread_safe = True

    def __init__(self, dataset, charset, batch_size, fixed_width=None, seed=0, min_batch=1,
                 augment=None, bucket=0, width_multiple=TIME_STEP_WIDTH):
        if len(dataset) < batch_size:
            raise ValueError("the training set has %d usable samples, fewer than one batch of %d; "
                             "generate more data or lower --batch-size" % (len(dataset), batch_size))
        if augment is not None and not hasattr(dataset, "safe_get"):
            raise ValueError("augmentation needs a dataset that reads raw images (folder, LMDB, "
                             "synthetic): one whose safe_get(index, degrade) applies it")
        self.dataset, self.charset = dataset, charset
        self.batch_size, self.fixed_width, self.seed = batch_size, fixed_width, seed
        self.min_batch, self.augment, self.width_multiple = min_batch, augment, width_multiple
        self.bucket = bucket if bucket > 1 and not fixed_width else 0
        self.batches_per_epoch = len(dataset) // batch_size
        self._unreadable, self.too_long = UnreadableImages(dataset), set()
        self._lock = threading.Lock()
        self._orders = collections.OrderedDict()  # epoch -> its batches, the newest two
        self._thread_state = threading.local()

    @property
    def skipped(self):
        """The indices of the unreadable images met so far, each once."""
        return list(self._unreadable.indices)

    @property
    def signature(self):
        """The batches' fields for the towers: ``{name: (dtype, static shape)}``."""
        return batch_signature(self.fixed_width)

    def epoch_order(self, epoch):
        """The batches (lists of indices) of ``epoch``: a pure function of (seed, epoch)."""
        size_of = (lambda indices: width_keys(self.dataset, indices)) if self.bucket else None
        return EpochBatches(len(self.dataset), self.batch_size, True, self.seed, epoch,
                            drop_remainder=True, size_of=size_of, bucket=self.bucket)

    def _epoch_batches(self, epoch):
        # Two epochs: decoding threads near an epoch's end ask for both.
        with self._lock:
            if epoch not in self._orders:
                self._orders[epoch] = self.epoch_order(epoch)
                while len(self._orders) > 2:
                    self._orders.popitem(last=False)
            return self._orders[epoch]

    def __call__(self, step):
        epoch, position = divmod(int(step), self.batches_per_epoch)
        arrays, texts = [], []
        for slot, index in enumerate(self._epoch_batches(epoch)[position]):
            sample = self._unreadable.read(int(index), self._degrade(int(step), slot))
            if sample is not None and not self._fits(index, sample):
                continue
            if sample is not None:
                arrays.append(sample[0])
                texts.append(sample[1])
        if len(arrays) < self.min_batch:
            raise ValueError("step %d: only %d readable images in the batch, need %d; the dataset "
                             "has too many unreadable files (%d so far)"
                             % (step, len(arrays), self.min_batch, len(self.skipped)))
        return make_batch(arrays, texts, self.charset, self.fixed_width, self.width_multiple)

    def _fits(self, index, sample):
        """With varying widths, a label may need more CTC time steps than its image gives."""
        if self.fixed_width:
            return True  # checked for the whole set when it was loaded
        available = -(-sample[0].shape[1] // self.width_multiple)
        if self.charset.required_time_steps(sample[1]) <= available:
            return True
        if index not in self.too_long:
            self.too_long.add(index)
            if len(self.too_long) <= 5:
                log.warning("skipping %r: its image is too narrow (%d px) for its label",
                            sample[1], sample[0].shape[1])
        return False

    def _degrade(self, step, slot):
        """``image -> degraded image`` for sample ``slot`` of step ``step``'s batch, or None."""
        if self.augment is None:
            return None
        # Reseeding a per-thread RandomState costs a tenth of building one per sample;
        # ``degrade`` runs in this thread before its next reseed (decoding threads each own one).
        rng = getattr(self._thread_state, "rng", None)
        if rng is None:
            rng = self._thread_state.rng = np.random.RandomState()
        rng.seed([self.seed % 2 ** 32, step % 2 ** 32, (step // 2 ** 32) % 2 ** 32, slot,
                  _AUGMENT_STREAM])
        return lambda image: self.augment(image, rng)


class ArrayBatches(object):
    """In-memory, already padded arrays (a ``Batch`` or a dict with ``INPUT_NAMES``) as a step
    source: rows drawn in the same per-epoch shuffled order as ``StepBatches``, remainder
    dropped."""

    thread_safe = True

    def __init__(self, arrays, batch_size, seed=0):
        get = arrays.get if isinstance(arrays, dict) else lambda name: getattr(arrays, name, None)
        images = np.asarray(get("images"))
        self.signature = batch_signature(images.shape[2] if images.ndim == 4 else None)
        self.arrays = [np.asarray(get(name), dtype) for name, (dtype, _) in
                       self.signature.items()]
        self.texts = get("texts")
        count = len(self.arrays[0])
        if count < batch_size:
            raise ValueError("%d in-memory examples are fewer than one batch of %d"
                             % (count, batch_size))
        self.batch_size, self.seed, self.count = batch_size, seed, count
        self.batches_per_epoch = count // batch_size

    def __call__(self, step):
        epoch, position = divmod(int(step), self.batches_per_epoch)
        rows = np.asarray(batch_indices(self.count, self.batch_size, True, self.seed, epoch,
                                        drop_remainder=True)[position])
        texts = [self.texts[i] for i in rows] if self.texts is not None else [""] * len(rows)
        return Batch(*([a[rows] for a in self.arrays] + [texts]))
