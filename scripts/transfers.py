"""What one training step moves between devices and computes, read from the graph alone.

No session runs and no device needs to exist: a graph built for ``/gpu:0`` ... ``/gpu:7`` on a
machine without GPUs is read the way TensorFlow's placer and partitioner would treat it:

- an op that takes a resource or reference input runs where that resource lives (the placer
  colocates them: a variable is read on its own device and the value travels);
- an op without a device of its own follows its colocation group (``colocate_with``);
- a tensor consumed on another device crosses once per destination device (the partitioner
  inserts one Send/Recv pair per (tensor, destination), however many ops read it there);
- an op placed nowhere (a constant made outside every device scope) is put beside its
  consumer, so it never crosses.

What is not counted: the input batch fed to each tower (``feed_dict`` or ``tf.data``; it goes
host -> device under every placement) and what grappler's rewrites may add or remove.

The step is what ``session.run(fetches)`` executes: the ops the fetches depend on through
data and control edges (initialisers and unused branches are not counted).
"""
import collections

from crnn_multigpu.compat import tf

__all__ = ["UNPLACED", "Transfer", "step_ops", "effective_device", "cross_device_transfers",
           "bytes_by_link", "float_ops_by_device"]

# One edge of the partitioned graph: ``nbytes`` is None when the tensor's static shape is unknown.
Transfer = collections.namedtuple("Transfer", "tensor source destination nbytes")

UNPLACED = "(no device)"


def _ops_of(fetches):
    items = fetches if isinstance(fetches, (list, tuple)) else [fetches]
    return [item if isinstance(item, tf.Operation) else item.op for item in items]


def step_ops(fetches):
    """The operations one ``session.run(fetches)`` executes: the fetches and all they depend on."""
    seen, stack = set(), _ops_of(fetches)
    ordered = []
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        ordered.append(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return ordered


def _canonical(device):
    return tf.DeviceSpec.from_string(device).to_string() if device else ""


def _holds_state(tensor):
    # Resource handles and reference tensors pin their consumer to the producer's device.
    return tensor.dtype == tf.resource or tensor.dtype != tensor.dtype.base_dtype


def effective_device(op, _cache=None):
    """The device ``op`` runs on once placed: see the module docstring for the rules."""
    cache = {} if _cache is None else _cache
    if op in cache:
        return cache[op]
    cache[op] = UNPLACED  # a cycle through colocation falls back to "unplaced"
    device = ""
    state_inputs = [t for t in op.inputs if _holds_state(t)]
    if state_inputs:
        device = effective_device(state_inputs[0].op, cache)
    if not device or device == UNPLACED:
        device = _canonical(op.device)
    if not device:
        for group in op.colocation_groups():
            name = group.decode() if isinstance(group, bytes) else group
            name = name[len("loc:@"):]
            if name != op.name:
                device = effective_device(op.graph.get_operation_by_name(name), cache)
                break
    cache[op] = device or UNPLACED
    return cache[op]


def _nbytes(tensor):
    if tensor.dtype in (tf.resource, tf.variant, tf.string):
        return None
    count = tensor.shape.num_elements()
    return None if count is None else count * tensor.dtype.base_dtype.size


def cross_device_transfers(fetches):
    """Every tensor one step sends from one device to another, once per destination device.

    Returns a list of ``Transfer(tensor name, source device, destination device, nbytes)``.
    Control-only edges carry no data and are left out.
    """
    cache, sent = {}, {}
    for op in step_ops(fetches):
        destination = effective_device(op, cache)
        for tensor in op.inputs:
            source = effective_device(tensor.op, cache)
            if UNPLACED in (source, destination):
                continue
            if source != destination and (tensor.name, destination) not in sent:
                sent[(tensor.name, destination)] = Transfer(tensor.name, source, destination,
                                                            _nbytes(tensor))
    return sorted(sent.values())


def bytes_by_link(transfers):
    """Sum transfers per directed device pair: ``{(source, destination): bytes}``.

    Raises ValueError when a tensor of unknown size crosses, naming it: the caller must give
    the graph static shapes (or accept the gap explicitly by filtering the transfers first).
    """
    unknown = [t for t in transfers if t.nbytes is None]
    if unknown:
        raise ValueError("%d cross-device tensor(s) have no static size, e.g. %s (%s -> %s); build "
                         "the model with fully defined shapes to count its traffic"
                         % (len(unknown), unknown[0].tensor, unknown[0].source,
                            unknown[0].destination))
    links = collections.Counter()
    for transfer in transfers:
        links[(transfer.source, transfer.destination)] += transfer.nbytes
    return dict(links)


def float_ops_by_device(fetches, extra_counts=None):
    """Floating-point operations of one step per device, from TensorFlow's profiler.

    The profiler counts the op types TensorFlow registers a FLOP count for (convolutions and
    their gradients, matrix products, element-wise arithmetic) from static shapes; an op whose
    shapes are not static counts 0. ``extra_counts`` maps an op type to ``f(op) -> flops`` for
    types the profiler does not count (e.g. fused LSTM kernels). Returns ``({device: flops},
    {op type: float elements those ops output})`` where the second dict lists the op types of
    the step that nobody counted, so that a reader sees what the figure leaves out.
    """
    ops = step_ops(fetches)
    options = tf.profiler.ProfileOptionBuilder.float_operation()
    options["output"] = "none"
    profile = tf.profiler.profile(ops[0].graph, options=options)
    counted = {node.name: node.total_float_ops for node in profile.children}
    extra_counts = extra_counts or {}
    cache, per_device, uncounted = {}, collections.Counter(), collections.Counter()
    for op in ops:
        if op.type in extra_counts:
            flops = extra_counts[op.type](op)
        else:
            flops = counted.get(op.name, 0)
            if not flops:
                uncounted[op.type] += sum(t.shape.num_elements() or 0 for t in op.outputs
                                          if t.dtype.is_floating)
        per_device[effective_device(op, cache)] += flops
    return dict(per_device), {k: v for k, v in uncounted.items() if v}
