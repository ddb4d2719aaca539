"""Underlines on a page: the strokes browsers and word processors draw under links, which are ink
but not text. Left in, ``The Python Tutorial`` underlined was read ``The_Python_Tutorial`` and
worse. An underline is a thin horizontal stroke (or a chain of them, broken where descenders cross
it, as CSS's ``text-decoration-skip-ink`` draws it) at least :data:`MIN_LENGTH` glyph heights long,
with the strokes of text just above most of its length. What else is thin and long has no text
just above: an underscore blank (``Name: ______``), a row of ``====`` or ``----``, a long dash."""
import numpy as np

from crnn_multigpu.datasets.ink_runs import chains, row_runs

# In glyph heights (the page's tallest glyphs, about one line: page.glyph_height).
MIN_LENGTH = 1.5   # an underline is at least this long (a word of three letters)
THIN = 0.15        # ... and at most this thick (at least 2 px)
GAP = 0.4          # the pieces of one underline, parted by descenders, are at most this far apart
COVERED = 0.75     # ... and cover this share of its length at least (the thin feet of letters
                   # in a row, bowls' bottoms and serifs, leave wider gaps between them)
LONGEST_PIECE = 1.2  # ... one of them at least this long: no stroke of a glyph is (the foot
                     # of a Chinese character, 里 or 丛, is one em at most, with its glyph above)
PIECE = 0.4        # a piece shorter than this is left: the hook of a "g" touching the line
ABOVE = 0.45       # text lies within this distance above it
TEXT_ABOVE = 0.12  # ... the strokes of its letters over at least this share of its length


def _thickness(ink):
    """For every pixel of ``ink``: the length of the vertical run of ink it is in (0 off ink)."""
    starts, ends = row_runs(ink.T)
    lengths = np.zeros(ink.shape[1] * (ink.shape[0] + 2), dtype=np.int32)
    runs = ends - starts
    # Every pixel of every run, run after run: its run's start plus its offset in the run.
    offsets = np.arange(runs.sum()) - np.repeat(np.cumsum(runs) - runs, runs)
    lengths[np.repeat(starts, runs) + offsets] = np.repeat(runs, runs)
    return lengths.reshape(ink.shape[1], ink.shape[0] + 2)[:, 1:-1].T


def underlines(ink, glyph):
    """Mask of the pixels of ``ink`` (2-D boolean) in underlines, ``glyph`` the page's glyph
    height in pixels (see the module docstring)."""
    mask = np.zeros(ink.shape, dtype=bool)
    if glyph <= 0 or not ink.any():
        return mask
    thickness = _thickness(ink)
    thin = ink & (thickness <= max(2, THIN * glyph))
    # Strokes of text: ink in runs thicker than an underline.
    strokes = ink & ~thin
    width = ink.shape[1] + 2
    starts, ends = row_runs(thin)
    if not starts.size:
        return mask
    rows = starts // width
    linked = (rows[1:] == rows[:-1]) & (starts[1:] - ends[:-1] <= max(2, GAP * glyph))
    firsts, lasts = chains(linked)
    # Chains long enough and covered enough; nearly every chain of a page is neither.
    extents = ends[lasts] - starts[firsts]
    covered = np.add.reduceat(ends - starts, firsts)
    longest = np.maximum.reduceat(ends - starts, firsts)
    candidates = (extents >= MIN_LENGTH * glyph) & (covered >= COVERED * extents) & \
        (longest >= LONGEST_PIECE * glyph) & (rows[firsts] >= 2)
    above = max(2, int(round(ABOVE * glyph)))
    for first, last in zip(firsts[candidates], lasts[candidates]):
        row = int(rows[first])
        left, right = int(starts[first] - row * width - 1), int(ends[last] - row * width - 1)
        # Text above: strokes within ABOVE over the stroke, not touching it (a thin part of a
        # glyph has its own glyph right there; an underline has a gap of paper first).
        band = strokes[max(0, row - above):row - 1, left:right]
        if band.any(axis=0).mean() < TEXT_ABOVE or ink[row - 1, left:right].mean() > 0.5:
            continue
        for start, end in zip(starts[first:last + 1], ends[first:last + 1]):
            if end - start >= PIECE * glyph:
                mask[row, start - row * width - 1:end - row * width - 1] = True
    # The rows under the stroke's top row that are still the stroke.
    for _ in range(max(2, int(THIN * glyph))):
        mask[1:] |= mask[:-1] & thin[1:]
    return mask
