"""Finding the text inside a crop and cutting it as the models learnt their crops.

People cut words and lines loosely: margins of a tenth to several times the text's height,
uneven, on grey paper, with a speck or the edge of a frame caught in. Normalised to the
model's height as they come, such crops show text smaller than anything the models learnt
from and placed anywhere; the shipped text model read 70 % of such words right where
Tesseract read 99 %. Every training crop, generated or cut from a page, frames its text as a
full line: from the top of the font's tallest glyphs to the bottom of its descenders, with a
small margin, whatever letters the text holds. :func:`frame_text` finds the text of a crop
(:func:`ink_of`, :func:`text_box`) and cuts it so (:func:`line_frame`); the same word then
reads the same on any canvas.

A crop without ascenders and descenders ("name", but also "OPEN" or "2048", or a line of
Hanzi) is one band of ink. Framed at its own ink it would fill the line's whole height and be
read half again too large ("m" as "nn"); it gets the room a line has around that band, as the
crop's language describes it (``band_room`` in ``datasets/languages/*.json``: for Latin
scripts the band is the small letters, for Chinese the characters themselves). Capitals and
digits look the same in one band, so readers also read such a crop framed as capitals
(:func:`as_capitals`). A crop already framed as the training crops are is read as it comes
(:func:`framed_as_trained`), and so is one whose text was not found whole.

``scripts/loose_crops.py`` (300 loose crops, margins of 10-250 % of the text's height, grey
paper, training and held-out faces): the text model read 72.7 % of words and 46.0 % of lines
exactly right as they came, 97.3 % and 94.0 % so; Tesseract ``--psm 7`` 98.0 % and 98.0 %.
"""
import collections

import numpy as np

from crnn_multigpu.datasets.ink_runs import runs_of
from crnn_multigpu.datasets.language import LATIN_BAND_ROOM
from crnn_multigpu.ocr.page import CORE_SHARE, band_line

TextBox = collections.namedtuple("TextBox", ["top", "bottom", "left", "right"])
TextBox.__doc__ = """The pixel box of a crop's text (bottom and right exclusive)."""

# Ink: pixels that differ from the background, in the text's direction, by this share of the
# strongest difference (anti-aliased edges are half-tone) and by NOISE_SIGMAS of the
# background's own noise.
INK_SHARE_OF_PEAK = 0.5
NOISE_SIGMAS = 4.0
# Rules and frame edges, not text: rows inked over this share of the crop's width; columns
# holding more ink than this many times the text's height (no glyph is that tall).
RULE_COVER = 0.8
RULE_LENGTH = 1.5
# Rows of ink this close to the text's rows (in their height) belong to it: the dots of i and
# j, accents; further ones are specks or other lines' remains.
ROW_JOIN = 0.6
# Pieces of ink in the text's rows no further apart than this (in the text's height) are one
# line (word spaces are a third of it); a piece further off with less than KEEP_MASS of the
# biggest piece's ink is a speck.
COLUMN_JOIN = 1.5
KEEP_MASS = 0.15
# A frame that would leave out more than this share of the crop's ink (but rules) has not
# found its text (print on shaded paper found in part, letters spaced wider than words): the
# crop is read as it comes.
INK_INSIDE = 0.85
# Text is at least this many pixels high: a smaller "box" is the grain of textured paper.
MIN_TEXT_HEIGHT = 6
# Around the line (tallest glyphs to descenders), as training crops are cut: this margin
# above and below and beside, in line heights.
MARGIN = 0.1
SIDE_MARGIN = 0.15
# Ink reaching beyond a text's core band by more than this share of its height is an ascender
# or a descender: the text is not one band.
ZONE_SHARE = 0.25
# The room a full line has around a band of capitals or digits, in band heights (DejaVu: the
# tallest glyphs rise 0.04 cap heights above them, descenders fall 0.33 below).
CAPITALS_ROOM = (0.05, 0.35)
# A crop framed as the training crops are (generated ones: 0-0.1 line heights above and below
# the line, up to about 0.35 beside; page lines 0.07) is read as it comes: in line heights, the
# room allowed above and below (a little less than none: the line's ends are estimates) and
# beside.
TRAINED_ROOM = (-0.1, 0.3)
TRAINED_SIDE = 0.6


def ink_of(grey):
    """``(ink, background)``: the boolean ink mask of the crop ``grey`` (float [h, w] in
    [0, 1], either polarity) and its background grey level. The background is the median of
    the crop's border; ink differs from it in the direction that darkens (or lightens) the
    crop's mean. Isolated pixels (noise) are not ink."""
    if min(grey.shape) < 3:
        border = grey.ravel()
    else:
        border = np.concatenate([grey[0], grey[-1], grey[1:-1, 0], grey[1:-1, -1]])
    background = float(np.median(border))
    signed = background - grey if float(grey.mean()) < background else grey - background
    peak = float(signed.max())
    noise = 1.4826 * float(np.median(np.abs(signed - np.median(signed))))
    if peak < 2.0 / 255.0:
        return np.zeros(grey.shape, bool), background
    ink = signed >= max(INK_SHARE_OF_PEAK * peak, NOISE_SIGMAS * noise)
    return ink & (_neighbours(ink) >= 2), background


def _neighbours(mask):
    """How many of each pixel's 8 neighbours are set in ``mask``."""
    padded = np.pad(mask.astype(np.int8), 1)
    height, width = mask.shape
    return sum(padded[1 + dy:1 + dy + height, 1 + dx:1 + dx + width]
               for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dy or dx)


def text_box(ink):
    """The :class:`TextBox` of the text in a crop's ``ink`` mask, or None when it holds none:
    the heaviest band of rows with the rows close to it, the pieces of ink in it that are
    near one another or heavy, without the rules and frame edges (see the constants). Rows and
    columns inked almost across the crop are left out while the text's rows are found (a
    frame's edge), and then dropped where they lie outside them or reach beyond them."""
    full_rows = ink.sum(axis=1) >= RULE_COVER * ink.shape[1]
    full_columns = ink.sum(axis=0) >= RULE_COVER * ink.shape[0]
    # (A crop of nothing but such strokes, "III" cut tight, is all text.)
    rows = _main_rows(ink & ~full_rows[:, None] & ~full_columns[None, :]) or _main_rows(ink)
    if rows is None:
        return None
    outside = np.ones(ink.shape[0], bool)
    outside[rows[0]:rows[1]] = False
    ink = ink & ~(full_rows & outside)[:, None] & \
        ~(ink.sum(axis=0) > RULE_LENGTH * (rows[1] - rows[0]))[None, :]
    if not ink[rows[0]:rows[1]].any():
        return None
    left, right = _main_columns(ink[rows[0]:rows[1]])
    top, bottom = _main_rows(ink[:, left:right])
    if bottom - top < MIN_TEXT_HEIGHT:  # noise on textured paper, not letters
        return None
    return TextBox(top, bottom, left, right)


def _main_rows(ink):
    """``(top, bottom)`` of the heaviest run of inked rows and the runs near it, or None."""
    profile = ink.sum(axis=1)
    runs = runs_of(profile > 0)
    if not runs:
        return None
    masses = [int(profile[a:b].sum()) for a, b in runs]
    first = last = int(np.argmax(masses))
    grown = True
    while grown:
        grown = False
        height = runs[last][1] - runs[first][0]
        if first > 0 and runs[first][0] - runs[first - 1][1] <= ROW_JOIN * height:
            first, grown = first - 1, True
        if last < len(runs) - 1 and runs[last + 1][0] - runs[last][1] <= ROW_JOIN * height:
            last, grown = last + 1, True
    return runs[first][0], runs[last][1]


def _main_columns(band):
    """``(left, right)`` of the text in the rows ``band`` of the ink: its pieces grouped
    across gaps of up to :data:`COLUMN_JOIN` heights, the groups holding at least
    :data:`KEEP_MASS` of the heaviest group's ink."""
    profile = band.sum(axis=0)
    runs = runs_of(profile > 0)
    gap = COLUMN_JOIN * band.shape[0]
    groups = [list(runs[0])]
    for start, end in runs[1:]:
        if start - groups[-1][1] <= gap:
            groups[-1][1] = end
        else:
            groups.append([start, end])
    masses = [int(profile[a:b].sum()) for a, b in groups]
    kept = [group for group, mass in zip(groups, masses) if mass >= KEEP_MASS * max(masses)]
    return kept[0][0], kept[-1][1]


def line_frame(ink, box, band_room=LATIN_BAND_ROOM):
    """``(top, bottom, left, right)``: the frame to cut around the text ``box`` of the crop's
    ``ink``, in the crop's pixels (it may reach beyond them): the box's full line
    (:func:`~crnn_multigpu.ocr.page.band_line`: the band of its commonest letters with
    ``band_room`` above and below, in band heights, or its own ink where it reaches further)
    with :data:`MARGIN` above and below and :data:`SIDE_MARGIN` beside."""
    line_top, line_bottom = np.add(band_line(
        ink[box.top:box.bottom, box.left:box.right].sum(axis=1), band_room), box.top)
    height = line_bottom - line_top
    return (int(np.floor(line_top - MARGIN * height)), int(np.ceil(line_bottom + MARGIN * height)),
            int(np.floor(box.left - SIDE_MARGIN * height)),
            int(np.ceil(box.right + SIDE_MARGIN * height)))


def as_capitals(pixels):
    """``pixels`` (a crop as :func:`frame_text` gave it, at any size) framed again as a band of
    capitals or digits (:data:`CAPITALS_ROOM`) when its text is one band of ink, else None. A
    band cannot tell small letters ("name") from capitals ("OPEN", "2048"): framed as small
    letters, capitals came out lower case ("STAKES" read "stakes"), so readers read both
    (``TextReader.read_crops``)."""
    ink = ink_of(pixels)[0]
    box = text_box(ink)
    if box is None or not one_band(ink[box.top:box.bottom, box.left:box.right].sum(axis=1)):
        return None
    return frame_text(pixels, CAPITALS_ROOM)


def one_band(profile):
    """Whether a piece of text whose ink's row profile is ``profile`` is one band: no ink
    reaches beyond its core band (``page.CORE_SHARE``) by more than :data:`ZONE_SHARE` of the
    band's height (an ascender rises about 0.4 of it, a descender falls as far)."""
    core = np.nonzero(profile >= CORE_SHARE * profile.max())[0]
    reach = ZONE_SHARE * (core[-1] + 1 - core[0])
    return core[0] <= reach and len(profile) - 1 - core[-1] <= reach


def framed_as_trained(shape, ink, box, band_room=LATIN_BAND_ROOM):
    """Whether a crop of ``shape`` whose ``ink`` holds the text ``box`` frames it as the
    training crops do: room above and below its full line (as :func:`line_frame` finds it)
    between :data:`TRAINED_ROOM` of the line's height, and at most :data:`TRAINED_SIDE` beside
    it; never a crop of one band (no ascender, no descender), whose line is a guess. Such a crop is read as it is: cut again, crops drawn as the models' training crops
    (held-out faces) read 5-7 points worse, where the text's box was found less well than the
    crop was cut."""
    profile = ink[box.top:box.bottom, box.left:box.right].sum(axis=1)
    if one_band(profile):
        return False  # small letters or capitals? Framed as small letters, and as capitals
    line_top, line_bottom = np.add(band_line(profile, band_room), box.top)
    height = line_bottom - line_top
    low, high = TRAINED_ROOM[0] * height, TRAINED_ROOM[1] * height
    return (low <= line_top <= high and low <= shape[0] - line_bottom <= high and
            max(box.left, shape[1] - box.right) <= TRAINED_SIDE * height)


def frame_text(grey, band_room=LATIN_BAND_ROOM):
    """The crop ``grey`` (float [h, w] in [0, 1], either polarity) cut to its text framed as a
    training line (:func:`line_frame`), padded with its background where the frame reaches
    beyond it; ``grey`` itself when it holds no ink or frames it so already
    (:func:`framed_as_trained`)."""
    ink, background = ink_of(grey)
    box = text_box(ink)
    if box is None or framed_as_trained(grey.shape, ink, box, band_room):
        return grey
    top, bottom, left, right = line_frame(ink, box, band_room)
    if _share_inside(ink, (top, bottom, left, right)) < INK_INSIDE:
        return grey
    height, width = grey.shape
    framed = np.full((bottom - top, right - left), background, np.float32)
    framed[max(0, -top):min(height, bottom) - top, max(0, -left):min(width, right) - left] = \
        grey[max(0, top):bottom, max(0, left):right]
    return framed


def _share_inside(ink, frame):
    """The share of the crop's ``ink`` (but for rows and columns inked almost across it: rules
    and frame edges) that lies inside ``frame`` (top, bottom, left, right)."""
    ink = ink & ~(ink.sum(axis=1) >= RULE_COVER * ink.shape[1])[:, None] & \
        ~(ink.sum(axis=0) >= RULE_COVER * ink.shape[0])[None, :]
    top, bottom, left, right = frame
    total = int(ink.sum())
    inside = int(ink[max(0, top):max(0, bottom), max(0, left):max(0, right)].sum())
    return inside / float(total) if total else 1.0
