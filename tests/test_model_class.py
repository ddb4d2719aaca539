"""Any model class in the tools: crnn-train --model-class trains a model that is not CRNN
(tests/models_for_tools.py: all-convolutional, the width downsampled by 8), its config.json
names the class, and crnn-evaluate, crnn-predict and crnn-export read the run without the flag.
A --model-class that cannot be used is one error line in every tool."""
import json
import os
import shutil

import numpy as np
import pytest

from assertions import levenshtein, one_error_line, run_tool
from crnn_multigpu.cli import evaluate, export, predict, train
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import load_image, make_batch, read_labels
from crnn_multigpu.datasets.images import grey_pixels, normalise
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.text_box import as_capitals, frame_text
from crnn_multigpu.datasets.batching import TIME_STEP_WIDTH
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.runtime.checkpoints import latest_checkpoint

SPEC = "tests.models_for_tools:SmallConvCTC"
STEPS = 6


@pytest.fixture(scope="module")
def run(tiny_dataset, tmp_path_factory):
    """``(run dir, stdout, stderr)`` of 6 steps of SmallConvCTC on 2 towers, widths varying
    (so batches are padded to the class's multiple of 8), validated at the end."""
    out = str(tmp_path_factory.mktemp("model-class") / "run")
    code, stdout, stderr = run_tool(train.main, [
        "--train", tiny_dataset, "--val", tiny_dataset, "--out", out, "--model-class", SPEC,
        "--width", "0", "--steps", str(STEPS), "--towers", "2", "--batch-size", "8",
        "--log-every", "2", "--checkpoint-every", "3", "--validate-every", "0"])
    assert code == 0, stderr
    return out, stdout, stderr


def figures_of(stdout):
    """crnn-evaluate's figures (its last line) but the checkpoint's path."""
    figures = json.loads(stdout.strip().splitlines()[-1])
    figures.pop("checkpoint")
    return figures


def labelled_images(folder):
    """(image paths, labels) of a folder dataset, in labels.txt order."""
    rows = read_labels(os.path.join(folder, "labels.txt"))
    return [os.path.join(folder, path) for path, _ in rows], [text for _, text in rows]


def test_the_default_width_multiple_of_the_datasets_is_crnns():
    assert TIME_STEP_WIDTH == CRNN.DOWNSAMPLE


def test_train_builds_the_named_class_and_records_it(run, tiny_dataset):
    out, stdout, stderr = run
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["model_class"] == SPEC
    assert config["model"] == {"num_classes": Charset.default().num_classes}  # its one size
    assert "training %s on 2 tower(s)" % SPEC in stderr
    losses = [float(line.split("loss ")[1].split()[0]) for line in stderr.splitlines()
              if "] step " in line]
    assert len(losses) == STEPS // 2 and all(np.isfinite(losses)), stderr
    # Checkpoints at steps 3 and 6, holding SmallConvCTC's variables and none of CRNN's.
    assert latest_checkpoint(out).endswith("model.ckpt-%d" % STEPS)
    assert os.path.exists(os.path.join(out, "checkpoints", "model.ckpt-3.index"))
    reader = tf.train.load_checkpoint(latest_checkpoint(out))
    names = set(reader.get_variable_to_shape_map())
    assert reader.get_tensor("global_step") == STEPS
    model_names = set(name for name in names if name.startswith("smallconv/")
                      and "Adam" not in name)
    assert {"smallconv/conv0/kernel", "smallconv/classes/kernel"} <= model_names
    assert reader.get_variable_to_shape_map()["smallconv/classes/kernel"] == [4, 1, 32, 37]
    assert not [name for name in names if name.startswith("crnn/")]
    final = json.loads(stdout.strip().splitlines()[-1])
    assert final["step"] == STEPS and final["n"] == 48 and final["unreadable"] == 0


def test_evaluate_predict_and_export_read_the_run_without_the_flag(run, tiny_dataset, tmp_path,
                                                                  monkeypatch):
    out = run[0]
    # The tools also read every crop widened and inverted, keeping a more probable reading:
    # the reader's choices, not the model's. Off here, so that the exported model (one plain
    # reading) is compared with the tools' plain readings.
    from crnn_multigpu.ocr import text_reader
    monkeypatch.setattr(text_reader, "CONDENSED_MARGIN", float("inf"))
    monkeypatch.setattr(text_reader, "POLARITY_MARGIN", float("inf"))
    paths, truths = labelled_images(tiny_dataset)
    code, stdout, _ = run_tool(predict.main, ["--checkpoint", out, "--with-prob"] + paths)
    assert code == 0
    rows = [line.split("\t") for line in stdout.strip().splitlines()]
    assert [row[0] for row in rows] == paths
    charset = Charset.default()
    readings = [row[1] for row in rows]
    assert all(set(text) <= set(charset.chars) for text in readings), readings
    assert all(float(row[2]) <= 0 for row in rows)
    assert any(readings), "the model reads something after 6 steps"

    code, stdout, stderr = run_tool(evaluate.main, ["--checkpoint", out, "--data", tiny_dataset])
    assert code == 0, stderr
    figures = json.loads(stdout.strip().splitlines()[-1])

    # One image per batch, padded to a multiple of 8 of its own width: for some images that is
    # not what a multiple of 4 gives.
    assert any(0 < load_image(path).shape[1] % 8 <= 4 for path in paths)
    code, stdout, stderr = run_tool(evaluate.main, ["--checkpoint", out, "--data", tiny_dataset,
                                                    "--batch-size", "1"])
    assert code == 0 and json.loads(stdout.strip().splitlines()[-1])["n"] == 48, stderr

    # The SavedModel (TensorFlow ops only: loaded without the class) reads what predict read,
    # given the same batch padded to the class's multiple of 8.
    saved = str(tmp_path / "saved")
    assert run_tool(export.main, ["--checkpoint", out, "--out", saved])[0] == 0
    batch = make_batch([load_image(path) for path in paths], None, charset, None, 8)
    assert batch.images.shape[2] % 8 == 0
    with tf.Graph().as_default() as graph, tf.Session(graph=graph) as session:
        meta = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING], saved)
        signature = meta.signature_def["serving_default"]
        ids, log_probs = session.run(
            [signature.outputs["predict"].name, signature.outputs["log_prob"].name],
            {signature.inputs["images"].name: batch.images,
             signature.inputs["widths"].name: batch.widths})
    assert ids.dtype == np.int32 and ids.shape[0] == 48 and log_probs.shape == (48,)
    assert ((ids >= -1) & (ids < charset.num_classes - 1)).all()  # -1 padding, never the blank
    # crnn-evaluate reads the same images as training crops (load_image) in the same batch: its
    # figures are those of the recognizer's reading of them against the labels.
    recognizer = Recognizer(out)
    as_trained = recognizer.read_crops([load_image(path) for path in paths])[0]
    recognizer.close()
    distances = [levenshtein(read, truth) for read, truth in zip(as_trained, truths)]
    assert figures["n"] == 48 and figures["unreadable"] == 0
    assert figures["word_accuracy"] == pytest.approx(
        np.mean([read == truth for read, truth in zip(as_trained, truths)]))
    assert figures["cer"] == pytest.approx(sum(distances) / float(sum(map(len, truths))))
    # crnn-predict reads a crop's text cut as a training line (ocr.text_box): the same arrays
    # (a crop of one band of ink it also reads framed as capitals, which the model alone does
    # not: compare the others).
    arrays = [normalise(frame_text(grey_pixels(path)), 32) for path in paths]
    alone = np.array([as_capitals(array) is None for array in arrays])
    assert alone.sum() >= 12, alone.sum()
    cut = make_batch(arrays, None, charset, None, 8)
    with tf.Graph().as_default() as graph, tf.Session(graph=graph) as session:
        tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING], saved)
        ids, log_probs = session.run(
            [signature.outputs["predict"].name, signature.outputs["log_prob"].name],
            {signature.inputs["images"].name: cut.images,
             signature.inputs["widths"].name: cut.widths})
    exported = [charset.decode([i for i in row if i >= 0]) for row in ids]
    assert [e for e, keep in zip(exported, alone) if keep] == \
        [r for r, keep in zip(readings, alone) if keep]
    np.testing.assert_allclose(log_probs[alone],
                               [float(row[2]) for row, keep in zip(rows, alone) if keep],
                               atol=1e-4)

    # The slim run folder names the class too, and reads the same (the same batch: the padding
    # of a batch reaches the right edge of its narrower images).
    slim = str(tmp_path / "slim")
    assert run_tool(export.main, ["--checkpoint", out, "--out", slim,
                                  "--format", "checkpoint"])[0] == 0
    assert json.load(open(os.path.join(slim, "config.json")))["model_class"] == SPEC
    code, stdout, _ = run_tool(predict.main, ["--checkpoint", slim] + paths)
    assert code == 0 and [line.split("\t")[1] for line in stdout.strip().splitlines()] == readings


def test_the_example_class_exports_to_onnx_and_reads_there_as_in_tensorflow(run, tiny_dataset,
                                                                          tmp_path):
    """Its DOWNSAMPLE of 8 reaches the export's probe batch (a width of 100 px once made the
    graph's own check fail, reported as a full disk)."""
    out, exported = run[0], str(tmp_path / "onnx")
    code, _, stderr = run_tool(export.main, ["--checkpoint", out, "--out", exported,
                                             "--format", "onnx"])
    assert code == 0, stderr
    paths, _ = labelled_images(tiny_dataset)
    in_tf = run_tool(predict.main, ["--checkpoint", out] + paths)
    in_onnx = run_tool(predict.main, ["--engine", "onnx", "--checkpoint", exported] + paths)
    assert in_tf[0] == in_onnx[0] == 0 and in_onnx[1] == in_tf[1] and in_tf[1].strip()


def test_a_class_without_frames_is_refused_by_the_onnx_export_in_one_line(run, tmp_path):
    exported = str(tmp_path / "onnx")
    code, _, stderr = run_tool(export.main, [
        "--checkpoint", run[0], "--out", exported, "--format", "onnx", "--model-class",
        "tests.models_for_tools:WithoutFrames"])
    assert one_error_line(code, stderr) == (
        "error: --format onnx exports a model's frames before decoding; WithoutFrames has no "
        "log_probs_per_frame (see crnn_multigpu.ocr.model_class)")
    assert not os.path.exists(exported) and os.listdir(str(tmp_path)) == []


def test_the_flag_names_a_class_the_config_cannot(run, tiny_dataset, tmp_path):
    """A run whose class has moved: one error line naming its config.json, and --model-class
    reads it all the same."""
    copy = str(tmp_path / "moved")
    shutil.copytree(run[0], copy)
    path = os.path.join(copy, "config.json")
    config = json.load(open(path))
    config["model_class"] = "moved.away:SmallConvCTC"
    with open(path, "w") as stream:
        json.dump(config, stream)
    argv = ["--checkpoint", copy, "--data", tiny_dataset]
    line = one_error_line(*run_tool(evaluate.main, argv)[::2])
    assert line == ("error: %s names model class moved.away:SmallConvCTC; moved.away:SmallConvCTC: "
                    "cannot import module moved.away (ModuleNotFoundError: No module named "
                    "'moved'): make it importable, or name the class (--model-class, "
                    "Recognizer(model_cls=...))" % path)
    code, moved, _ = run_tool(evaluate.main, argv + ["--model-class", SPEC])
    code_original, original, _ = run_tool(evaluate.main, ["--checkpoint", run[0], "--data",
                                                          tiny_dataset])
    assert code == code_original == 0
    assert figures_of(moved) == figures_of(original)
    # Another class than the run's: the line says which the run was trained with (issue 35:
    # it blamed config.json), and why the other cannot read it (its check of the arguments).
    line = one_error_line(*run_tool(evaluate.main, argv + [
        "--model-class", "crnn_multigpu.ocr.crnn:CRNN"])[::2])
    assert line == ("error: %s was trained with moved.away:SmallConvCTC (its config.json says so) "
                    "but --model-class names crnn_multigpu.ocr.crnn:CRNN, which cannot read it "
                    "(model 'lstm_units' must be a positive whole number, got None); drop "
                    "--model-class, or name the class the run was trained with" % copy)


BAD_CLASSES = {
    "tests.models_for_tools": "must be module:Class (e.g. crnn_multigpu.ocr.crnn:CRNN), got "
                              "'tests.models_for_tools'",
    "no_such_module_here:Model": "no_such_module_here:Model: cannot import module "
                                 "no_such_module_here (ModuleNotFoundError: No module named "
                                 "'no_such_module_here')",
    "tests.models_for_tools:Missing": "tests.models_for_tools:Missing: module "
                                      "tests.models_for_tools has no 'Missing'",
    "tests.toy_models:Linear": "tests.toy_models:Linear lacks DOWNSAMPLE, the image pixels per "
                               "CTC time step that the tools need (see "
                               "crnn_multigpu.ocr.model_class)",
    "tests.toy_models:initial_weights": "tests.toy_models:initial_weights is a function, not a "
                                        "class (see crnn_multigpu.ocr.model_class)",
}


@pytest.mark.parametrize("value", sorted(BAD_CLASSES))
@pytest.mark.parametrize("tool", ["train", "evaluate", "predict", "export"])
def test_a_bad_model_class_is_one_error_line(tool, value, tiny_dataset, tmp_path):
    out = str(tmp_path / "out")
    image = labelled_images(tiny_dataset)[0][0]
    # (--steps 2: a tool that ignored the flag would not train for long before failing the test.)
    main, argv = {"train": (train.main, ["--train", tiny_dataset, "--out", out, "--steps", "2"]),
                  "evaluate": (evaluate.main, ["--data", tiny_dataset]),
                  "predict": (predict.main, [image]),
                  "export": (export.main, ["--checkpoint", shipped_model("words"),
                                           "--out", out])}[tool]
    code, _, err = run_tool(main, argv + ["--model-class", value])
    assert one_error_line(code, err) == "error: --model-class " + BAD_CLASSES[value]
    assert os.listdir(str(tmp_path)) == [], "nothing written"


@pytest.mark.parametrize("argv, message", [
    ([], "--width must be a multiple of 8 (the DOWNSAMPLE of %s), got 100; or 0 for varying "
         "widths" % SPEC),
    (["--width", "0", "--model", "tiny"], "--model tiny is not a size of %s (its sizes: default)"
     % SPEC),
])
def test_train_checks_size_and_width_against_the_class(argv, message, tiny_dataset, tmp_path):
    out = str(tmp_path / "out")
    code, _, err = run_tool(train.main, ["--train", tiny_dataset, "--out", out, "--steps", "2",
                                         "--model-class", SPEC] + argv)
    assert one_error_line(code, err) == "error: " + message
    assert not os.path.exists(out)


def test_resume_with_another_class_is_refused(run, tiny_dataset, tmp_path):
    copy = str(tmp_path / "copy")
    shutil.copytree(run[0], copy)
    code, _, err = run_tool(train.main, ["--train", tiny_dataset, "--out", copy, "--resume",
                                         "--steps", str(STEPS + 2), "--model", "tiny"])
    assert one_error_line(code, err) == (
        "error: --resume: model_class of %s differs from this command's (%s vs "
        "crnn_multigpu.ocr.crnn:CRNN); use the same settings or another --out" % (copy, SPEC))
    assert json.load(open(os.path.join(copy, "config.json")))["model_class"] == SPEC
