"""Square crops of page material with their line boxes: what a text detector trains on.

A page (an entry of ``datasets.page_material``) is scaled by a random factor, so that lines
come in many heights, and a ``size`` x ``size`` window is cut from it at random (pages smaller
than the window are padded with white). Lines the window cuts across their height are returned
apart as ``ignored``: half a line is neither text nor background to learn from. Lines cut at
their left or right end stay lines.
"""
import random
import zlib

import numpy as np
from PIL import Image

__all__ = ["PageCrops", "split_by_source"]

# A line keeps this share of its height inside a window to count as a line of it.
MIN_HEIGHT_SHARE = 0.7
# Of its width: a sliver of a line at the window's side is too short to learn from.
MIN_WIDTH_PX = 4


def split_by_source(entries, validation_share=0.1, seed=0):
    """``(training, validation)`` entries, whole documents to one side (pages of one print
    share faces and style; a validation page beside its sister pages would measure memory)."""
    def held_out(entry):
        key = "%d:%s" % (seed, entry["source"])
        return zlib.crc32(key.encode("utf-8")) / 2.0 ** 32 < validation_share
    entries = list(entries)
    return ([e for e in entries if not held_out(e)], [e for e in entries if held_out(e)])


class PageCrops(object):
    """Random crops of the pages ``entries`` (dicts from ``page_material.read_material``),
    ``size`` pixels square, the pages scaled by a factor in ``scales`` (low, high); ``seed``
    makes the sequence repeat. Pages are read when first cut and kept (grey, a few MB each)."""

    def __init__(self, entries, size, scales=(0.5, 1.0), seed=0):
        self.entries = list(entries)
        if not self.entries:
            raise ValueError("no pages to cut crops from: make page material first "
                             "(scripts/make_page_material.py)")
        self.size = int(size)
        self.scales = scales
        self.rng = random.Random(seed)
        self._images = {}

    def _page(self, entry):
        if entry["image"] not in self._images:
            with Image.open(entry["image"]) as image:
                self._images[entry["image"]] = image.convert("L")
        return self._images[entry["image"]]

    def crop(self, entry=None):
        """One crop: ``(grey uint8 [size, size], lines, ignored)``, the boxes ``(x0, y0, x1,
        y1)`` in the crop's pixels."""
        entry = entry or self.rng.choice(self.entries)
        page = self._page(entry)
        scale = self.rng.uniform(*self.scales)
        width, height = max(1, round(page.width * scale)), max(1, round(page.height * scale))
        scaled = page.resize((width, height), Image.BILINEAR)
        left = self.rng.randint(min(0, width - self.size), max(0, width - self.size))
        top = self.rng.randint(min(0, height - self.size), max(0, height - self.size))
        window = Image.new("L", (self.size, self.size), 255)
        window.paste(scaled, (-left, -top))
        lines, ignored = [], []
        for x0, y0, x1, y1, _ in entry["lines"]:
            box = [x0 * scale - left, y0 * scale - top, x1 * scale - left, y1 * scale - top]
            cut = [max(box[0], 0), max(box[1], 0), min(box[2], self.size),
                   min(box[3], self.size)]
            if cut[2] - cut[0] <= 0 or cut[3] - cut[1] <= 0:
                continue
            whole = (cut[3] - cut[1] >= MIN_HEIGHT_SHARE * (box[3] - box[1]) and
                     cut[2] - cut[0] >= MIN_WIDTH_PX)
            (lines if whole else ignored).append(tuple(cut))
        return np.asarray(window), lines, ignored

    def batch(self, count):
        """``count`` crops as ``(images [count, size, size], lines, ignored)``."""
        crops = [self.crop() for _ in range(count)]
        return (np.stack([c[0] for c in crops]), [c[1] for c in crops], [c[2] for c in crops])
