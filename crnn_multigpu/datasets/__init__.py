"""Datasets for text-line recognition: image normalisation, on-disk formats,
synthetic rendering, and batching.

Nothing here imports TensorFlow; LMDB support imports ``lmdb`` only when used.
"""
import os

from crnn_multigpu.datasets.batching import (Batch, BatchLoader, EpochBatches, batch_indices,
                                             epoch_order, iterate_batches, make_batch, prefetch)
from crnn_multigpu.datasets.folder import (LABELS_FILE, FolderDataset, read_labels,
                                           write_dataset, write_labels)
from crnn_multigpu.datasets.fonts import find_fonts, font_supports, load_font, split_fonts
from crnn_multigpu.datasets.images import fit_width, load_image
from crnn_multigpu.datasets.lmdb_format import DATA_FILE, LmdbDataset, write_lmdb
from crnn_multigpu.datasets.recipe import RECIPE_FILE, SyntheticDataset, open_recipe, write_recipe
from crnn_multigpu.datasets.synthetic import SyntheticTextGenerator


def open_dataset(path, **kwargs):
    """Open a folder dataset (has ``labels.txt``), an LMDB dataset (has ``data.mdb``) or a
    synthetic recipe (has ``synthetic.json``: images rendered when read).

    ``kwargs`` (charset, time_steps, height) go to the dataset class.
    """
    if not os.path.exists(path):
        raise FileNotFoundError("dataset %s does not exist" % path)
    if os.path.isfile(os.path.join(path, LABELS_FILE)):
        return FolderDataset(path, **kwargs)
    if os.path.isfile(os.path.join(path, DATA_FILE)) or os.path.basename(path) == DATA_FILE:
        return LmdbDataset(path, **kwargs)
    if os.path.isfile(os.path.join(path, RECIPE_FILE)):
        return open_recipe(path, **kwargs)
    raise ValueError("%s is not a dataset: expected a folder with %s (folder format), %s "
                     "(LMDB format) or %s (synthetic recipe)"
                     % (path, LABELS_FILE, DATA_FILE, RECIPE_FILE))


__all__ = [
    "Batch", "BatchLoader", "EpochBatches", "batch_indices", "epoch_order", "iterate_batches", "make_batch",
    "prefetch", "FolderDataset", "read_labels", "write_labels", "find_fonts", "font_supports",
    "load_font", "split_fonts", "fit_width", "load_image", "LmdbDataset", "write_lmdb",
    "SyntheticDataset", "SyntheticTextGenerator", "write_dataset", "open_dataset",
    "RECIPE_FILE", "open_recipe", "write_recipe",
]
