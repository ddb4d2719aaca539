"""Photos of pages: the page found on what it lies on, seen square again and evenly lit.

A phone's photo of a page shows the page at a slant (its lines converge), on a table or a desk
darker than the paper, lit more on one side than the other. Read as it comes, the table's edge
joins every line into one band and the page's columns lean, so the page reader found one
"line" the size of the photo or lines running across both columns. :func:`flatten` does what
document-scanning apps do before reading:

1. the paper: the photo shrunk to :data:`WORK_SIDE` pixels and blurred until its text is gone,
   split by Otsu's threshold into bright paper and darker surroundings; the page is the bright
   region holding the photo's centre (grown from it, the ink inside it filled);
2. it is a photo of a page only when that region leaves most of the photo's border
   (:data:`BORDER_PAPER`) and fills its own corners' quadrilateral (:data:`SOLIDITY`) over at
   least :data:`MIN_AREA` of the photo: a scan or a print, paper to its edges, is left as it is;
3. its corners are the region's extreme points along the diagonals; the homography that
   carries them to a rectangle of the page's mean side lengths turns the photo square;
4. the light is evened out: the page divided by its paper's brightness, that is, the page
   shrunk, its text erased by a maximum filter, blurred and grown back.

The boxes of what is read on the flattened page are carried back to the photo by the inverse
homography (:func:`box_in_photo`).
"""
import collections

import numpy as np
from PIL import Image, ImageFilter

from crnn_multigpu.datasets.page_looks import homography_between, map_points
from crnn_multigpu.ocr.page import otsu_threshold

__all__ = ["Flattened", "flatten", "page_corners", "box_in_photo"]

WORK_SIDE = 400       # the photo's longer side while its page is looked for, in pixels
BLUR_SHARE = 0.012    # the blur that washes the text out, in shares of that side
BORDER_PAPER = 0.5    # a photo's border is paper over less than this share of its pixels
SOLIDITY = 0.85       # the page fills at least this share of its corners' quadrilateral
MIN_AREA = 0.2        # ... and that quadrilateral at least this share of the photo
LIGHT_CELL = 16       # the paper's brightness is measured on cells of this many pixels
SIDE_END = 0.15       # a side's straight line is fitted leaving this share of it at each end
EDGE_ROOM = 3         # pixels of the shrunk photo within the paper's edge painted as paper
EDGE_DEPTH = 0.03     # dark runs reaching in from an edge this far (share of the page) too

Flattened = collections.namedtuple("Flattened", "page homography size")
Flattened.__doc__ = """A page as the reader reads it: ``page`` (mode L); ``homography``, the
3x3 matrix carrying a point of the photo to the page, or None when the image was no photo of a
page (then ``page`` is the image itself); ``size``, the image's (width, height)."""


def flatten(grey):
    """The :class:`Flattened` page of the mode L image ``grey`` (see the module docstring);
    what the photo shows beyond the paper (the table, where the corners were found a little
    outside the page) is painted as paper."""
    found = _paper(grey)
    if found is None:
        return Flattened(grey, None, grey.size)
    corners, paper = found
    width = int(round((np.hypot(*(corners[1] - corners[0])) +
                       np.hypot(*(corners[2] - corners[3]))) / 2.0))
    height = int(round((np.hypot(*(corners[3] - corners[0])) +
                        np.hypot(*(corners[2] - corners[1]))) / 2.0))
    square = np.array([[0, 0], [width, 0], [width, height], [0, height]], float)
    homography = homography_between(corners, square)
    inverse = np.linalg.inv(homography)
    coefficients = tuple((inverse / inverse[2, 2]).ravel()[:8])
    page = grey.transform((width, height), Image.PERSPECTIVE, coefficients,
                          resample=Image.BICUBIC, fillcolor=255)
    # The paper's edge, blurred, is known to a few pixels: what lies that near it is painted.
    inner = Image.fromarray(paper.astype(np.uint8) * 255).filter(ImageFilter.MinFilter(
        2 * EDGE_ROOM + 1))
    on_paper = inner.resize(grey.size, Image.NEAREST).transform(
        (width, height), Image.PERSPECTIVE, coefficients, fillcolor=0)
    pixels = np.array(_evenly_lit(page))
    off_paper = np.asarray(on_paper) < 128
    cleared = _edges_cleared(pixels, off_paper, int(EDGE_DEPTH * max(width, height)))
    return Flattened(Image.fromarray(cleared), homography, grey.size)


def page_corners(grey):
    """The corners of the page in the photo ``grey`` (mode L), top left, top right, bottom right
    and bottom left, as a 4 x 2 array of pixel positions, or None when ``grey`` is no photo of
    a page (steps 1-3 of the module docstring)."""
    found = _paper(grey)
    return None if found is None else found[0]


def _paper(grey):
    """``(corners, paper)`` of the photo ``grey``: :func:`page_corners` and the paper's mask on
    the photo shrunk to :data:`WORK_SIDE`; None when it is no photo of a page."""
    scale = WORK_SIDE / float(max(grey.size))
    small = grey.resize((max(1, int(round(grey.width * scale))),
                         max(1, int(round(grey.height * scale)))), Image.BILINEAR)
    small = small.filter(ImageFilter.GaussianBlur(BLUR_SHARE * WORK_SIDE))
    pixels = np.asarray(small, dtype=np.float32) / 255.0
    if min(pixels.shape) < 8:
        return None
    bright = pixels > otsu_threshold(pixels)
    if _border(bright).mean() >= BORDER_PAPER:  # paper to the edges: a print or a scan
        return None
    paper = _region_at_centre(bright)
    if not paper.any() or _border(paper).mean() >= BORDER_PAPER:
        return None
    ys, xs = np.nonzero(paper)
    xs, ys = xs + 0.5, ys + 0.5
    corners = np.array([[xs[i], ys[i]] for i in (np.argmin(xs + ys), np.argmax(xs - ys),
                                                 np.argmax(xs + ys), np.argmin(xs - ys))])
    area = _area(corners)
    if area < MIN_AREA * paper.size or paper.sum() < SOLIDITY * area:
        return None
    return _fitted_corners(paper, corners) / scale, paper


def _fitted_corners(region, corners):
    """``corners`` made exact: where the straight lines fitted to the region's four sides meet
    (the blur rounds the region's corners, so its extreme points lie a little inside them).
    A side's line is fitted to its edge between its corners, leaving :data:`SIDE_END` of its
    length at either end."""
    height, width = region.shape
    rows, columns = region.any(axis=1), region.any(axis=0)
    top = np.where(columns, np.argmax(region, axis=0), -1)
    bottom = np.where(columns, height - np.argmax(region[::-1], axis=0), -1)
    left = np.where(rows, np.argmax(region, axis=1), -1)
    right = np.where(rows, width - np.argmax(region[:, ::-1], axis=1), -1)
    sides = []
    for (a, b), edge, across in (((0, 1), top, True), ((1, 2), right, False),
                                 ((3, 2), bottom, True), ((0, 3), left, False)):
        along = 0 if across else 1
        start, end = sorted((corners[a][along], corners[b][along]))
        reach = SIDE_END * (end - start)
        positions = np.arange(int(start + reach), int(end - reach)) + 0.5
        values = edge[positions.astype(int)].astype(float) if positions.size else []
        if len(values) < 2:
            return corners
        # The edge as a line: the other coordinate = slope * this one + offset.
        slope, offset = np.polyfit(positions, values, 1)
        sides.append((across, slope, offset))
    return np.array([_meeting(sides[i], sides[j]) for i, j in ((0, 3), (0, 1), (2, 1), (2, 3))])


def _meeting(first, second):
    """Where a side across the page (y = s x + o) meets one down it (x = s y + o)."""
    across, down = (first, second) if first[0] else (second, first)
    _, s1, o1 = across
    _, s2, o2 = down
    y = (s1 * o2 + o1) / (1.0 - s1 * s2)
    return np.array([s2 * y + o2, y])


def box_in_photo(box, homography, size):
    """The ``(x0, y0, x1, y1)`` in the photo of ``size`` that holds ``box`` (pixel edges on
    the flattened page): its corners carried back by the inverse of ``homography``."""
    x0, y0, x1, y1 = box
    x, y = map_points(np.linalg.inv(homography), [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]).T
    return (max(0, int(np.floor(x.min()))), max(0, int(np.floor(y.min()))),
            min(size[0], int(np.ceil(x.max()))), min(size[1], int(np.ceil(y.max()))))


def _border(mask):
    """The pixels along the four edges of ``mask``."""
    return np.concatenate([mask[0], mask[-1], mask[1:-1, 0], mask[1:-1, -1]])


def _region_at_centre(mask):
    """The connected region of ``mask`` holding the pixel nearest the centre that is set (grown
    from it one step at a time), its holes (the text's ink) filled row by row."""
    ys, xs = np.nonzero(mask)
    if not ys.size:
        return mask
    nearest = np.argmin((ys - mask.shape[0] / 2.0) ** 2 + (xs - mask.shape[1] / 2.0) ** 2)
    region = np.zeros_like(mask)
    region[ys[nearest], xs[nearest]] = True
    while True:
        grown = region.copy()
        grown[1:] |= region[:-1]
        grown[:-1] |= region[1:]
        grown[:, 1:] |= region[:, :-1]
        grown[:, :-1] |= region[:, 1:]
        grown &= mask
        if (grown == region).all():
            break
        region = grown
    columns = np.arange(mask.shape[1])
    inked = region.any(axis=1)
    first = np.where(inked, np.argmax(region, axis=1), 0)
    last = np.where(inked, mask.shape[1] - 1 - np.argmax(region[:, ::-1], axis=1), -1)
    return (columns[None, :] >= first[:, None]) & (columns[None, :] <= last[:, None])


def _area(corners):
    """The area of the quadrilateral ``corners`` (shoelace formula)."""
    x, y = corners[:, 0], corners[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def _edges_cleared(pixels, off_paper, depth):
    """``pixels`` (8-bit, evenly lit: paper near white) with what lies ``off_paper`` and the
    runs of anything darker than paper that reach in from an edge through it, at most
    ``depth`` deep, painted as paper: a sliver of the table (or its blurred edge) left along a
    side where its line was fitted a little outside the page would read as a rule or a
    letter."""
    dark = (pixels < 230) | off_paper
    pixels[off_paper] = 255
    for flip in (lambda a: a, lambda a: a[::-1], lambda a: a.T, lambda a: a.T[::-1]):
        view_dark, view = flip(dark), flip(pixels)
        from_edge = np.cumprod(view_dark[:depth], axis=0).astype(bool)
        view[:depth][from_edge] = 255
    return pixels


def _evenly_lit(page):
    """``page`` divided by its paper's brightness (step 4 of the module docstring)."""
    small = page.resize((max(1, page.width // LIGHT_CELL), max(1, page.height // LIGHT_CELL)),
                        Image.BOX)
    paper = small.filter(ImageFilter.MaxFilter(5)).filter(ImageFilter.GaussianBlur(2))
    light = np.asarray(paper.resize(page.size, Image.BILINEAR), dtype=np.float32)
    pixels = np.asarray(page, dtype=np.float32) / np.maximum(light, 1.0)
    return Image.fromarray((np.clip(pixels, 0, 1) * 255 + 0.5).astype(np.uint8))
