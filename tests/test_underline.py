"""Links' underlines in synthetic samples (datasets.underline): a thin stroke below the baseline
under some words, broken where a descender crosses it; off unless asked, and carried by recipes
and crnn-generate."""
import json
import os

import numpy as np
from PIL import Image

from crnn_multigpu.cli import generate
from crnn_multigpu.datasets import open_dataset
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.synthetic import SyntheticTextGenerator
from crnn_multigpu.datasets.underline import underline, words_of

ENGLISH = get_language("en").charset
DEJAVU = "/usr/share/fonts/truetype/dejavu"


def test_an_underline_runs_under_the_words_and_skips_a_descender():
    # Two "words" of ink on layers 40 px high, baseline at row 25; the second has a descender
    # reaching row 33 at columns 60-62.
    layers = np.zeros((40, 100, 3), np.uint8)
    layers[10:26, 5:40, :2] = 255
    layers[10:26, 50:90, :2] = 255
    layers[26:34, 60:63, :2] = 255
    assert words_of(layers[..., 0] > 0, size=20) == [(5, 40), (50, 90)]
    rng = np.random.RandomState(0)
    while True:  # a draw that skips ink and spans both words
        state = rng.get_state()
        drawn = np.asarray(underline(Image.fromarray(layers), 25, 20, (0, 100), rng))
        added = (drawn[..., 0] > 0) & ~(layers[..., 0] > 0)
        rows = np.nonzero(added.any(axis=1))[0]
        if added[:, 5:90].any(axis=0).sum() > 40 and not added[:, 60:63].any():
            break
        rng.set_state(state)
        rng.rand()
    assert rows.min() > 25 and rows.max() - rows.min() <= 2  # thin, below the baseline
    assert added[:, 6:39].any(axis=0).all() and not added[:, :5].any()
    assert not added[:, 91:].any()


class FixedLine(object):
    """The one line every sample draws: words of at least five letters, so that an underline
    under any of them is longer than a glyph's bar."""

    def sample(self, rng):
        return "Seven quick brown foxes", "Seven quick brown foxes"


def test_generated_samples_carry_underlines_only_when_asked():
    faces = [os.path.join(DEJAVU, name) for name in ("DejaVuSans.ttf", "DejaVuSerif.ttf")]
    plain, ruled = [SyntheticTextGenerator(ENGLISH, faces, seed=3, difficulty=0.0, lines=True,
                                           max_len=30, texts=FixedLine(), underline=share)
                    for share in (0.0, 1.0)]
    runs = {"plain": [], "ruled": []}
    for index in range(8):
        for kind, generator in (("plain", plain), ("ruled", ruled)):
            drawn, label = generator.sample(index)
            assert label == "Seven quick brown foxes"
            # The longest run of ink pixels along a row, in image heights. Ink is the lesser
            # of the two tones (some samples are light print on a dark ground).
            pixels = np.asarray(drawn, np.float32)
            ink = pixels < 0.5 * (pixels.max() + pixels.min())
            ink = ink if ink.mean() < 0.5 else ~ink
            runs[kind].append(max(_longest_run(row) for row in ink) / float(drawn.height))
    assert max(runs["plain"]) < 1.0 < min(runs["ruled"]), runs


def _longest_run(row):
    best = current = 0
    for value in row:
        current = current + 1 if value else 0
        best = max(best, current)
    return best


def test_a_recipe_and_crnn_generate_carry_the_share(tmp_path):
    out = str(tmp_path / "lazy")
    assert generate.main(["--out", out, "--lazy", "--count", "10", "--underline", "0.25"]) == 0
    with open(os.path.join(out, "synthetic.json")) as stream:
        assert json.load(stream)["underline"] == 0.25
    assert open_dataset(out).generator.underline == 0.25
    assert generate.main(["--out", str(tmp_path / "bad"), "--lazy", "--underline", "2"]) == 2
