"""PDF documents as page images, drawn by poppler (``pdfinfo`` counts the pages, ``pdftoppm``
draws one page at a time in grey), so that a document is read as its pages are: one page image in
memory at a time, whatever the document's length.

Poppler is a system package (Debian ``poppler-utils``, which ``scripts/install_system_packages.sh``
installs); without it a PDF is refused with a line that says so, images are read as before.
"""
import math
import os
import re
import subprocess

from crnn_multigpu.datasets.files_check import regular_file
from crnn_multigpu.datasets.fonts import is_reserved
from crnn_multigpu.datasets.images import MAX_PIXELS_ENV, open_image, pixel_limit

PDF_SIGNATURE = b"%PDF-"
# The page reader reads pages at 110-300 dpi alike (docs/accuracy.md); 150 dpi draws a page in
# about a quarter of 300 dpi's time and memory.
DEFAULT_DPI = 150
# Below 50 dpi a page's print is too small to read; above 600 one page is a gigabyte of grey.
MIN_DPI, MAX_DPI = 50, 600
INSTALL_POPPLER = ("reading a PDF needs poppler's pdfinfo and pdftoppm: install them "
                   "(apt-get install poppler-utils), or pass the pages as images")
POINTS_PER_INCH = 72
# PostScript base-35 names (subset prefix dropped, lower case): such a font may be URW's clone,
# a reserved face, under the name of the design it copies.
BASE35_FONT_RE = re.compile(
    r"^(times|helvetica|courier|palatino|bookman|avantgarde|itcavantgarde|newcenturyschlbk|"
    r"centuryschl|zapfchancery|zapfdingbats|symbol|standardsymbols|dingbats|d050000l)")


def is_pdf(path):
    """Whether the file at ``path`` begins as a PDF does (whatever its name); False when it
    is not a regular file (never opened: a FIFO would wait for a writer) or cannot be opened."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as stream:
            return stream.read(len(PDF_SIGNATURE)) == PDF_SIGNATURE
    except OSError:
        return False


def poppler(arguments, path):
    """stdout of one poppler tool (``arguments``, e.g. ``["pdftotext", path, "-"]``) run on the
    PDF ``path``; ValueError naming the file and what poppler said when it fails, or what to
    install when poppler is missing."""
    try:
        done = subprocess.run(arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError:
        raise ValueError("cannot read PDF %s: %s" % (path, INSTALL_POPPLER))
    if done.returncode:
        said = [line for line in done.stderr.decode("utf-8", "replace").splitlines()
                if line.strip()]
        last = said[-1] if said else "%s failed" % arguments[0]
        if "password" in last.lower():
            raise ValueError("cannot read PDF %s: it is locked by a password; save a copy "
                             "without it (e.g. qpdf --decrypt --password=PASSWORD IN OUT) and "
                             "pass that" % path)
        raise ValueError("cannot read PDF %s: it is damaged or cut short (poppler: %s); copy "
                         "it again or save it anew" % (path, last))
    return done.stdout


def page_count(path):
    """The number of pages of the PDF at ``path`` (poppler's ``pdfinfo``)."""
    regular_file(os.fspath(path), "PDF")
    info = poppler(["pdfinfo", os.fspath(path)], path).decode("utf-8", "replace")
    found = re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE)
    if not found or not int(found.group(1)):
        raise ValueError("cannot read PDF %s: it has no pages" % path)
    return int(found.group(1))


def page_points(path, number):
    """``(width, height)`` in points of page ``number`` of the PDF at ``path`` (``pdfinfo``)."""
    info = poppler(["pdfinfo", "-f", str(number), "-l", str(number), os.fspath(path)],
                   path).decode("utf-8", "replace")
    found = re.search(r"^Page\s+%d size:\s+([\d.]+) x ([\d.]+) pts" % number, info, re.MULTILINE)
    if not found:
        raise ValueError("cannot read page %s: poppler gives no size for it"
                         % page_name(path, number))
    return float(found.group(1)), float(found.group(2))


def require_page_pixels(path, number, dpi):
    """Refuse page ``number`` of ``path`` before it is drawn when at ``dpi`` it would have more
    pixels than an image may (``images.pixel_limit``), in one line naming the page, its size
    and the dpi that would fit."""
    width, height = page_points(path, number)
    across, down = (int(math.ceil(side * dpi / POINTS_PER_INCH)) for side in (width, height))
    if across * down <= pixel_limit():
        return
    fits = int(dpi * math.sqrt(pixel_limit() / float(across * down)))
    lower = "draw it at --dpi %d or less, or " % fits if fits >= MIN_DPI else ""
    raise ValueError("cannot read page %s: it is %g x %g pt, %d x %d pixels at %d dpi (%.1f M), "
                     "more than the %.1f M an image may have here; %sraise the limit with $%s="
                     "PIXELS" % (page_name(path, number), width, height, across, down, dpi,
                                 across * down / 1e6, pixel_limit() / 1e6, lower,
                                 MAX_PIXELS_ENV))


def render_page(path, number, dpi=DEFAULT_DPI):
    """Page ``number`` (1-based) of the PDF at ``path`` as a grey PIL image at ``dpi``, refused
    before it is drawn when it would be too large (:func:`require_page_pixels`)."""
    require_page_pixels(path, number, dpi)
    # PGM: poppler's PNG on stdout is RGB even with -gray, three times the memory of grey.
    pgm = poppler(["pdftoppm", "-gray", "-r", str(dpi), "-singlefile", "-f", str(number),
                    "-l", str(number), os.fspath(path)], path)
    return open_image(pgm, name=page_name(path, number))


def page_name(path, number):
    """How page ``number`` of the PDF ``path`` is named in messages and results: PDF's own
    fragment for a page, ``file.pdf#page=3``."""
    return "%s#page=%d" % (path, number)


class PageSelection(object):
    """Pages of a document chosen as a print dialogue chooses them: page numbers and ranges
    joined by commas, ``"2"``, ``"3-5"``, ``"1,4-"`` (``"4-"``: page 4 to the last), read in the
    order given. ValueError, naming the selection, when a part is neither."""

    PART = re.compile(r"^\s*(\d+)\s*(-\s*(\d*))?\s*$")

    def __init__(self, text):
        self.text = text
        self.ranges = []
        for part in text.split(","):
            found = self.PART.match(part)
            if not found:
                raise ValueError("%r is not a page selection: give page numbers and ranges "
                                 "joined by commas, e.g. 2 or 3-5 or 1,4-" % text)
            first = int(found.group(1))
            last = int(found.group(3)) if found.group(3) else None if found.group(2) else first
            if first < 1 or (last is not None and last < first):
                raise ValueError("%r is not a page selection: pages count from 1 and a range "
                                 "runs forwards (%s)" % (text, part.strip()))
            self.ranges.append((first, last))

    def numbers(self, count, path, kind="PDF"):
        """The selected page numbers of ``path``, a document (a ``kind``: PDF, TIFF) of
        ``count`` pages; ValueError naming the document and its length when the selection asks
        for a page past its end."""
        pages = []
        for first, last in self.ranges:
            last = count if last is None else last
            if max(first, last) > count:
                raise ValueError("%s %s has %d page%s: pages %s ask for page %d"
                                 % (kind, path, count, "" if count == 1 else "s", self.text,
                                    max(first, last)))
            pages.extend(range(first, last + 1))
        return pages


def font_refusal(path):
    """Why the PDF at ``path`` may not be trained on for its fonts, or None: a font that is not
    embedded (poppler would draw a system face in its place) or whose name is a reserved
    family's or a PostScript base-35 name (the face may be URW's reserved clone)."""
    result = subprocess.run(["pdffonts", os.fspath(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    if result.returncode != 0:
        return "pdffonts failed"
    for line in result.stdout.decode("utf-8", "replace").splitlines()[2:]:
        fields = line.split()
        if len(fields) < 6:
            continue
        name = fields[0].split("+", 1)[-1].lower()
        # The columns after the name: type (1-2 words), encoding, emb, sub, uni, object ID.
        if fields[-5] != "yes":
            return "font-not-embedded: %s" % fields[0]
        # The reserved families' own names, matched as datasets.fonts matches font files.
        if is_reserved(name, family=name) or BASE35_FONT_RE.search(name):
            return "font-maybe-reserved: %s" % fields[0]
    return None
