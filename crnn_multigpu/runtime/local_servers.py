"""The servers of one cluster as ``crnn-server`` processes on this machine (loopback).

For trying a cluster set-up before spreading it over machines, for the cluster tests and for the
loopback scaling measurement. Each task writes its output to ``<directory>/<job><task>.log``; it
has started once it prints ``serving /job:`` (a state, never a duration); stopping sends SIGTERM,
and a server that does not leave on it is killed.
"""
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import time

from crnn_multigpu.runtime.cluster import free_ports

SERVING = "serving /job:"
# The directory holding the crnn_multigpu package: servers import the same copy as their launcher.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def loopback_cluster(workers, ps=1):
    """A cluster of ``workers`` worker tasks and ``ps`` ps tasks on fresh 127.0.0.1 ports."""
    ports = free_ports(workers + ps)
    cluster = {"worker": ["127.0.0.1:%d" % port for port in ports[:workers]]}
    if ps:
        cluster["ps"] = ["127.0.0.1:%d" % port for port in ports[workers:]]
    return cluster


def package_environment():
    """This process's environment for a child running this package's tools: the same copy of
    the package first on PYTHONPATH, and no TF_CONFIG (a cluster file names the task)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [PACKAGE_ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.pop("TF_CONFIG", None)
    return env


class ServerFailed(RuntimeError):
    """A server exited, or did not serve in time, before its cluster was up."""


class LocalServers(object):
    """``crnn-server`` processes for the tasks of ``cluster`` (``{job: [host:port]}``).

    ``with LocalServers(cluster, directory) as servers:`` starts every task and waits until all
    serve; or call ``start`` for chosen tasks and ``wait_until_serving``. ``processes`` maps
    ``"worker1"`` etc. to the ``Popen``; ``cluster_file`` is the cluster as JSON.
    """

    def __init__(self, cluster, directory, start_timeout=600, stop_timeout=60):
        self.cluster, self.directory = cluster, str(directory)
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        os.makedirs(self.directory, exist_ok=True)
        self.cluster_file = os.path.join(self.directory, "cluster.json")
        with open(self.cluster_file, "w") as stream:
            json.dump(cluster, stream)
        self.processes = collections.OrderedDict()

    def log_path(self, name):
        """The file holding the output of task ``name`` ("ps0", "worker1")."""
        return os.path.join(self.directory, name + ".log")

    def start(self, job, task):
        """Start the server of ``/job:<job>/task:<task>`` (does not wait for it)."""
        name = "%s%d" % (job, task)
        with open(self.log_path(name), "wb") as log:
            self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "crnn_multigpu.cli.server", "--cluster", self.cluster_file,
                 "--job", job, "--task", str(task)],
                cwd=self.directory, env=package_environment(), stdout=log,
                stderr=subprocess.STDOUT)

    def start_all(self):
        """Start every task of the cluster, jobs in name order."""
        for job in sorted(self.cluster):
            for task in range(len(self.cluster[job])):
                self.start(job, task)

    def wait_until_serving(self):
        """Return once every started server serves; ``ServerFailed`` (with the logs) if one
        exits first or ``start_timeout`` seconds pass."""
        deadline = time.time() + self.start_timeout
        for name, process in self.processes.items():
            while SERVING not in self.output(name):
                if process.poll() is not None:
                    raise ServerFailed("server %s exited with %s before serving\n%s"
                                       % (name, process.returncode, self.logs()))
                if time.time() > deadline:
                    raise ServerFailed("server %s was not serving after %d s\n%s"
                                       % (name, self.start_timeout, self.logs()))
                time.sleep(0.1)

    def output(self, name):
        """What task ``name`` has written so far."""
        path = self.log_path(name)
        if not os.path.exists(path):
            return ""
        with open(path, errors="replace") as log:
            return log.read()

    def logs(self, tail=4000):
        """The end of every server's output, each under a header with its exit code."""
        return "\n".join("---- %s (exit %s) ----\n%s" % (name, process.poll(),
                                                       self.output(name)[-tail:])
                         for name, process in self.processes.items())

    @contextlib.contextmanager
    def logs_on_failure(self):
        """Print the servers' logs if the block raises (then re-raise)."""
        try:
            yield
        except BaseException:
            print(self.logs())
            raise

    def pids(self):
        """The servers' process ids, in start order."""
        return [process.pid for process in self.processes.values()]

    def stop(self):
        """SIGTERM every server and return their exit codes in start order; a server still
        running ``stop_timeout`` seconds later is killed. Safe to call again."""
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        codes = []
        for process in self.processes.values():
            try:
                codes.append(process.wait(timeout=self.stop_timeout))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        return codes

    def __enter__(self):
        try:
            self.start_all()
            self.wait_until_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info):
        self.stop()
