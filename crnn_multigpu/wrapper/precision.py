"""Precision policies: float32, or mixed precision with float32 master variables.

A policy is a small object with hooks that the tower wrapper calls while it builds the
graph; it decides nothing about placement, so it composes with any placement strategy:

- ``variable_scope()``: entered around each tower's model construction, as one more nested
  variable scope (it keeps the caller's scope, reuse and name scope). Its custom getter
  leaves every variable float32 and plainly named, and hands the model a cast of each
  trainable float32 variable to the compute dtype (the cast runs where the tower runs).
  Gradients flow back through the cast, so they arrive float32 at the master variable.
  Non-trainable variables (moving statistics, counters) are handed over as they are.
- ``scale_loss(loss)`` / ``unscale(grads_and_vars)``: dynamic loss scaling (float16 only).
- ``guard(finite, data)``: a :class:`Gate`, whose ``op`` every state change of a step waits for
  and whose ``refused`` says that the step was refused as non-finite.
- ``finish(finite, global_step, gate)``: extra ops of the step (the loss-scale update); ``gate``
  is what ``guard`` returned (None when the step is not checked), so a policy keeps no state
  between the two hooks.

Gates are built from ``Switch`` outputs that are dead when a step must not change anything: TF's
executor does not run an op with a dead input (this is how graph-mode ``tf.cond`` gates its
branches; ``tf.cond`` itself cannot gate update ops that were built inside the towers, outside
the cond), and a target op that is dead simply does not run, without an error. So a refused
step runs to its end and changes nothing, and the caller reads ``refused`` in the same run.

Models then compute in the dtype of the variables they read; ``layers`` does so and
keeps float32 where precision matters (batch-norm moments and normalisation); ``CRNN``
feeds CTC and the softmax float32 logits. A checkpoint of a mixed-precision run holds
the same float32 variables under the same names as the plain model's (plus the loss
scale for float16), so it restores into the float32 model for inference.

Pass a name (``"float32"``, ``"mixed_float16"``, ``"mixed_bfloat16"``) or a policy object
(e.g. ``MixedFloat16(initial_scale=2.0 ** 10, growth_steps=500)``).
"""
import collections
from contextlib import contextmanager

from crnn_multigpu.compat import tf

__all__ = ["Float32", "Gate", "MixedBFloat16", "MixedFloat16", "get", "NAMES"]

# What a policy's guard built: ``op``, alive (run) only when the step applies: every state
# change of the step waits for it; ``accepted``, alive unless the step is refused; ``skipped``,
# alive only in a step the policy skips itself (None for a policy that never skips);
# ``refused``, a boolean scalar, True when the step was refused as non-finite (nothing
# changed); ``check``, an assertion that fails a refused step, for callers who want an error.
Gate = collections.namedtuple("Gate", "op accepted skipped refused check")


def _alive_when(condition, name):
    """An op that runs only in a run where the boolean scalar ``condition`` is true."""
    return tf.identity(tf.raw_ops.Switch(data=condition, pred=condition)[1], name=name).op


class Float32(object):
    """Everything float32: the hooks change nothing (the graph is the one without a policy)."""

    name = "float32"
    compute_dtype = tf.float32
    needs_finite_check = False

    def create_variables(self):
        """Create the policy's own variables in the current device scope (here: none)."""

    def variables(self):
        """The policy's own variables, which checkpoints keep (here: none)."""
        return []

    @contextmanager
    def variable_scope(self):
        """The scope to build a tower's model in (here: the caller's, untouched)."""
        yield

    def scale_loss(self, loss):
        """The loss to differentiate (here: the loss itself)."""
        return loss

    def unscale(self, grads_and_vars):
        """Gradients of the true loss from those of ``scale_loss(loss)`` (here: unchanged)."""
        return grads_and_vars

    def guard(self, finite, data):
        """The :class:`Gate` of the step.

        Here: a non-finite step is refused; ``check`` fails it with the message ``data``.
        """
        applies = _alive_when(finite, "when_finite")
        return Gate(op=applies, accepted=applies, skipped=None,
                    refused=tf.logical_not(finite, name="step_refused"),
                    check=tf.Assert(finite, data, name="check_finite"))

    def finish(self, finite, global_step, gate):
        """Extra ops to run with the step (here: none)."""
        return []


class _Mixed(Float32):
    """Float32 master variables, read by the towers in ``compute_dtype``."""

    @contextmanager
    def variable_scope(self):
        # auxiliary_name_scope=False: re-entering the current scope must not reset the
        # name scope (tower 0's op names stay the plain model's, later towers' keep tower_i/).
        with tf.variable_scope(tf.get_variable_scope(), custom_getter=self._cast_on_read,
                               auxiliary_name_scope=False):
            try:
                yield
            except TypeError as error:
                # An op whose definition lacks the dtype fails while the graph is built; say
                # what to do rather than leave TensorFlow's "not in list of allowed values".
                if self.compute_dtype.name not in str(error):
                    raise
                raise TypeError("precision %r: an op of the model has no %s version (%s). Cast "
                                "its inputs to float32 there (layers.float32), or use another "
                                "precision" % (self.name, self.compute_dtype.name,
                                               str(error).splitlines()[0]))

    def _cast_on_read(self, getter, name, *args, **kwargs):
        variable = getter(name, *args, **kwargs)
        if kwargs.get("trainable") is False or variable.dtype.base_dtype != tf.float32:
            return variable
        return tf.cast(variable, self.compute_dtype)


class MixedBFloat16(_Mixed):
    """Towers compute in bfloat16; float32's exponent range, so no loss scaling.

    On CPU, both TensorFlow stacks here (1.15 and 2.x) have bfloat16 kernels for
    convolution, matmul, pooling and the element-wise ops; ``BlockLSTM`` accepts only
    float16/float32, so ``layers.lstm`` runs it in float32 (see there). A model op whose
    definition has no bfloat16 version fails while the wrapper is built, with a TypeError
    that quotes TensorFlow's complaint and says what to do; one with the version but no
    kernel on the chosen device fails at the first step with TensorFlow's "No OpKernel was
    registered" error.
    """

    name = "mixed_bfloat16"
    compute_dtype = tf.bfloat16


class MixedFloat16(_Mixed):
    """Towers compute in float16 with dynamic loss scaling.

    The loss is multiplied by ``scale`` before differentiation so that small float16
    gradients do not flush to zero; the float32 gradients are divided by it again after the
    towers are combined (before gradient processors and clipping, which see true gradients).

    A float16 overflow is an expected event, not an error: when the combined gradients or
    the loss are non-finite, the step is *skipped* - no variable, optimizer slot (nor Adam's
    beta powers) or moving statistic changes, the global step advances (the batch is
    consumed, as with the trainer's ``on_nonfinite='skip'``) - and the scale is halved. After
    ``growth_steps`` finite steps in a row it is doubled. The skip is built on the wrapper's
    non-finite guard: the guard the update ops and the optimizer wait for is dead when
    ``finite`` is false (see the module docstring). Running ``objective`` is unchanged for the
    caller: a target op that is dead in a skipped step simply does not run, without an error.

    The scale never drops below ``min_scale`` (1): a non-finite gradient at that scale is not
    an overflow that scaling can cure (a NaN in the data, a diverged model), so the step
    is then refused as a float32 one is (``objective`` fails with the wrapper's ordinary
    non-finite error), before anything changes, and the trainer's ``on_nonfinite`` policy
    applies.

    The scale and the count of finite steps are variables (``loss_scale/scale``,
    ``loss_scale/good_steps``) on the variable device, saved in checkpoints: a resumed run
    continues with the same scale.
    """

    name = "mixed_float16"
    compute_dtype = tf.float16
    needs_finite_check = True

    def __init__(self, initial_scale=2.0 ** 15, growth_steps=2000, min_scale=1.0):
        if not initial_scale >= min_scale > 0:
            raise ValueError("need initial_scale >= min_scale > 0, got %r and %r"
                             % (initial_scale, min_scale))
        if int(growth_steps) < 1:
            raise ValueError("growth_steps must be a positive number of steps, got %r"
                             % (growth_steps,))
        self.initial_scale, self.growth_steps = float(initial_scale), int(growth_steps)
        self.min_scale = float(min_scale)
        self.scale = self.good_steps = None

    def create_variables(self):
        """Create the loss-scale variables in the current device scope (once, before towers)."""
        local = dict(trainable=False, collections=[tf.GraphKeys.GLOBAL_VARIABLES])
        with tf.variable_scope("loss_scale", reuse=tf.AUTO_REUSE):
            self.scale = tf.get_variable("scale", initializer=tf.constant(self.initial_scale),
                                         **local)
            self.good_steps = tf.get_variable("good_steps", initializer=tf.constant(0, tf.int64),
                                              **local)

    def variables(self):
        """The loss scale and its count of finite steps: checkpoints keep them, so a resumed
        run goes on with the scale it had."""
        return [v for v in (self.scale, self.good_steps) if v is not None]

    def scale_loss(self, loss):
        # float32 product: a float16 loss times 2**15 would overflow by itself.
        return tf.cast(loss, tf.float32) * self.scale

    def unscale(self, grads_and_vars):
        inverse = 1.0 / self.scale
        unscaled = []
        for grad, variable in grads_and_vars:
            if isinstance(grad, tf.IndexedSlices):
                grad = tf.IndexedSlices(grad.values * tf.cast(inverse, grad.values.dtype),
                                        grad.indices, grad.dense_shape)
            else:
                grad = grad * tf.cast(inverse, grad.dtype)
            unscaled.append((grad, variable))
        return unscaled

    def guard(self, finite, data):
        """A gate alive (its op runs) only when ``finite``; refuses the step only at the
        minimum scale, and skips it otherwise."""
        curable = tf.logical_or(finite, self.scale > self.min_scale)
        accepted = _alive_when(curable, "when_curable")
        with tf.control_dependencies([accepted]):
            when_not, when_finite = tf.raw_ops.Switch(data=finite, pred=finite)
        return Gate(op=tf.identity(when_finite, name="when_finite").op, accepted=accepted,
                    skipped=tf.identity(when_not, name="when_not_finite").op,
                    refused=tf.logical_not(curable, name="step_refused"),
                    check=tf.Assert(curable, data + ["at the minimum loss scale", self.scale],
                                    name="check_finite"))

    def finish(self, finite, global_step, gate):
        """Update the scale; on a skipped step advance the global step (the optimizer did not)."""
        with tf.name_scope("loss_scale"), tf.device(self.scale.device):
            good = self.good_steps + 1
            grow = tf.logical_and(finite, good >= self.growth_steps)
            halved = tf.maximum(self.scale * 0.5, self.min_scale)
            new_scale = tf.where(grow, self.scale * 2.0, tf.where(finite, self.scale, halved))
            new_good = tf.where(tf.logical_and(finite, tf.logical_not(grow)), good,
                                tf.zeros_like(good))
            with tf.control_dependencies([gate.accepted]):
                update = tf.group(tf.assign(self.scale, new_scale),
                                  tf.assign(self.good_steps, new_good), name="update")
            with tf.control_dependencies([gate.skipped]):
                advance = tf.assign_add(global_step, 1, name="skip_step").op
        return [update, advance]


NAMES = ("float32", "mixed_float16", "mixed_bfloat16")
_CLASSES = dict(zip(NAMES, (Float32, MixedFloat16, MixedBFloat16)))


def get(precision):
    """A fresh policy for a name in ``NAMES``, or the given policy object itself."""
    if isinstance(precision, Float32):
        return precision
    if precision is None:
        return Float32()
    if precision not in _CLASSES:
        raise ValueError("unknown precision %r: use one of %s (or a crnn_multigpu.wrapper.precision policy)"
                         % (precision, ", ".join(NAMES)))
    return _CLASSES[precision]()
