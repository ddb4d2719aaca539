"""MultiGpuModel: one tower of a single-device model per device, one set of variables.

The data path through this module is one straight line::

    batch -> split -> shard per tower -> tower placeholders (feed_dict)
          -> tower loss -> tower gradients -> weighted mean -> one optimizer step

Variables are shared by variable-scope reuse: tower 0 creates them exactly as
the model would alone (same names, no tower prefix, so checkpoints move freely
between tower counts and single-device inference), later towers reuse them.

Two ways in: the class style (a model class with placeholders and ``feed_dict``,
fed one shard per tower) and the function style (``MultiGpuModel.from_function``:
a model function, a loss function and whole-batch tensors split in the graph;
see ``function_style``). Both build their towers through the same code below.
"""
import logging
from contextlib import nullcontext

from crnn_multigpu import gradients as grad_ops
from crnn_multigpu import precision as precisions
from crnn_multigpu.compat import tf
from crnn_multigpu.devices import (VARIABLE_OP_TYPES, default_variable_device, host_device,
                                   tower_device_function, tower_devices)
from crnn_multigpu.function_style import FunctionTower, WholeBatch
from crnn_multigpu.sharding import batch_size as count_examples
from crnn_multigpu.sharding import split_batch

log = logging.getLogger(__name__)

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
      variable_device: where the single copy of the variables lives (default: host CPU).
      clip_norm: clip the averaged gradients to this global norm (None: no clipping).
      check_finite: make ``objective`` fail, before any variable changes, when the
        loss or a gradient is NaN/Inf (the error message contains NONFINITE_MESSAGE).
      gradient_processors: functions ``grads_and_vars -> grads_and_vars`` applied in order to
        the tower-averaged gradients, before clipping (e.g. a cross-process all-reduce).
      input_fn: optional feed-free input: ``input_fn(tower_index, n_towers)`` returns the
        tower's input tensors (e.g. from ``tf.data``), passed to the model as ``inputs=``.
        Models use them as defaults of their placeholders, so ``feed_dict`` still works.
      precision: "float32", "mixed_float16" or "mixed_bfloat16" (or a ``precision`` policy):
        float32 variables, towers computing in that dtype; float16 adds dynamic loss scaling.
      **model_kwargs: passed to ``model_cls``.
    """

    model_cls = None

    @classmethod
    def from_function(cls, model_fn, loss_fn, inputs, labels, n_gpus=None, devices=None,
                      optimizer=None, variable_device=None, clip_norm=None, check_finite=True,
                      gradient_processors=(), precision="float32"):
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
                      gradient_processors=gradient_processors, precision=precision,
                      model_fn=model_fn, loss_fn=loss_fn)
        # Whole batches go in, so predictions come out as one whole batch too.
        with tf.device(wrapper.variable_device):
            wrapper.predict = batch.gather([m.predict for m in wrapper.models])
        return wrapper

    def __init__(self, model_cls=None, n_gpus=None, optimizer=None, devices=None,
                 variable_device=None, clip_norm=None, check_finite=True, input_fn=None,
                 gradient_processors=(), precision="float32", **model_kwargs):
        model_cls = model_cls or type(self).model_cls
        if model_cls is None:
            raise TypeError("MultiGpuModel needs a model class: MultiGpuModel(MyModel, ...) or a "
                            "subclass with `model_cls = MyModel`")
        self.model_cls = model_cls
        self.devices = tower_devices(n_gpus, devices)
        self.variable_device = variable_device or default_variable_device(self.devices)
        self.precision = precisions.get(precision)
        if self.precision.needs_finite_check and not check_finite:
            raise ValueError("precision %r skips steps with non-finite gradients, which needs "
                             "check_finite=True" % self.precision.name)
        with tf.device(self.variable_device):
            self.global_step = tf.train.get_or_create_global_step()
            self.precision.create_variables()
        self.input_fn = input_fn
        self.models, self.variables, self.update_ops = self._build_towers(model_kwargs)
        with tf.name_scope("multi_gpu"), tf.device(self.variable_device):
            self.tower_weights = self._tower_weights()
            self.batch_size = tf.add_n([tf.cast(m.batch_size, tf.int32) for m in self.models]) \
                if self._all_have("batch_size") else None
            self.loss = self._weighted_mean_of("loss")
            self.error = self._weighted_mean_of("error") if self._all_have("error") else None
        self.predict = [m.predict for m in self.models] if self._all_have("predict") else None
        self.log_prob = [m.log_prob for m in self.models] if self._all_have("log_prob") else None
        self.optimizer = self._make_optimizer(optimizer)
        self.gradient_processors = list(gradient_processors or ())
        self.objective = self._build_step(clip_norm, check_finite)
        self.summary_op = self._summaries()

    # -- graph building ---------------------------------------------------

    def _build_towers(self, model_kwargs):
        graph = tf.get_default_graph()
        outer_scope = tf.get_variable_scope()
        models, tower0_vars, tower0_updates = [], [], []
        for index, device in enumerate(self.devices):
            n_ops = len(graph.get_operations())
            n_updates = len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
            n_trainable = len(tf.trainable_variables())
            reuse = True if index > 0 else None
            # Tower 0 is built in the caller's name scope so its op names are those of the
            # plain model; later towers get their own name scope for readable graphs.
            name_scope = tf.name_scope("tower_%d" % index) if index > 0 else nullcontext()
            with tf.variable_scope(outer_scope, reuse=reuse), name_scope, \
                    tf.device(tower_device_function(device, self.variable_device)):
                model = self._construct(index, model_kwargs)
            self._check_model(model, index)
            created = [op for op in graph.get_operations()[n_ops:] if op.type in VARIABLE_OP_TYPES]
            updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[n_updates:]
            if index == 0:
                tower0_vars = tf.trainable_variables()[n_trainable:]
                tower0_updates = updates
            else:
                self._refuse_unshared(index, created)
                # Moving statistics are taken from tower 0's shard: one update per step, as
                # for the plain model; other towers' copies leave the collection so that
                # user code running UPDATE_OPS cannot apply them N times.
                collection = tf.get_collection_ref(tf.GraphKeys.UPDATE_OPS)
                for op in updates:
                    collection.remove(op)
            models.append(model)
            log.info("tower %d on %s (variables on %s): %s", index, device, self.variable_device,
                     "%d trainable variables created" % len(tower0_vars) if index == 0
                     else "reusing tower 0's variables")
        return models, tower0_vars or tf.trainable_variables(), tower0_updates

    def _construct(self, index, model_kwargs):
        if self.input_fn is not None:
            # Decoding belongs on the tower's host CPU; the pipeline itself moves
            # ready batches to the tower (prefetch_to_device).
            with tf.device(host_device(self.devices[index])):
                inputs = self.input_fn(index, self.n_towers)
            model_kwargs = dict(model_kwargs, inputs=inputs)
        try:
            with self.precision.variable_scope():
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

    def _weighted_mean_of(self, attribute):
        values = [tf.cast(getattr(m, attribute), tf.float32) for m in self.models]
        if len(values) == 1:
            return tf.identity(values[0], name=attribute)
        total = tf.add_n(self.tower_weights)
        return tf.divide(tf.add_n([w * v for w, v in zip(self.tower_weights, values)]), total,
                         name=attribute)

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
        for model, device in zip(self.models, self.devices):
            with tf.device(device):
                pairs = self.optimizer.compute_gradients(
                    self.precision.scale_loss(model.loss), var_list=self.variables,
                    colocate_gradients_with_ops=True)
            per_tower.append(pairs)
        # Towers run the same code, so tower 0 tells which variables have no gradient.
        usable = set(id(v) for _, v in grad_ops.drop_none(per_tower[0]))
        return [[(g, v) for g, v in pairs if id(v) in usable] for pairs in per_tower]

    def _build_step(self, clip_norm, check_finite):
        tower_grads = self._tower_gradients()
        with tf.name_scope("multi_gpu"), tf.device(self.variable_device):
            grads = self.precision.unscale(grad_ops.weighted_mean(tower_grads, self.tower_weights))
            for process in self.gradient_processors:
                grads = process(grads)
            self.gradient_norm = None
            if clip_norm is not None:
                grads, self.gradient_norm = grad_ops.clip_by_global_norm(grads, clip_norm)
            guards, finite = [], None
            if check_finite:
                finite = grad_ops.all_finite(grads, extra=[self.loss])
                guards.append(self.precision.guard(finite, [NONFINITE_MESSAGE + " at global step",
                                                            self.global_step, "loss", self.loss]))
                for update in self.update_ops:
                    # Update ops were built inside the tower; gate them too, so a bad batch
                    # cannot poison moving statistics either.
                    _as_op(update)._add_control_input(guards[0])
        # Slots (Adam's m and v) must be created outside any reusing scope.
        self.grads_and_vars = grads
        with tf.variable_scope(tf.get_variable_scope(), reuse=tf.AUTO_REUSE), \
                tf.control_dependencies(guards):
            apply_op = self.optimizer.apply_gradients(grads, global_step=self.global_step)
        return tf.group(apply_op, *self.update_ops,
                        *self.precision.finish(finite, self.global_step), name="objective")

    def _summaries(self):
        summaries = [tf.summary.scalar("train/loss", self.loss)]
        if self.error is not None:
            summaries.append(tf.summary.scalar("train/error", self.error))
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
