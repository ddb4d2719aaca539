"""Runs of True in a mask: along a 1-D mask (a profile's rows of text, a line's words, a row of
a detector's map) and along every row of a 2-D one, the one primitive that rows, columns, rules,
dotted rules, underlines and glyph heights are measured with (a column's runs are those of the
mask's transpose)."""
import numpy as np


def runs_of(mask):
    """``[(start, end)]`` of the runs of True in the 1-D ``mask``, ``end`` exclusive, as ints."""
    steps = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    return list(zip(np.flatnonzero(steps == 1).tolist(), np.flatnonzero(steps == -1).tolist()))


def row_runs(mask):
    """``(starts, ends)`` of the runs of True along every row of the 2-D boolean ``mask``, as
    flat indices into the mask padded by one False at both ends of each row (``mask.shape[1] +
    2`` a row): the runs of one row are consecutive entries, left to right."""
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    steps = np.diff(padded.ravel())
    return np.flatnonzero(steps == 1) + 1, np.flatnonzero(steps == -1) + 1


def chains(linked):
    """``(firsts, lasts)``: the chains of runs, maximal stretches of runs each linked to the next,
    as the indices of their first and last runs; ``linked[i]`` (n - 1 booleans for n runs) says
    whether run ``i`` and run ``i + 1`` are linked."""
    breaks = np.flatnonzero(~linked)
    return np.concatenate(([0], breaks + 1)), np.concatenate((breaks, [linked.size]))
