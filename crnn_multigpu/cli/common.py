"""What every command-line tool shares: logging set-up and one-line errors instead of tracebacks."""
import logging
import os
import sys

from crnn_multigpu import tflog

# Errors a user can fix from the message alone: printed as one line, exit code 2.
USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, PermissionError, OSError,
               TypeError, ImportError)


def setup_logging(verbose=False):
    """Log to stderr: INFO for our own package, warnings for everything else.

    ``verbose`` also shows TensorFlow's start-up log, which every tool otherwise keeps off
    stderr (``crnn_multigpu.tflog``; a user's own ``TF_CPP_MIN_LOG_LEVEL`` is honoured):
    what was held back if TensorFlow is already imported, everything if it is imported later.
    """
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("crnn_multigpu").setLevel(logging.DEBUG if verbose else logging.INFO)
    if verbose:
        tflog.show_startup_log()


def run_main(body, argv=None):
    """Run ``body(argv)`` and turn user errors into ``error: ...`` on stderr with exit code 2.

    Set ``CRNN_TRACEBACK=1`` to see the full traceback of such an error.
    """
    try:
        return body(argv) or 0
    except Exception as error:
        if os.environ.get("CRNN_TRACEBACK") or not (
                isinstance(error, USER_ERRORS) or getattr(error, "user_facing", False)):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        sys.stderr.write("error: %s\n" % message)
        sys.stderr.flush()
        return 2
