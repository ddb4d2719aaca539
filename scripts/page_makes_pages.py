"""The pages scripts/page_makes.py reads: pages of every make, each with its exact truth rows from
the PDF's text layer, on the validation side of the detector's document split.

Makes:

* ``browser``: HTML documentation (``datasets.page_material.html_documents``: debian-reference,
  python3-doc, texlive-doc's HTML; here also debian-handbook's, which the detector's material
  does not hold) printed by headless Chromium in a seeded CSS style
  (``datasets.page_style.page_recipe``) in faces of the training side;
* ``typeset``: TeX Live's documentation PDFs as they ship (``page_material.typeset_pdfs``);
* ``docbook``: PDFs whose Creator or Producer names a DocBook toolchain (dblatex, DocBook XSL,
  Apache FOP, PassiveTeX, jadetex), found under :data:`DOCBOOK_ROOTS`, gzipped or not.

Every document the project reserves is dropped by its path before it is opened
(``text_sources.is_reserved_document``), and every print or PDF whose fonts are not embedded or
may be a reserved face is left out (``datasets.pdf.font_refusal``). Of what is left only the
documents ``datasets.page_crops.split_by_source`` puts on the validation side are used (as
scripts/train_detector.py splits, with its share and seed), so that no page is one a detector
trained on. A page's rows are ``page_material.line_boxes``' lines (the pieces of a row of one
text block joined), in the text layer's order; a page counts when it has :data:`MIN_ROWS` rows
and its text is of the language asked (:func:`page_language`).
"""
import collections
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets import page_material  # noqa: E402
from crnn_multigpu.datasets.page_crops import split_by_source  # noqa: E402
from crnn_multigpu.datasets.page_looks import look_of  # noqa: E402
from crnn_multigpu.datasets.page_style import page_recipe, recipe_css  # noqa: E402
from crnn_multigpu.datasets.pdf import font_refusal, page_count, poppler, render_page  # noqa: E402
from crnn_multigpu.datasets.text_sources import is_reserved_document  # noqa: E402

MAKES = ("browser", "typeset", "docbook")
BROWSER_ROOTS = page_material.HTML_ROOTS + ("/usr/share/doc/debian-handbook/html",)
DOCBOOK_ROOTS = ("/usr/share/doc", "/usr/share/debian-reference")
DOCBOOK_TOOLS = re.compile(r"dblatex|docbook|apache fop|passivetex|jadetex", re.I)
MIN_ROWS = 10
# Pages of a document tried for MIN_ROWS rows in the language; documents tried per page asked
# (a browser print costs seconds: a make with few documents of a language stops in time).
PAGES_TRIED = 8
DOCUMENTS_TRIED_PER_PAGE = 8
# A language tag in a path (ch01.de.html, html/zh-CN/, guide-zh-cn.pdf): Simplified Chinese is
# zh-cn / zh-hans; every other tag is another language, a path without one is taken as English.
LANGUAGE_TAG = re.compile(
    r"[-./_](zh[-_](?:cn|hans|tw|hk|hant)|en(?:[-_]us)?|de|es|fr|it|pt(?:[-_]br)?|ja(?:[-_]jp)?|"
    r"ru|nl|pl|ca|ar(?:[-_]ma)?|ko|sv|da|fi|nb|ro|tr|vi|el|hu|cs|sk|uk|id|fa|he|hr|sl|et)"
    r"(?:[-_][a-z]{2})?(?=[-./_])", re.I)
ENGLISH_WORDS = frozenset("the of and to in is for a an that with as on be are this by or it "
                          "from can not you".split())

Page = collections.namedtuple("Page", "make language source number path truth")
Page.__doc__ = """A page to read: its make, language ("en" or "zh"), the document it comes from
(the HTML file of a browser print), its page number in the PDF, its grey PNG and its truth rows
(the text layer's lines, as poppler writes them)."""


def path_language(path):
    """The language a document's path names: "zh" (Simplified Chinese), "en" (an English tag or
    none) or "other"."""
    found = LANGUAGE_TAG.search(os.fspath(path).lower())
    if not found:
        return "en"
    tag = found.group(1).replace("_", "-")
    if tag in ("zh-cn", "zh-hans"):
        return "zh"
    return "en" if tag.startswith("en") else "other"


def page_language(rows):
    """"zh" when at least 30 % of the rows' visible characters are CJK ideographs, "en" when
    nearly all are ASCII and at least 5 % of the words are common English ones, else None."""
    text = "".join("".join(rows).split())
    if not text:
        return None
    cjk = sum(u"\u4e00" <= char <= u"\u9fff" for char in text)
    if cjk >= 0.3 * len(text):
        return "zh"
    words = " ".join(rows).lower().split()
    ascii_share = sum(ord(char) < 128 for char in text) / float(len(text))
    english = sum(word.strip(".,;:()") in ENGLISH_WORDS for word in words)
    return "en" if ascii_share >= 0.97 and english >= 0.05 * len(words) else None


def validation_documents(documents, share, seed):
    """The ``documents`` (paths) that ``split_by_source`` puts on the validation side with
    ``share`` and ``seed``, reserved ones never among them."""
    allowed = [{"source": path} for path in documents
               if not is_reserved_document(path)]
    return [entry["source"] for entry in split_by_source(allowed, share, seed)[1]]


def pdf_creator(pdf):
    """The Creator and Producer ``pdfinfo`` gives for ``pdf``, as one string ("" if none)."""
    try:
        info = subprocess.run(["pdfinfo", pdf], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              timeout=60).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return " ".join(line.split(":", 1)[1].strip() for line in info.splitlines()
                    if line.startswith(("Creator:", "Producer:")))


def readable_pdf(path, scratch):
    """``path`` itself, or a gzipped PDF unpacked into ``scratch``."""
    if not path.endswith(".gz"):
        return path
    unpacked = os.path.join(scratch, "unpacked.pdf")
    with gzip.open(path) as packed, open(unpacked, "wb") as out:
        shutil.copyfileobj(packed, out)
    return unpacked


def docbook_pdfs(scratch, roots=DOCBOOK_ROOTS, creator=pdf_creator):
    """The PDFs (``.pdf`` or ``.pdf.gz``) under ``roots`` that a DocBook toolchain made, by
    their Creator and Producer, each once (not again through a link); reserved documents are
    dropped before they are opened."""
    found, seen = [], set()
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                if not name.lower().endswith((".pdf", ".pdf.gz")) or \
                        is_reserved_document(path) or os.path.realpath(path) in seen:
                    continue
                seen.add(os.path.realpath(path))
                try:
                    if DOCBOOK_TOOLS.search(creator(readable_pdf(path, scratch))):
                        found.append(path)
                except (OSError, EOFError):
                    continue  # a damaged archive is no candidate
    return sorted(set(found))


def text_language(pdf, scratch, pages=5):
    """The language of the first ``pages`` pages of ``pdf`` (:func:`page_language` of their
    lines), None when it cannot be read."""
    try:
        text = poppler(["pdftotext", "-l", str(pages), readable_pdf(pdf, scratch), "-"], pdf)
    except (ValueError, OSError, EOFError):
        return None
    return page_language(text.decode("utf-8", "replace").splitlines())


def candidates(make, language, share, seed, scratch, rng):
    """The validation-side documents of ``make`` that may hold pages in ``language``, in the
    order to try them: those whose path names the language, then (for Chinese PDFs, cheap to
    look into) untagged ones whose first pages are in the language, each group in an order
    drawn by ``rng``."""
    documents = {"browser": lambda: page_material.html_documents(BROWSER_ROOTS),
                 "typeset": page_material.typeset_pdfs,
                 "docbook": lambda: docbook_pdfs(scratch)}[make]()
    chosen = validation_documents(documents, share, seed)
    named = [path for path in chosen if path_language(path) == language]
    untagged = [path for path in chosen if path_language(path) == "en"
                and language != "en" and make != "browser"
                and text_language(path, scratch) == language]
    rng.shuffle(named)
    rng.shuffle(untagged)
    return named + untagged


class PageMaker(object):
    """Draws pages of one language: ``faces`` (font files of the training side) style the
    browser prints; pages are drawn at ``dpi`` into ``scratch``; ``rng`` draws documents,
    styles and pages; ``log`` takes a line for each document left out. ``fonts_checked=False``
    keeps documents whatever their fonts (the final check on reserved pages and faces);
    ``look``: the :data:`~crnn_multigpu.datasets.page_looks.LOOKS` the pages are drawn in (a
    scan, a photo)."""

    def __init__(self, language, faces, dpi, scratch, rng, log, per_document=2,
                 fonts_checked=True, look="clean"):
        self.language, self.faces, self.dpi, self.scratch = language, faces, dpi, scratch
        self.rng, self.log, self.per_document = rng, log, per_document
        self.fonts_checked, self.look = fonts_checked, look_of(look)
        self.drawn = 0

    def pdf_of(self, make, source):
        """``(pdf, recipe)``: the PDF whose pages are drawn, a browser print of ``source`` in
        the style ``recipe`` drawn for it, else ``source`` itself (recipe None)."""
        if make != "browser":
            return readable_pdf(source, self.scratch), None
        pdf = os.path.join(self.scratch, "print.pdf")
        recipe = page_recipe(self.rng, self.faces)
        page_material.print_html(source, recipe_css(recipe), pdf)
        return pdf, recipe

    def pages(self, make, documents, count):
        """Up to ``count`` :class:`Page` of ``make`` from ``documents``, tried in order, at most
        ``per_document`` pages each."""
        chosen = []
        for source in documents[:DOCUMENTS_TRIED_PER_PAGE * count]:
            if len(chosen) >= count:
                break
            try:
                pdf, recipe = self.pdf_of(make, source)
                why = font_refusal(pdf) if self.fonts_checked else None
                if why:
                    raise ValueError("its fonts may not be used (%s)" % why)
                chosen.extend(self.document_pages(make, source, pdf, recipe,
                                                  count - len(chosen)))
            except ValueError as error:
                self.log("left out %s: %s" % (source, error))
        return chosen

    def drawn_page(self, page, name):
        """``page`` in the maker's look, seeded by the page's file ``name`` rather than by the
        maker's ``rng``: a run in any look chooses the pages a clean run chooses."""
        return self.look.draw(page, np.random.RandomState(zlib.crc32(name.encode()))).image

    def document_pages(self, make, source, pdf, recipe, wanted):
        """Pages of ``pdf`` with MIN_ROWS rows in the language, drawn and saved."""
        numbers = list(range(1, page_count(pdf) + 1))
        self.rng.shuffle(numbers)
        found = []
        for number in numbers[:PAGES_TRIED]:
            if len(found) >= min(wanted, self.per_document):
                break
            rows = [line[4] for line in page_material.line_boxes(pdf, number, self.dpi, recipe)]
            if len(rows) < MIN_ROWS or page_language(rows) != self.language:
                continue
            # Numbered: documents of one name (index.html) in several folders stay apart.
            self.drawn += 1
            path = os.path.join(self.scratch, "%s-%s-%03d-%s-%d.png" % (
                make, self.language, self.drawn, re.sub(r"\W", "_", os.path.basename(source)),
                number))
            self.drawn_page(render_page(pdf, number, self.dpi), os.path.basename(path)).save(path)
            found.append(Page(make, self.language, source, number, path, rows))
        return found
