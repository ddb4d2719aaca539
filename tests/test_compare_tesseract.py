"""The side-by-side check's own arithmetic (scripts/compare_tesseract.py): page scores and
the scanner's look. Tesseract itself is not needed here (a comparison tool, not a dependency)."""
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import compare_tesseract as compare  # noqa: E402
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


def test_the_scanned_look_turns_blurs_and_greys_the_page(tmp_path):
    page = Image.new("L", (400, 300), 255)
    page.paste(0, (50, 100, 350, 110))
    path = str(tmp_path / "page.png")
    page.save(path)
    angle = compare.scanned_look(path, np.random.RandomState(0))
    scanned = np.asarray(Image.open(path), dtype=np.float32)
    assert abs(angle) <= 0.5 and scanned.shape == (300, 400)
    assert 180 < np.median(scanned) < 240  # grey paper
    assert scanned[:, :40].std() > 3  # noise
