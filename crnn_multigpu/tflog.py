"""TensorFlow's start-up log, kept off stderr unless asked for, and its errors cut to one line
(``one_line``). Imports no TensorFlow.

``TF_CPP_MIN_LOG_LEVEL`` is not enough on TF 2.x: TensorFlow's C++ code logs through absl, and
absl writes *every* message to stderr until ``absl::InitializeLog()`` is called, whatever
level is set. Static initialisers run that early, so on a CPU where oneDNN is on (Intel
AVX-512 machines, or ``TF_ENABLE_ONEDNN_OPTS=1``) ``import tensorflow`` prints, once for each
of its two shared libraries that carry the code::

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 00:00:1796005824.538561    4725 port.cc:153] oneDNN custom operations are on. ...

No environment variable or Python call can stop that, so ``quiet_startup`` points file
descriptor 2 at a temporary file while TensorFlow is imported and then writes back what the
level in effect lets through: the user's ``TF_CPP_MIN_LOG_LEVEL``, else 2 (errors only), the
same rule TensorFlow applies to the messages it does filter. Lines that are not C++ log
messages (Python warnings, anything else) are written back unchanged, and if the import fails
everything is. What was held back is shown by ``show_startup_log()``, which the tools call for
``--verbose``; ``TF_CPP_MIN_LOG_LEVEL=0`` shows it all as it happens.
"""
import contextlib
import os
import re
import sys
import tempfile

DEFAULT_LEVEL = 2  # TF_CPP_MIN_LOG_LEVEL when the user set none: errors only
ENV = "TF_CPP_MIN_LOG_LEVEL"

SEVERITIES = "IWEF"  # TF_CPP_MIN_LOG_LEVEL 0..3 keeps messages of this index and above
# absl / glog: "I1130 09:32:22.280168  13509 file.cc:448] text"; before absl is set up the
# clock is in seconds since 1970: "I0000 00:00:1796005824.538561    4725 port.cc:153] text"
_ABSL = re.compile(r"^([IWEF])\d{4} \d\d:\d\d:\d+\.\d+ +\d+ [^ \]]+:\d+\] ")
# TF's own format: "2019-08-26 11:45:17.907378: I tensorflow/core/....cc:44] text"
_TSL = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: ([IWEF]) [^ \]]+:\d+\] ")
# What absl (C++ and Python) says once about itself before the first message.
_PREAMBLE = re.compile(r"^WARNING: (All log messages before absl::InitializeLog\(\) is called are "
                       r"written to STDERR|Logging before flag parsing goes to stderr\.)\s*$")

# What a CUDA build of TensorFlow (TF 1.15's wheel) logs as an error on every machine without a
# GPU driver: it is no error there, so it is held back like start-up talk (shown at level 0).
_NO_GPU_DRIVER = re.compile(r"failed call to cuInit")

# Output that is not a continuation of the log message before it.
_NEW_OUTPUT = re.compile(r"^(\S+:\d+: \w*Warning: |Traceback |\w*(Error|Warning|Exception): )")

_held = []  # start-up lines not shown, for show_startup_log()
_verbose = [False]


def min_log_level(environ=None):
    """The ``TF_CPP_MIN_LOG_LEVEL`` in effect: the environment's (0..3), else ``DEFAULT_LEVEL``."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip()
    try:
        return max(0, min(3, int(value)))
    except ValueError:
        return DEFAULT_LEVEL


def split_log(text, level):
    """``(shown, held)``: the lines of ``text`` a log level of ``level`` lets through, and the rest.

    A C++ log message is kept when its severity (I, W, E, F) is at least ``level``; the lines
    that continue it go with it (every line after it up to the next message, Python warning
    or traceback). absl's notes about its own set-up, and CUDA's failed start on a machine
    without a GPU driver, are kept only at level 0. Every other line (Python warnings,
    tracebacks, prints) is kept.
    """
    shown, held = [], []
    keep, in_message = True, False
    for line in text.splitlines(True):
        match = _ABSL.match(line) or _TSL.match(line)
        if match:
            keep = SEVERITIES.index(match.group(1)) >= level and not (
                level > 0 and _NO_GPU_DRIVER.search(line))
            in_message = True
        elif _PREAMBLE.match(line):
            keep, in_message = level == 0, False
        elif not (in_message and not _NEW_OUTPUT.match(line)):
            keep, in_message = True, False
        (shown if keep else held).append(line)
    return "".join(shown), "".join(held)


@contextlib.contextmanager
def quiet_startup(stream=None):
    """Hold back TensorFlow's start-up log while the block (``import tensorflow``) runs.

    Works on file descriptor 2, where C++ code writes, so it also catches what Python
    cannot intercept. Does nothing with ``TF_CPP_MIN_LOG_LEVEL=0`` or after ``--verbose``.
    """
    level = min_log_level()
    stream = sys.stderr if stream is None else stream
    if level == 0 or _verbose[0]:
        yield
        return
    fd = 2  # where C++ code writes, whatever sys.stderr is
    try:
        saved = os.dup(fd)
    except OSError:  # no stderr at all: nothing to keep clean
        yield
        return
    try:
        capture = tempfile.TemporaryFile()
    except OSError:
        os.close(saved)
        yield
        return
    _flush(stream)
    os.dup2(capture.fileno(), fd)
    failed = True
    try:
        yield
        failed = False
    finally:
        _flush(stream)
        os.dup2(saved, fd)
        os.close(saved)
        capture.seek(0)
        text = capture.read().decode("utf-8", "replace")
        capture.close()
        shown, held = (text, "") if failed else split_log(text, level)
        _held.append(held)
        if shown:
            _write(stream, shown)


def show_startup_log(stream=None):
    """Write what ``quiet_startup`` held back (once), and stop holding anything back."""
    _verbose[0] = True
    text = "".join(_held)
    del _held[:]
    if text:
        _write(sys.stderr if stream is None else stream, text)


def _flush(stream):
    for each in (stream, sys.__stderr__):
        try:
            each.flush()
        except (AttributeError, ValueError, OSError):
            pass


def _write(stream, text):
    try:
        stream.write(text)
        stream.flush()
    except (AttributeError, ValueError, OSError):
        pass


def one_line(error):
    """The cause of a TensorFlow or OS error in one line, without TensorFlow's graph trace.

    TF 2 puts the op's own message after a ``Node: '...'`` line, TF 1 puts it first; both
    then add pages of stack trace. A file path before ``; `` (``PATH; No space left on
    device``) is dropped too: the callers name the checkpoint themselves.
    """
    text = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    line = lines[0]
    for index, candidate in enumerate(lines[:-1]):
        if candidate.startswith("Node: "):
            line = lines[index + 1]
            break
    return line.rsplit("; ", 1)[-1]
