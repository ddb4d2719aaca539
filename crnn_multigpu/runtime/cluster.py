"""Run the towers on TensorFlow's own distributed runtime (gRPC servers).

One ``tf.train.Server`` per machine (``crnn-server``), one client process that
builds the whole graph (in-graph replication) and opens a session on the
chief's target. Towers go to the worker tasks, the single copy of the
variables to ``/job:ps/task:0`` when there is a ps job, else to worker 0's CPU.

A cluster is the dict ``tf.train.ClusterSpec`` takes::

    {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"], "ps": ["10.0.0.1:2223"]}

read from a JSON file or from the ``cluster`` key of ``TF_CONFIG``.
"""
import errno
import json
import os
import socket
import time

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper.devices import close_session, cluster_devices

CHIEF_JOB = "worker"


def _parse_address(address, where):
    if not isinstance(address, str) or address.count(":") < 1:
        raise ValueError("%s: address %r is not of the form host:port" % (where, address))
    host, _, port = address.rpartition(":")
    if not host:
        raise ValueError("%s: address %r has no host (expected host:port)" % (where, address))
    try:
        number = int(port)
    except ValueError:
        raise ValueError("%s: address %r has a port that is not an integer (expected host:port)"
                         % (where, address))
    if not 0 < number < 65536:
        raise ValueError("%s: address %r has port %d, outside 1..65535" % (where, address, number))
    return host, number


def validate_cluster(cluster, source="cluster"):
    """Check a cluster dict and return a clean copy ``{job: [address, ...]}``.

    ``source`` names where it came from (a file or an environment variable) in
    the error messages.
    """
    if not isinstance(cluster, dict):
        raise ValueError("%s: the cluster must be a JSON object like "
                         '{"worker": ["host:port", ...], "ps": ["host:port"]}, got %s'
                         % (source, type(cluster).__name__))
    clean, seen = {}, {}
    for job, addresses in cluster.items():
        if not isinstance(job, str) or not job or "/" in job or ":" in job:
            raise ValueError("%s: %r is not a usable job name" % (source, job))
        if isinstance(addresses, str) or not isinstance(addresses, list):
            raise ValueError("%s: job %r must list its task addresses, e.g. [\"host:2222\"], "
                             "got %r" % (source, job, addresses))
        if not addresses:
            raise ValueError("%s: job %r lists no task address" % (source, job))
        for index, address in enumerate(addresses):
            _parse_address(address, "%s, /job:%s/task:%d" % (source, job, index))
            if address in seen:
                raise ValueError("%s: address %s is given to both %s and /job:%s/task:%d"
                                 % (source, address, seen[address], job, index))
            seen[address] = "/job:%s/task:%d" % (job, index)
        clean[job] = list(addresses)
    if CHIEF_JOB not in clean:
        raise ValueError("%s: the cluster has no %r job (jobs: %s); at least one worker is needed"
                         % (source, CHIEF_JOB, ", ".join(sorted(clean)) or "none"))
    return clean


def _read_env(env_var):
    text = os.environ.get(env_var)
    if text is None or not text.strip():
        return None
    try:
        config = json.loads(text)
    except ValueError as error:
        raise ValueError("environment variable %s is not valid JSON: %s" % (env_var, error))
    if not isinstance(config, dict):
        raise ValueError("environment variable %s must hold a JSON object with a \"cluster\" key"
                         % env_var)
    return config


def load_cluster(path=None, env_var="TF_CONFIG"):
    """Read a cluster dict from the JSON file ``path``, or else from ``$env_var``.

    The file holds ``{"worker": [...], "ps": [...]}`` (a TF_CONFIG-style
    ``{"cluster": {...}}`` is accepted too); the environment variable holds
    TF_CONFIG JSON, ``{"cluster": {...}, "task": {"type": ..., "index": ...}}``.
    Raises ``ValueError`` naming the file or variable and what is wrong.
    """
    if path is not None:
        source = "cluster file %r" % str(path)
        try:
            with open(path) as handle:
                text = handle.read()
        except (IOError, OSError) as error:
            raise ValueError("%s cannot be read: %s" % (source, error.strerror or error))
        try:
            cluster = json.loads(text)
        except ValueError as error:
            raise ValueError("%s is not valid JSON: %s" % (source, error))
        if isinstance(cluster, dict) and isinstance(cluster.get("cluster"), dict):
            cluster = cluster["cluster"]
        return validate_cluster(cluster, source)
    config = _read_env(env_var)
    if config is None:
        raise ValueError("no cluster given: pass a cluster JSON file or set the environment "
                         "variable %s" % env_var)
    if "cluster" not in config:
        raise ValueError("environment variable %s has no \"cluster\" key" % env_var)
    return validate_cluster(config["cluster"], "environment variable %s" % env_var)


def task_from_env(env_var="TF_CONFIG"):
    """``(job, index)`` from the ``task`` key of ``$env_var``; None when it has none."""
    config = _read_env(env_var)
    if config is None or config.get("task") is None:
        return None
    task = config["task"]
    if not isinstance(task, dict) or not isinstance(task.get("type"), str):
        raise ValueError("environment variable %s: \"task\" must be like "
                         "{\"type\": \"worker\", \"index\": 0}, got %r" % (env_var, task))
    index = task.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError("environment variable %s: task index must be a non-negative integer, "
                         "got %r" % (env_var, index))
    return task["type"], index


def _as_dict(cluster):
    return cluster.as_dict() if isinstance(cluster, tf.train.ClusterSpec) else dict(cluster)


def check_task(cluster, job, task):
    """Raise ``ValueError`` unless ``/job:<job>/task:<task>`` is in the cluster."""
    cluster = _as_dict(cluster)
    if job not in cluster:
        raise ValueError("the cluster has no job %r (jobs: %s)" % (job, ", ".join(sorted(cluster))))
    if isinstance(task, bool) or not isinstance(task, int) or not 0 <= task < len(cluster[job]):
        raise ValueError("job %r has tasks 0..%d, not %r" % (job, len(cluster[job]) - 1, task))
    return cluster[job][task]


class PortInUse(OSError):
    """A task's port is held by another program, so its server cannot listen there."""


def _refuse_taken_port(job, task, address):
    """Raise PortInUse when the port of ``address`` (``/job:<job>/task:<task>``'s) cannot be
    listened on. gRPC would log its failure to stderr from C++ and TensorFlow raise a bare
    "Could not start gRPC server": this says which port, before either starts."""
    _, port = _parse_address(address, "/job:%s/task:%d" % (job, task))
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Bound as the gRPC server binds, every interface with SO_REUSEADDR: a port a stopped server
    # left in TIME_WAIT is free for it, one another program listens on is not.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("", port))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            return  # not a taken port (e.g. a privileged one): TensorFlow says what it is
        raise PortInUse("cannot serve /job:%s/task:%d at %s: port %d is already in use by "
                        "another program (another crnn-server?); choose another port for this "
                        "task in the cluster file (or $TF_CONFIG), or stop what holds it"
                        % (job, task, address, port))
    finally:
        probe.close()


def start_server(cluster, job, task, config):
    """Start this process's ``tf.train.Server`` (gRPC) for ``/job:<job>/task:<task>`` with the
    ``ConfigProto`` ``config`` (crnn-server's: its cluster placement's); PortInUse when its port
    is taken."""
    address = check_task(cluster, job, task)
    _refuse_taken_port(job, task, address)
    spec = cluster if isinstance(cluster, tf.train.ClusterSpec) else tf.train.ClusterSpec(cluster)
    try:
        return tf.train.Server(spec, job_name=job, task_index=task, protocol="grpc",
                               config=config, start=True)
    except tf.errors.OpError:
        _refuse_taken_port(job, task, address)  # taken since the check: say so
        raise


def cluster_towers(cluster, gpus_per_task=0):
    """``(tower devices, variable device)`` for in-graph replication over a cluster.

    One tower per GPU of every worker task (its CPU when ``gpus_per_task`` is 0);
    variables on ``/job:ps/task:0/cpu:0`` if there is a ps job, else on worker 0's CPU.
    """
    cluster = _as_dict(cluster)
    towers = cluster_devices(cluster, job=CHIEF_JOB, gpus_per_task=gpus_per_task)
    variable_job = "ps" if cluster.get("ps") else CHIEF_JOB
    return towers, "/job:%s/task:0/cpu:0" % variable_job


def wait_for_tasks(cluster, timeout, poll_seconds=0.5, log=None):
    """Wait until every task of ``cluster`` accepts TCP connections, at most ``timeout`` s.

    TensorFlow's own session creation waits for an absent worker forever, inside
    C++ where Ctrl-C does not reach; this check runs in Python first, so an
    unreachable task is an error naming it, and Ctrl-C stops the wait.
    ``log`` (optional callable) hears once which tasks are still awaited.
    Raises ``ConnectionError`` listing the tasks that never answered.
    """
    cluster = _as_dict(cluster)
    waiting = [("/job:%s/task:%d" % (job, index), address)
               for job in sorted(cluster) for index, address in enumerate(cluster[job])]
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        waiting = [(task, address) for task, address in waiting if not _accepts(address)]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise ConnectionError(
                "cannot reach %s within %g s: is crnn-server running there? "
                "(--connect-timeout sets how long to wait)"
                % (", ".join("%s at %s" % pair for pair in waiting), timeout))
        if log is not None and not announced:
            log("waiting up to %g s for %s" % (timeout, ", ".join(t for t, _ in waiting)))
            announced = True
        time.sleep(min(poll_seconds, max(0.0, deadline - time.monotonic())))


class ClusterFailure(RuntimeError):
    """A task of the cluster stopped answering during training: one line for the user."""
    user_facing = True


def silent_tasks(cluster, timeout=5.0):
    """``[(task, address)]`` of the tasks of ``cluster`` that do not run a trivial op on
    themselves within ``timeout`` seconds: killed, hung, or a port that is not TensorFlow."""
    silent = []
    for job in sorted(_as_dict(cluster)):
        for index, address in enumerate(_as_dict(cluster)[job]):
            task = "/job:%s/task:%d" % (job, index)
            graph = tf.Graph()
            with graph.as_default(), tf.device(task + "/cpu:0"):
                probe = tf.constant(1) + 1
            # Device filters: the task's own master would otherwise look for every task.
            config = tf.ConfigProto(operation_timeout_in_ms=int(timeout * 1000),
                                    device_filters=[task])
            session = tf.Session("grpc://" + address, graph=graph, config=config)
            try:
                session.run(probe)
            except tf.errors.OpError:
                silent.append((task, address))
            finally:
                close_session(session, timeout)
    return silent


def _accepts(address):
    host, port = _parse_address(address, "address")
    try:
        socket.create_connection((host, port), timeout=2.0).close()
        return True
    except (OSError, socket.timeout):
        return False


def chief_target(cluster):
    """The session target of the chief (worker 0): ``grpc://host:port``."""
    return "grpc://" + check_task(cluster, CHIEF_JOB, 0)


def is_chief(job, task):
    """True for the task that writes checkpoints and summaries (worker 0)."""
    return job == CHIEF_JOB and int(task) == 0


def free_ports(n):
    """``n`` distinct TCP ports on 127.0.0.1 that were free a moment ago."""
    sockets = []
    try:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
