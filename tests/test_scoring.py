"""Scores that mean what they say: the normalised edit distance over the longer text, and
label lines that cannot be scored (a third column, spaces around the label) refused by line."""
import pytest
from PIL import Image

from crnn_multigpu.cli import evaluate
from crnn_multigpu.datasets import read_labels, write_labels
from crnn_multigpu.ocr.metrics import normalized_edit_distance, text_metrics


def test_one_empty_label_costs_one_reading_at_most():
    # Four exact readings and one reading of an empty label: the mean is 1/5, not 1.
    figures = text_metrics(["hello", "world", "a", "bc", "something"],
                           ["hello", "world", "a", "bc", ""])
    assert figures["word_accuracy"] == pytest.approx(0.8)
    assert figures["mean_ned"] == pytest.approx(0.2)


@pytest.mark.parametrize("reading, truth, expected", [
    ("", "", 0.0), ("abc", "abc", 0.0), ("", "abcd", 1.0), ("abcdefgh", "", 1.0),
    ("xyz", "abc", 1.0), ("abcd", "abxd", 0.25), ("ab", "abcd", 0.5), ("abcdefgh", "abcd", 0.5)])
def test_normalized_edit_distance_is_over_the_longer_text(reading, truth, expected):
    assert normalized_edit_distance(reading, truth) == pytest.approx(expected)
    assert text_metrics([reading], [truth])["mean_ned"] == pytest.approx(expected)


@pytest.mark.parametrize("line, problem", [
    ("a.png\thello\tworld\n", "holds a TAB"),
    ("a.png\thello\t\n", "holds a TAB"),
    ("a.png\t hello\n", "white space at its start or end"),
    ("a.png\thello  \n", "white space at its start or end"),
])
def test_malformed_label_lines_are_refused_by_file_and_line(tmp_path, line, problem):
    labels = tmp_path / "labels.txt"
    labels.write_text("b.png\tfine text\n" + line, encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_labels(str(labels))
    assert str(error.value).startswith("%s line 2: the label " % labels)
    assert problem in str(error.value)


def test_what_cannot_be_read_back_is_not_written(tmp_path):
    for label in ("two\tcolumns", " padded"):
        with pytest.raises(ValueError, match="label"):
            write_labels(str(tmp_path), [("a.png", "fine"), ("b.png", label)])
    assert not (tmp_path / "labels.txt").exists()
    write_labels(str(tmp_path), [("a.png", "inner spaces are fine"), ("b.png", "")])
    assert read_labels(str(tmp_path / "labels.txt")) == [("a.png", "inner spaces are fine"),
                                                         ("b.png", "")]


def test_crnn_evaluate_names_the_malformed_line(tmp_path, capsys):
    Image.new("L", (40, 32), 255).save(str(tmp_path / "a.png"))
    (tmp_path / "labels.txt").write_text("a.png\thello\n\na.png\thello\t0.93\n", encoding="utf-8")
    assert evaluate.main(["--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: %s line 3: the label 'hello\\t0.93' holds a TAB"
                          % (tmp_path / "labels.txt")), err
    assert len(err.strip().splitlines()) == 1
