"""Gradient accumulation: ``k`` micro-batches per optimizer step, combined exactly.

``MultiGpuModel(..., accumulate_steps=k)`` asks an accumulation object, through a few hooks,
for everything that depends on ``k``; it decides none of it itself:

- ``combine(tower_grads, weights, devices)``: each tower adds its micro-batch gradient, times
  its example count, to an accumulator of its own (a float32 variable per gradient, on the
  tower's device) and counts its examples. On the ``k``-th micro-batch it hands the strategy
  each tower's mean gradient over all its examples of the cycle, weighted by that count, so
  the strategy's ordinary exact weighting gives ``sum of example gradients / examples``: the
  gradient one plain step on all the cycle's examples takes (for a model without batch norm),
  whatever the micro-batch and shard sizes. The strategy reduces once per optimizer step: the
  micro-batches before the last cause no cross-device traffic.
- ``gates()``: the op that the optimizer step, the update ops and the loss-scale update wait
  for. It is alive only on the ``k``-th micro-batch (a ``Switch`` whose true output is dead
  otherwise: TF's executor does not run an op with a dead input, as in ``precision``), and it
  runs after the accumulators were updated or reset, so that a failing non-finite check on the
  ``k``-th micro-batch leaves a fresh cycle behind.
- ``running_mean(value, weight)``: the example-weighted mean of a scalar (loss, error) over the
  cycle so far, this micro-batch included: on the ``k``-th, the whole step's value.
- ``reset_op``, ``variables()``: state that is not checkpointed (see below).

Running ``wrapper.objective`` once feeds one micro-batch; every ``k``-th run also applies
the optimizer step (the position in the cycle is the variable ``position``). Global step,
learning-rate schedules and summaries therefore count optimizer steps. Batch-norm moving
statistics (``UPDATE_OPS``) are updated once per optimizer step, from the ``k``-th micro-batch
(tower 0's shard): a skipped step then changes nothing, and a momentum keeps its meaning per
step whatever ``k`` is.

Non-finite values: a micro-batch's NaN or Inf is added to the accumulators, where it stays
(sums keep it), so the wrapper's ordinary check on the combined gradient and the cycle's loss
catches it on the ``k``-th micro-batch: the whole optimizer step is skipped (float32: the run
fails with the non-finite error, before any variable, slot or moving statistic changes;
``mixed_float16``: the step is skipped and the loss scale halves). Either way the accumulators
are reset in that run, so the next run starts a clean cycle. The micro-batches of a cycle
always run, so data keyed by the step stays aligned.

Sparse gradients (``tf.IndexedSlices``) are accumulated densely: a variable of the table's
full size per tower, and the optimizer then takes a dense update. This equals the sparse
update for optimizers that treat absent rows as zero gradients (SGD, momentum, TF's Adam,
which decays every row's moments anyway); a "lazy" optimizer would differ. With
``accumulate_steps=1`` nothing here is built and sparse gradients stay sparse.

Checkpoints: the accumulators and the position are global variables (so the usual
initialiser sets them) but not ``savable_variables``: checkpoints are the same as without
accumulation and move freely between tower counts and ``k``. The trainer saves only between
optimizer steps, where the accumulators are empty; a run resumed from a checkpoint starts a
new cycle (``post_init_op`` runs ``reset_op``), so it repeats the interrupted step's
micro-batches exactly as an uninterrupted run would.
"""
import numbers

from crnn_multigpu.compat import tf

__all__ = ["NoAccumulation", "Accumulation", "get", "check_steps"]


def check_steps(steps):
    """``steps`` as an int, or a ValueError saying what is wanted."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError("accumulate_steps must be a whole number >= 1 (micro-batches per "
                         "optimizer step; 1: no accumulation), got %r" % (steps,))
    return int(steps)


class NoAccumulation(object):
    """One micro-batch per step: every hook leaves the graph as it is without accumulation."""

    steps = 1
    position = None

    def create_variables(self):
        """Create the cycle's position in the current device scope (here: nothing)."""

    def combine(self, tower_grads_and_vars, weights, devices):
        """The per-tower gradient lists and weights to give the strategy (here: unchanged)."""
        return tower_grads_and_vars, weights

    def running_mean(self, value, weight):
        """``value`` averaged over the cycle so far (here: ``value`` itself)."""
        return value

    def gates(self):
        """Ops that every state change of the optimizer step waits for (here: none)."""
        return []

    def variables(self):
        """The accumulation's own variables (here: none)."""
        return []

    def reset_ops(self):
        """Ops that start a new cycle (here: none)."""
        return []


class Accumulation(NoAccumulation):
    """``steps`` micro-batches per optimizer step (see the module docstring)."""

    def __init__(self, steps):
        self.steps = check_steps(steps)
        self.position = None
        self._variables, self._stores, self._gate = [], [], None
        self._examples = None  # the cycle's examples over all towers, for running_mean

    def _new(self, name, shape, dtype):
        with tf.variable_scope("accumulation", reuse=tf.AUTO_REUSE):
            variable = tf.get_variable(name, shape=shape, dtype=dtype,
                                       initializer=tf.zeros_initializer(), trainable=False,
                                       collections=[tf.GraphKeys.GLOBAL_VARIABLES])
        self._variables.append(variable)
        return variable

    def create_variables(self):
        self.position = self._new("position", [], tf.int32)
        # Read once per run: every op of the run agrees on where the cycle is.
        self.is_last = tf.equal(self.position, self.steps - 1, name="is_last_micro_batch")
        self._stores.append(tf.assign(self.position, tf.where_v2(
            self.is_last, 0, self.position + 1)))

    def _store(self, variable, total):
        """Keep ``total`` for the next micro-batch, or zero after the last (a select, not a
        product: a NaN of a skipped cycle must not survive into the next)."""
        self._stores.append(tf.assign(variable, tf.where_v2(self.is_last, tf.zeros_like(total),
                                                            total)))

    def _on_last(self, tensor):
        """``tensor`` on the last micro-batch; a dead tensor (nothing computed) before."""
        return tf.raw_ops.Switch(data=tensor, pred=self.is_last)[1]

    def combine(self, tower_grads_and_vars, weights, devices):
        per_tower, totals = [], []
        for index, (pairs, weight, device) in enumerate(zip(tower_grads_and_vars, weights,
                                                            devices)):
            weight = tf.cast(weight, tf.float32)
            examples = self._new("tower_%d/examples" % index, [], tf.float32)
            total_weight = examples + weight
            self._store(examples, total_weight)
            grads = []
            with tf.device(device), tf.name_scope("accumulate_%d" % index):
                for grad, variable in pairs:
                    if isinstance(grad, tf.IndexedSlices):
                        grad = tf.convert_to_tensor(grad)  # dense accumulation: see above
                    accumulator = self._new("tower_%d/%s" % (index, variable.op.name),
                                            variable.shape, grad.dtype.base_dtype)
                    total = accumulator + grad * tf.cast(weight, grad.dtype)
                    self._store(accumulator, total)
                    grads.append(self._on_last(total))
                # Each tower's mean over its examples of the cycle, weighted by their count:
                # the strategy's exact weighting then gives the mean over every example.
                divisor = self._on_last(total_weight)
                per_tower.append([(g / tf.cast(divisor, g.dtype), v)
                                  for g, (_, v) in zip(grads, pairs)])
            totals.append(divisor)
        return per_tower, totals

    def running_mean(self, value, weight):
        if self._examples is None:
            self._examples = self._new("examples", [], tf.float32)
            self._examples_total = self._examples + tf.cast(weight, tf.float32)
            self._store(self._examples, self._examples_total)
        name = value.op.name.split("/")[-1]
        weighted = self._new("%s_sum" % name, [], tf.float32)
        total = weighted + tf.cast(value, tf.float32) * tf.cast(weight, tf.float32)
        self._store(weighted, total)
        return tf.divide(total, self._examples_total, name="step_" + name)

    def gates(self):
        if self._gate is None:
            # After every store: a non-finite check failing on the last micro-batch leaves
            # the accumulators reset and the position at 0.
            with tf.control_dependencies(self._stores):
                alive = tf.raw_ops.Switch(data=self.is_last, pred=self.is_last)[1]
                self._gate = tf.identity(alive, name="apply_gate").op
        return [self._gate]

    def variables(self):
        return list(self._variables)

    def reset_ops(self):
        return [tf.assign(v, tf.zeros_like(v)) for v in self._variables]


def get(steps):
    """The accumulation object for ``steps`` micro-batches per optimizer step."""
    steps = check_steps(steps)
    return NoAccumulation() if steps == 1 else Accumulation(steps)
