"""The function style: a model function, a loss function and whole-batch tensors.

Much graph-mode code builds its model as a function of input tensors and feeds whole-batch
placeholders. ``MultiGpuModel.from_function`` accepts exactly that; this module adapts it to the
tower protocol of the class style, so that both styles share one tower builder, one gradient
path and one set of guarantees:

- ``WholeBatch`` cuts the whole-batch tensors once, in the graph, into one ``Shard`` per tower
  (sizes differing by at most one, the first shards the larger, as ``sharding.shard_sizes``)
  and concatenates per-tower outputs back into whole-batch order;
- ``FunctionTower`` is one tower's model: ``model_fn`` on the shard's inputs, ``loss_fn`` on its
  outputs and the shard's labels, and the shard's size (which weights the tower exactly).
"""
from collections import namedtuple

from crnn_multigpu.compat import tf

# One tower's part of the whole batch: inputs and labels in the user's structure, and the
# number of examples (an int32 scalar tensor).
Shard = namedtuple("Shard", "inputs labels size")


def _named_leaves(structure, name):
    """``(name, leaf)`` pairs in ``tf.nest.flatten`` order, named like ``inputs['image']``."""
    if isinstance(structure, dict):
        pairs = []
        for key in sorted(structure):  # tf.nest's order for dicts
            pairs.extend(_named_leaves(structure[key], "%s[%r]" % (name, key)))
        return pairs
    if isinstance(structure, (tuple, list)):
        pairs = []
        for index, item in enumerate(structure):
            pairs.extend(_named_leaves(item, "%s[%d]" % (name, index)))
        return pairs
    return [(name, structure)]


def _batch_tensors(structure, what):
    """The leaves of ``structure`` as tensors with an example axis, or a clear error."""
    pairs = _named_leaves(structure, what)
    if not pairs:
        raise ValueError("%s holds no tensor: pass a whole-batch tensor (e.g. a placeholder of shape "
                         "[None, ...]) or a tuple/list/dict of them" % what)
    tensors = []
    for name, leaf in pairs:
        if isinstance(leaf, tf.SparseTensor):
            raise TypeError("%s is a SparseTensor; the function style splits dense tensors only. "
                            "Pass it dense (tf.sparse.to_dense) or use the class style." % name)
        try:
            tensor = tf.convert_to_tensor(leaf)
        except (TypeError, ValueError) as error:
            raise TypeError("%s is not a tensor (%s): pass whole-batch tensors" % (name, error))
        if tensor.shape.ndims == 0:
            raise ValueError("%s is a scalar: every whole-batch tensor needs the example axis first, "
                             "which is where it is split between the towers" % name)
        tensors.append((name, tensor))
    return tensors


class WholeBatch(object):
    """Whole-batch ``inputs`` and ``labels`` (tensors, or tuples/lists/dicts of tensors), per tower.

    Every tensor's first axis counts the examples; all must agree on that count (checked when
    the graph runs, naming the tensor that disagrees). A batch with fewer examples than towers
    fails at run time with a message saying so: an empty shard has no mean loss.
    """

    def __init__(self, inputs, labels):
        self.inputs = inputs
        self.labels = labels
        self._inputs = _batch_tensors(inputs, "inputs")
        self._labels = _batch_tensors(labels, "labels")
        self._shards = None

    def shard(self, index, n_towers):
        """Tower ``index``'s ``Shard`` of ``n_towers``: the wrapper's ``input_fn``.

        The split is built on the first call and kept, so it exists once in the graph.
        """
        if self._shards is None:
            with tf.name_scope("split_batch"):
                self._shards = self._split(n_towers)
        if len(self._shards) != n_towers:
            raise ValueError("this batch was split for %d towers, not %d" % (len(self._shards),
                                                                          n_towers))
        return self._shards[index]

    def _split(self, n_towers):
        first_name, first = self._inputs[0]
        n_examples = tf.shape(first, out_type=tf.int32)[0]
        enough = tf.assert_greater_equal(
            n_examples, n_towers,
            message="the batch has fewer examples (in %s) than there are towers (%d): every tower "
                    "needs at least one example. Feed at least %d examples, or drop or merge this "
                    "last batch." % (first_name, n_towers, n_towers))
        with tf.control_dependencies([enough]):
            base = n_examples // n_towers
            extra = n_examples % n_towers
            # The same sizes as sharding.shard_sizes, computed when the batch size is known.
            sizes = base + tf.cast(tf.range(n_towers) < extra, tf.int32)
        # Inputs and labels are checked separately: running only `predict` needs no labels.
        inputs = self._split_all(self._inputs, sizes, n_towers, (first_name, first, n_examples))
        labels = self._split_all(self._labels, sizes, n_towers, (first_name, first, n_examples))
        return [Shard(inputs=tf.nest.pack_sequence_as(self.inputs, [p[i] for p in inputs]),
                      labels=tf.nest.pack_sequence_as(self.labels, [p[i] for p in labels]),
                      size=sizes[i])
                for i in range(n_towers)]

    @staticmethod
    def _split_all(named_tensors, sizes, n_towers, reference):
        """Split every tensor by ``sizes``, after checking it has as many examples as ``reference``."""
        reference_name, reference_tensor, n_examples = reference
        checks = [tf.assert_equal(tf.shape(tensor, out_type=tf.int32)[0], n_examples,
                                  message="%s and %s disagree on the number of examples (the first "
                                          "axis); every whole-batch tensor needs one entry per "
                                          "example." % (name, reference_name))
                  for name, tensor in named_tensors if tensor is not reference_tensor]
        with tf.control_dependencies(checks):
            return [tf.split(tensor, sizes, num=n_towers, axis=0) for _, tensor in named_tensors]

    @staticmethod
    def gather(per_tower):
        """One whole-batch structure from per-tower outputs: shard order is batch order.

        ``per_tower`` holds one output structure per tower (all alike); each tensor in it must
        have the example axis first.
        """
        if len(per_tower) == 1:
            return per_tower[0]

        def concat(*parts):
            tensor = tf.convert_to_tensor(parts[0])
            if tensor.shape.ndims == 0:
                raise ValueError("model_fn returned a scalar (%s) among its outputs; its outputs are "
                                 "gathered into the whole batch, so each needs the example axis "
                                 "first. Compute per-batch values in loss_fn instead." % tensor.name)
            return tf.concat(list(parts), axis=0)

        with tf.name_scope("gather_batch"):
            return tf.nest.map_structure(concat, *per_tower)


class FunctionTower(object):
    """One tower of a function-style model, in the class style's tower protocol.

    Args:
      model_fn: ``model_fn(inputs) -> outputs``, the single-device model, called on the shard's
        inputs (the same structure as the whole-batch inputs, fewer examples).
      loss_fn: ``loss_fn(outputs, labels) -> loss``, the mean loss over the shard's examples.
      inputs: the tower's ``Shard`` (the name is the wrapper's ``inputs=`` argument).
    """

    def __init__(self, model_fn, loss_fn, inputs):
        shard = inputs
        self.predict = model_fn(shard.inputs)
        if self.predict is None:
            raise ValueError("model_fn returned None: it must return the model's outputs, which "
                             "are passed to loss_fn and gathered into wrapper.predict")
        self.loss = loss_fn(self.predict, shard.labels)
        loss = tf.convert_to_tensor(self.loss)
        if loss.shape.ndims not in (0, None):
            raise ValueError("loss_fn returned a tensor of shape %s; it must return the mean loss "
                             "over the tower's examples, a scalar (reduce it with tf.reduce_mean)"
                             % loss.shape)
        self.batch_size = shard.size

    def feed_dict(self, batch):
        """There are no per-tower placeholders: the function style feeds whole-batch tensors."""
        raise TypeError("a wrapper made by from_function is fed through its whole-batch tensors, "
                        "e.g. sess.run(wrapper.objective, {x: batch_x, y: batch_y}); it has no "
                        "per-tower feed_dict")
