"""Degradations of a grayscale text image: what cameras, scanners and compression do to text.

One :class:`Degrader` serves both the synthetic generator (the last step of every
rendering) and training-time augmentation of any dataset (folder, LMDB,
synthetic), so both see the same looks. Every call takes the RandomState to
draw from, which keeps results a pure function of the caller's seed.

Each degradation is applied with its own probability, scaled by ``strength``
in [0, 1]; at strength 0 the image is returned unchanged.
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


def _to_image(pixels):
    return Image.fromarray(np.clip(pixels + 0.5, 0, 255).astype(np.uint8))
