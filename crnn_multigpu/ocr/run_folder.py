"""A training run's folder: the run's config.json made from its :class:`TrainingSettings`,
checked against the run it resumes (what may change between the parts of a run, and what
never: both read off the settings' fields, ``ocr.training_settings``), and the checkpoint
``init_from`` starts from."""
import json
import os

from crnn_multigpu.ocr import model_class
from crnn_multigpu.ocr.run_config import CONFIG_NAME, RunConfig
from crnn_multigpu.ocr.shipped import resolve_run
from crnn_multigpu.ocr.training_settings import (ASKED_ON_RESUME, KEPT_ON_RESUME, PART_KEYS,
                                                 flag)
from crnn_multigpu.runtime.checkpoints import (checkpoint_step, ensure_writable,
                                               latest_checkpoint, require_checkpoint)


def model_kwargs(settings, model_cls, charset):
    """The constructor arguments of the size ``settings.model`` for ``model_cls`` (as
    config.json holds them, tuples as lists), checked with ``settings.width`` against the
    class's sizes and DOWNSAMPLE."""
    sizes = model_class.sizes(model_cls)
    size = settings.model or model_class.default_size(model_cls)
    if size not in sizes:
        raise ValueError("--model %s is not a size of %s (its sizes: %s)"
                         % (size, model_class.path_of(model_cls), ", ".join(sorted(sizes))))
    if settings.width % model_cls.DOWNSAMPLE:
        raise ValueError("--width must be a multiple of %d (the DOWNSAMPLE of %s), got %d; or "
                         "0 for varying widths" % (model_cls.DOWNSAMPLE,
                                                   model_class.path_of(model_cls),
                                                   settings.width))
    return json.loads(json.dumps(dict(sizes[size], num_classes=charset.num_classes)))


def run_config(settings, charset, model_cls):
    """The run's ``RunConfig``: what evaluate, predict and export rebuild the model from, and
    the settings' recorded training settings."""
    return RunConfig(model=model_kwargs(settings, model_cls, charset),
                     model_class=model_class.path_of(model_cls),
                     charset="".join(charset.chars), image_width=settings.width or None,
                     training=settings.recorded())


def warm_start_checkpoint(settings, config):
    """The checkpoint prefix ``settings.init_from`` names, checked to write the same
    characters; None without it."""
    if not settings.init_from:
        return None
    run_dir, prefix = resolve_run(settings.init_from, flag="--init-from")
    prefix = require_checkpoint(run_dir, prefix)
    if os.path.isfile(os.path.join(run_dir, CONFIG_NAME)):
        charset = RunConfig.read(run_dir).charset
        if charset != config.charset:
            raise ValueError("--init-from %s was trained on other characters (%d) than --charset "
                             "gives (%d); pass its charset (config.json there)"
                             % (run_dir, len(charset), len(config.charset)))
    return prefix


def require_a_run_to_resume(settings, config):
    """With ``settings.resume``: raise ValueError, one line, unless ``settings.out`` holds a
    checkpoint to continue and a config.json whose settings ``config`` (this command's) may
    continue (:func:`check_resumed_settings`). Checked before any data is read or anything
    written, so that a mistyped --out is refused as it is (not created) instead of a new run
    starting at step 0, and a changed setting is named as such, not by what it breaks."""
    if not settings.resume:
        return
    if not latest_checkpoint(settings.out):
        raise ValueError("--resume: %s holds no checkpoint of a run: nothing to resume; check "
                         "--out (the folder the run was trained into), or drop --resume to "
                         "start a new run there" % settings.out)
    if not os.path.exists(os.path.join(settings.out, CONFIG_NAME)):
        raise ValueError("--resume: %s holds checkpoints but no config.json, so nothing tells "
                         "which model they are; restore its config.json (or start a new --out)"
                         % settings.out)
    check_resumed_settings(settings, RunConfig.read(settings.out), config)


def check_run_dir(settings, config):
    """Refuse to silently overwrite or mix runs: never lose work. Then write config.json: these
    settings, the run's earlier parts kept in its history (``RunConfig.continuing``). A resume
    has been checked to have a run this command may continue (:func:`require_a_run_to_resume`)."""
    out = settings.out
    ensure_writable(out)
    existing = latest_checkpoint(out)
    if existing and not settings.resume:
        raise ValueError("%s already holds checkpoints (newest %s); pass --resume to continue it "
                         "or choose another --out" % (out, os.path.basename(existing)))
    previous = RunConfig.read(out) if settings.resume else None
    part = dict([("from_step", checkpoint_step(existing) if existing else 0)] +
                [(key, config.training[key]) for key in PART_KEYS])
    config.continuing(previous, part).write(out)


def check_resumed_settings(settings, previous, config):
    """Raise ValueError when ``config`` changes what a resume of the run ``previous`` describes
    must keep: the model and data order always (``KEEP``), the training settings (``ASK``)
    unless ``settings.allow_changed_settings`` (one line naming each that differs, with both
    values)."""
    # As config.json records them: a key the run predates compares as KEPT_ON_RESUME's
    # value, or (a training setting) not at all.
    previous, config = previous.to_json(), config.to_json()
    for key, before in KEPT_ON_RESUME:
        if previous.get(key, before) != config[key]:
            raise ValueError("--resume: %s of %s differs from this command's (%s vs %s); use the "
                             "same settings or another --out" % (key, settings.out,
                                                                 previous.get(key), config[key]))
    changed = ["%s %s -> %s" % (flag(key), json.dumps(previous[key]), json.dumps(config[key]))
               for key in ASKED_ON_RESUME if key in previous and previous[key] != config[key]]
    if changed and not settings.allow_changed_settings:
        raise ValueError("--resume: this command changes settings %s was trained with (%s); "
                         "pass the run's own, or --allow-changed-settings to train on with these "
                         "(config.json keeps each part's under \"parts\")"
                         % (settings.out, ", ".join(changed)))
