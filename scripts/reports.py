"""How the measurement scripts hand on their figures, one JSON file per run (``--json PATH``),
and their failures, one line and exit code 2 (:func:`fail`)."""
import json
import sys


def fail(message):
    """Stop the script with one line ``error: message`` on stderr, exit code 2 (as the tools)."""
    sys.stderr.write("error: %s\n" % message)
    sys.stderr.flush()
    raise SystemExit(2)


def write_json(path, report):
    """Write ``report`` to ``path`` as indented, key-sorted JSON; nothing when ``path`` is None."""
    if path:
        with open(path, "w") as stream:
            json.dump(report, stream, indent=2, sort_keys=True)
