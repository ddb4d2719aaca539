"""Issue 35: an evaluation scores over every label it was given.

An image that cannot be read (missing, truncated) counts as a wrong, empty reading of its
label, in word accuracy and CER alike; crnn-evaluate names such images on stderr (a few, then
a count) and warns in one line when they are most of the set; crnn-train's validation runs
the same loop. Before, 47 missing images of 48 scored word accuracy 1.0 over "n": 1.
"""
import json
import os
import shutil

import pytest

from crnn_multigpu.cli import evaluate, train
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import FolderDataset, read_labels
from crnn_multigpu.ocr.text_reader import evaluate_dataset


def damaged_copy(tiny_dataset, root, keep=1, truncate=2):
    """A copy of ``tiny_dataset`` in which only the first ``keep`` images are whole: the next
    ``truncate`` are cut to 40 bytes, the rest deleted. Returns (labels, kept texts)."""
    shutil.copytree(tiny_dataset, root)
    entries = read_labels(os.path.join(root, "labels.txt"))
    for index, (path, _) in enumerate(entries):
        if index < keep:
            continue
        if index < keep + truncate:
            with open(os.path.join(root, path), "r+b") as stream:
                stream.truncate(40)
        else:
            os.remove(os.path.join(root, path))
    return entries


@pytest.fixture(scope="module")
def damaged(tiny_dataset, tmp_path_factory):
    """(folder, labels.txt entries) of the tiny set with 47 of its 48 images unreadable."""
    root = str(tmp_path_factory.mktemp("issue35-eval") / "damaged")
    return root, damaged_copy(tiny_dataset, root)


def test_every_label_counts_and_the_unreadable_are_named(damaged):
    root, entries = damaged
    texts = [text for _, text in entries]
    dataset = FolderDataset(root)
    names = []
    # A perfect reader of the one readable image: only what could not be read is wrong.
    figures, _ = evaluate_dataset(dataset, lambda arrays: [texts[0]] * len(arrays),
                                  batch_size=8, unreadable=names)
    assert figures["n"] == 48 and figures["unreadable"] == 47
    assert figures["word_accuracy"] == pytest.approx(1 / 48.0)
    # Each unreadable image is an empty reading: its whole label is edit distance.
    assert figures["cer"] == pytest.approx(sum(map(len, texts[1:])) / float(sum(map(len, texts))))
    assert figures["mean_ned"] == pytest.approx(47 / 48.0)
    assert names == [os.path.join(root, path) for path, _ in entries[1:]]


def test_a_limit_and_a_fold_count_the_unreadable_too(damaged):
    root, entries = damaged
    figures, _ = evaluate_dataset(FolderDataset(root), lambda arrays: [entries[0][1]] * len(arrays),
                                  limit=4, fold=str.upper)
    assert (figures["n"], figures["unreadable"], figures["word_accuracy"]) == (4, 3, 0.25)


@pytest.fixture(scope="module")
def run_on_damaged_val(tiny_dataset, damaged, tmp_path_factory):
    """A two-step tiny run validated on the damaged set: (run folder, its stderr, its JSON)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    out = str(tmp_path_factory.mktemp("issue35-run") / "run")
    err, stdout = io.StringIO(), io.StringIO()
    with tf.Graph().as_default(), redirect_stderr(err), redirect_stdout(stdout):
        code = train.main(["--train", tiny_dataset, "--val", damaged[0], "--out", out,
                           "--steps", "2", "--model", "tiny", "--batch-size", "8",
                           "--checkpoint-every", "0", "--log-every", "0",
                           "--validate-every", "0"])
    assert code == 0, err.getvalue()
    return out, err.getvalue(), json.loads(stdout.getvalue().strip().splitlines()[-1])


def assert_named_and_warned(err, figures, root, entries):
    assert figures["n"] == 48 and figures["unreadable"] == 47
    assert figures["word_accuracy"] <= 1 / 48.0
    first = ", ".join(os.path.join(root, path) for path, _ in entries[1:4])
    notes = [line for line in err.splitlines() if line.startswith("note: 47 of the 48")]
    assert notes == ["note: 47 of the 48 images of %s could not be read and count as wrong, "
                     "empty readings: %s and 44 more (--verbose says why)" % (root, first)], err
    warnings = [line for line in err.splitlines() if line.startswith("warning: most images")]
    assert len(warnings) == 1 and "(47 of 48)" in warnings[0] and root in warnings[0], err


def test_crnn_train_validation_scores_every_label(run_on_damaged_val, damaged):
    _, err, figures = run_on_damaged_val
    assert_named_and_warned(err, figures, *damaged)


def test_crnn_evaluate_scores_every_label_names_and_warns(run_on_damaged_val, damaged, capsys):
    root, entries = damaged
    with tf.Graph().as_default():
        assert evaluate.main(["--checkpoint", run_on_damaged_val[0], "--data", root]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out.strip().splitlines()[-1])
    assert_named_and_warned(captured.err, figures, root, entries)


def test_a_few_unreadable_are_named_without_a_warning(run_on_damaged_val, tiny_dataset, tmp_path,
                                                      capsys):
    root = str(tmp_path / "two-missing")
    entries = damaged_copy(tiny_dataset, root, keep=46, truncate=0)
    with tf.Graph().as_default():
        assert evaluate.main(["--checkpoint", run_on_damaged_val[0], "--data", root]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["n"] == 48
    named = ", ".join(os.path.join(root, path) for path, _ in entries[46:])
    assert "could not be read and count as wrong, empty readings: %s (--verbose" % named \
        in captured.err
    assert "warning" not in captured.err
