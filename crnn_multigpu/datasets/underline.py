"""Underlines as browsers draw them under links, for the synthetic renderer: a thin stroke a
little below the baseline under one word or a run of words, broken where a descender crosses it
(CSS ``text-decoration-skip-ink``, on by default). A recogniser that never saw one reads the
stroke as ``_`` and the descenders it touches as other letters (``The Python Tutorial`` came back
as ``TheBython_lutorigl`` from a browser print's link)."""
import numpy as np
from PIL import Image

from crnn_multigpu.datasets.ink_runs import runs_of

# A gap of this share of the font size, or more, between inked columns parts two words.
WORD_GAP = 0.2


def words_of(ink, size):
    """``[(left, right)]``: the words of the drawn ``ink`` (2-D boolean), runs of inked pixel
    columns parted by gaps of at least :data:`WORD_GAP` of ``size``."""
    words = []
    for start, end in runs_of(ink.any(axis=0)):
        if words and start - words[-1][1] < WORD_GAP * size:
            words[-1] = (words[-1][0], end)
        else:
            words.append((start, end))
    return words


def underline(layers, baseline, size, span, rng):
    """``layers`` (the renderer's RGB coverage: fill in R, outline in G) with an underline
    drawn with ``rng`` (a numpy RandomState) under the words inside ``span`` (left, right),
    all of them or a run of them: ``size`` (the font size in pixels) sets its distance below
    ``baseline`` and its thickness; most underlines skip the ink of descenders."""
    pixels = np.array(layers)
    ink = (pixels[..., 0] > 0) | (pixels[..., 1] > 0)
    left, right = int(max(0, span[0])), int(min(ink.shape[1], span[1]))
    words = [(a + left, b + left) for a, b in words_of(ink[:, left:right], size)]
    if not words:
        return layers
    first = rng.randint(len(words)) if rng.rand() < 0.5 else 0
    last = rng.randint(first, len(words)) if rng.rand() < 0.5 else len(words) - 1
    thickness = max(1, int(round(size * rng.uniform(0.04, 0.09))))
    top = baseline + max(2, int(round(size * rng.uniform(0.08, 0.16))))
    top = min(top, ink.shape[0] - thickness)
    stroke = np.zeros(ink.shape[1], bool)
    stroke[words[first][0]:words[last][1]] = True
    if rng.rand() < 0.8:
        room = max(1, int(round(size * 0.06)))
        # Only what reaches below the baseline (descenders) parts it, not the glyphs' feet.
        near = ink[max(baseline + 1, top - room):top + thickness + room].any(axis=0)
        for shift in range(1, room + 1):  # the gap reaches past the descender on both sides
            near[shift:] |= near[:-shift].copy()
            near[:-shift] |= near[shift:].copy()
        stroke &= ~near
    pixels[top:top + thickness, stroke, :2] = 255
    return Image.fromarray(pixels)
