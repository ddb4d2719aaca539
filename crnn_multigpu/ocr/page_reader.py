"""Reading a printed page (crnn-predict --page): a photo of a page seen square
(:mod:`~crnn_multigpu.ocr.page_photo`), turned upright, straightened, split into its columns,
its lines found and read.

:class:`PageReader` owns the whole path and returns a
:class:`~crnn_multigpu.ocr.page_result.Page`. The page's ink
(:func:`~crnn_multigpu.ocr.page.ink_mask`) is found once: the layout's witness below, the
straightening, the columns, the rules and the lines all work on that mask, turned with the
page (found again at every step, as before, it cost 5 masks an upright page and 9 a turned
one; a 600 dpi page's layout took 3.1 s of CPU instead of 4.7).

A page may come turned by a quarter or a half turn (scanned sideways or upside down); read
as it comes, its "lines" are a character or two of garbage. Two witnesses tell which way up
it is:

- the layout tells whether its lines run across the page or down it (:func:`layout_turns`):
  along a line of text the blank gaps between strokes are short (inside and between letters),
  across lines they also span the space between lines. The median blank run between ink along
  the page's pixel columns is at least :data:`CLEAR_LAYOUT` times that along its pixel rows
  when the lines run across, at most its inverse when they run down (the gaps do not change
  with a skew of a few degrees). Measured on upright pages (72-300 dpi): 2.0-6.0 on 14 Latin
  pages (prose, code, two columns, tables of options, bold, italic) and 2.5-5.5 on five
  Chinese ones; a table of figures (1.4), one line (0.75), one word or three short lines (1.75)
  and a Chinese page without Latin, its characters on a grid (1.0), cannot be told by it.
- the model tells which way up: a sample of the page's widest lines (:data:`SAMPLE_LINES`) is
  read as found and turned by 180 degrees. Upside down, letters are shapes it never learnt,
  read with less confidence: minus the mean log probability per pixel column of the crops at
  the model's height was 2.5-140 times larger upside down for the text model on those 18 Latin
  pages, 1.6-3.9 times for the Chinese model on the Chinese pages and three Latin ones. When
  the layout cannot tell, a sample of the page turned by a quarter turn is read both ways up
  too: its "lines" are slices across the lines, which the text model read 4.8-10 times less
  surely (but the Chinese model turned Chinese characters about as surely: 1.07).

Upright is the prior: most pages come upright, and a page read turned wrongly is garbage from
its first line to its last. A page is read turned only when the evidence is strong
(:func:`clearest_turn`): upside down when it reads :data:`CLEAR_HALF_TURN` times more surely
so, by a quarter turn when it reads :data:`CLEAR_QUARTER_TURN` times more surely so, or
:data:`CLEAR_HALF_TURN` times when its layout says its lines run down it, and only when the
turned reading is itself sure (:data:`READABLE`: a page of figures reads badly every way). A page that reads
better turned, but not that clearly, is read as it comes with a doubt (``Page.doubt``, which
the tools print as a warning); no page is refused. Of 12 upright browser and DocBook prints of
Chinese documentation the zh model read one turned by 90 degrees (1.07 times surer) and refused
two under the old rule (one margin for every turn, refusal when not clear). An upright page
costs the layout's measure and its sample read upside down (4 lines: 0.05-0.4 s on 2 cores).
"""
import collections
import itertools

import numpy as np

from crnn_multigpu.datasets import load_image
from crnn_multigpu.datasets.images import grey_page
from crnn_multigpu.datasets.language import LATIN_BAND_ROOM, get_language
from crnn_multigpu.ocr.page import ink_mask, line_crops, pieces_by_row, without_rules
from crnn_multigpu.ocr.page_layout import deskew, find_columns
from crnn_multigpu.ocr.page_photo import box_in_photo, flatten
from crnn_multigpu.ocr.page_result import Page, Piece, Row, confidence, union

# Measured on 300 and 110 dpi manual pages (50 lines, 13-1282 px wide at height 32): batches of
# 8 width-sorted lines read a page in 0.4 of the time one width-sorted batch of 64 takes.
PAGE_LINES_PER_BATCH = 8
CLEAR_LAYOUT = 2.0      # median gap down the columns over along the rows (module docstring)
CLEAR_HALF_TURN = 1.25     # how much surer a page must read upside down than as it comes
CLEAR_QUARTER_TURN = 5.0   # ... and by a quarter turn, unless its layout says its lines run down
# The most a turned reading may lose a pixel column and still be chosen: text read right way up
# lost 0.001-0.015 (text and zh models, Latin and Chinese pages, lines alone); pages of figures
# without text lost 0.036-0.12 every way, and read "best" upside down by 1.3-2.5 times.
READABLE = 0.025
SAMPLE_LINES = 4        # the widest lines read upside down too: one batch
ACROSS, DOWN, ALL_TURNS = (0, 180), (90, 270), (0, 90, 180, 270)

Lines = collections.namedtuple("Lines", ["page", "skew", "boxes", "columns", "crops", "pivot"])
Lines.__doc__ = """The lines of a page turned upright: the straightened page (mode L), the
angle it was straightened by, the :class:`~crnn_multigpu.ocr.page.LineBox` of every piece on
it, the column each lies in, its crop, and the point the page was straightened about."""


class PageReader(object):
    """Reads printed pages with ``recognizer`` (a line-reading
    :class:`~crnn_multigpu.ocr.text_reader.TextReader`): ``PageReader(recognizer).read(path)``
    is a :class:`~crnn_multigpu.ocr.page_result.Page`."""

    def __init__(self, recognizer):
        self.recognizer = recognizer
        self.language = recognizer.language or get_language()

    def read(self, source):
        """The :class:`~crnn_multigpu.ocr.page_result.Page` of the page ``source`` (a path,
        bytes or a PIL image of any mode, brought to grey by
        :func:`~crnn_multigpu.datasets.images.grey_page`).

        The page is read at the first turn its layout allows (as it comes, unless its lines
        run down it); a sample of those lines is read upside down too, and a sample of the
        page as it comes and, when the layout cannot tell, turned by a quarter turn, both ways
        up. Only when another turn reads clearly best (:func:`clearest_turn`) is the page read
        again, so turned."""
        photo = flatten(grey_page(source))  # a photo of a page is seen square (page_photo)
        grey = photo.page
        ink = ink_mask(grey)  # the one time: every step below works on this mask
        turns = layout_turns(ink)
        band_room = self.language.band_room
        found = dict((turn, page_lines(grey, ink, turn, band_room))
                     for turn in sorted(set(turn % 180 for turn in (0,) + turns)))
        first = turns[0]
        readings = self.read_lines(found[first].crops)
        losses = {}
        for turn, lines in found.items():
            losses[turn], losses[turn + 180] = sample_losses(
                self.recognizer, lines.boxes, lines.crops,
                readings[1] if turn == first else None)
        turn, doubt = clearest_turn(losses, lines_down=turns == DOWN)
        lines = found.get(turn) or page_lines(grey, ink, turn, band_room)
        if turn != first:
            readings = self.read_lines(lines.crops)
        return self.page(source, photo, turn, lines, readings, doubt)

    def read_lines(self, crops):
        """``(texts, log probabilities, frames)`` of the line ``crops`` of a page."""
        arrays = [load_image(crop, self.recognizer.height) for crop in crops]
        # A page's lines run from one word to the full measure: small batches of similar widths.
        texts, log_probs = self.recognizer.recognize_arrays(arrays,
                                                            batch_size=PAGE_LINES_PER_BATCH)
        frames = [array.shape[1] / float(self.recognizer.downsample) for array in arrays]
        return texts, log_probs, frames

    def page(self, source, photo, turn, lines, readings, doubt=None):
        """The :class:`~crnn_multigpu.ocr.page_result.Page` of ``lines`` read as ``readings``
        (:meth:`read_lines`) on the page ``source`` as
        :func:`~crnn_multigpu.ocr.page_photo.flatten` gave it (``photo``), turned by ``turn``
        (``doubt``: why that turn is in doubt, or None). Boxes are in the pixels of the image
        given, a photo's too."""
        texts, log_probs, frames = readings

        def box_of(index):
            box = input_box(lines.boxes[index], turn, lines.skew, photo.page.size,
                            lines.page.size, lines.pivot)
            return box if photo.homography is None else \
                box_in_photo(box, photo.homography, photo.size)

        rows = []
        for pieces in pieces_by_row(lines.boxes).values():
            read = [Piece(box_of(i), texts[i], confidence(log_probs[i], frames[i]),
                          lines.boxes[i]) for i in pieces]
            rows.append(Row(union([piece.box for piece in read]),
                            self.language.join_pieces([p.text for p in read if p.text]),
                            confidence(sum(log_probs[i] for i in pieces),
                                       sum(frames[i] for i in pieces)),
                            lines.columns[pieces[0]], tuple(read)))
        return Page(photo.size[0], photo.size[1], turn, lines.skew, tuple(rows),
                    source if isinstance(source, str) else None, lines.page, doubt)


def page_lines(grey, ink, turn=0, band_room=LATIN_BAND_ROOM):
    """The :class:`Lines` of the mode L page ``grey`` whose :func:`ink_mask` is ``ink``, turned
    counter-clockwise by ``turn`` (a multiple of 90) so that its lines run across it: the page
    turned straight (:func:`crnn_multigpu.ocr.page_layout.deskew`), its columns found, the
    lines of each found and framed by :func:`crnn_multigpu.ocr.page.line_crops` (``band_room``:
    the language's, for a page of one or two lines). Their rows run column after column, left
    to right."""
    if turn:  # a quarter or half turn only moves pixels: the mask turns exactly with the page
        grey, ink = grey.rotate(turn, expand=True), np.rot90(ink, turn // 90)
    page, ink, skew, pivot = deskew(grey, ink)
    # A rule down a gutter would join the columns' rows; where it was marks the gutter.
    page, kept = without_rules(page, ink)
    rules, ink = ink & ~kept, kept
    boxes, columns, crops = [], [], []
    for column, (left, right) in enumerate(find_columns(ink, rules)):
        # line_crops looks for rules again, at the column's own glyph height: the underlined
        # links of a narrow column of smaller text than the page's are found only there.
        column_boxes, column_crops = line_crops(page.crop((left, 0, right, page.height)),
                                                ink[:, left:right], band_room)
        first_row = max([box.row for box in boxes] or [-1]) + 1
        boxes.extend(box._replace(left=box.left + left, right=box.right + left,
                                  row=box.row + first_row) for box in column_boxes)
        columns.extend([column] * len(column_boxes))
        crops.extend(column_crops)
    return Lines(page, skew, boxes, columns, crops, pivot)


def input_box(box, turn, skew, size, upright_size, pivot):
    """The ``(x0, y0, x1, y1)`` in the image given (of ``size``) that holds ``box`` (on the page
    of ``upright_size`` turned counter-clockwise by ``turn`` about the pages' centres, as
    ``Image.rotate`` turns with ``expand``, and then back by ``skew`` about the point
    ``pivot``): its corners turned back."""
    centre = np.divide(upright_size, 2.0)
    corners = np.array([[box.left, box.top], [box.right, box.top], [box.left, box.bottom],
                        [box.right, box.bottom]], dtype=np.float64)
    # Undo the straightening (by -skew about the pivot), then the turn (about the centres).
    turned = _turned(corners - pivot, skew) + pivot - centre
    x, y = (_turned(turned, -turn) + np.divide(size, 2.0)).T
    x, y = np.round(x, 6), np.round(y, 6)  # a quarter turn is exact: no float's last bit
    return (max(0, int(np.floor(x.min()))), max(0, int(np.floor(y.min()))),
            min(size[0], int(np.ceil(x.max()))), min(size[1], int(np.ceil(y.max()))))


def _turned(points, degrees):
    """``points`` (rows of x, y about a centre) turned counter-clockwise on the screen by
    ``degrees`` (rows grow downwards), as ``Image.rotate`` turns."""
    angle = np.radians(degrees)
    return np.stack([points[:, 0] * np.cos(angle) + points[:, 1] * np.sin(angle),
                     -points[:, 0] * np.sin(angle) + points[:, 1] * np.cos(angle)], axis=1)


def blank_runs(ink):
    """The lengths of the runs of blank pixels between two ink pixels along every pixel row of
    the boolean ``ink`` (along the columns: pass ``ink.T``)."""
    rows, columns = np.nonzero(ink)
    steps = np.diff(columns)[rows[1:] == rows[:-1]] - 1
    return steps[steps > 0]


def layout_turns(ink):
    """The turns (counter-clockwise degrees) that may bring the page of ``ink`` upright, by its
    layout: ``(0, 180)`` when its lines run across it, ``(90, 270)`` when down, all four when
    the layout cannot tell (see the module docstring)."""
    along, down = blank_runs(ink), blank_runs(ink.T)
    if not along.size or not down.size:
        return ALL_TURNS
    ratio = np.median(down) / np.median(along)
    if ratio >= CLEAR_LAYOUT:
        return ACROSS
    return DOWN if ratio <= 1.0 / CLEAR_LAYOUT else ALL_TURNS


def sample_losses(recognizer, boxes, crops, log_probs=None):
    """``(as found, upside down)``: minus the mean log probability per pixel column with which
    ``recognizer`` reads the :data:`SAMPLE_LINES` widest of the line ``crops`` (those no taller
    than one and a half times the median piece: lines, not figures) as they are and turned by
    180 degrees; ``log_probs``: those of every crop when they were read already. None, None
    without a line."""
    if not boxes:
        return None, None
    heights = [box.bottom - box.top for box in boxes]
    lines = [index for index, height in enumerate(heights) if height <= 1.5 * np.median(heights)]
    lines.sort(key=lambda index: boxes[index].right - boxes[index].left, reverse=True)
    loaded = ((index, load_image(crops[index], recognizer.height)) for index in lines)
    arrays = list(itertools.islice(((index, array) for index, array in loaded
                                    if array.max() > 0), SAMPLE_LINES))
    if not arrays:
        return None, None
    found = [log_probs[index] for index, _ in arrays] if log_probs is not None else \
        recognizer.recognize_arrays([array for _, array in arrays], len(arrays))[1]
    turned = recognizer.recognize_arrays([array[::-1, ::-1] for _, array in arrays],
                                         len(arrays))[1]
    columns = sum(array.shape[1] for _, array in arrays)
    return -sum(found) / columns, -sum(turned) / columns


def clearest_turn(losses, lines_down=False):
    """``(turn, doubt)``: the turn of ``losses`` ``{turn: loss or None}`` to read the page at,
    and why it is in doubt (a sentence) or None. A turn's loss, multiplied by the evidence it
    needs (:data:`CLEAR_HALF_TURN` for 180 degrees, :data:`CLEAR_QUARTER_TURN` for a quarter
    turn, or the former when ``lines_down``: the layout says so), must be below that of the
    page as it comes (0), and its own at most :data:`READABLE`, to be chosen; the least such
    wins. Read as it comes while another turn reads better, the page is in doubt. Without a
    loss as it comes, the best known turn; without any, 0."""
    known = dict((turn, loss) for turn, loss in losses.items() if loss is not None)
    if 0 not in known:
        return (min(known, key=lambda turn: (known[turn], turn)) if known else 0), None

    def needed(turn):
        return 1.0 if turn == 0 else CLEAR_HALF_TURN if turn == 180 or lines_down else \
            CLEAR_QUARTER_TURN
    turn = min((turn for turn in known if turn == 0 or known[turn] <= READABLE),
               key=lambda turn: (known[turn] * needed(turn), turn != 0, turn))
    better = [other for other in known if known[other] < known[0]]
    if turn or not better:
        return turn, None
    other = min(better, key=lambda other: (known[other], other))
    return 0, ("it reads a little better turned by %d degrees (%.3g against %.3g a column), "
               "not clearly enough to turn it: read as it comes; if its text is garbage, turn "
               "it upright and pass it again" % (other, known[other], known[0]))
