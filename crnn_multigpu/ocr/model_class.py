"""What the OCR tools need of a model class: any class that has it can be trained, evaluated,
read with and exported by crnn-train, crnn-evaluate, crnn-predict, crnn-export and
:class:`~crnn_multigpu.ocr.inference.Recognizer`. CRNN is the default, not the only one.

A class is named as ``module:Class`` (``--model-class``; the default is ``DEFAULT``), and a
run's ``config.json`` records it as ``model_class``, so the tools that read the run find it
again. Beyond the wrapper's model protocol (``MultiGpuModel``: ``loss``, ``feed_dict``,
``batch_size``, and ``inputs=`` for feed-free input) the tools need:

Class attributes
  ``DOWNSAMPLE``: image pixels per CTC time step along the width (CRNN: 4). Batches of varying
  widths are padded to a multiple of it, an image of width ``w`` has ``ceil(w / DOWNSAMPLE)``
  time steps for its label (longer labels are left out of training) and ``--width`` must be a
  multiple of it. Optional: ``SIZES`` ``{name: constructor keyword arguments}`` for
  ``crnn-train --model`` (without it the one size ``"default"``: the constructor's defaults)
  and ``DEFAULT_SIZE`` (default: the first name of ``SIZES``). Optional: a classmethod
  ``check_config(model_kwargs)`` raising ValueError when a run's recorded keyword arguments
  cannot be this class's (the tools add the file's name).

Constructor
  ``Class(num_classes=N, **SIZES[size])``, plus ``inputs=`` (the wrapper's feed-free input
  with ``images``, ``widths``, ``labels``, ``label_lengths``); ``beam_width=K`` only when a
  tool is asked for a beam search (K > 1), ``sync_bn=True`` only with ``crnn-train --sync-bn``.
  Class ``N - 1`` is the CTC blank.

Instance attributes
  ``images`` (float32 [B, 32, W, 1], light text on dark in [0, 1], zero-padded on the right)
  and ``widths`` (int32 [B]): placeholders, the SavedModel's inputs; ``feed_dict(batch,
  training=True)`` for a ``datasets.Batch`` (for reading, its labels are empty); ``predict``
  (int32 [B, L] class ids padded with -1) and ``log_prob`` (float32 [B]). Optional:
  ``training`` (a bool placeholder, fed True while training), ``height`` (the image height,
  default 32, the datasets'), ``log_probs_per_frame`` ([T, B, N]) and ``seq_lengths`` ([B])
  for ``--lexicon``, ``error`` (logged while training).
"""
import importlib
import inspect
import logging

__all__ = ["DEFAULT", "check_model", "default_size", "from_config", "load", "path_of", "sizes",
           "time_steps"]

log = logging.getLogger(__name__)

DEFAULT = "crnn_multigpu.ocr.crnn:CRNN"
# What a built model must have for the tools (see the module docstring).
INSTANCE_ATTRIBUTES = ("images", "widths", "predict", "log_prob")
SEE = "see crnn_multigpu.ocr.model_class"


def load(spec):
    """The class ``spec`` (``"module:Class"``) names, checked to have what the tools need.

    Raises ValueError with a one-line message naming the problem (the module cannot be
    imported, it has no such attribute, or the attribute is not a class the tools can use)."""
    module_name, colon, class_name = str(spec).partition(":")
    if not colon or not module_name or not class_name or ":" in class_name:
        raise ValueError("must be module:Class (e.g. %s), got %r" % (DEFAULT, spec))
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: B902 (a user's module may raise anything on import)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise ValueError("%s: cannot import module %s (%s%s)" % (
            spec, module_name, type(error).__name__, ": " + reason if reason else ""))
    if not hasattr(module, class_name):
        raise ValueError("%s: module %s has no %r" % (spec, module_name, class_name))
    cls = getattr(module, class_name)
    problem = _class_problem(cls)
    if problem:
        raise ValueError("%s %s (%s)" % (spec, problem, SEE))
    return cls


def _class_problem(cls):
    """What ``cls`` lacks for the tools, as the end of a sentence, or None."""
    if not inspect.isclass(cls):
        return "is a %s, not a class" % type(cls).__name__
    downsample = getattr(cls, "DOWNSAMPLE", None)
    if downsample is None:
        return "lacks DOWNSAMPLE, the image pixels per CTC time step that the tools need"
    if not isinstance(downsample, int) or isinstance(downsample, bool) or downsample < 1:
        return "has DOWNSAMPLE %r; the tools need a positive whole number" % (downsample,)
    if not callable(getattr(cls, "feed_dict", None)):
        return "lacks feed_dict(batch, training), which the tools call"
    named = getattr(cls, "SIZES", None)
    if named is not None and not (isinstance(named, dict) and named and
                                  all(isinstance(kwargs, dict) for kwargs in named.values())):
        return "has SIZES %r; the tools need a dict of names to keyword-argument dicts" % (named,)
    if default_size(cls) not in sizes(cls):
        return "has DEFAULT_SIZE %r, which is not one of its SIZES" % (cls.DEFAULT_SIZE,)
    return None


def path_of(cls):
    """``"module:Class"`` of ``cls``: what a run's config records and ``load`` reads."""
    return "%s:%s" % (cls.__module__, cls.__name__)


def sizes(cls):
    """The sizes ``crnn-train --model`` chooses from: ``{name: constructor kwargs}``."""
    return getattr(cls, "SIZES", None) or {"default": {}}


def default_size(cls):
    """The size crnn-train builds without ``--model``."""
    return getattr(cls, "DEFAULT_SIZE", None) or next(iter(sizes(cls)))


def time_steps(cls, width):
    """CTC time steps of an image ``width`` pixels wide (a multiple of ``DOWNSAMPLE``)."""
    return int(width) // cls.DOWNSAMPLE


def from_config(config, path, override=None):
    """The model class of the run whose configuration ``config`` was read from ``path``:
    ``override`` when given, else the class the config names (``DEFAULT`` if it names none).
    Checks the recorded keyword arguments with the class's ``check_config`` hook, if it has
    one; ValueError naming ``path`` when the class cannot be used."""
    recorded = config.get("model_class", DEFAULT)
    if override is not None:
        cls = override
        if path_of(cls) != recorded:
            log.info("reading %s with %s (it names %s)", path, path_of(cls), recorded)
    else:
        try:
            cls = load(recorded)
        except ValueError as error:
            raise ValueError("%s names model class %s; %s: make it importable, or name the class "
                             "(--model-class, Recognizer(model_cls=...))" % (path, recorded, error))
    check = getattr(cls, "check_config", None)
    if check is not None:
        try:
            check(config["model"])
        except ValueError as error:
            raise ValueError("%s: %s" % (path, error))
    return cls


def check_model(model, cls):
    """Raise TypeError unless the built ``model`` has every attribute the tools read."""
    missing = [name for name in INSTANCE_ATTRIBUTES if getattr(model, name, None) is None]
    if missing:
        raise TypeError("%s builds a model without %s, which the tools read (%s)"
                        % (path_of(cls), ", ".join(missing), SEE))
