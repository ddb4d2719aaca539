"""Predict multi-GPU scaling from the training graph: bytes per link, FLOPs, published hardware.

For 1/2/4/8 towers on ``/gpu:0`` ... ``/gpu:7`` (graph only: no session, no GPU needed) it reads
from the graph what one step sends between devices and computes (``scripts/transfers.py``),
routes the traffic over a machine's links, and predicts::

    step time = compute (FLOPs of one tower / GPU FLOP/s) + communication (busiest link)

with no overlap between the two (a bound: real runs overlap part of the transfers with the
backward pass, so they scale at least this well when the other assumptions hold). Scaling
efficiency at N GPUs is T(1) / T(N) at a fixed batch per GPU, as tf_cnn_benchmarks reports it.

It first checks itself against tf_cnn_benchmarks' published figures (VGG16, ResNet-50 and
AlexNet built from the project's layers, ``reference_cnns.py``), each prediction beside the
perfect-scaling baseline (speedup N at N GPUs: the step takes as long as on one GPU), then
prints the table for the paper-size CRNN. Method, sources and results: docs/benchmarks.md.
Usage::

    python scripts/transfer_model.py            # about 4 minutes on 2 cores
    python scripts/transfer_model.py --quick    # without ResNet-50 (its 8-tower graphs are big)
"""
import argparse
import collections
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import transfers  # noqa: E402  (beside this script: Python puts its folder on sys.path)
from crnn_multigpu.compat import tf  # noqa: E402
from crnn_multigpu.ocr.crnn import CRNN  # noqa: E402
from crnn_multigpu.wrapper.strategies import (Replicated,  # noqa: E402
                                              SpreadParameterServer)
from crnn_multigpu.wrapper.towers import MultiGpuModel  # noqa: E402
from hardware import PLATFORMS, VALIDATION_RUNS  # noqa: E402
from reference_cnns import VGG16, AlexNet, ResNet50  # noqa: E402

TOWER_COUNTS = (1, 2, 4, 8)
HOST = "host"
TOLERANCE = 0.15  # a prediction within 15 % of the published speedup counts as a hit
# rebuild(**wrapper_kwargs) builds and analyses the same model again with other wrapper
# arguments (e.g. strategy=...): the other placements of the same model.
Analysis = collections.namedtuple("Analysis", "flows flops_per_gpu gradient_bytes rebuild")


# -- reading the graph --------------------------------------------------------------------

def _endpoint(device):
    spec = tf.DeviceSpec.from_string(device)
    return spec.device_index if spec.device_type == "GPU" else HOST


def graph_flows(fetches):
    """The ``[(source, destination, bytes)]`` of one step; endpoints are 'host' or GPU indices."""
    links = transfers.bytes_by_link(transfers.cross_device_transfers(fetches))
    return [(_endpoint(s), _endpoint(d), b) for (s, d), b in sorted(links.items())]


def lstm_flops(op):
    """FLOPs of a fused LSTM (``BlockLSTM``) from its static shapes: the gate matrix product.

    x [T, B, C] with weights [C + units, 4 units]: 2 T B (C + units) 4 units; the gradient
    (``BlockLSTMGrad``) does two such products (inputs and weights). Element-wise gate arithmetic
    (about 1 % of it at 256 units) is left out.
    """
    steps, batch, _ = op.inputs[1].shape.as_list()
    rows, cols = op.inputs[4].shape.as_list()
    product = 2 * steps * batch * rows * cols
    return 2 * product if "Grad" in op.type else product


LSTM_COUNTS = {"BlockLSTM": lstm_flops, "BlockLSTMV2": lstm_flops,
               "BlockLSTMGrad": lstm_flops, "BlockLSTMGradV2": lstm_flops}


def static_copy(graph, shapes):
    """A copy of ``graph`` whose named placeholders are replaced by tensors of static shape.

    The profiler counts FLOPs only where shapes are static; re-importing the graph with
    ``input_map`` makes TensorFlow infer every shape again from the given ones. Devices and
    colocation are kept. ``shapes`` maps a tensor name to ``(shape, dtype)``. The graph must
    be built with control flow v1 (``main`` switches v2 off): a v2 ``If`` op keeps the output
    shapes it was built with, so a ``tf.cond`` (batch norm's) would hide them from there on.
    """
    copy = tf.Graph()
    with copy.as_default():
        with tf.name_scope("static_inputs"):
            inputs = {name: tf.zeros(shape, dtype) for name, (shape, dtype) in shapes.items()}
        tf.import_graph_def(graph.as_graph_def(), input_map=inputs, name="")
    return copy


def analyse(wrapper, static_shapes=None, rebuild=None):
    """Flows, FLOPs of the busiest GPU and gradient bytes of one step of ``wrapper``."""
    graph, name = wrapper.objective.graph, wrapper.objective.name
    if static_shapes:
        graph = static_copy(graph, static_shapes)
    objective = graph.get_operation_by_name(name)
    flops, _ = transfers.float_ops_by_device(objective, LSTM_COUNTS)
    gpu_flops = max(f for device, f in flops.items()
                    if device != transfers.UNPLACED and _endpoint(device) != HOST)
    gradient_bytes = [v.shape.num_elements() * v.dtype.base_dtype.size
                      for _, v in wrapper.grads_and_vars]
    return Analysis(graph_flows(objective), gpu_flops, gradient_bytes, rebuild)


def build(model_cls, n_gpus, static_shapes=None, **kwargs):
    """Build the training graph of ``n_gpus`` towers of ``model_cls`` (no session) and analyse it.

    ``kwargs`` go to ``MultiGpuModel`` (which passes those it does not know to the model).
    """
    def rebuild(**extra):
        return build(model_cls, n_gpus, static_shapes, **dict(kwargs, **extra))

    with tf.Graph().as_default():
        wrapper = MultiGpuModel(model_cls, devices=["/gpu:%d" % i for i in range(n_gpus)],
                                optimizer=tf.train.GradientDescentOptimizer(0.1), **kwargs)
        shapes = static_shapes(wrapper) if static_shapes else None
        return analyse(wrapper, shapes, rebuild)


# -- one function per placement ---------------------------------------------------------
# Each returns the step's flows [(source, destination, bytes)], read from the graph built with
# that placement strategy, except NCCL's: its ring lives inside one op per GPU.

def ps_host(analysis, n_gpus):
    """The default: variables on the host CPU; every tower reads them and sends gradients."""
    return analysis.flows


def ps_towers(analysis, n_gpus):
    """One copy of each variable on one GPU, spread by bytes; each gradient is averaged on its
    variable's GPU, so tower i reads (and sends gradients for) the variables other GPUs hold."""
    return analysis.rebuild(strategy=SpreadParameterServer()).flows


def replicated_ring(analysis, n_gpus):
    """One copy per GPU; gradients summed by the ring all-reduce built from plain TF ops."""
    return analysis.rebuild(strategy=Replicated(all_reduce="ring")).flows


def replicated_nccl(analysis, n_gpus):
    """One copy per GPU; NCCL's ring all-reduce: each GPU sends 2 (N - 1) / N of the gradient
    bytes to its ring neighbour per step. NCCL is one op per GPU, so the graph shows no edges:
    this one is modelled (the same bytes the plain-op ring moves, on NVLink where there is one)."""
    if n_gpus == 1:
        return []
    per_gpu = 2.0 * (n_gpus - 1) / n_gpus * sum(analysis.gradient_bytes)
    return [(i, (i + 1) % n_gpus, per_gpu) for i in range(n_gpus)]


def replicated_copy(analysis, n_gpus):
    """tf_cnn_benchmarks' replicated mode without NCCL (2017): gradient k is summed on GPU
    k mod N and the sum is copied back to every other GPU, whose copy applies it. Not a
    placement of this wrapper: it is modelled only to check the model against that page."""
    flows = []
    for k, nbytes in enumerate(analysis.gradient_bytes):
        holder = k % n_gpus
        for gpu in range(n_gpus):
            if gpu != holder:
                flows += [(gpu, holder, nbytes), (holder, gpu, nbytes)]
    return flows


# key: (label in the tables, traffic function); [graph]: counted in the graph, [model]: analytic.
STRATEGIES = collections.OrderedDict([
    ("ps_host", ("ParameterServer() host CPU [graph]", ps_host)),
    ("ps_towers", ("SpreadParameterServer() [graph]", ps_towers)),
    ("replicated_ring", ("Replicated('ring') [graph]", replicated_ring)),
    ("replicated", ("Replicated('nccl') [model]", replicated_nccl)),
])
# Traffic of published runs only (not in the CRNN table).
PUBLISHED_ONLY = {"replicated_copy": ("tf_cnn_benchmarks replicated, no NCCL [model]",
                                      replicated_copy)}


# -- the machine ---------------------------------------------------------------------------

def communication_seconds(flows, platform):
    """Time of the busiest link direction when every flow streams at once over its route.

    Host traffic goes over the GPU's PCIe link and its switch's uplink (shared by
    ``gpus_per_uplink`` GPUs). GPU-GPU traffic goes over NVLink when the platform has it and
    the pair is linked (all of a GPU's links, as NCCL's parallel rings use them, unless the
    platform says less), else over PCIe through the switches.
    """
    load = collections.Counter()
    uplink = lambda gpu: ("uplink", gpu // platform.gpus_per_uplink)  # noqa: E731
    for source, destination, nbytes in flows:
        if HOST in (source, destination):
            gpu = destination if source == HOST else source
            way = "down" if source == HOST else "up"
            load[uplink(gpu) + (way,)] += nbytes
            load[("pcie", gpu, way)] += nbytes
        elif platform.nvlink and (platform.nvlink_pairs is None
                                  or frozenset((source, destination)) in platform.nvlink_pairs):
            load[("nvlink", source, "out")] += nbytes
            load[("nvlink", destination, "in")] += nbytes
        else:
            load[("pcie", source, "up")] += nbytes
            load[("pcie", destination, "down")] += nbytes
            if uplink(source) != uplink(destination):
                load[uplink(source) + ("up",)] += nbytes
                load[uplink(destination) + ("down",)] += nbytes
    if not load:
        return 0.0
    return max(nbytes / (platform.nvlink if key[0] == "nvlink" else platform.pcie)
               for key, nbytes in load.items())


_FLOWS = {}


def flows_of(strategy, analysis, n_gpus):
    """``strategy(analysis, n_gpus)``, computed once (a graph-read strategy rebuilds a graph)."""
    key = (strategy, id(analysis))
    if key not in _FLOWS:
        _FLOWS[key] = (analysis, strategy(analysis, n_gpus))  # the analysis keeps its id unique
    return _FLOWS[key][1]


def predict(analyses, strategy, platform, flops_per_second=None):
    """``{n: (step seconds, compute seconds)}`` for each tower count analysed."""
    rate = flops_per_second or platform.gpu.flops
    return {n: (a.flops_per_gpu / rate + communication_seconds(flows_of(strategy, a, n), platform),
                a.flops_per_gpu / rate) for n, a in analyses.items()}


# -- the two reports -------------------------------------------------------------------------

Check = collections.namedtuple("Check", "run published model_a model_b baseline")


def check_run(run, comm_1, comm_8, modelled_1, modelled_8):
    """One published run's 8-GPU speedups: published, the model's two predictions and the
    perfect-scaling baseline.

    ``comm_1``, ``comm_8``: predicted communication seconds per step on 1 and 8 GPUs;
    ``modelled_1``, ``modelled_8``: whole predicted steps (compute from counted FLOPs).
    (a) takes compute from the published 1-GPU step minus its predicted transfers, so only the
    communication is predicted; (b) predicts both; the baseline says the 8-GPU step takes the
    1-GPU step's time, i.e. 8x.
    """
    one_step = run.batch / run.images_1
    compute = one_step - comm_1
    return Check(run, run.images_8 / run.images_1, 8 * one_step / (compute + comm_8),
                 8 * modelled_1 / modelled_8, 8.0)


def error(predicted, published):
    """Relative error of a predicted speedup (or step time) against the published one."""
    return predicted / published - 1


def hits(checks, field):
    """How many checks the predictor ``field`` ('model_a', 'model_b', 'baseline') puts
    within TOLERANCE of the published speedup."""
    return sum(abs(error(getattr(c, field), c.published)) <= TOLERANCE for c in checks)


def validate(models):
    """Predicted 8-GPU speedups beside tf_cnn_benchmarks' published ones and beside perfect
    scaling; returns the Checks."""
    print("\n== Validation against tf_cnn_benchmarks (published images/s, 1 and 8 GPUs) ==")
    print("compute from (a) the published 1-GPU step minus its predicted transfers, "
          "(b) counted FLOPs at the GPU's peak fp32 rate; perfect scaling: 8x")
    print("%-42s %7s %7s %6s %6s %7s %6s %7s %7s %6s" % (
        "run", "pub 1", "pub 8", "pub x", "(a) x", "err a", "(b) x", "err b", "1-GPU b",
        "perf."))
    traffic = dict(STRATEGIES, **PUBLISHED_ONLY)
    checks = []
    for run in VALIDATION_RUNS:
        key = (run.model, run.batch)
        if key not in models:
            continue
        analyses, strategy = models[key], traffic[run.strategy][1]
        platform = PLATFORMS[run.platform]
        comm = {n: communication_seconds(flows_of(strategy, analyses[n], n), platform)
                for n in (1, 8)}
        modelled = predict({n: analyses[n] for n in (1, 8)}, strategy, platform)
        check = check_run(run, comm[1], comm[8], modelled[1][0], modelled[8][0])
        checks.append(check)
        print("%-42s %7.1f %7.0f %6.2f %6.2f %+6.1f%% %6.2f %+6.1f%% %6.0f/s %+5.1f%%" % (
            run.label, run.images_1, run.images_8, check.published, check.model_a,
            100 * error(check.model_a, check.published), check.model_b,
            100 * error(check.model_b, check.published), run.batch / modelled[1][0],
            100 * error(check.baseline, check.published)))
    print("within %d %% of the published speedup, of %d runs: model (a) %d, model (b) %d, "
          "perfect scaling %d" % (100 * TOLERANCE, len(checks), hits(checks, "model_a"),
                                  hits(checks, "model_b"), hits(checks, "baseline")))
    for field, name in (("model_a", "model (a)"), ("model_b", "model (b)"),
                        ("baseline", "perfect scaling")):
        errors = sorted(abs(error(getattr(c, field), c.published)) for c in checks)
        print("  %-16s median |error| %4.1f %%, largest %4.1f %%"
              % (name, 100 * errors[len(errors) // 2], 100 * errors[-1]))
    return checks


def crnn_table(analyses, batch, utilization):
    """Predicted scaling of the paper-size CRNN per platform and strategy."""
    print("\n== CRNN paper size (%d per GPU, 32x100 images): predicted scaling efficiency =="
          % batch)
    print("efficiency T(1)/T(N) at the GPU's peak fp32 rate (and at %d %% of it, in brackets); "
          "8-GPU step and images/s at peak" % round(100 * utilization))
    print("'8 local': 8-GPU images/s over 8 x those of one GPU with its variables on it (no "
          "transfers at all); perfect scaling would say 100 % in every cell")
    print("%-22s %-36s %14s %14s %14s %8s %9s %8s" % ("platform", "strategy", "2", "4", "8",
                                                      "8 local", "8: ms", "img/s"))
    verdicts = collections.defaultdict(list)
    for platform in (p for p in PLATFORMS.values() if p.in_table):
        for name, strategy in STRATEGIES.values():
            peak = predict(analyses, strategy, platform)
            slow = predict(analyses, strategy, platform, platform.gpu.flops * utilization)
            cells = ["%5.1f (%5.1f)" % (100 * peak[1][0] / peak[n][0],
                                        100 * slow[1][0] / slow[n][0]) for n in (2, 4, 8)]
            local = peak[1][1] / peak[8][0]  # against the compute-only step of one GPU
            print("%-22s %-36s %14s %14s %14s %7.1f%% %9.2f %8.0f" % (
                platform.name, name, cells[0], cells[1], cells[2], 100 * local,
                1000 * peak[8][0], 8 * batch / peak[8][0]))
            # Transfers do not grow with the batch, compute does: 95 % needs compute >= 19 x comm.
            needed = batch * 19 * (peak[8][0] - peak[8][1]) / peak[8][1]
            verdicts[platform.name].append((local, name, needed))
    print("\n>= 95 % at 8 GPUs against one local GPU (at the peak rate, the harder case):")
    for platform in (p for p in PLATFORMS.values() if p.in_table):
        passed = [name for local, name, _ in verdicts[platform.name] if local >= 0.95]
        best = max(verdicts[platform.name])
        fallback = ("none; best %s at %.1f %%, which needs >= %d examples per GPU for 95 %%"
                    % (best[1], 100 * best[0], best[2] + 1))
        print("  %-22s %s" % (platform.name, ", ".join(passed) or fallback))


def crnn_static_shapes(batch, width=100, label_length=10):
    """Static input shapes of each CRNN tower (placeholders are [None, 32, None, 1] otherwise)."""
    def shapes(wrapper):
        result = {}
        for model in wrapper.models:
            result[model.images.name] = ([batch, 32, width, 1], tf.float32)
            result[model.widths.name] = ([batch], tf.int32)
            result[model.labels.name] = ([batch, label_length], tf.int32)
            result[model.label_lengths.name] = ([batch], tf.int32)
        return result
    return shapes


def timed(label, function):
    start = time.time()
    result = function()
    print("  built %-28s %6.1f s" % (label, time.time() - start), flush=True)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip ResNet-50 (~2 of the minutes)")
    parser.add_argument("--crnn-batch", type=int, default=64, help="CRNN examples per GPU")
    parser.add_argument("--utilization", type=float, default=0.5,
                        help="second compute rate, as a fraction of peak (default 0.5: ResNet-50 "
                             "on P100 in tf_cnn_benchmarks reached 48 %%)")
    args = parser.parse_args(argv)
    tf.disable_control_flow_v2()  # static_copy re-infers shapes through Switch/Merge only
    print("Building training graphs (graph only, towers on /gpu:0.., variables on the host CPU)")
    models = {}
    cnns = [(VGG16, 64), (VGG16, 32), (AlexNet, 512)] + (
        [] if args.quick else [(ResNet50, 64), (ResNet50, 32)])
    for cls, batch in cnns:
        models[(cls.__name__, batch)] = {
            n: timed("%s batch %d x %d" % (cls.__name__, batch, n),
                     lambda: build(cls, n, batch=batch))
            for n in (1, 8)}
    validate(models)
    crnn = {n: timed("CRNN paper x %d" % n,
                     lambda: build(CRNN, n, crnn_static_shapes(args.crnn_batch), **CRNN.PAPER))
            for n in TOWER_COUNTS}
    one = crnn[1]
    print("CRNN paper: %.1f M parameters (%.1f MB of gradients), %.1f GFLOP per example per step"
          % (sum(one.gradient_bytes) / 4e6, sum(one.gradient_bytes) / 1e6,
             one.flops_per_gpu / args.crnn_batch / 1e9))
    crnn_table(crnn, args.crnn_batch, args.utilization)
    return 0


if __name__ == "__main__":
    sys.exit(main())
