"""Finding the text lines of a clean printed page, in reading order (no TensorFlow here).

:func:`find_lines` works on projection profiles of the page's ink:

1. ink: pixels darker than an Otsu threshold between paper and print (light print on a
   dark page is inverted first);
2. rows: runs of rows holding ink are line bands; a thin band very close to a neighbour
   (the dots of a line of "i"s, an underscore) joins it; a thin isolated one is a rule
   (dropped) when its ink is one solid stroke, else a line of dots or dashes (kept, boxed
   at the typical line height) unless it reaches as far as a rule (a dotted or dashed
   separator); a band much taller than the typical line is split at its emptiest row
   when it has one and both parts are line-sized (two lines whose descenders and ascenders
   touch, not a big heading and its descenders);
3. columns: within a band, ink columns separated by more than 1.5 band heights are
   separate pieces (a page number at the far right, table cells); each piece is boxed
   tightly around its ink.

Before that, :func:`remove_rules` paints out the rules of tables and frames: vertical ink
strokes longer than two of the page's tallest glyphs (no glyph is that tall) and horizontal
ones longer than ten (no glyph is that wide), and dotted or dashed ones as long
(:mod:`crnn_multigpu.ocr.dotted_rules`: evenly spaced short dots along one pixel column or row),
and the underlines of links (:mod:`crnn_multigpu.ocr.underlines`: thin strokes just under text). They are ink on the page but not text; left in, a
table's vertical rules join its rows into one band and are read as ``|``.
:func:`line_crops` is the whole path from a page to the images of its lines; it frames every
piece as a full line of the page around its baseline (:func:`line_frame`), as the recogniser's
training lines are framed, whether or not the piece has ascenders and descenders; a lone table
cell whose own ink cannot tell its baseline takes its row's (:func:`line_frames`).

What it cannot do, by design: multi-column pages are read across the columns (each row
band is one line of text, its pieces joined left to right); skewed or rotated pages
(more than about half a degree over a full-width line) merge neighbouring lines (the page
reader, ``page_reader.PageReader``, first straightens a page and splits its columns with
:mod:`crnn_multigpu.ocr.page_layout`, and sees a photo of a page square and evenly lit with
:mod:`crnn_multigpu.ocr.page_photo`); noise and speckles, handwriting, text over pictures or
coloured backgrounds, and vertical text are out of scope. Figures and large headings are
kept as lines and read as well as the model can.
"""
import collections

import numpy as np
from PIL import Image, ImageDraw

from crnn_multigpu.datasets.images import MIN_PAGE_SIDE, to_gray_float
from crnn_multigpu.datasets.language import LATIN_BAND_ROOM, get_language
from crnn_multigpu.ocr.dotted_rules import dotted_rules
from crnn_multigpu.datasets.ink_runs import row_runs, runs_of
from crnn_multigpu.ocr.underlines import underlines
from crnn_multigpu.files import written_whole

LineBox = collections.namedtuple("LineBox", ["left", "top", "right", "bottom", "row"])
LineBox.__doc__ = """A piece of a text line: pixel box (right/bottom exclusive) and the index
of its row band on the page (pieces of one row form one line of text)."""

# Thresholds in units of the typical line height (the median band height).
THIN_BAND = 0.45        # bands thinner than this are dots, underscores, dashes or rules
JOIN_GAP = 0.25         # ... and join a neighbour at most this far away (i-dots: 1-2 px)
TALL_BAND = 1.7         # bands taller than this may be two touching lines
SPLIT_PART = 0.6        # ... each at least this tall
COLUMN_GAP = 1.5        # in band heights: wider gaps separate pieces of a row
# In glyph heights (the tallest glyphs' height, about one line; see glyph_height):
RULE_HEIGHT = 2.0       # vertical strokes at least this long are table rules, not glyphs
RULE_WIDTH = 10.0       # ... and horizontal ones at least this long
DOTTED_RULE_HEIGHT = 3.0  # a dotted or dashed vertical rule, at least (ocr.dotted_rules)
# Crops are framed as the recogniser's training lines are (see line_frame), in units of the
# page's full line height: room below the baseline, and the margin around the frame (training
# crops hold 0-0.07 line heights above and below and about 0.05-0.11 at the sides).
DESCENDER = 0.22
CROP_MARGIN = 0.07
# A page of fewer rows than this cannot tell its line height from its pieces' heights alone.
FEW_ROWS = 3
# A piece's core band: the rows holding this share of its fullest row's ink.
CORE_SHARE = 0.35


def ink_mask(image):
    """Boolean ink mask of a page (any PIL mode or a 2-D array), print darker than paper."""
    if isinstance(image, Image.Image) and image.mode == "L":
        return _ink_mask_of_bytes(np.asarray(image))
    if isinstance(image, Image.Image):
        pixels = to_gray_float(image)
    else:
        pixels = np.asarray(image, dtype=np.float32)
        pixels = pixels / 255.0 if pixels.max() > 1.0 else pixels
    _check_page_shape(pixels)
    if np.median(pixels) < 0.5:  # light print on a dark page
        pixels = 1.0 - pixels
    return pixels < otsu_threshold(pixels)


def _check_page_shape(pixels):
    if pixels.ndim != 2 or min(pixels.shape) < MIN_PAGE_SIDE:
        raise ValueError("a page must be a 2-D image of at least %d x %d pixels, got shape %s"
                         % (MIN_PAGE_SIDE, MIN_PAGE_SIDE, pixels.shape))


def _ink_mask_of_bytes(values):
    """:func:`ink_mask` of 8-bit grey ``values``, from one 256-bin histogram: the same mask as
    the float path (grey level v is v / 255 there), without a float copy or a sort of the page.
    On a 2550 x 3300 page (300 dpi) it took 147 ms against the float path's 574 ms."""
    _check_page_shape(values)
    counts = np.bincount(values.ravel(), minlength=256)
    if median_of_counts(counts) < 127.5:  # light print on a dark page: v / 255 < 0.5
        values, counts = 255 - values, counts[::-1]
    bins = 64
    # Bin of v / 255 among ``bins`` equal bins of [0, 1], as otsu_threshold counts them.
    bin_of = np.minimum(np.arange(256) * bins // 255, bins - 1)
    threshold = _otsu_of_counts(np.bincount(bin_of, weights=counts, minlength=bins), bins)
    # The threshold is a bin edge k / bins; v / 255 < k / bins exactly when v * bins < 255 * k
    # (integers: no rounding), so the mask is a comparison with one grey level.
    k = int(round(threshold * bins))
    return values < -(-255 * k // bins)  # the smallest v with v * bins >= 255 * k


def median_of_counts(counts):
    """The median of the values whose histogram is ``counts`` (value i counted counts[i]
    times), as numpy's median gives it: the mean of the two middle values when even."""
    total = int(counts.sum())
    cumulative = np.cumsum(counts)
    lower = int(np.searchsorted(cumulative, (total - 1) // 2 + 1))
    upper = int(np.searchsorted(cumulative, total // 2 + 1))
    return (lower + upper) / 2.0


def otsu_threshold(pixels, bins=64):
    """The grey level that best separates two classes of ``pixels`` in [0, 1] (Otsu 1979)."""
    # np.histogram's counts over [0, 1], by one bincount (several times faster on a page).
    bin_of = np.minimum((np.clip(pixels, 0.0, 1.0) * bins).astype(np.intp), bins - 1)
    return _otsu_of_counts(np.bincount(bin_of.ravel(), minlength=bins), bins)


def _otsu_of_counts(counts, bins):
    """The Otsu threshold of a histogram of ``bins`` equal bins over [0, 1]."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2.0
    weight = np.cumsum(counts).astype(np.float64)
    total = weight[-1]
    if total == 0 or weight[0] == total:
        return 0.5
    mean = np.cumsum(counts * centres)
    below, above = weight[:-1], total - weight[:-1]
    valid = (below > 0) & (above > 0)
    between = np.zeros_like(below)
    mean_below = mean[:-1][valid] / below[valid]
    mean_above = (mean[-1] - mean[:-1][valid]) / above[valid]
    between[valid] = below[valid] * above[valid] * (mean_below - mean_above) ** 2
    return float(edges[1:-1][int(np.argmax(between))]) if valid.any() else 0.5


def row_bands(ink):
    """Row bands of text in a page's ``ink`` mask: (top, bottom) pairs, bottom exclusive, top
    to bottom (step 2 of the module docstring)."""
    profile = ink.sum(axis=1)
    bands = runs_of(profile > 0)
    if not bands:
        return []
    typical = _typical_height(bands)
    bands = _join_thin_bands(bands, typical, ink)
    split = []
    for top, bottom in bands:
        split.extend(_split_tall_band(profile, top, bottom, typical))
    return split


def _typical_height(bands):
    """The median height of the row bands (those of 4 px or more, if any): one text line."""
    return float(np.median([b - a for a, b in bands if b - a >= 4] or [b - a for a, b in bands]))


def _vertical_runs(ink):
    """``(starts, ends, shape)`` of the vertical runs of ink, as indices into the
    column-major ink padded by one empty pixel at both ends of each column (``shape``)."""
    starts, ends = row_runs(ink.T)
    return starts, ends, (ink.shape[1], ink.shape[0] + 2)


def _long_runs(ink, length):
    """Mask of the pixels of ``ink`` in vertical runs of at least ``length`` pixels."""
    starts, ends, shape = _vertical_runs(ink)
    long_runs = (ends - starts) >= length
    # Rules are few: mark their runs one by one rather than sweep the whole page.
    inside = np.zeros(shape[0] * shape[1], dtype=bool)
    for start, end in zip(starts[long_runs], ends[long_runs]):
        inside[start:end] = True
    return inside.reshape(shape)[:, 1:-1].T


def glyph_height(ink):
    """The height of the tallest glyphs of a page: the 99th percentile of its vertical ink runs
    of 2 px or more (brackets, "|" and "l" are a line high). Rules are too few to move it,
    unlike the row bands, which a ruled table joins into one."""
    starts, ends, _ = _vertical_runs(ink)
    lengths = ends - starts
    lengths = lengths[lengths >= 2]
    return float(np.percentile(lengths, 99)) if lengths.size else 0.0


def remove_rules(image):
    """The page ``image`` as grey levels (mode L) with the rules of tables and frames painted
    in the paper's grey: see the module docstring. A page without rules comes back unchanged."""
    grey = image if image.mode == "L" else image.convert("L")
    return without_rules(grey, ink_mask(grey))[0]


def without_rules(grey, ink):
    """``(page, ink)``: :func:`remove_rules` of the mode L page ``grey`` whose :func:`ink_mask`
    is ``ink``, and that mask without the rules' pixels (the page reader computes a page's mask
    once and keeps it through every step)."""
    height = glyph_height(ink)
    if height <= 0:
        return grey, ink
    rules = _long_runs(ink, max(8, int(RULE_HEIGHT * height)))
    rules |= _long_runs(ink.T, max(8, int(RULE_WIDTH * height))).T
    rules |= dotted_rules(ink, height, int(DOTTED_RULE_HEIGHT * height),
                          int(RULE_WIDTH * height))
    rules |= underlines(ink, height)
    if not rules.any():
        return grey, ink
    # One pixel on every side too: the anti-aliased edges of a rule are lighter than the
    # ink threshold but would still be read as a faint stroke.
    grown = rules.copy()
    grown[1:] |= rules[:-1]
    grown[:-1] |= rules[1:]
    grown[:, 1:] |= rules[:, :-1]
    grown[:, :-1] |= rules[:, 1:]
    pixels = np.array(grey)
    pixels[grown] = paper_grey(pixels, ink)
    return Image.fromarray(pixels), ink & ~grown


def paper_grey(pixels, ink):
    """The median grey of the 8-bit page ``pixels`` off its ``ink`` (255 for a page all ink),
    counted in a histogram rather than sorted."""
    counts = np.bincount(pixels[~ink].ravel(), minlength=256)
    return median_of_counts(counts) if counts.sum() else 255.0


def line_crops(image, ink=None, band_room=LATIN_BAND_ROOM):
    """``(boxes, crops)``: the :class:`LineBox` es of the page ``image`` in reading order and
    the image of each (rules removed, framed by :func:`line_frame`, margins as
    :func:`crop_line` gives). ``ink``: the page's :func:`ink_mask`, when it is known;
    ``band_room``: the language's (:func:`full_line_height`)."""
    grey = image if image.mode == "L" else image.convert("L")
    page, ink = without_rules(grey, ink_mask(grey) if ink is None else ink)
    boxes = _lines_of_ink(ink)
    if not boxes:
        return [], []
    frames = line_frames(ink, boxes, band_room)
    return boxes, [crop_line(page, box, frame=frame) for box, frame in zip(boxes, frames)]


def full_line_height(boxes, ink=None, band_room=LATIN_BAND_ROOM):
    """The page's line height from the top of its tallest glyphs to the bottom of its
    descenders: the 75th percentile of the pieces' ink heights (most lines of running text
    hold both an ascender and a descender; headings are few). A page of fewer than
    :data:`FEW_ROWS` rows (a title page, "hello world" alone) may have neither: there it is at
    least the median of its pieces' :func:`band_line` heights, given their ``ink`` (the
    page's mask). Framed at its own ink, "hello world" alone read 'he|lo wor\\c', and upside
    down more surely than so."""
    height = float(np.percentile([box.bottom - box.top for box in boxes], 75))
    if ink is None or len(set(box.row for box in boxes)) >= FEW_ROWS:
        return height
    lines = [np.subtract(*band_line(ink[b.top:b.bottom, b.left:b.right].sum(axis=1),
                                    band_room)[::-1]) for b in boxes]
    return max(height, float(np.median(lines)))


def band_line(profile, band_room=LATIN_BAND_ROOM):
    """``(top, bottom)`` of the full line around a piece of text whose ink's row profile (ink
    per row, top to bottom) is ``profile``, in its rows (reaching beyond them where the line
    does): its core band (the rows holding :data:`CORE_SHARE` of the fullest row's ink) with
    ``band_room`` above and below it, in band heights (``datasets.language``), or the piece's
    own ink where it reaches further (ascenders, descenders)."""
    core = np.nonzero(profile >= CORE_SHARE * profile.max())[0]
    band = core[-1] + 1 - core[0]
    return (min(0.0, core[0] - band_room[0] * band),
            max(float(len(profile)), core[-1] + 1 + band_room[1] * band))


def line_frames(ink, boxes, band_room=LATIN_BAND_ROOM):
    """``(top, bottom)`` of every piece ``boxes`` of the page's ``ink``: :func:`line_frame` with
    the page's full line height and the piece's baseline.

    A piece's baseline is :func:`baseline_row` of its own ink, except when that lies about a
    descender's depth below the baseline of its row's main piece (the one with the most ink):
    a lone table cell "y" in Courier has a foot as wide as its top, so its own ink puts the
    baseline at the foot, and framed there it reads as "Y". Such a piece takes its row's.
    """
    height = full_line_height(boxes, ink, band_room)
    own, main = [], {}
    for box in boxes:
        piece = ink[box.top:box.bottom, box.left:box.right]
        own.append(box.top + baseline_row(piece))
        mass = int(piece.sum())
        if box.bottom - box.top < height and mass > main.get(box.row, (-1, None))[0]:
            main[box.row] = (mass, own[-1])
    frames = []
    for box, baseline in zip(boxes, own):
        row_baseline = main.get(box.row, (0, baseline))[1]
        if 0.5 * DESCENDER * height < baseline - row_baseline <= 1.5 * DESCENDER * height:
            baseline = row_baseline
        frames.append(line_frame(box, height, baseline))
    return frames


def line_frame(box, height, baseline):
    """``(top, bottom)`` of a full line of ``height`` around the piece ``box`` whose baseline is
    the page row ``baseline``, as every training line is framed: from the top of the font's
    tallest glyphs to below its descenders, whatever the text. Cropped at its own ink, a line
    without descenders ("Total time = 14 s") fills the image's height and is read about a
    third too large (its last "s" read as "g"). Pieces as tall as a line or taller keep their
    own box."""
    if box.bottom - box.top >= height:
        return box.top, box.bottom
    bottom = max(box.bottom, baseline + DESCENDER * height)
    return min(box.top, bottom - height), bottom


def baseline_row(ink):
    """The baseline of a line's ``ink`` (2-D boolean): the row below the lowest row holding at
    least 40 % of the busiest row's ink (descenders are thin, the letters' feet are not)."""
    profile = ink.sum(axis=1)
    return int(np.where(profile >= 0.4 * profile.max())[0][-1]) + 1


def _join_thin_bands(bands, typical, ink):
    joined = []
    for top, bottom in bands:
        if joined and (bottom - top < THIN_BAND * typical or
                       joined[-1][1] - joined[-1][0] < THIN_BAND * typical) and \
                top - joined[-1][1] <= JOIN_GAP * typical and \
                bottom - joined[-1][0] <= TALL_BAND * typical:
            joined[-1] = (joined[-1][0], bottom)
        else:
            joined.append((top, bottom))
    kept = []
    for top, bottom in joined:
        if bottom - top >= THIN_BAND * typical:
            kept.append((top, bottom))
        elif _dots_or_dashes(ink[top:bottom], typical):
            middle, half = (top + bottom) // 2, int(round(typical / 2.0))
            kept.append((max(0, middle - half), min(ink.shape[0], middle + half)))
    return kept


def _dots_or_dashes(band, typical):
    """Whether a thin band of ink on its own is text ("......", "-----"): three pieces or more
    across less than :data:`RULE_WIDTH` line heights. One solid stroke is a rule, and so is a
    dotted or dashed one reaching further (separators, the frames of note boxes), which was
    read as a row of ". . . ."."""
    pieces = runs_of(band.any(axis=0))
    return len(pieces) >= 3 and pieces[-1][1] - pieces[0][0] < RULE_WIDTH * typical


def _split_tall_band(profile, top, bottom, typical):
    """Split a band taller than TALL_BAND lines at its emptiest row, if that row is nearly empty
    and both parts are at least SPLIT_PART lines tall (a big heading's descenders are not a
    line of their own)."""
    if bottom - top <= TALL_BAND * typical:
        return [(top, bottom)]
    margin = int(SPLIT_PART * typical)
    inner = profile[top + margin:bottom - margin]
    if inner.size == 0:
        return [(top, bottom)]
    cut = top + margin + int(np.argmin(inner))
    if profile[cut] > 0.1 * profile[top:bottom].max():
        return [(top, bottom)]  # no gap between lines: a figure or a big heading
    return (_split_tall_band(profile, top, cut, typical) +
            _split_tall_band(profile, cut + 1, bottom, typical))


def find_lines(image):
    """The text line pieces of a clean printed page as :class:`LineBox` es, in reading order
    (rows top to bottom, pieces of a row left to right). See the module docstring for what
    this cannot do."""
    return _lines_of_ink(ink_mask(image))


def _lines_of_ink(ink):
    """:func:`find_lines` on the page's ink mask (computed once by callers that also need it)."""
    boxes = []
    for row, (top, bottom) in enumerate(row_bands(ink)):
        band = ink[top:bottom]
        columns = runs_of(band.sum(axis=0) > 0)
        pieces, gap = [], COLUMN_GAP * (bottom - top)
        for start, end in columns:
            if pieces and start - pieces[-1][1] <= gap:
                pieces[-1] = (pieces[-1][0], end)
            else:
                pieces.append((start, end))
        for left, right in pieces:
            if band[:, left:right].sum() < 4:
                continue  # a speck
            rows = np.where(band[:, left:right].any(axis=1))[0]
            upper, lower = top + int(rows[0]), top + int(rows[-1]) + 1
            if lower - upper < THIN_BAND * (bottom - top):  # dots or dashes: a line's height
                upper, lower = top, bottom
            boxes.append(LineBox(left, upper, right, lower, row))
    # Row numbers count kept rows only, so text lines follow one another without holes.
    renumber = dict((row, index) for index, row in enumerate(sorted(set(b.row for b in boxes))))
    return [box._replace(row=renumber[box.row]) for box in boxes]


def crop_line(image, box, margin=CROP_MARGIN, frame=None):
    """The piece ``box`` of the page, from ``frame`` = ``(top, bottom)`` (default: its ink;
    see :func:`line_frame`) with a margin of ``margin`` frame heights above and below and
    1.5 times that at the sides, as the recogniser's training crops have."""
    top, bottom = frame if frame is not None else (box.top, box.bottom)
    height = bottom - top
    pad_x, pad_y = int(round(margin * 1.5 * height)) + 1, int(round(margin * height)) + 1
    width_limit, height_limit = image.size
    return image.crop((max(0, box.left - pad_x), max(0, int(top) - pad_y),
                       min(width_limit, box.right + pad_x),
                       min(height_limit, int(round(bottom)) + pad_y)))


def pieces_by_row(boxes):
    """``{row: [index of each of its pieces in boxes, left to right]}``, rows in order."""
    rows = collections.OrderedDict((row, []) for row in sorted(set(b.row for b in boxes)))
    for index in sorted(range(len(boxes)), key=lambda i: (boxes[i].row, boxes[i].left)):
        rows[boxes[index].row].append(index)
    return rows


def page_text(boxes, texts, keep_empty=False, language=None):
    """The page's text, one line per row: pieces of a row joined as ``language`` (default:
    English) joins them: by a space, none beside a Chinese character. Rows where nothing was
    read are left out, unless ``keep_empty`` (then line i is row i)."""
    language = language or get_language()
    rows = [language.join_pieces([texts[i] for i in pieces if texts[i]])
            for pieces in pieces_by_row(boxes).values()]
    return "\n".join(row for row in rows if row or keep_empty)


def draw_lines(image, boxes, texts, path, font=None):
    """Write a PNG: the page with its line boxes, beside the text read at each line's height."""
    page = image.convert("RGB")
    width, height = page.size
    canvas = Image.new("RGB", (2 * width, height), "white")
    canvas.paste(page, (0, 0))
    draw = ImageDraw.Draw(canvas)
    for box, text in zip(boxes, texts):
        draw.rectangle((box.left, box.top, box.right - 1, box.bottom - 1), outline=(220, 0, 0))
        draw.text((width + 8 + box.left // 2, box.top), text, fill=(0, 0, 160), font=font)
    with written_whole(path) as temporary:  # no half-written picture blocks the rerun
        canvas.save(temporary)
    return path
