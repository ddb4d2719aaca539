"""Running crnn-predict where TensorFlow cannot be imported, for the tests of reading with
onnxruntime alone (test_onnx.py, test_shipped_onnx.py).

By default the tools run in a subprocess of this interpreter with ``import tensorflow`` made
to fail (a None in ``sys.modules``) and this checkout on PYTHONPATH. With ``CRNN_NO_TF_PYTHON``
set to the python of a venv that has no TensorFlow at all (``make test-no-tf`` builds one from
the wheel and its ``onnx`` extra), they run there instead, from a folder outside the checkout
and without PYTHONPATH: the installed package alone, its shipped models included.
"""
import json
import os
import subprocess
import sys

from waiting import HANG_GUARD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.environ.get("CRNN_NO_TF_PYTHON")

# crnn-predict run once for each argument list of argv[1] (JSON), TensorFlow's import made to
# fail first; its outputs as JSON: "results", [exit code, stdout, stderr] per run; "tensorflow",
# the tensorflow modules loaded; "installed", whether the interpreter could import TensorFlow
# at all; "package", the folder crnn_multigpu was imported from.
SCRIPT = """
import contextlib, importlib.util, io, json, os, sys
installed = importlib.util.find_spec("tensorflow") is not None
sys.modules["tensorflow"] = None
import crnn_multigpu
from crnn_multigpu.cli import predict
results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = predict.main(argv)
    results.append([code, out.getvalue(), err.getvalue()])
loaded = sorted(name for name, module in sys.modules.items()
                if name.split(".")[0] == "tensorflow" and module is not None)
print(json.dumps({"results": results, "tensorflow": loaded, "installed": installed,
                  "package": os.path.dirname(os.path.abspath(crnn_multigpu.__file__))}))
"""


def predict_without_tensorflow(argv_lists, cwd):
    """``(results, report)``: crnn-predict's ``[exit code, stdout, stderr]`` for each of
    ``argv_lists`` (absolute paths: ``cwd`` is where it runs), read where TensorFlow cannot be
    imported (see the module's doc), and the rest of :data:`SCRIPT`'s report. Asserts that no
    TensorFlow module was loaded and, in a venv of its own, that the venv has none and the
    package came from it."""
    if VENV_PYTHON:
        python, env = VENV_PYTHON, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    else:
        python, env = sys.executable, dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run([python, "-c", SCRIPT, json.dumps(argv_lists)], cwd=str(cwd),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, timeout=HANG_GUARD)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tensorflow"] == []
    if VENV_PYTHON:
        assert not report["installed"], "the venv of CRNN_NO_TF_PYTHON has TensorFlow"
        venv = os.path.dirname(os.path.dirname(os.path.abspath(VENV_PYTHON)))
        assert report["package"].startswith(venv + os.sep), report["package"]
    return report.pop("results"), report
