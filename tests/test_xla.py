"""MultiGpuModel(xla=True): the towers are compiled by XLA and compute what they compute without it."""
import zlib

import numpy as np
import pytest

from crnn_multigpu import MultiGpuModel
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import cpu_devices
from test_sync_bn import ConvBn, make_batch


def train_two_steps(make_session, xla):
    """Loss before, loss after and the op types run by two SGD steps of a small conv + batch
    norm model on one CPU tower (XLA compiles a CRNN for minutes on a loaded 2-core machine)."""
    graph = tf.Graph()
    with graph.as_default():
        wrapper = MultiGpuModel(ConvBn, devices=cpu_devices(1), xla=xla,
                                optimizer=tf.train.GradientDescentOptimizer(0.1))
        session = make_session(graph)
        session.run(tf.global_variables_initializer())
        for variable in tf.trainable_variables():  # the same weights in both graphs
            rng = np.random.RandomState(zlib.crc32(variable.op.name.encode()))
            variable.load(rng.uniform(-0.3, 0.3, variable.shape.as_list()), session)
        feed = wrapper.feed_dict([make_batch(8)])
        metadata = tf.RunMetadata()
        before, _ = session.run([wrapper.loss, wrapper.objective], feed,
                                options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                run_metadata=metadata)
        session.run(wrapper.objective, feed)
        after = session.run(wrapper.loss, feed)
    op_types = set(node.timeline_label.split(" = ")[-1].split("(")[0]
                   for device in metadata.step_stats.dev_stats for node in device.node_stats)
    return before, after, op_types


@pytest.mark.slow
def test_an_xla_tower_gives_the_same_loss(make_session):
    before, after, plain_ops = train_two_steps(make_session, xla=False)
    xla_before, xla_after, xla_ops = train_two_steps(make_session, xla=True)
    assert not any("Xla" in op for op in plain_ops)
    assert {"_XlaCompile", "_XlaRun"} <= xla_ops, sorted(xla_ops)  # compiled, not just marked
    assert after < 0.99 * before  # the steps did something
    np.testing.assert_allclose(xla_before, before, rtol=1e-5)
    np.testing.assert_allclose(xla_after, after, rtol=1e-4)


def test_xla_flag_must_be_a_bool():
    with pytest.raises(TypeError, match="xla must be True or False, got 'yes'"):
        MultiGpuModel(ConvBn, devices=cpu_devices(1), xla="yes")


def test_xla_on_several_cpu_towers_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="one CPU device per process, but 2 towers are on CPUs"):
        MultiGpuModel(ConvBn, devices=cpu_devices(2), xla=True)


def test_crnn_train_xla_reaches_the_wrapper(tiny_dataset, tmp_path, capsys):
    """--xla compiles the towers: on two CPU towers the wrapper's refusal is the tool's one line."""
    from assertions import one_error_line
    from crnn_multigpu.cli import train
    out = str(tmp_path / "run")
    with tf.Graph().as_default():
        code = train.main(["--train", tiny_dataset, "--out", out, "--steps", "1", "--model",
                           "tiny", "--batch-size", "8", "--towers", "2", "--xla"])
    line = one_error_line(code, capsys.readouterr().err)
    assert "xla=True runs compiled towers on one CPU device per process" in line, line
