"""Bounds that follow the model (issue 54.5): the widest CTC beam is derived from what the
search costs, classes x width x frames, and a wider one is refused before any work starts, in
both engines (the ONNX one: tests/test_onnx.py) and every reading tool."""
import json
import os

import pytest

from assertions import one_error_line, run_tool
from crnn_multigpu.cli import evaluate, export, predict
from crnn_multigpu.ocr import ctc
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.shipped import shipped_model

# The shipped models' bounds as docs/reliability.md states them.
SHIPPED_BOUNDS = {"text": 145, "words": 3022, "zh": 2}


def shipped_bound(name):
    """The bound of a shipped model from its config: classes, and frames of its fixed width or
    of a long line (CRNN reads 4 pixels a frame)."""
    with open(os.path.join(shipped_model(name), "config.json")) as stream:
        config = json.load(stream)
    return ctc.max_beam_width(len(config["charset"]) + 1,
                              ctc.beam_frames(config.get("image_width"), 4))


@pytest.mark.parametrize("name", sorted(SHIPPED_BOUNDS))
def test_the_shipped_models_bounds_are_those_the_docs_state(name):
    assert shipped_bound(name) == SHIPPED_BOUNDS[name]
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "reliability.md")) as stream:
        assert "`--model %s`: %d" % (name, SHIPPED_BOUNDS[name]) in stream.read()


def test_the_bound_keeps_the_search_within_its_budget():
    for classes, frames in ((96, 256), (6900, 256), (37, 32), (2, 1), (100000, 256)):
        bound = ctc.max_beam_width(classes, frames)
        cost = ctc.BYTES_PER_ENTRY * classes * frames
        assert bound >= 1 and (bound == 1 or bound * cost <= ctc.BEAM_MEMORY_BUDGET)
        assert bound == 1 or (bound + 1) * cost > ctc.BEAM_MEMORY_BUDGET  # the widest within
        ctc.check_beam_width(bound, classes, frames)
        ctc.check_beam_width(0, classes, frames)  # greedy always passes


def test_a_model_too_large_for_any_beam_is_told_to_read_greedy():
    with pytest.raises(ValueError) as refused:
        ctc.check_beam_width(2, 100000, 256, what="a huge model")
    assert str(refused.value).startswith("beam width 2 is too wide for a huge model: ")
    assert str(refused.value).endswith("use greedy decoding (0) (--beam-width)")


def test_the_tensorflow_recognizer_refuses_before_building_anything(monkeypatch):
    from crnn_multigpu.ocr import inference

    def build(*args):
        raise AssertionError("the graph was built")
    monkeypatch.setattr(inference.Recognizer, "_build", build)
    with pytest.raises(ValueError) as refused:
        Recognizer.shipped("zh", beam_width=3)
    assert str(refused.value).startswith("beam width 3 is too wide for %s: a CTC beam search "
                                         "keeps about 300 bytes per class x width x frame, and "
                                         "6900 classes x 256 frames at width 3 would take 1.5 GB "
                                         "per image (the bound is 1.0 GB): use at most 2"
                                         % shipped_model("zh"))


@pytest.mark.parametrize("tool, argv", [
    (predict.main, ["--model", "zh", "--beam-width", "1000", "IMAGE"]),
    (predict.main, ["--model", "text", "--beam-width", "146", "--lines", "IMAGE"]),
    (evaluate.main, ["--model", "words", "--beam-width", "3023", "--data", "DATA"]),
    (export.main, ["--checkpoint", shipped_model("text"), "--beam-width", "100000000",
                   "--out", "OUT"]),
])
def test_every_reading_tool_refuses_a_beam_too_wide_in_one_line(tool, argv, tiny_dataset,
                                                               tmp_path):
    from PIL import Image
    image = str(tmp_path / "word.png")
    Image.new("L", (64, 32), 255).save(image)
    out = str(tmp_path / "out")
    argv = [{"IMAGE": image, "DATA": tiny_dataset, "OUT": out}.get(arg, arg) for arg in argv]
    code, stdout, stderr = run_tool(tool, argv)
    width = argv[argv.index("--beam-width") + 1]
    assert one_error_line(code, stderr).startswith("error: beam width %s is too wide for " % width)
    assert not stdout and not os.path.exists(out)


def test_the_help_says_the_bound_follows_the_model(capsys):
    assert predict.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "as wide as the model allows: the search keeps about 300 bytes per class x width x " \
           "frame, at most 1 GB an image" in text
