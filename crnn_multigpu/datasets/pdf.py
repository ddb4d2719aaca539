"""PDF documents as page images, drawn by poppler (``pdfinfo`` counts the pages, ``pdftoppm``
draws one page at a time in grey), so that a document is read as its pages are: one page image in
memory at a time, whatever the document's length.

Poppler is a system package (Debian ``poppler-utils``, which ``scripts/install_system_packages.sh``
installs); without it a PDF is refused with a line that says so, images are read as before.
"""
import os
import re
import subprocess

from crnn_multigpu.datasets.fonts import is_reserved
from crnn_multigpu.datasets.images import open_image

PDF_SIGNATURE = b"%PDF-"
# The page reader reads pages at 110-300 dpi alike (docs/accuracy.md); 150 dpi draws a page in
# about a quarter of 300 dpi's time and memory.
DEFAULT_DPI = 150
# Below 50 dpi a page's print is too small to read; above 600 one page is a gigabyte of grey.
MIN_DPI, MAX_DPI = 50, 600
INSTALL_POPPLER = ("reading a PDF needs poppler's pdfinfo and pdftoppm: install them "
                   "(apt-get install poppler-utils), or pass the pages as images")
# PostScript base-35 names (subset prefix dropped, lower case): such a font may be URW's clone,
# a reserved face, under the name of the design it copies.
BASE35_FONT_RE = re.compile(
    r"^(times|helvetica|courier|palatino|bookman|avantgarde|itcavantgarde|newcenturyschlbk|"
    r"centuryschl|zapfchancery|zapfdingbats|symbol|standardsymbols|dingbats|d050000l)")


def is_pdf(path):
    """Whether the file at ``path`` begins as a PDF does (whatever its name); False when it
    cannot be opened."""
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
        raise ValueError("cannot read PDF %s: %s (damaged, or locked by a password?)"
                         % (path, said[-1] if said else "%s failed" % arguments[0]))
    return done.stdout


def page_count(path):
    """The number of pages of the PDF at ``path`` (poppler's ``pdfinfo``)."""
    info = poppler(["pdfinfo", os.fspath(path)], path).decode("utf-8", "replace")
    found = re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE)
    if not found or not int(found.group(1)):
        raise ValueError("cannot read PDF %s: it has no pages" % path)
    return int(found.group(1))


def render_page(path, number, dpi=DEFAULT_DPI):
    """Page ``number`` (1-based) of the PDF at ``path`` as a grey PIL image at ``dpi``."""
    # PGM: poppler's PNG on stdout is RGB even with -gray, three times the memory of grey.
    pgm = poppler(["pdftoppm", "-gray", "-r", str(dpi), "-singlefile", "-f", str(number),
                    "-l", str(number), os.fspath(path)], path)
    return open_image(pgm)


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

    def numbers(self, count, path):
        """The selected page numbers of ``path``, a document of ``count`` pages; ValueError
        naming the document and its length when the selection asks for a page past its end."""
        pages = []
        for first, last in self.ranges:
            last = count if last is None else last
            if max(first, last) > count:
                raise ValueError("PDF %s has %d page%s: pages %s ask for page %d"
                                 % (path, count, "" if count == 1 else "s", self.text,
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
