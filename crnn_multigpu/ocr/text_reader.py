"""What every reader of a model shares, whatever runs it (TensorFlow in ``ocr.inference``,
onnxruntime in ``ocr.onnx_reader``): the run's config, the decoders that re-read its frames,
the reading of crops, arrays and datasets in batches, and the scoring of a dataset.

This module imports no TensorFlow, so that a reader which does not need it (the ONNX one)
starts without it.
"""
from crnn_multigpu.datasets import make_batch
from crnn_multigpu.datasets.images import grey_pixels, inverted, normalise, widened
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.unreadable import UnreadableImages
from crnn_multigpu.ocr.ctc import beam_frames, check_beam_width
from crnn_multigpu.ocr.metrics import text_metrics
from crnn_multigpu.ocr.text_box import as_capitals, frame_text


# How much more probable (natural log) a band's reading framed as capitals must be to be kept
# over its reading framed as small letters: c, o, s, v, w, x and z differ only in size, and
# "summer" framed as capitals read "Summer", a little more surely.
CAPITALS_MARGIN = 1.0
# Condensed type (a sign's narrow capitals, a condensed face squeezed further) brought to the
# model's height leaves it too few columns a letter: AT, 17 px wide at 32 px high, read as
# nothing. Every crop is also read widened CONDENSED_STRETCH times, that reading kept when it is
# CONDENSED_MARGIN (natural log) more probable. On 400 words of the project's own in condensed
# faces squeezed to 50-100 % of their width (training and held-out sides): 61.8 % -> 81.0 %
# exactly right; 2,000 held-out-family words (95.9 %), 300 loose crops and 150 loose Chinese
# lines unchanged. A smaller margin took more condensed words and lost plain ones.
CONDENSED_STRETCH = 2.0
CONDENSED_MARGIN = 0.5
# A crop's polarity is judged from its border (normalise): a sign's frame or a coloured bar
# at its edge makes dark text on a light field look like light text on a dark one (NOTICE,
# PARKING in a yellow frame: read as nothing). Every crop is also read inverted, that reading
# kept when it is POLARITY_MARGIN (natural log) more probable: the README's photographed words
# 21 -> 26 of 33 (any margin from 0 to 2 alike); 2,000 held-out-family words 91.8 -> 92.1 %
# (case-blind), 400 condensed words, 300 loose crops and 150 loose Chinese lines unchanged.
POLARITY_MARGIN = 1.0


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

    ``config`` is the run's config.json (a ``ocr.run_config.RunConfig``); ``lexicon`` and
    ``language_model``: see :class:`~crnn_multigpu.ocr.inference.Recognizer`.
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

    def _run(self, batch, frames):
        """(texts, log probabilities, per-image frame log-probabilities ``[T_i, num_classes]``
        or None unless ``frames``) of a ``Batch``."""
        raise NotImplementedError

    def check_beam_width(self, beam_width, name):
        """Refuse ``beam_width`` for the model ``name`` (its run or file) before any work when a
        beam search that wide over its classes and frames would cost more than
        :func:`~crnn_multigpu.ocr.ctc.check_beam_width` allows; needs ``downsample``."""
        check_beam_width(beam_width, self.charset.num_classes,
                         beam_frames(self.image_width, self.downsample), what=name)

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

    def crop_array(self, source):
        """The word or line crop ``source`` (a path, bytes or a PIL image of any size and mode)
        as the model reads it: its text found and cut as the model's training crops frame
        theirs (:func:`~crnn_multigpu.ocr.text_box.frame_text`, whatever its margins,
        background and place on the canvas), normalised to the model's height. Raises
        ValueError naming an image that cannot be read."""
        return normalise(frame_text(grey_pixels(source), self.language.band_room), self.height)

    def read_crops(self, arrays, batch_size=64):
        """Recognise crops a user cut, a word or a line each, made arrays by
        :meth:`crop_array`. Returns (texts, log_probs). A crop that is one band of ink (framed
        as small letters) is also read framed as capitals
        (:func:`~crnn_multigpu.ocr.text_box.as_capitals`), and every crop widened
        (:data:`CONDENSED_STRETCH`) and inverted (:data:`POLARITY_MARGIN`): the more probable
        reading is kept, by a margin."""
        texts, log_probs = self.recognize_arrays(arrays, batch_size)
        capitals = [(index, as_capitals(array)) for index, array in enumerate(arrays)]
        again = [(index, normalise(framed, self.height), CAPITALS_MARGIN)
                 for index, framed in capitals if framed is not None]
        again += [(index, widened(array, CONDENSED_STRETCH), CONDENSED_MARGIN)
                  for index, array in enumerate(arrays)]
        again += [(index, inverted(array), POLARITY_MARGIN) for index, array in enumerate(arrays)]
        if again:
            for (index, _, margin), text, log_prob in zip(again, *self.recognize_arrays(
                    [array for _, array, _ in again], batch_size)):
                if log_prob > log_probs[index] + margin:
                    texts[index], log_probs[index] = text, log_prob
        return texts, log_probs

    def recognize_files(self, paths, batch_size=64):
        """Recognise crop files of any size and mode (:meth:`crop_array`); returns (texts,
        log_probs, arrays)."""
        arrays = [self.crop_array(path) for path in paths]
        texts, log_probs = self.read_crops(arrays, batch_size)
        return texts, log_probs, arrays

    def evaluate(self, dataset, batch_size=64, keep_examples=24, progress=None, fold=None,
                 unreadable=None):
        """Figures over a dataset and up to ``keep_examples`` (image, read, truth) examples:
        :func:`evaluate_dataset` with this model (an unreadable image counts as a wrong, empty
        reading; ``unreadable``, a list, receives their names)."""
        return evaluate_dataset(dataset, lambda arrays: self.read_crops(arrays, batch_size)[0],
                                batch_size, keep_examples=keep_examples, progress=progress,
                                fold=fold, unreadable=unreadable)
