"""crnn-export: write a SavedModel (or a slim run folder) of a trained run for inference.

``--format checkpoint`` writes config.json and a checkpoint of the model's own
variables only (no optimizer slots: a third of the size), which every tool
accepts as ``--checkpoint``; this is how models/words was made.

SavedModel signature ``serving_default``: inputs ``images`` float32 [B, 32, W, 1] (light
text on dark, values in [0, 1], as ``datasets.load_image`` makes them; W a multiple of the
model class's DOWNSAMPLE, 4 for CRNN) and ``widths`` int32 [B]; outputs ``predict`` (class
ids, -1 padded) and ``log_prob``. The charset is written beside it as
``assets.extra/charset.txt``. The graph holds TensorFlow ops only: it loads without the
model class's code.

``--format onnx`` writes ``model.onnx``: the model from images to its per-frame
log-probabilities, converted by tf2onnx (``pip install crnn_multigpu[onnx-export]``), with its
config in the file's metadata and config.json and charset.txt beside it; the CTC decoding
is left to the reader (``crnn-predict --engine onnx``; see crnn_multigpu.ocr.onnx_reader).

Every format is written into a hidden staging folder beside ``--out`` and renamed to
``--out`` only when complete: a failed export (disk full, no permission) leaves nothing
that blocks the retry.
"""
import os
import shutil
import sys
import tempfile

from crnn_multigpu.cli.common import (ArgumentParser, add_model_class_argument,
                                      chosen_model_class, console_entry, output_folder,
                                      setup_logging)
from crnn_multigpu.cli.reading import add_beam_width_argument
from crnn_multigpu.files import write_error
from crnn_multigpu.ocr.shipped import resolve_run


def build_parser():
    parser = ArgumentParser(prog="crnn-export", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="run directory of crnn-train")
    parser.add_argument("--out", required=True, type=output_folder,
                        help="SavedModel directory to create (must not exist)")
    parser.add_argument("--format", choices=("savedmodel", "checkpoint", "onnx"),
                        default="savedmodel",
                        help="savedmodel (default), checkpoint (a slim run folder) or onnx "
                             "(model.onnx for onnxruntime: the frames before decoding)")
    add_beam_width_argument(parser)
    add_model_class_argument(parser)
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
    from crnn_multigpu.runtime.checkpoints import CHECKPOINT_PREFIX, checkpoint_dir
    from crnn_multigpu.compat import tf
    if os.path.exists(out_dir):
        raise FileExistsError("%s already exists; choose a new --out (an export is never "
                              "overwritten)" % out_dir)
    os.makedirs(checkpoint_dir(out_dir))
    config = exported_config(recognizer)
    with recognizer.graph.as_default():
        saver = tf.train.Saver(tf.global_variables(), save_relative_paths=True)
    saver.save(recognizer.session, os.path.join(checkpoint_dir(out_dir), CHECKPOINT_PREFIX),
               global_step=config.extra["step"], write_meta_graph=False)
    config.write(out_dir)
    return out_dir


def exported_config(recognizer, **extra):
    """The run's config (a ``RunConfig``) as an export records it: its model class, the
    checkpoint it came from and that checkpoint's step, and ``extra``."""
    from dataclasses import replace
    from crnn_multigpu.ocr.model_class import path_of
    from crnn_multigpu.runtime.checkpoints import checkpoint_step
    from crnn_multigpu.compat import tf
    # A model-only checkpoint (an export, a shipped model) keeps its step in its name.
    reader = tf.train.load_checkpoint(recognizer.checkpoint)
    step = int(reader.get_tensor("global_step")) if reader.has_tensor("global_step") else \
        max(0, checkpoint_step(recognizer.checkpoint))
    return replace(recognizer.config, model_class=path_of(recognizer.model_cls),
                   extra=dict(recognizer.config.extra, exported_from=recognizer.checkpoint,
                              step=step, **extra))


def export_onnx(recognizer, out_dir):
    """Write ``recognizer``'s frames as ``model.onnx`` (its config in the file's metadata) with
    config.json and charset.txt beside it (``crnn_multigpu.ocr.onnx_export``); returns out_dir."""
    from crnn_multigpu.ocr.onnx_export import onnx_model_bytes
    from crnn_multigpu.ocr.onnx_reader import ONNX_FILE
    config = exported_config(recognizer, format="onnx", downsample=recognizer.downsample,
                             height=recognizer.height)
    data = onnx_model_bytes(recognizer, config.to_json())
    os.makedirs(out_dir)
    with open(os.path.join(out_dir, ONNX_FILE), "wb") as out:
        out.write(data)
    config.write(out_dir)
    recognizer.charset.to_file(os.path.join(out_dir, "charset.txt"))
    return out_dir


EXPORTS = {"savedmodel": export_saved_model, "checkpoint": export_checkpoint, "onnx": export_onnx}


def _staging_dir(out_dir):
    """A new empty hidden folder beside ``out_dir``; checked before the model is loaded."""
    if os.path.exists(out_dir):
        raise FileExistsError("%s already exists; choose a new --out (an export is never "
                              "overwritten)" % out_dir)
    parent = os.path.dirname(os.path.abspath(out_dir))  # no file on its path: output_folder
    try:
        os.makedirs(parent, exist_ok=True)
        return tempfile.mkdtemp(prefix=".%s.partial-" % os.path.basename(out_dir), dir=parent)
    except OSError as error:
        raise write_error(out_dir, error)


def export_atomically(export, recognizer, out_dir, staging):
    """Run ``export(recognizer, path)`` inside ``staging``, then rename the result to ``out_dir``.

    On any failure the staging folder is removed and nothing is left at ``out_dir``; disk and
    permission errors (also TensorFlow's) become one OSError naming ``out_dir``.
    """
    from crnn_multigpu.tflog import one_line
    from crnn_multigpu.compat import tf
    try:
        export(recognizer, os.path.join(staging, "export"))
        os.rename(os.path.join(staging, "export"), out_dir)
    except (OSError, tf.errors.OpError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else \
            one_line(error)
        raise OSError("could not export to %s: %s; nothing was left behind: free space (or fix "
                      "permissions) and run the same command again" % (out_dir, reason))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    from crnn_multigpu.ocr.inference import Recognizer
    if args.format == "onnx":  # before the model loads: a missing extra fails at once
        from crnn_multigpu.ocr.onnx_reader import EXPORT_EXTRA, import_extra
        for name in ("tf2onnx", "onnx", "onnxruntime"):
            import_extra(name, "crnn-export --format onnx", EXPORT_EXTRA)
    run_dir, checkpoint = resolve_run(args.checkpoint)
    staging = _staging_dir(args.out)
    try:
        recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint,
                                model_cls=chosen_model_class(args))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    export_atomically(EXPORTS[args.format], recognizer, args.out, staging)
    print("exported %s -> %s" % (recognizer.checkpoint, args.out))
    return 0


main = console_entry(main_body, "crnn-export")

if __name__ == "__main__":
    sys.exit(main())
