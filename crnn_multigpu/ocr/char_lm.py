"""A character n-gram language model and the CTC prefix beam search that reads with it.

Greedy CTC decoding takes each frame's best class on its own, so a reading the image leaves in
doubt ("pllable" or "pliable", "5uing" or "suing") is settled by the pixels alone. The beam
search here keeps the ``beam`` most probable prefixes of every frame, as the usual CTC prefix
search does, and scores each by

    log p_ctc(prefix | frames) + weight * log p_lm(prefix) + bonus * len(prefix)

(shallow fusion; the bonus offsets the LM's cost of every character), with the end of the
text scored by the LM too. The LM (:class:`CharNgramModel`) is a character n-gram with
Witten-Bell interpolation, counted from a language's prose: the training part of the prose
the line generator reads (``Language.prose``), so the held-out prose that validates line
models stays unseen, and, where the language's description says so, its word list. A
description sets the order, weight and bonus and whether its models read with the LM by
default (``char_lm``; Chinese does, English only with ``--char-lm``); a language whose prose a
user's machine lacks ships its counts (``CharNgramModel.save``, ``scripts/build_char_lm.py``).
For a model whose charset has no space (the 36-class word model), the prose is lower-cased
where the charset has one case and cut into words.
"""
import collections
import logging
import math
import os

import numpy as np

from crnn_multigpu.datasets.language import CHAR_LM_DEFAULTS, get_language
from crnn_multigpu.datasets.words import WordList
from crnn_multigpu.ocr.lexicon import ctc_log_likelihood

log = logging.getLogger(__name__)

__all__ = ["CharNgramModel", "CharLmDecoder", "prose_language_model", "weighted_words",
           "load_language_model", "reading_decoder"]

# Context markers, outside every charset (control characters, never in a label).
_START = "\x02"
# English's settings (a language's description may set its own: datasets.language).
DEFAULT_WEIGHT = CHAR_LM_DEFAULTS["weight"]
DEFAULT_BONUS = CHAR_LM_DEFAULTS["bonus"]
DEFAULT_BEAM = 8
DEFAULT_ORDER = CHAR_LM_DEFAULTS["order"]
_NEG_INF = float("-inf")
# A class below this probability in a frame is not tried as that frame's character.
_PRUNE = np.log(1e-3)
# What the distributions a model keeps at hand may take (64 MB: every context of an English
# model, about 1,200 of a Chinese one, more than one line's beam search visits).
_CACHE_BYTES = 64 << 20


class CharNgramModel(object):
    """P(next character | the previous ``order - 1``), over a charset and an end-of-text mark.

    Witten-Bell interpolation: a context seen ``n`` times with ``t`` different continuations
    gives ``(count(c) + t * P(c | shorter context)) / (n + t)``, down to a uniform
    distribution; so every character of the charset keeps some probability.
    ``log_probs(context)`` is a vector indexed by class id, its last entry (the model's blank
    id) the probability that the text ends there.
    """

    def __init__(self, charset, texts, order=DEFAULT_ORDER):
        if int(order) != order or order < 1:
            raise ValueError("the language model's order must be a whole number >= 1, got %r"
                             % (order,))
        self._start(charset, order)
        counts = {}  # context -> {class id seen after it: times}
        units = 0
        for text in texts:
            kept = [char for char in text if char in self._ids]
            if not kept:
                continue
            units += 1
            ids = [self._ids[char] for char in kept]
            # One start mark: a context never holds more (they would repeat one event).
            marked = _START + "".join(kept)
            for position, next_id in enumerate(ids + [self._end]):
                end = position + 1
                for length in range(min(self.order - 1, end) + 1):
                    seen = counts.setdefault(marked[end - length:end], {})
                    seen[next_id] = seen.get(next_id, 0) + 1
        if not units:
            raise ValueError("the language model has no text in the model's charset to learn from")
        contexts = sorted(counts)
        starts = np.cumsum([0] + [len(counts[context]) for context in contexts])
        next_ids = np.fromiter((i for c in contexts for i in counts[c]), np.int64, starts[-1])
        times = np.fromiter((n for c in contexts for n in counts[c].values()), np.int64,
                            starts[-1])
        self._freeze(contexts, starts, next_ids, times)
        log.info("character %d-gram model: %d texts, %d contexts", self.order, units,
                 len(contexts))

    def _start(self, charset, order):
        self.charset, self.order = charset, int(order)
        self._end = charset.num_classes - 1  # the blank's id stands for the end of the text
        self._ids = dict((char, index) for index, char in enumerate(charset.chars))

    def _freeze(self, contexts, starts, next_ids, times):
        # Sparse rows (a context of a 6,900-class charset is followed by a handful of
        # characters): context -> its row of (class id, times) in the flat arrays.
        self._rows = dict((context, row) for row, context in enumerate(contexts))
        self._starts = np.asarray(starts, np.int64)
        self._next_ids, self._times = np.asarray(next_ids, np.int64), np.asarray(times, np.int64)
        # Each cached distribution is a vector over the charset: bound them by memory.
        self._cache = collections.OrderedDict()
        self._cache_size = max(64, _CACHE_BYTES // (8 * self.charset.num_classes))

    @property
    def context_count(self):
        """How many contexts were seen."""
        return len(self._rows)

    def save(self, path):
        """Write the counts to ``path`` (a compressed .npz) for :meth:`load`."""
        if self.charset.num_classes - 1 > np.iinfo(np.uint16).max or \
                self._times.max() > np.iinfo(np.uint32).max:
            raise ValueError("the counts do not fit the saved file's 16-bit class ids and 32-bit "
                             "counts (%d classes, a count of %d)"
                             % (self.charset.num_classes, self._times.max()))
        contexts = sorted(self._rows, key=self._rows.get)
        with open(path, "wb") as stream:  # numpy would add ".npz" to a path without it
            np.savez_compressed(
                stream, order=self.order,
                charset=np.frombuffer(self.charset.chars.encode("utf-8"), np.uint8),
                contexts=np.frombuffer("\0".join(contexts).encode("utf-8"), np.uint8),
                starts=self._starts, next_ids=self._next_ids.astype(np.uint16),
                times=self._times.astype(np.uint32))

    @classmethod
    def load(cls, path, charset):
        """The model :meth:`save` wrote to ``path``, for ``charset``: a character the counts
        know and ``charset`` lacks is never read, so it is dropped, and one ``charset`` has
        and the counts lack keeps the smoothing's share."""
        with np.load(path) as saved:
            counted = saved["charset"].tobytes().decode("utf-8")
            order, starts = int(saved["order"]), saved["starts"].astype(np.int64)
            next_ids, times = saved["next_ids"].astype(np.int64), saved["times"].astype(np.int64)
            contexts = saved["contexts"].tobytes().decode("utf-8").split("\0")
        model = cls.__new__(cls)
        model._start(charset, order)
        if counted != charset.chars:
            # Counted class id -> this charset's (-1: lacked); the end stays the end.
            ids = np.array([model._ids.get(char, -1) for char in counted] + [model._end])
            next_ids = ids[next_ids]
            kept = next_ids >= 0
            rows = np.repeat(np.arange(len(contexts)), np.diff(starts))[kept]
            starts = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(contexts)))])
            next_ids, times = next_ids[kept], times[kept]
        model._freeze(contexts, starts, next_ids, times)
        return model

    def context_of(self, prefix):
        """The context after ``prefix``: its last ``order - 1`` characters, the start mark
        first while it is shorter."""
        return (_START + prefix)[-(self.order - 1):] if self.order > 1 else ""

    def log_probs(self, context):
        """log P(class | context) for every class id (the last one: the text ends)."""
        cached = self._cache.get(context)
        if cached is None:
            cached = np.log(self._probs(context))
            self._cache[context] = cached
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(context)
        return cached

    def _probs(self, context):
        if not context:
            lower = np.full(self.charset.num_classes, 1.0 / self.charset.num_classes)
        else:
            lower = self._probs(context[1:])
        row = self._rows.get(context)
        if row is None:
            return lower
        start, stop = self._starts[row], self._starts[row + 1]
        if stop == start:  # all it was seen before lies outside the charset it was loaded for
            return lower
        ids, times = self._next_ids[start:stop], self._times[start:stop]
        kinds = stop - start
        probs = kinds * lower
        probs[ids] += times
        return probs / float(times.sum() + kinds)

    def text_log_prob(self, text):
        """log P(text, then its end) under the model."""
        total, prefix = 0.0, ""
        for char in text:
            total += self.log_probs(self.context_of(prefix))[self._ids[char]]
            prefix += char
        return total + self.log_probs(self.context_of(prefix))[self._end]


class CharLmDecoder(object):
    """Re-read an image's frames by a CTC prefix beam search fused with a :class:`CharNgramModel`.

    The decoder protocol of :class:`~crnn_multigpu.ocr.lexicon.LexiconDecoder` (``charset``,
    ``decode(text, log_probs) -> (text, log_prob)``), so a ``Recognizer`` applies it to every
    image; ``log_prob`` is log p(text | image) over all alignments, as the model scores it.
    """

    def __init__(self, model, weight=DEFAULT_WEIGHT, bonus=DEFAULT_BONUS, beam=DEFAULT_BEAM):
        if not weight >= 0 or not np.isfinite(weight):
            raise ValueError("the language model weight must be a number >= 0, got %r" % (weight,))
        if not np.isfinite(bonus):
            raise ValueError("the language model bonus must be a finite number, got %r"
                             % (bonus,))
        if int(beam) != beam or beam < 1:
            raise ValueError("the language model beam must be a whole number >= 1, got %r"
                             % (beam,))
        self.model, self.charset = model, model.charset
        self.weight, self.bonus, self.beam = float(weight), float(bonus), int(beam)

    def decode(self, text, log_probs):
        """``(text, log_prob)``: the best prefix of the fused beam search over ``log_probs``
        ([T, num_classes] of one image, valid frames, blank last). ``text`` (the greedy
        reading) is not needed: the search starts from the frames."""
        del text
        log_probs = np.asarray(log_probs, np.float64)
        if log_probs.ndim != 2 or log_probs.shape[1] != self.charset.num_classes:
            raise ValueError("log_probs must be [frames, %d] for this charset, got shape %s"
                             % (self.charset.num_classes, log_probs.shape))
        best = self._search(log_probs)
        ids = self.charset.encode(best)
        return best, ctc_log_likelihood(log_probs, ids, self.charset.blank)

    def _search(self, log_probs):
        blank, chars = self.charset.blank, self.charset.chars
        # prefix -> [log p(prefix, last frame blank), log p(prefix, last frame a character),
        #            weight * log p_lm(prefix) + bonus * len(prefix)]
        beams = {"": [0.0, _NEG_INF, 0.0]}
        for frame in log_probs:
            tried = [c for c in np.flatnonzero(frame > _PRUNE).tolist() if c != blank]
            tried_log_probs = frame[tried].tolist()
            blank_log_prob = float(frame[blank])
            grown = {}
            for prefix, (with_blank, with_char, prior) in beams.items():
                total = _log_add(with_blank, with_char)
                entry = grown.setdefault(prefix, [_NEG_INF, _NEG_INF, prior])
                entry[0] = _log_add(entry[0], total + blank_log_prob)
                if tried:
                    lm = self.model.log_probs(self.model.context_of(prefix))
                for c, frame_c in zip(tried, tried_log_probs):
                    char = chars[c]
                    # A repeat of the last character is a new one only after a blank.
                    repeat = prefix.endswith(char)
                    target = grown.setdefault(prefix + char, [
                        _NEG_INF, _NEG_INF, prior + self.weight * float(lm[c]) + self.bonus])
                    target[1] = _log_add(target[1], (with_blank if repeat else total) + frame_c)
                    if repeat:
                        entry[1] = _log_add(entry[1], with_char + frame_c)
            beams = dict(sorted(grown.items(), key=lambda item: -self._score(item[1]))[:self.beam])
        end = self.charset.num_classes - 1
        return max(beams, key=lambda prefix: self._score(beams[prefix]) + self.weight *
                   self.model.log_probs(self.model.context_of(prefix))[end])

    @staticmethod
    def _score(entry):
        return _log_add(entry[0], entry[1]) + entry[2]


def _log_add(a, b):
    """log(exp(a) + exp(b)) of two floats (-inf allowed): the search adds scalars, for which
    math's functions cost a fraction of numpy's."""
    if a < b:
        a, b = b, a
    if b == _NEG_INF:
        return a
    return a + math.log1p(math.exp(b - a))


def prose_language_model(charset, order=DEFAULT_ORDER, texts=None, language=None):
    """A :class:`CharNgramModel` for ``charset`` counted from the training part of the prose of
    ``language`` (a :class:`~crnn_multigpu.datasets.language.Language`; default English), or of
    ``texts`` (text files), and from its word list where its ``char_lm`` says ``words``: units
    as they are for a charset with a space, else words (lower-cased where the charset has one
    case)."""
    language = language or get_language()
    units = language.prose("train", texts)
    if language.char_lm["with_word_list"] and texts is None:
        path = language.word_list_path()
        if path is None:
            raise ValueError("%s.json's char_lm asks for its word list, but none of its "
                             "\"words\" paths is installed" % language.name)
        units += list(weighted_words(WordList(
            path, lambda word: None if charset.unknown_chars(word) else word, common_path=None,
            min_len=2, separator=language.word_list_separator, fmt=language.word_list_format)))
    if " " not in charset:
        lower_only = not any(char.isupper() for char in charset.chars)
        words = []
        for unit in units:
            words.extend((unit.lower() if lower_only else unit).split())
        # Punctuation around a word is no part of it; inside ("don't", "e.g") it ends a piece.
        units = [piece for word in words for piece in
                 "".join(c if c in charset else " " for c in word).split()]
    return CharNgramModel(charset, units, order)


def weighted_words(word_list):
    """The words of a :class:`~crnn_multigpu.datasets.words.WordList`, each repeated
    ``round(log10(1 + count))`` times, at least once: the list's counts say which words are
    common without letting the commonest drown the prose."""
    for word, count in zip(word_list.words, word_list.weights):
        for _ in range(max(1, int(round(math.log10(1 + count))))):
            yield word


def load_language_model(language, charset):
    """The character model ``language`` reads with: the counts its description ships
    (``char_lm.counts``, written by ``scripts/build_char_lm.py``), else counted from its prose
    at start-up (English: about 2 s)."""
    path = language.char_lm_counts_path()
    if path is not None:
        if not os.path.isfile(path):
            raise ValueError("%s is missing: the %s character model ships with the package; "
                             "count it again with scripts/build_char_lm.py --language %s"
                             % (path, language.title, language.name))
        model = CharNgramModel.load(path, charset)
        if model.order != language.char_lm["order"]:
            raise ValueError("%s holds a %d-gram but %s.json asks for order %d: count it again "
                             "with scripts/build_char_lm.py --language %s"
                             % (path, model.order, language.name, language.char_lm["order"],
                                language.name))
        return model
    return prose_language_model(charset, language.char_lm["order"], language=language)


def reading_decoder(language, charset, enabled=None, weight=None, bonus=None):
    """The :class:`CharLmDecoder` a model of ``language`` reads with, or None: when ``enabled``
    (default: the language's ``char_lm.on_by_default``), its character model, weight and bonus
    (``weight`` and ``bonus`` override them)."""
    settings = language.char_lm
    if not (settings["on_by_default"] if enabled is None else enabled):
        return None
    return CharLmDecoder(load_language_model(language, charset),
                         weight=settings["weight"] if weight is None else weight,
                         bonus=settings["bonus"] if bonus is None else bonus)
