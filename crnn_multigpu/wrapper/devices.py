"""Which devices towers run on and where the shared variables live.

Device strings are plain TensorFlow device specifications (``/gpu:0``,
``/cpu:1``, ``/job:worker/task:1/gpu:0``); nothing here needs a GPU to run, so
the GPU paths are exercised by the same code that tests use on virtual CPUs.
"""
import logging
import threading

from crnn_multigpu.compat import tf

log = logging.getLogger(__name__)

# Op types that create variables (ref, resource, and the handle ops resource
# variables are made of); these go to the variable device, all else to the tower.
VARIABLE_OP_TYPES = frozenset([
    "Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable",
    "MutableHashTable", "MutableHashTableV2", "MutableHashTableOfTensors",
    "MutableHashTableOfTensorsV2", "MutableDenseHashTable", "MutableDenseHashTableV2",
])


def visible_gpus():
    """Return the device strings of the GPUs this process can use (``/gpu:0``, ...).

    Honours ``CUDA_VISIBLE_DEVICES`` because TensorFlow does; does not allocate
    GPU memory (``list_physical_devices`` only enumerates).
    """
    gpus = tf.config.experimental.list_physical_devices("GPU")
    return ["/gpu:%d" % i for i in range(len(gpus))]


def tower_devices(n_gpus=None, devices=None):
    """Resolve the wrapper's device arguments into one device string per tower.

    ``devices`` wins when given (any device strings, local or remote).
    ``n_gpus=k`` takes the first k visible GPUs; ``n_gpus=None`` takes all of
    them, or a single ``/cpu:0`` tower on a machine without GPUs.
    """
    if devices is not None:
        devices = list(devices)
        if not devices:
            raise ValueError("devices=[] names no device: give at least one device string, "
                             "e.g. devices=['/gpu:0', '/gpu:1'] or devices=['/cpu:0']")
        for device in devices:
            if not isinstance(device, str):
                raise TypeError("devices must be device strings like '/gpu:0'; got %r" % (device,))
            tf.DeviceSpec.from_string(device)  # raises on malformed strings, naming them
        if n_gpus is not None and n_gpus != len(devices):
            raise ValueError("n_gpus=%d disagrees with the %d devices given (%s); pass only one of them"
                             % (n_gpus, len(devices), ", ".join(devices)))
        return devices
    gpus = visible_gpus()
    if n_gpus is None:
        return gpus or ["/cpu:0"]
    if not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError("n_gpus must be a positive integer (or None for all visible GPUs); got %r"
                         % (n_gpus,))
    if n_gpus > len(gpus):
        raise ValueError("n_gpus=%d but only %d GPU(s) are visible (%s). Use n_gpus<=%d, or on a "
                         "machine without GPUs pass devices=cpu_devices(%d) with "
                         "session_config(n_cpu_devices=%d)."
                         % (n_gpus, len(gpus), ", ".join(gpus) or "none", len(gpus), n_gpus, n_gpus))
    return gpus[:n_gpus]


def cpu_devices(n):
    """Device strings of ``n`` (virtual) CPU devices: ``['/cpu:0', ..., '/cpu:n-1']``."""
    return ["/cpu:%d" % i for i in range(n)]


def session_config(n_cpu_devices=1, allow_soft_placement=True, log_device_placement=False):
    """A ``ConfigProto`` that splits the host CPU into ``n_cpu_devices`` virtual devices.

    Soft placement lets ops without a kernel on the chosen device (CTC on GPU in
    TF 1.x) fall back to the CPU instead of failing; GPU memory grows on demand
    so several towers or processes can share a card.
    """
    config = tf.ConfigProto(device_count={"CPU": max(1, int(n_cpu_devices))},
                            allow_soft_placement=allow_soft_placement,
                            log_device_placement=log_device_placement)
    config.gpu_options.allow_growth = True
    return config


def close_session(session, timeout=60.0):
    """Close ``session``, waiting at most ``timeout`` seconds; returns whether it closed.

    On TF 2.21, closing a session whose ``prefetch_to_device`` iterators just failed (a data
    source error) now and then deadlocks inside TensorFlow (the device manager re-takes its
    own lock while releasing the iterator's multi-device function). The close then goes on
    in a daemon thread and the caller carries on, so the error is still reported and the
    process still ends. A close that fails (a cluster task that died) is logged, not raised:
    the error that ended the session is the one to report.
    """
    def close():
        try:
            session.close()
        except tf.errors.OpError as error:
            log.debug("closing the TensorFlow session failed: %s", error)

    closer = threading.Thread(target=close, name="close-session", daemon=True)
    closer.start()
    closer.join(timeout)
    if closer.is_alive():
        log.warning("closing the TensorFlow session did not finish within %g s; going on "
                    "without it", timeout)
        return False
    return True


def host_device(device):
    """The CPU of the machine (task) that runs ``device``: where its input pipeline belongs."""
    spec = tf.DeviceSpec.from_string(device)
    parts = []
    if spec.job is not None:
        parts.append("/job:%s" % spec.job)
    if spec.replica is not None:
        parts.append("/replica:%d" % spec.replica)
    if spec.task is not None:
        parts.append("/task:%d" % spec.task)
    return "".join(parts) + "/cpu:0"


def default_variable_device(tower_device_list):
    """The device that holds the one copy of the variables when none is chosen.

    Local towers keep variables on the host CPU (every tower reads them over
    the same bus); towers of a cluster keep them on the CPU of the first
    tower's task, so no worker needs a ``ps`` job.
    """
    return host_device(tower_device_list[0])


def tower_device_function(tower_device, variable_device):
    """A device function placing variables on ``variable_device`` and all else on the tower.

    ``variable_device`` is a device string, or a callable ``op -> device string`` that
    chooses per variable (a placement strategy).
    """
    choose = variable_device if callable(variable_device) else (lambda op: variable_device)

    def place(op):
        if op.device:  # an explicit tf.device inside the model wins
            return op.device
        return choose(op) if op.type in VARIABLE_OP_TYPES else tower_device
    return place


def cluster_devices(cluster, job="worker", gpus_per_task=0):
    """Expand a cluster description into tower device strings.

    ``cluster`` is a dict as ``tf.train.ClusterSpec`` takes (``{"worker": [...],
    "ps": [...]}``) or a ``ClusterSpec``. Each task of ``job`` contributes its
    ``gpus_per_task`` GPUs, or its CPU when ``gpus_per_task`` is 0.
    """
    spec = cluster if isinstance(cluster, tf.train.ClusterSpec) else tf.train.ClusterSpec(cluster)
    if job not in spec.jobs:
        raise ValueError("the cluster has no job %r (jobs: %s)" % (job, ", ".join(spec.jobs)))
    devices = []
    for task in spec.task_indices(job):
        if gpus_per_task:
            devices.extend("/job:%s/task:%d/gpu:%d" % (job, task, g) for g in range(gpus_per_task))
        else:
            devices.append("/job:%s/task:%d/cpu:0" % (job, task))
    return devices
