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
see ``function_style``). Both build their towers with ``tower_builder``.
"""
from crnn_multigpu.wrapper import accumulation as accumulations
from crnn_multigpu.wrapper import gradients as grad_ops
from crnn_multigpu.wrapper import strategies
from crnn_multigpu.wrapper import precision as precisions
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import tower_devices
from crnn_multigpu.wrapper.feeding import Input, StepInput
from crnn_multigpu.wrapper.function_style import FunctionTower, WholeBatch
from crnn_multigpu.wrapper.tower_builder import TowerBuilder
from crnn_multigpu.wrapper.tower_context import TowerGroup
from crnn_multigpu.wrapper.sharding import batch_size as count_examples
from crnn_multigpu.wrapper.sharding import split_batch

NONFINITE_MESSAGE = "non-finite loss or gradient"


def _as_op(update):
    """UPDATE_OPS may hold ops, tensors or (unread) variables from assign calls."""
    return update if isinstance(update, tf.Operation) else update.op


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
      check_finite: refuse a step whose loss or a gradient is NaN/Inf: nothing changes,
        ``objective`` fails (the error message contains NONFINITE_MESSAGE), and ``train_op``
        runs to its end while ``step_refused`` says so.
      gradient_processors: functions ``grads_and_vars -> grads_and_vars`` applied in order to
        the tower-averaged gradients, before clipping (e.g. a cross-process all-reduce); under
        ``Replicated`` once per tower's copy.
      input_fn: optional feed-free input: ``input_fn(tower_index, n_towers)`` returns the
        tower's input tensors (e.g. from ``tf.data``), passed to the model as ``inputs=``.
        Models use them as defaults of their placeholders, so ``feed_dict`` still works.
        For a step source, pass ``batches`` instead.
      strategy: where variables live and how tower gradients are combined
        (``crnn_multigpu.wrapper.strategies``); default ``ParameterServer()``. One object per wrapper.
      train: False builds the towers only (inference): no optimizer, no training step.
      xla: compile each tower with XLA (``jit_scope`` around the tower's forward pass; its
        gradients follow). Same results within float tolerance; whether it is faster depends on
        the model and the device (see docs/benchmarks.md).
      precision: "float32", "mixed_float16" or "mixed_bfloat16" (or a ``precision`` policy):
        float32 variables, towers computing in that dtype; float16 adds dynamic loss scaling.
      accumulate_steps: micro-batches per optimizer step (``accumulation``): each run of
        ``objective`` feeds one micro-batch and every ``accumulate_steps``-th run also applies
        the step, with the gradient of all their examples (exactly weighted). 1: none.
      batches: optional input (``feeding``): an input object (``feeding.FedInput`` or
        ``StepInput``), or a step source (``batches(step)`` is the global batch of a step; it has
        ``batch_size`` and ``signature``), which becomes a feed-free ``feeding.StepInput``. The
        wrapper sets it up as ``input`` over its own devices and accumulate_steps; a feed-free
        one gives every tower its shard's tensors as ``inputs=`` (as ``input_fn`` does).
      **model_kwargs: passed to ``model_cls``.

    After building: ``variables`` (the plain-named trainable variables), ``model_variables``
    (every variable of the plain model), ``savable_variables`` (what a checkpoint holds:
    ``tf.train.Saver(var_list=wrapper.savable_variables)``) and ``post_init_op`` (run it after
    initialising or restoring: it makes replicas equal to the plain copy, starts a new
    accumulation cycle and starts ``input`` at the global step). ``input`` is the input set up
    from ``batches`` (None without). ``step_loss`` and ``step_error`` are ``loss`` and ``error``
    averaged over the micro-batches of the current optimizer step so far (the same tensors
    without accumulation). ``train_op`` is ``objective`` without its failure: a refused step
    runs and changes nothing, and the boolean ``step_refused``, fetched in the same run, says
    it was refused (None with ``check_finite=False``; accumulating, computed only on a step's
    last micro-batch). The trainer runs these.
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
                 precision="float32", accumulate_steps=1, batches=None, **model_kwargs):
        self.model_cls = model_cls or type(self).model_cls
        if self.model_cls is None:
            raise TypeError("MultiGpuModel needs a model class: MultiGpuModel(MyModel, ...) or a "
                            "subclass with `model_cls = MyModel`")
        self.xla = xla
        self._resolve_devices(n_gpus, devices, strategy, variable_device)
        self._prepare_step(train, precision, check_finite, accumulate_steps)
        self._build_towers(model_kwargs, train, self._attach_input(batches, input_fn))
        self._aggregate_outputs()
        self.optimizer = self.objective = self.train_op = self.step_refused = None
        self.summary_op = self.grads_and_vars = self.gradient_norm = None
        self.gradient_processors = list(gradient_processors or ())
        if train:
            self.optimizer = self._make_optimizer(optimizer)
            tower_grads = self._tower_gradients()
            with tf.name_scope("multi_gpu"):
                groups = self._combine_gradients(tower_grads, clip_norm)
                guards, finite, gate = self._guard_step(groups[0][0], check_finite)
            self._build_update(groups, guards, finite, gate)
            self.summary_op = self._summaries()
        self._finish()

    # -- graph building, in the order __init__ calls it ---------------------

    def _resolve_devices(self, n_gpus, devices, strategy, variable_device):
        """The tower devices and the placement strategy set up on them."""
        self.devices = tower_devices(n_gpus, devices)
        self.strategy = strategies.resolve(strategy, variable_device)
        self.strategy.setup(self.devices)
        # Where the wrapper's own small ops go (loss mean, global step, loss scale).
        self.variable_device = self.strategy.central_device

    def _prepare_step(self, train, precision, check_finite, accumulate_steps):
        """The precision policy, the accumulation and, when training, the global step and
        their variables: what the towers and the input need before they are built."""
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

    def _attach_input(self, batches, input_fn):
        """Set up ``input`` from ``batches`` (so its towers and micro-batches are this
        wrapper's own); the function giving each tower's input tensors, or None."""
        if batches is not None and input_fn is not None:
            raise ValueError("pass batches (an input or a step source) or input_fn, not both: a "
                             "tower takes one input")
        self.input = None
        if batches is not None:
            self.input = batches if isinstance(batches, Input) else StepInput(batches)
            self.input.setup(self)
            return self.input.tower
        if input_fn is not None:
            return lambda index: input_fn(index, self.n_towers)
        return None

    def _build_towers(self, model_kwargs, train, tower_inputs):
        """One model per device, tower 0's variables shared (``tower_builder``)."""
        # What each tower's model may ask while it is built (tower_context.current_tower()).
        self.tower_group = TowerGroup(self.devices, training=train)
        towers = TowerBuilder(self.model_cls, model_kwargs, self.devices, self.strategy,
                              self.tower_group, self.precision, self.xla, tower_inputs).build()
        self.models, self.variables = towers.models, towers.variables
        self.model_variables, self.update_ops = towers.model_variables, towers.update_ops

    def _aggregate_outputs(self):
        """The towers' weights and their outputs over the whole batch: ``batch_size``,
        ``loss``, ``error``, their means over the step's micro-batches, ``predict``,
        ``log_prob``."""
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

    def _finish(self):
        """``post_init_op`` and ``savable_variables``, once everything else is built."""
        self.strategy.finish(self.optimizer)
        self.post_init_op = self.strategy.post_init_op()
        if self.accumulation.reset_ops():
            self.post_init_op = tf.group(self.post_init_op, *self.accumulation.reset_ops(),
                                         name="post_init_and_new_cycle")
        if self.input is not None and self.input.initializers:
            # Run after initialising or restoring: the input starts where training is.
            self.post_init_op = tf.group(self.post_init_op, *self.input.initializers,
                                         name="post_init_and_input_start")
        # Accumulators are not saved: checkpoints are written between optimizer steps.
        self.savable_variables = self.strategy.savable_variables(
            self.model_variables, self.optimizer, self.global_step) + self.precision.variables()

    # -- graph building helpers ------------------------------------------------

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
        """Each tower's (gradient, variable) pairs, variables without a gradient left out."""
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

    def _combine_gradients(self, tower_grads, clip_norm):
        """The towers' gradients combined: ``(grads_and_vars, norm)`` per set of variables to
        update (one per replica when replicated), each processed alike on its own device."""
        with tf.device(self.variable_device):
            # With accumulation: each tower's gradient over the micro-batches of the step.
            tower_grads, weights = self.accumulation.combine(tower_grads, self.tower_weights,
                                                             self.devices)
        groups = []
        for device, grads in self.strategy.reduce(tower_grads, weights):
            with tf.device(device):
                groups.append(self._process(grads, clip_norm))
        return groups

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

    def _guard_step(self, grads, check_finite):
        """``(guards, finite, gate)``: the ops every state change of the step waits for, the
        finiteness of the combined gradients ``grads`` and the step's loss (None unchecked) and
        the precision policy's gate over it (None unchecked); sets ``step_refused``."""
        # Accumulating: only the step's last micro-batch passes, after the accumulators.
        guards, finite, gate = self.accumulation.gates(), None, None
        if check_finite:
            with tf.device(self.variable_device), tf.control_dependencies(guards):
                # Any tower's NaN reaches every combined list, so the first one tells.
                finite = grad_ops.all_finite(grads, extra=[self.step_loss])
                gate = self.precision.guard(
                    finite, [NONFINITE_MESSAGE + " at global step", self.global_step,
                             "loss", self.step_loss])
                guards = [gate.op]
            self.step_refused = gate.refused
        for update in self.update_ops if guards else ():
            # Update ops were built inside the tower; gate them too, so a bad batch
            # cannot poison moving statistics either (and, accumulating, they run once
            # per optimizer step). TF has no public way to make an op that is already built
            # wait for another (graph_editor is gone in TF 2.x), hence the private call.
            _as_op(update)._add_control_input(guards[0])
        return guards, finite, gate

    def _build_update(self, groups, guards, finite, gate):
        """The optimizer step over every combined list of ``groups``, waiting for ``guards``:
        ``train_op`` (a refused step runs and changes nothing) and ``objective`` (the same,
        failing when the step is refused)."""
        self.grads_and_vars, self.gradient_norm = groups[0]
        every_copy = [pair for group, _ in groups for pair in group]
        # Slots (Adam's m and v) must be created outside any reusing scope.
        with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE), \
                tf.control_dependencies(guards):
            apply_op = self.optimizer.apply_gradients(every_copy, global_step=self.global_step)
        self.train_op = tf.group(apply_op, *self.update_ops,
                                 *self.precision.finish(finite, self.global_step, gate),
                                 name="train_op")
        self.objective = tf.group(self.train_op, *([gate.check] if gate else []),
                                  name="objective")

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
