"""ONNX export and reading (issue 37): crnn-export --format onnx, crnn-predict --engine onnx.

The shipped text model is exported once; onnxruntime then reads the crops the shipped-model
tests draw, a line and a page with the same text, greedy and beam, as TensorFlow does.
"""
import json
import os
import shutil
import sys

import numpy as np
import pytest

from assertions import one_error_line
from crnn_multigpu.cli import evaluate, export, predict
from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import load_image
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.onnx_reader import OnnxRecognizer, verified_model_bytes, with_checksum
from test_shipped_model import FACES, WORDS, draw_word
from without_tensorflow import predict_without_tensorflow

def cli(main, argv, capsys):
    """``(exit code, stdout, stderr)`` of a tool run in this process, in a graph of its own."""
    with tf.Graph().as_default():
        code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The shipped text model exported by crnn-export --format onnx: its folder."""
    out = str(tmp_path_factory.mktemp("onnx") / "text-onnx")
    with tf.Graph().as_default():
        assert export.main(["--checkpoint", shipped_model("text"), "--format", "onnx",
                            "--out", out]) == 0
    return out


@pytest.fixture(scope="module")
def crops():
    """The crops test_shipped_model reads: 16 words in 4 DejaVu faces."""
    return [load_image(draw_word(word, face)) for face in FACES for word in WORDS]


def test_the_export_holds_the_frames_its_config_and_charset(exported):
    import onnx
    import onnxruntime
    files = sorted(os.listdir(exported))
    assert files == ["charset.txt", "config.json", "model.onnx"]
    model = onnx.load(os.path.join(exported, "model.onnx"))
    config = json.loads(dict((p.key, p.value) for p in model.metadata_props)["config"])
    with open(os.path.join(exported, "config.json")) as stream:
        assert json.load(stream) == config
    shipped = json.load(open(os.path.join(shipped_model("text"), "config.json")))
    assert config["charset"] == shipped["charset"] and config["model"] == shipped["model"]
    assert (config["format"], config["downsample"], config["height"]) == ("onnx", 4, 32)
    assert {node.op_type for node in model.graph.node} >= {"Conv", "LSTM", "LogSoftmax"}
    # Any batch and any width (a multiple of 4): from a letter to a long line.
    session = onnxruntime.InferenceSession(os.path.join(exported, "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    for batch, width in ((1, 8), (3, 1000)):
        images = np.zeros([batch, 32, width, 1], np.float32)
        log_probs, lengths = session.run(["log_probs", "lengths"], {
            "images": images, "widths": np.full([batch], width, np.int32)})
        assert log_probs.shape == (width // 4, batch, 96) and lengths.tolist() == [width // 4] * batch


@pytest.mark.parametrize("beam_width", [0, 10])
def test_onnxruntime_reads_the_shipped_models_crops_as_tensorflow(exported, crops, beam_width):
    tf_reader = Recognizer.shipped("text", beam_width=beam_width)
    try:
        want, want_log_probs = tf_reader.read_crops(crops)
    finally:
        tf_reader.close()
    got, got_log_probs = OnnxRecognizer(exported, beam_width=beam_width).read_crops(crops)
    assert got == want
    assert got_log_probs == pytest.approx(want_log_probs, abs=1e-3)
    truths = [word for _ in FACES for word in WORDS]
    assert sum(text == truth for text, truth in zip(got, truths)) >= 0.9 * len(truths)


def test_predict_engine_onnx_reads_a_word_a_line_and_a_page_as_tensorflow_without_it(
        exported, tmp_path, capsys):
    """crnn-predict --engine onnx reads as the TF path does, and imports no TensorFlow on its
    way (the reader, decoders, charset, image loading, framing and the page pipeline)."""
    from test_page import render_page
    word, line, page = (str(tmp_path / name) for name in ("word.png", "line.png", "page.png"))
    draw_word("Welcome", FACES[0]).save(word)
    draw_word("Route 66, exit 12", FACES[1]).save(line)
    render_page()[0].save(page)
    onnx_file = os.path.join(exported, "model.onnx")
    cases = (([word, "--beam-width", "10"], exported), ([line, "--lines"], onnx_file),
             ([page, "--page"], exported))
    without, _ = predict_without_tensorflow(
        [images + ["--engine", "onnx", "--checkpoint", path] for images, path in cases], tmp_path)
    for (images, _), (code, out, err) in zip(cases, without):
        assert code == 0 and "Traceback" not in err, err
        want = cli(predict.main, images, capsys)
        assert want[0] == 0 and out == want[1] and out.strip(), (out, want)
    assert out.count("\n") > 5  # the page's lines


def test_evaluate_engine_onnx_scores_as_tensorflow(exported, tiny_dataset, capsys):
    figures = []
    for engine in ([], ["--engine", "onnx", "--checkpoint", exported]):
        code, out, _ = cli(evaluate.main, ["--data", tiny_dataset] + engine, capsys)
        assert code == 0
        figures.append(json.loads(out))
    for scores in figures:
        del scores["checkpoint"]
    assert figures[0] == figures[1]


@pytest.mark.parametrize("argv, message", [
    (["--engine", "onnx", "--checkpoint", "RUN"], "no model.onnx in"),
    (["--engine", "onnx", "--checkpoint", "missing.onnx"], "missing.onnx does not exist"),
    (["--engine", "onnx", "--checkpoint", "EXPORT", "--towers", "2"], "drop --towers"),
    (["--engine", "onnx", "--model", "zh", "--towers", "2"], "drop --towers"),
    (["--checkpoint", "EXPORT"], "is an ONNX export: read it with --engine onnx"),
    (["--checkpoint", "EXPORT/model.onnx"], "is an ONNX export: read it with --engine onnx"),
])
def test_reading_options_that_cannot_work_are_refused(exported, tmp_path, capsys, argv,
                                                      message):
    word, run = str(tmp_path / "word.png"), str(tmp_path / "run")
    draw_word("exit", FACES[0]).save(word)
    # A run folder without an ONNX export of its own (the shipped ones have one).
    shutil.copytree(shipped_model("text"), run, ignore=shutil.ignore_patterns("model.onnx"))
    argv = [arg.replace("EXPORT", exported).replace("RUN", run) for arg in argv]
    code, out, err = cli(predict.main, argv + [word], capsys)
    assert message in one_error_line(code, err) and not out


def test_a_damaged_or_foreign_onnx_file_is_refused(exported, tmp_path, capsys):
    import onnx
    names = ("cut.onnx", "flipped.onnx", "foreign.onnx", "other.onnx", "garbage.onnx")
    cut, flipped, foreign, other, garbage = (str(tmp_path / name) for name in names)
    with open(os.path.join(exported, "model.onnx"), "rb") as stream:
        data = stream.read()
    with open(cut, "wb") as stream:
        stream.write(data[:len(data) // 2])
    # One byte changed inside a weight: the file still parses, and would read otherwise.
    model = onnx.load_from_string(data)
    weights = max(model.graph.initializer, key=lambda init: len(init.raw_data))
    at = data.index(weights.raw_data) + len(weights.raw_data) // 2
    damaged = data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:]
    assert onnx.load_from_string(damaged).graph.node  # it parses
    with open(flipped, "wb") as stream:
        stream.write(damaged)
    del model.metadata_props[:]
    onnx.save(model, foreign)  # an ONNX file with no metadata
    onnx.helper.set_model_props(model, {"config": json.dumps({"charset": "ab"})})
    onnx.save(model, other)  # a config of another kind
    with open(garbage, "wb") as stream:
        stream.write(with_checksum(b"not a model"))  # a checksum that holds, over garbage
    word = str(tmp_path / "word.png")
    draw_word("exit", FACES[0]).save(word)
    no_checksum = "carries no checksum: it is cut short, or was not written by crnn-export"
    for path, message in ((cut, no_checksum), (foreign, no_checksum), (other, no_checksum),
                          (flipped, "is damaged: its bytes do not match the checksum"),
                          (garbage, "cannot be loaded by onnxruntime")):
        code, out, err = cli(predict.main, ["--engine", "onnx", "--checkpoint", path, word],
                             capsys)
        line = one_error_line(code, err)
        assert line.startswith("error: %s " % path) and message in line and not out, line
    empty, pipe = str(tmp_path / "empty.onnx"), str(tmp_path / "pipe.onnx")
    open(empty, "wb").close()
    os.mkfifo(pipe)  # never opened: a reader would wait for a writer
    for path, message in ((empty, "it is empty (0 bytes)"), (pipe, "it is a named pipe (FIFO)")):
        code, _, err = cli(predict.main, ["--engine", "onnx", "--checkpoint", path, word], capsys)
        assert one_error_line(code, err).startswith("error: cannot read ONNX export %s: %s"
                                                    % (path, message))


def test_the_onnx_reader_refuses_a_beam_wider_than_the_model_allows(exported):
    from crnn_multigpu.ocr.ctc import beam_frames, max_beam_width
    bound = max_beam_width(96, beam_frames(None, 4))
    assert OnnxRecognizer(exported, beam_width=bound).read_crops([]) == ([], [])
    with pytest.raises(ValueError) as refused:
        OnnxRecognizer(exported, beam_width=bound + 1)
    assert str(refused.value).startswith("beam width %d is too wide for %s: " % (
        bound + 1, os.path.join(exported, "model.onnx")))
    assert str(refused.value).endswith("use at most %d (--beam-width)" % bound)


def test_the_export_carries_the_checksum_of_its_bytes(exported):
    import hashlib
    import onnx
    path = os.path.join(exported, "model.onnx")
    data = verified_model_bytes(path)
    metadata = dict((p.key, p.value) for p in onnx.load(path).metadata_props)
    assert metadata["sha256"] == hashlib.sha256(data[:data.rindex(b"sha256")
                                                      - 4]).hexdigest()
    assert json.loads(metadata["config"])["format"] == "onnx"


@pytest.mark.parametrize("module", ["onnxruntime", "tf2onnx"])
def test_without_the_extra_one_line_says_how_to_install_it(module, exported, tmp_path, capsys,
                                                          monkeypatch):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    word, out = str(tmp_path / "word.png"), str(tmp_path / "export")
    draw_word("exit", FACES[0]).save(word)
    if module == "onnxruntime":
        code, _, err = cli(predict.main, ["--engine", "onnx", "--checkpoint", exported, word],
                           capsys)
    else:
        code, _, err = cli(export.main, ["--checkpoint", shipped_model("text"), "--format",
                                         "onnx", "--out", out], capsys)
        assert not os.path.exists(out) and os.listdir(str(tmp_path)) == ["word.png"]
    line = one_error_line(code, err)
    extra = "onnx" if module == "onnxruntime" else "onnx-export"  # reading; exporting
    assert module in line and "pip install crnn_multigpu[%s]" % extra in line


def test_an_export_that_would_read_otherwise_is_not_written(exported, tmp_path):
    """The export checks onnxruntime's frames against TensorFlow's before it writes."""
    import onnx
    from onnx import numpy_helper
    from crnn_multigpu.ocr.onnx_export import check_frames, frozen_frames_graph
    model = onnx.load(os.path.join(exported, "model.onnx"))
    lstm = [node for node in model.graph.node if node.op_type == "LSTM"][0]
    weights = [init for init in model.graph.initializer if init.name == lstm.input[1]][0]
    weights.CopyFrom(numpy_helper.from_array(-numpy_helper.to_array(weights), weights.name))
    recognizer = Recognizer.shipped("text")
    try:
        check_frames(recognizer, onnx.load(os.path.join(exported, "model.onnx"))
                     .SerializeToString())  # the export itself passes
        with pytest.raises(ValueError, match="frames differ from TensorFlow's .* not written"):
            check_frames(recognizer, model.SerializeToString())
        del recognizer.model.seq_lengths  # a model class without frames cannot be exported
        with pytest.raises(ValueError, match="--format onnx exports a model's frames"):
            frozen_frames_graph(recognizer)
    finally:
        recognizer.close()


class FakeTensor(object):
    def __init__(self, const):
        self.const = const

    def is_const(self):
        return self.const


class FakeNode(object):
    """What block_lstm_handler reads of a tf2onnx node, for a BlockLSTM it cannot write."""
    input = ["s", "x", "c", "h"]

    def __init__(self, attrs, const):
        self.attrs = attrs
        self.inputs = [FakeTensor(True)] * 4 + [FakeTensor(const)] + [FakeTensor(True)] * 4

    def get_attr_value(self, key):
        return self.attrs[key]


@pytest.mark.parametrize("peephole, clip, const, problem", [
    (True, -1.0, True, "uses peepholes or cell clipping"),
    (False, 3.0, True, "uses peepholes or cell clipping"),
    (False, -1.0, False, "has weights that are not constants")])
def test_an_lstm_onnx_cannot_compute_exactly_is_reported(peephole, clip, const, problem):
    from crnn_multigpu.ocr.onnx_export import block_lstm_handler
    problems = []
    node = FakeNode(dict(use_peephole=peephole, cell_clip=clip), const)
    block_lstm_handler(problems)(None, node, "bilstm/fw", [])
    assert problems == ["bilstm/fw " + problem]


def test_the_documented_onnxruntime_example_reads_without_this_package(exported, tmp_path):
    from test_readme import python_blocks
    block = [b for b in python_blocks() if "def read_crop(" in b.code][0]
    assert "crnn_multigpu" not in block.code
    namespace = {}
    exec(compile(block.code, block.name, "exec"), namespace)
    for text, face in (("Welcome", FACES[0]), ("Route66", FACES[3])):
        path = str(tmp_path / ("%s.png" % text))
        draw_word(text, face).convert("RGB").save(path)
        assert namespace["read_crop"](os.path.join(exported, "model.onnx"), path) == text
