"""Inference from a training run: its model (CRNN, or the class its config names) restored
from a checkpoint, on one or more towers.

Checkpoints hold variables under the plain model's names (no tower prefix),
so whatever the number of towers and the placement a run was trained with,
inference builds the model on the towers it wants (one: exactly the plain
model) and restores it. With several towers each batch is split between them
and their outputs joined in batch order: the same outputs as one device.
"""
import logging
import os

import numpy as np

from crnn_multigpu.ocr import model_class
from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.runtime.checkpoints import require_checkpoint, variables_mismatch
from crnn_multigpu.runtime.placement import resolve_placement
from crnn_multigpu.ocr.run_config import CONFIG_NAME, RunConfig
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.text_reader import TextReader
from crnn_multigpu.wrapper.sharding import batch_size as count_examples
from crnn_multigpu.wrapper.sharding import split_batch
from crnn_multigpu.wrapper.towers import MultiGpuModel

log = logging.getLogger(__name__)


def tower_outputs(session, towers, batch, fetch):
    """Run ``fetch(model)`` (a list of tensors) of each tower of the
    :class:`~crnn_multigpu.wrapper.towers.MultiGpuModel` ``towers`` on its shard of ``batch``, in
    inference mode; ``(images in the shard, values)`` per tower, in batch order. A batch of
    fewer images than towers uses as many towers as it has images."""
    models = towers.models[:count_examples(batch)]
    fetches, feed, sizes = [], {}, []
    for model, shard in zip(models, split_batch(batch, len(models))):
        fetches.append(fetch(model))
        feed.update(model.feed_dict(shard, training=False))
        sizes.append(count_examples(shard))
    return list(zip(sizes, session.run(fetches, feed)))


def read_batch(session, towers, batch, charset, model_cls, frames=False):
    """``(texts, log probabilities, per-image frame log-probabilities or None)`` of ``batch``
    read by the towers of ``model_cls`` (its outputs checked where they are first used:
    ``model_class.check_outputs``). ``frames`` also fetches ``log_probs_per_frame``."""
    def fetch(model):
        return [model.predict, model.log_prob] + (
            [model.log_probs_per_frame, model.seq_lengths] if frames else [])
    texts, log_probs, per_image = [], [], []
    for images, values in tower_outputs(session, towers, batch, fetch):
        model_class.check_outputs(model_cls, images, predict=values[0], log_prob=values[1])
        texts.extend(decode_rows(charset, values[0]))
        log_probs.extend(float(p) for p in values[1])
        if frames:
            per_frame, lengths = values[2], values[3]  # [T, B, C], [B]
            per_image.extend(per_frame[:n, i] for i, n in enumerate(lengths))
    return texts, log_probs, per_image if frames else None


def decode_rows(charset, ids):
    """Decoded id rows (padded with -1) -> strings."""
    return [charset.decode([int(i) for i in row if i >= 0]) for row in np.asarray(ids)]


class Recognizer(TextReader):
    """Recognise text lines with the newest checkpoint of a run directory, in TensorFlow.

    Args:
      run_dir: the ``--out`` directory of ``crnn-train`` (config.json + checkpoints/).
      beam_width: 0/1 greedy decoding, >1 CTC beam search.
      checkpoint: a specific checkpoint path prefix instead of the newest intact one.
      lexicon: optional :class:`~crnn_multigpu.ocr.lexicon.LexiconDecoder` for this model's
        charset (also settable later as ``recognizer.lexicon``): every transcription
        is then post-processed by it, and its log probability is log p(text | image)
        summed over all CTC alignments instead of that of the best path.
      language_model: optional :class:`~crnn_multigpu.ocr.char_lm.CharLmDecoder` (also settable
        later as ``recognizer.language_model``): every image is then read by its beam search
        with a character language model, before any lexicon. Default: greedy, the model's own
        reading; the reading tools give a language's models its default decoder
        (``char_lm.reading_decoder(recognizer.language, recognizer.charset)``: Chinese reads
        with its character model).
      towers: run each batch over this many towers: the first GPUs, or virtual CPUs on a
        machine without GPUs (``runtime.placement.resolve_placement``: more than the GPUs is
        refused, as crnn-train refuses it).
      strategy: the towers' placement (``crnn_multigpu.wrapper.strategies``; default: one copy of
        the variables on the host CPU).
      model_cls: the model class to build (``crnn_multigpu.ocr.model_class`` says what it
        needs); default: the one the run's config.json names, else CRNN.

    ``model_cls``, ``model`` (tower 0: the plain model), ``height`` (of the images it reads)
    and ``image_width`` (fixed, or None) describe what was built.
    """

    def __init__(self, run_dir, beam_width=0, checkpoint=None, lexicon=None, towers=1,
                 strategy=None, model_cls=None, language_model=None):
        config = RunConfig.read(run_dir)
        self.model_cls = model_class.from_config(config, os.path.join(run_dir, CONFIG_NAME),
                                                 model_cls)
        super(Recognizer, self).__init__(config, lexicon, language_model)
        self.downsample = self.model_cls.DOWNSAMPLE
        self.check_beam_width(beam_width, run_dir)
        self.checkpoint = require_checkpoint(run_dir, checkpoint)
        # beam_width only when a beam search is asked for: a greedy-only class need not take it.
        beam = {"beam_width": beam_width} if beam_width > 1 else {}
        placement = resolve_placement(towers)
        self.graph = tf.Graph()
        with self.graph.as_default():
            saver = self._build(run_dir, placement.devices, strategy, beam)
        self.session = tf.Session(graph=self.graph, config=placement.session_config())
        saver.restore(self.session, self.checkpoint)
        self.session.run(self.towers.post_init_op)
        log.info("restored %s", self.checkpoint)

    @classmethod
    def shipped(cls, name, **options):
        """The Recognizer of the shipped model ``name`` (``ocr.shipped.SHIPPED``: text, words,
        zh), with the ``options`` of the constructor: the model's own reading, without the
        language's character model the tools read Chinese with (``ocr.Reader(name)`` reads as
        they do)."""
        return cls(shipped_model(name), **options)

    def _build(self, run_dir, devices, strategy, beam):
        """Build the towers on ``devices`` into the current graph; the Saver of the model's
        variables. A class named instead of the run's own that cannot build or restore it is
        refused as such."""
        config_path = os.path.join(run_dir, CONFIG_NAME)
        another = model_class.path_of(self.model_cls) != model_class.recorded_class(self.config)
        try:
            self.towers = MultiGpuModel(model_class.guarded(self.model_cls),
                                        devices=devices, strategy=strategy,
                                        train=False, **dict(self.config.model, **beam))
            self.model = self.towers.models[0]  # the plain model
            model_class.check_model(self.model, self.model_cls)
        except (ValueError, TypeError) as error:
            if not another:
                raise
            why = getattr(error, "what", None) or model_class.describe(error)
            raise model_class.trained_with_another(self.config, config_path, self.model_cls, why)
        mismatch = variables_mismatch(self.checkpoint, self.towers.model_variables)
        if mismatch and another:
            raise model_class.trained_with_another(self.config, config_path, self.model_cls,
                                                   "checkpoint %s %s" % (self.checkpoint, mismatch))
        if mismatch:
            raise ValueError("checkpoint %s %s, as %s describes it: that config.json belongs to "
                             "another model; restore the run's own"
                             % (self.checkpoint, mismatch, config_path))
        self.height = getattr(self.model, "height", 32)  # 32: the datasets' image height
        return tf.train.Saver(self.towers.model_variables)

    @property
    def time_steps(self):
        """Time steps of the fixed image width, or None when widths vary."""
        return model_class.time_steps(self.model_cls, self.image_width) if self.image_width \
            else None

    def _run(self, batch, frames):
        """(texts, log probabilities, per-image frame log-probabilities or None) of a ``Batch``.

        The batch is split over the towers (fewer when it has fewer images than towers).
        """
        return read_batch(self.session, self.towers, batch, self.charset, self.model_cls, frames)

    def close(self):
        self.session.close()
