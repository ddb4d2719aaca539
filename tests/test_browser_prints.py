"""scripts/browser_prints.py with a fake Chromium: only training-side documents of the language
are printed (never a validation-side or reserved one), a print in a face that may not be trained
on is removed with a line, every kept print is indexed with its source and style, and a second
run continues the folder. No Chromium or PDF is needed."""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import browser_prints  # noqa: E402
from crnn_multigpu.datasets import page_material  # noqa: E402
from crnn_multigpu.datasets.page_crops import split_by_source  # noqa: E402

FACES = ["/fonts/a.ttf", "/fonts/b.otf"]


def html_tree(root, names):
    for name in names:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as stream:
            stream.write("<html><body>%s</body></html>" % ("x" * page_material.MIN_HTML_BYTES))


def test_only_training_side_documents_of_the_language_are_printed(tmp_path):
    chinese = ["ch%03d.zh-cn.html" % i for i in range(60)]
    html_tree(str(tmp_path), chinese + ["ch001.de.html", "ch002.en.html",
                                        "debian-faq/zh-cn/faq.zh-cn.html"])
    found = browser_prints.training_documents("zh", 0.1, 0, roots=(str(tmp_path),))
    everything = [{"source": os.path.join(str(tmp_path), name)} for name in chinese]
    training, validation = split_by_source(everything, 0.1, 0)
    assert found == sorted(entry["source"] for entry in training)
    assert validation and 40 < len(found) < 60 and not any("faq" in path for path in found)


def test_a_print_in_a_face_that_may_not_be_trained_on_is_removed(monkeypatch, tmp_path):
    def fake_print(source, css, out_pdf):
        with open(out_pdf, "w") as stream:
            stream.write(source)
    monkeypatch.setattr(page_material, "print_html", fake_print)
    monkeypatch.setattr(browser_prints, "font_refusal", lambda pdf: "font-maybe-reserved: X"
                        if open(pdf).read().endswith("bad.html") else None)
    out, log = str(tmp_path / "prints"), []
    documents = ["/doc/good.zh-cn.html", "/doc/bad.html"]
    kept = browser_prints.print_documents(documents, FACES, out, 12, random.Random(1), log.append)
    refused = [line for line in log if line.startswith("left out")]
    assert kept + len(refused) == 12 and kept and refused
    assert refused[0] == ("left out /doc/bad.html: its fonts may not be trained on "
                          "(font-maybe-reserved: X)")
    pdfs = sorted(name for name in os.listdir(out) if name.endswith(".pdf"))
    assert pdfs == ["print%06d.pdf" % i for i in range(kept)]
    index = [json.loads(line) for line in open(os.path.join(out, browser_prints.INDEX))]
    assert [entry["pdf"] for entry in index] == pdfs
    assert all(entry["source"] == "/doc/good.zh-cn.html" for entry in index)
    assert all(entry["recipe"]["body_face"] in FACES for entry in index)
    again = browser_prints.print_documents(documents[:1], FACES, out, 2, random.Random(2),
                                           log.append)
    assert again == 2 and len(os.listdir(out)) == kept + 2 + 1
    none = str(tmp_path / "none")
    assert browser_prints.print_documents(documents[1:], FACES, none, 2, random.Random(3),
                                          log.append) == 0
    assert os.listdir(none) == []


def test_no_document_to_print_is_one_error_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(browser_prints, "training_documents", lambda *args: [])
    assert browser_prints.main(["--language", "zh", "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: no zh HTML document to print")
