"""How the measurement scripts hand on their figures, one JSON file per run (``--json PATH``),
their pictures (:func:`save_picture`), and their failures, one line and exit code 2
(:func:`fail`)."""
import json
import sys

from PIL import Image


def error_line(message):
    """Write one line ``error: message`` on stderr; the exit code that goes with it, 2."""
    sys.stderr.write("error: %s\n" % message)
    sys.stderr.flush()
    return 2


def fail(message):
    """Stop the script with one line ``error: message`` on stderr, exit code 2 (as the tools)."""
    raise SystemExit(error_line(message))


def one_line_errors(body):
    """``main(argv=None) -> exit code`` doing ``body(argv)``, where a ValueError or OSError (what a
    user can fix: a missing file, a bad option) ends the script with :func:`error_line`'s one
    line and exit code 2 instead of a traceback, and argparse's own exits return their code."""
    def main(argv=None):
        try:
            return body(argv) or 0
        except SystemExit as exit_request:
            return exit_request.code if isinstance(exit_request.code, int) else 2
        except (ValueError, OSError) as error:
            return error_line(str(error).strip().splitlines()[0] if str(error).strip()
                              else repr(error))
    return main


def write_json(path, report):
    """Write ``report`` to ``path`` as indented, key-sorted JSON; nothing when ``path`` is None."""
    if path:
        with open(path, "w") as stream:
            json.dump(report, stream, indent=2, sort_keys=True)


def _picture_palette():
    """32 colours: 16 greys for the crops and the black and grey text, and 8 steps from each of
    the readings' green and red to white for their anti-aliased letters."""
    colours = [(round(255 * k / 15.0),) * 3 for k in range(16)]
    for ink in ((0, 120, 0), (190, 0, 0)):
        colours += [tuple(round(c + (255 - c) * k / 8.0) for c in ink) for k in range(8)]
    palette = Image.new("P", (1, 1))
    palette.putpalette([c for colour in colours for c in colour] + [0] * (768 - 3 * len(colours)))
    return palette


def save_picture(canvas, path):
    """Save a side-by-side picture for the docs as a 32-colour palette PNG
    (:func:`_picture_palette`: its green and red kept as drawn, where an adaptive palette spends
    its colours on the crops' greys), about a quarter of an RGB file's size, which every later
    picture in the repository's history repeats."""
    canvas.convert("RGB").quantize(palette=_picture_palette(), dither=0).save(path, optimize=True)
    print("wrote %s" % path, file=sys.stderr)
