"""The settings of a training run as one typed object, :class:`TrainingSettings` (each field is
the crnn-train option of the same name, ``--batch-size`` being ``batch_size``), and the run
schema derived from it: which settings a run's config.json records, and what a resume
(``resume=True``) may change.

Each field says in its metadata what a resume may do with it (``resume``):

- :data:`KEEP`: never changes: the model, what its checkpoints hold and the order of the data;
- :data:`ASK`: changes how the coming steps train: refused unless ``allow_changed_settings``,
  each part's value kept in config.json's ``parts``;
- :data:`FREE`: recorded in each part, may change (``steps``: a run may train longer, its
  learning-rate decay points moving with it; ``init_from``: only the first part starts from it);
- None: how and where the run computes (towers, placement, progress, timeouts): not recorded,
  free to change (the same steps on other devices).

The lists of keys (:data:`TRAINING_KEYS`, :data:`PART_KEYS`, :data:`KEPT_ON_RESUME`,
:data:`ASKED_ON_RESUME`) are read off the fields, never kept by hand.
"""
import os
from dataclasses import dataclass, field, fields, replace
from typing import Optional, Union

from crnn_multigpu.ocr.model_class import DEFAULT as DEFAULT_MODEL_CLASS

KEEP, ASK, FREE = "keep", "ask", "free"

# Windows of 32 batches: nearly uniform widths per batch, while every batch still mixes
# samples from 1,024 (at batch 32) randomly drawn ones.
DEFAULT_BUCKET = 32


def setting(default=None, resume=None, model_key=None, before=None, path=False, required=False):
    """A field of :class:`TrainingSettings`. ``resume``: :data:`KEEP`, :data:`ASK`, :data:`FREE`
    or None (see the module). ``model_key``: the config.json key of a setting that describes
    the model (recorded there as the model's description, not as a training setting);
    ``before``: the value of a :data:`KEEP` setting in runs from before it was recorded;
    ``path``: a path, recorded absolute."""
    metadata = dict(resume=resume, model_key=model_key, before=before, path=path)
    if required:
        return field(metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class TrainingSettings(object):
    """What crnn-train is told, typed: ``ocr.TrainingRun(settings).run()`` trains as
    ``crnn-train`` with the options of the same names does. ``train`` (a dataset folder or
    LMDB) and ``out`` (the run folder) are required; every other field has crnn-train's
    default (``crnn-train --help`` says what each does)."""
    # The data.
    train: str = setting(resume=ASK, path=True, required=True)
    out: str = setting(required=True)
    val: Optional[str] = setting()
    # The model: its class first, then its characters, so that a resume names the change
    # rather than the model arguments (num_classes) it brings.
    model_class: Union[str, type, None] = setting(resume=KEEP, model_key="model_class",
                                                  before=DEFAULT_MODEL_CLASS)
    charset: Optional[str] = setting(resume=KEEP, model_key="charset")
    model: Optional[str] = setting(resume=KEEP, model_key="model")
    width: int = setting(100, resume=KEEP, model_key="image_width")
    bucket: Optional[int] = setting(resume=KEEP, before=0)
    precision: str = setting("float32", resume=KEEP, before="float32")
    accumulate: int = setting(1, resume=KEEP, before=1)
    language: Optional[str] = setting(resume=ASK)
    augment: float = setting(0.0, resume=ASK)
    reframe: float = setting(0.0, resume=ASK)
    stroke: float = setting(0.0, resume=ASK)
    sync_bn: bool = setting(False, resume=ASK)
    # Optimisation.
    steps: int = setting(3000, resume=FREE)
    batch_size: int = setting(32, resume=ASK)
    lr: float = setting(1e-3, resume=ASK)
    clip_norm: float = setting(5.0, resume=ASK)
    seed: int = setting(0, resume=ASK)
    on_nonfinite: str = setting("stop", resume=ASK)
    init_from: Optional[str] = setting(resume=FREE, path=True)
    stop_at: Optional[int] = setting()
    # How and where it computes.
    input: Optional[str] = setting()
    xla: bool = setting(False)
    towers: Optional[int] = setting()
    strategy: str = setting("ps")
    all_reduce: Optional[str] = setting()
    num_packs: int = setting(0)
    cluster: Optional[str] = setting()
    connect_timeout: float = setting(60.0)
    step_timeout: float = setting(120.0)
    gpus_per_task: int = setting(0)
    # The run folder, validation and progress.
    resume: bool = setting(False)
    allow_changed_settings: bool = setting(False)
    checkpoint_every: int = setting(500)
    validate_every: int = setting(500)
    validate_max: int = setting(1000)
    log_every: int = setting(50)

    def checked(self):
        """These settings with what is left to choose chosen (``bucket``, an absolute
        ``out``); ValueError, one line naming the options, when two of them contradict."""
        if self.bucket and self.width:
            raise ValueError("--bucket %d sorts batches by image width, which only varies with "
                             "--width 0; drop --bucket or pass --width 0" % self.bucket)
        if self.all_reduce is not None and self.strategy != "replicated":
            raise ValueError("--all-reduce %s chooses how replicas are kept equal; it needs "
                             "--strategy replicated (got --strategy %s)" % (self.all_reduce,
                                                                           self.strategy))
        if self.cluster and self.input == "dataset":
            raise ValueError("--input dataset decodes images in this process's Python, which "
                             "the cluster's workers cannot call; use --input feed with --cluster")
        # An absolute --out: cluster servers resolve relative paths their own way.
        return replace(self, out=os.path.abspath(self.out),
                       bucket=(0 if self.width else DEFAULT_BUCKET) if self.bucket is None
                       else self.bucket,
                       input=self.input or ("feed" if self.cluster else "dataset"))

    def recorded(self):
        """The training settings config.json records (:data:`TRAINING_KEYS`), paths absolute."""
        return dict((name, _recorded_value(self, name)) for name in TRAINING_KEYS)


def _recorded_value(settings, name):
    value = getattr(settings, name)
    return os.path.abspath(value) if value is not None and _FIELDS[name].metadata["path"] \
        else value


def flag(name):
    """The crnn-train option of the setting ``name`` (``batch_size`` -> ``--batch-size``)."""
    return "--" + name.replace("_", "-")


_FIELDS = dict((item.name, item) for item in fields(TrainingSettings))


def _named(*kinds):
    return tuple(name for name, item in _FIELDS.items() if item.metadata["resume"] in kinds and
                 not item.metadata["model_key"])


# The training settings config.json records, flat beside "model". A run records the keys of its
# version: which ones it holds matters (a resume compares only the settings a run recorded).
TRAINING_KEYS = tuple(sorted(_named(KEEP, ASK, FREE)))
# What each part of a run trained in parts records under "parts".
PART_KEYS = tuple(sorted(_named(ASK, FREE)))
# What a resume never changes, by config.json key (the model's class first), with the value of
# runs from before the key was recorded (None: every run records it).
KEPT_ON_RESUME = tuple((item.metadata["model_key"] or name, item.metadata["before"])
                       for name, item in _FIELDS.items() if item.metadata["resume"] == KEEP)
# What a resume changes only when allowed.
ASKED_ON_RESUME = tuple(sorted(_named(ASK)))
