"""A user's crops framed as the lines a model learnt from: tight words given room, loose lines cut.

A word cut tight around its ink that has neither ascenders nor descenders ("name", "union",
but also "OPEN" or "2048") is one band of ink. Normalised to the model's height, its letters
come out half again as tall as the small letters of any line the model learnt from, and it
reads "m" as "nn" and "n" as "ll". :func:`single_band_frame` gives such a crop the empty room
above and below that a line of text has (ascenders and descenders); a crop that already holds
ascenders or descenders, or a margin of that size, is left as it is.

Whether the band is small letters or capitals cannot be told from one band, so a reader should
read both the crop and its framed copy and keep the more probable reading
(``Recognizer.read_crops`` does).

The opposite case is a crop with wide margins: a line cut with white room around it, its ink
less than half the crop's height. Normalised to the model's height, its text comes out smaller
than any the model learnt from (in the crops it trains on, generated and cut from pages alike, the
ink spans about 70 % of the height, rarely under 55 %), and it is misread wholesale: a white margin
of 35 % of the height all round took 200 held-out Chinese lines from 59 % to 11 % exactly right,
200 English ones (held-out faces) from 90 % to 30 %. :func:`loose_frame` cuts such a crop's
margins to that share; read beside the crop as given, the more probable reading kept, those lines
came back to 48 % and 75 %, and the lines as cut before read as they did.
"""
import numpy as np
from PIL import Image

# A row belongs to the core band when it holds this share of the fullest row's ink.
CORE_SHARE = 0.35
# Ink reaching further than this share of the core's height above or below it is an ascender or
# descender band: the crop is not a single band.
ZONE_SHARE = 0.25
# The room a framed crop gets above and below its core, in core heights: a line's ascenders
# rise about half an x-height above it, its descenders fall as far, plus the crop margin.
ROOM_ABOVE, ROOM_BELOW = 0.8, 0.6
# A crop whose ink spans less than this share of its height has margins wider than the model
# learnt from; :func:`loose_frame` makes its ink span INK_SHARE, the training crops' median.
LOOSE_SHARE, INK_SHARE = 0.5, 0.7


def single_band_frame(pixels):
    """``pixels`` (light ink on dark, [h, w] floats in [0, 1], as ``load_image`` gives) framed
    with room above and below, at the same height, or None when the crop is not a single band
    of ink or already has that room."""
    height = pixels.shape[0]
    counts = (pixels > 0.5).sum(axis=1)
    rows = _ink_rows(pixels)
    if rows.size == 0:
        return None
    core = np.nonzero(counts >= CORE_SHARE * counts.max())[0]
    top, bottom, core_top, core_bottom = rows[0], rows[-1], core[0], core[-1]
    core_height = core_bottom - core_top + 1
    if core_top - top > ZONE_SHARE * core_height or bottom - core_bottom > ZONE_SHARE * core_height:
        return None
    add_top = int(round(ROOM_ABOVE * core_height)) - top
    add_bottom = int(round(ROOM_BELOW * core_height)) - (height - 1 - bottom)
    if add_top <= 0 and add_bottom <= 0:
        return None
    framed = np.pad(pixels, ((max(0, add_top), max(0, add_bottom)), (0, 0)))
    return _at_height(framed, height)


def loose_frame(pixels):
    """``pixels`` (as for :func:`single_band_frame`) with its margins cut so that its ink spans
    ``INK_SHARE`` of the height, and as much room is left beside it as above and below, at the
    same height, or None when the ink already spans ``LOOSE_SHARE`` or more of it, or there is
    none. (Room left beside the ink, scaled up, would read as spaces.)"""
    height = pixels.shape[0]
    rows = _ink_rows(pixels)
    if rows.size == 0 or rows[-1] - rows[0] + 1 >= LOOSE_SHARE * height:
        return None
    span = rows[-1] - rows[0] + 1
    room = (span / INK_SHARE - span) / 2.0
    columns = np.nonzero((pixels[rows[0]:rows[-1] + 1] > 0.5).any(axis=0))[0]
    top, bottom = int(max(0, round(rows[0] - room))), int(min(height, round(rows[-1] + 1 + room)))
    left = int(max(0, round(columns[0] - room)))
    right = int(min(pixels.shape[1], round(columns[-1] + 1 + room)))
    return _at_height(pixels[top:bottom, left:right], height)


def _ink_rows(pixels):
    """The rows holding ink beyond specks (2 % of the width)."""
    counts = (pixels > 0.5).sum(axis=1)
    return np.nonzero(counts >= max(1, 0.02 * pixels.shape[1]))[0]


def _at_height(pixels, height):
    """``pixels`` scaled to ``height`` rows, its aspect ratio kept."""
    width = max(1, int(round(pixels.shape[1] * float(height) / pixels.shape[0])))
    resized = Image.fromarray(pixels.astype(np.float32), mode="F").resize(
        (width, height), Image.BILINEAR)
    return np.clip(np.asarray(resized, dtype=np.float32), 0.0, 1.0)
