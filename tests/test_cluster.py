"""The tower wrapper on TensorFlow's gRPC runtime: cluster files, servers, exact updates."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

import toy_models as toys
from assertions import plain_run, read_values
from waiting import HANG_GUARD, first_checkpoint, wait_until
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.cli import server as server_cli
from crnn_multigpu.runtime.cluster import (chief_target, cluster_towers, free_ports, is_chief,
                                           load_cluster, start_server, task_from_env,
                                           wait_for_tasks)
from crnn_multigpu.runtime.placement import resolve_placement
from crnn_multigpu.runtime.local_servers import (LocalServers, ServerFailed, loopback_cluster,
                                                 package_environment)
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import session_config

START_TIMEOUT = HANG_GUARD  # a server imports TensorFlow and listens: waited for as a state
STOP_TIMEOUT = 60  # a server exits on SIGTERM; a slower one is killed and reported
LR = 0.1

CLUSTER = {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"], "ps": ["127.0.0.1:2224"]}


def write_json(path, value):
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return str(path)


# -- load_cluster / task_from_env ------------------------------------------


def test_load_cluster_from_file(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert load_cluster(write_json(tmp_path / "c.json", CLUSTER)) == CLUSTER


def test_load_cluster_accepts_tf_config_shaped_file(tmp_path):
    path = write_json(tmp_path / "c.json", {"cluster": CLUSTER, "task": {"type": "ps", "index": 0}})
    assert load_cluster(path) == CLUSTER


def test_file_wins_over_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["other:1"]}}))
    assert load_cluster(write_json(tmp_path / "c.json", CLUSTER)) == CLUSTER


def test_load_cluster_and_task_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER,
                                                "task": {"type": "worker", "index": 1}}))
    assert load_cluster() == CLUSTER
    assert task_from_env() == ("worker", 1)


def test_other_environment_variable(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    monkeypatch.setenv("MY_CLUSTER", json.dumps({"cluster": {"worker": ["h:1"]}}))
    assert load_cluster(env_var="MY_CLUSTER") == {"worker": ["h:1"]}
    assert task_from_env("MY_CLUSTER") is None


def test_no_task_without_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert task_from_env() is None


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not valid JSON"),
    ([], "must be a JSON object"),
    ({"ps": ["h:1"]}, "no 'worker' job"),
    ({"worker": []}, "lists no task address"),
    ({"worker": "h:1"}, "must list its task addresses"),
    ({"worker": ["h"]}, "not of the form host:port"),
    ({"worker": [":1"]}, "has no host"),
    ({"worker": ["h:abc"]}, "port that is not an integer"),
    ({"worker": ["h:70000"]}, "outside 1..65535"),
    ({"worker": [2222]}, "not of the form host:port"),
    ({"worker": ["h:1", "h:1"]}, "given to both /job:worker/task:0 and /job:worker/task:1"),
])
def test_bad_cluster_file_is_named_with_its_problem(tmp_path, content, problem):
    path = write_json(tmp_path / "bad.json", content)
    with pytest.raises(ValueError) as error:
        load_cluster(path)
    assert "bad.json" in str(error.value) and problem in str(error.value)


def test_missing_cluster_file(tmp_path):
    with pytest.raises(ValueError, match="missing.json.*cannot be read"):
        load_cluster(str(tmp_path / "missing.json"))


@pytest.mark.parametrize("value, problem", [
    ("{oops", "TF_CONFIG is not valid JSON"),
    ('["worker"]', "TF_CONFIG must hold a JSON object"),
    ('{"task": {"type": "worker", "index": 0}}', 'TF_CONFIG has no "cluster" key'),
    ('{"cluster": {"worker": ["h:x"]}}', "TF_CONFIG, /job:worker/task:0: address 'h:x'"),
])
def test_bad_tf_config_is_named_with_its_problem(monkeypatch, value, problem):
    monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(ValueError) as error:
        load_cluster()
    assert problem in str(error.value)


def test_bad_task_in_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": {"type": "worker",
                                                                            "index": -1}}))
    with pytest.raises(ValueError, match="TF_CONFIG: task index"):
        task_from_env()


def test_no_cluster_at_all(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="no cluster given.*TF_CONFIG"):
        load_cluster()


# -- placement helpers -----------------------------------------------------


def test_cluster_towers_with_ps():
    towers, variables = cluster_towers(CLUSTER)
    assert towers == ["/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"]
    assert variables == "/job:ps/task:0/cpu:0"


def test_cluster_towers_without_ps_and_with_gpus():
    towers, variables = cluster_towers({"worker": CLUSTER["worker"]}, gpus_per_task=2)
    assert towers == ["/job:worker/task:0/gpu:0", "/job:worker/task:0/gpu:1",
                      "/job:worker/task:1/gpu:0", "/job:worker/task:1/gpu:1"]
    assert variables == "/job:worker/task:0/cpu:0"
    assert cluster_towers(tf.train.ClusterSpec(CLUSTER))[1] == "/job:ps/task:0/cpu:0"


def test_chief():
    assert chief_target(CLUSTER) == "grpc://127.0.0.1:2222"
    assert is_chief("worker", 0)
    assert not is_chief("worker", 1) and not is_chief("ps", 0)


def test_loopback_cluster_names_fresh_distinct_ports():
    cluster = loopback_cluster(2)
    assert sorted(cluster) == ["ps", "worker"] and len(cluster["worker"]) == 2
    addresses = cluster["worker"] + cluster["ps"]
    assert len(set(addresses)) == 3 and all(a.startswith("127.0.0.1:") for a in addresses)
    assert loopback_cluster(3, ps=0).keys() == {"worker"}


def test_free_ports_are_distinct():
    ports = free_ports(5)
    assert len(set(ports)) == 5 and all(0 < p < 65536 for p in ports)


@pytest.mark.parametrize("job, task, problem", [("chief", 0, "no job 'chief'"),
                                                ("worker", 2, "tasks 0..1, not 2")])
def test_start_server_refuses_unknown_task(job, task, problem):
    with pytest.raises(ValueError, match=problem):
        start_server(CLUSTER, job, task, resolve_placement(cluster=CLUSTER).session_config())


@pytest.mark.parametrize("argv, problem", [
    (["--task", "x"], "argument --task: invalid int value"),
    (["--cluster", "{cluster}", "--job", "worker", "--task", "3"], "job 'worker' has tasks 0..1"),
    (["--cluster", "{cluster}", "--job", "ps"], "no task given"),
])
def test_server_cli_argument_errors(tmp_path, monkeypatch, capsys, argv, problem):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    path = write_json(tmp_path / "c.json", CLUSTER)
    argv = [a.replace("{cluster}", path) for a in argv]
    try:
        code = server_cli.main(argv)
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and problem in err


def test_a_stop_signal_during_a_failed_start_is_taken_and_the_mask_restored(tmp_path,
                                                                           monkeypatch, capsys):
    from crnn_multigpu.runtime import cluster as cluster_lib

    def interrupted_then_bad(path):
        # To this thread, which has it blocked, as the server's every thread has: it stays
        # pending. (Sent to the process, pytest's own unmasked threads could take it.)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        raise ValueError("%s: not a cluster" % path)

    monkeypatch.setattr(cluster_lib, "load_cluster", interrupted_then_bad)
    path = str(tmp_path / "c.json")
    assert server_cli.main(["--cluster", path, "--job", "worker", "--task", "0"]) == 2
    assert capsys.readouterr().err == "error: %s: not a cluster\n" % path
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, []) & server_cli.STOP_SIGNALS
    assert not signal.sigpending() & server_cli.STOP_SIGNALS


def test_server_with_bad_cluster_file_exits_2_with_one_line(tmp_path):
    path = write_json(tmp_path / "bad.json", {"worker": ["127.0.0.1:notaport"]})
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.server", "--cluster", path,
                           "--job", "worker", "--task", "0"], cwd=str(tmp_path), env=package_environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG_GUARD)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "bad.json" in err and "not an integer" in err
    assert "Traceback" not in err and done.stdout == b""


def test_server_on_a_taken_port_exits_2_with_one_line_naming_it(tmp_path):
    """Issue 35: exit 1 and gRPC's own log lines on stderr before."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        port = holder.getsockname()[1]
        path = write_json(tmp_path / "c.json", {"worker": ["127.0.0.1:%d" % port]})
        done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.server", "--cluster",
                               path, "--job", "worker", "--task", "0"], cwd=str(tmp_path),
                              env=package_environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=HANG_GUARD)
    finally:
        holder.close()
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", (
        "error: cannot serve /job:worker/task:0 at 127.0.0.1:%d: port %d is already in use by "
        "another program (another crnn-server?); choose another port for this task in the "
        "cluster file (or $TF_CONFIG), or stop what holds it\n" % (port, port)))


def test_local_servers_report_a_server_that_exits_before_serving(tmp_path):
    servers = LocalServers({"worker": ["127.0.0.1:notaport"]}, tmp_path, START_TIMEOUT,
                           STOP_TIMEOUT)
    servers.start("worker", 0)
    with pytest.raises(ServerFailed, match="server worker0 exited with 2 before serving") as failed:
        servers.wait_until_serving()
    assert "not an integer" in str(failed.value)  # the server's own error line, from its log
    assert servers.stop() == [2]


# -- bounded waits for tasks that do not answer ---------------------------------


class PollClock(object):
    """``time`` for wait_for_tasks that moves only when it sleeps: its deadline is then met
    after as many polls as the timeout holds, however long a busy machine takes per poll."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_wait_for_tasks_names_only_the_tasks_that_never_answer(monkeypatch):
    from crnn_multigpu.runtime import cluster
    monkeypatch.setattr(cluster, "time", PollClock())
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    try:
        up = "127.0.0.1:%d" % listener.getsockname()[1]
        down = "127.0.0.1:%d" % free_ports(1)[0]
        wait_for_tasks({"worker": [up]}, timeout=0)  # answers: returns without waiting
        heard = []
        with pytest.raises(ConnectionError) as raised:
            wait_for_tasks({"worker": [up, down]}, timeout=0.3, poll_seconds=0.05,
                           log=heard.append)
    finally:
        listener.close()
    message = str(raised.value)
    assert "/job:worker/task:1 at %s" % down in message and "task:0" not in message
    assert "--connect-timeout" in message
    assert heard == ["waiting up to 0.3 s for /job:worker/task:1"]


def default_sigint():
    """Ctrl-C as at a terminal: a suite started in the background (``cmd &``, as CI may be)
    passes SIGINT on ignored, and Python then never turns it into KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def unreachable_training(tmp_path, tiny_dataset, *extra):
    """crnn-train on a cluster whose only worker is not running; stderr goes to a file."""
    cluster_file = write_json(tmp_path / "cluster.json",
                              {"worker": ["127.0.0.1:%d" % free_ports(1)[0]]})
    log_path = str(tmp_path / "train.err")
    with open(log_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "crnn_multigpu.cli.train", "--cluster",
                                 cluster_file, "--train", tiny_dataset, "--out",
                                 str(tmp_path / "run"), "--model", "tiny", "--steps", "2"]
                                + list(extra), cwd=str(tmp_path), env=package_environment(),
                                stdout=subprocess.PIPE, stderr=err,
                                preexec_fn=default_sigint)
    return proc, log_path


def test_train_gives_up_on_an_unreachable_worker_with_one_line(tmp_path, tiny_dataset):
    proc, log_path = unreachable_training(tmp_path, tiny_dataset, "--connect-timeout", "0.5")
    assert proc.wait(timeout=START_TIMEOUT) == 2
    lines = [l for l in open(log_path).read().splitlines() if not l.startswith("INFO ")]
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach /job:worker/task:0 at "), lines
    assert not os.path.exists(str(tmp_path / "run" / "checkpoints"))


def test_ctrl_c_stops_a_client_waiting_for_its_cluster(tmp_path, tiny_dataset):
    proc, log_path = unreachable_training(tmp_path, tiny_dataset, "--connect-timeout", "3600")
    try:
        wait_until(lambda: "waiting up to 3600 s" in open(log_path).read(), proc, log_path,
                   "the wait for the cluster")
        proc.send_signal(signal.SIGINT)
        # A state, not a speed: the process ends (TensorFlow's teardown is slow on a busy CPU).
        assert proc.wait(timeout=HANG_GUARD) == 130, open(log_path).read()
    finally:
        if proc.poll() is None:
            proc.kill()
    err = open(log_path).read()
    # Nothing is trained while the client waits: it leaves at once, saying so.
    assert err.splitlines()[-1] == ("SIGINT received while setting up: nothing to save; run "
                                    "the same command again") and "Traceback" not in err, err


# -- the real thing: servers in other processes -----------------------------


@pytest.fixture
def local_cluster(tmp_path):
    """2 workers and 1 ps on fresh 127.0.0.1 ports, always stopped at the end."""
    with LocalServers(loopback_cluster(2), tmp_path, START_TIMEOUT, STOP_TIMEOUT) as servers:
        yield servers


def task_of(device):
    spec = tf.DeviceSpec.from_string(device)
    return "/job:%s/task:%s" % (spec.job, spec.task)


def test_towers_on_two_workers_update_exactly_like_one_process(local_cluster, make_session):
    batches = [toys.make_batch(8, seed=s) for s in (1, 2, 3)]
    expected, _ = plain_run(toys.Linear, batches, make_session,
                            lambda: tf.train.GradientDescentOptimizer(LR))

    with local_cluster.logs_on_failure():
        towers, variable_device = cluster_towers(local_cluster.cluster)
        wrapper = MultiGpuModel(toys.Linear, devices=towers, variable_device=variable_device,
                                optimizer=tf.train.GradientDescentOptimizer(LR))

        # Placement in the graph: one tower per worker, the variables on the ps.
        for index, model in enumerate(wrapper.models):
            forward = [model.predict, model.loss, model.error, model.log_prob]
            assert [task_of(t.op.device) for t in forward] == ["/job:worker/task:%d" % index] * 4
        for variable in tf.global_variables():
            assert task_of(variable.device) == "/job:ps/task:0", (variable.op.name, variable.device)
        gradient_tasks = set(task_of(op.device) for op in tf.get_default_graph().get_operations()
                             if "gradients" in op.name and op.device.startswith("/job:worker"))
        assert gradient_tasks == {"/job:worker/task:0", "/job:worker/task:1"}

        session = tf.Session(chief_target(local_cluster.cluster), config=session_config(1))
        try:
            session.run(tf.global_variables_initializer())
            options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
            metadata = tf.RunMetadata()
            for step, batch in enumerate(batches):
                feed = wrapper.feed_dict(wrapper.split(batch))
                if step == 0:
                    session.run(wrapper.objective, feed, options=options, run_metadata=metadata)
                else:
                    session.run(wrapper.objective, feed)
            got = read_values(session)
        finally:
            session.close()

        for name in ("w", "b"):
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)
        assert got["global_step"] == len(batches)

        # Placement at run time: kernels really ran in all three processes.
        ran_on = set(task_of(stats.device) for stats in metadata.step_stats.dev_stats
                     if stats.node_stats and stats.device.startswith("/job:"))
        assert {"/job:worker/task:0", "/job:worker/task:1", "/job:ps/task:0"} <= ran_on, ran_on

        assert local_cluster.stop() == [0, 0, 0], "servers did not exit cleanly on SIGTERM"


def test_crnn_train_drives_the_cluster_and_the_chief_checkpoints(local_cluster, tiny_dataset,
                                                                   tmp_path, capsys):
    from crnn_multigpu.runtime.checkpoints import latest_checkpoint
    from crnn_multigpu.cli import train
    out = str(tmp_path / "run")
    with local_cluster.logs_on_failure():
        graph = tf.Graph()
        with graph.as_default():
            code = train.main(["--cluster", local_cluster.cluster_file, "--train", tiny_dataset,
                               "--out", out, "--model", "tiny", "--batch-size", "8",
                               "--steps", "4", "--log-every", "2", "--validate-every", "0"])
        err = capsys.readouterr().err
        assert code == 0, err
        assert "/job:worker/task:0" in err and "/job:worker/task:1" in err
        reader = tf.train.load_checkpoint(latest_checkpoint(out))
        assert reader.get_tensor("global_step") == 4


def cluster_training(servers, tiny_dataset, tmp_path, *extra):
    """crnn-train on ``servers``' cluster in a process of its own, for far more steps than
    the test lets it reach; stderr goes to a file. The tool's own --step-timeout (120 s) unless
    ``extra`` says otherwise: under load a healthy first step has taken over 10 s."""
    log_path = str(tmp_path / "train.err")
    with open(log_path, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "crnn_multigpu.cli.train", "--cluster",
                                 servers.cluster_file, "--train", tiny_dataset, "--out",
                                 str(tmp_path / "run"), "--model", "tiny", "--batch-size", "8",
                                 "--steps", "100000", "--log-every", "1", "--validate-every",
                                 "0"] + list(extra),
                                cwd=str(tmp_path), env=package_environment(), stdout=subprocess.PIPE,
                                stderr=err, preexec_fn=default_sigint)
    return proc, log_path


def error_lines(log_path):
    return [line for line in open(log_path).read().splitlines()
            if line.startswith("error: ") or "Traceback" in line]


@pytest.mark.slow
def test_a_worker_killed_mid_training_is_one_line_and_the_checkpoint_stays(local_cluster,
                                                                          tiny_dataset, tmp_path):
    from crnn_multigpu.runtime.checkpoints import latest_checkpoint
    # The kill is found by --step-timeout: long enough for a healthy first step under load
    # (over 10 s seen), short enough to keep the test near a minute (the final save waits as long).
    proc, log_path = cluster_training(local_cluster, tiny_dataset, tmp_path,
                                      "--checkpoint-every", "3", "--step-timeout", "25")
    try:
        with local_cluster.logs_on_failure():
            run_dir = str(tmp_path / "run")
            wait_until(lambda: first_checkpoint(run_dir) is not None, proc, log_path,
                       "a first checkpoint")
            local_cluster.processes["worker1"].kill()
            # A state, not a speed: the run ends (within --step-timeout and the final save's).
            assert proc.wait(timeout=HANG_GUARD) == 2, open(log_path).read()
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = error_lines(log_path)
    assert len(lines) == 1, open(log_path).read()
    worker1 = local_cluster.cluster["worker"][1]
    assert lines[0].startswith("error: /job:worker/task:1 at %s stopped answering" % worker1)
    assert "task:0" not in lines[0] and "--resume" in lines[0]
    newest = latest_checkpoint(str(tmp_path / "run"))
    assert newest is not None and "the newest checkpoint %s is kept" % newest in lines[0]


@pytest.mark.slow
def test_a_worker_port_that_is_not_tensorflow_is_one_line(tiny_dataset, tmp_path):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # accepts TCP (the kernel completes the handshake), never answers
    ports = free_ports(1)
    cluster = {"worker": ["127.0.0.1:%d" % ports[0],
                          "127.0.0.1:%d" % listener.getsockname()[1]]}
    servers = LocalServers(cluster, tmp_path, START_TIMEOUT, STOP_TIMEOUT)
    try:
        servers.start("worker", 0)
        servers.wait_until_serving()
        # A task that never answers is found by the timeout alone: 10 s keeps the test short.
        proc, log_path = cluster_training(servers, tiny_dataset, tmp_path, "--step-timeout", "10")
        try:
            assert proc.wait(timeout=HANG_GUARD) == 2, open(log_path).read()
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        servers.stop()
        listener.close()
    lines = error_lines(log_path)
    assert len(lines) == 1, open(log_path).read()
    assert lines[0].startswith("error: /job:worker/task:1 at %s stopped answering"
                               % cluster["worker"][1]), lines
    assert "no checkpoint was saved" in lines[0]


@pytest.mark.slow
def test_ctrl_c_twice_leaves_a_step_hung_on_a_stopped_worker(local_cluster, tiny_dataset,
                                                             tmp_path):
    """A worker that stops answering (SIGSTOP: alive, silent) holds the step until
    --step-timeout; the first Ctrl-C says so, the second leaves at once, checkpoint kept."""
    from crnn_multigpu.runtime.checkpoints import latest_checkpoint
    proc, log_path = cluster_training(local_cluster, tiny_dataset, tmp_path,
                                      "--checkpoint-every", "3", "--step-timeout", "86400")
    worker1 = local_cluster.processes["worker1"]
    run_dir = str(tmp_path / "run")
    try:
        with local_cluster.logs_on_failure():
            wait_until(lambda: first_checkpoint(run_dir) is not None, proc, log_path,
                       "a first checkpoint")
            worker1.send_signal(signal.SIGSTOP)
            proc.send_signal(signal.SIGINT)
            wait_until(lambda: "again (Ctrl-C) to leave at once" in open(log_path).read(),
                       proc, log_path, "the first Ctrl-C's answer")
            proc.send_signal(signal.SIGINT)
            # The step would wait a day: only the second Ctrl-C ends it before HANG_GUARD.
            assert proc.wait(timeout=HANG_GUARD) == 130, open(log_path).read()
    finally:
        worker1.send_signal(signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    text = open(log_path).read()
    assert "SIGINT again: leaving now without saving" in text and "--resume" in text, text
    assert "Traceback" not in text, text
    tf.train.load_checkpoint(latest_checkpoint(run_dir))  # the newest checkpoint still reads
    # Servers left holding the hung step still leave at once on SIGTERM, each with exit code 0.
    assert local_cluster.stop() == [0, 0, 0], local_cluster.logs()
