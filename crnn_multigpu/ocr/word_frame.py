"""Tight word crops given the room a line has above and below its small letters.

A word cut tight around its ink that has neither ascenders nor descenders ("name", "union",
but also "OPEN" or "2048") is one band of ink. Normalised to the model's height, its letters
come out half again as tall as the small letters of any line the model learnt from, and it
reads "m" as "nn" and "n" as "ll". :func:`single_band_frame` gives such a crop the empty room
above and below that a line of text has (ascenders and descenders); a crop that already holds
ascenders or descenders, or a margin of that size, is left as it is.

Whether the band is small letters or capitals cannot be told from one band, so a reader should
read both the crop and its framed copy and keep the more probable reading
(``Recognizer.read_crops`` does).
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


def single_band_frame(pixels):
    """``pixels`` (light ink on dark, [h, w] floats in [0, 1], as ``load_image`` gives) framed
    with room above and below, at the same height, or None when the crop is not a single band
    of ink or already has that room."""
    height, width = pixels.shape
    counts = (pixels > 0.5).sum(axis=1)
    # Rows with ink beyond specks: 2 % of the width.
    rows = np.nonzero(counts >= max(1, 0.02 * width))[0]
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
    new_width = max(1, int(round(framed.shape[1] * float(height) / framed.shape[0])))
    resized = Image.fromarray(framed.astype(np.float32), mode="F").resize(
        (new_width, height), Image.BILINEAR)
    return np.clip(np.asarray(resized, dtype=np.float32), 0.0, 1.0)
