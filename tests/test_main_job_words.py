"""make train's job (words) end to end on a few images: held-out figures with and without the LM."""
import json
import os

import pytest

from crnn_multigpu.cli import main_job
from crnn_multigpu.datasets import LABELS_FILE, read_labels


@pytest.mark.slow
def test_train_words_end_to_end_reports_both_readings(tmp_path, capsys):
    out = str(tmp_path / "job")
    assert main_job.main(["--out", out, "--train-count", "16", "--val-count", "8", "--steps", "2",
                          "--model", "tiny", "--batch-size", "8", "--towers", "1",
                          "--workers", "1", "--font-dir",
                          "/usr/share/fonts/truetype/dejavu"]) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out.strip().splitlines()[-1])
    assert figures["n"] == 8 and figures["checkpoint"].endswith("model.ckpt-2")
    for key in ("word_accuracy", "word_accuracy_char_lm", "cer", "cer_char_lm"):
        assert 0.0 <= figures[key] <= (1.0 if "accuracy" in key else 10.0), key
    assert "with the character language model, --char-lm" in captured.err
    labels = [text for _, text in read_labels(os.path.join(out, "data", "val", LABELS_FILE))]
    assert len(labels) == 8 and all(text.isalnum() for text in labels)
    assert os.path.isfile(figures["picture"])
