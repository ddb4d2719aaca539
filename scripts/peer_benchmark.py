"""The CRNN in this package beside a PyTorch twin: training and inference images/s by charset.

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

Charsets (``--charsets``, default both): every configuration runs with the output layer of
``words`` (digits and lower case: 37 classes with the CTC blank) and of ``zh`` (the Chinese
charset, ``crnn_multigpu/datasets/languages/zh_charset.txt``: 6,900 classes), the twin widened
alike, interleaved in the same repetitions; the ratios to PyTorch come per charset, and side by
side. The float32 GEMM peak (``gemm_peak.py``, alone in a process of its own) is measured before
and after the runs and printed with them, so that the figures can be scaled to another machine.

The table gives min / median / max images/s over the repetitions, the median of the
per-repetition ratios ours / PyTorch (above 1: ours is faster), and how idle the machine was:
the share of all CPU time that other processes used during the timed steps (``/proc/stat``
minus the run's own CPU time) and the load average before and after. Figures are only valid
from an idle machine; the table says when it was not. Usage::

    make benchmark-peers                                   # creates .venv-torch, full run
    .venv/bin/python scripts/peer_benchmark.py --quick     # 1 repetition of a few steps
    .venv/bin/python scripts/peer_benchmark.py --reps 5 --json peers.json
    .venv/bin/python scripts/peer_benchmark.py --charsets zh --configs tf2_2,torch

The TensorFlow runs are ``peer_tf_worker.py``'s, the PyTorch ones ``torch_twin.py``'s; both import
this file's timing helpers, and it imports no TensorFlow, so the parent process stays light.
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

# scripts/ is on sys.path when one of its scripts runs.
from cpu_accounting import (add_windows, cpu_snapshot, cpu_window, idle_verdict, load_average,
                            others_share, own_share, steal_share)
from gemm_peak import measure_in_subprocess
from reports import write_json

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
RESULT_PREFIX = "PEER_RESULT "
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
# The output layers compared (--charsets): what each charset holds, for the tables.
CHARSETS = collections.OrderedDict([
    ("words", "digits and lower case, the CRNN paper's"),
    ("zh", "the Chinese charset, crnn_multigpu/datasets/languages/zh_charset.txt")])


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


def _ratio(row, key):
    return "-" if row.get(key) is None else "%.3f" % row[key]


def format_table(summary, labels=None, peer=PEER):
    """One charset's table as text: images/s per configuration and the ratios to ``peer``."""
    labels = labels or {}
    lines = ["%-8s %-30s %24s %8s %24s %8s %6s %7s" % (
        "config", "", "train img/s min/med/max", "vs " + peer, "infer img/s min/med/max",
        "vs " + peer, "own", "others")]
    for name, row in summary.items():
        ratios = [_ratio(row, k) if name != peer else ""
                  for k in ("train_images_per_s_ratio", "infer_images_per_s_ratio")]
        lines.append("%-8s %-30s %24s %8s %24s %8s %6s %7s" % (
            name, labels.get(name, ""), _triple(row["train_images_per_s"]), ratios[0],
            _triple(row["infer_images_per_s"]), ratios[1], _percent(row["own_share"]),
            _percent(row["others_share_all"])))
    lines.append("vs %s: median over repetitions of (ours / PyTorch) images/s; above 1: ours is "
                 "faster. own/others: share of all CPU time in the timed steps." % peer)
    return "\n".join(lines)


def format_ratios(summaries, classes, peer=PEER):
    """The ratios to ``peer`` of every configuration at each charset's output size, side by
    side; ``summaries``: {charset: summary}, ``classes``: {charset: output classes}."""
    names = [n for n in next(iter(summaries.values())) if n != peer]
    header = ["%-8s" % "config"] + ["%16s" % ("%s %s cl." % (what, "{:,}".format(classes[c])))
                                    for what in ("train", "infer") for c in summaries]
    lines = ["ours / %s by output size (the median ratio of each table above):" % peer,
             " ".join(header)]
    for name in names:
        lines.append(" ".join(["%-8s" % name] + [
            "%16s" % _ratio(summaries[c].get(name, {}), key + "_ratio")
            for key in ("train_images_per_s", "infer_images_per_s") for c in summaries]))
    return "\n".join(lines)


def format_idle(idle):
    """How idle the machine was, and the verdict; ``idle``: {"others_share", "load_before",
    "load_after", "cpus", "per_run_range", "others_share_whole_run"}."""
    share = idle.get("others_share")
    load = (idle.get("load_before"), idle.get("load_after"))
    return "\n".join([
        "machine: %s CPUs; other processes used %s of all CPU time during the timed steps (%s "
        "per run; %s over the whole run with start-ups), the hypervisor kept %s (steal); load "
        "average (1 min) %s before, %s after" % (
                   idle.get("cpus", "?"), _percent(share), idle.get("per_run_range", "-"),
                   _percent(idle.get("others_share_whole_run")), _percent(idle.get("steal_share")),
                   "%.2f" % load[0] if load[0] is not None else "?",
                   "%.2f" % load[1] if load[1] is not None else "?"),
        idle_verdict(share)])


def format_peak(before, after):
    """The float32 GEMM peak (``gemm_peak.measure_in_subprocess``'s results before and after
    the runs) in two lines."""
    rates = [max(result[library].values()) / 1e9 for result in (before, after)
             for library in ("numpy", "tensorflow")]
    shares = [r["others_share"] for r in (before, after) if r["others_share"] is not None]
    return ("float32 GEMM peak, each measured alone in a process of its own: numpy %.1f GFLOP/s, "
            "TF %.1f (after the runs: %.1f, %.1f)\n  other processes used %s of the CPU time "
            "meanwhile" % tuple(rates + [_percent(max(shares)) if shares else "?"]))


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
    return [pythons[config.stack], os.path.join(HERE, "peer_tf_worker.py"),
            "--towers", str(config.towers), "--classes", str(spec["classes"])] + \
        (["--xla"] if config.xla else []) + timing


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="check that it works: 1 repetition of a few steps (not a result)")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions (3)")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated subset of %s" % ", ".join(CONFIGS))
    parser.add_argument("--charsets", default=",".join(CHARSETS),
                        help="the output layers to time, comma-separated: %s (default: both, "
                             "a table each)" % "; ".join("%s: %s" % item
                                                         for item in CHARSETS.items()))
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
    add_timing_arguments(parser, defaults=None)
    return parser


def chosen(parser, flag, text, known):
    """The names of the comma-separated ``text`` of ``flag``, each one of ``known``."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        parser.error("%s: unknown %s; choose from %s"
                     % (flag, ", ".join(unknown) or "(none given)", ", ".join(known)))
    return names


def runnable_configs(names, pythons):
    """The configurations of ``names`` whose interpreter exists; a line for each skipped."""
    configs = []
    for name in names:
        python = pythons[CONFIGS[name].stack]
        if os.access(python, os.X_OK):
            configs.append(CONFIGS[name])
        else:
            sys.stderr.write("skipping %s: no interpreter at %s (%s)\n" % (
                name, python, "make benchmark-peers creates it" if name == PEER
                else "make venv venv-tf1"))
    return configs


def prepare_charset(charset, configs, pythons, env, workdir, args):
    """Build the TF model with ``charset``'s output layer once, check the PyTorch twin against
    it (when it runs) and write the batches: ``(spec, twin check or None, data path)``, or
    None (with a line on stderr) when either fails."""
    spec_python = pythons["tf2"] if os.access(pythons["tf2"], os.X_OK) else pythons["tf1"]
    reference = os.path.join(workdir, "reference-%s.npz" % charset)
    sys.stderr.write("building the TensorFlow model once for its sizes (charset %s)\n" % charset)
    spec = run_worker([spec_python, os.path.join(HERE, "peer_tf_worker.py"), "--spec",
                       reference, "--charset", charset, "--seed", str(args.seed)], env,
                      args.timeout)
    if spec is None:
        sys.stderr.write("error: could not build the TensorFlow CRNN (see above)\n")
        return None
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
            return None
        check = check["check"]
    os.remove(reference)
    data = os.path.join(workdir, "batches-%s.npz" % charset)
    make_data(data, spec["classes"] - 1, args.batch_size, args.batches, args.infer_batch,
              args.seed, height=spec["height"])
    return spec, check, data


def run_repetitions(units, pythons, prepared, env, args):
    """Every (charset, configuration) of ``units`` run ``args.reps`` times, interleaved;
    {charset: {config name: [result or None per repetition]}}."""
    runs = collections.OrderedDict()
    for charset, config in units:
        runs.setdefault(charset, collections.OrderedDict())[config.name] = []
    for rep in range(args.reps):
        shift = rep % len(units)  # A B C D, B C D A, ...: no configuration always runs first
        for charset, config in units[shift:] + units[:shift]:
            spec, _, data = prepared[charset]
            sys.stderr.write("repetition %d/%d: %s, charset %s\n"
                             % (rep + 1, args.reps, config.name, charset))
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
            runs[charset][config.name].append(result)
    return runs


def idle_figures(runs, load_before, load_after, run_started):
    """How idle the machine was over ``runs`` ({charset: {config: [result]}})."""
    results = [r for per_config in runs.values() for rs in per_config.values() for r in rs if r]
    per_run = [s for s in (others_share(r.get("cpu")) for r in results) if s is not None]
    timed = add_windows([r.get("cpu") for r in results])
    return {"others_share": others_share(timed), "steal_share": steal_share(timed),
            "cpus": os.cpu_count(),
            "load_before": load_before[0] if load_before else None,
            "load_after": load_after[0] if load_after else None,
            "per_run_range": "%s-%s" % (_percent(min(per_run)), _percent(max(per_run)))
            if per_run else "-",
            # The whole run from the parent's view, start-up and graph building included.
            "others_share_whole_run": others_share(cpu_window(run_started,
                                                              cpu_snapshot(children=True)))}


def print_report(prepared, runs, summaries, idle, peaks, configs, env, args):
    """The figures on stdout: the model, versions, twin checks, a table per charset, the
    ratios side by side, the GEMM peak and how idle the machine was."""
    labels = dict((c.name, c.label) for c in configs)
    versions = collections.OrderedDict(
        (n, next(r["version"] for r in rs if r)) for per_config in runs.values()
        for n, rs in per_config.items() if any(rs))
    print("CRNN small, train batch %d, inference batch %d, %d threads per process, %d "
          "repetition(s)%s" % (args.batch_size, args.infer_batch, args.threads, args.reps,
                               " (--quick: a smoke test, not a result)" if args.quick else ""))
    print("versions: %s; TF_ENABLE_ONEDNN_OPTS=%s" % (
        ", ".join("%s %s" % item for item in versions.items()), env["TF_ENABLE_ONEDNN_OPTS"]))
    for charset, (spec, check, _) in prepared.items():
        print("\n%s classes (%s): %d trainable parameters in TensorFlow (%s)%s" % (
            "{:,}".format(spec["classes"]), CHARSETS[charset], spec["params"],
            spec["tensorflow"], " and in the PyTorch twin" if check else
            " (PyTorch twin not run)"))
        if check:
            print("twin check: the PyTorch twin with the TF model's initial weights gives its "
                  "logits within %.1e (inference) and %.1e (training), CTC loss %.5f vs %.5f" % (
                      check["inference"]["logits_max_abs_diff"],
                      check["training"]["logits_max_abs_diff"], check["training"]["loss"],
                      check["training"]["tf_loss"]))
        print(format_table(summaries[charset], labels))
    if len(summaries) > 1 and any(c.name == PEER for c in configs):
        print("\n" + format_ratios(summaries, dict((c, prepared[c][0]["classes"])
                                                   for c in prepared)))
    print("\n" + format_peak(*peaks))
    print(format_idle(idle))


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    fill_timing(args, QUICK_TIMING if args.quick else FULL_TIMING)
    args.reps = args.reps or (1 if args.quick else 3)
    names = chosen(parser, "--configs", args.configs, CONFIGS)
    charsets = chosen(parser, "--charsets", args.charsets, CHARSETS)
    pythons = {"tf2": args.python_tf2, "tf1": args.python_tf1, "torch": args.python_torch}
    configs = runnable_configs(names, pythons)
    if not configs:
        sys.stderr.write("error: no configuration can run\n")
        return 2
    env = dict(os.environ)
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # as `make train`; TF 1.15 ignores it
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    peak_python = pythons["tf2"] if os.access(pythons["tf2"], os.X_OK) else pythons["tf1"]
    peak_settings = dict(python=peak_python, tensorflow=True, repeats=1 if args.quick else 5,
                         sizes=[256] if args.quick else [1024, 2048, 3072])
    sys.stderr.write("measuring the float32 GEMM peak alone\n")
    peaks = [measure_in_subprocess(**peak_settings)]

    workdir = tempfile.mkdtemp(prefix="peer_benchmark_")
    try:
        prepared = collections.OrderedDict()
        for charset in charsets:
            prepared[charset] = prepare_charset(charset, configs, pythons, env, workdir, args)
            if prepared[charset] is None:
                return 2
        load_before, run_started = load_average(), cpu_snapshot(children=True)
        runs = run_repetitions([(charset, config) for charset in charsets for config in configs],
                               pythons, prepared, env, args)
        load_after = load_average()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    idle = idle_figures(runs, load_before, load_after, run_started)
    peaks.append(measure_in_subprocess(**peak_settings))  # the load may have changed meanwhile
    summaries = collections.OrderedDict((c, summarize(runs[c])) for c in charsets)
    print_report(prepared, runs, summaries, idle, peaks, configs, env, args)
    if args.json:
        write_json(args.json, {
            "specs": dict((c, p[0]) for c, p in prepared.items()),
            "twin_checks": dict((c, p[1]) for c, p in prepared.items()),
            "summaries": summaries, "runs": runs, "idle": idle,
            "gemm_peak": {"before": peaks[0], "after": peaks[1]},
            "settings": dict((k, getattr(args, k)) for k in (
                "reps", "batch_size", "infer_batch", "batches", "threads", "seed", "warmup",
                "train_steps", "infer_steps", "min_seconds", "quick", "charsets")),
            "machine": {"cpus": os.cpu_count(),
                        "processor": platform.processor() or platform.machine()}})
    failed = [n for per_config in runs.values() for n, rs in per_config.items() if not all(rs)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
