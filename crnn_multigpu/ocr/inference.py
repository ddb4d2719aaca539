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
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.runtime.checkpoints import require_checkpoint, variables_mismatch
from crnn_multigpu.runtime.run_config import CONFIG_NAME, RunConfig
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import load_image, make_batch
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.unreadable import UnreadableImages
from crnn_multigpu.wrapper.devices import first_devices, session_config
from crnn_multigpu.ocr.metrics import text_metrics
from crnn_multigpu.ocr.word_frame import loose_frame, single_band_frame
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


def evaluate_dataset(dataset, recognize, batch_size=64, limit=None, keep_examples=0,
                     progress=None, fold=None, unreadable=None):
    """``(figures, examples)`` of reading the first ``limit`` (None: all) samples of
    ``dataset`` (``len`` and ``safe_get`` or indexing) with ``recognize(arrays) -> texts``,
    ``batch_size`` images at a time: :func:`~crnn_multigpu.ocr.metrics.text_metrics` plus the
    count of unreadable images, and up to ``keep_examples`` (image, read, truth) triples.
    ``progress(done, total)`` is called after every batch. ``fold`` (e.g.
    :func:`~crnn_multigpu.ocr.metrics.scoring_fold`) maps readings and labels before scoring.

    Every label counts: an image that cannot be read (``safe_get`` returns None) is scored as
    an empty reading of its label (``dataset.texts``), so a set whose files are mostly missing
    cannot score well. ``unreadable``, a list, receives their names (``dataset.describe``).
    Images are read and skipped as in training (``datasets.unreadable``), without its
    warnings as they are met: the caller names them all at the end."""
    total = len(dataset) if limit is None else min(limit, len(dataset))
    predictions, truths, examples = [], [], []
    missing = UnreadableImages(dataset, warn_first=0)
    arrays, texts = [], []

    def flush():
        got = recognize(arrays)
        predictions.extend(got)
        truths.extend(texts)
        for array, text, predicted in zip(arrays, texts, got):
            if len(examples) < keep_examples:
                examples.append((array, predicted, text))
        del arrays[:], texts[:]
        if progress:
            progress(len(truths) + len(missing), total)

    for index in range(total):
        sample = missing.read(index)
        if sample is None:
            continue
        arrays.append(sample[0])
        texts.append(sample[1])
        if len(arrays) == batch_size:
            flush()
    if arrays:
        flush()
    elif progress and missing and truths:  # the last images could not be read: it ends anyway
        progress(len(truths) + len(missing), total)
    score_unreadable(dataset, missing.indices, predictions, truths)
    if unreadable is not None:
        unreadable.extend(missing.names())
    if fold is not None:
        predictions, truths = [fold(text) for text in predictions], [fold(text) for text in truths]
    figures = text_metrics(predictions, truths)
    figures["unreadable"] = len(missing)
    return figures, examples


def score_unreadable(dataset, indices, predictions, truths):
    """Add the samples ``indices`` of ``dataset`` that could not be read to ``predictions``
    (as empty readings) and ``truths`` (their labels, ``dataset.texts``). A dataset without a
    list of labels (one whose samples are drawn when read) has none to score."""
    labels = getattr(dataset, "texts", None)
    if labels is not None and indices:
        truths.extend(labels[index] for index in indices)
        predictions.extend("" for _ in indices)


def _first_framing(array, framings):
    """The first answer of ``framings`` (functions array -> framed array or None) that is not
    None for ``array``, else None."""
    for framing in framings:
        framed = framing(array)
        if framed is not None:
            return framed
    return None


def decode_rows(charset, ids):
    """Decoded id rows (padded with -1) -> strings."""
    return [charset.decode([int(i) for i in row if i >= 0]) for row in np.asarray(ids)]


class FittedDecoder(object):
    """A Recognizer attribute holding a decoder (or None) that must read the model's charset."""

    def __init__(self, what, doc):
        self.what, self.__doc__ = what, doc

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, recognizer, owner=None):
        return self if recognizer is None else getattr(recognizer, self.slot, None)

    def __set__(self, recognizer, decoder):
        if decoder is not None and decoder.charset != recognizer.charset:
            raise ValueError("%s was fitted to charset %r but the model reads %r"
                             % (self.what, decoder.charset, recognizer.charset))
        setattr(recognizer, self.slot, decoder)


class TextReader(object):
    """What every reader of a model shares, whatever runs it: the run's config (charset,
    language, image width), the decoders that re-read its frames, and the reading of crops,
    arrays and datasets in batches. A subclass runs the model: :meth:`_run` turns one
    ``Batch`` into texts, log probabilities and (when asked) each image's frames; it sets
    ``checkpoint`` (what it read, for messages and figures), ``downsample`` (image pixels per
    frame) and ``height`` (of the images it reads).

    ``config`` is the run's config.json (a ``runtime.run_config.RunConfig``); ``lexicon`` and
    ``language_model``: see :class:`Recognizer`.
    """

    lexicon = FittedDecoder(
        "the lexicon", "The :class:`~crnn_multigpu.ocr.lexicon.LexiconDecoder` applied to every "
                       "output, or None.")
    language_model = FittedDecoder(
        "the language model", "The :class:`~crnn_multigpu.ocr.char_lm.CharLmDecoder` that reads "
                              "every image, or None.")

    def __init__(self, config, lexicon=None, language_model=None):
        self.config = config
        self.charset = Charset(config.charset)
        # How its text is joined and scored (config.json "language"; English when absent).
        self.language = get_language(config.language)
        self.lexicon, self.language_model = lexicon, language_model
        self.image_width = config.image_width
        self.frames_single_bands = config.frame_single_bands

    def _run(self, batch, frames):
        """(texts, log probabilities, per-image frame log-probabilities ``[T_i, num_classes]``
        or None unless ``frames``) of a ``Batch``."""
        raise NotImplementedError

    def close(self):
        """Release what runs the model."""
        raise NotImplementedError

    def frame_log_probs(self, batch):
        """Per-image log-probabilities ``[T_i, num_classes]`` (valid frames; blank last)."""
        return self._run(batch, frames=True)[2]

    def recognize_batch(self, batch):
        """Texts and log probabilities for a ``Batch``: through the language model, then the
        lexicon, where there are."""
        decoders = [d for d in (self.language_model, self.lexicon) if d is not None]
        texts, log_probs, frames = self._run(batch, frames=bool(decoders))
        for decoder in decoders:
            decoded = [decoder.decode(text, rows) for text, rows in zip(texts, frames)]
            texts, log_probs = [d[0] for d in decoded], [d[1] for d in decoded]
        return texts, log_probs

    def recognize_arrays(self, arrays, batch_size=64):
        """Recognise normalised image arrays ([32, w] from ``load_image``).

        An image without contrast (blank: ``load_image`` makes it all zero) reads as the empty
        text with log probability 0 without running the model, which would guess at it.
        Images of similar width share a batch (results in the given order): a batch pads to its
        widest image, which costs time and moves a reading's log probability a little (the
        padding reaches the receptive fields of the last frames)."""
        inked = sorted((index for index, array in enumerate(arrays) if array.max() > 0),
                       key=lambda index: arrays[index].shape[1])
        texts, log_probs = [""] * len(arrays), [0.0] * len(arrays)
        for start in range(0, len(inked), batch_size):
            chunk = inked[start:start + batch_size]
            batch = make_batch([arrays[i] for i in chunk], None, self.charset, self.image_width,
                               self.downsample)
            for index, text, log_prob in zip(chunk, *self.recognize_batch(batch)):
                texts[index], log_probs[index] = text, log_prob
        return texts, log_probs

    def read_crops(self, arrays, batch_size=64):
        """Recognise crops a user cut, a word or a line each (normalised arrays, as
        :meth:`recognize_arrays`). Returns (texts, log_probs).

        For a model whose config sets ``frame_single_bands`` (one that learnt its letters in
        lines, with room above and below, as the shipped text model did), a crop that is one
        band of ink (no ascenders or descenders, cut tight) is also read framed by
        :func:`~crnn_multigpu.ocr.word_frame.single_band_frame`, and the more probable of its
        two readings kept. Other models read such crops as they are: one that learnt from tight
        word crops reads them best so (``make train``'s model: 94.05 % of held-out words as
        they are, 93.25 % with the framed second reading). With every model, a crop whose ink
        spans less than half its height (wide margins) is also read with its margins cut by
        :func:`~crnn_multigpu.ocr.word_frame.loose_frame`, the more probable reading kept."""
        texts, log_probs = self.recognize_arrays(arrays, batch_size)
        framings = (single_band_frame, loose_frame) if self.frames_single_bands else \
            (loose_frame,)
        framed = [(index, _first_framing(array, framings)) for index, array in enumerate(arrays)]
        framed = [(index, array) for index, array in framed if array is not None]
        if framed:
            again, again_log_probs = self.recognize_arrays([a for _, a in framed], batch_size)
            for (index, _), text, log_prob in zip(framed, again, again_log_probs):
                if log_prob > log_probs[index]:
                    texts[index], log_probs[index] = text, log_prob
        return texts, log_probs

    def recognize_files(self, paths, batch_size=64):
        """Recognise image files of any size and mode; returns (texts, log_probs, arrays)."""
        arrays = [load_image(path, self.height) for path in paths]
        texts, log_probs = self.recognize_arrays(arrays, batch_size)
        return texts, log_probs, arrays

    def evaluate(self, dataset, batch_size=64, keep_examples=24, progress=None, fold=None,
                 unreadable=None):
        """Figures over a dataset and up to ``keep_examples`` (image, read, truth) examples:
        :func:`evaluate_dataset` with this model (an unreadable image counts as a wrong, empty
        reading; ``unreadable``, a list, receives their names)."""
        return evaluate_dataset(dataset, lambda arrays: self.read_crops(arrays, batch_size)[0],
                                batch_size, keep_examples=keep_examples, progress=progress,
                                fold=fold, unreadable=unreadable)


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
        with a character language model, before any lexicon.
      towers: run each batch over this many towers (the first GPUs, else virtual CPUs).
      strategy: the towers' placement (``crnn_multigpu.wrapper.strategies``; default: one copy of
        the variables on the host CPU).
      model_cls: the model class to build (``crnn_multigpu.ocr.model_class`` says what it
        needs); default: the one the run's config.json names, else CRNN.

    ``model_cls``, ``model`` (tower 0: the plain model), ``height`` (of the images it reads)
    and ``image_width`` (fixed, or None) describe what was built; ``frames_single_bands`` says
    whether :meth:`read_crops` also reads a tight single-band crop framed.
    """

    def __init__(self, run_dir, beam_width=0, checkpoint=None, lexicon=None, towers=1,
                 strategy=None, model_cls=None, language_model=None):
        config = RunConfig.read(run_dir)
        self.model_cls = model_class.from_config(config, os.path.join(run_dir, CONFIG_NAME),
                                                 model_cls)
        super(Recognizer, self).__init__(config, lexicon, language_model)
        self.downsample = self.model_cls.DOWNSAMPLE
        self.checkpoint = require_checkpoint(run_dir, checkpoint)
        # beam_width only when a beam search is asked for: a greedy-only class need not take it.
        beam = {"beam_width": beam_width} if beam_width > 1 else {}
        self.graph = tf.Graph()
        with self.graph.as_default():
            saver = self._build(run_dir, towers, strategy, beam)
        self.session = tf.Session(graph=self.graph, config=session_config(towers))
        saver.restore(self.session, self.checkpoint)
        self.session.run(self.towers.post_init_op)
        log.info("restored %s", self.checkpoint)

    @classmethod
    def shipped(cls, name, **options):
        """The Recognizer of the shipped model ``name`` (``ocr.shipped.SHIPPED``: text, words,
        zh), with the ``options`` of the constructor."""
        return cls(shipped_model(name), **options)

    def _build(self, run_dir, towers, strategy, beam):
        """Build the towers into the current graph; the Saver of the model's variables. A class
        named instead of the run's own that cannot build or restore it is refused as such."""
        config_path = os.path.join(run_dir, CONFIG_NAME)
        another = model_class.path_of(self.model_cls) != model_class.recorded_class(self.config)
        try:
            self.towers = MultiGpuModel(model_class.guarded(self.model_cls),
                                        devices=first_devices(towers), strategy=strategy,
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
