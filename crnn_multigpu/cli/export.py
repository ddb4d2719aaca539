"""crnn-export: write a SavedModel (or a slim run folder) of a trained run for inference.

``--format checkpoint`` writes config.json and a checkpoint of the model's own
variables only (no optimizer slots: a third of the size), which every tool
accepts as ``--checkpoint``; this is how models/words was made.

SavedModel signature ``serving_default``: inputs ``images`` float32 [B, 32, W, 1] (light
text on dark, values in [0, 1], as ``datasets.load_image`` makes them) and
``widths`` int32 [B]; outputs ``predict`` (class ids, -1 padded) and
``log_prob``. The charset is written beside it as ``assets.extra/charset.txt``.
"""
import argparse
import os
import sys

from crnn_multigpu.cli.common import run_main, setup_logging
from crnn_multigpu.cli.evaluate import resolve_run


def build_parser():
    parser = argparse.ArgumentParser(prog="crnn-export", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="run directory of crnn-train")
    parser.add_argument("--out", required=True, help="SavedModel directory to create (must not exist)")
    parser.add_argument("--format", choices=("savedmodel", "checkpoint"), default="savedmodel",
                        help="savedmodel (default) or checkpoint: a slim run folder")
    parser.add_argument("--beam-width", type=int, default=0)
    parser.add_argument("--verbose", action="store_true")
    return parser


def export_saved_model(recognizer, out_dir):
    """Write ``recognizer``'s graph and restored weights as a SavedModel; returns out_dir."""
    from crnn_multigpu.compat import tf
    if os.path.exists(out_dir):
        raise FileExistsError("%s already exists; choose a new --out (an export is never "
                              "overwritten)" % out_dir)
    model = recognizer.model
    with recognizer.graph.as_default():
        signature = tf.saved_model.signature_def_utils.predict_signature_def(
            inputs={"images": model.images, "widths": model.widths},
            outputs={"predict": model.predict, "log_prob": model.log_prob})
        builder = tf.saved_model.builder.SavedModelBuilder(out_dir)
        builder.add_meta_graph_and_variables(
            recognizer.session, [tf.saved_model.tag_constants.SERVING],
            signature_def_map={"serving_default": signature})
        builder.save()
    extra = os.path.join(out_dir, "assets.extra")
    os.makedirs(extra, exist_ok=True)
    recognizer.charset.to_file(os.path.join(extra, "charset.txt"))
    return out_dir


def export_checkpoint(recognizer, out_dir):
    """Write ``recognizer``'s config and model variables as a run folder; returns out_dir."""
    from crnn_multigpu.checkpoints import CHECKPOINT_PREFIX, checkpoint_dir, save_config
    from crnn_multigpu.compat import tf
    if os.path.exists(out_dir):
        raise FileExistsError("%s already exists; choose a new --out (an export is never "
                              "overwritten)" % out_dir)
    os.makedirs(checkpoint_dir(out_dir))
    step = int(tf.train.load_checkpoint(recognizer.checkpoint).get_tensor("global_step"))
    with recognizer.graph.as_default():
        saver = tf.train.Saver(tf.global_variables(), save_relative_paths=True)
    saver.save(recognizer.session, os.path.join(checkpoint_dir(out_dir), CHECKPOINT_PREFIX),
               global_step=step, write_meta_graph=False)
    save_config(out_dir, dict(recognizer.config, exported_from=recognizer.checkpoint, step=step))
    return out_dir


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    from crnn_multigpu.inference import Recognizer
    run_dir, checkpoint = resolve_run(args.checkpoint)
    recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint)
    export = export_checkpoint if args.format == "checkpoint" else export_saved_model
    export(recognizer, args.out)
    print("exported %s -> %s" % (recognizer.checkpoint, args.out))
    return 0


def main(argv=None):
    """Console entry point of crnn-export."""
    return run_main(main_body, argv)


if __name__ == "__main__":
    sys.exit(main())
