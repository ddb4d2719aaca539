"""crnn-train's run folder: the run's config.json made from the arguments, checked against the
run it resumes (what may change between the parts of a run, and what never), and the
checkpoint ``--init-from`` starts from."""
import json
import os

from crnn_multigpu.ocr.reader import resolve_run
from crnn_multigpu.ocr import model_class
from crnn_multigpu.runtime.checkpoints import (checkpoint_step, ensure_writable,
                                               latest_checkpoint, require_checkpoint)
from crnn_multigpu.runtime.run_config import CONFIG_NAME, RunConfig

# What a resume may change, by config.json key. Never: the model and what its checkpoints
# hold, and the data order's keys ("bucket" reorders the data; "precision": float16 runs
# checkpoint a loss scale that others lack; "accumulate": the micro-batches of step s are
# those of micro-steps K*s .. K*s+K-1). The values of runs from before a key was recorded:
FIXED_ON_RESUME = dict(model_class=model_class.DEFAULT, model=None, charset=None,
                       image_width=None, bucket=0, precision="float32", accumulate=1)
# Only with --allow-changed-settings, by flag: how the coming steps train. Each part's values
# are kept under "parts" in config.json, with "steps" (free: a run may train longer, its
# learning-rate decay points moving with it) and "init_from" (free: only the first part
# starts from it).
CHANGED_ON_RESUME = {"--seed": "seed", "--batch-size": "batch_size", "--lr": "lr",
                     "--augment": "augment", "--reframe": "reframe", "--stroke": "stroke",
                     "--sync-bn": "sync_bn", "--train": "train", "--language": "language"}
PART_KEYS = tuple(sorted(CHANGED_ON_RESUME.values())) + ("steps", "init_from")


def model_kwargs(args, model_cls, charset):
    """The constructor arguments of --model for ``model_cls`` (as config.json holds them, tuples
    as lists), checked with --width against the class's sizes and DOWNSAMPLE."""
    sizes = model_class.sizes(model_cls)
    size = args.model or model_class.default_size(model_cls)
    if size not in sizes:
        raise ValueError("--model %s is not a size of %s (its sizes: %s)"
                         % (size, model_class.path_of(model_cls), ", ".join(sorted(sizes))))
    if args.width % model_cls.DOWNSAMPLE:
        raise ValueError("--width must be a multiple of %d (the DOWNSAMPLE of %s), got %d; or "
                         "0 for varying widths" % (model_cls.DOWNSAMPLE,
                                                   model_class.path_of(model_cls), args.width))
    return json.loads(json.dumps(dict(sizes[size], num_classes=charset.num_classes)))


def run_config(args, charset, model_cls):
    """The run's ``RunConfig``: what evaluate, predict and export rebuild the model from, and
    this command's training settings."""
    return RunConfig(model=model_kwargs(args, model_cls, charset),
                     model_class=model_class.path_of(model_cls),
                     charset="".join(charset.chars), image_width=args.width or None,
                     training=dict(
                         language=args.language, batch_size=args.batch_size,
                         accumulate=args.accumulate, lr=args.lr, seed=args.seed,
                         steps=args.steps, sync_bn=args.sync_bn, precision=args.precision,
                         augment=args.augment, reframe=args.reframe, stroke=args.stroke,
                         bucket=args.bucket,
                         train=os.path.abspath(args.train),
                         init_from=os.path.abspath(args.init_from) if args.init_from else None))


def warm_start_checkpoint(args, config):
    """The checkpoint prefix ``--init-from`` names, checked to write the same characters."""
    if not args.init_from:
        return None
    run_dir, prefix = resolve_run(args.init_from, flag="--init-from")
    prefix = require_checkpoint(run_dir, prefix)
    if os.path.isfile(os.path.join(run_dir, CONFIG_NAME)):
        charset = RunConfig.read(run_dir).charset
        if charset != config.charset:
            raise ValueError("--init-from %s was trained on other characters (%d) than --charset "
                             "gives (%d); pass its charset (config.json there)"
                             % (run_dir, len(charset), len(config.charset)))
    return prefix


def check_run_dir(args, config):
    """Refuse to silently overwrite or mix runs: never lose work. Then write config.json: this
    command's settings, the run's earlier parts kept in its history
    (``RunConfig.continuing``)."""
    ensure_writable(args.out)
    existing = latest_checkpoint(args.out)
    config_path = os.path.join(args.out, CONFIG_NAME)
    if existing and not args.resume:
        raise ValueError("%s already holds checkpoints (newest %s); pass --resume to continue it "
                         "or choose another --out" % (args.out, os.path.basename(existing)))
    if args.resume and existing and not os.path.exists(config_path):
        raise ValueError("--resume: %s holds checkpoints but no config.json, so nothing tells "
                         "which model they are; restore its config.json (or start a new --out)"
                         % args.out)
    previous = RunConfig.read(args.out) if args.resume and os.path.exists(config_path) else None
    if previous is not None:
        check_resumed_settings(args, previous, config)
    part = dict([("from_step", checkpoint_step(existing) if existing else 0)] +
                [(key, config.training[key]) for key in PART_KEYS])
    config.continuing(previous, part).write(args.out)


def check_resumed_settings(args, previous, config):
    """Raise ValueError when ``config`` changes what a resume of the run ``previous`` describes
    must keep: the model and data order always, the training settings unless
    --allow-changed-settings (one line naming each that differs, with both values)."""
    # As config.json records them: a key the run predates compares as FIXED_ON_RESUME's
    # value, or (a training setting) not at all.
    previous, config = previous.to_json(), config.to_json()
    for key, before in FIXED_ON_RESUME.items():  # in this order: the model's class first
        if previous.get(key, before) != config[key]:
            raise ValueError("--resume: %s of %s differs from this command's (%s vs %s); use the "
                             "same settings or another --out" % (key, args.out,
                                                                 previous.get(key), config[key]))
    changed = ["%s %s -> %s" % (flag, json.dumps(previous[key]), json.dumps(config[key]))
               for flag, key in sorted(CHANGED_ON_RESUME.items())
               if key in previous and previous[key] != config[key]]
    if changed and not args.allow_changed_settings:
        raise ValueError("--resume: this command changes settings %s was trained with (%s); "
                         "pass the run's own, or --allow-changed-settings to train on with these "
                         "(config.json keeps each part's under \"parts\")"
                         % (args.out, ", ".join(changed)))
