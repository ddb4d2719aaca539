"""How much of this CPU's float32 throughput the default CRNN training step uses, and where the rest goes.

One run measures everything it compares, so the shared machine's noise falls on all alike:

- FLOPs per step, counted from the graph by TF's profiler (float_operation) after one traced
  step, whose RunMetadata completes the shapes the placeholders leave open. The fused LSTM ops
  have no registered FLOP count; their matmul FLOPs are added separately, by formula.
- The step time (median of timed steps) and so the achieved FLOP/s.
- The peak: the best float32 GEMM rate of numpy and of TensorFlow's MatMul, measured before and
  after the steps in a process of its own with the BLAS overrides cleared
  (``scripts/gemm_peak.py``), with the share of the CPU other processes used meanwhile.
- The op profile: traced op time per op type (summed over threads, so it can exceed wall time),
  with the dtypes each type ran in, and op time per dtype.

Each configuration (``--batch`` values, ``--xla``) is timed in interleaved repetitions.
``--precision`` builds every configuration with that ``MultiGpuModel`` precision policy, so the
same profile can be taken in mixed_float16 or mixed_bfloat16. The peak stays the float32 GEMM's
and the FLOP count is dtype-blind: for low precision, the "fraction of the float32 GEMM peak" is
the float32 yardstick, not the peak of the precision's own kernels.
Usage::

    python scripts/step_efficiency.py --json eff.json            # ~3 minutes
    python scripts/step_efficiency.py --batch 32 64 --xla        # + larger batch, XLA
    python scripts/step_efficiency.py --precision mixed_bfloat16 # where a bfloat16 step goes
"""
import argparse
import collections
import os
import platform
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.compat import TF_VERSION, tf  # noqa: E402
from crnn_multigpu.ocr.crnn import CRNN  # noqa: E402
from crnn_multigpu.wrapper.precision import NAMES as PRECISIONS  # noqa: E402
from crnn_multigpu.wrapper.towers import MultiGpuModel  # noqa: E402
from benchmark import synthetic_batch  # noqa: E402  (scripts/ is on sys.path when run)
from gemm_peak import SIZES, measure_in_subprocess  # noqa: E402
from reports import write_json  # noqa: E402  (scripts/ is on sys.path when run)


class Step(object):
    """One training step of the default CRNN, one tower, Adam, fed a synthetic batch."""

    def __init__(self, batch_size, xla=False, width=100, precision="float32"):
        self.name = "batch%d%s%s" % (batch_size, "_xla" if xla else "",
                                     "" if precision == "float32" else "_" + precision)
        self.batch_size, self.times = batch_size, []
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(0)
            self.model = MultiGpuModel(CRNN, devices=["/cpu:0"], xla=xla, precision=precision)
            init = tf.global_variables_initializer()
        batch = synthetic_batch(batch_size, width=width)
        self.feed = self.model.feed_dict(self.model.split(batch))
        self.session = tf.Session(graph=self.graph)
        self.session.run(init)
        for _ in range(3):  # warm-up: graph optimisation, XLA compilation, allocator
            self.run()

    def run(self, *trace):
        return self.session.run(self.model.objective, self.feed, *trace)

    def time(self, steps):
        started = time.perf_counter()
        for _ in range(steps):
            self.run()
        self.times.append((time.perf_counter() - started) / steps)

    def trace(self):
        metadata = tf.RunMetadata()
        self.run(tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), metadata)
        return metadata

    def flops(self, metadata):
        """(profiler float ops of the step, LSTM matmul FLOPs the profiler cannot see)."""
        options = tf.profiler.ProfileOptionBuilder.float_operation()
        options["output"] = "none"
        counted = tf.profiler.profile(self.graph, run_meta=metadata, cmd="op",
                                      options=options).total_float_ops
        model = self.model.models[0]
        steps = 100 // CRNN.DOWNSAMPLE
        units, lstm = model.lstm_units, 0
        for layer in range(model.lstm_layers):
            inputs = model.channels[-1] if layer == 0 else 2 * units
            # Two directions; the fused cell's matmul [B, in+units] x [in+units, 4 units] per
            # frame; the backward pass costs two such matmuls (input and weight gradients).
            lstm += 2 * 3 * 2 * self.batch_size * steps * (inputs + units) * 4 * units
        return counted, lstm

    @property
    def median(self):
        return float(np.median(self.times))


# oneDNN (on by default on Intel CPUs, TF_ENABLE_ONEDNN_OPTS=1 elsewhere) renames the kernels it
# runs: _MklNativeConv2DBackpropFilter is Conv2DBackpropFilter. One name per op keeps the profile
# comparable between machines.
ONEDNN_PREFIX = re.compile(r"^_Mkl(Native)?")


def op_dtype(graph, name):
    """The dtype an op computes in (its ``T`` attribute, for a Cast ``SrcT->DstT``); "-" for
    ops without one (and for the executor's own nodes, which are not in the graph)."""
    try:
        op = graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return "-"
    attrs = op.node_def.attr
    if "SrcT" in attrs and "DstT" in attrs:
        return "%s->%s" % (tf.as_dtype(attrs["SrcT"].type).name,
                           tf.as_dtype(attrs["DstT"].type).name)
    return tf.as_dtype(attrs["T"].type).name if "T" in attrs else "-"


def op_profile(metadata, graph):
    """Op microseconds in one traced step (host-side duplicates of TF 1.x skipped), oneDNN's
    kernel names mapped back to the op's: (by op type, by dtype, the dtypes of each op type)."""
    by_type, by_dtype = collections.Counter(), collections.Counter()
    dtypes = collections.defaultdict(set)
    for device in metadata.step_stats.dev_stats:
        if "/host:" in device.device:
            continue
        for node in device.node_stats:
            label = node.timeline_label.split(" = ")
            op_type = ONEDNN_PREFIX.sub("", label[1].split("(")[0] if len(label) > 1
                                        else node.node_name)
            dtype = op_dtype(graph, node.node_name)
            by_type[op_type] += node.all_end_rel_micros
            by_dtype["Cast" if op_type == "Cast" else dtype] += node.all_end_rel_micros
            dtypes[op_type].add(dtype)
    return by_type, by_dtype, dtypes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[32], help="batch sizes to time")
    parser.add_argument("--xla", action="store_true", help="also time the first batch with XLA")
    parser.add_argument("--reps", type=int, default=8, help="interleaved repetitions")
    parser.add_argument("--steps", type=int, default=3, help="steps per repetition")
    parser.add_argument("--top", type=int, default=12,
                        help="op types printed (the JSON holds every op type)")
    parser.add_argument("--precision", choices=PRECISIONS, default="float32",
                        help="MultiGpuModel's precision policy for every configuration "
                             "(the GEMM peak stays float32's)")
    parser.add_argument("--peak-repeats", type=int, default=5,
                        help="timed GEMMs per size and library for the peak")
    parser.add_argument("--peak-sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help="GEMM sizes for the peak (default: %(default)s)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    gemm_settings = dict(tensorflow=True, repeats=args.peak_repeats, sizes=args.peak_sizes)
    before = measure_in_subprocess(**gemm_settings)
    steps = ([Step(b, precision=args.precision) for b in args.batch]
             + ([Step(args.batch[0], xla=True, precision=args.precision)] if args.xla else []))
    for rep in range(args.reps):
        shift = rep % len(steps)
        for step in steps[shift:] + steps[:shift]:
            step.time(args.steps)
    # The load may have changed meanwhile.
    after = measure_in_subprocess(**gemm_settings)
    best = {key: max(result[library].values()) for result, suffix in ((before, ""),
                                                                        (after, "_after"))
            for library, key in (("numpy", "numpy" + suffix),
                                 ("tensorflow", "tensorflow" + suffix))}
    peak = max(best.values())
    idle = [share for share in (before["others_share"], after["others_share"])
            if share is not None]
    report = {"gemm_flops_per_s": dict(best, peak=peak),
              "gemm_others_share": max(idle) if idle else None,
              "gemm_by_size": {"before": before, "after": after},
              "precision": args.precision, "configurations": {}, "machine": {
                  "cpus": os.cpu_count(), "python": platform.python_version(),
                  "tensorflow": ".".join(map(str, TF_VERSION)),
                  "processor": platform.processor() or platform.machine()}}
    print("float32 GEMM peak: numpy %.1f GFLOP/s, TF %.1f GFLOP/s (after the steps: %.1f, %.1f)"
          % tuple(best[key] / 1e9 for key in ("numpy", "tensorflow", "numpy_after",
                                              "tensorflow_after")))
    print("  each measured in a process of its own; other processes used %s of the CPU time "
          "meanwhile" % ("?" if not idle else "%.1f %%" % (100 * max(idle))))
    for step in steps:
        metadata = step.trace()
        counted, lstm = step.flops(metadata)
        profile, by_dtype, dtypes = op_profile(metadata, step.graph)
        total_op = float(sum(profile.values()))
        rate = (counted + lstm) / step.median
        figures = {"step_seconds": step.median, "profiler_flops": counted, "lstm_flops": lstm,
                   "flops_per_s": rate, "fraction_of_peak": rate / peak,
                   "images_per_s": step.batch_size / step.median,
                   "op_micros_by_type": dict(profile.most_common()),
                   "op_micros_by_dtype": dict(by_dtype),
                   "op_dtypes": {t: sorted(dtypes[t]) for t in profile}}
        report["configurations"][step.name] = figures
        print("\n%s: %.1f ms/step, %.0f images/s; %.2f GFLOP counted + %.2f GFLOP LSTM = %.1f "
              "GFLOP/s, %.1f %% of the float32 GEMM peak"
              % (step.name, 1e3 * step.median, figures["images_per_s"], counted / 1e9, lstm / 1e9,
                 rate / 1e9, 100 * rate / peak))
        print("  op time %.1f ms (summed over threads); by type:" % (total_op / 1e3))
        for op_type, micros in profile.most_common(args.top):
            print("    %-28s %8.1f ms %5.1f %%  %s" % (op_type, micros / 1e3,
                                                     100 * micros / total_op,
                                                     ", ".join(sorted(dtypes[op_type]))))
        print("  by dtype (Cast apart):")
        for dtype, micros in by_dtype.most_common():
            print("    %-28s %8.1f ms %5.1f %%" % (dtype, micros / 1e3, 100 * micros / total_op))
        step.session.close()
    write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
