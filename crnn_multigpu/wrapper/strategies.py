"""Where the variables live and how tower gradients become one update: the placement strategies.

``MultiGpuModel(..., strategy=S)`` asks its strategy, through the hooks of ``Strategy``, for
everything that depends on placement; it decides none of it itself:

- ``ParameterServer()`` (the default): one copy of every variable on one device (the host CPU,
  or ``device=``); every tower reads it and sends its gradients there to be averaged.
- ``SpreadParameterServer()``: still one copy of each variable, but spread over the tower
  devices by bytes (greedy, largest first: tower 0 is first built once in a scratch graph to
  learn every variable's size), and each gradient is averaged on its variable's device, so no
  single bus carries all the traffic.
- ``Replicated(all_reduce=...)``: every tower has its own copy; the towers' gradients are summed
  by an all-reduce (NCCL on GPUs, a ring of plain ops anywhere) and every copy takes the same
  step. Tower 0's copy keeps the plain names (it is what checkpoints hold); the others are
  ``replica_<i>/<name>``, non-trainable, refreshed from the plain copy by ``post_init_op``.

``num_packs`` (every strategy): concatenate each tower's dense gradients into at most that many
buffers before they cross devices, and split them after (per reducing device for the spread
parameter server). One object per wrapper: ``setup`` binds it to the wrapper's towers.

Each strategy is one class, registered under its command-line name (``ps``, ``ps-towers``,
``replicated``) by :func:`register`; :func:`from_name` and ``crnn-train --strategy`` read that
registry, and the first line of each class's docstring is its help.
"""
import logging

from crnn_multigpu.wrapper import gradients as grad_ops
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import default_variable_device

log = logging.getLogger(__name__)


def _check_packs(num_packs):
    if not isinstance(num_packs, int) or isinstance(num_packs, bool) or num_packs < 0:
        raise ValueError("num_packs must be a whole number >= 0 (0: no repacking), got %r"
                         % (num_packs,))
    return num_packs


def _is_gpu(device):
    return (tf.DeviceSpec.from_string(device).device_type or "").upper() == "GPU"


def variable_bytes(op):
    """The bytes of the variable an op creates (0 when its shape is not known, e.g. tables)."""
    try:
        shape = tf.TensorShape(op.get_attr("shape"))
        dtype = tf.as_dtype(op.get_attr("dtype"))
    except ValueError:
        return 0
    return shape.num_elements() * dtype.size if shape.is_fully_defined() else 0


def balance_largest_first(sizes, n_devices):
    """Greedy load balancing: the device index for each of ``sizes`` (bytes), in their order.

    The largest size is placed first, each on the device with the fewest bytes so far (ties:
    the lower index; equal sizes in their given order). The busiest device then holds at most
    the fair share plus the last size it received, never more than 4/3 of the best possible
    maximum (Graham's bound for largest-first list scheduling).
    """
    loads = [0] * n_devices
    chosen = [None] * len(sizes)
    for position in sorted(range(len(sizes)), key=lambda i: -sizes[i]):  # stable
        device = min(range(n_devices), key=lambda d: (loads[d], d))
        chosen[position] = device
        loads[device] += sizes[position]
    return chosen


class Strategy(object):
    """The hooks ``MultiGpuModel`` calls while it builds; subclasses choose the placement.

    Order of calls: ``setup(devices)``; ``survey`` before tower 0 is built; per tower
    ``variable_scope`` and ``place``; after tower 0 ``plain_variables``; ``tower_variables`` for
    the gradients; ``reduce``; after the optimizer step ``finish``; then ``post_init_op`` and
    ``savable_variables``. ``owns`` may be asked at any time after ``setup``.
    """

    name = "strategy"
    num_packs = 0
    options = ()  # the keyword arguments from_name passes on to the class

    def setup(self, devices):
        """Bind to the wrapper's tower devices (called once, before any tower is built); every
        piece of state a later hook reads is created here."""
        self.devices = list(devices)
        self.central_device = default_variable_device(self.devices)
        self.optimizer = None

    def survey(self, build_tower_zero):
        """Hook before tower 0 is built, for a strategy that must see every variable first.

        ``build_tower_zero(place_variable)`` builds tower 0 as the wrapper is about to, into the
        current default graph (call it in a scratch ``tf.Graph()``: the real graph must not get
        a second tower 0), with placeholders of the same dtypes and shapes for its inputs;
        ``place_variable(op)`` gives each variable op's device. Nothing to do here.
        """

    def variable_scope(self, index, outer_scope):
        """The variable scope tower ``index`` is built in: tower 0 creates, the others reuse."""
        return tf.variable_scope(outer_scope, reuse=True if index > 0 else None)

    def place(self, index, op):
        """The device of a variable op created while tower ``index`` is built."""
        raise NotImplementedError

    def plain_variables(self, variables):
        """Hook after tower 0 is built: ``variables`` are the plain trainable ones it created."""

    def tower_variables(self, index, variables):
        """Tower ``index``'s copies of the plain ``variables`` (the same ones when shared)."""
        return list(variables)

    def owns(self, variable_op):
        """True for variables the strategy made itself (replicas): not the model's own."""
        return False

    def reduce(self, tower_grads_and_vars, weights):
        """Combine per-tower (gradient, variable) lists into ``[(device, grads_and_vars)]``:
        one list per set of variables to update, and where to process it (clip, check)."""
        raise NotImplementedError

    def finish(self, optimizer):
        """Hook after the optimizer step is built (its slot variables exist)."""
        self.optimizer = optimizer

    def post_init_op(self):
        """The op to run after initialising or restoring the variables; a no-op here."""
        return tf.no_op(name="post_init")

    def own_variables(self):
        """Variables (replicas and their optimizer slots) a checkpoint must not hold."""
        return []

    def savable_variables(self, model_variables, optimizer, global_step):
        """What a checkpoint holds: the plain model's variables, the optimizer's variables
        for them (slots, and non-slot ones such as Adam's beta powers), the global step."""
        excluded = set(id(v) for v in self.own_variables())
        candidates = list(model_variables) + (optimizer.variables() if optimizer else []) + \
            ([global_step] if global_step is not None else [])
        chosen, seen = [], set()
        for variable in candidates:
            if id(variable) not in excluded and id(variable) not in seen:
                seen.add(id(variable))
                chosen.append(variable)
        return chosen

    def describe(self):
        """A few words for the log: where the variables are."""
        return self.name


STRATEGIES = {}  # command-line name -> strategy class


def register(cls):
    """Class decorator: make ``cls`` known to :func:`from_name` under ``cls.name``."""
    if cls.name in STRATEGIES:
        raise ValueError("a strategy named %r is already registered (%s)"
                         % (cls.name, STRATEGIES[cls.name].__name__))
    STRATEGIES[cls.name] = cls
    return cls


@register
class ParameterServer(Strategy):
    """One copy of the variables on the host CPU (or the ps job); towers send it their gradients.

    Args:
      device: a device string for the copy (default: the host CPU of the first tower).
      num_packs: concatenate the towers' dense gradients into at most this many buffers
        before averaging (0: one transfer per gradient).
    """

    name = "ps"
    options = ("device", "num_packs")

    def __init__(self, device=None, num_packs=0):
        if device == "towers":
            raise ValueError("ParameterServer('towers') is SpreadParameterServer(): one class per "
                             "strategy")
        if device is not None and not isinstance(device, str):
            raise TypeError("ParameterServer(device=...) takes a device string such as '/cpu:0', "
                            "got %r" % (device,))
        if device is not None:
            tf.DeviceSpec.from_string(device)  # a malformed string fails here, naming itself
        self.device = device
        self.num_packs = _check_packs(num_packs)

    def setup(self, devices):
        Strategy.setup(self, devices)
        if self.device is not None:
            self.central_device = self.device

    def place(self, index, op):
        return self.central_device

    def reduce(self, tower_grads_and_vars, weights):
        # Group the variables by device: each group is averaged on its own device.
        groups = {}
        for position, (_, variable) in enumerate(tower_grads_and_vars[0]):
            groups.setdefault(variable.device, []).append(position)
        merged = [None] * len(tower_grads_and_vars[0])
        for device, positions in sorted(groups.items()):
            part = [[pairs[p] for p in positions] for pairs in tower_grads_and_vars]
            with tf.device(device or self.central_device):
                averaged = grad_ops.weighted_mean(part, weights, self.num_packs, self.devices)
            for position, pair in zip(positions, averaged):
                merged[position] = pair
        return [(self.central_device, merged)]

    def describe(self):
        return "variables on %s" % self.central_device


@register
class SpreadParameterServer(ParameterServer):
    """One copy of each variable, spread over the tower devices by bytes, averaged where it lives.

    The variables are placed by greedy load balancing on bytes, largest first
    (``balance_largest_first``); the sizes come from building tower 0 once in a scratch graph
    before the real build. If that build fails (e.g. the model takes tensors of the caller's
    graph as arguments), or builds other variables than the real one, the rest are placed as
    they are created, each on the device holding the fewest bytes so far, with a warning.

    Args:
      num_packs: concatenate the towers' dense gradients into at most this many buffers per
        reducing device before averaging (0: one transfer per gradient).
    """

    name = "ps-towers"
    options = ("num_packs",)

    def __init__(self, num_packs=0):
        ParameterServer.__init__(self, num_packs=num_packs)

    def setup(self, devices):
        ParameterServer.setup(self, devices)
        self._loads = dict((d, 0) for d in self.devices)
        self._placed = {}
        # Tower 0's variable ops in creation order, as (type, bytes, device): the plan.
        self._plan, self._planned = [], 0

    def survey(self, build_tower_zero):
        seen = []

        def record(op):
            seen.append((op.type, variable_bytes(op)))
            return self.devices[0]

        try:
            with tf.Graph().as_default():
                build_tower_zero(record)
        except Exception as error:  # the real build will raise what is the model's fault
            log.warning("could not build tower 0 in a scratch graph to learn its variables' sizes "
                        "(%s: %s); spreading the variables in creation order instead",
                        type(error).__name__, str(error).splitlines()[0] if str(error) else "")
            return
        chosen = balance_largest_first([nbytes for _, nbytes in seen], len(self.devices))
        self._plan = [(kind, nbytes, self.devices[d]) for (kind, nbytes), d in zip(seen, chosen)]

    def place(self, index, op):
        if op.name not in self._placed:
            device = self._planned_device(index, op) or min(
                self.devices, key=lambda d: (self._loads[d], self.devices.index(d)))
            self._loads[device] += variable_bytes(op)
            self._placed[op.name] = device
        return self._placed[op.name]

    def _planned_device(self, index, op):
        """The surveyed device of tower 0's next variable op, or None once off the plan."""
        if index != 0 or self._planned >= len(self._plan):
            return None
        kind, nbytes, device = self._plan[self._planned]
        if (kind, nbytes) != (op.type, variable_bytes(op)):
            log.warning("tower 0 created %s (%s, %d bytes) where the scratch build created a %s of "
                        "%d bytes: placing the remaining variables in creation order",
                        op.name, op.type, variable_bytes(op), kind, nbytes)
            self._plan = []
            return None
        self._planned += 1
        return device

    def plain_variables(self, variables):
        if self._planned < len(self._plan):
            log.warning("the scratch build of tower 0 created %d variable(s) more than the real "
                        "one: the spread may be less even than planned",
                        len(self._plan) - self._planned)

    def describe(self):
        return "variables spread over the towers (%s)" % ", ".join(
            "%s %.1f MB" % (d, b / 1e6) for d, b in self._loads.items())


ALL_REDUCE = ("auto", "nccl", "ring")


@register
class Replicated(Strategy):
    """A copy of the trainable variables on every tower, kept equal by all-reduced gradients.

    Args:
      all_reduce: ``"nccl"`` (GPU towers only), ``"ring"`` (plain TF ops: any device), or
        ``"auto"``: NCCL when every tower is a GPU, else the ring.
      num_packs: all-reduce the dense gradients as at most this many concatenated buffers
        (0: one all-reduce per gradient).

    Non-trainable variables (batch-norm moving statistics) stay one shared copy, tower 0's:
    only tower 0 updates them, as for the plain model. Sparse gradients are gathered, every
    tower receiving all towers' rows, never densified.
    """

    name = "replicated"
    options = ("all_reduce", "num_packs")

    def __init__(self, all_reduce="auto", num_packs=0):
        if all_reduce not in ALL_REDUCE:
            raise ValueError("all_reduce must be one of %s, got %r"
                             % (", ".join(repr(a) for a in ALL_REDUCE), all_reduce))
        self.all_reduce = all_reduce
        self.num_packs = _check_packs(num_packs)

    def setup(self, devices):
        Strategy.setup(self, devices)
        not_gpu = [d for d in self.devices if not _is_gpu(d)]
        if self.all_reduce == "nccl" and not_gpu:
            raise ValueError("all_reduce='nccl' needs every tower on a GPU, but %s %s not: NCCL "
                             "has no CPU kernel. Use Replicated(all_reduce='ring') (or 'auto', "
                             "which picks the ring when a tower is not a GPU)."
                             % (", ".join(not_gpu), "is" if len(not_gpu) == 1 else "are"))
        self.method = self.all_reduce if self.all_reduce != "auto" else (
            "ring" if not_gpu else "nccl")
        self._replicas = {}  # (tower index, id(plain variable)) -> replica
        self._pairs = []     # (tower index, plain variable, replica)
        self._replica_ops = set()
        self._trainable = set()  # ids of the plain trainable variables, from plain_variables

    def variable_scope(self, index, outer_scope):
        if index == 0:
            return Strategy.variable_scope(self, index, outer_scope)
        return tf.variable_scope(outer_scope, reuse=True, custom_getter=self._getter(index))

    def _getter(self, index):
        def custom_getter(getter, name, *args, **kwargs):
            plain = getter(name, *args, **kwargs)  # reuse: tower 0's variable
            if id(plain) not in self._trainable:
                return plain  # moving statistics and counters stay shared
            key = (index, id(plain))
            if key not in self._replicas:
                # The plain copy's initial value: equal right after initialisation too.
                replica = getter("replica_%d/%s" % (index, name), initializer=plain.initial_value,
                                 dtype=plain.dtype.base_dtype, trainable=False, reuse=False,
                                 collections=[tf.GraphKeys.GLOBAL_VARIABLES],
                                 use_resource=kwargs.get("use_resource"))
                self._replicas[key] = replica
                self._pairs.append((index, plain, replica))
                self._replica_ops.add(replica.op.name)
            return self._replicas[key]
        return custom_getter

    def place(self, index, op):
        return self.devices[index]

    def plain_variables(self, variables):
        self._trainable = set(id(v) for v in variables)

    def tower_variables(self, index, variables):
        return [self._replicas.get((index, id(v)), v) for v in variables]

    def owns(self, variable_op):
        return variable_op.name in self._replica_ops

    def reduce(self, tower_grads_and_vars, weights):
        if len(tower_grads_and_vars) == 1:
            return [(self.devices[0], list(tower_grads_and_vars[0]))]
        # Each tower scales its own gradients by its share of the examples, so the
        # all-reduced sum is the exact example-weighted mean.
        fractions = grad_ops.tower_fractions(weights)
        grads = []
        for pairs, fraction, device in zip(tower_grads_and_vars, fractions, self.devices):
            with tf.device(device):
                grads.append(grad_ops.scale_all([g for g, _ in pairs], fraction))
        packing = grad_ops.Packing(grads[0], self.num_packs)
        packs = []
        for tower, device in zip(grads, self.devices):
            with tf.device(device):
                packs.append(packing.pack(tower))
        reduced_packs = self._transpose([self._all_reduce(list(p)) for p in zip(*packs)])
        packed = set(packing.members)
        reduced = self._transpose([
            [None] * len(self.devices) if j in packed else self._all_reduce(list(per_tower))
            for j, per_tower in enumerate(zip(*grads))])
        groups = []
        for index, device in enumerate(self.devices):
            with tf.device(device):
                tower = packing.unpack(reduced_packs[index] if reduced_packs else [],
                                       reduced[index])
            groups.append((device, list(zip(tower, [v for _, v in tower_grads_and_vars[index]]))))
        return groups

    def _transpose(self, per_item):
        """[item][tower] -> [tower][item]."""
        return [list(t) for t in zip(*per_item)] if per_item else [[] for _ in self.devices]

    def _all_reduce(self, tensors):
        """The sum of one gradient over the towers, on every tower."""
        if all(isinstance(t, tf.IndexedSlices) for t in tensors):
            return grad_ops.all_gather_sparse(tensors, self.devices)
        tensors = [tf.convert_to_tensor(t) for t in tensors]
        if self.method == "nccl":
            return grad_ops.nccl_all_reduce(tensors, self.devices)
        return grad_ops.ring_all_reduce(tensors, self.devices)

    def _copies(self):
        """(replica-side variable, plain-side variable) pairs: replicas and their slots."""
        optimizer = self.optimizer
        slots = optimizer.get_slot_names() if optimizer is not None else []
        pairs = []
        for _, plain, replica in self._pairs:
            pairs.append((replica, plain))
            for slot in slots:
                source, target = optimizer.get_slot(plain, slot), optimizer.get_slot(replica, slot)
                if source is not None and target is not None:
                    pairs.append((target, source))
        return pairs

    def post_init_op(self):
        copies = []
        for target, source in self._copies():
            with tf.device(target.device):
                copies.append(tf.assign(target, source.read_value()))
        return tf.group(*copies, name="post_init")

    def own_variables(self):
        return [target for target, _ in self._copies()]

    def describe(self):
        return "a copy of the variables on every tower (all-reduce: %s)" % self.method


def resolve(strategy, variable_device=None):
    """The strategy a wrapper uses: ``strategy`` itself, or the default parameter server."""
    if strategy is None:
        return ParameterServer(device=variable_device)
    if not isinstance(strategy, Strategy):
        raise TypeError("strategy must be a crnn_multigpu.wrapper.strategies.Strategy such as "
                        "ParameterServer() or Replicated(), got %r" % (strategy,))
    if variable_device is not None:
        raise ValueError("variable_device=%r and strategy=%r both choose where the variables "
                         "live; pass ParameterServer(device=%r) as the strategy instead"
                         % (variable_device, strategy.name, variable_device))
    return strategy


def from_name(name, **options):
    """The registered strategy called ``name`` (see :data:`STRATEGIES`), made with those of
    ``options`` that its class takes (its ``options``) and that are not None."""
    if name not in STRATEGIES:
        raise ValueError("unknown strategy %r: choose %s" % (name, ", ".join(sorted(STRATEGIES))))
    cls = STRATEGIES[name]
    return cls(**dict((key, value) for key, value in options.items()
                      if key in cls.options and value is not None))


def summary(cls):
    """The first line of a strategy class's docstring: its one-line help."""
    line = cls.__doc__.strip().splitlines()[0].rstrip(".")
    return line[:1].lower() + line[1:]
