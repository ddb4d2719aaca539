"""MultiGpuModel: one tower of a single-device model per device, one set of variables.

The data path through this module is one straight line::

    batch -> split -> shard per tower -> tower placeholders (feed_dict)
          -> tower loss -> tower gradients -> combined by the strategy -> one optimizer step

Tower 0 creates the variables exactly as the model would alone (same names, no
tower prefix, so checkpoints move freely between tower counts, strategies and
single-device inference); later towers reuse them. Where the variables live and
how the tower gradients are combined is the placement strategy's business
(``strategies``: one parameter-server copy by default, or replicas kept equal by
an all-reduce); this module asks it and decides nothing about placement.

Two ways in: the class style (a model class with placeholders and ``feed_dict``,
fed one shard per tower) and the function style (``MultiGpuModel.from_function``:
a model function, a loss function and whole-batch tensors split in the graph;
see ``function_style``). Both build their towers through the same code below.
"""
import functools
import logging
from contextlib import nullcontext

from crnn_multigpu import accumulation as accumulations
from crnn_multigpu import gradients as grad_ops
from crnn_multigpu import strategies
from crnn_multigpu import precision as precisions
from crnn_multigpu.compat import tf
from crnn_multigpu.devices import (VARIABLE_OP_TYPES, host_device, tower_device_function,
                                   tower_devices)
from crnn_multigpu.function_style import FunctionTower, WholeBatch
from crnn_multigpu.tower_context import TowerGroup
from crnn_multigpu.sharding import batch_size as count_examples
from crnn_multigpu.sharding import split_batch

log = logging.getLogger(__name__)

NONFINITE_MESSAGE = "non-finite loss or gradient"


def _as_op(update):
    """UPDATE_OPS may hold ops, tensors or (unread) variables from assign calls."""
    return update if isinstance(update, tf.Operation) else update.op


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


class MultiGpuModel(object):
    """Build ``model_cls`` once per device and train it as one model.

    This is the class style; for a model function fed whole batches, see ``from_function``.

    Args:
      model_cls: the single-device model class (or set ``model_cls`` on a subclass).
        ``model_cls(**model_kwargs)`` is called once per tower; the instance needs
        ``loss`` (scalar mean over its shard) and ``feed_dict(batch)``; it may have
        ``error``, ``predict``, ``log_prob`` and ``batch_size`` (examples in the shard,
        used to weight the towers).
      n_gpus: use the first ``n_gpus`` visible GPUs; None: all of them, or one CPU tower.
      optimizer: a ``tf.train.Optimizer``, or a callable ``f(global_step) -> Optimizer``
        (the hook for learning-rate schedules); default Adam(1e-3).
      devices: explicit tower device strings; overrides ``n_gpus``.
      variable_device: where the single copy of the variables lives (default: host CPU);
        short for ``strategy=ParameterServer(device=variable_device)``.
      clip_norm: clip the averaged gradients to this global norm (None: no clipping).
      check_finite: make ``objective`` fail, before any variable changes, when the
        loss or a gradient is NaN/Inf (the error message contains NONFINITE_MESSAGE).
      gradient_processors: functions ``grads_and_vars -> grads_and_vars`` applied in order to
        the tower-averaged gradients, before clipping (e.g. a cross-process all-reduce); under
        ``Replicated`` once per tower's copy.
      input_fn: optional feed-free input: ``input_fn(tower_index, n_towers)`` returns the
        tower's input tensors (e.g. from ``tf.data``), passed to the model as ``inputs=``.
        Models use them as defaults of their placeholders, so ``feed_dict`` still works.
      strategy: where variables live and how tower gradients are combined
        (``crnn_multigpu.strategies``); default ``ParameterServer()``. One object per wrapper.
      train: False builds the towers only (inference): no optimizer, no training step.
      xla: compile each tower with XLA (``jit_scope`` around the tower's forward pass; its
        gradients follow). Same results within float tolerance; whether it is faster depends on
        the model and the device (see docs/benchmarks.md).
      precision: "float32", "mixed_float16" or "mixed_bfloat16" (or a ``precision`` policy):
        float32 variables, towers computing in that dtype; float16 adds dynamic loss scaling.
      accumulate_steps: micro-batches per optimizer step (``accumulation``): each run of
        ``objective`` feeds one micro-batch and every ``accumulate_steps``-th run also applies
        the step, with the gradient of all their examples (exactly weighted). 1: none.
      **model_kwargs: passed to ``model_cls``.

    After building: ``variables`` (the plain-named trainable variables), ``model_variables``
    (every variable of the plain model), ``savable_variables`` (what a checkpoint holds:
    ``tf.train.Saver(var_list=wrapper.savable_variables)``) and ``post_init_op`` (run it after
    initialising or restoring: it makes replicas equal to the plain copy, and starts a new
    accumulation cycle). ``step_loss`` and ``step_error`` are ``loss`` and ``error`` averaged
    over the micro-batches of the current optimizer step so far (the same tensors without
    accumulation).
    """

    model_cls = None

    @classmethod
    def from_function(cls, model_fn, loss_fn, inputs, labels, n_gpus=None, devices=None,
                      optimizer=None, variable_device=None, clip_norm=None, check_finite=True,
                      gradient_processors=(), strategy=None, xla=False,
                      precision="float32", accumulate_steps=1):
        """The function style: a model function, a loss function and whole-batch tensors.

        ``inputs`` and ``labels`` are whole-batch tensors (placeholders or a ``tf.data``
        element), or tuples/lists/dicts of them, with the example axis first. They are split
        in the graph into one shard per tower, sizes differing by at most one (any batch of at
        least one example per tower; a smaller one fails at run time, saying so). Each tower
        calls ``model_fn(inputs_shard) -> outputs`` inside the shared variable scope, then
        ``loss_fn(outputs, labels_shard)``, which returns the mean loss over the shard. Feed the
        original tensors: ``sess.run(wrapper.objective, {x: batch_x, y: batch_y})``.

        The guarantees are the class style's: towers weighted exactly by shard size, one set of
        plainly named variables (unshared ones refused by name), None gradients skipped, update
        ops run once. ``wrapper.predict`` is ``model_fn``'s outputs for the whole batch, in its
        order (needs only the inputs fed); ``wrapper.models[i].predict`` is tower i's part.
        The other arguments are those of ``MultiGpuModel``.
        """
        batch = WholeBatch(inputs, labels)
        wrapper = cls(FunctionTower, n_gpus=n_gpus, optimizer=optimizer, devices=devices,
                      variable_device=variable_device, clip_norm=clip_norm,
                      check_finite=check_finite, input_fn=batch.shard,
                      gradient_processors=gradient_processors, strategy=strategy, xla=xla,
                      precision=precision, accumulate_steps=accumulate_steps,
                      model_fn=model_fn, loss_fn=loss_fn)
        # Whole batches go in, so predictions come out as one whole batch too.
        with tf.device(wrapper.variable_device):
            wrapper.predict = batch.gather([m.predict for m in wrapper.models])
        return wrapper

    def __init__(self, model_cls=None, n_gpus=None, optimizer=None, devices=None,
                 variable_device=None, clip_norm=None, check_finite=True, input_fn=None,
                 gradient_processors=(), strategy=None, train=True, xla=False,
                 precision="float32", accumulate_steps=1, **model_kwargs):
        model_cls = model_cls or type(self).model_cls
        if model_cls is None:
            raise TypeError("MultiGpuModel needs a model class: MultiGpuModel(MyModel, ...) or a "
                            "subclass with `model_cls = MyModel`")
        self.model_cls = model_cls
        self.devices = tower_devices(n_gpus, devices)
        self.strategy = strategies.resolve(strategy, variable_device)
        self.strategy.setup(self.devices)
        # Where the wrapper's own small ops go (loss mean, global step, loss scale).
        self.variable_device = self.strategy.central_device
        self.precision = precisions.get(precision)
        if self.precision.needs_finite_check and not check_finite:
            raise ValueError("precision %r skips steps with non-finite gradients, which needs "
                             "check_finite=True" % self.precision.name)
        self.accumulation = accumulations.get(accumulate_steps)
        self.accumulate_steps = self.accumulation.steps
        if not train:
            self.accumulation = accumulations.NoAccumulation()  # no step: nothing to accumulate
        self.global_step = None
        if train:
            with tf.device(self.variable_device):
                self.global_step = tf.train.get_or_create_global_step()
                self.precision.create_variables()
                self.accumulation.create_variables()
        # What each tower's model may ask while it is built (tower_context.current_tower()).
        self.tower_group = TowerGroup(self.devices, training=train)
        check_xla(xla, self.devices)
        self.xla = xla
        self.input_fn = input_fn
        self.models, self.variables, self.update_ops = self._build_towers(model_kwargs)
        with tf.name_scope("multi_gpu"), tf.device(self.variable_device):
            self.tower_weights = self._tower_weights()
            # Cross-tower sums (sync batch norm) weigh their backward pass like the gradients.
            self.tower_group.weights = self.tower_weights
            self.batch_size = tf.add_n([tf.cast(m.batch_size, tf.int32) for m in self.models]) \
                if self._all_have("batch_size") else None
            # The towers' shares of the examples weigh every mean over them, as the gradients'.
            fractions = grad_ops.tower_fractions(self.tower_weights)
            self.loss = self._weighted_mean_of("loss", fractions)
            self.error = self._weighted_mean_of("error", fractions) \
                if self._all_have("error") else None
            examples = tf.add_n(self.tower_weights)
            self.step_loss = self.accumulation.running_mean(self.loss, examples)
            self.step_error = self.accumulation.running_mean(self.error, examples) \
                if self.error is not None else None
        self.predict = [m.predict for m in self.models] if self._all_have("predict") else None
        self.log_prob = [m.log_prob for m in self.models] if self._all_have("log_prob") else None
        self.optimizer = self.objective = self.summary_op = self.grads_and_vars = None
        self.gradient_processors = list(gradient_processors or ())
        if train:
            self.optimizer = self._make_optimizer(optimizer)
            self.objective = self._build_step(clip_norm, check_finite)
            self.summary_op = self._summaries()
        self.strategy.finish(self.optimizer)
        self.post_init_op = self.strategy.post_init_op()
        if self.accumulation.reset_ops():
            self.post_init_op = tf.group(self.post_init_op, *self.accumulation.reset_ops(),
                                         name="post_init_and_new_cycle")
        # Accumulators are not saved: checkpoints are written between optimizer steps.
        self.savable_variables = self.strategy.savable_variables(
            self.model_variables, self.optimizer, self.global_step) + self.precision.variables()

    # -- graph building ---------------------------------------------------

    def _build_towers(self, model_kwargs):
        graph = tf.get_default_graph()
        outer_scope = tf.get_variable_scope()
        models, tower0_vars, tower0_updates = [], [], []
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
                    self.strategy.survey(functools.partial(self._rehearse_tower_zero,
                                                           model_kwargs, inputs))
                model = self._construct(index, model_kwargs, inputs)
            self._check_model(model, index)
            created = [op for op in graph.get_operations()[n_ops:] if op.type in VARIABLE_OP_TYPES
                       and not self.strategy.owns(op)]
            updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[n_updates:]
            if index == 0:
                tower0_vars = tf.trainable_variables()[n_trainable:]
                self.model_variables = tf.global_variables()[n_global:]
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
        return models, tower0_vars or tf.trainable_variables(), tower0_updates

    def _inputs(self, index):
        """Tower ``index``'s input tensors from ``input_fn``, or None without one."""
        if self.input_fn is None:
            return None
        # Decoding belongs on the tower's host CPU; the pipeline itself moves
        # ready batches to the tower (prefetch_to_device).
        with tf.device(host_device(self.devices[index])):
            return self.input_fn(index, self.n_towers)

    def _rehearse_tower_zero(self, model_kwargs, inputs, place_variable):
        """Build tower 0 again into the current default graph (a strategy's scratch graph),
        its inputs replaced by placeholders of the same dtypes and shapes and its variables
        placed by ``place_variable(op)``: how a strategy learns the variables in advance."""
        with tf.device(tower_device_function(self.devices[0], place_variable)):
            return self._construct(0, model_kwargs, _stand_ins(inputs))

    def _construct(self, index, model_kwargs, inputs):
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

    def _check_model(self, model, index):
        name = getattr(self.model_cls, "__name__", str(self.model_cls))
        for attribute in ("loss", "feed_dict"):
            if not hasattr(model, attribute):
                raise TypeError("%s has no `%s`: a tower model needs `loss` (a scalar tensor, the mean "
                                "loss over its shard) and `feed_dict(batch)` returning "
                                "{placeholder: value}" % (name, attribute))
        loss = tf.convert_to_tensor(model.loss)
        if loss.shape.ndims not in (0, None):
            raise ValueError("%s.loss must be a scalar (the mean over the shard), got shape %s; "
                             "reduce it with tf.reduce_mean" % (name, loss.shape))
        if not loss.dtype.is_floating:
            raise ValueError("%s.loss must be a float tensor, got %s" % (name, loss.dtype.name))

    def _refuse_unshared(self, index, created_ops):
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

    def _all_have(self, attribute):
        return all(getattr(m, attribute, None) is not None for m in self.models)

    def _tower_weights(self):
        """Examples per tower when the model reports them, else equal weights."""
        if self._all_have("batch_size"):
            return [tf.cast(m.batch_size, tf.float32) for m in self.models]
        return [tf.constant(1.0) for _ in self.models]

    def _weighted_mean_of(self, attribute, fractions):
        """The towers' ``attribute`` weighted by ``fractions``: its value on the whole batch."""
        values = [tf.cast(getattr(m, attribute), tf.float32) for m in self.models]
        if len(values) == 1:
            return tf.identity(values[0], name=attribute)
        return tf.add_n([f * v for f, v in zip(fractions, values)], name=attribute)

    def _make_optimizer(self, optimizer):
        if optimizer is None:
            return tf.train.AdamOptimizer(1e-3)
        if isinstance(optimizer, tf.train.Optimizer):
            return optimizer
        if callable(optimizer):
            built = optimizer(self.global_step)
            if not isinstance(built, tf.train.Optimizer):
                raise TypeError("the optimizer callable must return a tf.train.Optimizer, got %r"
                                % (built,))
            return built
        raise TypeError("optimizer must be a tf.train.Optimizer or a callable global_step -> "
                        "Optimizer, got %r" % (optimizer,))

    def _tower_gradients(self):
        per_tower = []
        for index, (model, device) in enumerate(zip(self.models, self.devices)):
            with tf.device(device):
                pairs = self.optimizer.compute_gradients(
                    self.precision.scale_loss(model.loss),
                    var_list=self.strategy.tower_variables(index, self.variables),
                    colocate_gradients_with_ops=True)
            per_tower.append(pairs)
        # Towers run the same code, so tower 0 tells which variables have no gradient.
        usable = [g is not None for g, _ in per_tower[0]]
        grad_ops.drop_none(per_tower[0])  # names the unused variables once
        return [[pair for pair, use in zip(pairs, usable) if use] for pairs in per_tower]

    def _process(self, grads, clip_norm):
        """Loss scaling undone, the user's processors, then clipping: on one list of combined
        gradients."""
        grads = self.precision.unscale(grads)
        for process in self.gradient_processors:
            grads = process(grads)
        norm = None
        if clip_norm is not None:
            grads, norm = grad_ops.clip_by_global_norm(grads, clip_norm)
        return grads, norm

    def _build_step(self, clip_norm, check_finite):
        tower_grads = self._tower_gradients()
        with tf.name_scope("multi_gpu"):
            with tf.device(self.variable_device):
                # With accumulation: each tower's gradient over the micro-batches of the step.
                tower_grads, weights = self.accumulation.combine(tower_grads, self.tower_weights,
                                                                 self.devices)
            # One combined list per set of variables to update (one per replica when
            # replicated): every list is processed alike on its own device.
            groups = []
            for device, grads in self.strategy.reduce(tower_grads, weights):
                with tf.device(device):
                    groups.append(self._process(grads, clip_norm))
            grads, self.gradient_norm = groups[0]
            # Accumulating: only the step's last micro-batch passes, after the accumulators.
            guards, finite = self.accumulation.gates(), None
            if check_finite:
                with tf.device(self.variable_device), tf.control_dependencies(guards):
                    # Any tower's NaN reaches every combined list, so the first one tells.
                    finite = grad_ops.all_finite(grads, extra=[self.step_loss])
                    guards = [self.precision.guard(
                        finite, [NONFINITE_MESSAGE + " at global step", self.global_step,
                                 "loss", self.step_loss])]
            for update in self.update_ops if guards else ():
                # Update ops were built inside the tower; gate them too, so a bad batch
                # cannot poison moving statistics either (and, accumulating, they run once
                # per optimizer step). TF has no public way to make an op that is already built
                # wait for another (graph_editor is gone in TF 2.x), hence the private call.
                _as_op(update)._add_control_input(guards[0])
        # Slots (Adam's m and v) must be created outside any reusing scope.
        self.grads_and_vars = grads
        every_copy = [pair for group, _ in groups for pair in group]
        with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE), \
                tf.control_dependencies(guards):
            apply_op = self.optimizer.apply_gradients(every_copy, global_step=self.global_step)
        return tf.group(apply_op, *self.update_ops,
                        *self.precision.finish(finite, self.global_step), name="objective")

    def _summaries(self):
        summaries = [tf.summary.scalar("train/loss", self.step_loss)]
        if self.error is not None:
            summaries.append(tf.summary.scalar("train/error", self.step_error))
        if self.gradient_norm is not None:
            summaries.append(tf.summary.scalar("train/gradient_norm", self.gradient_norm))
        learning_rate = getattr(self.optimizer, "_lr", None)
        if learning_rate is None:
            learning_rate = getattr(self.optimizer, "_learning_rate", None)
        if learning_rate is not None:
            summaries.append(tf.summary.scalar("train/learning_rate",
                                               tf.cast(learning_rate, tf.float32)))
        return tf.summary.merge(summaries)

    # -- feeding -----------------------------------------------------------

    @property
    def n_towers(self):
        """The number of towers (devices)."""
        return len(self.devices)

    def split(self, batch):
        """Split one batch (namedtuple or dict of arrays/lists) into one shard per tower."""
        return split_batch(batch, self.n_towers)

    def feed_dict(self, shards, **kwargs):
        """Map each shard onto its tower's placeholders: ``{placeholder: value}``.

        ``shards`` holds exactly one batch per tower (see ``split``); extra keyword
        arguments go to every tower's ``model.feed_dict`` (e.g. ``training=False``).
        """
        if isinstance(shards, dict) or (isinstance(shards, tuple) and hasattr(shards, "_fields")):
            raise TypeError("feed_dict takes a list of shards, one per tower; got a single batch. "
                            "Use wrapper.feed_dict(wrapper.split(batch)).")
        shards = list(shards)
        if len(shards) != self.n_towers:
            raise ValueError("feed_dict got %d shard(s) for %d tower(s); pass one shard per tower, "
                             "e.g. wrapper.feed_dict(wrapper.split(batch))"
                             % (len(shards), self.n_towers))
        feed = {}
        for index, (model, shard) in enumerate(zip(self.models, shards)):
            if isinstance(shard, dict) or hasattr(shard, "_fields"):
                try:
                    if count_examples(shard) == 0:
                        raise ValueError("it is empty")
                except ValueError as error:
                    raise ValueError("shard %d (for tower %d on %s) is unusable: %s"
                                     % (index, index, self.devices[index], error))
            feed.update(model.feed_dict(shard, **kwargs))
        return feed
