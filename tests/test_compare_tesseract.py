"""The side-by-side check's own arithmetic (scripts/compare_tesseract.py): page scores, the
scanner's look, the three columns (project, Tesseract, PP-OCRv4) scored alike, and the table.
Tesseract and PP-OCRv4 themselves are not needed here (comparison tools, not dependencies): a
fake stands in for PP-OCR's runner, and for Tesseract and the project where a page is read."""
import os
import sys

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import compare_tesseract as compare  # noqa: E402
from assertions import one_error_line  # noqa: E402
from fake_pp_ocr import SECONDS, STARTUP, line_images, use_fake_runner  # noqa: E402
from test_page import DEJAVU  # noqa: E402
from text_pdf import write_text_pdf  # noqa: E402


def test_page_scores_count_edits_words_and_exact_rows():
    truth = ["The quick brown fox", "jumps over", "the lazy dog."]
    read = ["The quick brown fax", "the lazy dog.", "jumps over"]
    edits, characters, word_edits, words, exact, rows = compare.page_scores(read, truth)
    assert characters == len("\n".join(truth)) and words == 9 and rows == 3
    assert exact == 2  # rows are matched in any order, each once
    assert word_edits == 1 + 4  # fox -> fax, and the two rows swapped (2 + 2 words moved)
    assert edits == compare.edit_distance("\n".join(read), "\n".join(truth))
    assert compare.page_scores(truth, truth)[[0, 2]].tolist() == [0, 0]
    assert compare.page_scores(truth + truth[:1], truth)[4] == 3  # a repeated row counts once


def test_row_texts_are_the_text_layer_rows(tmp_path):
    lines = ["A first line of text.", None, "Then a second one, after a gap."]
    pdf = str(tmp_path / "made.pdf")
    write_text_pdf(pdf, lines, DEJAVU + "DejaVuSerif.ttf", size=11)
    rows = compare.row_texts(pdf, 1)
    assert [text for _, text in rows] == [line for line in lines if line]
    assert rows[0][0][1] < rows[1][0][1]  # top to bottom, boxes in points


def test_pages_are_rasterised_in_grey_at_the_dpi_and_pages_asked(tmp_path):
    pdf = str(tmp_path / "made.pdf")
    write_text_pdf(pdf, ["One line of text."], DEJAVU + "DejaVuSerif.ttf", size=11)
    assert compare.page_numbers(pdf, "1") == [1]
    with pytest.raises(ValueError, match="has 1 page: pages 1-2 ask for page 2"):
        compare.page_numbers(pdf, "1-2")
    path = compare.rasterise(pdf, 1, 100, str(tmp_path / "page"))
    image = Image.open(path)
    assert path.endswith(".png") and image.mode == "L"
    assert image.size == (round(612 * 100 / 72.0), round(792 * 100 / 72.0))  # a Letter page


def english_reader(monkeypatch, folder, rows=(), fail=""):
    """compare_tesseract's PP-OCR reader, its venv taken as there, reading through the fake."""
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: True)
    return use_fake_runner(compare.english_pp_ocr(), folder, rows, fail)


def test_pp_ocr_without_its_venv_stops_with_one_line_saying_make_venv_rapidocr(monkeypatch,
                                                                              capsys):
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        compare.english_pp_ocr()
    message = one_error_line(stopped.value.code, capsys.readouterr().err)
    assert ".venv-rapidocr" in message and "make venv-rapidocr" in message


def test_pp_ocr_output_is_spelt_as_tesseracts_in_the_order_asked(tmp_path, monkeypatch):
    reader = english_reader(monkeypatch, tmp_path)
    paths = line_images(tmp_path, ["\u201cQuoted\u201d  text \u2014 here ", "second\n"])
    read = reader.read("line", paths, str(tmp_path))
    assert read.texts == ['"Quoted" text -- here', "second"]
    assert read.texts == [compare.spelt(text) for text in ["\u201cQuoted\u201d  text \u2014 here ",
                                                            "second\n"]]
    assert read.seconds == [SECONDS, SECONDS] and read.startup == STARTUP
    assert reader.name == "PP-OCRv4 (rapidocr-onnxruntime fake)"


def test_a_failing_pp_ocr_run_stops_with_its_last_error_line(tmp_path, monkeypatch, capsys):
    reader = english_reader(monkeypatch, tmp_path, fail="RuntimeError: no model")
    with pytest.raises(SystemExit) as stopped:
        reader.read("line", line_images(tmp_path, ["x"]), str(tmp_path))
    assert one_error_line(stopped.value.code, capsys.readouterr().err) == \
        "error: PP-OCRv4 (scripts/rapidocr_read.py) failed: RuntimeError: no model"


def test_crops_give_a_column_per_system_scored_alike(tmp_path, monkeypatch):
    samples = [(str(tmp_path / "a.png"), "Hello"), (str(tmp_path / "b.png"), "world")]
    readings = [("project", ["Hello", "word"]), ("tesseract", ["hello", "world"]),
                ("PP-OCRv4", ["Hello,", "World"])]
    rows = compare.compare_samples("words", samples, readings, compare.FOLD)
    assert [row["word_accuracy"] for row in rows] == [0.5, 1.0, 1.0]  # case-blind, alnum only
    exact = compare.compare_samples("lines", samples, readings, None)
    assert [row["word_accuracy"] for row in exact] == [0.5, 0.5, 0.0]
    assert exact[2]["cer"] == compare.sample_figures(readings[2][1], ["Hello", "world"])["cer"]


def test_the_side_by_side_picture_is_a_small_palette_png_keeping_green_and_red(tmp_path):
    crop = tmp_path / "line.png"
    grey = np.tile(np.linspace(0, 255, 300).astype(np.uint8), (30, 1))  # a crop's greys
    Image.fromarray(grey).save(str(crop))
    picture = str(tmp_path / "lines.png")
    compare.side_by_side([(str(crop), "Hello")], [("project", ["Hello"]), ("tesseract", ["He1lo"])],
                         picture)
    saved = Image.open(picture)
    assert saved.mode == "P" and len(saved.getcolors()) <= 32
    colours = {colour for _, colour in saved.convert("RGB").getcolors(32)}
    greenish = any(g > 90 and r < 60 and b < 60 for r, g, b in colours)
    reddish = any(r > 140 and g < 60 and b < 60 for r, g, b in colours)
    assert greenish and reddish   # the right reading green, the wrong one red


class FakeProject(object):
    """Reads the first row of a page right and misses the second."""
    startup = 2.0

    def __init__(self, rows):
        self.rows = rows

    def read_page(self, path):
        return self.rows[:1]


class FakeTesseract(object):
    """Reads the second row of a page right and the first with one wrong character."""

    def __init__(self, rows):
        self.rows = rows

    def lines(self, path, psm):
        assert psm == 4
        return [self.rows[0].replace("l", "1", 1)] + self.rows[1:]


def test_pages_are_scored_for_each_of_the_three_systems(tmp_path, monkeypatch):
    rows = ["A first line of text.", "Then a second one, after a gap."]
    pdf = str(tmp_path / "made.pdf")
    # A small page: its 300 dpi scan stays small.
    write_text_pdf(pdf, rows, DEJAVU + "DejaVuSerif.ttf", size=11, page=(230, 70), margin=10)
    # PP-OCR finds each row in two pieces, and no space at either end.
    reader = english_reader(monkeypatch, tmp_path, rows=[["A first line", "of text. "],
                                                         ["Then a second one,", "after a gap."]])
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    totals, seconds, n_pages = compare.compare_pages([(pdf, "1")], FakeProject(rows),
                                                     FakeTesseract(rows), reader, str(scratch), 0)
    truth = compare.page_scores(rows, rows)
    assert n_pages == 1 and sorted(totals) == sorted(compare.PAGE_LOOKS)
    for look in compare.PAGE_LOOKS:
        project, tesseract, paddle = totals[look]
        assert paddle.tolist() == truth.tolist()  # rows joined: the text layer's rows exactly
        assert tesseract.tolist() == compare.page_scores(FakeTesseract(rows).lines("", 4),
                                                         rows).tolist()
        assert (project[4], tesseract[4], paddle[4]) == (1, 1, 2)
        # Seconds per page: PP-OCR's as it reported them, its start-up spread over the looks.
        assert seconds[look][2] == pytest.approx(SECONDS + STARTUP / len(compare.PAGE_LOOKS))
        assert seconds[look][0] >= FakeProject.startup / len(compare.PAGE_LOOKS)


def test_the_table_has_a_column_per_system_and_the_best_in_bold():
    table = {"lines": [("lines exactly right", [0.933, 0.827, 0.95], 300),
                       ("CER", [0.002, 0.0048, 0.003], 300)],
             "pages, 150 dpi": [("seconds per page", [0.65, 1.69, 20.0], 11)]}
    lines = compare.table_lines(["this project", "tesseract 5.3.0", "PP-OCRv4"], table)
    assert lines[:2] == ["| material | figure | this project | tesseract 5.3.0 | PP-OCRv4 | n |",
                         "|---|---|---|---|---|---|"]
    assert lines[2:] == ["| lines | lines exactly right | 93.3 % | 82.7 % | **95.0 %** | 300 |",
                         "| lines | CER | **0.20 %** | 0.48 % | 0.30 % | 300 |",
                         "| pages, 150 dpi | seconds per page | **0.65** | 1.69 | 20.00 | 11 |"]


def test_heldout_word_faces_are_the_splits_heldout_side_and_never_reserved():
    from crnn_multigpu.datasets.charset import Charset
    from crnn_multigpu.datasets.fonts import is_reserved, select_fonts
    from crnn_multigpu.datasets.language import get_language
    faces = compare.word_faces("heldout")
    assert faces == select_fonts("heldout", chars=Charset.default().chars,
                                 language=get_language("en"))
    assert not any(is_reserved(path) for path in faces)


def test_words_are_rendered_in_the_faces_given(tmp_path):
    samples, faces = compare.render_words(str(tmp_path), 6, 3, [DEJAVU + "DejaVuSans.ttf"])
    assert faces == 1 and len(samples) == 6
    for path, word in samples:
        assert word.isalpha()
        with Image.open(path) as image:
            assert image.height >= 20 and image.width > image.height // 2
