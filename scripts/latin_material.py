"""The material of the Latin-script side-by-side check (compare_latin.py), named by each language's
description, not by code: its ``checks`` key gives the reserved document (``reserved_pdf``, a
translation of lshort in Debian's texlive-lang-* packages), its whole ``pages`` and the Tesseract
model that reads the language (``tesseract``).

Per language: lines cut from the document's other pages (``pdf_material.pdf_lines``: pages drawn
with the seed, a few rows a page, rasterised at 150 dpi, rows found by the project's page reader
and labelled by the text layer, spelt as the language writes) and its whole pages with the text
layer's rows. The documents are reserved: no model trains, validates or is chosen on them.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets.language import get_language, language_names  # noqa: E402
from pdf_material import pdf_lines, whole_pages  # noqa: E402
from reports import fail  # noqa: E402

INSTALL_COMPARE = "scripts/install_system_packages.sh --compare"


def checked_languages(names=None):
    """The described languages whose ``checks`` name a reserved document, by name; ``names``:
    only these, in their order (one ``error:`` line for a name that is not such a language)."""
    checked = [name for name in language_names()
               if get_language(name).checks["reserved_pdf"]]
    for name in names or ():
        if name not in checked:
            fail("%s is not a language with a reserved document to check (checks.reserved_pdf in "
                 "its description); pass --languages from: %s" % (name, ",".join(checked)))
    return [get_language(name) for name in (names or checked)]


def check_material(languages):
    """Stop with one line unless every language's reserved document and poppler are there."""
    missing = [language.checks["reserved_pdf"] for language in languages
               if not os.path.isfile(language.checks["reserved_pdf"])]
    missing += [tool for tool in ("pdftotext", "pdfinfo") if shutil.which(tool) is None]
    if missing:
        fail("missing the reserved material: %s; run %s" % (", ".join(missing), INSTALL_COMPARE))


def language_material(out, language, count, seed):
    """``(lines [(path, label)], pages [(path, truth rows, name)], report)`` of one language,
    cut into the folder ``out/<name>``: ``count`` lines from the reserved document's pages other
    than its whole pages, and those pages (``report`` as ``pdf_material.pdf_lines`` gives it)."""
    folder = os.path.join(out, language.name)
    os.makedirs(folder, exist_ok=True)
    pdf = language.checks["reserved_pdf"]
    pages = [(pdf, page) for page in language.checks["pages"]]
    lines, report = pdf_lines(folder, [pdf], count, seed, language, skip_pages=pages)
    return lines, whole_pages(folder, pages, language), report
