"""What a model may ask of the tower it is being built in: index, count, training, cross-tower sums.

The wrapper makes a ``TowerContext`` current while it builds each tower; model code asks
``current_tower()`` instead of receiving extra arguments, so the same code runs alone (outside any
wrapper ``current_tower()`` is a trivial context: index 0, count 1, the sum is the identity)
and as tower i of N.

Cross-tower sums and the order towers are built in
-------------------------------------------------
The wrapper builds its towers one after another, so when tower 0's graph is built the tensors of
towers 1..N-1 do not exist yet, although a synchronised batch norm in tower 0 needs their
statistics. No build-time sum can close that loop short of building every tower's forward pass
twice. The sum is therefore a run-time rendezvous: each tower's ``cross_tower_sum(x)`` is one
``CollectiveReduce`` op on the tower's own device, and the N ops of one call (the k-th call in
every tower) share a group key (one per wrapper) and an instance key (one per call), so TensorFlow
adds their inputs while the step runs and hands every tower the same total. This is how
``tf.distribute``'s replicas and NCCL all-reduce meet too. The gradient of a sum of the towers'
inputs with respect to one input is the sum of the towers' upstream gradients, so the backward
pass is a second rendezvous of the same kind.

One correction makes that exact for the wrapper. It differentiates each tower's loss L_i on its
own and combines the results as sum_i w_i * grad_i / sum(w) (w_i: the tower's examples). The
cross-tower part of grad_i must therefore carry the other towers' upstream gradients weighted
w_j / w_i, so that after the wrapper's weighting tower j's loss counts by w_j as it does in the
plain model: the backward rendezvous sums w_j * g_j and tower i divides by w_i. The wrapper
tells the group its weights (``TowerGroup.weights``); without them the towers weigh equally,
which is exact for equal weights. (A consequence: ``tf.gradients`` of the wrapper's whole loss in
one call is not the path the wrapper takes and would weigh the cross-tower part twice.)

Consequences (documented on ``cross_tower_sum``): every tower's sum must run in the same
``session.run`` (the wrapper's tensors -- objective, loss, predictions -- always fetch all towers;
fetching one tower's tensor alone would wait for the others forever), every tower must ask for the
same sums in the same order (towers run the same code), and each tower needs a device of its own.
"""
import itertools
import threading

from crnn_multigpu.compat import tf

__all__ = ["TowerContext", "TowerGroup", "current_tower"]

_STATE = threading.local()
_GROUP_KEYS = itertools.count(1)
_INSTANCE_KEYS = itertools.count(1)


class TowerContext(object):
    """One tower's view: ``index``, ``count``, ``training`` and ``cross_tower_sum``.

    ``training`` is True when the wrapper builds the tower for a training step, None when
    nobody said (a model alone decides with its own switch, e.g. a placeholder).
    """

    def __init__(self, index=0, count=1, training=None, group=None):
        self.index, self.count, self.training = int(index), int(count), training
        self._group = group
        self._calls = 0                # forward sums asked for so far by this tower
        self._backward_calls = {}      # forward call -> gradients built for it so far

    def cross_tower_sum(self, tensor, name="cross_tower_sum"):
        """The element-wise sum of ``tensor`` over all towers of the step (same shape everywhere).

        Differentiable. Alone (count 1) it is the identity. Inside the wrapper the towers meet
        at run time, so run all towers together and ask for the same sums in every tower, in the
        same order (see the module docstring).
        """
        tensor = tf.convert_to_tensor(tensor)
        if self.count == 1:
            return tf.identity(tensor, name=name)
        call = self._calls
        self._calls += 1
        key = self._group.instance_key(("forward", call))
        reduce = self._group.all_reduce

        @tf.custom_gradient
        def summed(x):
            def grad(upstream):
                nth = self._backward_calls.get(call, 0)
                self._backward_calls[call] = nth + 1
                backward_key = self._group.instance_key(("backward", call, nth))
                weight = self._group.weight(self.index)
                if weight is None:
                    return reduce(upstream, backward_key)
                weight = tf.cast(weight, upstream.dtype)
                return reduce(upstream * weight, backward_key) / weight
            return reduce(x, key), grad

        with tf.name_scope(name):
            return summed(tensor)


class TowerGroup(object):
    """The towers of one wrapper: hands out their contexts and the keys their sums meet by."""

    def __init__(self, devices, training=True):
        self.devices = list(devices)
        self.training = training
        self.weights = None  # the wrapper's tower weights (see the module docstring)
        self._group_key = None
        self._keys = {}

    def context(self, index):
        """A context manager making tower ``index``'s context current while it is built."""
        return _Current(TowerContext(index, len(self.devices), self.training, group=self))

    def instance_key(self, call):
        """The same key for the same call in every tower (the first tower to ask allocates it)."""
        if self._group_key is None:
            self._check_devices()
            self._group_key = next(_GROUP_KEYS)
        if call not in self._keys:
            self._keys[call] = next(_INSTANCE_KEYS)
        return self._keys[call]

    def weight(self, index):
        """Tower ``index``'s weight in the wrapper's gradient mean, or None (equal weights)."""
        return None if self.weights is None else self.weights[index]

    def all_reduce(self, tensor, instance_key):
        """One tower's share of a summing rendezvous of all towers (on the current device)."""
        return tf.raw_ops.CollectiveReduce(
            input=tensor, group_size=len(self.devices), group_key=self._group_key,
            instance_key=instance_key, merge_op="Add", final_op="Id", subdiv_offsets=[0])

    def _check_devices(self):
        specs = [tf.DeviceSpec.from_string(d) for d in self.devices]
        names = [(s.job, s.replica, s.task, (s.device_type or "CPU").upper(), s.device_index or 0)
                 for s in specs]
        if len(set(names)) != len(names):
            raise ValueError("cross-tower sums (e.g. batch_norm(sync=True)) need one device per "
                             "tower, but the towers' devices repeat: %s. Give each tower its own "
                             "device (on CPUs: cpu_devices(n) with session_config(n))."
                             % ", ".join(self.devices))


class _Current(object):
    """Makes a context current for the duration of a ``with`` block (per thread, nestable)."""

    def __init__(self, context):
        self.context = context

    def __enter__(self):
        stack = getattr(_STATE, "stack", None)
        if stack is None:
            stack = _STATE.stack = []
        stack.append(self.context)
        return self.context

    def __exit__(self, *exc):
        _STATE.stack.pop()
        return False


def current_tower():
    """The context of the tower being built, or a trivial one (index 0 of 1) outside any wrapper."""
    stack = getattr(_STATE, "stack", None)
    return stack[-1] if stack else TowerContext()
