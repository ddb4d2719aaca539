"""Padding samples into batches, epoch ordering, and background prefetching (``prefetch``: the
wrapper's ``host_prefetch``, through which a fed input makes its batches too)."""
import collections

import numpy as np

from crnn_multigpu.datasets.images import fit_width
from crnn_multigpu.datasets.unreadable import UnreadableImages
from crnn_multigpu.wrapper.host_prefetch import prefetch


Batch = collections.namedtuple("Batch", ["images", "widths", "labels", "label_lengths", "texts"])
Batch.__doc__ = """One padded batch.

images: float32 [B, H, W, 1] in [0, 1], light text on dark, zero-padded on the right.
widths: int32 [B], valid pixel width of each image before padding.
labels: int32 [B, L] class ids, 0 beyond label_lengths (L >= 1 even if every label is empty).
label_lengths: int32 [B].
texts: list of str, the ground truth ('' when unknown, e.g. for prediction).
"""


# The fields of a Batch that a model's towers take (texts stay on the host), as a step source
# declares them for feed-free input (crnn_multigpu.wrapper.feeding).
INPUT_NAMES = ("images", "widths", "labels", "label_lengths")


def batch_signature(fixed_width=None):
    """``{name: (dtype, static shape)}`` of a :class:`Batch`'s ``INPUT_NAMES`` (images
    ``fixed_width`` wide, or of any width): a step source's ``signature``."""
    return collections.OrderedDict([
        ("images", (np.float32, [None, None, fixed_width or None, 1])),
        ("widths", (np.int32, [None])),
        ("labels", (np.int32, [None, None])),
        ("label_lengths", (np.int32, [None]))])


# Image pixels per CTC time step when a caller does not say: the default model's (CRNN's
# DOWNSAMPLE). The tools pass their model class's (crnn_multigpu.ocr.model_class).
TIME_STEP_WIDTH = 4


def _round_up(value, multiple):
    return ((value + multiple - 1) // multiple) * multiple


def make_batch(arrays, texts, charset, fixed_width=None, width_multiple=TIME_STEP_WIDTH):
    """Stack ``[H, w]`` arrays from ``load_image`` and their texts into a :class:`Batch`.

    With ``fixed_width`` every image is squeezed or padded to exactly that
    width. Otherwise images are padded to the widest one, rounded up to a
    multiple of ``width_multiple`` (the model's pixels per time step) so the conv stack
    divides it evenly.
    ``texts`` may be None (prediction): labels are then empty.
    """
    if not arrays:
        raise ValueError("make_batch needs at least one image")
    heights = set(array.shape[0] for array in arrays)
    if len(heights) != 1:
        raise ValueError("images in a batch must share one height, got %s" % sorted(heights))
    height = heights.pop()
    if texts is None:
        texts = [""] * len(arrays)
    if len(texts) != len(arrays):
        raise ValueError("make_batch got %d images but %d texts" % (len(arrays), len(texts)))

    if fixed_width:
        widths = [min(array.shape[1], fixed_width) for array in arrays]
        arrays = [fit_width(array, fixed_width) for array in arrays]
        padded_width = fixed_width
    else:
        widths = [array.shape[1] for array in arrays]
        padded_width = _round_up(max(widths), max(1, width_multiple))

    images = np.zeros((len(arrays), height, padded_width, 1), dtype=np.float32)
    for row, array in enumerate(arrays):
        images[row, :, :array.shape[1], 0] = array

    encoded = [charset.encode(text) for text in texts]
    label_lengths = np.array([len(ids) for ids in encoded], dtype=np.int32)
    labels = np.zeros((len(arrays), max(1, int(label_lengths.max()))), dtype=np.int32)
    for row, ids in enumerate(encoded):
        labels[row, :len(ids)] = ids
    return Batch(images, np.array(widths, dtype=np.int32), labels, label_lengths, list(texts))


def epoch_order(count, shuffle, seed=0, epoch=0):
    """Indices ``0 .. count-1`` in the order used for ``epoch``.

    The permutation depends only on ``(seed, epoch)``, so a restarted run
    sees the same order and every epoch visits every index exactly once.
    """
    if not shuffle:
        return np.arange(count)
    return np.random.RandomState([seed % 2 ** 32, epoch % 2 ** 32]).permutation(count)


# A tag word keeps the bucketed batch order's stream apart from the epoch permutation's.
_BUCKET_STREAM = 0x62756b74


class EpochBatches(object):
    """The batches (lists of indices) of one epoch: ``len()`` and ``[position]``.

    Without bucketing, :func:`epoch_order` cut into batches of ``batch_size``. With
    ``size_of`` (``indices -> sizes``, e.g. image widths) and ``bucket`` > 1, each window of
    ``bucket`` batches of that order is sorted by size before it is cut, so a batch holds
    images of similar widths and little padding, and the window's batches are shuffled
    (with ``shuffle``), so wide and narrow batches alternate. A window's sizes are asked for
    only when one of its batches is: a dataset of millions of render-on-read samples is not
    measured up front. Everything is a pure function of ``(seed, epoch)``, and every index is
    visited once per epoch (but the remainder with ``drop_remainder``).
    """

    def __init__(self, count, batch_size, shuffle, seed=0, epoch=0, drop_remainder=False,
                 size_of=None, bucket=0):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1, got %d" % batch_size)
        order = np.asarray(epoch_order(count, shuffle, seed, epoch))
        if drop_remainder:
            order = order[:count - count % batch_size]
        self.order, self.batch_size, self.shuffle = order, batch_size, shuffle
        self.seed, self.epoch = seed, epoch
        self.size_of = size_of if bucket > 1 else None
        self.window = batch_size * bucket if self.size_of else max(1, len(order))
        self._windows = {}

    def __len__(self):
        return -(-len(self.order) // self.batch_size)

    def __getitem__(self, position):
        if not 0 <= position < len(self):
            raise IndexError("batch %d of an epoch of %d batches" % (position, len(self)))
        per_window = -(-self.window // self.batch_size)  # a whole-epoch window may end short
        window, offset = divmod(position, per_window)
        if window not in self._windows:  # a race computes the same pure result twice
            self._windows[window] = self._window_batches(window)
        return self._windows[window][offset]

    def _window_batches(self, window):
        chunk = self.order[window * self.window:(window + 1) * self.window]
        if self.size_of is not None:
            sizes = np.asarray(self.size_of(chunk))
            if len(sizes) != len(chunk):
                raise ValueError("bucketing needs one size per sample: %d sizes for %d samples"
                                 % (len(sizes), len(chunk)))
            chunk = chunk[np.argsort(sizes, kind="stable")]
        batches = [[int(i) for i in chunk[start:start + self.batch_size]]
                   for start in range(0, len(chunk), self.batch_size)]
        if self.size_of is not None and self.shuffle:
            permutation = np.random.RandomState([self.seed % 2 ** 32, self.epoch % 2 ** 32,
                                                 window, _BUCKET_STREAM]).permutation(len(batches))
            batches = [batches[i] for i in permutation]
        return batches


def batch_indices(count, batch_size, shuffle, seed=0, epoch=0, drop_remainder=False,
                  sizes=None, bucket=0):
    """All batches of :class:`EpochBatches` as a list; ``sizes``: one number per index."""
    if sizes is not None:
        sizes = np.asarray(sizes)
        if len(sizes) != count:
            raise ValueError("bucketing needs one size per sample: %d sizes for %d samples"
                             % (len(sizes), count))
    size_of = (lambda indices: sizes[indices]) if sizes is not None else None
    return list(EpochBatches(count, batch_size, shuffle, seed, epoch, drop_remainder, size_of,
                             bucket))


def width_keys(dataset, indices):
    """What bucketing sorts samples ``indices`` of a dataset by: ``dataset.width_keys(indices)``
    (image widths at the model's height, or label lengths where widths are unknown until an
    image is read)."""
    if not hasattr(dataset, "width_keys"):
        raise ValueError("bucketing needs a dataset that knows its image widths or label "
                         "lengths (folder, LMDB, synthetic); this one (%s) does not"
                         % type(dataset).__name__)
    return np.asarray(dataset.width_keys(indices), dtype=np.float64)


class BatchLoader(object):
    """Turns a dataset into :class:`Batch` objects, decoded ahead on a background thread.

    ``dataset`` needs ``len()`` and ``dataset[i] -> (array, text)``. If it
    also has ``safe_get(i)`` (returning None for unreadable images), those
    samples are skipped, recorded in :attr:`skipped` and the first few
    named (:class:`~crnn_multigpu.datasets.unreadable.UnreadableImages`); the next readable
    samples fill their place so batches stay full.
    """

    def __init__(self, dataset, charset, batch_size, fixed_width=None,
                 width_multiple=TIME_STEP_WIDTH, shuffle=True, seed=0, drop_remainder=False,
                 prefetch=4, log_first_skipped=5):
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1, got %d" % batch_size)
        self.dataset = dataset
        self.charset = charset
        self.batch_size = batch_size
        self.fixed_width = fixed_width
        self.width_multiple = width_multiple
        self.shuffle = shuffle
        self.seed = seed
        self.drop_remainder = drop_remainder
        self.prefetch = prefetch
        self._unreadable = UnreadableImages(dataset, log_first_skipped)

    def __len__(self):
        """Batches per epoch, assuming every image is readable."""
        count = len(self.dataset)
        if self.drop_remainder:
            return count // self.batch_size
        return (count + self.batch_size - 1) // self.batch_size

    @property
    def skipped(self):
        """The indices of the unreadable samples met so far, each once, in the order met."""
        return list(self._unreadable.indices)

    def _batches(self, epoch):
        arrays, texts = [], []
        for index in epoch_order(len(self.dataset), self.shuffle, self.seed, epoch):
            sample = self._unreadable.read(int(index))
            if sample is None:
                continue
            arrays.append(sample[0])
            texts.append(sample[1])
            if len(arrays) == self.batch_size:
                yield make_batch(arrays, texts, self.charset, self.fixed_width,
                                 self.width_multiple)
                arrays, texts = [], []
        if arrays and not self.drop_remainder:
            yield make_batch(arrays, texts, self.charset, self.fixed_width, self.width_multiple)

    def epoch(self, epoch=0):
        """Iterate over one epoch's batches (order fixed by ``seed`` and ``epoch``)."""
        if self.prefetch and self.prefetch > 0:
            return prefetch(self._batches(epoch), self.prefetch)
        return self._batches(epoch)

    def forever(self, start_epoch=0):
        """Endless batches, epoch after epoch."""
        epoch = start_epoch
        while True:
            produced = False
            for batch in self.epoch(epoch):
                produced = True
                yield batch
            if not produced:
                raise ValueError("the dataset yields no batch: it has %d samples, %d unreadable, "
                                 "batch_size %d" % (len(self.dataset), len(self.skipped),
                                                    self.batch_size))
            epoch += 1

    def __iter__(self):
        return self.epoch(0)


def iterate_batches(samples, charset, batch_size, shuffle=False, seed=0, epoch=0,
                    fixed_width=None, width_multiple=TIME_STEP_WIDTH, drop_remainder=False):
    """One epoch of :class:`Batch` objects from ``samples``, computed in this thread."""
    loader = BatchLoader(samples, charset, batch_size, fixed_width=fixed_width,
                         width_multiple=width_multiple, shuffle=shuffle, seed=seed,
                         drop_remainder=drop_remainder, prefetch=0)
    return loader.epoch(epoch)
