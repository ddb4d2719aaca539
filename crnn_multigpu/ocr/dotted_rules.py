"""Dotted and dashed rules on a page: the borders of code and note boxes as browsers and office
suites draw them, which are ink but not text. A solid rule is one long run of ink; a dotted or
dashed one is a chain of short runs along one pixel column (or row), each as long as the last and
as far from it, with nothing beside it, which no glyph makes: a column through text meets
strokes of every length at uneven distances, and the stems of aligned letters have the rest of
their letters beside them. Left in, the border down a code box beside its lines was read as ``!`` or
``|`` at the end of every line."""
import numpy as np

from crnn_multigpu.datasets.ink_runs import chains, row_runs

# In glyph heights (the page's tallest glyphs, about one line: page.glyph_height).
DOT_LENGTH = 0.6   # a dot or dash is at most this long (CSS dashes: 3 border widths)
DOT_GAP = 0.5      # ... and at most this far from the next one
FLANK = 0.3        # a rule has (nearly) no ink this far to either side along its length
FLANK_INK = 0.1    # ... at most this share of those pixels
# A chain is a rule when it holds this many dots or dashes, evenly spaced: the distances from one
# dot's start to the next differ by at most DOT_PERIOD_SPREAD of their median (or 2 px).
MIN_DOTS = 8
DOT_PERIOD_SPREAD = 0.25


def dotted_columns(ink, glyph, min_span):
    """Mask of the pixels of ``ink`` (2-D boolean) in vertical dotted or dashed rules at least
    ``min_span`` pixels long, ``glyph`` the page's glyph height in pixels."""
    starts, ends = row_runs(ink.T)  # a column's runs are consecutive entries
    rows = ink.shape[0] + 2
    mask = np.zeros(ink.shape[1] * rows, dtype=bool)
    if starts.size < MIN_DOTS:
        return mask.reshape(ink.shape[1], rows)[:, 1:-1].T
    short = (ends - starts) <= max(2, DOT_LENGTH * glyph)
    linked = (short[:-1] & short[1:] & (starts[1:] // rows == starts[:-1] // rows) &
              (starts[1:] - ends[:-1] <= max(2, DOT_GAP * glyph)))
    for first, last in zip(*chains(linked)):
        if last - first + 1 < MIN_DOTS or ends[last] - starts[first] < min_span:
            continue
        periods = np.diff(starts[first:last + 1])
        median = float(np.median(periods))
        if periods.max() - periods.min() > max(2.0, DOT_PERIOD_SPREAD * median):
            continue
        column, top = divmod(int(starts[first]), rows)
        bottom = int(ends[last]) - column * rows
        if _flanks_are_clear(ink, column, top - 1, bottom - 1, glyph):
            for start, end in zip(starts[first:last + 1], ends[first:last + 1]):
                mask[start:end] = True
    return mask.reshape(ink.shape[1], rows)[:, 1:-1].T


def _flanks_are_clear(ink, column, top, bottom, glyph):
    """Whether the pixel columns :data:`FLANK` glyph heights left and right of ``column`` hold
    almost no ink over rows ``top`` to ``bottom`` (the page's edge counts as clear)."""
    reach = max(3, int(round(FLANK * glyph)))
    for side in (column - reach, column + reach):
        if 0 <= side < ink.shape[1] and ink[top:bottom, side].mean() > FLANK_INK:
            return False
    return True


def dotted_rules(ink, glyph, min_height, min_width):
    """Mask of the pixels of ``ink`` in dotted or dashed rules: vertical ones at least
    ``min_height`` pixels long, horizontal ones at least ``min_width``."""
    return dotted_columns(ink, glyph, min_height) | dotted_columns(ink.T, glyph, min_width).T
