"""The one finder of runs of ink (datasets/ink_runs.py) that the page reader, the rules, the
underlines, the detector's boxes and the synthetic underlines measure with."""
import numpy as np

from crnn_multigpu.datasets.ink_runs import chains, row_runs, runs_of


def test_runs_of_a_1d_mask_reach_both_ends_and_are_ints():
    assert runs_of(np.array([1, 1, 0, 0, 1, 0, 1, 1, 1], bool)) == [(0, 2), (4, 5), (6, 9)]
    assert runs_of(np.zeros(4, bool)) == [] and runs_of(np.ones(3, bool)) == [(0, 3)]
    assert all(type(edge) is int for run in runs_of(np.array([0, 1, 0])) for edge in run)


def test_row_runs_keep_the_rows_apart_in_padded_flat_indices():
    mask = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1]], bool)
    starts, ends = row_runs(mask)
    width = mask.shape[1] + 2
    assert [(s // width, s % width - 1, e % width - 1) for s, e in zip(starts, ends)] == [
        (0, 0, 2), (1, 2, 3), (2, 0, 3)]


def test_chains_are_the_stretches_of_linked_neighbours():
    firsts, lasts = chains(np.array([True, False, False, True, True]))  # six runs
    assert firsts.tolist() == [0, 2, 3] and lasts.tolist() == [1, 2, 5]
    firsts, lasts = chains(np.zeros(0, bool))  # one run alone
    assert firsts.tolist() == [0] and lasts.tolist() == [0]
