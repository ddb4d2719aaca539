"""One ``error:`` line means one line: TensorFlow's start-up log stays off stderr unless asked.

On TF 2.x with oneDNN on (the default on Intel CPUs with AVX-512; forced here with
``TF_ENABLE_ONEDNN_OPTS=1`` so the test means the same on every CPU) absl prints lines at
``import tensorflow`` whatever ``TF_CPP_MIN_LOG_LEVEL`` says.
"""
import io
import json
import os
import subprocess
import sys

import pytest

from crnn_multigpu import tflog
from crnn_multigpu.compat import TF_VERSION
from waiting import HANG_GUARD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONEDNN_LINE = "oneDNN custom operations are on"

# What TF 2.21 prints at import with oneDNN on and TF_CPP_MIN_LOG_LEVEL=0, plus other output.
STARTUP = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1796005824.538561    4725 port.cc:153] oneDNN custom operations are on.\n"
    "I0000 00:00:1796005824.612101    4725 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n"
    "W1130 09:32:22.280168   13509 env.cc:1] a warning\n"
    "/x/numpy/core.py:12: FutureWarning: something is deprecated\n"
    "  _np_qint8 = np.dtype([('qint8', np.int8, 1)])\n"
    "printed by someone\n"
    "2019-08-26 11:45:17.907378: I tensorflow/core/platform/dso_loader.cc:44] opened a library\n"
    "2019-08-26 11:45:17.907390: E tensorflow/core/platform/dso_loader.cc:45] an error\n"
    "  with a second line\n"
)


def lines_with(text, *words):
    return [line for line in text.splitlines() if any(word in line for word in words)]


def test_level_2_keeps_errors_and_all_other_output():
    shown, held = tflog.split_log(STARTUP, 2)
    assert sorted((shown + held).splitlines()) == sorted(STARTUP.splitlines())
    assert "absl::InitializeLog" not in shown and ONEDNN_LINE not in shown
    assert "cpu_feature_guard" not in shown and "To enable the following" not in shown
    assert "a warning" not in shown and "opened a library" not in shown
    assert "FutureWarning" in shown and "_np_qint8" in shown
    assert "an error\n  with a second line\n" in shown and "printed by someone" in shown


@pytest.mark.parametrize("level, kept, dropped", [
    (0, ["InitializeLog", ONEDNN_LINE, "To enable", "a warning", "opened", "an error"], []),
    (1, ["a warning", "an error"], ["InitializeLog", ONEDNN_LINE, "To enable", "opened"]),
    (3, ["printed by someone", "FutureWarning"], ["a warning", "an error", "second line"]),
])
def test_the_level_decides_like_tf_cpp_min_log_level(level, kept, dropped):
    shown, held = tflog.split_log(STARTUP, level)
    assert all(lines_with(shown, word) for word in kept), shown
    assert not lines_with(shown, *dropped), shown
    if level == 0:
        assert shown == STARTUP and held == ""


NO_GPU_DRIVER = ("2026-12-07 14:44:25.666618: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] "
                 "failed call to cuInit: UNKNOWN ERROR (303)\n")


@pytest.mark.parametrize("level", [1, 2])
def test_cuda_without_a_driver_is_held_back_as_start_up_talk(level):
    shown, held = tflog.split_log(NO_GPU_DRIVER + "2019-08-26 11:45:17.907390: E x.cc:45] an error\n",
                                  level)
    assert "cuInit" in held and "cuInit" not in shown and "an error" in shown
    assert tflog.split_log(NO_GPU_DRIVER, 0) == (NO_GPU_DRIVER, "")


@pytest.mark.parametrize("value, level", [(None, 2), ("0", 0), ("1", 1), ("3", 3), ("9", 3),
                                          ("", 2), ("x", 2)])
def test_min_log_level(value, level):
    assert tflog.min_log_level({} if value is None else {tflog.ENV: value}) == level


@pytest.fixture
def fresh_tflog(monkeypatch):
    """tflog's held lines and verbose flag as in a process that just started."""
    monkeypatch.setattr(tflog, "_held", [])
    monkeypatch.setattr(tflog, "_verbose", [False])
    monkeypatch.delenv(tflog.ENV, raising=False)


def test_quiet_startup_holds_back_what_cxx_writes_to_fd_2(fresh_tflog, capfd):
    shown = io.StringIO()
    with tflog.quiet_startup(shown):
        os.write(2, STARTUP.encode())
    assert capfd.readouterr().err == ""
    assert shown.getvalue() == tflog.split_log(STARTUP, 2)[0]
    later = io.StringIO()
    tflog.show_startup_log(later)  # --verbose
    assert ONEDNN_LINE in later.getvalue() and "absl::InitializeLog" in later.getvalue()
    with tflog.quiet_startup(shown):  # after --verbose nothing is held back
        os.write(2, b"I0000 00:00:1.5 7 port.cc:1] shown now\n")
    assert "shown now" in capfd.readouterr().err


def test_a_failed_import_shows_everything(fresh_tflog, capfd):
    shown = io.StringIO()
    with pytest.raises(ImportError):
        with tflog.quiet_startup(shown):
            os.write(2, STARTUP.encode())
            raise ImportError("libtensorflow_framework.so.2: cannot open shared object file")
    assert shown.getvalue() == STARTUP and capfd.readouterr().err == ""


def test_the_users_level_0_turns_it_off(fresh_tflog, capfd, monkeypatch):
    monkeypatch.setenv(tflog.ENV, "0")
    with tflog.quiet_startup(io.StringIO()):
        os.write(2, b"I0000 00:00:1.5 7 port.cc:1] chatter\n")
    assert "chatter" in capfd.readouterr().err


# -- every tool, in a process of its own --------------------------------------------------


def tool(name, argv, tmp_path, **env_changes):
    """Run ``python -m crnn_multigpu.cli.<name>`` as a user would: oneDNN on, no log level set."""
    env = dict(os.environ, PYTHONPATH=REPO, TF_ENABLE_ONEDNN_OPTS="1")
    env.pop(tflog.ENV, None)  # the test process's own import set it
    env.pop("TF_CONFIG", None)
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli." + name] + argv,
                          cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=HANG_GUARD)
    return done.returncode, done.stderr.decode("utf-8", "replace")


def bad_arguments(name, tmp_path):
    """Arguments that pass argparse but name something that is not there."""
    missing = str(tmp_path / "missing")
    not_a_run = str(tmp_path)
    if name == "server":
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"worker": ["127.0.0.1:notaport"]}))
        return ["--cluster", str(path), "--job", "worker", "--task", "0"]
    return {"train": ["--train", missing, "--out", str(tmp_path / "run"), "--model", "tiny"],
            "evaluate": ["--checkpoint", not_a_run, "--data", missing],
            "predict": ["--checkpoint", not_a_run, missing + ".png"],
            "export": ["--checkpoint", not_a_run, "--out", str(tmp_path / "export")]}[name]


@pytest.mark.parametrize("name", ["train", "evaluate", "predict", "export", "server"])
def test_input_error_is_one_line_whatever_tensorflow_logs(name, tmp_path):
    code, err = tool(name, bad_arguments(name, tmp_path), tmp_path)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: "), err


def test_an_error_after_the_model_is_loaded_is_one_line(tmp_path):
    """TensorFlow has made its session (on TF 1.15's CUDA build: started CUDA, which logs on a
    machine without a GPU) before the dataset's images turn out unreadable."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "labels.txt").write_text("images/gone.png\tHello\n")
    code, err = tool("evaluate", ["--model", "text", "--data", str(data)], tmp_path)
    lines = [line for line in err.splitlines() if not line.startswith("INFO ")]
    assert code == 2 and len(lines) == 1 and "could be read" in lines[0], err


def test_verbose_shows_the_startup_log(tmp_path):
    code, err = tool("train", bad_arguments("train", tmp_path) + ["--verbose"], tmp_path)
    assert code == 2 and err.splitlines()[-1].startswith("error: "), err
    if TF_VERSION[0] != 1:  # TF 1.15 logs nothing at import
        assert ONEDNN_LINE in err, err


def test_the_users_own_log_level_is_honoured(tmp_path):
    code, err = tool("server", bad_arguments("server", tmp_path), tmp_path,
                     **{tflog.ENV: "0"})
    assert code == 2 and err.splitlines()[-1].startswith("error: "), err
    if TF_VERSION[0] != 1:
        assert ONEDNN_LINE in err, err
