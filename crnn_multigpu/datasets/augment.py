"""Changes to a grayscale text image: what cameras, scanners and compression do to text
(:class:`Degrader`), how differently line finders frame it (:class:`Reframer`), and how much
lighter or bolder other type designs draw the same strokes (:class:`StrokeWeight`).

One :class:`Degrader` serves both the synthetic generator (the last step of every
rendering) and training-time augmentation of any dataset (folder, LMDB,
synthetic), so both see the same looks. Every call takes the RandomState to
draw from, which keeps results a pure function of the caller's seed.

Each degradation is applied with its own probability, scaled by ``strength``
in [0, 1]; at strength 0 the image is returned unchanged. :func:`training_augmentation`
is crnn-train's: reframing first, then stroke weight, then degradation, so noise covers the
new margins and the changed strokes too.
"""
import io

import numpy as np
from PIL import Image, ImageFilter

_RESAMPLING = getattr(Image, "Resampling", Image)


class Degrader(object):
    """Blur, resampling, contrast loss, noise and JPEG artefacts, at ``strength`` in [0, 1].

    ``reference_height``: the height the model sees; blur radii and resampling
    factors are set in those pixels, so a large rendering is degraded as much
    as it will look after resizing.
    """

    def __init__(self, strength=0.5, reference_height=32):
        if not 0.0 <= strength <= 1.0:
            raise ValueError("augmentation strength must be in [0, 1], got %r" % strength)
        self.strength, self.reference_height = float(strength), reference_height

    def __call__(self, image, rng):
        """A degraded copy of the PIL image (mode L), drawn from ``rng``."""
        s = self.strength
        if s <= 0:
            return image
        if image.mode != "L":
            image = image.convert("L")
        scale = image.size[1] / float(self.reference_height)
        if rng.rand() < 0.35 * s:
            image = self._resample(image, rng, scale)
        if rng.rand() < 0.5 * s:
            radius = rng.uniform(0.3, 0.4 + 0.9 * s) * scale
            image = image.filter(ImageFilter.GaussianBlur(radius))
        if rng.rand() < 0.3 * s:
            image = self._contrast(image, rng)
        if rng.rand() < 0.7 * s:
            image = self._noise(image, rng)
        if rng.rand() < 0.3 * s:
            image = self._jpeg(image, rng)
        return image

    def _resample(self, image, rng, scale):
        """Down- and up-sampling: the blocky, smeared look of small, zoomed text."""
        width, height = image.size
        factor = rng.uniform(0.45, 0.9) / max(1.0, scale)
        small = (max(1, int(round(width * factor))), max(4, int(round(height * factor))))
        method = (_RESAMPLING.NEAREST, _RESAMPLING.BILINEAR, _RESAMPLING.BICUBIC)[rng.randint(3)]
        return image.resize(small, _RESAMPLING.BILINEAR).resize((width, height), method)

    def _contrast(self, image, rng):
        """Squeeze the range towards a random level: faded print, haze, over-exposure."""
        pixels = np.asarray(image, dtype=np.float32)
        keep = rng.uniform(0.35, 0.8)
        centre = rng.uniform(40, 215)
        return _to_image(centre + (pixels - centre) * keep)

    def _noise(self, image, rng):
        """Gaussian sensor noise, sometimes with salt-and-pepper specks."""
        pixels = np.asarray(image, dtype=np.float32)
        sigma = rng.uniform(2.0, 4.0 + 14.0 * self.strength)
        pixels = pixels + rng.normal(0.0, sigma, pixels.shape)
        if rng.rand() < 0.2:
            specks = rng.rand(*pixels.shape) < rng.uniform(0.002, 0.02)
            pixels[specks] = rng.choice([0.0, 255.0], size=int(specks.sum()))
        return _to_image(pixels)

    def _jpeg(self, image, rng):
        """Compression artefacts: ringing and 8x8 blocks."""
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=int(rng.randint(8, 60)))
        buffer.seek(0)
        return Image.open(buffer).convert("L")


class Reframer(object):
    """With ``probability``, a line crop's frame moved so that its ink spans a height drawn from
    ``ink_span`` (fractions of the crop's height; renderers and row cutters give about 0.7),
    its spare height split unevenly above and below, and side margins of up to ``side`` heights.

    A model trained on one framing reads only that one: a tight crop and a crop with a wide
    white margin are the same text at different scales once resized to the model's height.
    The frame is cut or grown around the ink (rows and columns with pixels far from the
    median, the background); grown parts are filled with the background level. A blank or
    faint crop is returned as it is."""

    def __init__(self, probability=0.5, ink_span=(0.35, 0.95), side=0.6):
        if not 0.0 <= probability <= 1.0:
            raise ValueError("reframing probability must be in [0, 1], got %r" % probability)
        if not 0.0 < ink_span[0] <= ink_span[1] <= 1.0:
            raise ValueError("ink span must be fractions 0 < low <= high <= 1, got %r"
                             % (ink_span,))
        self.probability, self.ink_span, self.side = float(probability), ink_span, side

    def __call__(self, image, rng):
        """The PIL image (mode L) in a new frame, drawn from ``rng``, or as it is."""
        if self.probability <= 0 or rng.rand() >= self.probability:
            return image
        pixels = np.asarray(image.convert("L"), dtype=np.float32)
        found = _ink(pixels)
        if found is None:
            return image
        background, ink, _ = found
        rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        ink_height = rows[-1] + 1 - rows[0]
        height = max(ink_height, int(round(ink_height / rng.uniform(*self.ink_span))))
        top = rows[0] - int(round((height - ink_height) * rng.uniform(0.2, 0.8)))
        left_margin, right_margin = (int(round(height * rng.uniform(0.0, self.side)))
                                     for _ in range(2))
        left = columns[0] - left_margin
        width = columns[-1] + 1 - columns[0] + left_margin + right_margin
        framed = np.full((height, width), background, dtype=np.float32)
        # The source rows and columns that fall inside both the old frame and the new one.
        y0, y1 = max(top, 0), min(top + height, pixels.shape[0])
        x0, x1 = max(left, 0), min(left + width, pixels.shape[1])
        framed[y0 - top:y1 - top, x0 - left:x1 - left] = pixels[y0:y1, x0:x1]
        return _to_image(framed)


class StrokeWeight(object):
    """With ``probability``, a crop's strokes made bolder by 1/4 or 1/2 of a pixel on each side,
    or lighter by 1/4, in pixels of the model's ``reference_height``.

    Type designs draw the same character with strokes of different weights (a light Ming
    hairline, a heavy Hei bar); a model trained on a few designs reads a new one partly by its
    weight. The crop is enlarged to four times the reference height, where one pixel of a
    minimum or maximum filter is a quarter of a model pixel, and shrunk back by area averaging, so
    edges stay anti-aliased. Light ink on a dark ground is grown the other way. Lighter never
    goes past 1/4: thinner hairlines would break. A blank or faint crop is returned as it is."""

    _SCALE = 4  # working height: four times the reference height

    def __init__(self, probability=0.5, reference_height=32):
        if not 0.0 <= probability <= 1.0:
            raise ValueError("stroke weight probability must be in [0, 1], got %r" % probability)
        self.probability, self.reference_height = float(probability), reference_height

    def __call__(self, image, rng):
        """The PIL image (mode L) with its strokes' weight changed, drawn from ``rng``, or as
        it is."""
        if self.probability <= 0 or rng.rand() >= self.probability:
            return image
        if image.mode != "L":
            image = image.convert("L")
        found = _ink(np.asarray(image, dtype=np.float32))
        if found is None:
            return image
        _, _, ink_is_dark = found
        bolder = rng.rand() < 0.5
        pixels_a_side = rng.randint(1, 3) if bolder else 1
        grow_dark = bolder == ink_is_dark
        rank = (ImageFilter.MinFilter if grow_dark else ImageFilter.MaxFilter)(
            2 * pixels_a_side + 1)
        width, height = image.size
        factor = self._SCALE * self.reference_height / float(height)
        large = image.resize((max(1, int(round(width * factor))), self._SCALE *
                              self.reference_height), _RESAMPLING.BICUBIC)
        return large.filter(rank).resize((width, height), _RESAMPLING.BOX)


class Augmentation(object):
    """Changes applied one after another (each ``change(image, rng) -> image``)."""

    def __init__(self, changes):
        self.changes = list(changes)

    def __call__(self, image, rng):
        for change in self.changes:
            image = change(image, rng)
        return image


def training_augmentation(strength, reframe, reference_height, stroke=0.0):
    """crnn-train's augmentation: lines reframed with probability ``reframe``, their strokes'
    weight changed with probability ``stroke`` (:class:`StrokeWeight`), then degraded at
    ``strength`` (:class:`Degrader`); None when all are 0."""
    changes = ([Reframer(reframe)] if reframe else []) + \
        ([StrokeWeight(stroke, reference_height=reference_height)] if stroke else []) + \
        ([Degrader(strength, reference_height=reference_height)] if strength else [])
    return Augmentation(changes) if changes else None


def _ink(pixels):
    """``(background, ink, ink_is_dark)`` of a grayscale crop: the median level, the mask of
    pixels over half the largest distance from it, and whether they lie below it; None for a
    blank or faint crop (nothing 32 levels from the background)."""
    background = float(np.median(pixels))
    distance = pixels - background
    magnitude = np.abs(distance)
    if magnitude.max() < 32:
        return None
    ink = magnitude > 0.5 * magnitude.max()
    return background, ink, distance[ink].mean() < 0


def _to_image(pixels):
    return Image.fromarray(np.clip(pixels + 0.5, 0, 255).astype(np.uint8))
