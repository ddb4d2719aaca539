"""Runs of ink along the rows of a 2-D mask, the one primitive that rules, dotted rules,
underlines and glyph heights are measured with (a column's runs are those of the mask's
transpose)."""
import numpy as np


def row_runs(mask):
    """``(starts, ends)`` of the runs of True along every row of the 2-D boolean ``mask``, as
    flat indices into the mask padded by one False at both ends of each row (``mask.shape[1] +
    2`` a row): the runs of one row are consecutive entries, left to right."""
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    steps = np.diff(padded.ravel())
    return np.flatnonzero(steps == 1) + 1, np.flatnonzero(steps == -1) + 1
