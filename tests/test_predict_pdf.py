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
    sources = predict.page_sources([document, image], 100)
    assert [name for name, _ in sources] == [document + "#page=1", document + "#page=2", image]
    drawn = sources[1][1]()
    assert drawn.mode == "L" and drawn.size == tuple(round(side * 100 / 72.0) for side in LETTER)
    assert sources[2][1]() == image   # an image is read from its path, as before


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


def test_a_damaged_pdf_stops_with_one_line_naming_it(tmp_path, capsys):
    damaged = str(tmp_path / "damaged.pdf")
    with open(damaged, "wb") as stream:
        stream.write(b"%PDF-1.4\nthe rest of it was lost\n")
    line = one_error_line(predict.main(["--page", damaged]), capsys.readouterr().err)
    assert "cannot read PDF %s" % damaged in line and "damaged" in line


def test_a_pdf_read_as_a_crop_is_skipped_with_a_pointer_to_page(document, capsys):
    assert predict.main([document]) == 1   # nothing readable was given
    assert "skipped: %s is a PDF document: read its pages with --page" % document \
        in capsys.readouterr().err


def test_without_poppler_a_pdf_is_refused_with_what_to_install(document, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))   # no pdfinfo, no pdftoppm
    with pytest.raises(ValueError, match="cannot read PDF .*document: .*poppler-utils"):
        pdf.page_count(document)
    with pytest.raises(ValueError, match="poppler-utils"):
        pdf.render_page(document, 1)


def test_pages_chooses_the_pages_of_a_pdf_in_the_order_given(document, tmp_path):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    chosen = predict.page_sources([document, image], 100, pdf.PageSelection("2,1-"))
    assert [name for name, _ in chosen] == [document + "#page=2", document + "#page=1",
                                            document + "#page=2", image]


@pytest.mark.parametrize("selection", ["0", "3-2", "a", "1,,2", "-2"])
def test_a_malformed_page_selection_is_refused_in_one_line(document, selection, capsys):
    line = one_error_line(predict.main(["--page", "--pages", selection, document]),
                          capsys.readouterr().err)
    assert line.startswith("error: --pages: %r is not a page selection" % selection)


@pytest.mark.parametrize("argv, said", [
    (["--page", "--pages", "2-3"], "has 2 pages: pages 2-3 ask for page 3"),
    (["--page", "--pages", "3-"], "has 2 pages: pages 3- ask for page 3"),
    (["--pages", "1"], "add --page"),
])
def test_pages_past_the_end_or_without_page_are_refused_in_one_line(document, argv, said, capsys):
    line = one_error_line(predict.main(argv + [document]), capsys.readouterr().err)
    assert said in line


def test_pages_with_no_pdf_among_the_inputs_is_refused(tmp_path, capsys):
    image = str(tmp_path / "scan.png")
    Image.new("L", (300, 300), 255).save(image)
    line = one_error_line(predict.main(["--page", "--pages", "1", image]),
                          capsys.readouterr().err)
    assert "none of the inputs is one" in line
