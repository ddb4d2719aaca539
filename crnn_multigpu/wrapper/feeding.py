"""Feeding the towers: the global batch of each step, one shard per tower, made ahead.

Training asks for "the batch of step s", never "the next batch", so a resumed run sees the data
an uninterrupted one would. A *step source* gives those batches (the datasets' ``StepBatches``
and ``ArrayBatches`` are two): a callable ``source(step) -> batch``, the global batch of that
step as a dict or namedtuple of numpy arrays, example axis first, with the attributes

- ``batch_size``: the examples in a batch, which the towers split;
- ``signature``: ``{name: (dtype, static shape)}`` of the fields the towers take, in order
  (any other field, such as label texts, stays on the host);
- ``thread_safe`` (optional, default False): whether several threads may call it at once.

A wrapper feeds from a step source in one of two ways:

- feed-free, ``MultiGpuModel(..., batches=source)``: the wrapper builds a :class:`StepInput` from
  its own devices and ``accumulate_steps`` (``wrapper.input``). Tower ``k``'s ``tf.data``
  pipeline is ``range(first micro-step, ...) -> map(shard k of that step's batch, in parallel)
  -> prefetch_to_device(tower k)``; every element names its step, so the towers never race for
  "the next batch", and tower ``k`` gets exactly ``split_batch(source(step), n_towers)[k]``. A
  step's batch is made once (by whichever tower asks first), shared, and dropped when every
  tower took its shard. Accumulating ``k`` micro-batches per optimizer step, the elements are
  micro-batches: optimizer step ``s`` takes those of micro-steps ``k*s`` .. ``k*s + k - 1``.
  The first micro-step is ``k`` times the global step read when the wrapper's ``post_init_op``
  runs (after initialising or restoring), so the input continues where training is.
- feed_dict: the trainer calls the source itself, ahead on a thread (``host_prefetch``).
"""
import collections
import os
import threading
from concurrent.futures import Future
from contextlib import nullcontext

import numpy as np

from crnn_multigpu.compat import tf
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


def _options():
    """No tf.data autotuning: parallelism is set explicitly, and on TF 2.x the autotuning
    thread can hold up ``Session.close`` for many seconds (it waits out its sleep)."""
    options = tf.data.Options()
    if hasattr(options, "autotune"):
        options.autotune.enabled = False
    else:
        options.experimental_optimization.autotune = False
    return options


class StepInput(object):
    """Feed-free input from a step source: one ``tf.data`` pipeline per tower device.

    ``MultiGpuModel(..., batches=source)`` builds it from its own ``devices`` and
    ``accumulate_steps`` and calls :meth:`tower` once per tower; the wrapper's ``post_init_op``
    runs its ``initializers``, which start every pipeline at micro-step
    ``accumulate_steps * global_step``.

    Args:
      source: a step source (see the module docstring).
      devices: the towers' devices; each global batch is split over them.
      accumulate_steps: micro-batches per optimizer step; ``source`` is then called with
        micro-steps.
      global_step: the variable that says where the pipelines start; None: at step 0.
      prefetch: ready batches buffered on each tower's device.
      parallel_calls: steps made at once (default: min(4, CPU count)).
      to_device: ``prefetch_to_device`` onto the tower (else a plain host ``prefetch``).

    What training needs to know of it: ``batch_size`` (the source's), ``devices``,
    ``accumulate_steps``, ``initializers`` and :meth:`source_error`.
    """

    def __init__(self, source, devices, accumulate_steps=1, global_step=None, prefetch=2,
                 parallel_calls=None, to_device=True):
        self.devices, self.accumulate_steps = list(devices), accumulate_steps
        self.batch_size = source.batch_size
        if self.batch_size < len(self.devices):
            raise ValueError("batches of %d cannot be split over %d towers: every tower needs "
                             "at least one example" % (self.batch_size, len(self.devices)))
        self.signature = list(source.signature.items())
        self.shards = StepShards(source, len(self.devices), self.signature,
                                 thread_safe=getattr(source, "thread_safe", False))
        self.prefetch, self.to_device = prefetch, to_device
        self.parallel_calls = parallel_calls or max(1, min(4, os.cpu_count() or 1))
        self.initializers = []
        with tf.name_scope("input"):
            if global_step is None:
                self.first_micro_step = tf.constant(0, tf.int64)
            else:
                with tf.device(global_step.device):
                    self.first_micro_step = tf.cast(global_step, tf.int64) * accumulate_steps

    def source_error(self):
        """The step source's first exception (e.g. no readable image in a batch), or None."""
        return self.shards.error

    def tower(self, index):
        """Tower ``index``'s input tensors, ``{name: tensor}`` for the source's signature.

        Build it on the tower's host CPU: the pipeline itself moves ready batches to the tower.
        """
        numpy_function = getattr(tf, "numpy_function", None) or tf.py_func
        dtypes = [tf.as_dtype(dtype) for _, (dtype, _) in self.signature]

        def load(step):
            return self.shards.shard(step, index)

        # Plain graph code: autograph's conversion of it cost TF 1.15 about 0.3 s a tower.
        @tf.autograph.experimental.do_not_convert
        def to_dict(step):
            values = numpy_function(load, [step], dtypes, name="shard_%d" % index)
            for value, (_, (_, shape)) in zip(values, self.signature):
                value.set_shape(shape)
            return dict((name, value) for (name, _), value in zip(self.signature, values))

        with tf.name_scope("input_%d" % index):
            dataset = tf.data.Dataset.range(self.first_micro_step, 2 ** 62)
            # Options before prefetch_to_device too: it iterates this dataset on its own.
            dataset = dataset.map(to_dict, num_parallel_calls=self.parallel_calls).with_options(
                _options())
            if self.to_device:
                dataset = dataset.apply(tf.data.experimental.prefetch_to_device(
                    self.devices[index], buffer_size=self.prefetch))
            else:
                dataset = dataset.prefetch(self.prefetch)
            # Initialisable, not one-shot: where it starts is the global step at start-up.
            iterator = tf.data.make_initializable_iterator(dataset.with_options(_options()))
            self.initializers.append(iterator.initializer)
            return iterator.get_next()
