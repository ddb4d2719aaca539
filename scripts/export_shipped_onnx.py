"""Export the shipped models (models/text, models/words, models/zh) as the ONNX files they also
travel as (models/NAME/model.onnx), so that ``crnn-predict --engine onnx --model NAME`` reads
without TensorFlow. One command, run from a checkout with TensorFlow and the onnx-export extra:

    python scripts/export_shipped_onnx.py            # all three
    python scripts/export_shipped_onnx.py zh         # one

Each is written by ``crnn-export --format onnx`` (which checks onnxruntime's frames against
TensorFlow's before it writes) into a temporary folder; only its model.onnx is kept, moved beside
the checkpoint it came from. Run it again whenever a shipped checkpoint or the exporter changes:
tests/test_shipped_onnx.py fails while a file no longer holds its checkpoint's frames.
"""
import argparse
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
from crnn_multigpu.ocr.onnx_reader import ONNX_FILE  # noqa: E402
from crnn_multigpu.ocr.shipped import SHIPPED  # noqa: E402


def export_shipped(name, python=sys.executable):
    """Export models/``name`` to models/``name``/model.onnx; returns its path. The export runs
    in the repository with the relative path, so the file's config records
    ``exported_from: models/NAME/checkpoints/...``, the same on every machine."""
    folder = os.path.join("models", name)
    with tempfile.TemporaryDirectory(prefix="shipped-onnx-") as scratch:
        out = os.path.join(scratch, name)
        done = subprocess.run([python, "-m", "crnn_multigpu.cli.export", "--checkpoint", folder,
                               "--format", "onnx", "--out", out], cwd=REPO,
                              env=dict(os.environ, PYTHONPATH=REPO))
        if done.returncode:
            raise SystemExit("error: crnn-export could not export %s (exit code %d, its error "
                             "above); nothing was replaced" % (folder, done.returncode))
        target = os.path.join(REPO, folder, ONNX_FILE)
        os.replace(os.path.join(out, ONNX_FILE), target)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="shipped models to export (default: all, %s)" % " ".join(SHIPPED))
    names = parser.parse_args(argv).names or SHIPPED
    unknown = sorted(set(names) - set(SHIPPED))
    if unknown:
        parser.error("no shipped model is called %s: the shipped models are %s"
                     % (", ".join(unknown), ", ".join(SHIPPED)))
    for name in names:
        path = export_shipped(name)
        print("%s: %.1f MiB" % (os.path.relpath(path, REPO), os.path.getsize(path) / 2.0 ** 20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
