"""scripts/cluster_scaling.py: the prediction's arithmetic, the bytes each configuration moves
(counted from its graph), and a tiny two-worker run on real servers on loopback."""
import collections
import os
import sys

from crnn_multigpu.compat import tf
from crnn_multigpu.runtime.cluster import chief_target
from crnn_multigpu.runtime.local_servers import LocalServers, loopback_cluster
from crnn_multigpu.wrapper.devices import close_session
from waiting import HANG_GUARD

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import cluster_scaling as cs  # noqa: E402

ROWS, COLS = 8, 4
VARIABLE_BYTES = ROWS * COLS * 4
PS_1, PS_2, _, CALIBRATION, LOCAL_2, _ = cs.configurations(3)


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def test_the_step_is_the_longer_of_the_path_through_the_hub_and_all_the_work_over_the_cores():
    seconds = {("down", "small"): 0.003, ("down", "large"): 0.103,
               ("up", "small"): 0.004, ("up", "large"): 0.054, ("local", "small"): 0.001}
    cpu = {("down", "small"): 0.002, ("down", "large"): 0.202,
           ("up", "small"): 0.003, ("up", "large"): 0.103, ("local", "small"): 0.001}
    links = cs.fit_links(seconds, cpu, 4, 4 + 10 ** 8)  # 1e8 more bytes: 100 ms down, 50 up
    assert close(links.latency, 0.002) and close(links.down, 1e9) and close(links.up, 2e9)
    assert close(links.cpu_down, 2e-9) and close(links.cpu_up, 1e-9)
    measured = collections.OrderedDict([(PS_1, 0.2), (PS_2, 0.35), (CALIBRATION, 0.05),
                                        (LOCAL_2, 0.2)])
    per_step_cpu = {PS_1: 0.3, PS_2: 0.6, CALIBRATION: 0.06, LOCAL_2: 0.4}
    counted = {PS_1: (1e8, 1e8), PS_2: (2e8, 2e8), CALIBRATION: (0, 0), LOCAL_2: (1e8, 1e8)}
    rows = {r.configuration: r for r in cs.table_rows(measured, per_step_cpu, counted, links, 2)}
    # One remote tower: its path, 50 ms compute + 2 ms latency + 100 ms down + 50 ms up, is
    # longer than the work (60 ms compute CPU + 200 + 100 ms of transfer CPU) over 2 cores.
    assert close(rows[PS_1].predicted.step, 0.202) and close(rows[PS_1].predicted.work, 0.36)
    # Two remote towers: the ps serves them one after the other (0.05 + 0.002 + 2 x 0.15 s),
    # but twice the work, 0.72 s over 2 cores, is longer still.
    assert close(rows[PS_2].predicted.path, 0.352) and close(rows[PS_2].predicted.step, 0.36)
    assert close(rows[CALIBRATION].predicted.step, 0.05)  # nothing crosses: compute alone
    # Variables on worker 0: one of the two towers is remote; 0.42 s of work over 2 cores.
    assert close(rows[LOCAL_2].predicted.step, 0.21)
    # Perfect scaling: the measured 1-worker step of the same placement.
    assert [rows[c].baseline for c in (PS_1, PS_2, CALIBRATION, LOCAL_2)] == [0.2, 0.2, 0.05, 0.05]


def test_each_remote_tower_moves_the_weights_and_sends_back_their_gradient():
    for configuration in cs.configurations(3):
        with tf.Graph().as_default():
            wrapper = cs.build(configuration, cs.dense_model(ROWS, COLS))
            down, up = cs.hub_bytes(wrapper, "/job:%s/task:0" % configuration.hub)
        remote = configuration.workers - (configuration.hub == "worker")
        assert down == remote * VARIABLE_BYTES, configuration
        # The gradients, plus a few bytes per remote tower (its loss, example count, guard).
        assert remote * VARIABLE_BYTES <= up <= remote * (VARIABLE_BYTES + 8), configuration


def test_a_tiny_cluster_on_loopback_steps_every_configuration(tmp_path):
    model_cls = cs.dense_model(ROWS, COLS)
    with LocalServers(loopback_cluster(2), tmp_path, HANG_GUARD) as cluster:
        target = chief_target(cluster.cluster)
        pids = [os.getpid()] + cluster.pids()
        probe = cs.LinkProbe(target, 4096, pids)
        probe.run(1)
        probe.run(1)
        links = probe.links()
        probe.close()
        prepared = [cs.prepare(c, target, model_cls, 2, ROWS, COLS)
                    for c in cs.configurations(2)]
        try:
            for item in prepared:
                times, cpu = cs.time_steps(item, 2, pids)
                assert len(times) == 2 and cpu >= 0
                # The warm-up steps and the timed ones, all applied on the variables' task.
                assert item.session.run(item.wrapper.global_step) == 3 + 2
        finally:
            for item in prepared:
                close_session(item.session)
        processes = list(cluster.processes.values())
    assert [process.returncode for process in processes] == [0, 0, 0]  # ps and both workers stopped
    assert links.latency >= 0 and all(len(v) == 2 for v in probe.seconds.values())
