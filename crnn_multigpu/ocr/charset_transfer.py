"""A trained model moved onto another charset: every weight kept, and the output layer's class
columns mapped by character, so that a model of more characters (the Latin script) starts from
what a model of fewer (printable ASCII) learnt instead of from nothing.

A character both charsets hold keeps its column; a new character starts from the column of the
character it is made from (NFKD's first: ``é`` from ``e``, ``…`` from ``.``), its bias lowered
by :data:`NEW_CLASS_PENALTY` so that the old reading stays the likelier one until training
tells them apart; a character made from nothing known starts silent (zero weights, the lowest
bias). The CTC blank stays the last class. The model class names its output variables
(``OUTPUT_VARIABLES``: the last axis of each is the class axis).
"""
import os
import unicodedata
from dataclasses import replace

import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr import model_class
from crnn_multigpu.runtime.checkpoints import CHECKPOINT_PREFIX, checkpoint_dir, require_checkpoint
from crnn_multigpu.ocr.run_config import RunConfig

# log(4): a new letter starts four times less likely than the letter it is built on.
NEW_CLASS_PENALTY = float(np.log(4.0))


def source_classes(old, new):
    """For each class of ``new`` (a Charset; the blank last): ``(old class id or None, is_new)``,
    the class of ``old`` its column starts from."""
    sources = []
    for char in new.chars:
        if char in old:
            sources.append((old.encode(char)[0], False))
            continue
        base = unicodedata.normalize("NFKD", char)[:1]
        sources.append((old.encode(base)[0] if base and base in old else None, True))
    return sources + [(len(old), False)]  # the blank


def remap_classes(value, sources):
    """``value`` (last axis: the old classes) with its last axis rebuilt as ``sources`` say; a
    rank-1 value is a bias (new classes lowered, unknown ones at the lowest old bias)."""
    is_bias = value.ndim == 1
    out = np.zeros(value.shape[:-1] + (len(sources),), dtype=value.dtype)
    for column, (source, is_new) in enumerate(sources):
        if source is not None:
            out[..., column] = value[..., source] - (NEW_CLASS_PENALTY if is_new and is_bias else 0)
        elif is_bias:
            out[column] = value[:-1].min() - NEW_CLASS_PENALTY
    return out


def transfer_to_charset(run_dir, charset, out_dir, language=None):
    """Write at ``out_dir`` a variables-only model (config.json and checkpoints/, as
    ``crnn-export --format checkpoint`` writes) of ``run_dir``'s model on ``charset`` (a
    :class:`Charset`), reading ``language`` (a described language's name) if given; returns
    out_dir. ``crnn-train --init-from out_dir --charset ...`` then trains on from it."""
    if os.path.exists(out_dir):
        raise FileExistsError("%s already exists; choose a new output folder" % out_dir)
    config = RunConfig.read(run_dir)
    cls = model_class.from_config(config, os.path.join(run_dir, "config.json"))
    names = getattr(cls, "OUTPUT_VARIABLES", None)
    if not names:
        raise ValueError("%s names no OUTPUT_VARIABLES: its class axis is unknown, so its charset "
                         "cannot be changed" % model_class.path_of(cls))
    prefix = require_checkpoint(run_dir)
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    missing = [name for name in names if name not in shapes]
    if missing:
        raise ValueError("checkpoint %s has no %s" % (prefix, ", ".join(missing)))
    sources = source_classes(Charset(config.charset), charset)
    model_names = [name for name in sorted(shapes) if name != "global_step" and
                   not name.endswith(("/Adam", "/Adam_1")) and "beta1_power" not in name and
                   "beta2_power" not in name]
    graph = tf.Graph()
    with graph.as_default():
        variables = {}
        for name in model_names:
            value = reader.get_tensor(name)
            if name in names:
                value = remap_classes(value, sources)
            variables[name] = tf.Variable(value, name=name)
        saver = tf.train.Saver(var_list=variables, save_relative_paths=True)
        os.makedirs(checkpoint_dir(out_dir))
        with tf.Session(graph=graph) as session:
            session.run(tf.global_variables_initializer())
            saver.save(session, os.path.join(checkpoint_dir(out_dir), CHECKPOINT_PREFIX),
                       global_step=0, write_meta_graph=False)
    training = dict(config.training, language=language) if language else dict(config.training)
    replace(config, charset="".join(charset.chars), training=training, parts=[],
            model=dict(config.model, num_classes=len(charset) + 1),
            extra=dict(config.extra, transferred_from=prefix)).write(out_dir)
    return out_dir
