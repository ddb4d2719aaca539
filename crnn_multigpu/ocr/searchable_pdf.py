"""A searchable PDF: each page's image with an invisible text layer whose words lie on their
boxes, as Tesseract's ``pdf`` output and OCRmyPDF write it, so that a viewer selects and
searches the scan and ``pdftotext`` gives the reading back (``-bbox``: each word in its box).

**Pages** (:func:`write_searchable_pdf`): a sequence (or any iterable) of pages, each either a
tuple ``(image, lines)`` or an object with ``.image`` and ``.lines`` and optionally ``.dpi``
and ``.turn``, such as :class:`crnn_multigpu.ocr.document.Document`'s pages. ``image`` is a
PIL image or a numpy array (``uint8`` grey ``H x W`` or colour ``H x W x 3``/``4``, ``bool``
for 1-bit); ``lines`` a sequence of ``(text, box)`` tuples or objects with ``.text`` and
``.box``, ``box`` being ``(x0, y0, x1, y1)`` in the image's pixels (``x1``, ``y1`` exclusive,
as the page reader gives them; clipped to the image). A line object with non-empty
``.pieces`` (each with ``.text`` and ``.box``, as :class:`~crnn_multigpu.ocr.page_result.Row`
has) is laid out piece by piece, so that a running head and its page number, one row far
apart, each land on their ink. A line whose text is empty or blank is left out.
``turn`` (0, 90, 180 or 270; :class:`~crnn_multigpu.ocr.page_result.Page`'s): the page lay
turned and was read after a counter-clockwise turn by that many degrees; the boxes are in the
image as given, and the text runs along the lines as they lie in it.

**Size**: a page is its image at ``dpi`` pixels per inch: the ``dpi`` argument, else the page's
own ``.dpi``, else the resolution the image file declares (Pillow's ``info["dpi"]``), else 300
(a scanner's usual resolution). Only the printed size depends on it; text and boxes scale along.

**Text layer**: one text object per page in render mode 3 (neither filled nor stroked). A line's
box is shared among its words by character count (its spaces included: the gaps between words
are the spaces' share), and each word is drawn at the height of the line box and squeezed or
stretched (``Tz``) to fill its share exactly; whitespace between words comes back as one space
(``pdftotext`` finds the gaps). Text runs left to right on the page turned upright (vertical
text is not laid out).

**Font** (:mod:`~crnn_multigpu.ocr.pdf_font`): one for the document, a Type0 font over an
embedded TrueType face without glyphs, with a ToUnicode map, so any Unicode text maps back
(Chinese and characters beyond the BMP included). CIDs are numbered per document (1, 2, ... as
characters first appear).

**Images**: lossless by default, Flate-compressed; a colour image whose pixels are all grey
is stored as grey (a third of the bytes), 1-bit images as 1-bit. ``jpeg_quality=N`` stores
grey and colour pages as JPEG at that quality instead (photographs: far smaller, not exact).

**Why no library**: the PDF is eight kinds of object written in about a hundred lines. The
libraries that work on both Python 3.7 and 3.11 (reportlab, fpdf2; pikepdf only edits objects
one writes anyway) draw text in a real typeface that must hold every character of the text,
and embed it: Chinese then needs a CJK face of several megabytes per file, and a character
missing from the face is lost. An invisible layer needs no glyphs, so the font here has none
and takes any character; the writer adds no dependency to either stack.
"""
import io
import re
import zlib

import numpy as np
from PIL import Image

from crnn_multigpu.files import written_whole
from crnn_multigpu.ocr.pdf_font import ADVANCE, DESCENT, write_font

DEFAULT_DPI = 300
MAX_CIDS = 0xFFFF  # two-byte codes (Identity-H); CID 0 is .notdef
TURNS = (0, 90, 180, 270)


def write_searchable_pdf(path, pages, dpi=None, jpeg_quality=None):
    """Write ``pages`` (module docstring) to ``path`` as a searchable PDF, whole or not at all.

    ``dpi``: pixels per inch of every page (default: each page's own, else 300);
    ``jpeg_quality``: None for lossless images, 1-95 for JPEG. Bad input raises ValueError
    naming the page and line; a path that cannot be written raises
    :class:`~crnn_multigpu.files.WriteError` (an OSError) naming it, and leaves nothing there.
    """
    if dpi is not None and not dpi > 0:
        raise ValueError("dpi must be a positive number of pixels per inch, got %r" % (dpi,))
    if jpeg_quality is not None and not 1 <= jpeg_quality <= 95:
        raise ValueError("jpeg_quality must be 1-95 (Pillow's scale; None: lossless), got %r"
                         % (jpeg_quality,))
    with written_whole(path) as temporary:
        with open(temporary, "wb") as stream:
            pdf = _PdfFile(stream)
            font = pdf.reserve()
            characters = {}
            kids = [_write_page(pdf, number, page, dpi, jpeg_quality, font, characters)
                    for number, page in enumerate(pages, 1)]
            if not kids:
                raise ValueError("no pages to write to %s: give at least one page" % path)
            write_font(pdf, font, characters)
            pdf.finish(kids)


class _PdfFile(object):
    """Objects written to ``stream`` one after another, numbered as reserved, and the
    cross-reference table that finds them."""

    def __init__(self, stream):
        self.stream = stream
        self.offsets = {}
        self.count = 2  # 1: the catalog, 2: the page tree (written last, when the pages are)
        stream.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")  # binary marker: transfer it as binary

    def reserve(self):
        """A new object number."""
        self.count += 1
        return self.count

    def write(self, number, body, data=None):
        """Write object ``number``: the dictionary (or other value) ``body``, and with ``data``
        a stream of those bytes (its /Length added to ``body``, a dictionary's text)."""
        self.offsets[number] = self.stream.tell()
        if data is None:
            self.stream.write(b"%d 0 obj\n%s\nendobj\n" % (number, body.encode("latin-1")))
        else:
            head = "%s /Length %d >>" % (body[:-2].rstrip(), len(data))
            self.stream.write(b"%d 0 obj\n%s\nstream\n" % (number, head.encode("latin-1")))
            self.stream.write(data)
            self.stream.write(b"\nendstream\nendobj\n")

    def finish(self, kids):
        """The page tree over the page objects ``kids``, the catalog, and the trailer."""
        self.write(2, "<< /Type /Pages /Kids [%s] /Count %d >>"
                   % (" ".join("%d 0 R" % kid for kid in kids), len(kids)))
        self.write(1, "<< /Type /Catalog /Pages 2 0 R >>")
        info = self.reserve()
        self.write(info, "<< /Producer (crnn_multigpu searchable_pdf) >>")
        start = self.stream.tell()
        rows = ["0000000000 65535 f \n"] + ["%010d 00000 n \n" % self.offsets[number]
                                           for number in range(1, self.count + 1)]
        self.stream.write(("xref\n0 %d\n%strailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\n"
                           "startxref\n%d\n%%%%EOF\n" % (self.count + 1, "".join(rows),
                                                         self.count + 1, info, start))
                          .encode("latin-1"))


def _write_page(pdf, number, page, dpi, jpeg_quality, font, characters):
    """Write page ``number`` (its image, contents and page object); returns the page object's
    number. Adds the characters of its text to ``characters`` (character -> CID)."""
    image, lines, page_dpi, turn = _page_parts(page, number)
    image = _pdf_image(image, number)
    dpi = float(dpi or page_dpi or _declared_dpi(image) or DEFAULT_DPI)
    width, height = image.size
    scale = 72.0 / dpi
    picture, contents, page_object = pdf.reserve(), pdf.reserve(), pdf.reserve()
    _write_image(pdf, picture, image, jpeg_quality)
    drawing = ["q %s 0 0 %s 0 0 cm /Im0 Do Q" % (_num(width * scale), _num(height * scale))]
    upright = _turned_size(image.size, turn)
    words = [word for index, line in enumerate(lines, 1) for text, box in _pieces(line)
             for word in _words(text, _turned_box(text, box, turn, image.size, (number, index)),
                                upright, scale)]
    if words:
        # the words are laid out on the page turned upright, and this matrix turns them back
        drawing.append("q %s cm BT 3 Tr" % " ".join(
            _num(value) for value in _upright_to_page(turn, image.size, scale)))
        for text, left, baseline, size, stretch in words:
            codes = "".join("%04X" % characters.setdefault(c, len(characters) + 1) for c in text)
            drawing.append("/F1 %s Tf %s Tz 1 0 0 1 %s %s Tm <%s> Tj" % (
                _num(size), _num(stretch), _num(left), _num(baseline), codes))
        drawing.append("ET Q")
    if len(characters) > MAX_CIDS:
        raise ValueError("page %d: the document holds more than %d different characters, more "
                         "than one PDF font can map: write it in parts" % (number, MAX_CIDS))
    pdf.write(contents, "<< /Filter /FlateDecode >>",
              zlib.compress("\n".join(drawing).encode("ascii")))
    pdf.write(page_object, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %s %s] /Resources << "
              "/XObject << /Im0 %d 0 R >> /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>"
              % (_num(width * scale), _num(height * scale), picture, font, contents))
    return page_object


def _page_parts(page, number):
    """``(image, lines, dpi or None, turn)`` of a page given as a tuple or an object."""
    if hasattr(page, "image") and hasattr(page, "lines"):
        turn = getattr(page, "turn", 0) or 0
        if turn not in TURNS:
            raise ValueError("page %d: turn must be one of %s degrees, got %r"
                             % (number, ", ".join(map(str, TURNS)), turn))
        return page.image, page.lines, getattr(page, "dpi", None), turn
    if isinstance(page, (tuple, list)) and len(page) == 2:
        return page[0], page[1], None, 0
    raise ValueError("page %d: expected (image, lines) or an object with .image and .lines, got "
                     "%s" % (number, type(page).__name__))


def _pieces(line):
    """``[(text, box)]`` of a line: its pieces' when it has them (a row whose pieces lie far
    apart, such as a running head and its page number), else its own."""
    if hasattr(line, "text"):
        pieces = getattr(line, "pieces", None)
        return [(piece.text, piece.box) for piece in pieces] if pieces else [(line.text, line.box)]
    return [line]


def _turned(point, turn, size):
    """``point`` (x, y in pixels, y down) of an image of ``size`` turned counter-clockwise by
    ``turn`` degrees, as a point of the turned image."""
    (x, y), (width, height) = point, size
    for _ in range(turn // 90):
        (x, y), (width, height) = (y, width - x), (height, width)
    return x, y


def _turned_size(size, turn):
    """The size of an image of ``size`` turned by ``turn`` degrees."""
    return size[::-1] if turn % 180 else size


def _turned_box(text, box, turn, size, where):
    """The part of ``box`` (of ``text``) inside an image of ``size``, on the image turned
    counter-clockwise by ``turn``; ValueError naming the line when no part is inside."""
    try:
        x0, y0, x1, y1 = [float(value) for value in box]
    except (TypeError, ValueError):
        raise ValueError("page %d, line %d: box must be (x0, y0, x1, y1) in pixels, got %r"
                         % (where + (box,)))
    x0, y0, x1, y1 = max(x0, 0.0), max(y0, 0.0), min(x1, size[0]), min(y1, size[1])
    if not (x1 > x0 and y1 > y0) and str(text).strip():
        raise ValueError("page %d, line %d: the box %r of %r holds no part of the %d x %d image"
                         % (where + (box, str(text).strip()) + size))
    corners = [_turned(corner, turn, size) for corner in ((x0, y0), (x1, y1))]
    xs, ys = sorted(x for x, _ in corners), sorted(y for _, y in corners)
    return xs[0], ys[0], xs[1], ys[1]


def _upright_to_page(turn, size, scale):
    """The matrix ``a b c d e f`` taking PDF points of the page turned upright to PDF points of
    the page as given (``size`` its pixels): the upright page turned back clockwise."""
    upright = _turned_size(size, turn)
    height = size[1]

    def on_page(u, v):  # upright points -> upright pixels -> given pixels -> given points
        x, y = _turned((u / scale, upright[1] - v / scale), (360 - turn) % 360, upright)
        return x * scale, (height - y) * scale
    e, f = on_page(0, 0)
    (a, b), (c, d) = [(x - e, y - f) for x, y in (on_page(1, 0), on_page(0, 1))]
    return a, b, c, d, e, f


def _words(text, box, size, scale):
    """The words of ``text`` as ``(text, left, baseline, font size, horizontal scaling %)`` in
    PDF points (origin bottom left) of a page of ``size`` pixels, each filling its character
    share of ``box`` (inside the page)."""
    text = str(text).strip()
    if not text:
        return []
    x0, y0, x1, y1 = box
    share = (x1 - x0) / len(text)
    font_size = (y1 - y0) * scale
    baseline = (size[1] - y1) * scale - DESCENT / 1000.0 * font_size
    words = []
    for match in re.finditer(r"\S+", text):
        natural = len(match.group()) * ADVANCE / 1000.0 * font_size
        words.append((match.group(), (x0 + match.start() * share) * scale, baseline, font_size,
                      100.0 * len(match.group()) * share * scale / natural))
    return words


def _pdf_image(image, number):
    """``image`` as a PIL image of mode 1, L or RGB (transparency laid on white; a colour image
    whose pixels are all grey made L); ValueError naming the page if it is neither."""
    if isinstance(image, np.ndarray):
        if image.dtype == np.bool_ and image.ndim == 2:
            image = Image.fromarray(image.astype(np.uint8) * 255).convert("1")
        elif image.dtype == np.uint8 and (image.ndim == 2 or (
                image.ndim == 3 and image.shape[2] in (1, 3, 4))):
            image = Image.fromarray(image[:, :, 0] if image.ndim == 3 and image.shape[2] == 1
                                    else image)
        else:
            raise ValueError("page %d: an image array must be uint8 grey (H x W), colour (H x W x "
                             "3 or 4) or bool, got %s %s" % (number, image.dtype, image.shape))
    if not isinstance(image, Image.Image):
        raise ValueError("page %d: the image must be a PIL image or a numpy array, got %s"
                         % (number, type(image).__name__))
    if min(image.size) < 1:
        raise ValueError("page %d: the image is empty (%d x %d)" % ((number,) + image.size))
    if image.mode in ("1", "L"):
        return image
    if "A" in image.getbands() or "transparency" in image.info:
        white = Image.new("RGB", image.size, "white")
        white.paste(image.convert("RGBA"), mask=image.convert("RGBA").getchannel("A"))
        white.info = image.info
        image = white
    colour = image.convert("RGB")
    pixels = np.asarray(colour)
    if (pixels[:, :, 0] == pixels[:, :, 1]).all() and (pixels[:, :, 1] == pixels[:, :, 2]).all():
        grey = Image.fromarray(pixels[:, :, 0])
        grey.info = image.info
        return grey
    colour.info = image.info
    return colour


def _declared_dpi(image):
    """The horizontal resolution the image file declared, if it is a plausible one."""
    declared = image.info.get("dpi")
    try:
        value = float(declared[0])
    except (TypeError, ValueError, IndexError):
        return None
    return value if 10 <= value <= 10000 else None


def _write_image(pdf, number, image, jpeg_quality):
    """Object ``number``: ``image`` (mode 1, L or RGB) as an image XObject."""
    space = "DeviceRGB" if image.mode == "RGB" else "DeviceGray"
    bits = 1 if image.mode == "1" else 8
    if jpeg_quality is not None and image.mode != "1":
        encoded = io.BytesIO()
        image.save(encoded, "JPEG", quality=int(jpeg_quality))
        data, codec = encoded.getvalue(), "DCTDecode"
    else:
        # mode 1's bytes are PDF's 1-bit grey as they are: rows padded to bytes, 1 = white
        data, codec = zlib.compress(image.tobytes()), "FlateDecode"
    pdf.write(number, "<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /%s "
              "/BitsPerComponent %d /Filter /%s >>" % (image.size + (space, bits, codec)), data)


def _num(value):
    """A PDF number: at most three decimals, no trailing zeros."""
    return ("%.3f" % value).rstrip("0").rstrip(".")
