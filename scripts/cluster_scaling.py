"""Predict, then measure, the step time of a gRPC cluster on loopback: the transfer model on
a machine we have.

A parameter server and up to three workers run as ``crnn-server`` processes on 127.0.0.1
(``crnn_multigpu.runtime.cluster``: TensorFlow's own gRPC runtime); this process is the
client and builds ``MultiGpuModel`` with one tower per worker task. The model is
communication-heavy on purpose: one dense layer of ``--rows`` x ``--cols`` float32 weights
(33.6 MB by default) and a small batch, so a step is mostly the weights crossing to each
tower and the gradients crossing back.

The prediction uses only what this script measures on this machine before or beside the steps:

- the link: a tensor read across two server processes of the same runtime, at two sizes and
  in both directions, a few times in every round of steps. Per direction, the bandwidth of one flow is the slope between the sizes
  and the CPU time per byte (all of the run's processes, from /proc) the slope of their CPU
  seconds; the latency is what the small read across costs beyond the same read within a task;
- the compute of one worker alone: the step of "1 worker, variables on it", which crosses no
  process boundary (this row is the calibration, not a prediction), in wall and CPU seconds;
- the bytes each configuration moves per step, counted from its graph
  (``scripts/transfers.py``), from the variables' task to the towers and back.

All processes share this machine's cores, and the variables' task serves its remote towers one
flow after another (measured: every worker added on the ps adds a whole transfer of the weights
and their gradient to the step, not a share of one). So the step is the longer of the path
through that hub and all the step's CPU work spread over the cores::

    path = compute + latency + all bytes down / down bandwidth + all bytes up / up bandwidth
    work = towers x compute CPU + bytes down x CPU per byte down + bytes up x CPU per byte up
    step = max(path, work / cores)

(the reads come before the forward pass and the gradients after the backward pass, so the two
directions add). The perfect-scaling baseline says N towers step as fast as one
(the measured 1-worker step of the same placement). The table gives the measured step (median
of interleaved rounds), both predictions and their errors, the CPU the step used, and how busy
the machine was meanwhile. Usage::

    .venv/bin/python scripts/cluster_scaling.py                   # 75-82 s on the idle 2-core machine
    .venv/bin/python scripts/cluster_scaling.py --workers 2 --rows 64 --cols 64 --rounds 1
"""
import argparse
import collections
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import transfers  # noqa: E402  (beside this script)
from crnn_multigpu.compat import tf  # noqa: E402
from crnn_multigpu.runtime.cluster import chief_target  # noqa: E402
from crnn_multigpu.runtime.local_servers import LocalServers, loopback_cluster  # noqa: E402
from crnn_multigpu.wrapper.devices import close_session, session_config  # noqa: E402
from crnn_multigpu.wrapper.towers import MultiGpuModel  # noqa: E402
from cpu_accounting import cpu_window, load_average, others_share, read_proc_stat  # noqa: E402

TOLERANCE = 0.15
START_TIMEOUT = 600  # seconds for a server to import TensorFlow and listen (a busy machine)
SMALL_BYTES = 4
LINK_READS = 3  # reads of each kind per round

# hub: the job whose task 0 holds the variables.
Configuration = collections.namedtuple("Configuration", "name workers hub")
CALIBRATION = Configuration("1 worker, variables on it", 1, "worker")


def configurations(max_workers):
    """The placements measured: the variables on the ps task, or on worker 0."""
    return ([Configuration("ps + %d worker%s" % (n, "s" * (n > 1)), n, "ps")
             for n in range(1, max_workers + 1)]
            + [CALIBRATION]
            + [Configuration("%d workers, variables on worker 0" % n, n, "worker")
               for n in range(2, max_workers + 1)])


def dense_model(rows, cols):
    """A tower model class: ``x [B, rows] @ w [rows, cols]`` against ``y``, least squares.

    Its only large variable is ``w``; the step computes 2 B rows cols multiply-adds forward
    and as many for ``w``'s gradient (``x`` is fed, so no input gradient), so with a small B
    a step is mostly moving ``w`` and its gradient.
    """
    class Dense(object):
        def __init__(self):
            self.x = tf.placeholder(tf.float32, [None, rows], name="x")
            self.y = tf.placeholder(tf.float32, [None, cols], name="y")
            w = tf.get_variable("w", [rows, cols], tf.float32,
                                initializer=tf.random_normal_initializer(stddev=rows ** -0.5))
            residual = tf.matmul(self.x, w) - self.y
            self.loss = tf.reduce_mean(tf.reduce_sum(tf.square(residual), axis=1))
            self.batch_size = tf.shape(self.x)[0]

        def feed_dict(self, batch):
            return {self.x: batch["x"], self.y: batch["y"]}
    return Dense


def task_devices(configuration):
    """``(tower devices, variable device)`` of a configuration."""
    towers = ["/job:worker/task:%d/cpu:0" % i for i in range(configuration.workers)]
    return towers, "/job:%s/task:0/cpu:0" % configuration.hub


def build(configuration, model_cls):
    """The training graph of a configuration in the current graph; returns the wrapper."""
    towers, variables = task_devices(configuration)
    return MultiGpuModel(model_cls, devices=towers, variable_device=variables,
                         optimizer=tf.train.GradientDescentOptimizer(1e-3))


def _task(device):
    spec = tf.DeviceSpec.from_string(device)
    return "/job:%s/task:%d" % (spec.job, spec.task)


def hub_bytes(wrapper, hub_task):
    """``(bytes from the hub task to other tasks, bytes from other tasks to it)`` of one step,
    counted from the graph (transfers between devices of one task cost no link)."""
    down = up = 0
    for transfer in transfers.cross_device_transfers(wrapper.objective):
        source, destination = _task(transfer.source), _task(transfer.destination)
        if source == destination:
            continue
        if transfer.nbytes is None:
            raise ValueError("%s crosses tasks with no static size" % transfer.tensor)
        if source == hub_task:
            down += transfer.nbytes
        elif destination == hub_task:
            up += transfer.nbytes
        else:
            raise ValueError("%s crosses between two tasks that do not hold the variables"
                             % transfer.tensor)
    return down, up


# latency in seconds (paid once by a step that crosses tasks: the tasks' partitions run at
# once); down, up: one flow's bytes per second from the variables' task and back to it;
# cpu_down, cpu_up: CPU seconds per byte, all processes together.
Links = collections.namedtuple("Links", "latency down up cpu_down cpu_up")


def fit_links(seconds, cpu, small_bytes, large_bytes):
    """Links from the timed reads: ``seconds[(direction, size)]`` median wall seconds and
    ``cpu[(direction, size)]`` CPU seconds per read, directions 'down', 'up' and 'local'
    (within one task), sizes 'small' and 'large'."""
    extra = float(large_bytes - small_bytes)

    def slope(table, direction):
        return (table[(direction, "large")] - table[(direction, "small")]) / extra
    latency = max(0.0, seconds[("down", "small")] - seconds[("local", "small")])
    return Links(latency, 1 / slope(seconds, "down"), 1 / slope(seconds, "up"),
                 slope(cpu, "down"), slope(cpu, "up"))


Prediction = collections.namedtuple("Prediction", "step path work")


def predict_step(compute, compute_cpu, links, down_bytes, up_bytes, towers, remote, cores):
    """The model for one configuration: ``towers`` towers, ``remote`` of them in another task
    than the variables, moving ``down_bytes`` to and ``up_bytes`` from the variables' task (all
    of them through that task, one flow after another)."""
    path = compute
    if remote:
        path += links.latency + down_bytes / links.down + up_bytes / links.up
    work = towers * compute_cpu + down_bytes * links.cpu_down + up_bytes * links.cpu_up
    return Prediction(max(path, work / cores), path, work)


# -- the cluster ------------------------------------------------------------------------

def cpu_seconds_of(pids):
    """CPU seconds (user + system) the processes ``pids`` have used so far, from /proc."""
    ticks = float(os.sysconf("SC_CLK_TCK"))
    total = 0.0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as stream:
                fields = stream.read().rsplit(")", 1)[1].split()
        except (IOError, OSError):
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def snapshot(pids):
    """The machine's busy/total ticks and the CPU seconds of ``pids`` (this run's processes),
    in the form ``cpu_accounting.cpu_window`` takes."""
    return read_proc_stat(), cpu_seconds_of(pids)


# -- measuring --------------------------------------------------------------------------

class LinkProbe(object):
    """Timed reads across a ps <-> worker 0 link, both directions at two sizes, and the small
    one within a task; run a few in every round so that they see the machine the steps see.
    ``pids``: the processes whose CPU time counts (this one and the servers)."""

    def __init__(self, target, large_bytes, pids):
        self.large_bytes, self.pids = large_bytes, pids
        sizes = {"small": SMALL_BYTES, "large": large_bytes}
        ends = {"down": ("/job:ps/task:0/cpu:0", "/job:worker/task:0/cpu:0"),
                "up": ("/job:worker/task:0/cpu:0", "/job:ps/task:0/cpu:0"),
                "local": ("/job:worker/task:0/cpu:0", "/job:worker/task:0/cpu:0")}
        graph = tf.Graph()
        self.fetches = {}
        with graph.as_default():
            for direction, (source, destination) in ends.items():
                for size, nbytes in sizes.items():
                    if direction == "local" and size == "large":
                        continue
                    with tf.device(source):
                        value = tf.get_variable("%s_%s" % (direction, size), [nbytes // 4],
                                                tf.float32, initializer=tf.ones_initializer())
                        value = value.read_value()
                    with tf.device(destination):  # the whole tensor crosses, one number back
                        self.fetches[(direction, size)] = value[0] + 1.0
            init = tf.global_variables_initializer()
        self.session = tf.Session(target, graph=graph, config=session_config(1))
        self.session.run(init)
        for fetch in self.fetches.values():  # the first run of each registers its graph
            self.session.run(fetch)
        self.seconds = collections.defaultdict(list)
        self.cpu = collections.Counter()

    def run(self, repeats):
        """Time ``repeats`` reads of each kind."""
        for key, fetch in sorted(self.fetches.items()):
            cpu = cpu_seconds_of(self.pids)
            for _ in range(repeats):
                start = time.perf_counter()
                self.session.run(fetch)
                self.seconds[key].append(time.perf_counter() - start)
            self.cpu[key] += cpu_seconds_of(self.pids) - cpu

    def links(self):
        """Links from the median time and the mean CPU time of each kind of read so far."""
        return fit_links({k: float(np.median(v)) for k, v in self.seconds.items()},
                         {k: self.cpu[k] / len(v) for k, v in self.seconds.items()},
                         SMALL_BYTES, self.large_bytes)

    def close(self):
        close_session(self.session)


def batch_of(configuration, batch, rows, cols, seed=0):
    rng = np.random.RandomState(seed)
    n = batch * configuration.workers
    return {"x": rng.randn(n, rows).astype(np.float32),
            "y": rng.randn(n, cols).astype(np.float32)}


Prepared = collections.namedtuple("Prepared", "configuration session wrapper feed down up")


def prepare(configuration, target, model_cls, batch, rows, cols):
    """Build a configuration's graph under a scope of its own (variables in a server outlive
    a session and are shared by name), open its session, initialise, count its bytes."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.variable_scope("%s_%d" % (configuration.hub, configuration.workers)):
            wrapper = build(configuration, model_cls)
        init = tf.global_variables_initializer()
    down, up = hub_bytes(wrapper, "/job:%s/task:0" % configuration.hub)
    session = tf.Session(target, graph=graph, config=session_config(1))
    session.run(init)
    session.run(wrapper.post_init_op)
    feed = wrapper.feed_dict(wrapper.split(batch_of(configuration, batch, rows, cols)))
    for _ in range(3):  # the first steps register and partition the graph on every task
        session.run(wrapper.objective, feed)
    return Prepared(configuration, session, wrapper, feed, down, up)


def time_steps(prepared, steps, pids):
    """``(wall seconds of each step, CPU seconds of pids over them)``."""
    times, cpu = [], cpu_seconds_of(pids)
    for _ in range(steps):
        start = time.perf_counter()
        prepared.session.run(prepared.wrapper.objective, prepared.feed)
        times.append(time.perf_counter() - start)
    return times, cpu_seconds_of(pids) - cpu


Row = collections.namedtuple("Row", "configuration measured cpu predicted baseline down up")


def remote_towers(configuration):
    """Towers in another task than the variables."""
    return configuration.workers - (configuration.hub == "worker")


def table_rows(measured, cpu, counted, links, cores):
    """One Row per configuration from the measured median steps ``{configuration: seconds}``,
    their CPU seconds per step and the counted ``{configuration: (down bytes, up bytes)}``.
    The calibration row gives the compute; the baseline of each row is the measured 1-worker
    step of its placement."""
    one_worker = {c.hub: seconds for c, seconds in measured.items() if c.workers == 1}
    return [Row(c, seconds, cpu[c],
                predict_step(measured[CALIBRATION], cpu[CALIBRATION], links, counted[c][0],
                             counted[c][1], c.workers, remote_towers(c), cores),
                one_worker[c.hub], counted[c][0], counted[c][1])
            for c, seconds in measured.items()]


def error(predicted, measured):
    """Relative error of a predicted step time."""
    return predicted / measured - 1


def print_table(rows, links, cores, window, loads):
    """The table, the within-15 % counts and how busy the machine was."""
    print("link: one flow ps -> worker %.2f GB/s (%.2f CPU s per GB), worker -> ps %.2f GB/s "
          "(%.2f CPU s per GB), latency %.2f ms; %d cores" % (
              links.down / 1e9, 1e9 * links.cpu_down, links.up / 1e9, 1e9 * links.cpu_up,
              1e3 * links.latency, cores))
    print("%-33s %6s %6s %8s %5s %8s %7s %5s %8s %7s" % (
        "configuration", "MB dn", "MB up", "measured", "cores", "model", "error", "bound",
        "perfect", "error"))
    for row in rows:
        step = row.predicted
        note = ("  (calibration: the compute)" if row.configuration == CALIBRATION else
                "  (the baseline's own)" if row.configuration.workers == 1 else "")
        print("%-33s %6.1f %6.1f %6.1fms %5.2f %6.1fms %+6.1f%% %5s %6.1fms %+6.1f%%%s" % (
            row.configuration.name, row.down / 1e6, row.up / 1e6, 1e3 * row.measured,
            row.cpu / row.measured, 1e3 * step.step, 100 * error(step.step, row.measured),
            "path" if step.path >= step.work / cores else "cores", 1e3 * row.baseline,
            100 * error(row.baseline, row.measured), note))
    scaled = [r for r in rows if r.configuration.workers > 1]
    predicted = [r for r in rows if r.configuration != CALIBRATION]

    def hits(selected, baseline=False):
        return sum(abs(error(r.baseline if baseline else r.predicted.step, r.measured))
                   <= TOLERANCE for r in selected)
    print("within %d %%: of the %d rows with more than one worker, model %d, perfect scaling %d;"
          " of the %d rows the model predicts, model %d" % (
              100 * TOLERANCE, len(scaled), hits(scaled), hits(scaled, baseline=True),
              len(predicted), hits(predicted)))
    share = others_share(window)
    print("machine: other processes used %s of all CPU time while this ran (this run: %s); "
          "load average before %s, after %s" % (
              "?" if share is None else "%.1f %%" % (100 * share),
              "?" if not window else "%.0f %%" % (100 * window["own"] / window["total"]),
              _load(loads[0]), _load(loads[1])))


def _load(load):
    return "?" if load is None else "%.2f" % load[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=3, help="largest worker count (>= 2)")
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=16, help="examples per worker")
    parser.add_argument("--rounds", type=int, default=8, help="interleaved rounds")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    args = parser.parse_args(argv)
    if args.workers < 2:
        parser.error("--workers must be at least 2")
    model_cls = dense_model(args.rows, args.cols)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    loads = [load_average()]
    with tempfile.TemporaryDirectory() as directory, \
            LocalServers(loopback_cluster(args.workers), directory, START_TIMEOUT) as cluster:
        target = chief_target(cluster.cluster)
        pids = [os.getpid()] + cluster.pids()
        print("cluster on loopback: %s; w is %d x %d float32 (%.1f MB), %d examples per worker"
              % (", ".join("%s x %d" % (j, len(a)) for j, a in sorted(cluster.cluster.items())),
                 args.rows, args.cols, 4e-6 * args.rows * args.cols, args.batch), flush=True)
        before = snapshot(pids)
        probe = LinkProbe(target, 4 * args.rows * args.cols, pids)
        prepared = [prepare(c, target, model_cls, args.batch, args.rows, args.cols)
                    for c in configurations(args.workers)]
        times = collections.OrderedDict((p.configuration, []) for p in prepared)
        cpu = collections.Counter()
        for round_index in range(args.rounds):
            probe.run(LINK_READS)
            # Each round starts one configuration later, so slow phases of the machine fall
            # on every configuration alike.
            shift = round_index % len(prepared)
            for item in prepared[shift:] + prepared[:shift]:
                wall, used = time_steps(item, args.steps, pids)
                times[item.configuration] += wall
                cpu[item.configuration] += used
        after = snapshot(pids)
        links = probe.links()
        probe.close()
        for item in prepared:
            close_session(item.session)
    loads.append(load_average())
    measured = collections.OrderedDict((c, float(np.median(v))) for c, v in times.items())
    per_step = {c: cpu[c] / len(v) for c, v in times.items()}
    counted = {p.configuration: (p.down, p.up) for p in prepared}
    print_table(table_rows(measured, per_step, counted, links, cores), links, cores,
                cpu_window(before, after), loads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
