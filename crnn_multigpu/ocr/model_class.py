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

When a hook fails (``__init__``, ``feed_dict`` or ``check_config`` raises, ``predict`` or
``log_prob`` gives another shape) the tools stop with one line naming the class, the hook and
what it raised or gave (``ModelClassError``), not a traceback from inside the class.
"""
import contextlib
import importlib
import inspect
import logging
import os

import numpy as np

__all__ = ["DEFAULT", "ModelClassError", "check_model", "check_outputs", "default_size",
           "describe", "from_config", "guarded", "load", "path_of", "recorded_class", "sizes",
           "time_steps", "trained_with_another"]

log = logging.getLogger(__name__)

DEFAULT = "crnn_multigpu.ocr.crnn:CRNN"
# What a built model must have for the tools (see the module docstring).
INSTANCE_ATTRIBUTES = ("images", "widths", "predict", "log_prob")
SEE = "see crnn_multigpu.ocr.model_class"
# The outputs the tools read: {name: (rank, numpy kinds, what they need, for a batch of b)}.
OUTPUTS = {"predict": (2, "iu", "whole numbers of shape [{b}, L] (class ids padded with -1)"),
           "log_prob": (1, "f", "floats of shape [{b}] (a log probability per image)")}


class ModelClassError(ValueError):
    """A model class's hook failed, or gave what the tools cannot use: the message is one line
    naming the class (``module:Class``), the hook, what went wrong and what to do; ``what`` is
    the middle part alone ("its feed_dict raised KeyError: 'images'")."""

    def __init__(self, cls, what):
        ValueError.__init__(self, "model class %s: %s; fix the class (%s) or name another with "
                                  "--model-class" % (path_of(cls), what, SEE))
        self.what = what


def describe(error):
    """``error`` in a few words: its type and the first line of its message (``sys.exit(3)``
    for a SystemExit)."""
    if isinstance(error, SystemExit):
        return "sys.exit(%r)" % (error.code,)
    text = str(error).strip()
    return type(error).__name__ + (": " + text.splitlines()[0] if text else "")


@contextlib.contextmanager
def _hook(cls, hook_name, passing=()):
    """Run the body, a call of ``cls``'s hook ``hook_name``: whatever it raises (a user's class
    may raise anything, or call sys.exit) becomes one ModelClassError naming both, but for the
    exceptions ``passing``, the hook's way of refusing by contract."""
    try:
        yield
    except (ModelClassError,) + passing:
        raise
    except (Exception, SystemExit) as error:  # noqa: B902 (a user's class may raise anything)
        raise ModelClassError(cls, "its %s %s %s" % (
            hook_name, "called" if isinstance(error, SystemExit) else "raised", describe(error)))


def guarded(cls):
    """``cls`` as the tools build it: a callable taking its constructor's keyword arguments (what
    ``MultiGpuModel`` calls once per tower), whose ``__init__`` and instances' ``feed_dict`` fail
    as ``_hook`` says rather than with a traceback from inside the class."""
    def build(**kwargs):
        with _hook(cls, "__init__"):
            model = cls(**kwargs)
        feed_dict = model.feed_dict

        def checked_feed_dict(*args, **kwargs):
            with _hook(cls, "feed_dict"):
                return feed_dict(*args, **kwargs)
        model.feed_dict = checked_feed_dict
        return model
    build.__name__ = cls.__name__
    return build


def check_outputs(cls, images, **values):
    """Raise ModelClassError unless the ``values`` of the outputs (``predict=``, ``log_prob=``) a
    tower of ``cls`` gave for ``images`` images have the shapes and kinds the tools read."""
    for name, value in sorted(values.items()):
        value = np.asarray(value)
        rank, kinds, need = OUTPUTS[name]
        if value.ndim != rank or value.shape[0] != images or value.dtype.kind not in kinds:
            raise ModelClassError(cls, "its %s gave shape %s (%s) for a batch of %d image(s); "
                                       "the tools need %s" % (name, list(value.shape),
                                                              value.dtype, images,
                                                              need.format(b=images)))


def load(spec):
    """The class ``spec`` (``"module:Class"``) names, checked to have what the tools need.

    Raises ValueError with a one-line message naming the problem (the module cannot be
    imported, it has no such attribute, or the attribute is not a class the tools can use)."""
    module_name, colon, class_name = str(spec).partition(":")
    if not colon or not module_name or not class_name or ":" in class_name:
        raise ValueError("must be module:Class (e.g. %s), got %r" % (DEFAULT, spec))
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as error:  # noqa: B902 (a module may raise or exit on import)
        reason = describe(error)
        raise ValueError("%s: cannot import module %s (%s)" % (spec, module_name, (
            "it calls %s on import" % reason) if isinstance(error, SystemExit) else reason))
    if not hasattr(module, class_name):
        raise ValueError("%s: module %s has no %r" % (spec, module_name, class_name))
    cls = getattr(module, class_name)
    problem = _class_problem(cls)
    if problem:
        raise ValueError("%s %s (%s)" % (spec, problem, SEE))
    return cls


def chosen(spec):
    """The model class a user chose (``--model-class``, or ``TrainingSettings.model_class``):
    None for None, the class ``spec`` is, or the one the string ``"module:Class"`` names
    (:func:`load`), checked; ValueError otherwise, one line naming ``--model-class``, its value
    and the problem."""
    if spec is None:
        return None
    if isinstance(spec, type):
        problem = _class_problem(spec)
        if problem:
            raise ValueError("--model-class %s %s (%s)" % (path_of(spec), problem, SEE))
        return spec
    try:
        return load(spec)
    except ValueError as error:
        # "--model-class must be module:Class ..." or "--model-class a.b:C: cannot import ..."
        raise ValueError("--model-class %s" % error)


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


def recorded_class(config):
    """The ``module:Class`` the run configuration ``config`` (a ``RunConfig``) names: the class
    it was trained with (``DEFAULT`` for runs from before the class was recorded)."""
    return config.model_class or DEFAULT


def from_config(config, path, override=None):
    """The model class of the run whose configuration ``config`` (a ``RunConfig``) was read
    from ``path``: ``override`` when given, else the class the config names (``DEFAULT`` if it
    names none). Checks the recorded keyword arguments with the class's ``check_config`` hook,
    if it has one; ValueError naming ``path`` when the class cannot be used."""
    recorded = recorded_class(config)
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
    refusal = _config_refusal(cls, config)
    if refusal is not None and path_of(cls) != recorded:
        raise trained_with_another(config, path, cls, refusal)
    if refusal is not None:
        raise ValueError("%s: %s" % (path, refusal))
    return cls


def _config_refusal(cls, config):
    """Why ``cls``'s ``check_config`` hook refuses the keyword arguments ``config`` records (the
    ValueError it raises by contract), or None; any other failure is a ModelClassError."""
    check = getattr(cls, "check_config", None)
    if check is None:
        return None
    try:
        with _hook(cls, "check_config", passing=(ValueError,)):
            check(config.model)
    except ModelClassError:
        raise
    except ValueError as error:
        return str(error).strip().splitlines()[0] if str(error).strip() else describe(error)
    return None


def trained_with_another(config, path, cls, why):
    """The ValueError for a run (its configuration ``config`` read from ``path``) that ``cls``,
    a class named instead of the one it was trained with, cannot read: ``why`` says why."""
    return ValueError("%s was trained with %s (its config.json says so) but --model-class names "
                      "%s, which cannot read it (%s); drop --model-class, or name the class the "
                      "run was trained with" % (os.path.dirname(path) or ".",
                                                recorded_class(config), path_of(cls),
                                                why))


def check_model(model, cls):
    """Raise TypeError unless the built ``model`` has every attribute the tools read, and
    ModelClassError when the graph already shows an output of the wrong rank or kind (what
    it cannot show, ``check_outputs`` checks when the tools first read the values)."""
    missing = [name for name in INSTANCE_ATTRIBUTES if getattr(model, name, None) is None]
    if missing:
        raise TypeError("%s builds a model without %s, which the tools read (%s)"
                        % (path_of(cls), ", ".join(missing), SEE))
    for name, (rank, kinds, need) in sorted(OUTPUTS.items()):
        shape, dtype = getattr(model, name).shape, getattr(model, name).dtype
        if shape.ndims not in (None, rank) or np.dtype(dtype.as_numpy_dtype).kind not in kinds:
            raise ModelClassError(cls, "its %s is %s of shape %s in the graph; the tools need %s"
                                  % (name, dtype.name, shape.as_list() if shape.ndims is not None
                                     else "unknown", need.format(b="B")))
