"""What the side-by-side scripts share (compare_chinese.py, compare_latin.py, reading_systems.py):
Tesseract's command line and the project's reader as they read line images and pages, the
check of a model folder, the scores of a page and the markdown table.

Every reader gives back text as the calling script writes it: each read takes ``tidy``, the
calling language's spelling (``Language.spell`` or ``Language.tidy``), so all systems are
written alike before they are scored.
"""
import json
import os
import subprocess
import sys
import time
import unicodedata

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.ocr.metrics import edit_distance  # noqa: E402
from page_check import rows_read_exactly  # noqa: E402
from reports import fail  # noqa: E402

TESSERACT_LINE_PSM, TESSERACT_PAGE_PSM = 7, 4


def tesseract_languages():
    """The models Tesseract lists (``tesseract --list-langs``), or None without Tesseract."""
    try:
        listed = subprocess.run(["tesseract", "--list-langs"], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    # The first line is a heading ('List of available languages in "...":').
    return set(line.strip() for line in listed.splitlines()[1:] if line.strip())


class Tesseract(object):
    """Tesseract's command line with one ``model`` (``-l``), one process per image (as a user
    runs it): ``--psm 7`` for a line, ``page_psm`` for a page, OMP_THREAD_LIMIT=1."""

    def __init__(self, model, page_psm=TESSERACT_PAGE_PSM):
        version = subprocess.run(["tesseract", "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT).stdout.decode().splitlines()
        self.name = "Tesseract %s %s" % (version[0].split()[-1] if version else "?", model)
        self.model, self.page_psm = model, page_psm
        self.env = dict(os.environ, OMP_THREAD_LIMIT="1")

    def read(self, path, psm):
        """The text Tesseract reads in the image file ``path`` with segmentation ``psm``."""
        done = subprocess.run(["tesseract", path, "stdout", "-l", self.model, "--psm", str(psm)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env)
        return done.stdout.decode("utf-8", "replace")

    def read_lines(self, paths, tidy):
        """One text per line image, written by ``tidy``."""
        return [tidy(self.read(path, TESSERACT_LINE_PSM)) for path in paths]

    def read_page(self, path, tidy):
        """The non-empty rows Tesseract reads on a page, written by ``tidy``."""
        return [tidy(line) for line in self.read(path, self.page_psm).splitlines()
                if line.strip()]


class Project(object):
    """The project's reader, started once in this process, reading as crnn-predict reads."""

    def __init__(self, run_dir):
        started = time.time()
        # TensorFlow is imported here, not earlier: its import is part of the start-up, as the
        # peers' imports are part of theirs.
        from pathlib import Path
        from crnn_multigpu.ocr import Reader
        # As crnn-predict reads: with the language's character model where it reads with one.
        self.reader = Reader(Path(run_dir))
        self.startup = time.time() - started
        self.name = "this project"

    def read_lines(self, paths, tidy):
        """The texts of line images, in order, written by ``tidy``."""
        return [tidy(text) for text in self.reader.read_lines(paths)]

    def read_page(self, path, tidy):
        """The non-empty rows of a page (pieces joined as the model's language joins them),
        written by ``tidy``; a page that cannot be read reads as nothing, with a note."""
        document = self.reader.read(path)
        for skipped in document.skipped:
            print("note: %s: %s" % (skipped.name, skipped.reason), file=sys.stderr)
        return [tidy(line.text) for page in document.pages for line in page.lines
                if line.text.strip()]


def check_checkpoint(path, language=None):
    """Stop unless ``path`` is a run or model folder (of the language named ``language``, when
    one is named)."""
    config = os.path.join(path, "config.json")
    if not os.path.isfile(config):
        fail("no model at %s (no config.json); pass a run or model folder with --checkpoint "
             "RUN_OR_MODEL_DIR" % path)
    with open(config, encoding="utf-8") as handle:
        found = json.load(handle).get("language")
    if language and found != language:
        fail("%s is not a model of language %s (config.json language: %s); pass one with "
             "--checkpoint RUN_OR_MODEL_DIR whose config.json says \"language\": \"%s\""
             % (path, language, found, language))


def page_scores(read_rows, truth_rows, fold, joiner):
    """``[edits, characters, rows exactly right, rows]`` of one page, every row folded by
    ``fold``: the page's text (its rows in order, joined by ``joiner``) against the truth's,
    and the truth rows read exactly (each matched once by an equal row read, in any order)."""
    read = [fold(row) for row in read_rows]
    truth = [fold(row) for row in truth_rows]
    whole_read, whole_truth = joiner.join(read), joiner.join(truth)
    return np.array([edit_distance(whole_read, whole_truth), len(whole_truth),
                     rows_read_exactly(read, truth), len(truth)], dtype=np.float64)


def shown_chars(chars):
    """Characters for a report line: control characters, combining marks and other unprintable
    ones as ``U+XXXX`` (text layers hold a few from math fonts)."""
    return " ".join(char if char.isprintable() and not char.isspace() and
                    not unicodedata.combining(char) else "U+%04X" % ord(char) for char in chars)


def cell(exact, cer):
    """A table cell: share exactly right and CER, as ``68.3 % / 4.03 %``."""
    return "%.1f %% / %.2f %%" % (100.0 * exact, 100.0 * cer)


def markdown_table(systems, rows, first="material"):
    """The comparison as a markdown table: ``systems`` are the column headings after ``first``
    and ``n``, ``rows`` ``(material, n, [one cell per system])``."""
    lines = ["| %s | n | %s |" % (first, " | ".join(systems)),
             "|---|---|" + "---|" * len(systems)]
    for material, n, cells in rows:
        if len(cells) != len(systems):
            raise ValueError("%d cells for %d systems in row %r" % (len(cells), len(systems),
                                                                    material))
        lines.append("| %s | %s | %s |" % (material, n, " | ".join(cells)))
    return "\n".join(lines)
