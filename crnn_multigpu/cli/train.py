"""crnn-train: train a CRNN on every visible GPU (or N virtual CPU towers) from a dataset.

Argument parsing only: the options become an ``ocr.TrainingSettings`` (one field per option,
of the same name) and ``ocr.TrainingRun`` trains it; this prints the final figures.
"""
import sys
from dataclasses import fields

from crnn_multigpu.datasets.language import language_names
from crnn_multigpu.wrapper import strategies
from crnn_multigpu.cli.common import (ArgumentParser, add_model_class_argument, console_entry,
                                      float_range, int_range, non_negative_float,
                                      non_negative_int, output_folder, positive_float,
                                      positive_int, print_figures, report_unreadable,
                                      setup_logging)
from crnn_multigpu.ocr.training import TrainingRun
from crnn_multigpu.ocr.training_settings import (ASKED_ON_RESUME, DEFAULT_BUCKET,
                                                 TrainingSettings, flag)
from crnn_multigpu.wrapper.precision import NAMES as PRECISIONS
from crnn_multigpu.runtime.schedule import StepDecay


# The widest fixed --width: at the images' height of 32 px, 4,096 px is a line of some 250
# characters (1,024 CTC frames of CRNN), wider than any printed line (--page's widest on the
# manual pages at that height: 1,282 px). Every step holds --batch-size images this wide, so
# memory grows with it: --width 1000000000 would ask for 128 GB for a batch of 32.
MAX_WIDTH = 4096


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
                           "batches are not mostly padding (default %d; 0 = off)" % DEFAULT_BUCKET)
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
    run.add_argument("--resume", action="store_true",
                     help="continue the run in --out from its newest checkpoint (refused when it "
                          "has none: nothing to resume)")
    run.add_argument("--allow-changed-settings", action="store_true",
                     help="with --resume: train on with another %s than the run's (refused "
                          "otherwise); config.json keeps each part's settings under \"parts\""
                          % ", ".join(flag(name) for name in ASKED_ON_RESUME))
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


def settings_of(args):
    """The ``TrainingSettings`` of the parsed arguments (each field from its option)."""
    return TrainingSettings(**dict((item.name, getattr(args, item.name))
                                   for item in fields(TrainingSettings)))


def main_body(argv=None):
    """crnn-train on the command line ``argv``; the exit code (128 + the signal's number when
    SIGINT or SIGTERM stopped it, after saving)."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    result = TrainingRun(settings_of(args)).run(owns_process=True)
    if result.figures is not None:
        report_final_validation(args.val, result)
    # Stopped by SIGINT/SIGTERM after saving: 130/143, so scripts see the run did not finish.
    return 128 + result.stopped_by if result.stopped_by else 0


def report_final_validation(val, result):
    """The final validation's figures (of the validation set ``val``): a line on stderr, the
    unreadable images named, and the JSON line on stdout."""
    figures = result.figures
    sys.stderr.write("final validation: word accuracy %.4f, CER %.4f on %d images\n"
                     % (figures["word_accuracy"], figures["cer"], figures["n"]))
    report_unreadable(result.unreadable, figures["n"], val)
    print_figures(figures)


main = console_entry(main_body, "crnn-train")

if __name__ == "__main__":
    sys.exit(main())
