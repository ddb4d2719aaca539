"""Run files that disagree: a config.json that is damaged, short, or of another model is one
error line naming the file, in every tool, and --resume never rewrites a run's config."""
import json
import os
import shutil

import pytest

from assertions import one_error_line
from crnn_multigpu.cli import evaluate, export, predict, train
from crnn_multigpu.compat import tf
from tiny_runs import copy_of_run, options, train_run

TINY_SETTINGS = dict(model="tiny", batch_size=8, checkpoint_every=0, log_every=0)
TINY = options(**TINY_SETTINGS)


@pytest.fixture(scope="module")
def run_dir(tiny_dataset, tmp_path_factory):
    return train_run(tmp_path_factory.mktemp("run-files"),
                     train=tiny_dataset, steps=2, **TINY_SETTINGS)


def error_line(main, argv, capsys):
    with tf.Graph().as_default():
        code = main(argv)
    return one_error_line(code, capsys.readouterr().err)


def damaged_copy(run_dir, tmp_path, change):
    copy = copy_of_run(run_dir, tmp_path, "copy")
    path = os.path.join(copy, "config.json")
    config = json.load(open(path))
    text = change(config)
    with open(path, "w") as stream:
        stream.write(text if isinstance(text, str) else json.dumps(config))
    return copy


def short_charset(config):
    config["charset"] = config["charset"][:-1]


def other_model(config):
    config["model"]["lstm_units"] = 48


CASES = {
    "charset one short": (short_charset, "its charset has 35 characters but the model has 37 "
                                         "classes"),
    "empty object": (lambda config: "{}", "lacks 'model'"),
    "no model": (lambda config: config.pop("model") and None, "lacks 'model'"),
    "not JSON": (lambda config: "{model: tiny", "is not valid JSON"),
    "not UTF-8": (None, "is not UTF-8 text"),
    "a list": (lambda config: "[1, 2]", "holds list, not a run configuration"),
    "channels": (lambda config: config["model"].update(channels=[8, 16]) and None,
                 "'channels' must be 7 positive whole numbers"),
    "another model": (other_model, "that config.json belongs to another model"),
    "framing not a bool": (lambda config: config.update(frame_single_bands="yes") and None,
                           "'frame_single_bands' must be true or false, got 'yes'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("tool", ["evaluate", "predict", "export"])
def test_a_bad_config_is_one_line_naming_it(case, tool, run_dir, tiny_dataset, tmp_path, capsys):
    change, message = CASES[case]
    if case == "not UTF-8":
        copy = copy_of_run(run_dir, tmp_path, "copy")
        with open(os.path.join(copy, "config.json"), "wb") as stream:
            stream.write(b'{"model": "\xff"}')
    else:
        copy = damaged_copy(run_dir, tmp_path, change)
    image = os.path.join(tiny_dataset, "images", sorted(os.listdir(
        os.path.join(tiny_dataset, "images")))[0])
    argv = {"evaluate": ["--checkpoint", copy, "--data", tiny_dataset],
            "predict": ["--checkpoint", copy, image],
            "export": ["--checkpoint", copy, "--out", str(tmp_path / "exported")]}[tool]
    line = error_line(getattr({"evaluate": evaluate, "predict": predict, "export": export}[tool],
                              "main"), argv, capsys)
    assert message in line and os.path.join(copy, "config.json") in line, line
    assert not os.path.exists(str(tmp_path / "exported"))


def test_checkpoint_naming_a_file_says_so(run_dir, tiny_dataset, capsys):
    line = error_line(evaluate.main, ["--checkpoint", os.path.join(run_dir, "config.json"),
                                      "--data", tiny_dataset], capsys)
    assert "config.json is a file; pass the run directory that holds it (%s)" % run_dir in line


def test_resume_without_config_refuses_and_keeps_the_run(run_dir, tiny_dataset, tmp_path, capsys):
    copy = copy_of_run(run_dir, tmp_path, "copy")
    os.remove(os.path.join(copy, "config.json"))
    line = error_line(train.main, ["--train", tiny_dataset, "--out", copy, "--steps", "4",
                                   "--resume", "--model", "small", "--batch-size", "8"], capsys)
    assert "holds checkpoints but no config.json" in line
    assert not os.path.exists(os.path.join(copy, "config.json")), "nothing is rewritten"


def test_a_model_only_checkpoint_exports_again(tmp_path, capsys):
    shipped = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "models", "words")
    out = str(tmp_path / "again")
    with tf.Graph().as_default():
        assert export.main(["--checkpoint", shipped, "--out", out, "--format", "checkpoint"]) == 0
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["step"] == json.load(open(os.path.join(shipped, "config.json")))["step"]
    assert os.path.exists(os.path.join(out, "checkpoints", "model.ckpt-%d.index" % config["step"]))


@pytest.mark.parametrize("tool", ["predict", "evaluate", "predict --page"])
def test_picture_never_replaces_a_file_unless_asked(tool, run_dir, tiny_dataset, tmp_path, capsys):
    image = os.path.join(tiny_dataset, "images", sorted(os.listdir(
        os.path.join(tiny_dataset, "images")))[0])
    victim = str(tmp_path / "input.png")
    shutil.copy(image, victim)
    before = open(victim, "rb").read()
    main = {"predict": predict, "evaluate": evaluate, "predict --page": predict}[tool].main
    # --page reads with a model of whole lines: the shipped text model, not the tiny 0-9a-z run.
    argv = {"predict": [image, "--checkpoint", run_dir],
            "evaluate": ["--data", tiny_dataset, "--checkpoint", run_dir],
            "predict --page": ["--page", image]}[tool]
    line = error_line(main, argv + ["--picture", victim], capsys)
    assert "--picture %s already exists" % victim in line and "--overwrite" in line
    assert open(victim, "rb").read() == before
    with tf.Graph().as_default():
        assert main(argv + ["--picture", victim, "--overwrite"]) == 0
    assert open(victim, "rb").read() != before


def test_absurd_step_counts_are_refused_by_the_arguments(tiny_dataset, tmp_path, capsys):
    line = error_line(train.main, ["--train", tiny_dataset, "--out", str(tmp_path / "run"),
                                   "--steps", "99999999999999999999"], capsys)
    assert line == "error: --steps must be at most 9007199254740992, got 99999999999999999999"


def test_a_validation_set_without_readable_images_is_refused(tiny_dataset, tmp_path, capsys):
    missing = str(tmp_path / "missing")
    os.makedirs(missing)
    with open(os.path.join(tiny_dataset, "labels.txt")) as labels, \
            open(os.path.join(missing, "labels.txt"), "w") as copy:
        copy.write(labels.read())  # the same labels, but no images/ beside them
    line = error_line(train.main, ["--train", tiny_dataset, "--val", missing, "--out",
                                   str(tmp_path / "run"), "--steps", "2"] + TINY, capsys)
    assert "none of the 48 image(s) of --val %s could be read" % missing in line
    assert not os.path.exists(str(tmp_path / "run" / "checkpoints"))


def test_a_charset_file_that_is_not_utf8_is_named(tiny_dataset, tmp_path, capsys):
    charset = tmp_path / "latin1.txt"
    charset.write_bytes(b"a\n\xe9\nb\n")
    line = error_line(train.main, ["--train", tiny_dataset, "--out", str(tmp_path / "run"),
                                   "--charset", str(charset)] + TINY, capsys)
    assert line == "error: charset file %s is not UTF-8 text (byte 2, line 2); save it as UTF-8" \
        % charset


def test_config_json_is_readable_as_the_umask_says(run_dir):
    """The run's config.json is written whole through a temporary file; it gets the umask's
    permissions, not a temporary file's 0600 (a shipped model's config must be readable by all)."""
    umask = os.umask(0)
    os.umask(umask)
    mode = os.stat(os.path.join(run_dir, "config.json")).st_mode & 0o777
    assert mode == 0o666 & ~umask, oct(mode)
