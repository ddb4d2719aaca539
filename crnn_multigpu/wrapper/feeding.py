"""Feeding the towers: the global batch of each step, one shard per tower, made ahead.

Training asks for "the batch of step s", never "the next batch", so a resumed run sees the data
an uninterrupted one would. A *step source* gives those batches (the datasets' ``StepBatches``
and ``ArrayBatches`` are two): a callable ``source(step) -> batch``, the global batch of that
step as a dict or namedtuple of numpy arrays, example axis first, with the attributes

- ``batch_size``: the examples in a batch, which the towers split;
- ``signature``: ``{name: (dtype, static shape)}`` of the fields the towers take, in order
  (any other field, such as label texts, stays on the host);
- ``thread_safe`` (optional, default False): whether several threads may call it at once.

An *input* (:class:`Input`) turns a step source into what one wrapper's towers take, step by
step: it owns the prefetching, the micro-steps of gradient accumulation, the split into one
shard per tower and the feed. ``MultiGpuModel(..., batches=...)`` takes one (a bare step source
becomes a :class:`StepInput`), and the trainer asks it, whichever it is, for each run's feed.
Two kinds:

- :class:`FedInput`: the batches go through the towers' placeholders (``feed_dict``), made
  ahead on a thread (``host_prefetch``). Any callable ``step -> batch`` will do.
- :class:`StepInput`, feed-free: tower ``k``'s ``tf.data`` pipeline is ``range(first
  micro-step, ...) -> map(shard k of that step's batch, in parallel) -> prefetch_to_device(tower
  k)``; every element names its step, so the towers never race for "the next batch", and tower
  ``k`` gets exactly ``split_batch(source(step), n_towers)[k]``. A step's batch is made once (by
  whichever tower asks first), shared, and dropped when every tower took its shard.

Accumulating ``k`` micro-batches per optimizer step, both call the source with micro-steps:
optimizer step ``s`` takes those of micro-steps ``k*s`` .. ``k*s + k - 1``, so the input
continues where training is (the feed-free one from the global step read when the wrapper's
``post_init_op`` runs, after initialising or restoring).
"""
import collections
import itertools
import os
import time

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.host_prefetch import prefetch
from crnn_multigpu.wrapper.sharding import batch_size as count_examples
from crnn_multigpu.wrapper.sharding import check_shards
from crnn_multigpu.wrapper.step_shards import StepShards

# One run's share of an input: ``feed``, the ``{tensor: value}`` to add to the run (empty for a
# feed-free input); ``examples``, how many examples the run trains on; ``waited``, the seconds
# the host blocked for them (0.0 where waiting happens inside ``session.run``).
MicroBatch = collections.namedtuple("MicroBatch", "feed examples waited")


class Input(object):
    """What feeds one wrapper's towers; the hooks, in the order they are called:

    - ``setup(wrapper)``: once, by the wrapper, when its ``devices``, ``accumulation`` and
      ``global_step`` exist and before its towers are built (a fed input builds nothing in the
      graph, so the trainer may also set one up on a built wrapper). Refuses a source whose
      batches cannot give every tower an example.
    - ``tower(index)``: while tower ``index`` is built: its input tensors, passed to the model
      as ``inputs=``, or None: the model's placeholders are fed.
    - ``initializers``: ops the wrapper's ``post_init_op`` runs after initialising or restoring.
    - ``start(step)``: before the first step of a run, which begins at global step ``step``.
    - ``micro_batches(step)``: the :class:`MicroBatch` of each run of optimizer step ``step``
      (``accumulate_steps`` of them), in order; steps are asked for one after the other.
    - ``source_error()``: after a run failed, the step source's own exception behind it (for a
      readable message), or None.
    - ``close()``: after the last step, also after an error; ``start`` may follow again.

    ``measures_wait``: whether ``MicroBatch.waited`` is measured: the host waits for a batch in
    Python. An input that waits inside ``session.run`` cannot tell waiting from computing.
    """

    measures_wait = False
    initializers = ()

    def __init__(self, source):
        self.source = source
        self.accumulate_steps, self.n_towers = 1, None

    def setup(self, wrapper):
        """Take the wrapper's towers and micro-steps; refuse batches smaller than the towers."""
        self._place(len(wrapper.devices), wrapper.accumulation.steps)

    def _place(self, n_towers, accumulate_steps):
        if self.n_towers is not None:
            # Its state (a wrapper's placeholders, pipelines of their towers) is one wrapper's.
            raise ValueError("this input already feeds %d towers: an input feeds one wrapper; "
                             "make another for this one" % self.n_towers)
        # A source that states its batch size is refused now, before any tower is built.
        if getattr(self.source, "batch_size", None) is not None:
            check_shards(self.source.batch_size, n_towers, "the batch size")
        self.n_towers, self.accumulate_steps = n_towers, accumulate_steps

    def tower(self, index):
        """Tower ``index``'s input tensors (here: None, its placeholders are fed)."""
        return None

    def start(self, step):
        """Begin at global step ``step`` (here: nothing to do)."""

    def micro_batches(self, step):
        """The :class:`MicroBatch` of each run of optimizer step ``step``."""
        raise NotImplementedError

    def source_error(self):
        """The step source's exception behind a failed run, or None (here: None)."""
        return None

    def close(self):
        """Stop whatever ``start`` started (here: nothing)."""


class FedInput(Input):
    """Batches fed through the towers' placeholders: each run's feed is the wrapper's
    ``feed_dict`` of the batch split over its towers.

    ``source`` is called with the micro-steps in order from where the run starts, on a thread
    (``host_prefetch``), ``depth`` batches ahead of the steps; it may be any callable
    ``step -> batch`` (``batch_size`` and ``signature`` are not needed). A batch with fewer
    examples than towers fails when it is split. The time the steps wait for batches is
    measured.
    """

    measures_wait = True

    def __init__(self, source, depth=4):
        Input.__init__(self, source)
        self.depth, self.wrapper, self._batches = depth, None, None

    def setup(self, wrapper):
        """Keep the wrapper: its ``split`` and ``feed_dict`` make each run's feed."""
        Input.setup(self, wrapper)
        self.wrapper = wrapper

    def start(self, step):
        """Make the batches of the micro-steps from global step ``step`` on, ahead."""
        self.close()
        first = step * self.accumulate_steps
        self._batches = prefetch(((s, self.source(s)) for s in itertools.count(first)),
                                 self.depth)

    def micro_batches(self, step):
        """Each micro-batch of ``step`` as the towers' feed, in order."""
        for micro in range(self.accumulate_steps):
            waited = time.time()
            batch_step, batch = next(self._batches)
            waited = time.time() - waited
            expected = step * self.accumulate_steps + micro
            assert batch_step == expected, \
                "batch for micro-step %d arrived at micro-step %d" % (batch_step, expected)
            yield MicroBatch(self.wrapper.feed_dict(self.wrapper.split(batch)),
                             count_examples(batch), waited)

    def close(self):
        """Stop the thread that makes batches ahead."""
        if self._batches is not None:
            self._batches.close()
            self._batches = None


def _options():
    """No tf.data autotuning: parallelism is set explicitly, and on TF 2.x the autotuning
    thread can hold up ``Session.close`` for many seconds (it waits out its sleep)."""
    options = tf.data.Options()
    if hasattr(options, "autotune"):
        options.autotune.enabled = False
    else:
        options.experimental_optimization.autotune = False
    return options


class StepInput(Input):
    """Feed-free input from a step source: one ``tf.data`` pipeline per tower device.

    ``MultiGpuModel(..., batches=source)`` builds it, or takes one made with other settings;
    its ``setup`` gives the wrapper's devices, micro-steps and global step, and the wrapper calls
    :meth:`tower` once per tower. The wrapper's ``post_init_op`` runs its ``initializers``, which
    start every pipeline at micro-step ``accumulate_steps * global_step``. Each run then takes
    one element of every tower's pipeline: the runs need no feed.

    Args:
      source: a step source (see the module docstring).
      devices, accumulate_steps, global_step: to build tower inputs without a wrapper (the
        caller builds the towers); a wrapper's ``setup`` gives its own. ``devices``: the towers'
        devices, over which each global batch is split; ``accumulate_steps``: micro-batches per
        optimizer step (``source`` is then called with micro-steps); ``global_step``: the
        variable that says where the pipelines start (None: at step 0).
      prefetch: ready batches buffered on each tower's device.
      parallel_calls: steps made at once (default: min(4, CPU count)).
      to_device: ``prefetch_to_device`` onto the tower (else a plain host ``prefetch``).
    """

    def __init__(self, source, devices=None, accumulate_steps=1, global_step=None, prefetch=2,
                 parallel_calls=None, to_device=True):
        Input.__init__(self, source)
        self.batch_size = source.batch_size
        self.signature = list(source.signature.items())
        self.prefetch, self.to_device = prefetch, to_device
        self.parallel_calls = parallel_calls or max(1, min(4, os.cpu_count() or 1))
        self.initializers = []
        self.devices = self.shards = self.first_micro_step = None
        if devices is not None:
            self._build(devices, accumulate_steps, global_step)

    def setup(self, wrapper):
        """Split over the wrapper's devices, start where its global step says."""
        self._build(wrapper.devices, wrapper.accumulation.steps, wrapper.global_step)

    def _build(self, devices, accumulate_steps, global_step):
        self._place(len(devices), accumulate_steps)
        self.devices = list(devices)
        self.shards = StepShards(self.source, len(self.devices), self.signature,
                                 thread_safe=getattr(self.source, "thread_safe", False))
        with tf.name_scope("input"):
            if global_step is None:
                self.first_micro_step = tf.constant(0, tf.int64)
            else:
                with tf.device(global_step.device):
                    self.first_micro_step = tf.cast(global_step, tf.int64) * accumulate_steps

    def micro_batches(self, step):
        """Each run of ``step`` takes the next element of every pipeline: no feed."""
        for _ in range(self.accumulate_steps):
            yield MicroBatch({}, self.batch_size, 0.0)

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
