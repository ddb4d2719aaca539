"""crnn-predict --page reads PDF documents page by page (crnn_multigpu.datasets.pdf): each page
drawn by poppler at --dpi and named ``file.pdf#page=N``; a damaged PDF, a PDF read as a crop and a
machine without poppler each get one line saying what to do."""
import json
import os
import subprocess

import editdistance
import pytest
from PIL import Image

from assertions import one_error_line
from crnn_multigpu.cli import predict
from crnn_multigpu.datasets import pdf
from crnn_multigpu.ocr.reader import page_sources
from faces import DEJAVU
from text_pdf import write_text_pdf

SERIF = os.path.join(DEJAVU, "DejaVuSerif.ttf")
PAGES = (["Chapter one begins here.", "It has two short lines."],
         ["The second page follows,", "and ends the document."])
LETTER = (612, 792)  # points, write_text_pdf's page


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    """A two-page PDF of PAGES, named without .pdf (a PDF is known by its first bytes)."""
    folder = tmp_path_factory.mktemp("document")
    parts = []
    for number, lines in enumerate(PAGES):
        parts.append(str(folder / ("part%d.pdf" % number)))
        write_text_pdf(parts[-1], lines, SERIF, size=14)
    path = str(folder / "document")
    subprocess.run(["pdfunite"] + parts + [path], check=True)
    return path


def test_a_pdf_gives_each_of_its_pages_named_and_drawn_at_the_dpi_asked(document, tmp_path):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    sources = page_sources([document, image], dpi=100)
    assert [source.name for source in sources] == [document + "#page=1", document + "#page=2",
                                                   image]
    drawn = sources[1].load()
    assert drawn.mode == "L" and drawn.size == tuple(round(side * 100 / 72.0) for side in LETTER)
    assert sources[1].dpi == 100 and sources[2].dpi is None
    assert sources[2].load().size == (300, 300)   # an image is decoded when it is read


def test_predict_page_reads_every_page_of_a_pdf_in_order(document, capsys):
    assert predict.main(["--page", document, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    pages = [json.loads(line) for line in out.splitlines()]
    assert [page["image"] for page in pages] == [document + "#page=1", document + "#page=2"]
    assert "read page 2 of 2: %s#page=2" % document in err   # progress through a document
    for page, lines in zip(pages, PAGES):
        read, truth = " ".join(row["text"] for row in page["rows"]), " ".join(lines)
        # 14 pt DejaVu Serif at 150 dpi: the shipped text model reads it all right today.
        assert editdistance.eval(read, truth) <= 0.05 * len(truth), (read, truth)


def test_a_damaged_pdf_is_skipped_in_one_line_naming_it(tmp_path, capsys):
    damaged = str(tmp_path / "damaged.pdf")
    with open(damaged, "wb") as stream:
        stream.write(b"%PDF-1.4\nthe rest of it was lost\n")
    assert predict.main(["--page", damaged]) == 1
    said = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("INFO")]
    assert len(said) == 1 and said[0].startswith("skipped: %s: " % damaged) and \
        "damaged" in said[0], said


def test_a_pdf_read_as_a_crop_is_skipped_with_a_pointer_to_page(document, capsys):
    assert predict.main([document]) == 1   # nothing readable was given
    assert "skipped: %s: it is a PDF document, not an image: read its pages with --page" \
        % document in capsys.readouterr().err


def test_without_poppler_a_pdf_is_refused_with_what_to_install(document, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # no pdfinfo, no pdftoppm
    with pytest.raises(ValueError, match="cannot read PDF .*document: .*poppler-utils"):
        pdf.page_count(document)
    with pytest.raises(ValueError, match="poppler-utils"):
        pdf.render_page(document, 1)


def test_pages_chooses_the_pages_of_a_pdf_in_the_order_given(document, tmp_path):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    chosen = page_sources([document, image], "2,1-", 100)
    assert [source.name for source in chosen] == [document + "#page=2", document + "#page=1",
                                            document + "#page=2", image]


@pytest.mark.parametrize("selection", ["0", "3-2", "a", "1,,2", "-2"])
def test_a_malformed_page_selection_is_refused_in_one_line(document, selection, capsys):
    line = one_error_line(predict.main(["--page", "--pages", selection, document]),
                          capsys.readouterr().err)
    assert line.startswith("error: --pages: %r is not a page selection" % selection)


@pytest.mark.parametrize("selection", ["2-3", "3-"])
def test_pages_past_the_end_skip_that_document_only(document, selection, tmp_path, capsys):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    assert predict.main(["--page", "--pages", selection, document, image]) == 1
    out, err = capsys.readouterr()
    assert out == "\n"   # the image is read (blank) after the document was skipped
    assert "skipped: %s: has 2 pages: pages %s ask for page 3\n" % (document, selection) in err


def test_pages_without_page_is_refused_in_one_line(document, capsys):
    line = one_error_line(predict.main(["--pages", "1", document]), capsys.readouterr().err)
    assert "add --page" in line


def test_pages_with_no_pdf_among_the_inputs_is_refused(tmp_path, capsys):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    line = one_error_line(predict.main(["--page", "--pages", "1", image]),
                          capsys.readouterr().err)
    assert "none of the inputs is one" in line
