"""How the measurement scripts hand their figures on: one JSON file per run (``--json PATH``)."""
import json


def write_json(path, report):
    """Write ``report`` to ``path`` as indented, key-sorted JSON; nothing when ``path`` is None."""
    if path:
        with open(path, "w") as stream:
            json.dump(report, stream, indent=2, sort_keys=True)
