"""Where a program's towers run: one answer for training and reading.

crnn-train, crnn-predict, crnn-evaluate, the main job and crnn-server ask
:func:`resolve_placement`, so the same request (``--towers N``, or a cluster) gets the same
devices, or the same one-line refusal, whichever tool asks. Locally, towers are GPUs whenever
the process sees any, and virtual CPU devices of the host only on a machine without them: asking
for more towers than there are GPUs is refused rather than quietly run on the CPU.
"""
from dataclasses import dataclass

from crnn_multigpu.runtime.cluster import chief_target, cluster_towers
from crnn_multigpu.wrapper import devices as local


@dataclass(frozen=True)
class Placement(object):
    """What :func:`resolve_placement` answers.

    ``devices``: one device string per tower; ``variable_device``: where the one copy of the
    variables lives unless a strategy places them itself (the host CPU; a cluster's ps task);
    ``n_cpu_devices``: the virtual CPU devices a session splits the host into (the CPU towers'
    count, else 1); ``target``: the session target ("" in this process, ``grpc://...`` for the
    chief of a cluster).
    """
    devices: tuple
    variable_device: str
    n_cpu_devices: int = 1
    target: str = ""

    def session_config(self, **options):
        """The ``ConfigProto`` of a session (or cluster server) running these towers;
        ``options`` as :func:`~crnn_multigpu.wrapper.devices.session_config` takes them."""
        return local.session_config(self.n_cpu_devices, **options)


def resolve_placement(towers=None, cluster=None, gpus_per_task=0):
    """The :class:`Placement` of ``towers`` towers on this machine, or of the towers of
    ``cluster`` (a cluster dict or ``tf.train.ClusterSpec``).

    Locally: ``towers`` GPUs (None: every visible one) when there are any, else ``towers``
    (None: 1) virtual CPU devices. A cluster has one tower per worker, or ``gpus_per_task`` per
    worker on its GPUs (``runtime.cluster.cluster_towers``); ``towers`` may only repeat their
    count. Raises ValueError (one line) for more towers than there are GPUs, or than the
    cluster has.
    """
    if towers is not None and (isinstance(towers, bool) or not isinstance(towers, int)
                               or towers < 1):
        raise ValueError("--towers must be a positive whole number, got %r" % (towers,))
    if cluster is not None:
        return _cluster_placement(towers, cluster, gpus_per_task)
    gpus = local.visible_gpus()
    if not gpus:
        count = towers or 1
        return Placement(tuple(local.cpu_devices(count)), "/cpu:0", count)
    if towers is not None and towers > len(gpus):
        raise ValueError("--towers %d but only %d GPU(s) are visible (%s): use --towers %d or "
                         "fewer (towers are GPUs when there are any; with CUDA_VISIBLE_DEVICES= "
                         "they are virtual CPU devices)"
                         % (towers, len(gpus), ", ".join(gpus), len(gpus)))
    chosen = tuple(gpus[:towers or len(gpus)])
    return Placement(chosen, local.default_variable_device(chosen))


def _cluster_placement(towers, cluster, gpus_per_task):
    """The placement of the towers of ``cluster``; ``towers`` (when given) must count them."""
    chosen, variable_device = cluster_towers(cluster, gpus_per_task=gpus_per_task)
    if towers is not None and towers != len(chosen):
        raise ValueError("--towers %d but the cluster has %d tower(s) (%s): drop --towers; with "
                         "--cluster the towers are its workers' (--gpus-per-task sets how many "
                         "on each)" % (towers, len(chosen), ", ".join(chosen)))
    return Placement(tuple(chosen), variable_device, 1, chief_target(cluster))
