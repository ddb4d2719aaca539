"""PP-OCRv4 as a peer of the side-by-side checks: scripts/rapidocr_read.py run in its own venv.

PP-OCRv4 comes from pip's rapidocr-onnxruntime 1.4.4 (its ONNX models inside the wheel), installed
in ``.venv-rapidocr`` by ``make venv-rapidocr``: never a dependency of the package. Both
side-by-side scripts read through :class:`PaddleOcr` (compare_tesseract.py in English,
compare_chinese.py in Chinese); each tells it how its language tidies a text and joins the pieces
of a page's row, so PP-OCR's output is written as that script writes the other systems'.
"""
import collections
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from reports import fail  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAPIDOCR_PYTHON = os.path.join(ROOT, ".venv-rapidocr", "bin", "python")
RAPIDOCR_READ = os.path.join(ROOT, "scripts", "rapidocr_read.py")
NAME = "PP-OCRv4 (rapidocr-onnxruntime %s)"
MISSING = "PP-OCRv4's venv .venv-rapidocr (make venv-rapidocr)"

# One run of the reader over a list of images: ``texts`` in the order of the paths (a line's text,
# or a page's rows), ``seconds`` each image took, the process's ``startup`` (imports and model
# load) and its ``wall`` seconds from start to end.
Readings = collections.namedtuple("Readings", "texts seconds startup wall")


def rapidocr_ready(python=RAPIDOCR_PYTHON):
    """True when ``python`` (the PP-OCR venv's) finds rapidocr_onnxruntime (found, not
    imported: an import loads onnxruntime and OpenCV, a second of start-up)."""
    if not os.access(python, os.X_OK):
        return False
    probe = "import importlib.util, sys; " \
            "sys.exit(importlib.util.find_spec('rapidocr_onnxruntime') is None)"
    return subprocess.run([python, "-c", probe], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


class PaddleOcr(object):
    """PP-OCRv4 through scripts/rapidocr_read.py: one process per call of :meth:`read`, so its
    start-up is paid once per material, as a user of the library pays it.

    Args:
      tidy: a text read as the calling script writes every system's (spelt, spaces tidied).
      join_pieces: the pieces of one page row, read apart, as one line (as the language joins).

    ``command`` is the reader's command line before its arguments: the venv's Python and
    scripts/rapidocr_read.py (the tests put a fake reader there that prints what it prints).
    """

    def __init__(self, tidy, join_pieces):
        self.tidy, self.join_pieces = tidy, join_pieces
        self.command = [RAPIDOCR_PYTHON, RAPIDOCR_READ]
        self.version = "?"

    @property
    def name(self):
        """The column heading: the model and the package version that ran it."""
        return NAME % self.version

    def read(self, mode, paths, scratch):
        """:data:`Readings` of the image files ``paths``: ``mode`` "line" reads each as one line
        (the recogniser alone), "page" as a page (the whole pipeline; texts are lists of rows).
        The list of paths is written into ``scratch``. Stops with one line if the reader fails."""
        listing = os.path.join(scratch, "rapidocr-%s.txt" % mode)
        with open(listing, "w", encoding="utf-8") as handle:
            handle.write("".join(path + "\n" for path in paths))
        started = time.time()
        done = subprocess.run(self.command + ["--mode", mode, "--list", listing],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.time() - started
        if done.returncode != 0:
            fail("PP-OCRv4 (scripts/rapidocr_read.py) failed: %s" % (
                done.stderr.decode("utf-8", "replace").strip().splitlines() or ["?"])[-1])
        records = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()
                   if line.startswith("{")]
        self.version = records[0].get("version", self.version)
        by_path = dict((record["path"], record) for record in records[1:])
        ordered = [by_path[path] for path in paths]
        if mode == "line":
            texts = [self.tidy(record["text"]) for record in ordered]
        else:
            texts = [[self.tidy(self.join_pieces(pieces)) for pieces in record["rows"]]
                     for record in ordered]
        return Readings(texts, [record["seconds"] for record in ordered],
                        records[0].get("startup", 0.0), wall)
