"""scripts/pdf_training_set.py on PDFs the test writes (tests/text_pdf.py): lines and words
labelled from the text layer, case kept; reserved, check and non-embedded fonts refused.

Needs poppler-utils (pdftotext, pdftoppm, pdffonts, pdfinfo); CI installs it. No TensorFlow here.
"""
import os
import subprocess
import sys

from crnn_multigpu.datasets import open_dataset
from text_pdf import write_text_pdf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "pdf_training_set.py")
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINES = ["Hello world 42 x-ray", None, "The Quick (brown) fox: 3.5 kg", None, "snake_case MAX_LEN"]


def run_script(*args):
    return subprocess.run([sys.executable, SCRIPT] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)


def test_lines_and_words_carry_the_text_layer(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    write_text_pdf(str(docs / "doc.pdf"), LINES, FONT, size=14, font_name="DejaVuSans")
    out = tmp_path / "set"
    result = run_script("--out", out, "--dpi", "150", "--words-per-page", 50, docs)
    assert result.returncode == 0, result.stderr
    assert "1 PDFs usable" in result.stdout
    dataset = open_dataset(str(out))
    lines = [t for i, t in enumerate(dataset.texts) if "/l" in dataset.image_path(i)]
    words = [t for i, t in enumerate(dataset.texts) if "/w" in dataset.image_path(i)]
    assert sorted(lines) == sorted(line for line in LINES if line)
    # Words: letters and digits only, the case kept; punctuated ones are left out.
    assert sorted(words) == sorted(["Hello", "world", "42", "The", "Quick", "kg"])
    for index in range(len(dataset.texts)):
        image, _ = dataset[index]
        assert image.shape[0] == 32 and image.min() < 0.5 < image.max()


def test_reserved_check_and_unembedded_fonts_are_refused(tmp_path):
    docs = tmp_path / "docs"
    (docs / "simh").mkdir(parents=True)
    write_text_pdf(str(docs / "libtasn1.pdf"), LINES, FONT, font_name="DejaVuSans")
    write_text_pdf(str(docs / "simh" / "manual.pdf"), LINES, FONT, font_name="DejaVuSans")
    write_text_pdf(str(docs / "urw.pdf"), LINES, FONT, font_name="ABCDEF+NimbusSans-Regular")
    write_text_pdf(str(docs / "times.pdf"), LINES, FONT, font_name="Times-Roman")
    write_text_pdf(str(docs / "bare.pdf"), LINES, FONT, font_name="DejaVuSans", embed=False)
    result = run_script("--out", tmp_path / "set", docs)
    assert result.returncode == 1 and not (tmp_path / "set").exists()
    assert result.stderr.count("\n") == 1, result.stderr
    assert "pdf_training_set: no PDF under %s may be trained on" % docs in result.stderr
    assert "0 PDFs usable; refused: 1 check PDF, 2 font-maybe-reserved, " \
           "1 font-not-embedded, 1 reserved" in result.stdout


def test_the_latin_document_split_is_by_path_disjoint_and_leaves_reserved_documents_out(
        monkeypatch):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import texlive_lang_pdfs
    files = {"texlive-lang-german": ["/doc/de/guide-%d.pdf" % n for n in range(40)] +
             ["/doc/de/lshort-german/l2kurz.pdf"],
             "texlive-lang-chinese": ["/doc/zh/ctex-%d.pdf" % n for n in range(5)]}
    monkeypatch.setattr(texlive_lang_pdfs, "installed_packages", lambda prefix: sorted(files))
    monkeypatch.setattr(texlive_lang_pdfs, "package_pdfs", lambda package: files[package])
    train = texlive_lang_pdfs.split_pdfs("train", {"chinese"})
    val = texlive_lang_pdfs.split_pdfs("val", {"chinese"})
    assert sorted(train + val) == sorted(files["texlive-lang-german"][:40])
    # About one in seven to validation, the same one on every run and machine.
    assert 2 <= len(val) <= 12 and val == texlive_lang_pdfs.split_pdfs("val", {"chinese"})
