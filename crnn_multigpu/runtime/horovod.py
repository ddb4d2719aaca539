"""Horovod across processes, towers inside each process (TF 1.15 / Python 3.7 only).

Each process builds a ``MultiGpuModel`` over its own local towers; the towers are averaged
in-graph as usual, then ``allreduce_gradients`` (a gradient processor) averages that result
across processes with Horovod's ring all-reduce before clipping and the optimizer step::

    from crnn_multigpu import MultiGpuModel, session_config

    from crnn_multigpu.runtime import horovod as hvd_util
    hvd_util.init()
    model = MultiGpuModel(MyModel, devices=hvd_util.local_devices(2), optimizer=opt,
                          gradient_processors=[hvd_util.allreduce_gradients])
    broadcast = hvd_util.broadcast_variables_op()
    with tf.Session(config=session_config(2)) as session:
        session.run(tf.global_variables_initializer())
        session.run(broadcast)                  # every process starts from rank 0's values
        ...                                     # feed each process its own part of the batch

Horovod averages processes with equal weights, so the step equals the plain model's step on
the whole global batch only when every process feeds the same number of examples per step.
Horovod is not a dependency of this package: ``make venv-horovod`` builds it.
"""
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices, visible_gpus

_hvd = None


def _horovod():
    global _hvd
    if _hvd is None:
        try:
            import horovod.tensorflow as hvd
        except ImportError as error:
            raise ImportError("crnn_multigpu.runtime.horovod needs Horovod built for TensorFlow (%s); install "
                              "with `make venv-horovod` (TF 1.15 / Python 3.7: Horovod 0.28.1 does "
                              "not build against TF 2.x)" % error)
        _hvd = hvd
    return _hvd


def init():
    """Start Horovod in this process (call once, before building graphs); returns the module."""
    hvd = _horovod()
    hvd.init()
    return hvd


def rank():
    """This process's global rank (0 .. size-1)."""
    return _horovod().rank()


def size():
    """The number of Horovod processes."""
    return _horovod().size()


def is_chief():
    """True in rank 0: the one process that should write checkpoints, summaries and logs."""
    return _horovod().rank() == 0


def allreduce_gradients(grads_and_vars, sparse_as_dense=False, compression=None, device_dense="",
                        device_sparse=""):
    """A ``gradient_processor``: average ``grads_and_vars`` over all Horovod processes.

    Dense gradients go through Horovod's all-reduce (``op=Average``). ``tf.IndexedSlices``
    stay sparse: Horovod allgathers their values and indices (values divided by the process
    count), so the update still touches only the rows seen, and the optimizer sums
    duplicate rows. Note: the allgathered slices grow with the number of processes and
    rows, and for huge embedding gradients this can use far more memory than the dense
    table (horovod/horovod#554); ``sparse_as_dense=True`` densifies them first and uses
    the all-reduce instead. Options are set with ``functools.partial``.
    The average is exact only when every process feeds the same number of examples.
    """
    hvd = _horovod()
    compression = compression or hvd.Compression.none
    averaged = []
    with tf.name_scope("horovod_allreduce"):
        for grad, var in grads_and_vars:
            if grad is None:
                averaged.append((grad, var))
                continue
            if sparse_as_dense and isinstance(grad, tf.IndexedSlices):
                grad = tf.convert_to_tensor(grad)
            averaged.append((hvd.allreduce(grad, op=hvd.Average, compression=compression,
                                           device_dense=device_dense, device_sparse=device_sparse),
                             var))
    return averaged


def broadcast_variables_op(root_rank=0):
    """An op that copies every global variable from ``root_rank`` to all processes.

    Run it once, after initializing (or restoring, on the chief) the variables, so that every
    process starts from the same values; optimizer slots and ``global_step`` are included.
    """
    return _horovod().broadcast_global_variables(root_rank)


def local_devices(towers_per_process=1):
    """Device strings of this process's towers.

    With GPUs: ``/gpu:<local_rank * towers_per_process + i>``, so the processes on one machine
    use disjoint GPUs (every process sees all of them; ``session_config`` lets memory grow on
    demand). Without GPUs: virtual CPUs ``/cpu:0 .. /cpu:<towers_per_process - 1>``, which need
    ``session_config(n_cpu_devices=towers_per_process)``.
    """
    if not isinstance(towers_per_process, int) or towers_per_process < 1:
        raise ValueError("towers_per_process must be a positive integer, got %r" % (towers_per_process,))
    gpus = visible_gpus()
    if not gpus:
        return cpu_devices(towers_per_process)
    hvd = _horovod()
    first = hvd.local_rank() * towers_per_process
    if first + towers_per_process > len(gpus):
        raise ValueError("local rank %d with %d tower(s) per process needs /gpu:%d../gpu:%d, but only "
                         "%d GPU(s) are visible; start at most %d process(es) per machine"
                         % (hvd.local_rank(), towers_per_process, first,
                            first + towers_per_process - 1, len(gpus),
                            len(gpus) // towers_per_process))
    return ["/gpu:%d" % (first + i) for i in range(towers_per_process)]
