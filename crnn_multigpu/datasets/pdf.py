"""PDF documents as page images, drawn by poppler (``pdfinfo`` counts the pages, ``pdftoppm``
draws one page at a time in grey), so that a document is read as its pages are: one page image in
memory at a time, whatever the document's length.

Poppler is a system package (Debian ``poppler-utils``, which ``scripts/install_system_packages.sh``
installs); without it a PDF is refused with a line that says so, images are read as before.
"""
import os
import re
import subprocess

from crnn_multigpu.datasets.images import open_image

PDF_SIGNATURE = b"%PDF-"
# The page reader reads pages at 110-300 dpi alike (docs/accuracy.md); 150 dpi draws a page in
# about a quarter of 300 dpi's time and memory.
DEFAULT_DPI = 150
# Below 50 dpi a page's print is too small to read; above 600 one page is a gigabyte of grey.
MIN_DPI, MAX_DPI = 50, 600
INSTALL_POPPLER = ("reading a PDF needs poppler's pdfinfo and pdftoppm: install them "
                   "(apt-get install poppler-utils), or pass the pages as images")


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
