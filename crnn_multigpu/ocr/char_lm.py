"""A character n-gram language model and the CTC prefix beam search that reads with it.

Greedy CTC decoding takes each frame's best class on its own, so a reading the image leaves in
doubt ("pllable" or "pliable", "5uing" or "suing") is settled by the pixels alone. The beam
search here keeps the ``beam`` most probable prefixes of every frame, as the usual CTC prefix
search does, and scores each by

    log p_ctc(prefix | frames) + weight * log p_lm(prefix) + bonus * len(prefix)

(shallow fusion; the bonus offsets the LM's cost of every character), with the end of the
text scored by the LM too. The LM (:class:`CharNgramModel`) is a character n-gram with
Witten-Bell interpolation, counted from English prose: by default the training part of the
prose the line generator reads (``datasets.lines.load_prose``), so the held-out prose that
validates line models stays unseen. For a model whose charset has no space (the 36-class
word model), the prose is lower-cased where the charset has one case and cut into words.
"""
import logging

import numpy as np

from crnn_multigpu.ocr.lexicon import ctc_log_likelihood

log = logging.getLogger(__name__)

__all__ = ["CharNgramModel", "CharLmDecoder", "prose_language_model"]

# Context markers, outside every charset (control characters, never in a label).
_START = "\x02"
# Chosen with make train's model on 1,000 words of its held-out families rendered apart from
# its validation set (crnn-generate --fonts heldout --kinds word --seed 7), over orders 3-6,
# weights 0.1-1.2 and bonuses 0-2.5: 91.8 % greedy, 93.4 % so (see the README).
DEFAULT_WEIGHT = 0.2
DEFAULT_BONUS = 1.5
DEFAULT_BEAM = 8
DEFAULT_ORDER = 4
# A class below this probability in a frame is not tried as that frame's character.
_PRUNE = np.log(1e-3)


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
        self.charset, self.order = charset, int(order)
        self._end = charset.num_classes - 1  # the blank's id stands for the end of the text
        self._ids = dict((char, index) for index, char in enumerate(charset.chars))
        self._counts = {}  # context -> [class ids seen after it]
        units = 0
        for text in texts:
            ids = [self._ids[char] for char in text if char in self._ids]
            if not ids:
                continue
            units += 1
            # One start mark: a context never holds more (they would repeat one event).
            marked = _START + "".join(charset.chars[i] for i in ids)
            for position, next_id in enumerate(ids + [self._end]):
                end = position + 1
                for length in range(min(self.order - 1, end) + 1):
                    self._counts.setdefault(marked[end - length:end], []).append(next_id)
        if not units:
            raise ValueError("the language model has no text in the model's charset to learn from")
        self._tables = dict((context, np.bincount(seen, minlength=charset.num_classes))
                            for context, seen in self._counts.items())
        del self._counts
        self._cache = {}
        log.info("character %d-gram model: %d texts, %d contexts", self.order, units,
                 len(self._tables))

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
        return cached

    def _probs(self, context):
        if not context:
            lower = np.full(self.charset.num_classes, 1.0 / self.charset.num_classes)
        else:
            lower = self._probs(context[1:])
        counts = self._tables.get(context)
        if counts is None:
            return lower
        seen, kinds = counts.sum(), np.count_nonzero(counts)
        return (counts + kinds * lower) / float(seen + kinds)

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
        beams = {"": [0.0, -np.inf, 0.0]}
        for frame in log_probs:
            tried = [c for c in np.flatnonzero(frame > _PRUNE) if c != blank]
            grown = {}
            for prefix, (with_blank, with_char, prior) in beams.items():
                total = np.logaddexp(with_blank, with_char)
                entry = grown.setdefault(prefix, [-np.inf, -np.inf, prior])
                entry[0] = np.logaddexp(entry[0], total + frame[blank])
                if tried:
                    lm = self.model.log_probs(self.model.context_of(prefix))
                for c in tried:
                    extended = prefix + chars[c]
                    # A repeat of the last character is a new one only after a blank.
                    source = with_blank if prefix and chars[c] == prefix[-1] else total
                    target = grown.setdefault(extended, [-np.inf, -np.inf,
                                                         prior + self.weight * lm[c] + self.bonus])
                    target[1] = np.logaddexp(target[1], source + frame[c])
                    if prefix and chars[c] == prefix[-1]:
                        entry[1] = np.logaddexp(entry[1], with_char + frame[c])
            beams = dict(sorted(grown.items(), key=lambda item: -self._score(item[1]))[:self.beam])
        end = self.charset.num_classes - 1
        return max(beams, key=lambda prefix: self._score(beams[prefix]) + self.weight *
                   self.model.log_probs(self.model.context_of(prefix))[end])

    @staticmethod
    def _score(entry):
        return np.logaddexp(entry[0], entry[1]) + entry[2]


def prose_language_model(charset, order=DEFAULT_ORDER, texts=None):
    """A :class:`CharNgramModel` for ``charset`` counted from the training part of the line
    generator's prose (or ``texts``): lines as they are for a charset with a space, else words
    (lower-cased where the charset has one case)."""
    from crnn_multigpu.datasets.lines import load_prose
    from crnn_multigpu.datasets.charset import Charset
    units = load_prose(Charset.printable_ascii(), texts, part="train")
    if " " not in charset:
        lower_only = not any(char.isupper() for char in charset.chars)
        words = []
        for unit in units:
            words.extend((unit.lower() if lower_only else unit).split())
        # Punctuation around a word is no part of it; inside ("don't", "e.g") it ends a piece.
        units = [piece for word in words for piece in
                 "".join(c if c in charset else " " for c in word).split()]
    return CharNgramModel(charset, units, order)
