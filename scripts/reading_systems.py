"""The readers scripts/benchmark_reading.py times, each answering one page at a time.

- :class:`Streaming`: a process started once that reads a page path sent on its stdin and answers
  with a JSON line (scripts/rapidocr_read.py's protocol): PP-OCRv4 in ``.venv-rapidocr``, and
  this project, this file run as its worker (``--engine tf`` or ``onnx``), which reads a page as
  ``crnn-predict --page`` does (``ocr.page_reader.PageReader``).
- :class:`Tesseract`: its command line, one process per page, as its users run it (``--psm 4``).

:func:`readers` builds them all for a language, each peer that cannot run replaced by one line
saying what to install.
"""
import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from pp_ocr import MISSING, NAME, RAPIDOCR_PYTHON, RAPIDOCR_READ, rapidocr_ready  # noqa: E402
from rapidocr_read import requested_paths  # noqa: E402
from side_by_side import tesseract_languages  # noqa: E402

INSTALL_COMPARE = "scripts/install_system_packages.sh --compare"
TESSERACT = "Tesseract"
PROJECT = "this project"


def read_line(stream, pending, timeout):
    """The next line (bytes, without its newline) of the unbuffered ``stream``, keeping what
    follows in the bytearray ``pending``; None after ``timeout`` seconds, EOFError at its end."""
    deadline = time.time() + timeout
    while b"\n" not in pending:
        left = deadline - time.time()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            return None
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            raise EOFError()
        pending.extend(chunk)
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line


class Streaming(object):
    """A process that reads page paths sent on its stdin one at a time and answers each with
    a JSON line, after a first one when ready (rapidocr_read.py's protocol): ``{"version":
    ...}``, then ``{"rows": [[piece, ...], ...]}`` a page; the pieces of a row are joined by
    ``join``. ``label`` % its version is its column heading."""

    def __init__(self, name, label, command, join, timeout):
        self.name, self.label, self.command, self.join, self.timeout = \
            name, label, command, join, timeout
        self.process, self.pending, self.version = None, bytearray(), "?"

    def start(self):
        """Launch the process and wait until it is ready; its start-up seconds."""
        started = time.perf_counter()
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log, bufsize=0)
        self.version = self.answer("its start").get("version", "?")
        return time.perf_counter() - started

    def read(self, path):
        """The rows read on the page image ``path``."""
        try:
            self.process.stdin.write((path + "\n").encode("utf-8"))
        except BrokenPipeError:
            pass  # it has ended: answer() says why
        return [self.join(pieces) for pieces in self.answer(path)["rows"]]

    def answer(self, what):
        """The next JSON line (other output skipped), or ValueError with the last line of the
        process's stderr."""
        while True:
            try:
                line = read_line(self.process.stdout, self.pending, self.timeout)
                how = "gave no answer within %g s to" % self.timeout
            except EOFError:  # its output closed: it has ended, or is ending
                line, how = None, "ended (exit %s) before answering" % self.process.wait(
                    timeout=self.timeout)
            if line is None:
                self.log.seek(0)
                said = self.log.read().decode("utf-8", "replace").strip().splitlines()
                raise ValueError("%s %s %s: %s" % (self.name, how, what, said[-1].replace(
                    "error: ", "", 1) if said else "nothing on stderr"))
            if line.startswith(b"{"):
                return json.loads(line.decode("utf-8"))

    def pids(self):
        """The ids of its running processes."""
        return [self.process.pid] if self.process and self.process.poll() is None else []

    def close(self):
        if self.process:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.log.close()


class Tesseract(object):
    """Tesseract's command line, one process per page, as its users run it."""

    def __init__(self, model, threads, timeout):
        version = subprocess.run(["tesseract", "--version"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT).stdout.decode().split()
        self.name, self.label = TESSERACT, "Tesseract %s " + model
        self.version = version[1] if len(version) > 1 else "?"
        self.model, self.timeout = model, timeout
        self.env = dict(os.environ, OMP_THREAD_LIMIT=str(threads))

    def start(self):
        """None: it starts with every page, within the page's time."""
        return None

    def read(self, path):
        try:
            done = subprocess.run(["tesseract", path, "stdout", "--psm", "4", "-l", self.model],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env,
                                  timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise ValueError("Tesseract took more than %d s on %s" % (self.timeout, path))
        return [line for line in done.stdout.decode("utf-8", "replace").splitlines()
                if line.strip()]

    def pids(self):
        return []

    def close(self):
        pass


def project_reader(engine, model, join, timeout):
    """This project reading pages with ``model`` (a run or model folder; with ``engine`` onnx,
    its ONNX export) in a worker process of its own."""
    return Streaming("%s (%s)" % (PROJECT, engine), PROJECT + ", %s",
                     [sys.executable, os.path.abspath(__file__), "--engine", engine,
                      "--checkpoint", model], join, timeout)


def export_onnx(model, folder):
    """``(the ONNX export of model, None)`` written by crnn-export into ``folder``, or ``(None,
    why not)``."""
    out = os.path.join(folder, "onnx")
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.export", "--checkpoint", model,
                           "--format", "onnx", "--out", out], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    errors = [line for line in done.stderr.decode("utf-8", "replace").splitlines()
              if line.startswith("error: ")]
    return (out, None) if done.returncode == 0 else (None, (errors or ["crnn-export failed"])[-1])


def readers(language, model, onnx, scratch, threads, timeout):
    """``(readers, skipped)``: this project on TensorFlow first, then on ONNX Runtime (``onnx``:
    its export, or None to export ``model`` into ``scratch``), Tesseract and PP-OCRv4 where they
    can run; ``skipped``: a line for each that cannot, saying what to install."""
    found, skipped = [project_reader("tf", model, language.join_pieces, timeout)], []
    onnx, why = (onnx, None) if onnx else export_onnx(model, scratch)
    if onnx:
        found.append(project_reader("onnx", onnx, language.join_pieces, timeout))
    else:
        skipped.append("skipping this project on ONNX Runtime: %s" % why)
    # Which Tesseract model reads the language is in its description (checks.tesseract).
    tesseract_model, models = language.checks["tesseract"], tesseract_languages()
    if tesseract_model is None:
        skipped.append("skipping Tesseract: the %s description names no Tesseract model "
                       "(checks.tesseract)" % language.name)
    elif models is None or tesseract_model not in models:
        skipped.append("skipping Tesseract: %s not installed; run %s" % (
            "tesseract" if models is None else "its %s model" % tesseract_model, INSTALL_COMPARE))
    else:
        found.append(Tesseract(tesseract_model, threads, timeout))
    if rapidocr_ready():
        found.append(Streaming("PP-OCRv4", NAME, [RAPIDOCR_PYTHON, RAPIDOCR_READ, "--mode", "page",
                                                  "--list", "-"], language.join_pieces, timeout))
    else:
        skipped.append("skipping PP-OCRv4: missing %s" % MISSING)
    return found, skipped


def worker(argv=None):
    """The project's side of :class:`Streaming`: read pages as crnn-predict --page does, with
    the library's Reader."""
    started = time.time()
    parser = argparse.ArgumentParser(description="this project answering page by page")
    parser.add_argument("--engine", choices=("tf", "onnx"), required=True)
    parser.add_argument("--checkpoint", required=True)
    args = parser.parse_args(argv)
    from pathlib import Path
    from crnn_multigpu.ocr import Reader
    reader = Reader(Path(args.checkpoint), engine=args.engine)
    if args.engine == "onnx":
        import onnxruntime
        version = "ONNX Runtime " + onnxruntime.__version__
    else:
        from crnn_multigpu.compat import tf
        version = "TensorFlow " + tf.__version__
    print(json.dumps({"version": version, "startup": time.time() - started}), flush=True)
    for path in requested_paths((), "-"):
        document = reader.read(path)
        for skipped in document.skipped:  # a page refused (its way up unclear) reads as nothing
            sys.stderr.write("note: %s: %s\n" % skipped)
        rows = [[line.text] for page in document.pages for line in page.lines if line.text]
        print(json.dumps({"path": path, "rows": rows}, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    from reports import one_line_errors
    sys.exit(one_line_errors(worker)())
