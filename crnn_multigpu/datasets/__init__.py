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
from crnn_multigpu.datasets.mixture import MIXTURE_FILE, MixedDataset, open_mixture, write_mixture
from crnn_multigpu.datasets.recipe import RECIPE_FILE, SyntheticDataset, open_recipe, write_recipe
from crnn_multigpu.datasets.synthetic import SyntheticTextGenerator


def dataset_format(path):
    """Which kind of dataset ``path`` holds, told by its marker file without opening it:
    ``"folder"`` (``labels.txt``), ``"lmdb"`` (``data.mdb``), ``"recipe"`` (``synthetic.json``:
    images rendered when read) or ``"mixture"`` (``sets.json``: other datasets joined).
    FileNotFoundError or ValueError naming ``path`` when it is none of them."""
    if not os.path.exists(path):
        raise FileNotFoundError("dataset %s does not exist" % path)
    for kind, marker in (("folder", LABELS_FILE), ("lmdb", DATA_FILE), ("recipe", RECIPE_FILE),
                         ("mixture", MIXTURE_FILE)):
        if os.path.isfile(os.path.join(path, marker)):
            return kind
    if os.path.basename(path) == DATA_FILE:
        return "lmdb"
    raise ValueError("%s is not a dataset: expected a folder with %s (folder format), %s "
                     "(LMDB format), %s (synthetic recipe) or %s (a mixture of datasets)"
                     % (path, LABELS_FILE, DATA_FILE, RECIPE_FILE, MIXTURE_FILE))


def open_dataset(path, **kwargs):
    """Open the dataset at ``path``, whichever of :func:`dataset_format`'s kinds it is.

    ``kwargs`` (charset, time_steps, height) go to the dataset class.
    """
    opener = {"folder": FolderDataset, "lmdb": LmdbDataset, "recipe": open_recipe,
              "mixture": open_mixture}[dataset_format(path)]
    return opener(path, **kwargs)


__all__ = [
    "Batch", "BatchLoader", "EpochBatches", "batch_indices", "epoch_order", "iterate_batches", "make_batch",
    "prefetch", "FolderDataset", "read_labels", "write_labels", "find_fonts", "font_supports",
    "load_font", "split_fonts", "fit_width", "load_image", "LmdbDataset", "write_lmdb",
    "SyntheticDataset", "SyntheticTextGenerator", "write_dataset", "open_dataset",
    "RECIPE_FILE", "open_recipe", "write_recipe", "MIXTURE_FILE", "MixedDataset", "open_mixture",
    "write_mixture", "dataset_format",
]
