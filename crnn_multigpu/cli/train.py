"""crnn-train: train a CRNN on every visible GPU (or N virtual CPU towers) from a dataset.

Argument parsing and wiring only: the graph comes from ``MultiGpuModel`` and the model class
(``CRNN``, or any class ``--model-class`` names: ``ocr.model_class`` says what it needs), the
loop from ``training.Trainer``, the data from ``datasets``.
"""
import logging
import os
import sys

from crnn_multigpu.datasets.language import get_language, language_names
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.runtime.checkpoints import (ensure_writable, latest_checkpoint,
                                               run_folder_lock)
from crnn_multigpu.wrapper import strategies
from crnn_multigpu.cli.run_folder import check_run_dir, run_config, warm_start_checkpoint
from crnn_multigpu.cli.common import (ArgumentParser, add_model_class_argument,
                                      chosen_model_class, console_entry, float_range,
                                      int_range, non_negative_float, non_negative_int, output_folder,
                                      positive_float, positive_int, print_figures,
                                      report_unreadable, setup_logging)
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr import model_class
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.datasets import open_dataset
from crnn_multigpu.datasets.augment import training_augmentation
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.wrapper.devices import close_session
from crnn_multigpu.ocr.validation import ValidationReader
from crnn_multigpu.wrapper.feeding import FedInput, StepInput
from crnn_multigpu.wrapper.precision import NAMES as PRECISIONS
from crnn_multigpu.wrapper.towers import MultiGpuModel
from crnn_multigpu.runtime.placement import resolve_placement
from crnn_multigpu.runtime.schedule import StepDecay
from crnn_multigpu.runtime.training import StopRequested, Trainer

log = logging.getLogger("crnn_multigpu.train")

# The default model class's sizes (--model), as scripts read them.
MODEL_SIZES = CRNN.SIZES


# The widest fixed --width: at the images' height of 32 px, 4,096 px is a line of some 250
# characters (1,024 CTC frames of CRNN), wider than any printed line (--page's widest on the
# manual pages at that height: 1,282 px). Every step holds --batch-size images this wide, so
# memory grows with it: --width 1000000000 would ask for 128 GB for a batch of 32.
MAX_WIDTH = 4096

# Windows of 32 batches: nearly uniform widths per batch, while every batch still mixes
# samples from 1,024 (at batch 32) randomly drawn ones.
DEFAULT_BUCKET = 32


def build_parser():
    """crnn-train's arguments."""
    parser = ArgumentParser(prog="crnn-train", description=__doc__.splitlines()[0])
    add_data_group(parser.add_argument_group("data"))
    add_model_group(parser.add_argument_group("model"))
    add_placement_group(parser.add_argument_group("towers and where the variables live"))
    add_cluster_group(parser.add_argument_group("several machines"))
    add_schedule_group(parser.add_argument_group("optimisation"))
    add_run_group(parser.add_argument_group("checkpoints, validation and progress"))
    return parser


def add_data_group(data):
    """The data group: --train, --val, --out, the charset and language, widths, augmentation
    and input."""
    data.add_argument("--train", required=True, help="training set (folder with labels.txt, or LMDB)")
    data.add_argument("--val", help="validation set, evaluated every --validate-every steps and at the end")
    data.add_argument("--out", required=True, type=output_folder,
                      help="run directory: config.json, checkpoints/, logs/")
    data.add_argument("--charset", help="charset file, one character per line (default: the "
                                        "--language's, else 0-9a-z)")
    data.add_argument("--language", choices=language_names(),
                      help="the language the model reads (crnn_multigpu/datasets/languages/): "
                           "its charset unless --charset, and how the reading tools join and "
                           "score its text; recorded in config.json")
    data.add_argument("--width", type=int_range(0, MAX_WIDTH), default=100,
                      help="fixed image width (a multiple of the model class's DOWNSAMPLE: 4 "
                           "for CRNN); 0 = keep aspect ratio, pad per batch")
    data.add_argument("--bucket", type=non_negative_int, default=None, metavar="N",
                      help="with --width 0: sort each window of N batches by image width so "
                           "batches are not mostly padding (default 32; 0 = off)")
    data.add_argument("--augment", type=float_range(0.0, 1.0, noun="a strength"),
                      default=0.0, metavar="STRENGTH",
                      help="degrade training images on the fly (blur, resampling, contrast "
                           "loss, noise, JPEG) at this strength in [0, 1]; 0 = off (default). "
                           "Drawn from --seed and the step, so --resume continues exactly")
    data.add_argument("--reframe", type=float_range(0.0, 1.0, noun="a probability"),
                      default=0.0, metavar="P",
                      help="with probability P, move a training line's frame: its ink made to "
                           "span 35-95 %% of the height, side margins of up to 0.6 heights, so "
                           "the model reads crops however loosely they are cut; 0 = off "
                           "(default). Before --augment's degradations, drawn like them")
    data.add_argument("--stroke", type=float_range(0.0, 1.0, noun="a probability"),
                      default=0.0, metavar="P",
                      help="with probability P, make a training image's strokes bolder (1/4 or "
                           "1/2 pixel a side at the model's height) or lighter (1/4), so the "
                           "model reads type designs of other weights; 0 = off (default). After "
                           "--reframe, before --augment, drawn like them")
    data.add_argument("--input", choices=["dataset", "feed"], default=None,
                      help="dataset (default): a tf.data pipeline per tower decodes batches "
                           "ahead and prefetches them onto the tower; feed: feed_dict from a "
                           "Python thread (the default with --cluster)")


def add_model_group(model):
    """The model group: the model class, its size, precision, XLA and synchronised batch norm."""
    add_model_class_argument(model, training=True)
    model.add_argument("--model", metavar="SIZE",
                       help="one of the model class's SIZES; CRNN's: small (0.5 M parameters, "
                            "fast on CPU, default), medium (2.1 M), paper (8.2 M, Shi et al. "
                            "2015 widths), wide (for charsets of thousands of classes: small with a "
                            "twice as wide top; 2.4 M at 6,900 classes) or tiny (smoke tests)")
    model.add_argument("--precision", choices=PRECISIONS, default="float32",
                       help="what the towers compute in; variables and checkpoints stay float32 "
                            "(mixed_float16 adds dynamic loss scaling; bfloat16 is fast on CPUs "
                            "with AVX512_BF16/AMX)")
    model.add_argument("--xla", action="store_true",
                       help="compile each tower with XLA (one CPU tower, or GPU towers; each new "
                            "batch shape compiles anew, so use a fixed --width). One CPU tower, "
                            "measured here: a 22 %% faster step on TF 1.15, 27 %% slower on TF 2.x "
                            "with oneDNN")
    model.add_argument("--sync-bn", action="store_true",
                       help="with several towers: batch norm uses the moments of the whole global "
                            "batch instead of each tower's shard (what one tower would compute)")


def add_placement_group(placement):
    """The placement group: how many towers, and where the variables live."""
    placement.add_argument("--towers", type=positive_int, default=None,
                           help="towers: first N GPUs; without GPUs, N virtual CPU devices (default: "
                                "all GPUs, or 1 CPU tower)")
    placement.add_argument("--strategy", choices=sorted(strategies.STRATEGIES), default="ps",
                           help="where the variables live (default ps): " + "; ".join(
                               "%s: %s" % (name, strategies.summary(cls))
                               for name, cls in sorted(strategies.STRATEGIES.items())))
    placement.add_argument("--all-reduce", choices=strategies.ALL_REDUCE, default=None,
                           help="with --strategy replicated: nccl (GPUs), ring (any device), or "
                                "auto (default: nccl when every tower is a GPU)")
    placement.add_argument("--num-packs", type=non_negative_int, default=0, metavar="N",
                           help="concatenate the gradients into at most N buffers before they "
                                "cross devices (0: off, default)")


def add_cluster_group(cluster):
    """The cluster group: training over several machines."""
    cluster.add_argument("--cluster", help="cluster JSON ({'worker': [...], 'ps': [...]}): towers on "
                                           "every worker, this process is the chief client")
    cluster.add_argument("--connect-timeout", type=non_negative_float, default=60.0,
                         help="with --cluster: seconds to wait for every task to accept "
                              "connections before giving up (default 60)")
    cluster.add_argument("--step-timeout", type=positive_float, default=120.0, metavar="SECONDS",
                         help="with --cluster: a step (or save, or validation batch) that takes "
                              "longer ends training with an error naming the tasks that stopped "
                              "answering, the newest checkpoint kept (default 120)")
    cluster.add_argument("--gpus-per-task", type=non_negative_int, default=0,
                         help="with --cluster: towers on each worker's first N GPUs (0: its CPU)")


def add_schedule_group(schedule):
    """The schedule group: steps, batches and the optimiser."""
    schedule.add_argument("--steps", type=positive_int,
                          default=3000, help="train until this global step")
    schedule.add_argument("--stop-at", type=positive_int, default=None,
                          help="stop with a checkpoint at this global step, keeping the schedule of "
                               "--steps (train in slices; continue later with --resume)")
    schedule.add_argument("--batch-size", type=positive_int,
                          default=32, help="global batch, split over towers")
    schedule.add_argument("--accumulate", type=positive_int, default=1, metavar="K",
                          help="micro-batches (of --batch-size each) per optimizer step: the step "
                               "takes the gradient of K x --batch-size examples (default 1)")
    schedule.add_argument("--lr", type=positive_float, default=1e-3,
                          help="Adam learning rate (%s)" % StepDecay.describe().replace("%", "%%"))
    schedule.add_argument("--clip-norm", type=non_negative_float,
                          default=5.0, help="gradient clipping (0: off)")
    schedule.add_argument("--seed", type=int, default=0)
    schedule.add_argument("--on-nonfinite", choices=["stop", "skip"], default="stop",
                          help="NaN/Inf loss: stop (default) or skip the batch")


def add_run_group(run):
    """The run group: checkpoints, resuming, validation and progress."""
    run.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    run.add_argument("--allow-changed-settings", action="store_true",
                     help="with --resume: train on with another --seed, --batch-size, --lr, "
                          "--augment, --sync-bn, --train or --language than the run's (refused "
                          "otherwise); config.json keeps each part's settings under \"parts\"")
    run.add_argument("--init-from", metavar="RUN",
                     help="start this run from the weights of another: a run directory, a "
                          "shipped model (models/text, models/words) or a checkpoint prefix; "
                          "the optimizer and the step start afresh (fine-tuning on your data)")
    run.add_argument("--checkpoint-every", type=non_negative_int, default=500,
                     help="steps between checkpoints (0: only at the end)")
    run.add_argument("--validate-every", type=non_negative_int, default=500,
                     help="steps between validations (0: only at the end)")
    run.add_argument("--validate-max", type=non_negative_int, default=1000,
                     help="validation images used during training (0: all; the final "
                          "evaluation uses all)")
    run.add_argument("--log-every", type=non_negative_int, default=50,
                     help="steps between progress lines (0: none)")
    run.add_argument("--verbose", action="store_true")


def placement_of(args):
    """The towers' ``runtime.placement.Placement`` of --towers, or of --cluster (whose tasks
    are then waited for, up to --connect-timeout)."""
    if not args.cluster:
        return resolve_placement(args.towers)
    from crnn_multigpu.runtime import cluster
    spec = cluster.load_cluster(args.cluster)
    placement = resolve_placement(args.towers, spec, args.gpus_per_task)
    cluster.wait_for_tasks(spec, args.connect_timeout, log=log.info)
    return placement


def make_strategy(args, variable_device):
    """The placement strategy of --strategy, --all-reduce and --num-packs (checked together)."""
    if args.all_reduce is not None and args.strategy != "replicated":
        raise ValueError("--all-reduce %s chooses how replicas are kept equal; it needs "
                         "--strategy replicated (got --strategy %s)" % (args.all_reduce,
                                                                       args.strategy))
    return strategies.from_name(args.strategy, all_reduce=args.all_reduce,
                                num_packs=args.num_packs, device=variable_device)


def cluster_failure(args, error):
    """The one-line error for a cluster whose tasks stopped answering during training."""
    from crnn_multigpu.runtime import cluster
    silent = cluster.silent_tasks(cluster.load_cluster(args.cluster), timeout=5.0)
    newest = latest_checkpoint(args.out)
    return cluster.ClusterFailure(
        "%s stopped answering during training (%s); %s: restart its crnn-server and run the "
        "same command with --resume" % (
            ", ".join("%s at %s" % pair for pair in silent) or "a task of the cluster",
            type(error).__name__,
            "the newest checkpoint %s is kept" % newest if newest else "no checkpoint was saved"))


def require_a_readable_image(dataset, name):
    """Raise ValueError unless some image of ``dataset`` can be read: a validation figure over
    zero images would look like a perfect score. Reads images only until the first good one."""
    for index in range(len(dataset)):
        if dataset.safe_get(index) is not None:
            return
    raise ValueError("none of the %d image(s) of --val %s could be read (e.g. %s): nothing to "
                     "validate on; image paths in labels.txt are relative to its folder"
                     % (len(dataset), name, dataset.unreadable[0]))


def input_mode(args):
    """'dataset' or 'feed'. Cluster workers cannot run the client's Python decoding."""
    if args.cluster and args.input == "dataset":
        raise ValueError("--input dataset decodes images in this process's Python, which the "
                         "cluster's workers cannot call; use --input feed with --cluster")
    return args.input or ("feed" if args.cluster else "dataset")


def main_body(argv=None):
    """crnn-train on the command line ``argv``; the exit code (128 + the signal's number when
    SIGINT or SIGTERM stopped it, after saving)."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    args.out = os.path.abspath(args.out)  # cluster servers resolve relative paths their own way
    # SIGINT/SIGTERM from here on: a clean stop, at once while there is nothing to save (set-up
    # and the first step, a minute with 99 towers), else after the step in progress, saved.
    with StopRequested(args.out, owns_process=True) as stop:
        stop.nothing_to_save("while setting up: nothing to save; run the same command again")
        charset, model_cls, config = run_settings(args)
        ensure_writable(args.out)
        # One trainer at a time: two in a folder would save over each other's checkpoints.
        # Taken before the datasets are read, so that a second trainer is refused at once.
        with run_folder_lock(args.out):
            return train_run(args, charset, model_cls, config, stop)


def run_settings(args):
    """``(charset, model class, RunConfig)`` of the arguments, checked."""
    charset = Charset.from_file(args.charset) if args.charset else \
        get_language(args.language).charset if args.language else Charset.default()
    if args.bucket and args.width:
        raise ValueError("--bucket %d sorts batches by image width, which only varies with "
                         "--width 0; drop --bucket or pass --width 0" % args.bucket)
    if args.bucket is None:
        args.bucket = 0 if args.width else DEFAULT_BUCKET
    model_cls = chosen_model_class(args) or CRNN
    return charset, model_cls, run_config(args, charset, model_cls)


def describe_augmentation(args):
    """The training-time augmentation in words, for the start-up line."""
    parts = (["strength %g" % args.augment] if args.augment else []) + \
        (["reframing %g" % args.reframe] if args.reframe else []) + \
        (["stroke weight %g" % args.stroke] if args.stroke else [])
    return ", ".join(parts) or "off"


def train_run(args, charset, model_cls, config, stop):
    """Read the data, check and record the run folder, build the towers and train; the exit
    code. The caller holds the run folder's lock and the entered StopRequested ``stop``."""
    time_steps = model_class.time_steps(model_cls, args.width) if args.width else None
    train_set = open_dataset(args.train, charset=charset, time_steps=time_steps)
    val_set = open_dataset(args.val, charset=charset, time_steps=time_steps) if args.val else None
    if val_set is not None:
        require_a_readable_image(val_set, args.val)
    init_from = warm_start_checkpoint(args, config)
    check_run_dir(args, config)
    # After the run folder's checks: listing the GPUs starts CUDA, which on TF 1.15 logs to
    # stderr (cuInit) on a machine without GPUs, past a bad folder's one error line.
    placement = placement_of(args)
    towers = placement.devices
    mode = input_mode(args)
    tf.set_random_seed(args.seed)
    augment = training_augmentation(args.augment, args.reframe, train_set.height, args.stroke)
    batches = StepBatches(train_set, charset, args.batch_size, fixed_width=config.image_width,
                          seed=args.seed, augment=augment, bucket=args.bucket,
                          width_multiple=model_cls.DOWNSAMPLE)
    data = (StepInput if mode == "dataset" else FedInput)(batches)  # the one hand-over
    wrapper = build_towers(args, model_cls, config, placement, data)
    validate = ValidationReader(wrapper, val_set, charset, config.image_width, model_cls,
                                args.validate_max) if val_set else None
    trainer = build_trainer(args, wrapper, validate, init_from)
    sys.stderr.write("training %s on %d tower(s): %s (%s); %d training images, batch %d%s, "
                     "%d steps, input %s, augmentation %s%s\n"
                     % (config.model_class, len(towers), ", ".join(towers),
                        wrapper.strategy.describe(), len(train_set), args.batch_size,
                        " x %d micro-batches" % args.accumulate if args.accumulate > 1 else "",
                        args.steps, mode, describe_augmentation(args),
                        ", width buckets of %d batches" % args.bucket if args.bucket else ""))
    final = ValidationReader(wrapper, val_set, charset, config.image_width, model_cls,
                             unreadable=[]) if val_set else None
    return run_session(args, trainer, placement, final, stop)


def build_towers(args, model_cls, config, placement, batches):
    """The MultiGpuModel of the arguments on ``placement``'s towers, fed by the input
    ``batches`` (``feeding.StepInput`` or ``FedInput``)."""
    schedule = StepDecay(args.lr, args.steps)

    def optimizer(global_step):
        return tf.train.AdamOptimizer(schedule(global_step))

    # sync_bn only when asked for: a model class without batch norm need not take it.
    kwargs = dict(config.model, **({"sync_bn": True} if args.sync_bn else {}))
    wrapper = MultiGpuModel(model_class.guarded(model_cls), devices=placement.devices,
                            strategy=make_strategy(args, placement.variable_device),
                            optimizer=optimizer, clip_norm=args.clip_norm or None,
                            batches=batches, precision=args.precision,
                            accumulate_steps=args.accumulate, xla=args.xla, **kwargs)
    model_class.check_model(wrapper.models[0], model_cls)
    return wrapper


def build_trainer(args, wrapper, validate, init_from):
    """The Trainer of the arguments; the wrapper's own input feeds the towers."""
    feed = {m.training: True for m in wrapper.models if getattr(m, "training", None) is not None}
    # On a cluster the Saver's file writes run where its ops are placed: pin them to
    # worker 0 (the chief's machine) so checkpoints land in this --out on both TF stacks.
    with tf.device("/job:worker/task:0/cpu:0" if args.cluster else None):
        return Trainer(wrapper, None, args.out,
                       checkpoint_every=args.checkpoint_every, log_every=args.log_every,
                       validate_every=args.validate_every, validate=validate,
                       on_nonfinite=args.on_nonfinite, feed=feed, init_from=init_from)


def run_session(args, trainer, placement, final_validation, stop):
    """Train to --stop-at or --steps in a session on ``placement`` (``stop``: the StopRequested
    it heeds), then (having reached --steps) run ``final_validation`` (a ValidationReader with
    a list for the unreadable images' names) and print its figures; the exit code: 128 + the
    signal that stopped training, else 0."""
    settings = placement.session_config()
    if args.cluster:
        # gRPC waits for a killed or hung task forever, inside C++ where Ctrl-C cannot reach.
        settings.operation_timeout_in_ms = int(args.step_timeout * 1000)
    session = tf.Session(placement.target, config=settings)
    try:
        try:
            final_step = trainer.train(session, min(args.steps, args.stop_at or args.steps),
                                       resume=args.resume, stop=stop)
        except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
                tf.errors.AbortedError) as error:
            if not args.cluster:
                raise
            raise cluster_failure(args, error)
        if final_validation is not None and final_step >= args.steps:
            stop.nothing_to_save("after step %d was saved: nothing to save; crnn-evaluate "
                                 "--checkpoint %s --data %s gives the final figures"
                                 % (final_step, args.out, args.val))
            report_final_validation(args, final_validation(session), final_step,
                                    final_validation.unreadable)
    finally:
        close_session(session)  # bounded: a failed input pipeline can hang TF's close
    # Stopped by SIGINT/SIGTERM after saving: 130/143, so scripts see the run did not finish.
    return 128 + trainer.stopped_by if trainer.stopped_by else 0


def report_final_validation(args, figures, step, unreadable):
    """The final validation's figures: a line on stderr, the unreadable images named, and
    the JSON line on stdout."""
    figures["step"] = step
    sys.stderr.write("final validation: word accuracy %.4f, CER %.4f on %d images\n"
                     % (figures["word_accuracy"], figures["cer"], figures["n"]))
    report_unreadable(unreadable, figures["n"], args.val)
    print_figures(figures)


main = console_entry(main_body, "crnn-train")

if __name__ == "__main__":
    sys.exit(main())
