"""This CPU's float32 GEMM peak, measured honestly: in a process of its own, and saying how idle.

A "fraction of peak" is only as good as its peak. A peak measured inside a process that is also
training (or on a machine that is busy) measures the contention: on a 2-core VM the same numpy
GEMM gave 23-34 GFLOP/s in a loaded process and 156 GFLOP/s alone. So this script

- is meant to run as its own process (``measure_in_subprocess`` starts it so), with the
  machine-wide BLAS overrides some images set (``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``,
  see ``BLAS_OVERRIDES``) removed for that process only: they pin OpenBLAS to a kernel that
  may not be the one this CPU is best at, and the caller's environment stays as it was;
- times square float32 matrix products of several sizes in numpy (its BLAS) and, with
  ``--tensorflow``, in TensorFlow's own MatMul kernel, the best of ``--repeats`` each;
- reports the share of the machine's CPU time other processes used meanwhile (``/proc/stat``
  minus its own), so a reader can tell a peak from a busy machine's figure.

The script always measures in a child process of its own, started with that clean environment.
Usage::

    python scripts/gemm_peak.py                      # numpy only, prints one table
    python scripts/gemm_peak.py --tensorflow --json peak.json
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cpu_accounting import cpu_snapshot, cpu_window, load_average, others_share  # noqa: E402
from reports import write_json  # noqa: E402  (scripts/ is on sys.path when run)

BLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
SIZES = (1024, 2048, 3072)
RESULT_PREFIX = "GEMM_PEAK "


def best_seconds(run, repeats):
    """The shortest of ``repeats`` timed calls of ``run`` (after one untimed call)."""
    run()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def numpy_rates(sizes, repeats):
    """{n: FLOP/s} of numpy's n x n float32 product."""
    rates = {}
    for n in sizes:
        a = np.random.RandomState(n).rand(n, n).astype(np.float32)
        rates[n] = 2.0 * n ** 3 / best_seconds(lambda: np.dot(a, a), repeats)
    return rates


def tensorflow_rates(sizes, repeats):
    """{n: FLOP/s} of TensorFlow's MatMul kernel on an n x n float32 variable."""
    sys.path.insert(0, os.path.dirname(HERE))
    from crnn_multigpu.compat import tf
    rates = {}
    for n in sizes:
        graph = tf.Graph()
        with graph.as_default():
            # A variable, not a constant, so that grappler cannot fold the product away; a scalar
            # out, so that no n x n copy back to numpy is timed.
            x = tf.get_variable("gemm_input", initializer=np.random.RandomState(n).rand(n, n)
                                .astype(np.float32))
            product = tf.reduce_sum(tf.matmul(x, x))
            with tf.Session() as session:
                session.run(x.initializer)
                rates[n] = 2.0 * n ** 3 / best_seconds(lambda: session.run(product), repeats)
    return rates


def measure(sizes=SIZES, repeats=5, tensorflow=False):
    """Everything this process measures: rates per size, the best, and how idle it was."""
    before = cpu_snapshot()
    load_before = load_average()
    result = {"numpy": numpy_rates(sizes, repeats)}
    if tensorflow:
        result["tensorflow"] = tensorflow_rates(sizes, repeats)
    window = cpu_window(before, cpu_snapshot())
    result.update(
        peak=max(rate for rates in result.values() for rate in rates.values()),
        others_share=others_share(window), load_before=load_before, load_after=load_average(),
        blas_overrides_seen=[name for name in BLAS_OVERRIDES if name in os.environ],
        cpus=os.cpu_count())
    return result


def clean_environment(environ=None):
    """A copy of ``environ`` without the BLAS overrides (for the measuring process only)."""
    env = dict(os.environ if environ is None else environ)
    for name in BLAS_OVERRIDES:
        env.pop(name, None)
    return env


def measure_in_subprocess(python=sys.executable, tensorflow=False, repeats=5, sizes=SIZES,
                          timeout=600):
    """Run this script in a fresh process with a clean BLAS environment; its result dict.

    The JSON keys of the sizes come back as strings. ``blas_overrides_cleared`` names the
    overrides the caller's environment had, ``blas_overrides_seen`` those the child saw (none).
    """
    command = [python, os.path.abspath(__file__), "--repeats", str(repeats), "--child",
               "--sizes"] + [str(n) for n in sizes]
    if tensorflow:
        command.append("--tensorflow")
    done = subprocess.run(command, env=clean_environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
            result["blas_overrides_cleared"] = [n for n in BLAS_OVERRIDES if n in os.environ]
            return result
    raise RuntimeError("gemm_peak.py printed no result (exit %d): %s"
                       % (done.returncode, done.stderr.strip()[-500:]))


def format_result(result):
    lines = ["float32 GEMM, its own process (GFLOP/s, best of the repeats):"]
    for library in ("numpy", "tensorflow"):
        if library in result:
            lines.append("  %-10s " % library + "  ".join(
                "%s: %.1f" % (n, rate / 1e9) for n, rate in sorted(
                    result[library].items(), key=lambda item: int(item[0]))))
    share = result["others_share"]
    lines.append("  peak %.1f GFLOP/s; other processes used %s of the CPU time meanwhile%s"
                 % (result["peak"] / 1e9, "?" if share is None else "%.1f %%" % (100 * share),
                    "" if share is None or share <= 0.05 else " (NOT an idle machine)"))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorflow", action="store_true", help="also time TF's MatMul")
    parser.add_argument("--repeats", type=int, default=5, help="timed products per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help="matrix sizes (default: %(default)s; the peak is the best of them)")
    parser.add_argument("--json", help="write the result here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # the measuring process itself
        print(RESULT_PREFIX + json.dumps(measure(args.sizes, repeats=args.repeats,
                                                 tensorflow=args.tensorflow)))
        return 0
    result = measure_in_subprocess(tensorflow=args.tensorflow, repeats=args.repeats,
                                   sizes=args.sizes)
    print(format_result(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
