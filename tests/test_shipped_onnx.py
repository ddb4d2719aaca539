"""The shipped models travel as ONNX files too (models/NAME/model.onnx, issue 53 item 5):
``crnn-predict --engine onnx --model text|words|zh`` reads crops, lines, pages and PDFs with
onnxruntime where TensorFlow cannot be imported, and reads them as TensorFlow reads the
checkpoints. ``make test-no-tf`` runs the reading test again in a venv that has no TensorFlow
at all (tests/without_tensorflow.py)."""
import json
import os
import shutil

import pytest
from PIL import Image, ImageDraw

from assertions import one_error_line
from crnn_multigpu.cli import predict
from crnn_multigpu.datasets import load_font
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.onnx_reader import OnnxRecognizer
from crnn_multigpu.ocr.shipped import SHIPPED, shipped_model
from faces import DEJAVU
from test_onnx import cli
from test_shipped_model import FACES, MICROHEI, draw_word, print_line
from text_pdf import write_text_pdf
from without_tensorflow import predict_without_tensorflow

# Keys of a shipped model's config.json that its ONNX file's config must repeat: what reads.
READING_KEYS = ("charset", "model", "language", "image_width",
                "frame_single_bands", "step")
# Common words and a Latin word among Hanzi, drawn in a face the zh model never trained on.
CHINESE_LINES = (u"\u4f7f\u7528\u8bf4\u660e", u"apt-get \u5b89\u88c5 \u6570\u636e\u6587\u4ef6",
                 u"\u4eca\u5929\u7684\u5929\u6c14\u5f88\u597d", u"\u6570\u636e\u6587\u4ef6")


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_model_travels_as_the_onnx_export_of_its_checkpoint(name):
    """The file holds its checkpoint's frames (crnn-export's own check, on a probe batch) and
    config: a checkpoint replaced without exporting again fails here
    (python scripts/export_shipped_onnx.py NAME)."""
    import onnxruntime
    from crnn_multigpu.ocr.onnx_export import check_frames
    path = shipped_model(name, engine="onnx")
    assert path == os.path.join(shipped_model(name), "model.onnx")
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    config = json.loads(session.get_modelmeta().custom_metadata_map["config"])
    with open(os.path.join(shipped_model(name), "config.json")) as stream:
        shipped = json.load(stream)
    assert {key: config.get(key) for key in READING_KEYS} == \
        {key: shipped.get(key) for key in READING_KEYS}
    recognizer = Recognizer.shipped(name)
    try:
        assert config["exported_from"] == "models/%s/checkpoints/%s" % (
            name, os.path.basename(recognizer.checkpoint))
        with open(path, "rb") as stream:
            check_frames(recognizer, stream.read())
        assert OnnxRecognizer.shipped(name).language.name == recognizer.language.name
    finally:
        recognizer.close()


def chinese_page():
    """A page of :data:`CHINESE_LINES` in WenQuanYi Micro Hei, 28 px, at 150 dpi."""
    page = Image.new("L", (1000, 700), 255)
    draw, font = ImageDraw.Draw(page), load_font(MICROHEI, 28)
    for number, text in enumerate(CHINESE_LINES):
        draw.text((90, 90 + 60 * number), text, fill=20, font=font)
    return page


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Crops, lines, pages and PDFs in English and Chinese: ``{name: absolute path}``."""
    folder = tmp_path_factory.mktemp("inputs")
    from test_page import render_page
    paths = {name: str(folder / name) for name in (
        "word.png", "line.png", "page.png", "doc.pdf", "zh-word.png", "zh-line.png",
        "zh-page.png", "zh-scan.pdf")}
    draw_word("Welcome", FACES[0]).save(paths["word.png"])
    draw_word("Route 66, exit 12", FACES[1]).save(paths["line.png"])
    render_page()[0].save(paths["page.png"])
    write_text_pdf(paths["doc.pdf"], ["Chapter one begins here.", None,
                                      "It has two short lines."],
                   os.path.join(DEJAVU, "DejaVuSerif.ttf"), size=14)
    print_line(CHINESE_LINES[0]).save(paths["zh-word.png"])
    print_line(CHINESE_LINES[1]).save(paths["zh-line.png"])
    chinese_page().save(paths["zh-page.png"])
    chinese_page().save(paths["zh-scan.pdf"], "PDF", resolution=150.0)  # a scan as a PDF
    return paths


# What is read, by which shipped model: crops, lines, pages and PDFs (--dpi 150: the Chinese
# scan's own resolution). Each runs with --engine onnx where TensorFlow cannot be imported and
# with TensorFlow, which reads the checkpoints.
CASES = [
    ["word.png", "line.png"],                        # the text model by default
    ["--model", "words", "word.png"],
    ["--model", "text", "--lines", "line.png"],
    ["--page", "page.png", "doc.pdf"],
    ["--model", "zh", "zh-word.png", "zh-line.png"],  # with its character model, by default
    ["--model", "zh", "--lines", "zh-line.png"],
    ["--model", "zh", "--page", "--dpi", "150", "zh-page.png", "zh-scan.pdf"],
]


def test_the_shipped_models_read_without_tensorflow_as_with_it(inputs, tmp_path, capsys):
    argv_lists = [[inputs.get(arg, arg) for arg in case] for case in CASES]
    without, _ = predict_without_tensorflow([argv + ["--engine", "onnx"] for argv in argv_lists],
                                            tmp_path)
    for argv, (code, out, err) in zip(argv_lists, without):
        assert code == 0 and "Traceback" not in err, (argv, err)
        want = cli(predict.main, argv, capsys)
        assert want[0] == 0 and out == want[1], (argv, out, want[1])
    words, lines = without[1][1], without[2][1]
    assert words.split("\t")[1] == "welcome\n" and lines.split("\t")[1] == "Route 66, exit 12\n"
    pages = without[3][1].split("\f")
    assert len(pages) == 2 and len(pages[0].splitlines()) > 5, pages
    assert pages[1].splitlines() == ["Chapter one begins here.", "It has two short lines."]
    chinese = without[6][1].split("\f")
    assert len(chinese) == 2 and chinese[0] == chinese[1], chinese  # the page and its PDF
    assert len(chinese[0].splitlines()) == len(CHINESE_LINES)
    assert sum(CHINESE_LINES[0] in line for line in chinese[0].splitlines()) == 1, chinese


def test_a_shipped_folder_reads_with_either_engine_as_a_checkpoint(inputs, capsys):
    """A shipped model's folder holds a checkpoint and its ONNX file: --checkpoint takes it
    with both engines, and --engine onnx without --model reads with the text model."""
    folder, word = shipped_model("text"), inputs["word.png"]
    outputs = [cli(predict.main, argv + [word], capsys)[:2] for argv in (
        ["--checkpoint", folder], ["--checkpoint", folder, "--engine", "onnx"],
        ["--engine", "onnx"])]
    assert outputs == [(0, "%s\tWelcome\n" % word)] * 3


def test_a_shipped_model_without_its_onnx_file_says_how_to_export_it(inputs, tmp_path, capsys,
                                                                    monkeypatch):
    from crnn_multigpu.ocr import shipped
    os.makedirs(str(tmp_path / "zh"))
    shutil.copy(os.path.join(shipped_model("zh"), "config.json"), str(tmp_path / "zh"))
    monkeypatch.setattr(shipped, "_package_folder", lambda: str(tmp_path))
    code, out, err = cli(predict.main, ["--engine", "onnx", "--model", "zh",
                                        inputs["zh-word.png"]], capsys)
    line = one_error_line(code, err)
    assert "the shipped model zh has no model.onnx in %s" % (tmp_path / "zh") in line
    assert "python scripts/export_shipped_onnx.py zh" in line and not out
    with pytest.raises(ValueError, match="no engine is called 'torch': the engines are tf, onnx"):
        shipped_model("zh", engine="torch")
