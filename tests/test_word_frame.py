"""ocr.word_frame: a tight crop of one band of ink gets a line's room above and below; crops
with ascenders, descenders or margins are left alone; the text model reads tight x-height words;
a crop with wide margins has them cut, and the text model reads such words."""
import json
import os
import shutil

import numpy as np
import pytest
from PIL import ImageOps

from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.datasets import load_image
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.word_frame import (INK_SHARE, ROOM_ABOVE, ROOM_BELOW, loose_frame,
                                          single_band_frame)
from test_shipped_model import FACES, WORDS, draw_word


def band(height=32, width=90, top=2, bottom=29, stroke=None):
    """Light ink on dark: a core band of vertical strokes, optionally one stroke reaching
    ``stroke`` = (first row, last row)."""
    pixels = np.zeros((height, width), np.float32)
    for left in range(5, 85, 8):
        pixels[top:bottom + 1, left:left + 3] = 1.0
    if stroke is not None:
        pixels[stroke[0]:stroke[1] + 1, 40:43] = 1.0
    return pixels


def ink_rows(pixels):
    rows = np.nonzero((pixels > 0.5).any(axis=1))[0]
    return rows[0], rows[-1]


def test_a_tight_band_gets_room_above_and_below_at_the_same_height():
    framed = single_band_frame(band())
    assert framed is not None and framed.shape[0] == 32 and framed.dtype == np.float32
    top, bottom = ink_rows(framed)
    core = bottom - top + 1
    # 28 core rows framed in 28 * (1 + 0.8 + 0.6) rows, scaled back to 32: the core spans ~13.
    assert abs(core - 32 / (1 + ROOM_ABOVE + ROOM_BELOW)) <= 1.5, core
    assert abs(top - ROOM_ABOVE * core) <= 1.5 and abs(31 - bottom - ROOM_BELOW * core) <= 1.5
    assert framed.shape[1] < 90  # the aspect ratio is kept: narrower at the same height


@pytest.mark.parametrize("pixels", [
    band(top=10, bottom=29, stroke=(2, 29)),   # an ascender rises 8 rows above a 20-row core
    band(top=2, bottom=21, stroke=(2, 29)),    # a descender
    band(top=12, bottom=21),                   # room enough already
    np.zeros((32, 40), np.float32),            # no ink
    np.pad(np.ones((1, 1), np.float32), ((15, 16), (0, 199))),  # a speck: no row of ink
])
def test_ascenders_descenders_margins_and_blanks_are_left_alone(pixels):
    assert single_band_frame(pixels) is None


TIGHT_WORDS = ["summer", "name", "comments", "owner", "race", "xerox"]


def test_the_text_model_reads_tight_x_height_words():
    """Words without ascenders or descenders cut tight, the case that read "m" as "nn" (an "i"
    would not do: its dot rises where ascenders do)."""
    recognizer = Recognizer.shipped("text")
    assert recognizer.frames_single_bands  # its config asks for the framed second reading
    arrays = [load_image(draw_word(word, face)) for face in FACES for word in TIGHT_WORDS]
    assert sum(single_band_frame(array) is not None for array in arrays) == len(arrays)
    texts, log_probs = recognizer.read_crops(arrays)
    truths = [word for _ in FACES for word in TIGHT_WORDS]
    right = sum(text.lower() == truth for text, truth in zip(texts, truths))
    assert right >= len(truths) - 1, list(zip(texts, truths))
    # Each crop keeps the more probable of its two readings, and some change.
    as_given, as_given_log_probs = recognizer.recognize_arrays(arrays)
    assert all(kept >= alone for kept, alone in zip(log_probs, as_given_log_probs))
    assert texts != as_given


def test_a_model_whose_config_does_not_ask_reads_crops_as_they_are(tmp_path):
    copy = str(tmp_path / "text")
    shutil.copytree(shipped_model("text"), copy)
    path = os.path.join(copy, "config.json")
    with open(path) as stream:
        config = json.load(stream)
    del config["frame_single_bands"]
    with open(path, "w") as stream:
        json.dump(config, stream)
    recognizer = Recognizer(copy)
    assert not recognizer.frames_single_bands
    arrays = [load_image(draw_word(word, FACES[0])) for word in TIGHT_WORDS]
    assert recognizer.read_crops(arrays) == recognizer.recognize_arrays(arrays)


def test_a_loose_crop_has_its_margins_cut_to_the_training_share():
    pixels = band(top=12, bottom=19)  # ink over 8 of 32 rows: a quarter of the height
    framed = loose_frame(pixels)
    assert framed is not None and framed.shape[0] == 32 and framed.dtype == np.float32
    top, bottom = ink_rows(framed)
    assert abs((bottom - top + 1) / 32.0 - INK_SHARE) <= 0.08, (top, bottom)
    assert framed.shape[1] > pixels.shape[1]  # the aspect ratio is kept: wider at the same height


@pytest.mark.parametrize("pixels", [
    band(top=8, bottom=23),                    # ink over half the height: as the model learnt
    band(),                                    # a tight crop
    np.zeros((32, 40), np.float32),            # no ink
])
def test_crops_with_usual_margins_are_not_cut(pixels):
    assert loose_frame(pixels) is None


def test_the_text_model_reads_words_given_wide_margins():
    """The same plain words with a white margin of 3/4 of their height all round: read as they
    are, the text comes out smaller than anything the model learnt from."""
    recognizer = Recognizer.shipped("text")
    images = [draw_word(word, face) for face in FACES[:2] for word in WORDS]
    arrays = [load_image(ImageOps.expand(image, border=int(0.75 * image.height), fill=235))
              for image in images]
    assert all(loose_frame(array) is not None for array in arrays)
    truths = [word for _ in FACES[:2] for word in WORDS]
    texts, log_probs = recognizer.read_crops(arrays)
    as_given, as_given_log_probs = recognizer.recognize_arrays(arrays)
    right = sum(text == truth for text, truth in zip(texts, truths))
    right_as_given = sum(text == truth for text, truth in zip(as_given, truths))
    assert right >= len(truths) - 2 and right > right_as_given, (right, right_as_given)
    assert all(kept >= alone for kept, alone in zip(log_probs, as_given_log_probs))
