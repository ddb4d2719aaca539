"""scripts/pdf_words.py on a PDF the test writes (tests/text_pdf.py): words, labels, crops, errors.

Needs poppler-utils (pdftotext, pdftoppm); CI installs it. No TensorFlow here.
"""
import os
import shutil
import subprocess
import sys

import pytest
from PIL import Image

from crnn_multigpu.datasets import open_dataset
from text_pdf import write_text_pdf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "pdf_words.py")
SIZE, DPI = 24, 100
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINES = ["Hello world 42 x-ray", "ABCDEFGHIJKLMNOPQRSTUVWXYZ Zebra"]
# Punctuated and over-long (26 characters) words are dropped; labels are lower case.
EXPECTED = ["hello", "world", "42", "zebra"]


def run_script(*args, **kwargs):
    return subprocess.run([sys.executable, SCRIPT] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, **kwargs)


@pytest.fixture
def pdf(tmp_path):
    missing = [tool for tool in ("pdftotext", "pdftoppm") if shutil.which(tool) is None]
    if missing:
        pytest.fail("%s not found: these tests need poppler (apt-get install poppler-utils)"
                    % " and ".join(missing))
    path = str(tmp_path / "doc.pdf")
    write_text_pdf(path, LINES, FONT, size=SIZE, leading=2.0)
    return path


def test_words_labels_and_crops(pdf, tmp_path):
    out = tmp_path / "set"
    result = run_script("--out", out, "--dpi", DPI, pdf)
    assert result.returncode == 0, result.stderr
    assert "1 PDFs, 1 pages, 6 words found, 4 usable, 4 kept" in result.stdout
    dataset = open_dataset(str(out))
    assert list(dataset.texts) == EXPECTED
    em = SIZE * DPI / 72.0
    for index, text in enumerate(EXPECTED):
        with Image.open(dataset.image_path(index)) as image:
            width, height = image.size
            ink = image.convert("L").getextrema()
        assert 0.8 * em <= height <= 1.6 * em, (text, image.size)
        assert 0.3 * em * len(text) <= width <= 1.0 * em * len(text) + 10, (text, image.size)
        assert ink[0] < 100 and ink[1] > 200, "%s: no dark text on a light page %s" % (text, ink)
        assert dataset[index][0].shape[0] == 32
    with open(str(out / "sources.tsv")) as handle:
        assert [line.split("\t")[2] for line in handle] == ["1"] * 4


def test_sampling_is_seeded(pdf, tmp_path):
    def sample(seed, name):
        """The labels of 2 words drawn with ``seed``, and every file written, byte for byte."""
        out = tmp_path / name
        result = run_script("--out", out, "--max-words", 2, "--seed", seed, pdf)
        assert result.returncode == 0, result.stderr
        files = dict((str(path.relative_to(out)), path.read_bytes())
                     for path in sorted(out.rglob("*")) if path.is_file())
        return list(open_dataset(str(out)).texts), files

    labels, files = sample(3, "a")
    assert len(labels) == 2 and len(files) > 2
    # Two of the usable words, in the document's order.
    assert labels == [word for word in EXPECTED if word in labels]
    assert sample(3, "b") == (labels, files)  # the same seed: the same dataset
    # Other seeds draw other words: of the 6 pairs, not the same one every time.
    others = [sample(seed, "seed%d" % seed)[0] for seed in (0, 1, 2, 4)]
    assert any(other != labels for other in others), (labels, others)


def test_clear_errors(pdf, tmp_path):
    listing = tmp_path / "sources.txt"
    listing.write_text(u"# comment\nsome-doc-package /nonexistent/manual.pdf\n")
    result = run_script("--out", tmp_path / "x", "--from-list", listing)
    assert result.returncode != 0 and "apt-get install some-doc-package" in result.stderr

    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"not a pdf at all")
    result = run_script("--out", tmp_path / "x", str(bad))
    assert result.returncode != 0 and "cannot read PDF %s" % bad in result.stderr

    reserved = tmp_path / "libtasn1.pdf"
    shutil.copy(pdf, str(reserved))
    result = run_script("--out", tmp_path / "x", str(reserved))
    assert result.returncode != 0 and "reserved" in result.stderr

    empty_path = dict(os.environ, PATH=str(tmp_path))
    result = run_script("--out", tmp_path / "x", pdf, env=empty_path)
    assert result.returncode != 0 and "apt-get install poppler-utils" in result.stderr
