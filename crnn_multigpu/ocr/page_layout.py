"""A scanned page made ready for line finding: its skew corrected and its columns found.

:func:`estimate_skew` finds the angle at which the page's text rows are most sharply
separated: for each candidate angle the ink pixels are projected onto the page's height
along lines of that slope, and the angle whose projection has the largest sum of squares
(tall peaks on rows of text, empty gaps between them) wins; a coarse search over +-5 degrees
is refined around its best angle. Straight is the prior: the angle is taken only if it also
sharpens the rows of vertical strips of the page projected apart, which columns of offset rows
lined up by a slant do not. :func:`deskew` turns the page back by that angle.

:func:`find_columns` splits a page into columns of text at gutters: vertical strips, at
least two glyph heights wide and between a fifth and four fifths of the page's width, that
are empty in nearly every row of text (a heading across both columns may cross one), between
columns of about equal width that each hold text in at least 30 % of the rows (an option
list's labels beside their descriptions are one column, read row by row). The cut is the
widest run of pixel columns inside such a strip that no text row crosses (the fewest, under a
heading): a ragged-right column's longest lines reach into the strip, and are not cut. Lines
are then found in each column on its own, and read column after column.
"""
import numpy as np
from PIL import Image

from crnn_multigpu.datasets.ink_runs import runs_of
from crnn_multigpu.ocr.page import glyph_height, ink_mask, paper_grey, row_bands

MAX_SKEW = 5.0          # degrees searched either way
COARSE_STEP = 0.25      # degrees
FINE_STEP = 0.02
MIN_SKEW = 0.1          # below this a page is left as it is (1.6 px over a 900 px line; turning blurs)
MAX_POINTS = 120000     # ink pixels sampled for the skew search
# Vertical strips of the page in which a skew must sharpen the rows too (see _skew_of_ink).
SKEW_STRIPS = 4
GUTTER_WIDTH = 2.0      # in glyph heights
RULED_GUTTER_WIDTH = 1.0  # a gutter with a rule down it (CSS's default column gap is 1 em)
GUTTER_INK = 0.08       # share of text rows allowed to cross a gutter (headings)
MIN_WIDTH_RATIO = 0.6   # narrowest column's text width over the widest's
RULE_STRIP = 0.5        # widest column rule, in glyph heights (a dotted one turned by a deskew)
RULE_FLANK = 0.5        # the gutter on each side of a column rule, at least, in glyph heights


def _ink_points(ink):
    rows, cols = np.nonzero(ink)
    if rows.size > MAX_POINTS:  # an even sample keeps the profile's shape
        keep = np.linspace(0, rows.size - 1, MAX_POINTS).astype(np.int64)
        rows, cols = rows[keep], cols[keep]
    return rows.astype(np.float64), cols.astype(np.float64)


def _sharpness(rows, cols, angle, height, strips=1, width=1):
    """Sum of squares of the ink's projection along lines of slope ``angle`` (degrees), each of
    ``strips`` vertical strips of the ``width`` px page projected on its own."""
    shifted = np.round(rows - cols * np.tan(np.radians(angle))).astype(np.int64)
    shifted -= shifted.min()
    strip = np.minimum((cols * strips / width).astype(np.int64), strips - 1)
    counts = np.bincount(shifted + strip * (shifted.max() + 1), minlength=height)
    return float(np.dot(counts, counts))


def estimate_skew(image):
    """The angle in degrees (counter-clockwise positive, as ``Image.rotate`` takes it) by
    which the text rows of the page ``image`` are turned; 0.0 for a page with no ink."""
    return _skew_of_ink(ink_mask(image.convert("L")))


def _skew_of_ink(ink):
    rows, cols = _ink_points(ink)
    if rows.size < 100:
        return 0.0
    height = ink.shape[0]
    # Image rows grow downwards: text turned counter-clockwise rises to the right.
    score = lambda angle: _sharpness(rows, cols, -angle, height)  # noqa: E731
    coarse = np.arange(-MAX_SKEW, MAX_SKEW + 1e-9, COARSE_STEP)
    best = coarse[int(np.argmax([score(a) for a in coarse]))]
    fine = np.arange(best - COARSE_STEP, best + COARSE_STEP + 1e-9, FINE_STEP)
    angle = float(fine[int(np.argmax([score(a) for a in fine]))])
    # Straight is the prior. Columns whose rows are offset (a browser's print, a sidebar) line
    # up at a slant across the page, but within a strip of one column the slant only blurs its
    # rows: a skew must also sharpen the rows of the strips taken apart. (A real page turned
    # by 0.3 degrees or more passes; by 0.2 it is left as it is, 3 px over a 900 px line.)
    within = lambda a: _sharpness(rows, cols, -a, height, SKEW_STRIPS, ink.shape[1])  # noqa: E731
    return angle if within(angle) > within(0.0) else 0.0


def deskew(image, ink):
    """``(image, ink, angle, pivot)``: the mode L page ``image`` whose :func:`ink_mask` is
    ``ink`` turned back by its :func:`estimate_skew` angle about the point ``pivot`` (same size,
    corners filled with the paper's grey), its ink turned with it; both unchanged below
    ``MIN_SKEW``. The pivot is the page's centre, unless its ink would leave the page turned
    about it (:func:`_stays_on_the_page`): then the centre of the box around its ink.

    The ink is turned, not found again: the page reader finds a page's ink once. Its pixels
    are resampled as the page's are and kept where they are at least half ink. The real page
    of tests/test_page_layout.py turned by 12 angles from -4.5 to 4 degrees read as well so
    (0.40 % CER, 344 of 420 rows exactly) as with its ink found again (0.45 %, 342)."""
    centre = (image.width / 2.0, image.height / 2.0)
    angle = _skew_of_ink(ink)
    if abs(angle) < MIN_SKEW:
        return image, ink, 0.0, centre
    paper = int(paper_grey(np.asarray(image), ink))
    pivot = centre if _stays_on_the_page(ink, angle) else _ink_centre(ink)
    turned_ink = Image.fromarray(ink.astype(np.uint8) * 255).rotate(
        -angle, resample=Image.BICUBIC, fillcolor=0, center=pivot)
    return (image.rotate(-angle, resample=Image.BICUBIC, fillcolor=paper, center=pivot),
            np.asarray(turned_ink) >= 128, angle, pivot)


def _ink_box(ink):
    """``(left, top, right, bottom)`` of the box around the ink (right and bottom exclusive)."""
    rows, columns = np.nonzero(ink.any(axis=1))[0], np.nonzero(ink.any(axis=0))[0]
    return columns[0], rows[0], columns[-1] + 1, rows[-1] + 1


def _ink_centre(ink):
    """The centre ``(x, y)`` of the box around the ink."""
    left, top, right, bottom = _ink_box(ink)
    return (left + right) / 2.0, (top + bottom) / 2.0


def _stays_on_the_page(ink, angle):
    """Whether the box around the page's ``ink`` stays on the page turned by ``angle`` degrees
    (either way) about its centre. A page's margins keep its text on it; the ends of a strip a
    line high and 20,000 px wide, turned by 0.2 degrees, move 35 px up and down, off the page
    (its text was lost, read as nothing). Turned about the centre of its ink, they stay.
    (Turned onto a larger page instead, the same strip turned by a quarter turn, a sample the
    page reader reads when the layout cannot tell, grew to 1,800 x 20,000 px: 14 times
    slower.)"""
    left, top, right, bottom = _ink_box(ink)
    height, width = ink.shape
    # The box's farthest reach from the centre along each axis, and how far a turn moves it.
    reach_x = max(width / 2.0 - left, right - width / 2.0)
    reach_y = max(height / 2.0 - top, bottom - height / 2.0)
    sine, cosine = abs(np.sin(np.radians(angle))), np.cos(np.radians(angle))
    return (reach_x * cosine + reach_y * sine <= width / 2.0 and
            reach_x * sine + reach_y * cosine <= height / 2.0)


def _cleanest_run(crossing, start, end):
    """``(start, end)`` of the widest run of pixel columns in ``[start, end)`` crossed by the
    fewest text rows. A gutter's strip may begin inside the longest lines of a ragged-right
    column (few rows reach that far); cut there, they lose their last letters. The columns no
    row crosses (or, under a heading across the page, the fewest) are the gutter itself."""
    strip = crossing[start:end]
    runs = runs_of(strip == strip.min())
    left, right = max(runs, key=lambda run: run[1] - run[0])
    return start + left, start + right


def _without_column_rules(crossing, glyph, ruled):
    """``(crossing, ruled)``: ``crossing`` with the rules drawn between columns counted as
    empty, and ``ruled`` (True where a solid rule was taken out) marking them too. A column rule
    is a strip of pixel columns at most :data:`RULE_STRIP` glyph heights wide that rows cross,
    with nearly empty strips (gutter halves, each at least :data:`RULE_FLANK` glyph heights) on
    both sides: a solid, dashed or dotted rule crosses every row and halves the gutter into
    strips too narrow to be one; a table's rule has cell text beside it in the rows around it."""
    crossing, ruled = crossing.copy(), ruled.copy()
    empty = runs_of(crossing <= GUTTER_INK)
    for (left_start, left_end), (right_start, right_end) in zip(empty, empty[1:]):
        if (right_start - left_end <= max(3, RULE_STRIP * glyph) and
                min(left_end - left_start, right_end - right_start) >= RULE_FLANK * glyph):
            crossing[left_end:right_start] = 0.0
            ruled[left_end:right_start] = True
    return crossing, ruled


def _rule_extent(rules):
    """For every pixel column of the mask ``rules``: rows from its first rule pixel to its
    last (0 without any), so that a dotted rule reaches as far as a solid one."""
    height = rules.shape[0]
    first = rules.argmax(axis=0)
    last = height - 1 - rules[::-1].argmax(axis=0)
    return np.where(rules.any(axis=0), last - first + 1, 0)


def find_columns(ink, rules=None):
    """``[(left, right)]``: the columns of text of the page whose :func:`ink_mask` is ``ink``
    (its solid rules taken out: :func:`~crnn_multigpu.ocr.page.without_rules`; ``rules``: the
    mask of their pixels, when known), left to right (one for most pages). A gutter with a
    rule down it needs only :data:`RULED_GUTTER_WIDTH` glyph heights: the rule says it is one."""
    width = ink.shape[1]
    bands = row_bands(ink)
    glyph = glyph_height(ink)
    if len(bands) < 4 or glyph <= 0:
        return [(0, width)]
    # For every pixel column: the share of text rows that hold ink in it.
    crossing = np.zeros(width)
    for top, bottom in bands:
        crossing += ink[top:bottom].any(axis=0)
    crossing /= len(bands)
    # A rule taken out before (solid, dotted or dashed) reaching down at least half the text.
    ruled_down = np.zeros(width, bool) if rules is None else \
        _rule_extent(rules) >= 0.5 * (bands[-1][1] - bands[0][0])
    crossing, ruled = _without_column_rules(crossing, glyph, ruled_down)
    cuts = [_cleanest_run(crossing, start, end) for start, end in runs_of(crossing <= GUTTER_INK)
            if end - start >= (RULED_GUTTER_WIDTH if ruled[start:end].any() else
                               GUTTER_WIDTH) * glyph and
            0.2 * width < (start + end) / 2.0 < 0.8 * width]
    if not cuts:
        return [(0, width)]
    columns, left = [], 0
    for start, end in cuts:
        columns.append((left, start))
        left = end
    columns.append((left, width))
    # Every column must hold text in a good share of the rows: a code listing's short lines
    # leave its right half empty, and a page number beside a block is no column.
    rows_with_ink = [np.mean([ink[top:bottom, a:b].any() for top, bottom in bands])
                     for a, b in columns]
    if min(rows_with_ink) < 0.3:
        return [(0, width)]
    # Columns of a page are set about equally wide; a narrow one beside a wide one is the
    # label column of an option list or a glossary, read row by row with its descriptions.
    widths = []
    for a, b in columns:
        inked = np.nonzero(ink[:, a:b].any(axis=0))[0]
        widths.append(inked[-1] - inked[0] + 1)
    if min(widths) < MIN_WIDTH_RATIO * max(widths):
        return [(0, width)]
    return columns
