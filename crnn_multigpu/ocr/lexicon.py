"""Lexicon-constrained decoding (Shi, Bai & Yao 2015, section 2.3.2), in plain Python and numpy.

With a lexicon D the transcription is the word l in D with the highest CTC
probability p(l | y) given the per-frame distributions y. Two modes:

- ``all`` (the paper's exact mode for small lexicons): score every word of D.
- ``nearest`` (the paper's mode for large lexicons): score only the words within
  edit distance ``delta`` of the unconstrained (greedy or beam) output, found with
  a BK-tree; when no word is that near, the unconstrained output is kept.

``auto`` picks ``all`` for lexicons of at most ``SMALL_LEXICON`` words.
Scores are log p(l | y) summed over all CTC alignments (the forward algorithm),
the same quantity as ``-tf.nn.ctc_loss`` of the model (blank = last class).

Cost, measured with ``scripts/lexicon_timing.py`` (50,000 random words of
/usr/share/dict/american-english; near-miss readings of 25 frames x 37 classes, i.e.
a 100-pixel-wide line; 2 CPU cores shared with a training job, load ~8, so an idle
core is faster): BK-tree build 2.0-2.2 s; per image at delta 3 about 200 ms, of
which ~150 ms is the tree search (it visits about half of the words: short English
words are all within a few edits of each other) and the rest CTC scoring of ~220
candidates on average (median 37); delta 2: ~95 ms (26 % visited), delta 1: ~15 ms
(4 %); scoring all 50,000 words (``all``): ~1.6-1.9 s per image.
"""
import io
import logging
import os

import numpy as np

from crnn_multigpu.ocr.metrics import edit_distance

log = logging.getLogger(__name__)

__all__ = ["SMALL_LEXICON", "SEARCH_MODES", "BKTree", "LexiconDecoder", "ctc_log_likelihood",
           "ctc_log_likelihoods", "fit_to_charset", "read_lexicon"]

SMALL_LEXICON = 1000  # ``auto`` scores every word of a lexicon up to this size
SEARCH_MODES = ("auto", "all", "nearest")


def read_lexicon(path):
    """Words of a UTF-8 file, one per line; surrounding white space and blank lines are ignored.

    Raises ``FileNotFoundError`` / ``ValueError`` with one line naming the file
    (and the line, for text that is not UTF-8).
    """
    if not os.path.exists(path):
        raise FileNotFoundError("lexicon file %s does not exist: pass a UTF-8 text file with one "
                                "word per line" % path)
    if not os.path.isfile(path):
        raise ValueError("lexicon %s is not a file: pass a UTF-8 text file with one word per line"
                         % path)
    with io.open(path, "rb") as handle:
        data = handle.read()
    if data.startswith(b"\xef\xbb\xbf"):  # byte-order mark from Windows editors
        data = data[3:]
    words = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError("lexicon file %s line %d is not UTF-8 (byte 0x%02x at column %d): "
                             "save the file as UTF-8" % (path, number, raw[error.start],
                                                         error.start + 1))
        word = line.strip()
        if word:
            words.append(word)
    if not words:
        raise ValueError("lexicon file %s has no words: put one word on each line" % path)
    return words


def fit_to_charset(words, charset):
    """Map words to what ``charset`` can emit: ``(kept, dropped)``, both lists, order kept.

    Words are lower-cased when the charset has lower-case letters but no upper-case
    ones (the default 0-9a-z charset, case-insensitive labels), upper-cased in the
    opposite case; words that still have characters outside the charset are dropped;
    repeats (after the case mapping) are kept once.
    """
    chars = charset.chars
    has_upper = any(c != c.lower() for c in chars)
    has_lower = any(c != c.upper() for c in chars)
    if has_lower and not has_upper:
        fold = str.lower
    elif has_upper and not has_lower:
        fold = str.upper
    else:
        fold = None
    kept, dropped, seen = [], [], set()
    for word in words:
        mapped = fold(word) if fold else word
        if not mapped or any(c not in charset for c in mapped):
            dropped.append(word)
        elif mapped not in seen:
            seen.add(mapped)
            kept.append(mapped)
    return kept, dropped


class BKTree(object):
    """Burkhard-Keller tree over words with the Levenshtein metric.

    ``search(word, delta)`` returns every stored word within edit distance
    ``delta`` of ``word``, without comparing against all of them: by the triangle
    inequality only children at distance ``d - delta .. d + delta`` from a node at
    distance ``d`` can hold matches.
    """

    def __init__(self, words=(), distance=edit_distance):
        self.distance = distance
        self._words = []
        self._children = []  # per node: {distance to the node's word: child node index}
        for word in words:
            self.add(word)

    def __len__(self):
        return len(self._words)

    def add(self, word):
        """Insert ``word``; a word already stored is ignored."""
        if not self._words:
            self._words.append(word)
            self._children.append({})
            return
        node = 0
        while True:
            d = self.distance(word, self._words[node])
            if d == 0:
                return
            child = self._children[node].get(d)
            if child is None:
                self._children[node][d] = len(self._words)
                self._words.append(word)
                self._children.append({})
                return
            node = child

    def search(self, word, delta):
        """``[(distance, word)]`` of the words within ``delta``, nearest first (ties: by word)."""
        if not self._words:
            return []
        found, stack = [], [0]
        words, children, distance = self._words, self._children, self.distance
        while stack:
            node = stack.pop()
            d = distance(word, words[node])
            if d <= delta:
                found.append((d, words[node]))
            low, high = d - delta, d + delta
            for edge, child in children[node].items():
                if low <= edge <= high:
                    stack.append(child)
        found.sort()
        return found


def ctc_log_likelihoods(log_probs, labels, blank=None):
    """log p(label | frames) for each label, by the CTC forward algorithm in log space.

    Args:
      log_probs: float array [T, C], per-frame log-probabilities (log-softmax) of one image.
      labels: sequences of class ids (no blanks).
      blank: the blank class; default the last one (``C - 1``), as in the CRNN model.

    Returns:
      float64 array [len(labels)]; ``-inf`` for labels no alignment fits into T frames.
      Labels of equal length are scored together, so scoring a whole lexicon costs
      T vectorised steps per distinct length.
    """
    log_probs = np.asarray(log_probs, dtype=np.float64)
    if log_probs.ndim != 2:
        raise ValueError("log_probs must be [frames, classes], got shape %s" % (log_probs.shape,))
    num_classes = log_probs.shape[1]
    blank = num_classes - 1 if blank is None else int(blank)
    return _score_groups(log_probs, _group_by_length(labels, num_classes, blank), blank)


def _group_by_length(labels, num_classes, blank):
    """``(count, [(positions, [K, L] ids)])``: labels stacked by length for vectorised scoring."""
    labels = [np.asarray(label, dtype=np.int64).reshape(-1) for label in labels]
    by_length = {}
    for position, label in enumerate(labels):
        if label.size and (label.min() < 0 or label.max() >= num_classes or (label == blank).any()):
            raise ValueError("label %s has ids outside 0..%d or the blank %d"
                             % (label.tolist(), num_classes - 1, blank))
        by_length.setdefault(label.size, []).append(position)
    groups = []
    for length, positions in sorted(by_length.items()):
        stacked = np.stack([labels[p] for p in positions]) if length else \
            np.zeros((len(positions), 0), np.int64)
        groups.append((np.asarray(positions), stacked))
    return len(labels), groups


def _score_groups(log_probs, grouped, blank):
    count, groups = grouped
    scores = np.full(count, -np.inf)
    for positions, stacked in groups:
        if log_probs.shape[0] == 0:
            scores[positions] = 0.0 if stacked.shape[1] == 0 else -np.inf
        else:
            scores[positions] = _forward(log_probs, stacked, blank)
    return scores


def _forward(log_probs, labels, blank):
    """CTC forward pass for K labels of one length L: [K] log-likelihoods."""
    count, length = labels.shape
    states = 2 * length + 1
    extended = np.full((count, states), blank, dtype=np.int64)  # blank, l1, blank, l2, ..., blank
    extended[:, 1::2] = labels
    # A state may be entered from two back (skipping a blank) when it is a label
    # that differs from the label two back.
    skip = np.zeros((count, states), dtype=bool)
    if length > 1:
        skip[:, 3::2] = labels[:, 1:] != labels[:, :-1]
    alpha = np.full((count, states), -np.inf)
    alpha[:, 0] = log_probs[0, blank]
    if length:
        alpha[:, 1] = log_probs[0, extended[:, 1]]
    minus_inf = np.full((count, 2), -np.inf)
    for t in range(1, log_probs.shape[0]):
        from_one = np.concatenate([minus_inf[:, :1], alpha[:, :-1]], axis=1)
        from_two = np.where(skip, np.concatenate([minus_inf, alpha[:, :-2]], axis=1), -np.inf)
        alpha = np.logaddexp(np.logaddexp(alpha, from_one), from_two) + log_probs[t][extended]
    if length == 0:
        return alpha[:, 0]
    return np.logaddexp(alpha[:, -1], alpha[:, -2])


def ctc_log_likelihood(log_probs, label, blank=None):
    """log p(label | frames) of one label; see :func:`ctc_log_likelihoods`."""
    return float(ctc_log_likelihoods(log_probs, [label], blank)[0])


class LexiconDecoder(object):
    """Replace an unconstrained transcription by the most probable lexicon word.

    Args:
      words: the lexicon (e.g. from :func:`read_lexicon`); mapped to ``charset`` by
        :func:`fit_to_charset`, words it cannot emit are dropped (logged, ``dropped``).
      charset: the model's :class:`~crnn_multigpu.datasets.charset.Charset`.
      delta: edit distance of the ``nearest`` mode's candidates (paper: 3).
      search: ``auto`` (``all`` up to ``SMALL_LEXICON`` words, else ``nearest``),
        ``all`` (exact: score every word) or ``nearest`` (BK-tree candidates).
      name: how messages refer to the lexicon (e.g. its file name).
    """

    def __init__(self, words, charset, delta=3, search="auto", name="the lexicon"):
        if search not in SEARCH_MODES:
            raise ValueError("lexicon search must be one of %s, got %r" % ("/".join(SEARCH_MODES),
                                                                           search))
        if int(delta) != delta or delta < 0:
            raise ValueError("lexicon delta must be a whole number >= 0, got %r" % (delta,))
        words = list(words)
        self.charset = charset
        self.delta = int(delta)
        self.words, dropped = fit_to_charset(words, charset)
        self.dropped = len(dropped)
        if not self.words:
            raise ValueError("%s: none of its %d words fits the model's charset %r"
                             % (name, len(words), charset.chars))
        if dropped:
            log.info("%s: dropped %d of %d words with characters outside the charset (e.g. %s)",
                     name, len(dropped), len(words), ", ".join(repr(w) for w in dropped[:3]))
        if search == "auto":
            search = "all" if len(self.words) <= SMALL_LEXICON else "nearest"
        self.search = search
        self._all = (_group_by_length([charset.encode(word) for word in self.words],
                                      charset.num_classes, charset.blank)
                     if search == "all" else None)
        self.tree = BKTree(self.words) if search == "nearest" else None
        log.info("%s: %d words, search %s%s", name, len(self.words), search,
                 " within edit distance %d" % self.delta if search == "nearest" else "")

    def __len__(self):
        return len(self.words)

    def candidates(self, text):
        """The lexicon words the decoder scores for the unconstrained output ``text``."""
        if self.search == "all":
            return list(self.words)
        return [word for _, word in self.tree.search(text, self.delta)]

    def decode(self, text, log_probs):
        """``(text, log_prob)``: the best candidate for the unconstrained output ``text``.

        ``log_probs`` is the image's [T, num_classes] per-frame log-probabilities
        (valid frames only). ``log_prob`` is log p(text | image) over all alignments.
        Without a candidate (none within delta, or none that fits T frames) the
        unconstrained ``text`` is kept.
        """
        log_probs = np.asarray(log_probs)
        if log_probs.ndim != 2 or log_probs.shape[1] != self.charset.num_classes:
            raise ValueError("log_probs must be [frames, %d] for this charset, got shape %s"
                             % (self.charset.num_classes, log_probs.shape))
        if self.search == "all":
            words = self.words
            scores = _score_groups(np.asarray(log_probs, np.float64), self._all, self.charset.blank)
        else:
            words = self.candidates(text)
            scores = ctc_log_likelihoods(log_probs, [self.charset.encode(w) for w in words])
        if words:
            best = int(np.argmax(scores))  # ties: the first, i.e. the nearest in edit distance
            if np.isfinite(scores[best]):
                return words[best], float(scores[best])
        return text, ctc_log_likelihood(log_probs, self.charset.encode(text))
