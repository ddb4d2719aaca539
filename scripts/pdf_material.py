"""Material of the side-by-side checks cut from typeset PDFs: lines cut from a document's pages
and whole pages with their text layer's rows, labelled as a language writes them
(compare_chinese.py, compare_latin.py).

A page is rasterised by the project's own renderer (``page_check.rasterise``); its rows are found
by the project's page reader and labelled with the text layer (``page_check.labelled_rows``), as
``pdf_training_set.py`` cuts training lines. Needs poppler-utils.
"""
import collections
import math
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from page_check import labelled_rows, layout_rows, rasterise, truth_rows  # noqa: E402
from pdf_training_set import page_count  # noqa: E402

DPI = 150


# ----- lines cut from a document's pages ---------------------------------------------------

def pdf_lines(out, pdfs, count, seed, language, skip_pages=(), dpi=DPI):
    """``(samples [(path, label)], report)``: ``count`` lines cut from ``pdfs`` (an even share
    each) at ``dpi``, labelled as ``language`` (a ``datasets.language.Language``) writes them.
    Each PDF's body pages (not the title page, nor ``skip_pages``) are visited in an order drawn
    with ``seed``, a few rows drawn from each, so the lines spread over the document.
    ``report`` counts the pages visited, their text-layer rows, the rows found exactly, and the
    pieces left out with the characters the charset cannot write."""
    samples, skip = [], set(skip_pages)
    report = dict(pages=0, rows=0, exact=0, pieces=0, left_out=0, unwritable=collections.Counter())
    for index, pdf in enumerate(pdfs):
        wanted = count // len(pdfs) + (1 if index < count % len(pdfs) else 0)
        pages = [page for page in range(2, page_count(pdf) + 1) if (pdf, page) not in skip]
        rng = np.random.RandomState([seed, index])
        # A few rows a page, more when the document is short (ctex-faq has 41 pages).
        per_page = max(3, int(math.ceil(1.25 * wanted / max(1, len(pages)))))
        taken = 0
        for page in rng.permutation(pages):
            if taken >= wanted:
                break
            prefix = os.path.join(out, "pdfpage")
            raster = rasterise(pdf, int(page), dpi, prefix)
            with Image.open(raster) as opened:
                image = opened.convert("L")
            os.remove(raster)  # the crops are what the systems read
            rows = truth_rows(pdf, int(page), dpi)
            kept, left_out, exact = labelled_rows(image, rows, language)
            report["pages"] += 1
            report["rows"] += len(rows)
            report["exact"] += exact
            report["pieces"] += len(kept) + len(left_out)
            report["left_out"] += len(left_out)
            for text in left_out:
                report["unwritable"].update(set(language.charset.unknown_chars(text)))
            if not kept:
                continue
            picked = sorted(rng.choice(len(kept), min(per_page, len(kept), wanted - taken),
                                       replace=False))
            for choice in picked:
                crop, label = kept[choice]
                path = os.path.join(out, "pdfline%05d.png" % len(samples))
                crop.save(path)
                samples.append((path, label))
            taken += len(picked)
    return samples, report


# ----- whole pages ----------------------------------------------------------------------

def page_truth(pdf, page, language):
    """The text layer's rows of a page (``page_check.layout_rows``), top to bottom, each row's
    words left to right joined and spelt as ``language`` joins pieces and spells."""
    rows = []
    for _, words in layout_rows(pdf, page):
        text = language.spell(language.join_pieces(word[4] for word in sorted(words)))
        if text:
            rows.append(text)
    return rows


def whole_pages(out, pages, language, dpi=DPI):
    """``[(path, truth rows, name)]``: the pages ``[(pdf, page)]`` rasterised at ``dpi``, their
    truth written as ``language`` writes it (:func:`page_truth`)."""
    found = []
    for pdf, page in pages:
        name = "%s:%d" % (os.path.basename(pdf), page)
        path = rasterise(pdf, page, dpi, os.path.join(out, "page-%s-%d" % (
            os.path.splitext(os.path.basename(pdf))[0], page)))
        found.append((path, page_truth(pdf, page, language), name))
    return found
