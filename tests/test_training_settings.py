"""Issues 53 and 54: training's typed settings, ``ocr.TrainingSettings``, and the run schema read
off them. Every setting that changes training is checked on a resume (the model and the data
order always refused, how the steps train refused unless allowed, where they compute free),
crnn-train is argparse over the same fields and defaults, ``ocr.TrainingRun`` trains as
crnn-train does, and a resume with nothing to resume is refused in one line."""
import json
import os
from dataclasses import fields, replace

import pytest

from assertions import one_error_line
from crnn_multigpu import ocr
from crnn_multigpu.cli import train
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.ocr.model_class import chosen
from crnn_multigpu.ocr.run_config import RunConfig
from crnn_multigpu.ocr.run_folder import check_resumed_settings, run_config
from crnn_multigpu.ocr.training_settings import TRAINING_KEYS, TrainingSettings
from tiny_runs import options

NAMES = sorted(item.name for item in fields(TrainingSettings))

# Every setting, a second value of it, and what a resume that changes it to that value must
# do: refuse naming the model's config.json key (never changes), refuse naming the option
# unless allowed (changes how the coming steps train), or go on (None: the same training).
CHANGES = {
    "model_class": (dict(model_class="models_for_tools:SmallConvCTC"), "model_class"),
    "model": (dict(model="medium"), "model"),
    "charset": (dict(charset="CHARSET"), "charset"),
    "width": (dict(width=100), "image_width"),
    "bucket": (dict(bucket=8), "bucket"),
    "precision": (dict(precision="bfloat16"), "precision"),
    "accumulate": (dict(accumulate=2), "accumulate"),
    "train": (dict(train="/elsewhere/train"), "--train"),
    "language": (dict(language="de"), "--language"),
    "augment": (dict(augment=0.5), "--augment"),
    "reframe": (dict(reframe=0.5), "--reframe"),
    "stroke": (dict(stroke=0.5), "--stroke"),
    "sync_bn": (dict(sync_bn=True), "--sync-bn"),
    "batch_size": (dict(batch_size=16), "--batch-size"),
    "lr": (dict(lr=0.01), "--lr"),
    "clip_norm": (dict(clip_norm=1.0), "--clip-norm"),
    "seed": (dict(seed=5), "--seed"),
    "on_nonfinite": (dict(on_nonfinite="skip"), "--on-nonfinite"),
    # Train longer; only the first part starts from another run's weights.
    "steps": (dict(steps=6000), None),
    "init_from": (dict(init_from="/other/run"), None),
    # Where and how often: the same steps.
    "out": (dict(out="/other/out"), None),
    "val": (dict(val="/some/val"), None),
    "stop_at": (dict(stop_at=10), None),
    "input": (dict(input="feed"), None),
    "xla": (dict(xla=True), None),
    "towers": (dict(towers=3), None),
    "strategy": (dict(strategy="replicated"), None),
    "all_reduce": (dict(all_reduce="ring", strategy="replicated"), None),
    "num_packs": (dict(num_packs=2), None),
    "cluster": (dict(cluster="cluster.json", input="feed"), None),
    "connect_timeout": (dict(connect_timeout=5.0), None),
    "step_timeout": (dict(step_timeout=5.0), None),
    "gpus_per_task": (dict(gpus_per_task=1), None),
    "resume": (dict(resume=True), None),
    "allow_changed_settings": (dict(allow_changed_settings=True), None),
    "checkpoint_every": (dict(checkpoint_every=7), None),
    "validate_every": (dict(validate_every=7), None),
    "validate_max": (dict(validate_max=7), None),
    "log_every": (dict(log_every=7), None),
}


def test_every_setting_is_classified_here():
    assert sorted(CHANGES) == NAMES


def config_of(settings, tmp_path):
    """The RunConfig crnn-train writes for ``settings`` (``charset`` "CHARSET": another one)."""
    settings = settings.checked()
    if settings.charset == "CHARSET":
        path = str(tmp_path / "charset.txt")
        with open(path, "w") as stream:
            stream.write("\n".join("abc") + "\n")
        settings = replace(settings, charset=path)
    charset = Charset.from_file(settings.charset) if settings.charset else Charset.default()
    return run_config(settings, charset, chosen(settings.model_class) or CRNN)


BASE = TrainingSettings(train="/data/train", out="/runs/run", width=0)


@pytest.mark.parametrize("name", NAMES)
def test_a_resume_refuses_what_changes_training(name, tmp_path):
    change, refusal = CHANGES[name]
    resumed = replace(BASE, **change)
    previous, config = config_of(BASE, tmp_path), config_of(resumed, tmp_path)
    resume = resumed.checked()
    if refusal is None:
        check_resumed_settings(resume, previous, config)
    elif refusal.startswith("--"):
        with pytest.raises(ValueError) as error:
            check_resumed_settings(resume, previous, config)
        before, after = (json.dumps(previous.to_json()[name]), json.dumps(config.to_json()[name]))
        assert "changes settings /runs/run was trained with (%s %s -> %s)" % (
            refusal, before, after) in str(error.value)
        check_resumed_settings(replace(resume, allow_changed_settings=True), previous, config)
    else:
        for allowed in (False, True):
            with pytest.raises(ValueError, match="--resume: %s of /runs/run differs from this "
                                                 "command's" % refusal):
                check_resumed_settings(replace(resume, allow_changed_settings=allowed), previous,
                                       config)


def test_a_run_from_before_a_setting_was_recorded_is_not_refused_it(tmp_path):
    """A run that recorded no clip norm (older versions) resumes with any."""
    previous = config_of(BASE, tmp_path)
    del previous.training["clip_norm"]
    check_resumed_settings(BASE, previous, config_of(replace(BASE, clip_norm=1.0), tmp_path))


def test_the_recorded_settings_read_back_as_training_settings(tmp_path):
    config = config_of(replace(BASE, init_from="relative/run"), tmp_path)
    data = config.to_json()
    assert set(TRAINING_KEYS) <= set(data) and set(config.training) == set(TRAINING_KEYS)
    assert data["train"] == "/data/train" and data["init_from"] == os.path.abspath("relative/run")
    assert data["bucket"] == 32 and data["clip_norm"] == 5.0 and "towers" not in data
    read = RunConfig.from_json(data, "config.json")
    assert read.training == config.training and read.extra == {}


def test_crnn_train_is_argparse_over_the_settings():
    """One option per field, of the same name and default (the library trains as the tool)."""
    parser = train.build_parser()
    options_of = dict((action.dest, action.default) for action in parser._actions
                      if action.dest not in ("help", "verbose"))
    assert sorted(options_of) == NAMES
    defaults = dict((item.name, item.default) for item in fields(TrainingSettings)
                    if item.name not in ("train", "out"))
    assert defaults == dict((name, options_of[name]) for name in defaults)


@pytest.mark.parametrize("change, message", [
    (dict(bucket=8, width=100), "--bucket 8 sorts batches by image width, which only varies"),
    (dict(all_reduce="ring"), "--all-reduce ring chooses how replicas are kept equal; it needs "
                              "--strategy replicated (got --strategy ps)"),
    (dict(cluster="c.json", input="dataset"), "use --input feed with --cluster"),
    (dict(model_class="no_such_module:Model"), "--model-class no_such_module:Model: cannot "
                                               "import module no_such_module"),
])
def test_contradicting_settings_are_one_line(change, message, tmp_path):
    with pytest.raises(ValueError) as error:
        ocr.TrainingRun(replace(BASE, out=str(tmp_path / "run"), **change)).run()
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not os.path.exists(str(tmp_path / "run"))


TINY = dict(model="tiny", batch_size=8, log_every=0, validate_every=0, checkpoint_every=0,
            steps=2, towers=1)


def test_the_library_trains_as_crnn_train_does(tiny_dataset, tmp_path, capsys):
    library, tool = str(tmp_path / "library"), str(tmp_path / "tool")
    with tf.Graph().as_default():
        result = ocr.TrainingRun(ocr.TrainingSettings(train=tiny_dataset, val=tiny_dataset,
                                                      out=library, **TINY)).run()
    assert (result.step, result.stopped_by) == (2, None)
    assert result.figures["n"] == 48 and result.figures["step"] == 2 and not result.unreadable
    with tf.Graph().as_default():
        assert train.main(["--train", tiny_dataset, "--val", tiny_dataset, "--out", tool] +
                          options(**TINY)) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result.figures
    assert RunConfig.read(library) == RunConfig.read(tool)


@pytest.mark.parametrize("folder", ["missing", "empty"])
def test_a_resume_with_nothing_to_resume_is_refused(folder, tiny_dataset, tmp_path, capsys):
    """A mistyped --out with --resume used to start a new run at step 0 without a word."""
    out = str(tmp_path / folder)
    if folder == "empty":
        os.mkdir(out)
    with tf.Graph().as_default():
        code = train.main(["--train", tiny_dataset, "--out", out, "--resume"] + options(**TINY))
    line = one_error_line(code, capsys.readouterr().err)
    assert line == ("error: --resume: %s holds no checkpoint of a run: nothing to resume; check "
                    "--out (the folder the run was trained into), or drop --resume to start a "
                    "new run there" % out), line
    if folder == "empty":
        assert os.listdir(out) == []
    else:
        assert not os.path.exists(out)


def test_a_resume_names_the_kept_setting_it_changes_before_reading_data(tiny_dataset, tmp_path,
                                                                      capsys):
    """A run of any width resumed by a command that leaves --width 0 out: the change is named,
    before the data is read (here it is not even there) and config.json is left as it was."""
    out = str(tmp_path / "run")
    with tf.Graph().as_default():
        assert train.main(["--train", tiny_dataset, "--out", out, "--width", "0"] +
                          options(**TINY)) == 0
    with open(os.path.join(out, "config.json")) as handle:
        recorded = handle.read()
    capsys.readouterr()
    with tf.Graph().as_default():
        code = train.main(["--train", str(tmp_path / "gone"), "--out", out, "--resume"] +
                          options(**dict(TINY, steps=4)))
    line = one_error_line(code, capsys.readouterr().err)
    assert line.startswith("error: --resume: image_width of %s differs" % out), line
    with open(os.path.join(out, "config.json")) as handle:
        assert handle.read() == recorded
