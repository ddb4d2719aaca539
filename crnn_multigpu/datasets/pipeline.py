"""Feed-free input: one ``tf.data`` pipeline per tower over the step-indexed global batches.

``make_input_fn(...)`` returns the ``InputPipeline`` given to
``MultiGpuModel(input_fn=...)``. Tower ``k``'s pipeline is ``range(start_step, ...) -> map(shard k of the global batch of that step,
parallel) -> prefetch_to_device(tower k)``: every element names its global step, so
the towers never race for "the next batch", and at any step tower ``k`` gets exactly
``split_batch(batch_for_step(step), n_towers)[k]``. The global batch of a step is
decoded once (by whichever tower asks first), shared, and dropped when every tower
took its shard. Data order is a pure function of ``(seed, step)``.

Resume: build the input_fn with ``start_step`` = the restored global step (crnn-train
reads it from the newest checkpoint before building the graph; the Trainer checks it),
so a resumed run sees the same batches as an uninterrupted one.

Gradient accumulation (``accumulate_steps=k``): the elements are micro-batches, numbered by
micro-step; optimizer step ``s`` takes those of micro-steps ``k*s`` .. ``k*s + k - 1``, so the
pipelines start at micro-step ``k * start_step``.
"""
import collections
import os
import threading
from concurrent.futures import Future
from contextlib import nullcontext

import numpy as np

from crnn_multigpu.wrapper.accumulation import check_steps
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets.batching import Batch, batch_indices
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.wrapper.devices import first_devices
from crnn_multigpu.wrapper.sharding import split_batch

INPUT_NAMES = ("images", "widths", "labels", "label_lengths")
_DTYPES = (np.float32, np.int32, np.int32, np.int32)


class SafeStepBatches(StepBatches):
    """``StepBatches`` that several threads may call at once (decoding steps in parallel)."""

    def __init__(self, *args, **kwargs):
        StepBatches.__init__(self, *args, **kwargs)
        self._lock = threading.Lock()
        self._orders = collections.OrderedDict()

    def _epoch_batches(self, epoch):
        with self._lock:
            if epoch not in self._orders:
                self._orders[epoch] = self.epoch_order(epoch)
                while len(self._orders) > 2:
                    self._orders.popitem(last=False)
            return self._orders[epoch]


class ArrayBatches(object):
    """In-memory, already padded arrays (a ``Batch`` or dict) as ``batch_for_step``.

    Rows are drawn in the same per-epoch shuffled order as ``StepBatches``.
    """

    def __init__(self, arrays, batch_size, seed=0):
        get = arrays.get if isinstance(arrays, dict) else lambda name: getattr(arrays, name, None)
        self.arrays = [np.asarray(get(name), dtype) for name, dtype in zip(INPUT_NAMES, _DTYPES)]
        self.texts = get("texts")
        count = len(self.arrays[0])
        if count < batch_size:
            raise ValueError("%d in-memory examples are fewer than one batch of %d"
                             % (count, batch_size))
        self.batch_size, self.seed, self.count = batch_size, seed, count
        self.batches_per_epoch = count // batch_size
        self.fixed_width = self.arrays[0].shape[2] if self.arrays[0].ndim == 4 else None

    def __call__(self, step):
        epoch, position = divmod(int(step), self.batches_per_epoch)
        rows = np.asarray(batch_indices(self.count, self.batch_size, True, self.seed, epoch,
                                        drop_remainder=True)[position])
        texts = [self.texts[i] for i in rows] if self.texts is not None else [""] * len(rows)
        return Batch(*([a[rows] for a in self.arrays] + [texts]))


class StepShards(object):
    """``shard(step, k)``: tower ``k``'s shard of the global batch of ``step``, thread-safe.

    The first tower asking for a step computes its batch; the others wait for it.
    A step's entry is dropped once all towers took their shard (and the oldest ones
    beyond ``keep``): data is a pure function of the step, so a late request recomputes.
    """

    def __init__(self, batch_for_step, n_towers, keep=64, thread_safe=True):
        self.batch_for_step, self.n_towers, self.keep = batch_for_step, n_towers, keep
        self._lock = threading.Lock()
        # A source that is not thread-safe is called by one thread at a time.
        self._serial = nullcontext() if thread_safe else threading.Lock()
        self._entries = collections.OrderedDict()  # step -> [Future, set of towers served]
        self.error = None  # the first Python exception of the source, for a readable message

    def shard(self, step, tower):
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
                    shards = split_batch(self.batch_for_step(step), self.n_towers)
                future.set_result([tuple(np.asarray(getattr(s, n), d)
                                         for n, d in zip(INPUT_NAMES, _DTYPES)) for s in shards])
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


def step_source(source, charset, batch_size, n_towers, fixed_width=100, seed=0):
    """``(batch_for_step, thread_safe)`` for a dataset, in-memory arrays or a callable."""
    if isinstance(source, dict) or (isinstance(source, tuple) and hasattr(source, "_fields")):
        return ArrayBatches(source, batch_size, seed), True
    if isinstance(source, StepBatches):
        if source.batch_size != batch_size:
            raise ValueError("the StepBatches make batches of %d, not %d"
                             % (source.batch_size, batch_size))
        if isinstance(source, SafeStepBatches):
            return source, True
        safe = SafeStepBatches(source.dataset, source.charset, source.batch_size,
                               source.fixed_width, source.seed, source.min_batch, source.augment,
                               source.bucket, source.width_multiple)
        safe.skipped, safe.too_long = source.skipped, source.too_long  # the caller's counters
        return safe, True
    if hasattr(source, "__len__") and (hasattr(source, "safe_get") or
                                       hasattr(source, "__getitem__")):
        return SafeStepBatches(source, charset, batch_size, fixed_width or None, seed,
                               min_batch=n_towers), True
    if callable(source):
        return source, False  # an arbitrary batch_for_step(step): called one at a time,
        # its widths unknown to the graph (a ``fixed_width`` attribute declares them)
    raise TypeError("make_input_fn needs a dataset (len and safe_get/[]), in-memory arrays (a "
                    "Batch or dict) or a callable step -> Batch; got %s" % type(source).__name__)


def _options():
    """No tf.data autotuning: parallelism is set explicitly, and on TF 2.x the autotuning
    thread can hold up ``Session.close`` for many seconds (it waits out its sleep)."""
    options = tf.data.Options()
    if hasattr(options, "autotune"):
        options.autotune.enabled = False
    else:
        options.experimental_optimization.autotune = False
    return options


class InputPipeline(object):
    """Feed-free input for ``MultiGpuModel(..., input_fn=pipeline)``: one ``tf.data`` pipeline per tower.

    Called as ``pipeline(tower_index, n_towers)`` it returns that tower's dict of tensors
    (``INPUT_NAMES``). What training needs to know about it are named fields:
    ``start_step`` (the global step of its first element), ``batch_size`` (global, per
    micro-batch), ``accumulate_steps`` (micro-batches per step), ``n_towers``, ``devices``,
    ``batch_for_step`` and ``source_error()``. Build it with :func:`make_input_fn`.
    """

    def __init__(self, batch_for_step, thread_safe, batch_size, n_towers, start_step, devices,
                 prefetch, parallel_calls, to_device, accumulate_steps=1):
        self.batch_for_step, self.batch_size, self.n_towers = batch_for_step, batch_size, n_towers
        self.start_step, self.devices = int(start_step), devices
        self.accumulate_steps = check_steps(accumulate_steps)
        self.shards = StepShards(batch_for_step, n_towers, thread_safe=thread_safe)
        self.prefetch, self.parallel_calls, self.to_device = prefetch, parallel_calls, to_device
        self.width = getattr(batch_for_step, "fixed_width", None) or None  # static image width

    def source_error(self):
        """The data source's first exception (e.g. no readable image in a batch), or None."""
        return self.shards.error

    def __call__(self, tower_index, towers=None):
        if towers is not None and towers != self.n_towers:
            raise ValueError("the input_fn was made for %d towers, the model has %d"
                             % (self.n_towers, towers))
        numpy_function = getattr(tf, "numpy_function", None) or tf.py_func
        shapes = ([None, None, self.width, 1], [None], [None, None], [None])

        def load(step):
            return self.shards.shard(step, tower_index)

        def to_dict(step):
            values = numpy_function(load, [step], [tf.float32, tf.int32, tf.int32, tf.int32],
                                    name="shard_%d" % tower_index)
            for value, shape in zip(values, shapes):
                value.set_shape(shape)
            return dict(zip(INPUT_NAMES, values))

        with tf.name_scope("input_%d" % tower_index):
            dataset = tf.data.Dataset.range(self.start_step * self.accumulate_steps, 2 ** 62)
            # Options before prefetch_to_device too: it iterates this dataset on its own.
            dataset = dataset.map(to_dict, num_parallel_calls=self.parallel_calls).with_options(
                _options())
            if self.to_device:
                dataset = dataset.apply(tf.data.experimental.prefetch_to_device(
                    self.devices[tower_index], buffer_size=self.prefetch))
            else:
                dataset = dataset.prefetch(self.prefetch)
            return tf.data.make_one_shot_iterator(dataset.with_options(_options())).get_next()


def make_input_fn(source, charset, batch_size, n_towers, fixed_width=100, seed=0, start_step=0,
                  prefetch=2, devices=None, parallel_calls=None, to_device=True,
                  accumulate_steps=1):
    """The :class:`InputPipeline` (``input_fn`` of ``MultiGpuModel``) over ``source``.

    Args:
      source: a dataset (``len`` and ``safe_get(i)``/``ds[i] -> (array [H, w], text)``: folder,
        LMDB, synthetic), in-memory padded arrays (a ``Batch`` or dict with images, widths,
        labels, label_lengths), a ``StepBatches`` or any callable ``step -> Batch``.
      charset, batch_size (global), fixed_width, seed: as for ``StepBatches``.
      n_towers: the towers the global batch is split over.
      start_step: the global step of the first element (the restored step on resume).
      prefetch: ready batches buffered on each tower's device.
      devices: the towers' devices (default: the first n_towers GPUs, else ``/cpu:0..``).
      parallel_calls: steps decoded at once (default: min(4, CPU count)).
      to_device: ``prefetch_to_device`` onto the tower (else a plain host ``prefetch``).
      accumulate_steps: micro-batches (of ``batch_size`` each) per optimizer step, as the
        model's ``accumulate_steps``; ``source`` is then indexed by micro-step.
    """
    if n_towers < 1 or batch_size < n_towers:
        raise ValueError("batch_size %d cannot be split over %d tower(s)" % (batch_size, n_towers))
    batch_for_step, thread_safe = step_source(source, charset, batch_size, n_towers,
                                              fixed_width, seed)
    devices = list(devices) if devices is not None else first_devices(n_towers)
    if len(devices) != n_towers:
        raise ValueError("make_input_fn got %d device(s) for %d tower(s)" % (len(devices), n_towers))
    parallel = parallel_calls or max(1, min(4, os.cpu_count() or 1))
    return InputPipeline(batch_for_step, thread_safe, batch_size, n_towers, start_step, devices,
                         prefetch, parallel, to_device, accumulate_steps)
