"""CTC decoding in numpy, as TensorFlow's decoders do it, for readers that run the model
outside TensorFlow (``crnn_multigpu.ocr.onnx_reader``): the same frames give the same text.

Both take one image's valid frames ``[T, num_classes]`` (log-probabilities or logits, the
blank last) and return ``(class ids, log probability)``:

- :func:`greedy_decode`: ``tf.nn.ctc_greedy_decoder`` with ``merge_repeated=True``: each
  frame's best class (the first on a tie), repeats merged, blanks dropped; the log probability
  is the sum of the frames' best scores.
- :func:`beam_decode`: ``tf.nn.ctc_beam_search_decoder`` with ``top_paths=1`` and
  ``merge_repeated=False``, the CRNN's setting: a prefix beam search over every class that
  keeps the ``beam_width`` most probable prefixes at each frame, scoring a prefix by the sum
  over its alignments that stayed in the beam; the log probability is that of the best prefix.

How wide a beam may be follows the model (:func:`max_beam_width`, :func:`check_beam_width`):
TensorFlow's search gives every prefix of the beam a child for every class at every frame and
keeps them until the image is decoded, so its memory grows with classes x width x frames.
"""
import heapq
import itertools
import math

import numpy as np

__all__ = ["greedy_decode", "beam_decode", "max_beam_width", "check_beam_width", "beam_frames"]

# Peak memory of TensorFlow's beam search per entry (class x width x frame), measured by
# scripts/beam_search_memory.py over 2.5-14 M entries: 215-290 bytes on TF 2.21, 215-292 on TF
# 1.15 (more per entry with more classes), rounded up. The search in this module (the ONNX
# reader's) holds only the beam, but its time grows with the same product.
BYTES_PER_ENTRY = 300
# What one image's beam search may take: with it the shipped models allow widths 145 (text,
# 96 classes), 3022 (words, 37 classes, 32 frames) and 2 (zh, 6,900 classes).
BEAM_MEMORY_BUDGET = 2 ** 30
# The width, in pixels, of the long line a bound is set for when a model reads any width (32
# times a 32-pixel line's height: 256 frames of a CRNN); a wider line costs proportionally more.
LONG_LINE_PIXELS = 1024


def greedy_decode(frames):
    """``(ids, log_prob)`` of the best class of each frame, repeats merged, blanks dropped."""
    frames = np.asarray(frames)
    best = np.argmax(frames, axis=1)
    blank = frames.shape[1] - 1
    kept = (best != blank) & np.concatenate([[True], best[1:] != best[:-1]])
    return [int(c) for c in best[kept]], float(frames[np.arange(len(best)), best].sum())


def beam_decode(frames, beam_width):
    """``(ids, log_prob)`` of the most probable prefix of a CTC beam search ``beam_width`` wide,
    step for step as TensorFlow's ``CTCBeamSearchDecoder`` takes it (see :func:`_beam_step`)."""
    frames = np.asarray(frames, np.float64)
    # TensorFlow reads its input as logits: each frame becomes log-probabilities first.
    frames = frames - np.logaddexp.reduce(frames, axis=1, keepdims=True)
    beams = [((), 0.0, -math.inf)]  # (prefix, log p ending in a blank, log p ending in a label)
    for frame in frames:
        beams = _beam_step(beams, frame, beam_width)
    prefix, with_blank, with_label = beams[0]
    return list(prefix), _logaddexp(with_blank, with_label)


def _beam_step(beams, frame, beam_width):
    """The beams after one more frame, most probable first.

    First every prefix in the beam is carried on (a blank, a repeat of its last label, and
    its parent's extension when the parent is in the beam too). Then each prefix, most
    probable first, offers its children in class order; a child not in the beam enters when
    the beam has room or it beats the beam's least probable entry, which then leaves.
    TensorFlow's search has one more rule, kept here so that both read the same: a prefix
    that left the beam during this frame and then failed to enter again as a child of its
    parent offers no children of its own."""
    blank = len(frame) - 1
    scores = frame.tolist()  # Python floats: the scalar arithmetic below is per prefix
    index = dict((prefix, i) for i, (prefix, _, _) in enumerate(beams))
    old_blank = [entry[1] for entry in beams]
    old_total = [_logaddexp(entry[1], entry[2]) for entry in beams]
    beam = _Beam(beam_width)
    old_children = {}  # parent -> labels of its children in the old beam
    for i, (prefix, _, label) in enumerate(beams):
        if prefix:
            old_children.setdefault(prefix[:-1], []).append(prefix[-1])
            parent = index.get(prefix[:-1])
            if parent is not None:
                repeat = len(prefix) > 1 and prefix[-2] == prefix[-1]
                label = _logaddexp(label, old_blank[parent] if repeat else old_total[parent])
            label += scores[prefix[-1]]
        beam.add(prefix, old_total[i] + scores[blank], label)
    silenced = set()  # prefixes of the old beam that offer no children (the rule above)
    for i, (prefix, _, _) in enumerate(beams):
        if prefix in silenced:
            continue
        floor = beam.floor()
        if not old_total[i] > floor:
            break  # a child is no more probable than its parent, and the floor only rises
        children = old_total[i] + frame[:blank]
        if prefix:
            children[prefix[-1]] = old_blank[i] + scores[prefix[-1]]
        # A child at or below the floor now never enters; it matters only when it is a
        # prefix of the old beam that left it (then it is silenced).
        labels = set(np.flatnonzero(children > floor).tolist())
        for label in sorted(labels.union(old_children.get(prefix, ()))):
            child = prefix + (label,)
            if child in beam.entries:
                continue
            score = float(children[label])
            if score > beam.floor():
                beam.add(child, -math.inf, score)
            elif child in index:
                silenced.add(child)
    ranked = sorted(beam.entries.items(), key=lambda item: -item[1][2])
    return [(prefix, entry[0], entry[1]) for prefix, entry in ranked]


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) of two floats, -inf allowed."""
    if a < b:
        a, b = b, a
    return a if b == -math.inf else a + math.log1p(math.exp(b - a))


class _Beam(object):
    """At most ``width`` prefixes with their log probabilities, the least probable found fast."""

    def __init__(self, width):
        self.width, self.entries, self._heap = width, {}, []
        self._serials = itertools.count()

    def add(self, prefix, with_blank, with_label):
        """Put ``prefix`` in; the least probable entry leaves when the beam is full."""
        if len(self.entries) == self.width:
            del self.entries[self._lowest()[2]]
        entry = (with_blank, with_label, _logaddexp(with_blank, with_label), next(self._serials))
        self.entries[prefix] = entry
        heapq.heappush(self._heap, (entry[2], entry[3], prefix))

    def floor(self):
        """The log probability a new prefix must beat to enter (-inf while there is room)."""
        return self._lowest()[0] if len(self.entries) == self.width else -math.inf

    def _lowest(self):
        while self.entries.get(self._heap[0][2], (None,) * 4)[3] != self._heap[0][1]:
            heapq.heappop(self._heap)  # an entry that left the beam
        return self._heap[0]


def beam_frames(image_width, downsample):
    """The frames a bound on the beam width is set for: those of the model's fixed image width,
    or of a :data:`LONG_LINE_PIXELS` line when it reads any width."""
    return max(1, (image_width or LONG_LINE_PIXELS) // downsample)


def max_beam_width(num_classes, frames, budget=BEAM_MEMORY_BUDGET):
    """The widest beam whose search over ``frames`` frames of ``num_classes`` classes (the
    blank included) keeps within ``budget`` bytes (:data:`BYTES_PER_ENTRY` per class x width x
    frame); at least 1 (greedy decoding costs no beam)."""
    return max(1, int(budget // (BYTES_PER_ENTRY * num_classes * frames)))


def check_beam_width(beam_width, num_classes, frames, what="the model"):
    """Refuse a ``beam_width`` wider than :func:`max_beam_width` allows for ``what`` (named in
    the message), with one line saying what it would cost and what to do, before any work
    starts; 0 and 1 (greedy) always pass."""
    bound = max_beam_width(num_classes, frames)
    if beam_width <= 1 or beam_width <= bound:
        return
    cost = float(BYTES_PER_ENTRY) * num_classes * frames * beam_width
    instead = "at most %d" % bound if bound > 1 else "greedy decoding (0)"
    raise ValueError("beam width %d is too wide for %s: a CTC beam search keeps about %d bytes "
                     "per class x width x frame, and %d classes x %d frames at width %d would "
                     "take %.1f GB per image (the bound is %.1f GB): use %s (--beam-width)"
                     % (beam_width, what, BYTES_PER_ENTRY, num_classes, frames, beam_width,
                        cost / 2 ** 30, BEAM_MEMORY_BUDGET / 2 ** 30, instead))
