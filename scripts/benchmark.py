"""Step times of the tower wrapper beside what a user would otherwise pick, as ratios from one run.

Every configuration trains the same CRNN on the same global batch on the same
(virtual CPU) devices; repetitions of all configurations are interleaved
(A B C, B C A, ...) in many short repetitions so that machine noise hits them
alike; step times are medians, ratios are medians of the per-repetition ratios. Usage::

    python scripts/benchmark.py --quick --json out.json      # 1-2 minutes
    python scripts/benchmark.py --json out.json --profile    # the figures of docs/benchmarks.md

``--profile`` adds traced steps (RunMetadata) per configuration: the summed op time per
device, how long the towers' ``IteratorGetNext`` ops waited on the tf.data path, and
where wrapper_2 and mirrored_2 spend different op time, by op type.
"""
import argparse
import collections
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.compat import TF_VERSION, tf  # noqa: E402
from crnn_multigpu.ocr.crnn import CRNN  # noqa: E402
from crnn_multigpu.datasets import make_batch  # noqa: E402
from crnn_multigpu.wrapper.devices import cpu_devices, session_config, visible_gpus  # noqa: E402
from crnn_multigpu.wrapper.sharding import split_batch  # noqa: E402
from crnn_multigpu.wrapper.strategies import (ParameterServer, Replicated,  # noqa: E402
                                              SpreadParameterServer)
from crnn_multigpu.wrapper.towers import MultiGpuModel  # noqa: E402
from reports import write_json  # noqa: E402  (scripts/ is on sys.path when run)

N_CPUS = 4
LOW_PRECISIONS = ("mixed_float16", "mixed_bfloat16")
PRECISION_ROWS = {"float32": "wrapper_1", "mixed_float16": "wrapper_1_float16",
                  "mixed_bfloat16": "wrapper_1_bfloat16"}
CHARSET = Charset.default()
USE_GPUS = []  # [True] with --gpus: towers and replicas go on real GPUs
POST_INIT = "benchmark_post_init"  # wrappers' post_init_ops that a configuration must run


def bench_devices(n):
    """The devices of an n-tower configuration: n virtual CPUs, or the first n GPUs (--gpus)."""
    if not USE_GPUS:
        return cpu_devices(n)
    gpus = visible_gpus()
    if len(gpus) < n:
        raise ValueError("--gpus: this configuration needs %d GPU(s), %d visible" % (n, len(gpus)))
    return gpus[:n]


# Placement strategies on 2 towers (on shared RAM none is expected to be faster; the row shows
# that none is slower than MirroredStrategy by more than the noise).
STRATEGY_ROWS = [
    ("ps_packed_2", lambda: ParameterServer(num_packs=4)),
    ("ps_towers_2", lambda: SpreadParameterServer()),
    ("replicated_2", lambda: Replicated()),  # auto: NCCL on GPUs (--gpus), else the ring
    ("replicated_packed_2", lambda: Replicated(num_packs=4)),
]


def synthetic_batch(size, width=100, seed=0):
    """Random light-on-dark 'images' and labels: the step time does not depend on the pixels."""
    rng = np.random.RandomState(seed)
    arrays = [rng.rand(32, width).astype(np.float32) for _ in range(size)]
    texts = ["".join(rng.choice(list(CHARSET.chars), rng.randint(3, 9))) for _ in range(size)]
    return make_batch(arrays, texts, CHARSET, fixed_width=width)


class Config(object):
    """One graph + session + a callable that runs one training step."""

    def __init__(self, name, build):
        self.name, self.graph, self.times = name, tf.Graph(), []
        with self.graph.as_default():
            tf.set_random_seed(0)
            step = build()
            init = tf.global_variables_initializer()
        self.session = tf.Session(graph=self.graph, config=session_config(N_CPUS))
        self.session.run(init)
        self.session.run(self.graph.get_collection(POST_INIT))
        self.step = lambda *trace: step(self.session, *trace)

    def time(self, steps, min_seconds=0.0):
        """One repetition: ``steps`` steps, more if they take under ``min_seconds``."""
        started, done = time.perf_counter(), 0
        while done < steps or time.perf_counter() - started < min_seconds:
            self.step()
            done += 1
        self.times.append((time.perf_counter() - started) / done)

    def trace(self, repeats=3):
        """Trace ``repeats`` steps (RunMetadata); per step on average: {device: (ops, op
        microseconds)}, the IteratorGetNext waits, and a Counter of op microseconds by op type."""
        devices, waits, by_type = collections.defaultdict(lambda: [0, 0]), [], collections.Counter()
        for _ in range(repeats):
            metadata = tf.RunMetadata()
            self.step(tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), metadata)
            for stats in metadata.step_stats.dev_stats:
                for node in stats.node_stats:
                    micros = node.all_end_rel_micros / float(repeats)
                    devices[stats.device][0] += 1.0 / repeats
                    devices[stats.device][1] += micros
                    if node.node_name.split(":")[0].split("/")[-1].startswith("IteratorGetNext"):
                        waits.append(node.all_end_rel_micros)
                    if "/host:" in stats.device:  # TF 1.x repeats the CPU ops there
                        continue
                    label = node.timeline_label.split(" = ")  # "name = OpType(inputs)"
                    by_type[label[1].split("(")[0] if len(label) > 1 else "?"] += micros
        return dict((d, tuple(v)) for d, v in devices.items()), waits, by_type

    @property
    def median(self):
        return float(np.median(self.times))


def plain(batch):
    def build():
        with tf.device(bench_devices(1)[0]):
            model = CRNN()
            with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
                train = tf.train.AdamOptimizer(1e-3).minimize(model.loss)
        feed = model.feed_dict(batch)
        return lambda session, *trace: session.run(train, feed, *trace)
    return build


def wrapper(batch, towers, check_finite=True, strategy=None, precision="float32"):
    """The tower wrapper; ``strategy``: a callable making its placement strategy (default ps)."""
    def build():
        model = MultiGpuModel(CRNN, devices=bench_devices(towers), check_finite=check_finite,
                              strategy=strategy() if strategy else None, precision=precision)
        feed = model.feed_dict(model.split(batch))
        return lambda session, *trace: session.run(model.objective, feed, *trace)
    return build


def mirrored(batch, towers):
    """tf.distribute.MirroredStrategy in v1 graph mode with per-replica placeholders."""
    def build():
        strategy = tf.distribute.MirroredStrategy(
            devices=bench_devices(towers),
            cross_device_ops=None if USE_GPUS else  # GPUs: its default, NCCL all-reduce
            tf.distribute.ReductionToOneDevice(reduce_to_device="/cpu:0"))
        models = []

        def replica_step():
            model = CRNN()
            models.append(model)
            # A v1 optimizer under a strategy SUMS replica gradients: scale to average them.
            loss = model.loss / strategy.num_replicas_in_sync
            with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
                return tf.train.AdamOptimizer(1e-3).minimize(loss)

        with strategy.scope():
            run = getattr(strategy.extended, "call_for_each_replica")
            per_replica = run(replica_step)
            train = strategy.group(per_replica) if hasattr(strategy, "group") \
                else tf.group(strategy.experimental_local_results(per_replica))
        shards = split_batch(batch, towers)
        feed = {}
        for model, shard in zip(models, shards):
            feed.update(model.feed_dict(shard))
        return lambda session, *trace: session.run(train, feed, *trace)
    return build


def feed_free(batch, towers, cached):
    """The tf.data path: the real per-tower pipeline, or constant in-graph tensors (no input work)."""
    def build():
        if cached:
            shards = split_batch(batch, towers)

            def input_fn(index, n_towers):
                shard = shards[index]
                dataset = tf.data.Dataset.from_tensors(
                    {k: getattr(shard, k) for k in ("images", "widths", "labels", "label_lengths")})
                return tf.data.make_one_shot_iterator(dataset.cache().repeat()).get_next()
            batches = None
        else:
            from crnn_multigpu.datasets.steps import ArrayBatches
            input_fn, batches = None, ArrayBatches(batch, len(batch.texts))
        model = MultiGpuModel(CRNN, devices=bench_devices(towers), input_fn=input_fn,
                              batches=batches)
        tf.add_to_collection(POST_INIT, model.post_init_op)  # starts the input
        feed = dict((m.training, True) for m in model.models)
        return lambda session, *trace: session.run(model.objective, feed, *trace)
    return build


def dataset_pipeline(path, batch_size, towers, augment):
    """The tf.data path over a real dataset's images, with training-time augmentation or not."""
    def build():
        from crnn_multigpu.datasets import open_dataset
        from crnn_multigpu.datasets.augment import Degrader
        from crnn_multigpu.datasets.steps import StepBatches
        dataset = open_dataset(path, charset=CHARSET, time_steps=CRNN.time_steps(100))
        degrade = Degrader(augment, reference_height=dataset.height) if augment else None
        source = StepBatches(dataset, CHARSET, batch_size, fixed_width=100, min_batch=towers,
                             augment=degrade)
        model = MultiGpuModel(CRNN, devices=bench_devices(towers), batches=source)
        tf.add_to_collection(POST_INIT, model.post_init_op)  # starts the input
        feed = dict((m.training, True) for m in model.models)
        return lambda session, *trace: session.run(model.objective, feed, *trace)
    return build


class Embedding(object):
    """A bag-of-ids regression over a large table: its gradient is an IndexedSlices."""

    def __init__(self, rows=20000, dim=32):
        self.ids = tf.placeholder(tf.int32, [None, 8])
        self.y = tf.placeholder(tf.float32, [None])
        table = tf.get_variable("table", [rows, dim],
                                initializer=tf.random_uniform_initializer(-0.05, 0.05))
        vectors = tf.reduce_sum(tf.nn.embedding_lookup(table, self.ids), axis=1)
        self.loss = tf.reduce_mean(tf.square(tf.reduce_sum(vectors, axis=1) - self.y))
        self.batch_size = tf.shape(self.ids)[0]

    def feed_dict(self, batch):
        return {self.ids: batch["ids"], self.y: batch["y"]}


def embedding(rows, towers, adam=False):
    def build():
        # Momentum applies sparse updates row by row; v1 Adam decays every row of its
        # slots each step by design, which would measure Adam rather than the wrapper
        # (the full run shows it as embedding_2m_adam).
        optimizer = tf.train.AdamOptimizer(1e-3) if adam else tf.train.MomentumOptimizer(0.1, 0.9)
        model = MultiGpuModel(Embedding, devices=bench_devices(towers), rows=rows,
                              optimizer=optimizer)
        rng = np.random.RandomState(0)
        batch = {"ids": rng.randint(0, 20000, size=(32, 8)).astype(np.int32),
                 "y": rng.randn(32).astype(np.float32)}
        feed = model.feed_dict(model.split(batch))
        return lambda session, *trace: session.run(model.objective, feed, *trace)
    return build


def print_op_differences(wrapper_ops, mirrored_ops, min_micros=1000):
    """Where the traced op time of wrapper_2 and mirrored_2 differs, by op type."""
    print("\nop time by type per step, mean of 3 traced steps (ms): wrapper_2 %.1f, mirrored_2 %.1f"
          % (sum(wrapper_ops.values()) / 1e3, sum(mirrored_ops.values()) / 1e3))
    op_types = set(wrapper_ops) | set(mirrored_ops)
    differences = [(mirrored_ops[t] - wrapper_ops[t], t) for t in op_types]
    for difference, op_type in sorted(differences, reverse=True):
        if abs(difference) >= min_micros:
            print("  %-28s wrapper %8.1f  mirrored %8.1f" % (
                op_type, wrapper_ops[op_type] / 1e3, mirrored_ops[op_type] / 1e3))


def print_precisions(median, batch_size):
    """Steps/s and images/s of one tower of the CRNN in each precision (medians)."""
    rows = [(p, median[name]) for p, name in sorted(PRECISION_ROWS.items()) if name in median]
    if not rows:
        return
    print("\n%-16s %10s %10s   (one tower, batch %d)" % ("precision", "steps/s", "images/s",
                                                          batch_size))
    for precision, seconds in rows:
        print("%-16s %10.2f %10.1f" % (precision, 1.0 / seconds, batch_size / seconds))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (1-2 minutes)")
    parser.add_argument("--reps", type=int, default=None, help="interleaved repetitions")
    parser.add_argument("--steps", type=int, default=None, help="steps timed per repetition")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--profile", action="store_true", help="trace steps: op time and types")
    parser.add_argument("--trace-steps", type=int, default=3, help="traced steps (--profile)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per configuration")
    parser.add_argument("--min-seconds", type=float, default=0.3,
                        help="each configuration's share of a repetition runs at least this "
                             "long, in more steps if needed (default 0.3)")
    parser.add_argument("--gpus", action="store_true",
                        help="put towers and replicas on the visible GPUs instead of virtual CPUs")
    parser.add_argument("--data", metavar="DATASET",
                        help="also time the tf.data path reading this dataset's images, with and "
                             "without training-time augmentation (--augment)")
    parser.add_argument("--augment", type=float, default=0.5,
                        help="augmentation strength for the --data configurations (default 0.5)")
    args = parser.parse_args(argv)
    USE_GPUS[:] = [True] if args.gpus else []
    # Many short repetitions: the shared VM's noise comes in bursts of seconds, and a
    # ratio of two configurations is taken per repetition, seconds apart.
    reps = args.reps or (6 if args.quick else 25)
    steps = args.steps or (2 if args.quick else 4)
    batch = synthetic_batch(args.batch_size)

    builders = [("plain", plain(batch)), ("wrapper_1", wrapper(batch, 1)),
                ("wrapper_2", wrapper(batch, 2)), ("wrapper_4", wrapper(batch, 4)),
                ("mirrored_2", mirrored(batch, 2)), ("feed_dict_2", wrapper(batch, 2)),
                ("pipeline_2", feed_free(batch, 2, cached=False)),
                ("cached_2", feed_free(batch, 2, cached=True)),
                ("embedding_20k", embedding(20000, 2)), ("embedding_2m", embedding(2000000, 2))]
    # One row per placement strategy (wrapper_2 is the default, ParameterServer()).
    builders += [(name, wrapper(batch, 2, strategy=make)) for name, make in STRATEGY_ROWS]
    # One tower in each precision: wrapper_1 is float32. On TF 1.15's CPU kernels, measured
    # here at batch 8: float32 0.16 s per step, float16 31 s per step (emulated), bfloat16
    # 0.30 s but 65 s for its first step; too slow for the benchmark, so TF 2 only.
    if TF_VERSION >= (2, 0) or USE_GPUS:
        builders += [(PRECISION_ROWS[p], wrapper(batch, 1, precision=p)) for p in LOW_PRECISIONS]
    else:
        sys.stderr.write("not timing float16/bfloat16: TF %s's CPU kernels for them take "
                         "tens of seconds per step\n" % ".".join(map(str, TF_VERSION)))
    if args.data:
        builders += [("dataset_2", dataset_pipeline(args.data, args.batch_size, 2, 0.0)),
                     ("dataset_augment_2", dataset_pipeline(args.data, args.batch_size, 2,
                                                            args.augment))]
    if not args.quick:  # diagnostics: what the finite check costs, 4 replicas, Adam's slots
        builders += [("wrapper_1_unchecked", wrapper(batch, 1, check_finite=False)),
                     ("mirrored_4", mirrored(batch, 4)),
                     ("embedding_20k_adam", embedding(20000, 2, adam=True)),
                     ("embedding_2m_adam", embedding(2000000, 2, adam=True))]
    configs = []
    for name, build in builders:
        sys.stderr.write("building %s\n" % name)
        try:
            configs.append(Config(name, build))
        except Exception as error:  # a peer that does not build here is reported, not fatal
            sys.stderr.write("  %s could not be built: %s\n" % (name, str(error).splitlines()[0]))
    if not configs:
        sys.stderr.write("error: no configuration could be built (see above)\n")
        return 2
    for config in configs:
        for _ in range(args.warmup):  # graph optimisation, allocator, thread pools
            config.step()
    for rep in range(reps):
        sys.stderr.write("repetition %d/%d\n" % (rep + 1, reps))
        shift = rep % len(configs)  # A B C, B C A, ...: no configuration always runs first
        for config in configs[shift:] + configs[:shift]:
            config.time(steps, min_seconds=args.min_seconds)
    median = dict((c.name, c.median) for c in configs)
    traces = collections.OrderedDict((c.name, c.trace(args.trace_steps)) for c in configs) \
        if args.profile else {}

    times = dict((c.name, np.array(c.times)) for c in configs)

    def ratio(a, b):
        """Median of the per-repetition ratios: within a repetition a and b ran seconds
        apart, so slow drift of a shared machine cancels better than in a ratio of medians."""
        if a not in times or b not in times:
            return None
        return float(np.median(times[a] / times[b]))

    ratios = {
        "wrapper1_vs_plain": ratio("wrapper_1", "plain"),
        "towers2_vs_towers1": ratio("wrapper_2", "wrapper_1"),
        "towers4_vs_towers1": ratio("wrapper_4", "wrapper_1"),
        "wrapper_vs_mirrored": ratio("wrapper_2", "mirrored_2"),
        "pipeline_vs_feed_dict": ratio("pipeline_2", "feed_dict_2"),
        # feed_dict_2 and wrapper_2 are the same configuration: how far apart they land
        # is this run's noise floor, against which every other ratio should be read.
        "identical_configs": ratio("feed_dict_2", "wrapper_2"),
        "input_wait_fraction": (max(0.0, 1 - 1 / ratio("pipeline_2", "cached_2"))
                                if "cached_2" in median and "pipeline_2" in median else None),
        "embedding_2m_vs_20k": ratio("embedding_2m", "embedding_20k"),
        # Training-time augmentation: its cost per step, and the input's share of a step
        # against constant in-graph tensors (what is left when input costs nothing).
        "augment_vs_no_augment": ratio("dataset_augment_2", "dataset_2"),
        "input_wait_fraction_dataset": (max(0.0, 1 - 1 / ratio("dataset_2", "cached_2"))
                                        if "dataset_2" in times else None),
        "input_wait_fraction_augment": (max(0.0, 1 - 1 / ratio("dataset_augment_2", "cached_2"))
                                        if "dataset_augment_2" in times else None),
        "wrapper1_unchecked_vs_plain": ratio("wrapper_1_unchecked", "plain"),
        # Each placement strategy against MirroredStrategy on the same 2 towers.
        "ps_packed_vs_mirrored": ratio("ps_packed_2", "mirrored_2"),
        "ps_towers_vs_mirrored": ratio("ps_towers_2", "mirrored_2"),
        "replicated_vs_mirrored": ratio("replicated_2", "mirrored_2"),
        "replicated_packed_vs_mirrored": ratio("replicated_packed_2", "mirrored_2"),
        # Step time in reduced precision over float32's (below 1: faster).
        "float16_vs_float32": ratio("wrapper_1_float16", "wrapper_1"),
        "bfloat16_vs_float32": ratio("wrapper_1_bfloat16", "wrapper_1"),
        "wrapper4_vs_mirrored4": ratio("wrapper_4", "mirrored_4"),
        "embedding_2m_vs_20k_adam": ratio("embedding_2m_adam", "embedding_20k_adam"),
    }
    if "pipeline_2" in traces:
        # Direct measure: the longest IteratorGetNext of the towers in a traced step.
        waits = traces["pipeline_2"][1]
        ratios["iterator_wait_fraction_traced"] = (max(waits) / 1e6 / median["pipeline_2"]
                                                   if waits else None)
    ratios = dict((k, v) for k, v in ratios.items() if v is not None)
    print("%-16s %12s %12s" % ("configuration", "step (ms)", "vs plain"))
    for config in configs:
        vs_plain = ratio(config.name, "plain")
        print("%-16s %12.1f %12s" % (config.name, 1000 * config.median,
                                     "%.3f" % vs_plain if vs_plain else "-"))
    print_precisions(median, args.batch_size)
    print("")
    for key, value in sorted(ratios.items()):
        print("%-30s %.3f" % (key, value))
    for name, (devices, waits, _) in traces.items():
        print("trace %-20s %s%s" % (name, "  ".join(
            "%s: %d ops %.1f ms" % (d.split("device:")[-1], n, us / 1000.0)
            for d, (n, us) in sorted(devices.items())),
            "  IteratorGetNext %s ms" % ", ".join("%.2f" % (w / 1000.0) for w in waits)
            if waits else ""))
    if "wrapper_2" in traces and "mirrored_2" in traces:
        print_op_differences(traces["wrapper_2"][2], traces["mirrored_2"][2])
    if args.json:
        report = {"ratios": ratios, "step_seconds": median,
                  "step_seconds_all": dict((c.name, c.times) for c in configs),
                  "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                              "tensorflow": ".".join(map(str, TF_VERSION)),
                              "processor": platform.processor() or platform.machine()},
                  "settings": {"reps": reps, "steps": steps, "batch_size": args.batch_size,
                               "virtual_cpus": N_CPUS, "model": "CRNN() defaults"}}
        write_json(args.json, report)
    for config in configs:
        config.session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
