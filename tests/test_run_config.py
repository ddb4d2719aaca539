"""``ocr.run_config.RunConfig``, a run folder's config.json as one object: the shipped
models' files read and write back unchanged, a bad file is one line naming it, and a run
trained in parts keeps each part's settings."""
import json
import os

import pytest

from crnn_multigpu.ocr.run_config import CONFIG_NAME, RunConfig

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")


@pytest.mark.parametrize("name", ["text", "words", "zh"])
def test_a_shipped_models_config_reads_and_writes_back_unchanged(name, tmp_path):
    path = os.path.join(MODELS, name, CONFIG_NAME)
    with open(path, encoding="utf-8") as stream:
        data = json.load(stream)
    config = RunConfig.read(os.path.dirname(path))
    assert config.to_json() == data
    assert (config.charset, config.model) == (data["charset"], data["model"])
    assert config.language == data.get("language")  # words predates "language" and more
    assert config.model_class == data.get("model_class")
    config.write(str(tmp_path))
    assert RunConfig.read(str(tmp_path)) == config


def written(tmp_path, text):
    with open(str(tmp_path / CONFIG_NAME), "w", encoding="utf-8") as stream:
        stream.write(text)
    return str(tmp_path / CONFIG_NAME)


GOOD = dict(model={"num_classes": 3}, charset="ab")


@pytest.mark.parametrize("data, message", [
    ([1, 2], "holds list, not a run configuration (a JSON object)"),
    ({"charset": "ab"}, "lacks 'model': it was not written by crnn-train; restore it or retrain"),
    (dict(GOOD, charset=3), "'charset' must be a str, got 3"),
    (dict(GOOD, model={}), "model 'num_classes' must be a positive whole number, got None"),
    (dict(GOOD, model={"num_classes": True}), "'num_classes' must be a positive whole number"),
    (dict(GOOD, charset="a"), "its charset has 1 characters but the model has 3 classes"),
    (dict(GOOD, model_class=None), "'model_class' must be a string module:Class, got None"),
    (dict(GOOD, frame_single_bands=1), "'frame_single_bands' must be true or false, got 1"),
])
def test_a_bad_config_is_one_line_naming_the_file(tmp_path, data, message):
    path = written(tmp_path, json.dumps(data))
    with pytest.raises(ValueError) as error:
        RunConfig.read(str(tmp_path))
    assert str(error.value).startswith(path) and message in str(error.value)
    assert "\n" not in str(error.value)


def test_a_missing_or_unreadable_config_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a training run directory"):
        RunConfig.read(str(tmp_path))
    written(tmp_path, "{model: ")
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        RunConfig.read(str(tmp_path))


def part(from_step, **settings):
    return dict(from_step=from_step, **settings)


def test_a_first_part_starts_the_history():
    config = RunConfig(training={"seed": 0}, **GOOD).continuing(None, part(0, seed=0))
    assert config.parts == [{"from_step": 0, "seed": 0}]
    assert config.to_json()["parts"] == config.parts


def test_a_resume_adds_a_part_only_when_its_settings_differ():
    first = RunConfig(training={"seed": 0}, **GOOD).continuing(None, part(0, seed=0))
    same = RunConfig(training={"seed": 0}, **GOOD).continuing(first, part(4, seed=0))
    assert same.parts == [{"from_step": 0, "seed": 0}]
    other = RunConfig(training={"seed": 5}, **GOOD).continuing(same, part(4, seed=5))
    assert other.parts == [{"from_step": 0, "seed": 0}, {"from_step": 4, "seed": 5}]
    assert other.training == {"seed": 5}


def test_a_run_from_before_parts_becomes_the_first_part_and_keeps_its_other_keys():
    """The first part holds only what the old run recorded; keys this one does not write
    (an export's step, framing) are kept."""
    old = RunConfig.from_json(dict(GOOD, seed=1, frame_single_bands=True, step=7), "old")
    resumed = RunConfig(training={"seed": 1, "lr": 0.1}, model_class="m:C", **GOOD).continuing(
        old, part(7, seed=1, lr=0.1))
    assert resumed.parts == [{"from_step": 0, "seed": 1}, {"from_step": 7, "seed": 1, "lr": 0.1}]
    assert resumed.frame_single_bands and resumed.extra == {"step": 7}
    assert resumed.to_json() == dict(GOOD, seed=1, lr=0.1, model_class="m:C", image_width=None,
                                     frame_single_bands=True, step=7, parts=resumed.parts)
