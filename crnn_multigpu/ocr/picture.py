"""A picture of inputs and their predicted text, to see what the recognizer does."""
import os

import numpy as np
from PIL import Image, ImageDraw

from crnn_multigpu.datasets.fonts import find_fonts
from crnn_multigpu.files import written_whole

ROW_HEIGHT = 44
TEXT_WIDTH = 260


def label_font(size=18):
    """A monospaced system font for captions (Pillow's bitmap font if none is found)."""
    from PIL import ImageFont
    try:
        fonts = find_fonts()
        # DejaVu Sans Mono where it is installed (every test machine), else any upright mono.
        fonts = [f for f in fonts if os.path.basename(f) == "DejaVuSansMono.ttf"] or \
            [f for f in fonts if "Mono" in f and "italic" not in f.lower()] or fonts
        return ImageFont.truetype(fonts[0], size)
    except (OSError, IndexError, FileNotFoundError):
        return ImageFont.load_default()


def prediction_grid(arrays, predictions, truths=None, path="predictions.png", max_rows=24):
    """Write a PNG: one row per image (as the model saw it) with its prediction.

    ``arrays`` are normalised images (height 32, light text on dark, values in
    [0, 1]); with ``truths`` a correct prediction is green, a wrong one red
    with the truth beside it. Returns the path.
    """
    rows = list(zip(arrays, predictions, truths or [None] * len(predictions)))[:max_rows]
    image_width = max([a.shape[1] for a, _, _ in rows] + [1])
    canvas = Image.new("RGB", (image_width * 2 + TEXT_WIDTH + 24, ROW_HEIGHT * max(len(rows), 1)),
                       "white")
    draw, font = ImageDraw.Draw(canvas), label_font()
    for row, (array, predicted, truth) in enumerate(rows):
        # Shown dark on light, as people read it, at twice the model's scale.
        pixels = (255 * (1.0 - np.clip(array, 0, 1))).astype(np.uint8)
        picture = Image.fromarray(pixels, "L").resize((array.shape[1] * 2, 40 if array.shape[0] else 1))
        canvas.paste(picture.convert("RGB"), (4, row * ROW_HEIGHT + 2))
        colour = (0, 0, 0) if truth is None else ((0, 128, 0) if predicted == truth else (200, 0, 0))
        text = predicted if truth is None or predicted == truth else "%s  (%s)" % (predicted, truth)
        draw.text((image_width * 2 + 16, row * ROW_HEIGHT + 10), text, fill=colour, font=font)
    with written_whole(path) as temporary:  # no half-written picture blocks the rerun
        canvas.save(temporary)
    return path
