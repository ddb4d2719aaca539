"""A run folder's ``config.json`` as one object, :class:`RunConfig`: what the reading tools
rebuild the model from and how crnn-train trained it, checked where it is read.

The file is one JSON object. Its keys, by what they are for:

- the model: ``model`` (the model class's keyword arguments, ``num_classes`` among them),
  ``charset`` (``num_classes - 1`` characters: CTC's blank is the last class), ``model_class``
  (``module:Class``; runs from before it was recorded lack it: CRNN) and ``image_width``
  (fixed, or null when widths vary);
- how to read it: ``frame_single_bands`` (true: a tight single-band crop is also read framed)
  and ``language`` (how its text is joined and scored);
- how it was trained: crnn-train's settings (``training_settings.TRAINING_KEYS``, read off
  :class:`~crnn_multigpu.ocr.training_settings.TrainingSettings`; ``language`` among them)
  and ``parts``, the settings of each part of a run trained in parts (``--resume``);
- what other tools add (crnn-export's ``exported_from``, ``step``, ``format`` ...): kept as is.

Runs and shipped models written by older versions lack the keys added since: they load all
the same, and :meth:`RunConfig.to_json` writes back what was read.
"""
import json
import os
from dataclasses import dataclass, field, replace
from typing import Optional

from crnn_multigpu.files import write_text
from crnn_multigpu.ocr.training_settings import TRAINING_KEYS

CONFIG_NAME = "config.json"

# The history of a run trained in parts: a list of {"from_step": N, setting: value, ...}.
PARTS_KEY = "parts"


@dataclass
class RunConfig(object):
    """The run configuration of a run folder (see the module's docstring for the keys).

    ``model``, ``charset``, ``model_class`` (None: the run predates it, CRNN's),
    ``image_width`` and ``frame_single_bands`` describe the model; ``training`` holds the
    :data:`TRAINING_KEYS` the run recorded, ``parts`` its history, ``extra`` any other keys.
    """
    model: dict
    charset: str
    model_class: Optional[str] = None
    image_width: Optional[int] = None
    frame_single_bands: bool = False
    training: dict = field(default_factory=dict)
    parts: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def language(self):
        """The language the model reads (None: English, the default)."""
        return self.training.get("language")

    @classmethod
    def read(cls, run_dir):
        """The configuration of the run folder ``run_dir``, checked (:meth:`from_json`); one
        line naming the file when the run is not there or its configuration is not usable."""
        path = os.path.join(run_dir, CONFIG_NAME)
        if not os.path.isfile(path):
            raise FileNotFoundError("%s is not a training run directory (no %s). Pass the --out "
                                    "directory of crnn-train." % (run_dir, CONFIG_NAME))
        try:
            with open(path, encoding="utf-8") as stream:
                data = json.load(stream)
        except UnicodeDecodeError as error:
            raise ValueError("%s is not UTF-8 text (byte %d); restore it from the run's backup "
                             "or retrain" % (path, error.start))
        except ValueError as error:
            raise ValueError("%s is not valid JSON (%s); restore it or retrain" % (path, error))
        return cls.from_json(data, path)

    @classmethod
    def from_json(cls, data, path):
        """The configuration the decoded JSON ``data`` holds; ValueError naming ``path`` unless
        it describes a model that can be built: a ``model`` with ``num_classes``, a ``charset``
        of exactly ``num_classes - 1`` characters and, if any, a ``model_class`` string. What
        else the model's arguments must be is its class's business
        (``ocr.model_class.from_config``)."""
        check(data, path)
        data = dict(data)
        described = dict((key, data.pop(key)) for key in
                         ("model", "charset", "model_class", "image_width", "frame_single_bands")
                         if key in data)
        training = dict((key, data.pop(key)) for key in TRAINING_KEYS if key in data)
        return cls(training=training, parts=list(data.pop(PARTS_KEY, None) or []), extra=data,
                   **described)

    def to_json(self):
        """The JSON object config.json holds (what :meth:`from_json` reads back)."""
        data = dict(self.extra)
        data.update(self.training)
        data.update(model=self.model, charset=self.charset, image_width=self.image_width)
        if self.model_class is not None:
            data["model_class"] = self.model_class
        if self.frame_single_bands:
            data["frame_single_bands"] = True
        if self.parts:
            data[PARTS_KEY] = self.parts
        return data

    def write(self, run_dir):
        """Store it as ``run_dir``/config.json, whole (never half a file)."""
        write_text(os.path.join(run_dir, CONFIG_NAME),
                   json.dumps(self.to_json(), indent=2, sort_keys=True, ensure_ascii=False))

    def continuing(self, previous, part):
        """The configuration to save for a run: this one (this part's), what ``previous`` (the
        run's configuration before, or None) holds that this lacks, and the run's history in
        ``parts``: ``previous``'s parts, then ``part`` (``from_step`` and the settings that may
        differ between parts) unless the last part has the same settings. A ``previous`` from
        before the history was kept becomes the first part, from step 0, with the values it
        recorded of ``part``'s keys."""
        if previous is None:
            return replace(self, parts=[part])
        parts = list(previous.parts or [dict(
            [("from_step", 0)] + [(key, previous.training[key]) for key in part
                                  if key != "from_step" and key in previous.training])])
        if _settings(parts[-1]) != _settings(part):
            parts.append(part)
        return replace(self, frame_single_bands=self.frame_single_bands or
                       previous.frame_single_bands,
                       model_class=self.model_class or previous.model_class,
                       training=dict(previous.training, **self.training),
                       extra=dict(previous.extra, **self.extra), parts=parts)


def _settings(part):
    return dict((key, value) for key, value in part.items() if key != "from_step")


def check(data, path):
    """Raise ValueError naming ``path`` unless the decoded JSON ``data`` is a usable run
    configuration (see :meth:`RunConfig.from_json`)."""
    if not isinstance(data, dict):
        raise ValueError("%s holds %s, not a run configuration (a JSON object)"
                         % (path, type(data).__name__))
    for key, kind in (("model", dict), ("charset", str)):
        if key not in data:
            raise ValueError("%s lacks %r: it was not written by crnn-train; restore it or "
                             "retrain" % (path, key))
        if not isinstance(data[key], kind):
            raise ValueError("%s: %r must be a %s, got %r" % (path, key, kind.__name__,
                                                              data[key]))
    if not isinstance(data.get("frame_single_bands", False), bool):
        raise ValueError("%s: 'frame_single_bands' must be true or false, got %r"
                         % (path, data["frame_single_bands"]))
    if not isinstance(data.get("model_class", ""), str):
        raise ValueError("%s: 'model_class' must be a string module:Class, got %r"
                         % (path, data["model_class"]))
    classes = data["model"].get("num_classes")
    if not isinstance(classes, int) or isinstance(classes, bool) or classes < 1:
        raise ValueError("%s: model 'num_classes' must be a positive whole number, got %r"
                         % (path, classes))
    if len(data["charset"]) != classes - 1:
        raise ValueError("%s: its charset has %d characters but the model has %d classes (it "
                         "needs num_classes - 1 = %d characters, the last class being CTC's "
                         "blank); restore the run's charset" % (path, len(data["charset"]),
                                                               classes, classes - 1))
