"""Datasets rendered when read: a synthetic generator seen as a dataset, and the recipe file
(``synthetic.json``) that describes one, so training can draw fresh images instead of
reading a folder.
"""
import json
import os

import numpy as np

from crnn_multigpu.datasets.images import load_image
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.synthetic import make_generator, sample_seed, text_part_of
from crnn_multigpu.files import make_folder, write_text


class SyntheticDataset(object):
    """A generator seen as a dataset: ``ds[i] = (load_image(sample(start + i)), text)``."""

    def __init__(self, generator, size, start=0, height=32):
        self.generator, self.size, self.start, self.height = generator, size, start, height
        self.rejected, self.unreadable = {}, []

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.safe_get(index)

    def safe_get(self, index, degrade=None):
        """Same as ``ds[index]`` (rendered samples are always readable); ``degrade`` is
        applied to the rendering before normalisation, as in ``load_image``."""
        if not 0 <= index < self.size:
            raise IndexError("sample %d out of range for %d samples" % (index, self.size))
        image, text = self.generator.sample(self.start + index)
        return load_image(image, self.height, degrade), text

    def width_keys(self, indices):
        """Label lengths of samples ``indices``, drawn without rendering: a sample's text is
        the first thing its seeded RandomState draws."""
        rng = np.random.RandomState()
        keys = []
        for index in indices:
            rng.seed(sample_seed(self.generator.seed, self.start + int(index)))
            keys.append(len(self.generator.random_text(rng)[1]))
        return keys


RECIPE_FILE = "synthetic.json"
_RECIPE_DEFAULTS = dict(count=1000000, start=0, seed=0, fonts="train", holdout_fraction=0.2,
                        font_dirs=None, include_reserved=False, min_len=1, max_len=10,
                        difficulty=0.5, words=None, kinds=None, charset=None, lines=False,
                        text=None, language=None, underline=0.0)


def write_recipe(out_dir, **settings):
    """Write a dataset that is rendered when read: ``out_dir/synthetic.json`` with ``settings``.

    Keys (defaults in ``_RECIPE_DEFAULTS``): count, start, seed, fonts (side of the font
    split), holdout_fraction, font_dirs, include_reserved, min_len, max_len,
    difficulty, words (word list path or None), kinds (list of text kinds or None = all),
    charset (string or None = default), lines (whole printed lines instead of words), text
    (list of prose files for lines, or None = the packaged prose; the part of it read follows
    the font side), language (a described language's name, None = English: its fonts, prose
    and words), underline (the share of samples with a link's underline, 0 = none).
    """
    unknown = set(settings) - set(_RECIPE_DEFAULTS)
    if unknown:
        raise ValueError("unknown synthetic recipe setting(s): %s" % ", ".join(sorted(unknown)))
    recipe = dict(_RECIPE_DEFAULTS, **settings)
    make_folder(out_dir)
    path = os.path.join(out_dir, RECIPE_FILE)
    write_text(path, json.dumps(recipe, indent=1, sort_keys=True))
    return path


def open_recipe(path, charset=None, time_steps=None, height=32):
    """The :class:`SyntheticDataset` a recipe folder (or its synthetic.json) describes."""
    from crnn_multigpu.datasets.charset import Charset
    from crnn_multigpu.datasets.fonts import select_fonts
    recipe_path = path if path.endswith(".json") else os.path.join(path, RECIPE_FILE)
    try:
        with open(recipe_path) as handle:
            recipe = dict(_RECIPE_DEFAULTS, **json.load(handle))
    except ValueError as error:
        raise ValueError("%s is not valid JSON: %s" % (recipe_path, error))
    language = get_language(recipe["language"])
    own = Charset(recipe["charset"]) if recipe["charset"] else Charset.default()
    charset = charset or own
    if time_steps and 2 * recipe["max_len"] > time_steps:
        raise ValueError("%s: max_len %d may need up to %d CTC time steps, the model has %d; "
                         "lower max_len or train wider images" % (recipe_path, recipe["max_len"],
                                                                  2 * recipe["max_len"], time_steps))
    fonts = select_fonts(recipe["fonts"], recipe["font_dirs"], charset.chars,
                         recipe["holdout_fraction"], include_reserved=recipe["include_reserved"],
                         language=language)
    generator = make_generator(charset, fonts, lines=recipe["lines"], text_files=recipe["text"],
                               text_part=text_part_of(recipe["fonts"]), height=height,
                               min_len=recipe["min_len"], max_len=recipe["max_len"],
                               seed=recipe["seed"], difficulty=recipe["difficulty"],
                               words=recipe["words"], kinds=recipe["kinds"], language=language,
                               underline=recipe["underline"])
    return SyntheticDataset(generator, recipe["count"], start=recipe["start"], height=height)
