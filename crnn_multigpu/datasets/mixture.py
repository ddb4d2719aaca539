"""A dataset made of other datasets, each taken a whole number of times: a few thousand real
lines beside a synthetic set of millions, or a recipe rendered when read beside a folder.

The folder holds ``sets.json`` only; its sets stay where they are and are opened as
``open_dataset`` opens them (folder, LMDB, recipe, or another mixture). Sample ``i`` of the
mixture is sample ``i`` of the sets listed in order, each copy after the last, so that a
shuffled epoch draws each set in proportion to its size times its copies.
"""
import bisect
import json
import os

from crnn_multigpu.files import make_folder, write_text

MIXTURE_FILE = "sets.json"


def write_mixture(out_dir, sets):
    """Write the mixture of ``sets`` (``(dataset path, copies)`` pairs) as ``out_dir/sets.json``.

    Paths are written relative to ``out_dir`` when they lie beside or below it (the runs
    folder can move as one), else absolute. Each set must be a dataset (ValueError or
    FileNotFoundError naming it otherwise), so that a mistyped path fails here, not when
    training starts.
    """
    from crnn_multigpu.datasets import dataset_format
    if not sets:
        raise ValueError("a mixture needs at least one set")
    listed = []
    for path, copies in sets:
        if not (isinstance(copies, int) and copies >= 1):
            raise ValueError("%s: copies must be a whole number of at least 1, got %r"
                             % (path, copies))
        dataset_format(path)
        listed.append({"path": _portable(path, out_dir), "copies": copies})
    make_folder(out_dir)
    path = os.path.join(out_dir, MIXTURE_FILE)
    write_text(path, json.dumps({"sets": listed}, indent=1))
    return path


def _portable(path, out_dir):
    relative = os.path.relpath(os.path.abspath(path), os.path.dirname(os.path.abspath(out_dir)))
    if relative.startswith(os.pardir):
        return os.path.abspath(path)
    return os.path.join(os.pardir, relative)


def open_mixture(path, **kwargs):
    """The :class:`MixedDataset` a mixture folder describes; ``kwargs`` go to each set."""
    from crnn_multigpu.datasets import open_dataset
    folder, listing = path, os.path.join(path, MIXTURE_FILE)
    try:
        with open(listing, encoding="utf-8") as handle:
            sets = json.load(handle)["sets"]
        members = [(os.path.normpath(os.path.join(folder, entry["path"])), int(entry["copies"]))
                   for entry in sets]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError("%s is not a mixture listing (%s): expected {\"sets\": [{\"path\": ..., "
                         "\"copies\": N}, ...]}, as scripts/join_sets.py writes" % (listing, error))
    if not members or any(copies < 1 for _, copies in members):
        raise ValueError("%s: list at least one set, each with copies >= 1" % listing)
    return MixedDataset([(open_dataset(member, **kwargs), copies) for member, copies in members],
                        [member for member, _ in members])


class MixedDataset(object):
    """``sets`` (``(dataset, copies)`` pairs) seen as one dataset, copies following each other.

    ``rejected`` and ``unreadable`` gather the sets' own; ``names`` name the sets in messages.
    """

    def __init__(self, sets, names):
        self.sets, self.names = [dataset for dataset, _ in sets], list(names)
        self.height = self.sets[0].height
        self.sizes = [len(dataset) for dataset in self.sets]
        spans = [len(dataset) * copies for dataset, copies in sets]
        self.ends = [sum(spans[:number + 1]) for number in range(len(spans))]
        self.rejected = {}
        for dataset in self.sets:
            for reason, texts in getattr(dataset, "rejected", {}).items():
                self.rejected.setdefault(reason, []).extend(texts)

    @property
    def unreadable(self):
        return [name for dataset in self.sets for name in getattr(dataset, "unreadable", [])]

    def __len__(self):
        return self.ends[-1] if self.ends else 0

    def locate(self, index):
        """``(set number, index within that set)`` of mixture sample ``index``."""
        if not 0 <= index < len(self):
            raise IndexError("sample %d out of range for %d samples" % (index, len(self)))
        number = bisect.bisect_right(self.ends, index)
        start = self.ends[number - 1] if number else 0
        return number, (index - start) % self.sizes[number]

    def __getitem__(self, index):
        number, inner = self.locate(index)
        return self.sets[number][inner]

    def safe_get(self, index, degrade=None):
        """The sample of its set (``safe_get`` where the set has one: None when unreadable)."""
        number, inner = self.locate(index)
        dataset = self.sets[number]
        if not hasattr(dataset, "safe_get"):
            return dataset[inner]
        return dataset.safe_get(inner) if degrade is None else dataset.safe_get(inner, degrade)

    def width_keys(self, indices):
        """Each sample's bucketing key, as its own set gives it."""
        from crnn_multigpu.datasets.batching import width_keys
        by_set = {}
        for position, index in enumerate(indices):
            number, inner = self.locate(index)
            by_set.setdefault(number, []).append((position, inner))
        keys = [0.0] * len(indices)
        for number, pairs in by_set.items():
            for (position, _), key in zip(pairs, width_keys(self.sets[number],
                                                            [inner for _, inner in pairs])):
                keys[position] = float(key)
        return keys

    def describe(self, index):
        number, inner = self.locate(index)
        dataset = self.sets[number]
        if hasattr(dataset, "describe"):
            return dataset.describe(inner)
        return "%s sample %d" % (self.names[number], inner)
