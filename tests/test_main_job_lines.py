"""make train-lines, shrunk to seconds: line data, --width 0 with buckets, held-out figures."""
import json
import os

import pytest

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr.run_config import RunConfig
from crnn_multigpu.cli import main_job
from crnn_multigpu.datasets import read_labels


@pytest.mark.slow
def test_train_lines_end_to_end(tmp_path, capsys):
    out = str(tmp_path / "lines")
    assert main_job.main(["--lines", "--out", out, "--train-count", "16", "--val-count", "8",
                          "--steps", "2", "--batch-size", "4", "--towers", "1", "--model",
                          "tiny", "--workers", "1", "--font-dir",
                          "/usr/share/fonts/truetype/dejavu"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["n"] == 8 and 0.0 <= figures["cer"] and 0.0 <= figures["line_accuracy"] <= 1.0
    assert figures["checkpoint"].endswith("model.ckpt-2")
    config = RunConfig.read(os.path.join(out, "run"))
    assert config.image_width is None and config.training["bucket"] == 32
    assert Charset(config.charset) == Charset.printable_ascii()
    train = [text for _, text in read_labels(os.path.join(out, "data", "train", "labels.txt"))]
    val = [text for _, text in read_labels(os.path.join(out, "data", "val", "labels.txt"))]
    assert len(train) == 16 and len(val) == 8 and not set(train) & set(val)
    assert any(" " in text for text in train + val)
    assert os.path.isfile(figures["picture"])
