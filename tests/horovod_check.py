"""Check: Horovod processes x local towers take the same steps as the plain model.

Run with ``make test-horovod``, i.e.
``horovodrun -np 2 -H localhost:2 --gloo .venv-horovod/bin/python tests/horovod_check.py``
(a program, not a pytest module: Horovod starts the processes).
Each process builds MultiGpuModel over 2 virtual CPU towers with the Horovod all-reduce as
gradient processor, starts from variables broadcast from rank 0 (the other ranks perturb
theirs first, so a missing broadcast shows) and trains 3 SGD steps on its own half of each
global batch. Every rank then compares its variables with the plain single-device model
trained on the whole batches; rank 0 prints the verdict. Dense (Linear) and sparse
(Embedding, IndexedSlices gradient) paths are both checked.
"""
import sys

import numpy as np
import toy_models  # beside this file: Python puts a script's folder on sys.path

from crnn_multigpu import MultiGpuModel, cpu_devices, session_config
from crnn_multigpu.runtime import horovod as hvd_util
from crnn_multigpu.compat import tf

TOWERS, STEPS, GLOBAL_BATCH, LR = 2, 3, 16, 0.1
RTOL, ATOL = 1e-5, 1e-6


def batches(make):
    """The same global batches in every process (fixed seeds)."""
    return [make(GLOBAL_BATCH, seed=10 + step) for step in range(STEPS)]


def my_part(batch, rank, size):
    per = GLOBAL_BATCH // size
    return {k: v[rank * per:(rank + 1) * per] for k, v in batch.items()}


def run_horovod(model_cls, global_batches):
    rank, size = hvd_util.rank(), hvd_util.size()
    with tf.Graph().as_default():
        wrapper = MultiGpuModel(model_cls, devices=cpu_devices(TOWERS),
                                optimizer=tf.train.GradientDescentOptimizer(LR),
                                gradient_processors=[hvd_util.allreduce_gradients])
        variables = tf.trainable_variables()
        # Built in every rank (identical graphs), run only off rank 0.
        perturb = tf.group(*[tf.assign_add(v, tf.ones_like(v)) for v in variables])
        broadcast = hvd_util.broadcast_variables_op()
        with tf.Session(config=session_config(TOWERS)) as session:
            session.run(tf.global_variables_initializer())
            if rank != 0:
                session.run(perturb)
            session.run(broadcast)
            for batch in global_batches:
                part = my_part(batch, rank, size)
                session.run(wrapper.objective, wrapper.feed_dict(wrapper.split(part)))
            return {v.op.name: value for v, value in zip(variables, session.run(variables))}


def run_plain(model_cls, global_batches):
    with tf.Graph().as_default():
        model = model_cls()
        step = tf.train.GradientDescentOptimizer(LR).minimize(model.loss)
        variables = tf.trainable_variables()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for batch in global_batches:
                session.run(step, model.feed_dict(batch))
            return {v.op.name: value for v, value in zip(variables, session.run(variables))}


def compare(name, got, want):
    problems = []
    if sorted(got) != sorted(want):
        return ["%s: variables differ: %s vs %s" % (name, sorted(got), sorted(want))]
    for var in sorted(want):
        if not np.allclose(got[var], want[var], rtol=RTOL, atol=ATOL):
            problems.append("%s: %s differs by up to %.3g (horovod %s, plain %s)"
                            % (name, var, np.max(np.abs(got[var] - want[var])),
                               got[var].ravel()[:4], want[var].ravel()[:4]))
    return problems


def main():
    hvd_util.init()
    rank, size = hvd_util.rank(), hvd_util.size()
    if GLOBAL_BATCH % size or (GLOBAL_BATCH // size) < TOWERS:
        sys.exit("error: %d processes cannot split a global batch of %d evenly" % (size, GLOBAL_BATCH))
    problems = []
    for name, model_cls, make in [("dense (Linear)", toy_models.Linear, toy_models.make_batch),
                                  ("sparse (Embedding)", toy_models.Embedding,
                                   toy_models.make_id_batch)]:
        global_batches = batches(make)
        problems += compare(name, run_horovod(model_cls, global_batches),
                            run_plain(model_cls, global_batches))
    if problems:
        sys.stderr.write("horovod check FAILED on rank %d:\n  %s\n" % (rank, "\n  ".join(problems)))
        sys.exit(1)
    if hvd_util.is_chief():
        print("horovod check passed: %d processes x %d towers == plain model" % (size, TOWERS))


if __name__ == "__main__":
    main()
