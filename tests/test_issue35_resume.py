"""Issue 35: ``crnn-train --resume`` never loses the record of how the earlier steps were trained.

A resume whose --seed, --batch-size, --lr, --augment, --reframe, --stroke, --sync-bn, --clip-norm,
--on-nonfinite or --train differs from the run's config.json is refused in one line naming each
setting and its two values, config.json untouched, unless --allow-changed-settings (the list
is read off ``ocr.TrainingSettings``: test_training_settings.py checks every setting); a resume
that goes on keeps every part's settings under "parts" in config.json. --steps may grow (train
longer) without the flag. Before, any of them was accepted and config.json rewritten.
"""
import json
import os
import shutil

import pytest

from assertions import one_error_line
from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf
from crnn_multigpu.runtime.checkpoints import latest_checkpoint
from tiny_runs import copy_of_run, options, train_run

TINY_SETTINGS = dict(model="tiny", batch_size=8, log_every=0, validate_every=0,
                     checkpoint_every=0, steps=4)
TINY = options(**TINY_SETTINGS)


def run_train(argv, capsys):
    with tf.Graph().as_default():
        code = train.main(argv)
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def stopped_run(tiny_dataset, tmp_path_factory):
    """A tiny run of 4 steps stopped with a checkpoint at step 2 (seed 0, lr 0.001, batch 8)."""
    return train_run(tmp_path_factory.mktemp("issue35-resume"),
                     train=tiny_dataset, stop_at=2, **TINY_SETTINGS)


@pytest.fixture
def run(stopped_run, tmp_path):
    return copy_of_run(stopped_run, tmp_path)


def config_of(run_dir):
    with open(os.path.join(run_dir, "config.json")) as stream:
        return json.load(stream)


@pytest.fixture(scope="module")
def other_train_set(tiny_dataset, tmp_path_factory):
    copy = str(tmp_path_factory.mktemp("issue35-other") / "train")
    shutil.copytree(tiny_dataset, copy)
    return copy


CHANGES = {
    "--seed": (["--seed", "5"], "--seed 0 -> 5"),
    "--batch-size": (["--batch-size", "16"], "--batch-size 8 -> 16"),
    "--lr": (["--lr", "0.01"], "--lr 0.001 -> 0.01"),
    "--augment": (["--augment", "0.5"], "--augment 0.0 -> 0.5"),
    "--reframe": (["--reframe", "0.5"], "--reframe 0.0 -> 0.5"),
    "--stroke": (["--stroke", "0.5"], "--stroke 0.0 -> 0.5"),
    "--sync-bn": (["--sync-bn"], "--sync-bn false -> true"),
    "--clip-norm": (["--clip-norm", "1"], "--clip-norm 5.0 -> 1.0"),
    "--on-nonfinite": (["--on-nonfinite", "skip"], '--on-nonfinite "stop" -> "skip"'),
}


def resume_argv(run_dir, train_set, *extra):
    return ["--train", train_set, "--out", run_dir, "--resume"] + TINY + list(extra)


@pytest.mark.parametrize("flag", sorted(CHANGES) + ["--train"])
def test_a_changed_setting_is_refused_in_one_line_naming_both_values(
        flag, run, tiny_dataset, other_train_set, capsys):
    before = open(os.path.join(run, "config.json")).read()
    if flag == "--train":
        extra, named = [], '--train "%s" -> "%s"' % (tiny_dataset, other_train_set)
        argv = resume_argv(run, other_train_set)
    else:
        extra, named = CHANGES[flag]
        argv = resume_argv(run, tiny_dataset, *extra)
    line = one_error_line(*run_train(argv, capsys))
    assert line == ("error: --resume: this command changes settings %s was trained with (%s); "
                    "pass the run's own, or --allow-changed-settings to train on with these "
                    "(config.json keeps each part's under \"parts\")" % (run, named)), line
    assert open(os.path.join(run, "config.json")).read() == before
    assert latest_checkpoint(run).endswith("model.ckpt-2")


def test_every_changed_setting_is_named(run, tiny_dataset, capsys):
    line = one_error_line(*run_train(resume_argv(run, tiny_dataset, "--seed", "3", "--lr",
                                                 "0.002", "--steps", "6"), capsys))
    assert "(--lr 0.001 -> 0.002, --seed 0 -> 3)" in line and "--steps" not in line, line


def test_allowed_changes_go_on_and_keep_every_part(run, tiny_dataset, capsys):
    first = config_of(run)
    code, err = run_train(resume_argv(run, tiny_dataset, "--seed", "5", "--lr", "0.0005",
                                      "--allow-changed-settings"), capsys)
    assert code == 0 and "resumed from" in err, err
    config = config_of(run)
    assert (config["seed"], config["lr"]) == (5, 0.0005)
    assert latest_checkpoint(run).endswith("model.ckpt-4")
    assert [(part["from_step"], part["seed"], part["lr"]) for part in config["parts"]] == [
        (0, 0, 0.001), (2, 5, 0.0005)]
    assert config["parts"][0] == first["parts"][0]
    for part in config["parts"]:
        assert part["batch_size"] == 8 and part["train"] == tiny_dataset and part["steps"] == 4


def test_training_longer_needs_no_flag_and_is_recorded(run, tiny_dataset, capsys):
    code, err = run_train(resume_argv(run, tiny_dataset, "--steps", "5"), capsys)
    assert code == 0, err
    assert [(part["from_step"], part["steps"]) for part in config_of(run)["parts"]] == [
        (0, 4), (2, 5)]
    assert latest_checkpoint(run).endswith("model.ckpt-5")


def test_a_resume_with_the_same_settings_adds_no_part(run, tiny_dataset, capsys):
    assert [part["from_step"] for part in config_of(run)["parts"]] == [0]
    code, err = run_train(resume_argv(run, tiny_dataset), capsys)
    assert code == 0, err
    assert [part["from_step"] for part in config_of(run)["parts"]] == [0]


def test_a_run_from_before_parts_becomes_its_first_part(run, tiny_dataset, capsys):
    """config.json of a run trained before this change has no "parts": it is the first."""
    config = config_of(run)
    del config["parts"]
    config["frame_single_bands"] = True  # a key crnn-train does not write is kept
    with open(os.path.join(run, "config.json"), "w") as stream:
        json.dump(config, stream)
    code, err = run_train(resume_argv(run, tiny_dataset, "--steps", "5"), capsys)
    assert code == 0, err
    after = config_of(run)
    assert [(part["from_step"], part["steps"]) for part in after["parts"]] == [(0, 4), (2, 5)]
    assert after["frame_single_bands"] is True
