"""What reading a page gives: a :class:`Page` of :class:`Row` s, each made of the :class:`Piece` s
read on it, with boxes, texts and confidences; shown as plain text, JSON or hOCR.

**Boxes** are ``(x0, y0, x1, y1)`` in pixels of the image as it was given (before it was
turned upright or straightened), ``x1`` and ``y1`` exclusive: the smallest such rectangle
that holds the piece's ink box on the page as read, its corners turned back through the
straightening and the turn. On a page read as it came they are the ink boxes; on a page
turned by a quarter or half turn, those exactly, turned; on a page straightened by ``skew``
degrees, the box of the slanted band the line lies in, which is its slanted ink's box give
or take a few pixels (the band's corners hold no ink; 0-7 px on a page turned by 2 degrees,
tests/test_page_result.py).

**Confidence** is the geometric mean, over the model's frames of the crops read (one per
``downsample`` pixel columns at the model's height), of the probability the model gave the
reading: ``exp(log_prob / frames)`` in [0, 1], with the recognizer's log probability of the
text it returns (greedy: the best path; beam, ``--char-lm`` or ``--lexicon``: that
decoder's). A row pools its pieces: their log probabilities summed over their frames summed.
The page reader tells a page's way up by the same measure (per pixel column). It ranks
readings (a line read wrong tends to score lower) but is not the chance of being right.

**JSON** (:meth:`Page.to_json`): ``{"image": path or null, "width": W, "height": H,
"turn": degrees, "skew": degrees, "rows": [{"box": [x0, y0, x1, y1], "text": str,
"confidence": float, "column": int, "pieces": [{"box": [...], "text": str,
"confidence": float}]}]}``, rows in reading order (column after column, top to bottom),
``turn`` the counter-clockwise turn (0, 90, 180 or 270) that brought the page upright and
``skew`` the counter-clockwise angle its lines were found turned by. Rows where nothing was
read are kept, with ``"text": ""``.

**hOCR** (:meth:`Page.to_hocr`, :func:`hocr_document`): the XHTML that Tesseract writes and
hOCR tools read (hocr-tools' hocr-lines, hocr-eval-lines, hocr-split; correction and layout
viewers): an ``ocr_page`` per page, an ``ocr_carea`` holding one ``ocr_par`` per column, an
``ocr_line`` per row with ``title="bbox x0 y0 x1 y1; x_wconf NN"`` (the confidence in
percent; ``textangle`` added on a page that lay turned) and the row's text. The page's
``image`` is its name escaped as :mod:`crnn_multigpu.ocr.names` says. There are no
``ocrx_word`` elements: the recognizer reads whole lines and knows no word boxes.
"""
import html
import math
from dataclasses import dataclass, field
from typing import Optional, Tuple

from crnn_multigpu.ocr.names import escaped
from crnn_multigpu.ocr.page import draw_lines

HOCR_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN"
    "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
 <head>
  <title></title>
  <meta http-equiv="Content-Type" content="text/html;charset=utf-8"/>
  <meta name="ocr-system" content="crnn_multigpu"/>
  <meta name="ocr-capabilities" content="ocr_page ocr_carea ocr_par ocr_line"/>
 </head>
 <body>
"""
HOCR_TAIL = """ </body>
</html>
"""


def confidence(log_prob, frames):
    """``exp(log_prob / frames)`` clipped to [0, 1] (module docstring); 1 without a frame."""
    return min(1.0, math.exp(min(0.0, log_prob) / frames)) if frames > 0 else 1.0


@dataclass(frozen=True)
class Piece(object):
    """One crop read on a row: its ``box`` (module docstring), ``text`` and ``confidence``;
    ``upright_box``: its :class:`~crnn_multigpu.ocr.page.LineBox` on the page as read."""
    box: Tuple[int, int, int, int]
    text: str
    confidence: float
    upright_box: tuple = field(repr=False, compare=False)

    def to_json(self):
        """``{"box", "text", "confidence"}`` (module docstring)."""
        return reading_json(self)


@dataclass(frozen=True)
class Row(object):
    """A line of text: the box around its pieces, their texts joined as the model's language
    joins them (empty pieces left out), their confidence, its column (0 first) and pieces."""
    box: Tuple[int, int, int, int]
    text: str
    confidence: float
    column: int
    pieces: Tuple[Piece, ...]

    def to_json(self):
        """``{"box", "text", "confidence", "column", "pieces"}`` (module docstring)."""
        return dict(reading_json(self), column=self.column,
                    pieces=[piece.to_json() for piece in self.pieces])


@dataclass(frozen=True)
class Page(object):
    """A page read by :class:`~crnn_multigpu.ocr.page_reader.PageReader`: the ``width`` and
    ``height`` of the image given, the ``turn`` (counter-clockwise degrees) and ``skew`` it
    was read at, its ``rows`` in reading order and ``image``, the path it was read from (or
    None). ``upright`` is the page as read, turned upright and straightened, which the
    pieces' ``upright_box`` es refer to (for pictures); ``doubt``, when the way up it was read
    at is in doubt, says why (a sentence), else None."""
    width: int
    height: int
    turn: int
    skew: float
    rows: Tuple[Row, ...]
    image: Optional[str] = None
    upright: object = field(default=None, repr=False, compare=False)
    doubt: Optional[str] = None

    @property
    def lines(self):
        """The page's lines of text: its :attr:`rows` (``line.text``, ``line.box``,
        ``line.confidence``), in reading order."""
        return self.rows

    def text(self):
        """The page's text as ``crnn-predict --page`` prints it: one line per row where
        something was read."""
        return "\n".join(row.text for row in self.rows if row.text)

    def to_json(self):
        """The page as a JSON-ready dict (schema in the module docstring)."""
        return {"image": self.image, "width": self.width, "height": self.height,
                "turn": self.turn, "skew": round(self.skew, 2),
                "rows": [row.to_json() for row in self.rows]}

    def to_hocr(self):
        """The page as an hOCR document (:func:`hocr_document` of this page alone)."""
        return hocr_document([self])

    def hocr_page(self, number):
        """This page's ``ocr_page`` element, the ``number`` th (from 1) of its document: an
        ``ocr_carea`` and its ``ocr_par`` per column, an ``ocr_line`` per row."""
        # The name escaped as names are (crnn_multigpu.ocr.names), then for XML.
        image = 'image "%s"; ' % html.escape(escaped(self.image, quote=True)) \
            if self.image else ""
        lines = ['  <div class="ocr_page" id="page_%d" title=\'%sbbox 0 0 %d %d; ppageno %d\'>'
                 % (number, image, self.width, self.height, number - 1)]
        angle = self.text_angle()
        for column in sorted(set(row.column for row in self.rows)):
            rows = [(index, row) for index, row in enumerate(self.rows, 1)
                    if row.column == column]
            title = hocr_title(union([row.box for _, row in rows]), angle)
            lines.append('   <div class="ocr_carea" id="block_%d_%d" title="%s">'
                         % (number, column + 1, title))
            lines.append('    <p class="ocr_par" id="par_%d_%d" title="%s">'
                         % (number, column + 1, title))
            lines.extend('     <span class="ocr_line" id="line_%d_%d" title="%s">%s</span>'
                         % (number, index, hocr_title(row.box, angle, row.confidence),
                            html.escape(row.text)) for index, row in rows)
            lines.extend(["    </p>", "   </div>"])
        lines.append("  </div>")
        return "\n".join(lines) + "\n"

    def text_angle(self):
        """hOCR's ``textangle``: how far the text lies turned counter-clockwise in the image
        given (the turn that brought it upright, undone)."""
        return (360 - self.turn) % 360

    def draw(self, path, font=None):
        """Write a PNG of the page as read with its pieces' boxes, beside the texts read
        (:func:`crnn_multigpu.ocr.page.draw_lines`)."""
        pieces = [piece for row in self.rows for piece in row.pieces]
        return draw_lines(self.upright, [piece.upright_box for piece in pieces],
                          [piece.text for piece in pieces], path, font=font)


def reading_json(reading):
    """The ``box``, ``text`` and ``confidence`` of a piece or row as JSON values."""
    return {"box": list(reading.box), "text": reading.text,
            "confidence": round(reading.confidence, 4)}


def hocr_title(box, text_angle=0, confidence=None):
    """An hOCR ``title``: ``bbox x0 y0 x1 y1``, then ``x_wconf`` (the confidence in percent)
    when given, and ``textangle`` when the text lies turned."""
    title = "bbox %d %d %d %d" % tuple(box)
    if confidence is not None:
        title += "; x_wconf %d" % int(round(100 * confidence))
    return title + ("; textangle %d" % text_angle if text_angle else "")


def union(boxes):
    """The smallest ``(x0, y0, x1, y1)`` holding every one of ``boxes``."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
            max(b[3] for b in boxes))


def hocr_parts(pages):
    """The pieces of one hOCR document of ``pages`` (any iterable, read as it is walked): its
    head, each page's ``ocr_page``, its tail; written as they come, pages read one at a time
    need not all be kept."""
    yield HOCR_HEAD
    for number, page in enumerate(pages, 1):
        yield page.hocr_page(number)
    yield HOCR_TAIL


def hocr_document(pages):
    """One hOCR document holding an ``ocr_page`` for each of ``pages``."""
    return "".join(hocr_parts(pages))
