"""The models shipped with the package, found one way: through ``importlib.resources`` as the
package ``crnn_multigpu.models`` (``models/`` of the repository, mapped there by pyproject.toml),
whether pip installed a wheel or this checkout (``pip install -e .``, as ``make`` does).
Their README.md files say how they were trained.

Each travels twice: as a TensorFlow checkpoint (``config.json`` + ``checkpoints/``) and as
the ONNX file exported from it (``model.onnx``, written by scripts/export_shipped_onnx.py), which
onnxruntime reads without TensorFlow (``pip install crnn_multigpu[onnx]``)."""
import glob
import os

# The shipped models, the default first: what each reads, as the reading tools' --model help and
# the Reader's documentation say it.
DESCRIPTIONS = {
    "text": "printable ASCII, case-sensitive, any width: words, lines and pages",
    "words": "single words in digits and lower case, 100 px wide: the CRNN paper's setting",
    "zh": "Simplified Chinese (GB2312's 6,763 Hanzi, printable ASCII, Chinese punctuation), any "
          "width: words, lines and pages, Latin words and code mixed in",
    "latin": "the Latin script of Europe and Vietnam (434 characters: ASCII, every letter with "
             "its marks, typographic signs), any width: words, lines and pages; in training, "
             "part by part (models/latin/README.md)",
}
SHIPPED = tuple(DESCRIPTIONS)
DEFAULT_MODEL = SHIPPED[0]
PACKAGE = "crnn_multigpu.models"
# What runs a model: TensorFlow (a run folder) or onnxruntime (an ONNX file).
ENGINES = ("tf", "onnx")
# The ONNX file of a shipped model, in its folder (the name crnn-export --format onnx writes).
ONNX_FILE = "model.onnx"


def shipped_model(name, engine="tf"):
    """The shipped model ``name`` (one of :data:`SHIPPED`) for ``engine`` (one of
    :data:`ENGINES`): with ``tf`` its folder, a run folder that
    :class:`~crnn_multigpu.ocr.inference.Recognizer` reads (``Recognizer.shipped(name)``);
    with ``onnx`` the ONNX file in it, which
    :class:`~crnn_multigpu.ocr.onnx_reader.OnnxRecognizer` reads (``OnnxRecognizer.shipped``)."""
    if name not in SHIPPED:
        raise ValueError("no shipped model is called %r: the shipped models are %s"
                         % (name, ", ".join(SHIPPED)))
    if engine not in ENGINES:
        raise ValueError("no engine is called %r: the engines are %s"
                         % (engine, ", ".join(ENGINES)))
    try:
        folder = os.path.join(_package_folder(), name)
    except ImportError as error:
        raise FileNotFoundError("the shipped models are missing (%s): install the package "
                                "(pip install crnn_multigpu, or pip install -e . in a checkout)"
                                % error)
    if engine == "tf":
        return folder
    path = os.path.join(folder, ONNX_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError("the shipped model %s has no %s in %s: export it (python "
                                "scripts/export_shipped_onnx.py %s, in a checkout with "
                                "TensorFlow), or read it with --engine tf"
                                % (name, ONNX_FILE, folder, name))
    return path


def resolve_run(path, model=DEFAULT_MODEL, flag="--checkpoint"):
    """Accept a run directory or a checkpoint prefix inside its checkpoints/ folder.

    ``None`` means the shipped model called ``model`` (the text model unless told otherwise);
    ``flag`` is the option the path came from, for the error messages.
    """
    if path is None:
        shipped = shipped_model(model)
        if os.path.isfile(os.path.join(shipped, "config.json")):
            return shipped, None
        raise FileNotFoundError("the shipped model is missing from %s (it has no config.json); "
                                "pass the --out folder of crnn-train as --checkpoint (e.g. "
                                "runs/lines/run after make train-lines)" % shipped)
    if os.path.isdir(path):
        return path, None
    if os.path.isfile(path):
        raise FileNotFoundError("%s %s is a file; pass the run directory that holds it "
                                "(%s), or a checkpoint prefix without its extension (e.g. "
                                "RUN/checkpoints/model.ckpt-1000)"
                                % (flag, path, os.path.dirname(os.path.abspath(path))))
    if not glob.glob(glob.escape(path) + ".*"):
        raise FileNotFoundError("%s %s does not exist: pass the --out directory of "
                                "crnn-train (or a checkpoint prefix inside its checkpoints/)"
                                % (flag, os.path.abspath(path)))
    folder = os.path.dirname(path)
    run_dir = os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
    return run_dir, path


def _package_folder():
    """The folder of the package ``crnn_multigpu.models``. It is on disk (pip installs files),
    and must be: TensorFlow restores checkpoints from paths."""
    try:
        from importlib.resources import files
    except ImportError:  # Python 3.7 and 3.8 have no files(): the folder of its __init__.py
        from importlib.resources import path
        with path(PACKAGE, "__init__.py") as init:
            return os.path.dirname(str(init))
    return str(files(PACKAGE))
