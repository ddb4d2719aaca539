"""A restored model's frames as an ONNX file (``crnn-export --format onnx``), by tf2onnx.

What is converted is the model up to its frames (``images``, ``widths`` -> ``log_probs``,
``lengths``; see :mod:`crnn_multigpu.ocr.onnx_reader`), from a frozen GraphDef of the
inference graph: variables folded into constants, ``training`` fixed to False (the batch-norm
conds then fold away). CTC decoding is not in the file: onnxruntime has no CTC decoder, and
the readers decode in Python.

tf2onnx has no conversion of TensorFlow's fused ``BlockLSTM``, the op of the CRNN's LSTMs
(``wrapper.layers.lstm``): :func:`block_lstm_handler` writes each as an ONNX ``LSTM`` with the
same weights, gates reordered. The export is checked before it is written: onnxruntime runs
it on a probe batch and must give TensorFlow's frames.
"""
import json

import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.onnx_reader import CONFIG_KEY, EXPORT_EXTRA, import_extra, with_checksum
from crnn_multigpu.tflog import one_line

__all__ = ["OPSET", "onnx_model_bytes", "block_lstm_handler"]

# onnxruntime 1.10 (the newest that installs beside TF 1.15's numpy 1.18) reads opsets up to
# 15; tf2onnx sets the file's IR version to match, so one file serves both stacks.
OPSET = 15
# Names of the file's inputs and outputs (the model's tensors are renamed to these).
INPUTS, OUTPUTS = ("images", "widths"), ("log_probs", "lengths")
DIMENSIONS = {"images": ["batch", None, "width", None], "widths": ["batch"],
              "log_probs": ["frames", "batch", None], "lengths": ["batch"]}
# Largest difference of a class probability between onnxruntime and TensorFlow on the probe
# batch (measured: below 1e-5 on both stacks).
TOLERANCE = 1e-4
# The probe batch's widths in frames (each a multiple of the model's DOWNSAMPLE in pixels: a
# class may refuse other widths, as tests/models_for_tools.py's does): a word and a short line.
PROBE_FRAMES = (10, 25)


def block_lstm_handler(problems):
    """A tf2onnx handler (``custom_op_handlers={"BlockLSTM": (handler, [])}``) that writes a
    ``BlockLSTM`` as an ONNX ``LSTM``. What it cannot write exactly (peepholes, cell
    clipping, weights that are not constants) is added to the list ``problems``."""
    def handle(ctx, node, name, args):
        del args
        from onnx import TensorProto
        from tf2onnx import utils
        # BlockLSTM inputs: seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b.
        seq_len_max, x, cs_prev, h_prev = node.input[:4]
        weights, bias = node.inputs[4], node.inputs[8]
        if node.get_attr_value("use_peephole") or node.get_attr_value("cell_clip") > 0:
            problems.append("%s uses peepholes or cell clipping" % name)
        elif not (weights.is_const() and bias.is_const()):
            problems.append("%s has weights that are not constants" % name)
        if problems:
            return
        w, b = weights.get_tensor_value(as_list=False), bias.get_tensor_value(as_list=False)
        units = b.shape[0] // 4
        b = b.copy()
        b[2 * units:3 * units] += node.get_attr_value("forget_bias")

        def gates(a):
            # TensorFlow's gate order i, c, f, o -> ONNX's i, o, f, c.
            return np.concatenate([a[..., k * units:(k + 1) * units] for k in (0, 3, 2, 1)], -1)

        def const(suffix, value):
            return ctx.make_const(utils.make_name(name + suffix), value).output[0]
        inputs = w.shape[0] - units
        w_x = const("_W", gates(w[:inputs]).T[None].astype(np.float32))
        w_h = const("_R", gates(w[inputs:]).T[None].astype(np.float32))
        both = const("_B", np.concatenate([gates(b), np.zeros_like(b)])[None].astype(np.float32))
        axis0 = const("_axis0", np.array([0], np.int64))
        # Frames past seq_len_max come out as zeros in both ops.
        batch = ctx.make_node("Shape", [x], attr={"start": 1, "end": 2}).output[0]
        length = ctx.make_node("Cast", [seq_len_max], attr={"to": TensorProto.INT32}).output[0]
        lengths = ctx.make_node("Expand", [length, batch]).output[0]
        h0 = ctx.make_node("Unsqueeze", [h_prev, axis0]).output[0]
        c0 = ctx.make_node("Unsqueeze", [cs_prev, axis0]).output[0]
        lstm = ctx.make_node("LSTM", [x, w_x, w_h, both, lengths, h0, c0], output_count=3,
                             attr={"hidden_size": int(units), "direction": "forward"})
        axis1 = const("_axis1", np.array([1], np.int64))
        h = ctx.make_node("Squeeze", [lstm.output[0], axis1])  # [T, 1, B, H] -> [T, B, H]
        ctx.replace_all_inputs(node.output[6], h.output[0])  # BlockLSTM's output 6: h
        ctx.remove_node(node.name)
    return handle


def frozen_frames_graph(recognizer):
    """A GraphDef of ``recognizer``'s plain model from images and widths to its frames, its
    variables as constants and ``training`` (if it has one) fixed to False."""
    model = recognizer.model
    missing = [name for name in ("log_probs_per_frame", "seq_lengths")
               if not hasattr(model, name)]
    if missing:
        raise ValueError("--format onnx exports a model's frames before decoding; %s has no %s "
                         "(see crnn_multigpu.ocr.model_class)"
                         % (recognizer.model_cls.__name__, " or ".join(missing)))
    outputs = [model.log_probs_per_frame.op.name, model.seq_lengths.op.name]
    frozen = tf.graph_util.convert_variables_to_constants(
        recognizer.session, recognizer.graph.as_graph_def(), outputs)
    training = getattr(model, "training", None)
    for node in frozen.node:
        if training is not None and node.name == training.op.name:
            node.op = "Const"
            node.input[:] = []
            for key in list(node.attr):
                del node.attr[key]
            node.attr["dtype"].type = tf.bool.as_datatype_enum
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(False))
    return frozen


def onnx_model_bytes(recognizer, config):
    """The serialised ONNX model of ``recognizer``'s frames, ``config`` (a dict, the run's
    config with what a reader needs: charset, downsample, height) in its metadata, its checksum
    last (``onnx_reader.with_checksum``); checked against TensorFlow on a probe batch. Raises
    ImportError without the ``onnx-export`` extra and ValueError when the conversion is not exact."""
    tf2onnx = import_extra("tf2onnx", "crnn-export --format onnx", EXPORT_EXTRA)
    onnx = import_extra("onnx", "crnn-export --format onnx", EXPORT_EXTRA)
    frozen = frozen_frames_graph(recognizer)  # first: it refuses a model without frames
    model, problems = recognizer.model, []
    names = [model.images.name, model.widths.name, model.log_probs_per_frame.name,
             model.seq_lengths.name]
    try:
        proto, _ = tf2onnx.convert.from_graph_def(
            frozen, input_names=names[:2], output_names=names[2:],
            opset=OPSET, custom_op_handlers={"BlockLSTM": (block_lstm_handler(problems), [])},
            tensors_to_rename=dict(zip(names, INPUTS + OUTPUTS)))
    except Exception as error:  # noqa: B902 (tf2onnx raises what its op handlers raise)
        raise ValueError("tf2onnx cannot convert %s to ONNX (%s): export it as a SavedModel "
                         "(--format savedmodel) instead" % (recognizer.model_cls.__name__,
                                                            one_line(error)))
    if problems:
        raise ValueError("the model cannot be written as ONNX exactly: %s" % "; ".join(problems))
    for value in list(proto.graph.input) + list(proto.graph.output):
        for dim, label in zip(value.type.tensor_type.shape.dim, DIMENSIONS[value.name]):
            if label:
                dim.dim_param = label
    onnx.helper.set_model_props(proto, {CONFIG_KEY: json.dumps(config, sort_keys=True)})
    data = with_checksum(proto.SerializeToString())
    check_frames(recognizer, data)
    return data


def check_frames(recognizer, data):
    """Raise ValueError unless onnxruntime, reading the model ``data``, gives TensorFlow's
    frames (class probabilities within :data:`TOLERANCE`) on a probe batch of noise."""
    runtime = import_extra("onnxruntime", "crnn-export --format onnx", EXPORT_EXTRA)
    model = recognizer.model
    rng = np.random.RandomState(0)
    widths = np.array(PROBE_FRAMES, np.int32) * recognizer.downsample
    images = rng.uniform(size=(len(widths), recognizer.height, max(widths), 1))
    feed = {model.images: images.astype(np.float32), model.widths: widths}
    try:
        want = recognizer.session.run([model.log_probs_per_frame, model.seq_lengths], feed)
    except tf.errors.OpError as error:
        raise ValueError("%s cannot read a probe batch of widths %s in TensorFlow (%s): its "
                         "frames cannot be checked, so no ONNX file is written"
                         % (recognizer.model_cls.__name__, widths.tolist(), one_line(error)))
    options = runtime.SessionOptions()
    options.log_severity_level = 3
    session = runtime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    got = session.run(list(OUTPUTS), {"images": images.astype(np.float32), "widths": widths})
    same_shape = got[0].shape == want[0].shape and np.array_equal(got[1], want[1])
    difference = float(np.abs(np.exp(got[0]) - np.exp(want[0])).max()) if same_shape else 1.0
    if difference > TOLERANCE:
        raise ValueError("the ONNX model's frames differ from TensorFlow's on a probe batch "
                         "(%s frames, %s valid, class probabilities up to %.2g apart; at most "
                         "%g allowed): not written" % (got[0].shape, got[1].tolist(),
                                                       difference, TOLERANCE))
