"""Building the towers: one instance of a single-device model class per device, in one graph,
all sharing tower 0's variables.

Tower 0 creates the variables exactly as the model would alone (same names, no tower prefix,
so checkpoints move freely between tower counts, strategies and single-device inference);
later towers reuse them, and a tower that creates a trainable variable of its own is refused
by name. Where each variable lives is the placement strategy's answer; this module only asks.
"""
import functools
import logging
from contextlib import nullcontext

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import VARIABLE_OP_TYPES, host_device, tower_device_function

log = logging.getLogger(__name__)


def check_xla(xla, devices):
    """Refuse an ``xla`` setting the towers cannot run, before anything is built."""
    if not isinstance(xla, bool):
        raise TypeError("xla must be True or False, got %r" % (xla,))
    cpu_towers = [d for d in devices
                  if (tf.DeviceSpec.from_string(d).device_type or "CPU").upper() == "CPU"]
    if xla and len(cpu_towers) > 1:
        # Measured on TF 1.15 and 2.21: compiled clusters on a second CPU device of the
        # process fail at run time with "Multiple CPU devices".
        raise ValueError("xla=True runs compiled towers on one CPU device per process, but "
                         "%d towers are on CPUs (%s). Use xla=True with GPU towers or a "
                         "single CPU tower." % (len(cpu_towers), ", ".join(cpu_towers)))


def _stand_ins(inputs):
    """``inputs`` (any nest) with every tensor replaced by a placeholder of its dtype and static
    shape, in the current default graph; other leaves are kept."""
    if inputs is None:
        return None
    return tf.nest.map_structure(
        lambda leaf: tf.placeholder(leaf.dtype, leaf.shape) if isinstance(leaf, tf.Tensor)
        else leaf, inputs)


class Towers(object):
    """What building left: the tower models, tower 0's trainable variables, every variable of
    the plain model, and the update ops that run once per step (tower 0's)."""

    def __init__(self, models, variables, model_variables, update_ops):
        self.models, self.variables = models, variables
        self.model_variables, self.update_ops = model_variables, update_ops


class TowerBuilder(object):
    """Builds ``model_cls(**model_kwargs)`` once per device of ``devices``.

    ``strategy`` places the variables (``crnn_multigpu.wrapper.strategies``); ``tower_group`` is what a
    model may ask of its tower while it is built (``tower_context``); ``precision`` gives the
    variable scope of the compute dtype; ``xla`` compiles each tower's forward pass;
    ``tower_inputs(tower_index)``, if given, makes the tower's input tensors, passed to the
    model as ``inputs=``.
    """

    def __init__(self, model_cls, model_kwargs, devices, strategy, tower_group, precision,
                 xla=False, tower_inputs=None):
        check_xla(xla, devices)
        self.model_cls, self.model_kwargs, self.devices = model_cls, model_kwargs, devices
        self.strategy, self.tower_group, self.precision = strategy, tower_group, precision
        self.xla, self.tower_inputs = xla, tower_inputs

    @property
    def name(self):
        """The model class's name, for error messages."""
        return getattr(self.model_cls, "__name__", str(self.model_cls))

    def build(self):
        """Every tower, in the default graph: a :class:`Towers`."""
        graph = tf.get_default_graph()
        outer_scope = tf.get_variable_scope()
        models, tower0_vars, model_variables, tower0_updates = [], [], [], []
        for index, device in enumerate(self.devices):
            n_ops = len(graph.get_operations())
            n_updates = len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
            n_trainable, n_global = len(tf.trainable_variables()), len(tf.global_variables())
            # Tower 0 is built in the caller's name scope so its op names are those of the
            # plain model; later towers get their own name scope for readable graphs.
            name_scope = tf.name_scope("tower_%d" % index) if index > 0 else nullcontext()
            place_variable = functools.partial(self.strategy.place, index)
            with self.strategy.variable_scope(index, outer_scope), name_scope, \
                    tf.device(tower_device_function(device, place_variable)):
                inputs = self._inputs(index)
                if index == 0:
                    # The strategy may want every variable's size before it places the first.
                    self.strategy.survey(functools.partial(self._rehearse_tower_zero, inputs))
                model = self._construct(index, inputs)
            self._check_model(model)
            created = [op for op in graph.get_operations()[n_ops:] if op.type in VARIABLE_OP_TYPES
                       and not self.strategy.owns(op)]
            updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[n_updates:]
            if index == 0:
                tower0_vars = tf.trainable_variables()[n_trainable:]
                model_variables = tf.global_variables()[n_global:]
                tower0_updates = updates
                self.strategy.plain_variables(tower0_vars or tf.trainable_variables())
            else:
                self._refuse_unshared(index, created)
                # Moving statistics are taken from tower 0's shard: one update per step, as
                # for the plain model; other towers' copies leave the collection so that
                # user code running UPDATE_OPS cannot apply them N times.
                collection = tf.get_collection_ref(tf.GraphKeys.UPDATE_OPS)
                for op in updates:
                    collection.remove(op)
            models.append(model)
            log.info("tower %d on %s: %s", index, device,
                     "%d trainable variables created" % len(tower0_vars) if index == 0
                     else "reusing tower 0's variables")
        log.info("placement: %s", self.strategy.describe())
        return Towers(models, tower0_vars or tf.trainable_variables(), model_variables,
                      tower0_updates)

    def _inputs(self, index):
        """Tower ``index``'s input tensors from ``tower_inputs``, or None without it."""
        if self.tower_inputs is None:
            return None
        # Decoding belongs on the tower's host CPU; the pipeline itself moves
        # ready batches to the tower (prefetch_to_device).
        with tf.device(host_device(self.devices[index])):
            return self.tower_inputs(index)

    def _rehearse_tower_zero(self, inputs, place_variable):
        """Build tower 0 again into the current default graph (a strategy's scratch graph),
        its inputs replaced by placeholders of the same dtypes and shapes and its variables
        placed by ``place_variable(op)``: how a strategy learns the variables in advance."""
        with tf.device(tower_device_function(self.devices[0], place_variable)):
            return self._construct(0, _stand_ins(inputs))

    def _construct(self, index, inputs):
        model_kwargs = self.model_kwargs
        if inputs is not None:
            model_kwargs = dict(model_kwargs, inputs=inputs)
        try:
            # jit_scope marks the ops as compiled; the gradients built later from them are
            # compiled too (compile_ops and separate_compiled_gradients keep their defaults).
            with self.tower_group.context(index), \
                    tf.xla.experimental.jit_scope() if self.xla else nullcontext(), \
                    self.precision.variable_scope():
                return self.model_cls(**model_kwargs)
        except ValueError as error:
            if index > 0 and "does not exist" in str(error):
                raise ValueError("tower %d asked for a variable that tower 0 did not create (%s). The "
                                 "model must create the same variables, with the same names, every "
                                 "time it is built." % (index, str(error).splitlines()[0]))
            raise

    def _check_model(self, model):
        for attribute in ("loss", "feed_dict"):
            if not hasattr(model, attribute):
                raise TypeError("%s has no `%s`: a tower model needs `loss` (a scalar tensor, the mean "
                                "loss over its shard) and `feed_dict(batch)` returning "
                                "{placeholder: value}" % (self.name, attribute))
        loss = tf.convert_to_tensor(model.loss)
        if loss.shape.ndims not in (0, None):
            raise ValueError("%s.loss must be a scalar (the mean over the shard), got shape %s; "
                             "reduce it with tf.reduce_mean" % (self.name, loss.shape))
        if not loss.dtype.is_floating:
            raise ValueError("%s.loss must be a float tensor, got %s" % (self.name, loss.dtype.name))

    @staticmethod
    def _refuse_unshared(index, created_ops):
        trainable = set(v.op.name for v in tf.trainable_variables())
        unshared = [op.name for op in created_ops if op.name in trainable]
        if unshared:
            raise ValueError("variables were not shared: tower %d created %d new trainable "
                             "variable(s) instead of reusing tower 0's: %s. Every tower would train "
                             "its own copy. Create variables with tf.get_variable or "
                             "tf.compat.v1.layers in the variable scope the wrapper sets (not in a "
                             "scope named after the tower, such as its name scope, and not with "
                             "tf.Variable or Keras layer objects) so that reuse shares them."
                             % (index, len(unshared), ", ".join(sorted(unshared))))
        if created_ops:
            log.warning("tower %d created non-trainable variable(s) of its own: %s", index,
                        ", ".join(op.name for op in created_ops))
