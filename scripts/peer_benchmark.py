"""The CRNN in this package beside a PyTorch twin: training and inference images/s, one table.

Every configuration trains the same model (the ``small`` CRNN, i.e. ``CRNN()``'s defaults) on the
same synthetic batches (global batch 32, 32x100 grey images, random labels of 1-10 characters,
Adam 1e-3, CTC loss) and then runs inference at batch 64 (per-frame argmax of the
log-probabilities, the greedy path). Each run is a subprocess of its own, so thread pools,
warm-up and allocator state belong to that run only; repetitions are interleaved (A B C D,
B C D A, ...) so that machine noise falls on every configuration alike.

Configurations: ``tf2_1`` and ``tf2_2`` (MultiGpuModel with 1 tower, and with 2 towers on 2
virtual CPU devices, TF 2.x from ``.venv``), ``tf1_1`` and ``tf1_2`` (the same on TF 1.15 from
``.venv-tf1``; 2 towers is ``make train``'s setting on either stack), ``tf1_1x`` (TF 1.15, one
tower compiled by XLA: ``crnn-train --xla``, which pays on TF 1.15's CPU kernels),
``torch`` (``scripts/torch_twin.py``, PyTorch from ``.venv-torch``; never a package dependency).
Every process gets the same thread budget (``--threads``, default 2).

The table gives min / median / max images/s over the repetitions, the median of the
per-repetition ratios ours / PyTorch (above 1: ours is faster), and how idle the machine was:
the share of all CPU time that other processes used during the timed steps (``/proc/stat``
minus the run's own CPU time) and the load average before and after. Figures are only valid
from an idle machine; the table says when it was not. Usage::

    make benchmark-peers                                   # creates .venv-torch, full run
    .venv/bin/python scripts/peer_benchmark.py --quick     # 1 repetition of a few steps
    .venv/bin/python scripts/peer_benchmark.py --reps 5 --json peers.json

This file is also the TensorFlow worker (``--worker tf``, run by the interpreter of each TF
venv) and holds the timing and CPU-accounting helpers that ``torch_twin.py`` imports; it
imports TensorFlow only inside the worker, so the parent process stays light.
"""
import argparse
import collections
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from reports import write_json  # scripts/ is on sys.path when run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
RESULT_PREFIX = "PEER_RESULT "
IDLE_LIMIT = 0.05  # other processes above 5 % of the machine's CPU time: not an idle machine
MAX_LABEL = 10

Config = collections.namedtuple("Config", "name stack towers label xla")
Config.__new__.__defaults__ = (False,)
CONFIGS = collections.OrderedDict((c.name, c) for c in [
    Config("tf2_1", "tf2", 1, "TF 2.x, 1 tower"),
    Config("tf2_2", "tf2", 2, "TF 2.x, 2 virtual-CPU towers"),
    Config("tf1_1", "tf1", 1, "TF 1.15, 1 tower"),
    Config("tf1_2", "tf1", 2, "TF 1.15, 2 virtual-CPU towers"),
    Config("tf1_1x", "tf1", 1, "TF 1.15, 1 tower, XLA", xla=True),
    Config("torch", "torch", 1, "PyTorch twin"),
])
PEER = "torch"


# ---------------------------------------------------------------- CPU accounting (all processes)

def read_proc_stat(path="/proc/stat"):
    """(busy, total) clock ticks of the whole machine since boot, or None off Linux.

    Busy is everything but idle and iowait; steal (time a hypervisor gave to other guests)
    counts as busy, because this machine could not use it either.
    """
    try:
        with open(path) as stream:
            fields = stream.readline().split()
    except (IOError, OSError):
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    ticks += [0] * (8 - len(ticks))
    total = sum(ticks)
    return total - ticks[3] - ticks[4], total


def own_cpu_seconds(children=False):
    """CPU seconds this process (all its threads) has used so far; with ``children``, also
    its finished subprocesses."""
    import resource
    usage = [resource.getrusage(resource.RUSAGE_SELF)]
    if children:
        usage.append(resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


def cpu_snapshot(children=False):
    return read_proc_stat(), own_cpu_seconds(children)


def cpu_window(before, after, ticks_per_second=None):
    """What the machine did between two snapshots, in CPU seconds.

    Returns {"total", "busy", "own"} (summable over windows) or None when /proc/stat is not
    readable. "total" is wall time times the number of CPUs.
    """
    if before[0] is None or after[0] is None:
        return None
    hz = float(ticks_per_second or os.sysconf("SC_CLK_TCK"))
    return {"busy": (after[0][0] - before[0][0]) / hz, "total": (after[0][1] - before[0][1]) / hz,
            "own": after[1] - before[1]}


def add_windows(windows):
    windows = [w for w in windows if w]
    if not windows:
        return None
    return dict((k, sum(w[k] for w in windows)) for k in ("busy", "total", "own"))


def others_share(window):
    """The share of all CPU time used by other processes in ``window`` (0..1), or None.

    Tick counts are coarse (1/100 s) and rusage is exact, so the difference is clipped at 0.
    """
    if not window or window["total"] <= 0:
        return None
    return min(1.0, max(0.0, (window["busy"] - window["own"]) / window["total"]))


def own_share(window):
    if not window or window["total"] <= 0:
        return None
    return min(1.0, window["own"] / window["total"])


def idle_verdict(share, limit=IDLE_LIMIT):
    """One line: whether other processes' ``share`` of all CPU time (None: unknown) leaves
    figures measured meanwhile valid."""
    if share is None:
        return "IDLE UNKNOWN: /proc/stat not readable; measure on a machine known to be idle"
    if share > limit:
        return ("NOT IDLE: other processes used more than %.0f %% of the CPU time; these "
                "figures are not valid results (re-run on an idle machine)" % (100 * limit))
    return "idle: other processes stayed under %.0f %% of the CPU time" % (100 * limit)


def load_average():
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


# ---------------------------------------------------------------- timing, data, results (workers)

def timed(step, images_per_step, min_steps, min_seconds):
    """Run ``step`` at least ``min_steps`` times and for at least ``min_seconds``.

    Returns (images/s, steps, CPU window of the timed steps).
    """
    before, started, done = cpu_snapshot(), time.perf_counter(), 0
    while done < min_steps or time.perf_counter() - started < min_seconds:
        step(done)
        done += 1
    elapsed = time.perf_counter() - started
    return images_per_step * done / elapsed, done, cpu_window(before, cpu_snapshot())


def make_data(path, num_chars, batch_size, batches, infer_batch, seed, height=32, width=100):
    """Write the synthetic batches every configuration trains on (one .npz, a fixed seed).

    Images are uniform noise in [0, 1] (a step's time does not depend on the pixels); labels
    are ``num_chars``-ary ids, 1-10 of them, zero beyond the length (25 frames fit any label
    of 10 with blanks between repeats, so no example is infeasible for CTC).
    """
    rng = np.random.RandomState(seed)
    lengths = rng.randint(1, MAX_LABEL + 1, size=(batches, batch_size)).astype(np.int32)
    labels = rng.randint(0, num_chars, size=(batches, batch_size, MAX_LABEL)).astype(np.int32)
    labels[np.arange(MAX_LABEL)[None, None, :] >= lengths[:, :, None]] = 0
    np.savez(path,
             train_images=rng.rand(batches, batch_size, height, width).astype(np.float32),
             train_labels=labels, train_lengths=lengths,
             infer_images=rng.rand(infer_batch, height, width).astype(np.float32))


def load_data(path):
    with np.load(path) as data:
        return dict((k, data[k]) for k in data.files)


def emit(result):
    """The worker's answer: one tagged JSON line on stdout (libraries may print around it)."""
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()


# Steps per run: (warm-up, timed training steps, timed inference batches, minimum seconds of
# timed training; inference gets half of it). --quick only checks that everything runs.
FULL_TIMING = (5, 20, 10, 8.0)
QUICK_TIMING = (2, 3, 2, 0.0)


def add_timing_arguments(parser, defaults=FULL_TIMING):
    """The arguments every worker takes (this file's TF worker and torch_twin.py); ``defaults``
    None leaves them unset (the parent fills them from --quick)."""
    warmup, train, infer, seconds = defaults or (None,) * 4
    parser.add_argument("--data", help=".npz written by make_data")
    parser.add_argument("--threads", type=int, default=2,
                        help="intra- and inter-op threads of every process (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=warmup, help="untimed training steps")
    parser.add_argument("--train-steps", type=int, default=train,
                        help="timed training steps (at least)")
    parser.add_argument("--infer-steps", type=int, default=infer,
                        help="timed inference batches (at least)")
    parser.add_argument("--min-seconds", type=float, default=seconds,
                        help="time training for at least this long (inference: half of it)")


def fill_timing(args, defaults):
    """Set the timing arguments the user left unset from ``defaults``."""
    for key, value in zip(("warmup", "train_steps", "infer_steps", "min_seconds"), defaults):
        if getattr(args, key) is None:
            setattr(args, key, value)


def measure(train_step, infer_step, batch_size, infer_batch, args):
    """Warm up, then time training and inference; the worker's figures as a dict."""
    for i in range(args.warmup):
        train_step(i)
    train, train_steps, train_window = timed(train_step, batch_size, args.train_steps,
                                             args.min_seconds)
    infer_step(0)  # inference warm-up (other kernels, eval-mode graph paths)
    infer_step(0)
    infer, infer_steps, infer_window = timed(infer_step, infer_batch, args.infer_steps,
                                             args.min_seconds / 2.0)
    return {"train_images_per_s": train, "train_steps": train_steps,
            "infer_images_per_s": infer, "infer_steps": infer_steps,
            "cpu": add_windows([train_window, infer_window])}


# ---------------------------------------------------------------- TensorFlow side

def trainable_parameter_count(graph):
    """Number of scalars in the trainable variables of ``graph`` (shapes must be static)."""
    variables = graph.get_collection("trainable_variables")
    return int(sum(int(np.prod(v.shape.as_list())) for v in variables))


def tf_spec(reference=None, seed=0):
    """The ``small`` model as built by TensorFlow: its sizes and trainable parameter count.

    ``reference``: also write there (.npz) the initial weights (``w:<variable name>``), a small
    batch and the model's logits and loss on it in inference and training mode, for the twin
    to reproduce with the same weights (``torch_twin.py --check``).
    """
    from crnn_multigpu.compat import TF_VERSION, tf
    from crnn_multigpu.datasets.batching import Batch
    from crnn_multigpu.datasets.charset import Charset
    from crnn_multigpu.ocr.crnn import CRNN
    classes = len(Charset.default().chars) + 1  # + the CTC blank
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(seed)
        model = CRNN(num_classes=classes)
        init = tf.global_variables_initializer()
    spec = {"classes": model.num_classes, "channels": list(model.channels),
            "lstm_units": model.lstm_units, "lstm_layers": model.lstm_layers,
            "height": model.height, "params": trainable_parameter_count(graph),
            "tensorflow": ".".join(map(str, TF_VERSION))}
    if reference:
        rng = np.random.RandomState(seed + 1)
        images = rng.rand(8, model.height, 100).astype(np.float32)
        lengths = rng.randint(1, MAX_LABEL + 1, size=8).astype(np.int32)
        labels = rng.randint(0, classes - 1, size=(8, MAX_LABEL)).astype(np.int32)
        labels[np.arange(MAX_LABEL)[None, :] >= lengths[:, None]] = 0
        batch = Batch(images[..., None], np.full([8], 100, np.int32), labels, lengths, None)
        out = {"images": images, "labels": labels, "lengths": lengths}
        with tf.Session(graph=graph) as session:
            session.run(init)
            for training in (False, True):
                logits, loss = session.run([model.logits, model.loss],
                                           model.feed_dict(batch, training=training))
                out["logits_%d" % training], out["loss_%d" % training] = logits, loss
            for variable in graph.get_collection("trainable_variables"):
                out["w:" + variable.op.name] = session.run(variable)
        np.savez(reference, **out)
    return spec


def tf_worker(args):
    """Train and run MultiGpuModel(CRNN) on ``args.towers`` virtual CPUs; emit the figures."""
    from crnn_multigpu.compat import TF_VERSION, tf
    from crnn_multigpu.datasets.batching import Batch
    from crnn_multigpu.ocr.crnn import CRNN
    from crnn_multigpu.wrapper.devices import close_session, cpu_devices, session_config
    from crnn_multigpu.wrapper.towers import MultiGpuModel

    data = load_data(args.data)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(args.seed)
        model = MultiGpuModel(CRNN, devices=cpu_devices(args.towers), num_classes=args.classes,
                              xla=args.xla)
        frames = []
        for device, tower in zip(model.devices, model.models):
            with tf.device(device):  # the greedy path, on the tower that computed it
                frames.append(tf.argmax(tower.log_probs_per_frame, axis=-1))
        init = tf.global_variables_initializer()
    config = session_config(args.towers)
    config.intra_op_parallelism_threads = args.threads
    config.inter_op_parallelism_threads = args.threads
    session = tf.Session(graph=graph, config=config)
    session.run(init)
    if model.post_init_op is not None:
        session.run(model.post_init_op)

    def batch(images, labels=None, lengths=None):
        n, width = images.shape[0], images.shape[2]
        return Batch(images[..., None], np.full([n], width, np.int32), labels, lengths, None)

    feeds = [model.feed_dict(model.split(batch(images, labels, lengths)))
             for images, labels, lengths in zip(data["train_images"], data["train_labels"],
                                                data["train_lengths"])]
    infer_feed = model.feed_dict(model.split(batch(data["infer_images"])), training=False)
    result = measure(lambda i: session.run(model.objective, feeds[i % len(feeds)]),
                     lambda i: session.run(frames, infer_feed),
                     data["train_images"].shape[1], data["infer_images"].shape[0], args)
    result.update(params=trainable_parameter_count(graph), towers=args.towers, xla=args.xla,
                  version="TF %s" % ".".join(map(str, TF_VERSION)),
                  onednn=os.environ.get("TF_ENABLE_ONEDNN_OPTS"))
    close_session(session)
    return result


# ---------------------------------------------------------------- the parent: runs and table

def summarize(runs, peer=PEER):
    """Per configuration min/median/max images/s, and medians of per-repetition ratios.

    ``runs``: {config name: [per-repetition result dict or None (failed)]}, repetitions aligned.
    The ratio ours / peer is taken within each repetition (the two ran minutes apart at most)
    and the median of those is reported.
    """
    summary = collections.OrderedDict()
    for name, results in runs.items():
        row = {}
        for key in ("train_images_per_s", "infer_images_per_s"):
            values = [r[key] for r in results if r]
            row[key] = (min(values), float(np.median(values)), max(values)) if values else None
            if name != peer and peer in runs:
                ratios = [r[key] / p[key] for r, p in zip(results, runs[peer]) if r and p]
                row[key + "_ratio"] = float(np.median(ratios)) if ratios else None
        shares = [others_share(r.get("cpu")) for r in results if r]
        shares = [s for s in shares if s is not None]
        row["others_share"] = (min(shares), max(shares)) if shares else None
        row["others_share_all"] = others_share(add_windows([r.get("cpu") for r in results if r]))
        row["own_share"] = own_share(add_windows([r.get("cpu") for r in results if r]))
        row["reps"] = len([r for r in results if r])
        summary[name] = row
    return summary


def _triple(values, fmt="%.1f"):
    return " / ".join(fmt % v for v in values) if values else "failed"


def _percent(value):
    return "-" if value is None else "%.0f %%" % (100 * value)


def format_table(summary, idle, labels=None, peer=PEER):
    """The table as text; ``idle``: {"others_share", "load_before", "load_after", "cpus"}."""
    labels = labels or {}
    lines = ["%-8s %-30s %24s %8s %24s %8s %6s %7s" % (
        "config", "", "train img/s min/med/max", "vs " + peer, "infer img/s min/med/max",
        "vs " + peer, "own", "others")]
    for name, row in summary.items():
        ratios = ["%.3f" % row[k] if row.get(k) is not None else "-"
                  for k in ("train_images_per_s_ratio", "infer_images_per_s_ratio")]
        lines.append("%-8s %-30s %24s %8s %24s %8s %6s %7s" % (
            name, labels.get(name, ""), _triple(row["train_images_per_s"]),
            ratios[0] if name != peer else "", _triple(row["infer_images_per_s"]),
            ratios[1] if name != peer else "", _percent(row["own_share"]),
            _percent(row["others_share_all"])))
    lines.append("vs %s: median over repetitions of (ours / PyTorch) images/s; above 1: ours is "
                 "faster. own/others: share of all CPU time in the timed steps." % peer)
    share = idle.get("others_share")
    load = (idle.get("load_before"), idle.get("load_after"))
    lines.append("machine: %s CPUs; other processes used %s of all CPU time during the timed "
                 "steps (%s per run; %s over the whole run with start-ups); load average "
                 "(1 min) %s before, %s after" % (
                     idle.get("cpus", "?"), _percent(share), idle.get("per_run_range", "-"),
                     _percent(idle.get("others_share_whole_run")),
                     "%.2f" % load[0] if load[0] is not None else "?",
                     "%.2f" % load[1] if load[1] is not None else "?"))
    lines.append(idle_verdict(share))
    return "\n".join(lines)


def parse_result(stdout):
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return None


def run_worker(command, env, timeout):
    """Run one worker subprocess; its result dict, or None (with its stderr tail reported)."""
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=env, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        sys.stderr.write("  timed out after %d s: %s\n" % (timeout, " ".join(command)))
        return None
    result = parse_result(done.stdout) if done.returncode == 0 else None
    if result is None:
        sys.stderr.write("  failed (exit %d): %s\n%s\n" % (done.returncode, " ".join(command),
                                                           done.stderr[-2500:]))
    return result


def torch_command(pythons, spec):
    """torch_twin.py building the TF model's sizes, refusing to run with another count."""
    return [pythons["torch"], os.path.join(HERE, "torch_twin.py"),
            "--classes", str(spec["classes"]), "--channels", ",".join(map(str, spec["channels"])),
            "--lstm-units", str(spec["lstm_units"]), "--lstm-layers", str(spec["lstm_layers"]),
            "--height", str(spec["height"]), "--expect-params", str(spec["params"])]


def worker_command(config, pythons, spec, data, args):
    timing = ["--data", data, "--threads", str(args.threads), "--seed", str(args.seed),
              "--warmup", str(args.warmup), "--train-steps", str(args.train_steps),
              "--infer-steps", str(args.infer_steps), "--min-seconds", str(args.min_seconds)]
    if config.stack == "torch":
        return torch_command(pythons, spec) + timing
    return [pythons[config.stack], os.path.abspath(__file__), "--worker", "tf",
            "--towers", str(config.towers), "--classes", str(spec["classes"])] + \
        (["--xla"] if config.xla else []) + timing


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="check that it works: 1 repetition of a few steps (not a result)")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions (3)")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated subset of %s" % ", ".join(CONFIGS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--infer-batch", type=int, default=64)
    parser.add_argument("--batches", type=int, default=4,
                        help="distinct synthetic training batches, cycled")
    parser.add_argument("--python-tf2", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--python-tf1", default=os.path.join(ROOT, ".venv-tf1", "bin", "python"))
    parser.add_argument("--python-torch",
                        default=os.path.join(ROOT, ".venv-torch", "bin", "python"))
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per worker")
    parser.add_argument("--json", help="write every repetition's figures here")
    parser.add_argument("--worker", choices=("tf", "spec"), help=argparse.SUPPRESS)
    parser.add_argument("--towers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--xla", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--classes", type=int, default=37, help=argparse.SUPPRESS)
    add_timing_arguments(parser, defaults=None)
    args = parser.parse_args(argv)
    fill_timing(args, QUICK_TIMING if args.quick else FULL_TIMING)
    if args.worker == "spec":
        emit(tf_spec(args.data, args.seed))
        return 0
    if args.worker == "tf":
        emit(tf_worker(args))
        return 0
    args.reps = args.reps or (1 if args.quick else 3)

    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        parser.error("unknown configuration(s) %s; choose from %s"
                     % (", ".join(unknown), ", ".join(CONFIGS)))
    pythons = {"tf2": args.python_tf2, "tf1": args.python_tf1, "torch": args.python_torch}
    configs = []
    for name in names:
        python = pythons[CONFIGS[name].stack]
        if os.access(python, os.X_OK):
            configs.append(CONFIGS[name])
        else:
            sys.stderr.write("skipping %s: no interpreter at %s (%s)\n" % (
                name, python, "make benchmark-peers creates it" if name == PEER
                else "make venv venv-tf1"))
    if not configs:
        sys.stderr.write("error: no configuration can run\n")
        return 2
    env = dict(os.environ)
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # as `make train`; TF 1.15 ignores it
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])

    workdir = tempfile.mkdtemp(prefix="peer_benchmark_")
    reference = os.path.join(workdir, "reference.npz")
    spec_python = args.python_tf2 if os.access(args.python_tf2, os.X_OK) else args.python_tf1
    sys.stderr.write("building the TensorFlow model once for its sizes and parameter count\n")
    spec = run_worker([spec_python, os.path.abspath(__file__), "--worker", "spec",
                       "--data", reference, "--seed", str(args.seed)], env, args.timeout)
    if spec is None:
        sys.stderr.write("error: could not build the TensorFlow CRNN (see above)\n")
        return 2
    sys.stderr.write("TensorFlow CRNN: %(params)d trainable parameters, %(classes)d classes, "
                     "channels %(channels)s, %(lstm_layers)d BiLSTM layers of %(lstm_units)d\n"
                     % spec)
    check = None
    if any(c.stack == "torch" for c in configs):
        # Same architecture, checked twice: the parameter counts, and the twin loaded with the
        # TF model's weights must give its logits and loss (torch_twin.py exits 3 otherwise).
        sys.stderr.write("checking the PyTorch twin against the TF model's weights and outputs\n")
        check = run_worker(torch_command(pythons, spec) + ["--check", reference], env,
                           args.timeout)
        if check is None:
            sys.stderr.write("error: the PyTorch twin is not the TensorFlow model (see above)\n")
            shutil.rmtree(workdir, ignore_errors=True)
            return 2
        check = check["check"]
    os.remove(reference)

    data = os.path.join(workdir, "batches.npz")
    make_data(data, spec["classes"] - 1, args.batch_size, args.batches, args.infer_batch,
              args.seed, height=spec["height"])
    runs = collections.OrderedDict((c.name, []) for c in configs)
    load_before, run_started = load_average(), cpu_snapshot(children=True)
    for rep in range(args.reps):
        shift = rep % len(configs)  # A B C D, B C D A, ...: no configuration always runs first
        for config in configs[shift:] + configs[:shift]:
            sys.stderr.write("repetition %d/%d: %s\n" % (rep + 1, args.reps, config.name))
            started = time.time()
            result = run_worker(worker_command(config, pythons, spec, data, args), env,
                                args.timeout)
            if result is not None and result.get("params") != spec["params"]:
                sys.stderr.write("  %s has %s trainable parameters, the TF model %d: dropped\n"
                                 % (config.name, result.get("params"), spec["params"]))
                result = None
            if result is not None:
                result["wall_seconds"] = time.time() - started
                sys.stderr.write("  train %.1f img/s, infer %.1f img/s, others %s (%.0f s)\n" % (
                    result["train_images_per_s"], result["infer_images_per_s"],
                    _percent(others_share(result.get("cpu"))), result["wall_seconds"]))
            runs[config.name].append(result)
    load_after = load_average()
    shutil.rmtree(workdir, ignore_errors=True)

    summary = summarize(runs)
    timed_windows = add_windows([r.get("cpu") for rs in runs.values() for r in rs if r])
    per_run = [others_share(r.get("cpu")) for rs in runs.values() for r in rs if r]
    per_run = [s for s in per_run if s is not None]
    idle = {"others_share": others_share(timed_windows), "cpus": os.cpu_count(),
            "load_before": load_before[0] if load_before else None,
            "load_after": load_after[0] if load_after else None,
            "per_run_range": "%s-%s" % (_percent(min(per_run)), _percent(max(per_run)))
            if per_run else "-"}
    # The whole run from the parent's view, start-up and graph building of the workers included.
    idle["others_share_whole_run"] = others_share(cpu_window(run_started,
                                                             cpu_snapshot(children=True)))
    versions = collections.OrderedDict(
        (n, next(r["version"] for r in rs if r)) for n, rs in runs.items() if any(rs))
    print("CRNN small: %d trainable parameters in TensorFlow (%s)%s; train batch %d, inference "
          "batch %d, %d threads per process, %d repetition(s)%s" % (
              spec["params"], spec["tensorflow"],
              " and in the PyTorch twin" if check else " (PyTorch twin not run)",
              args.batch_size, args.infer_batch, args.threads, args.reps,
              " (--quick: a smoke test, not a result)" if args.quick else ""))
    print("versions: %s; TF_ENABLE_ONEDNN_OPTS=%s" % (
        ", ".join("%s %s" % item for item in versions.items()), env["TF_ENABLE_ONEDNN_OPTS"]))
    if check:
        print("twin check: the PyTorch twin with the TF model's initial weights gives its logits "
              "within %.1e (inference) and %.1e (training), CTC loss %.5f vs %.5f" % (
                  check["inference"]["logits_max_abs_diff"],
                  check["training"]["logits_max_abs_diff"], check["training"]["loss"],
                  check["training"]["tf_loss"]))
    print(format_table(summary, idle, dict((c.name, c.label) for c in configs)))
    if args.json:
        report = {"spec": spec, "twin_check": check, "summary": summary, "runs": runs, "idle": idle,
                  "settings": dict((k, getattr(args, k)) for k in (
                      "reps", "batch_size", "infer_batch", "batches", "threads", "seed", "warmup",
                      "train_steps", "infer_steps", "min_seconds", "quick")),
                  "machine": {"cpus": os.cpu_count(), "processor":
                              platform.processor() or platform.machine()}}
        write_json(args.json, report)
    failed = [n for n, rs in runs.items() if not all(rs)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
