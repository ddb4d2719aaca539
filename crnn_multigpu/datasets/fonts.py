"""Finding TrueType/OpenType fonts, checking glyph coverage, and train/held-out splits."""
import os

import numpy as np
from PIL import Image, ImageDraw, ImageFont

DEFAULT_FONT_DIRS = (
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "~/.fonts",
    "~/.local/share/fonts",
)
FONT_DIRS_ENV = "CRNN_FONT_DIRS"
FONT_EXTENSIONS = (".ttf", ".otf")
# U+FFFF is a permanent noncharacter: no font maps it, so it renders .notdef.
_UNMAPPED_CODEPOINT = u"\uffff"
_PROBE_SIZE = 24
# Complex shaping (raqm) is not needed for the scripts this package targets,
# and with Pillow 9 it makes every text call ~20x slower.
_BASIC_LAYOUT = getattr(getattr(ImageFont, "Layout", None), "BASIC", None)
if _BASIC_LAYOUT is None:
    _BASIC_LAYOUT = ImageFont.LAYOUT_BASIC


def load_font(path, size):
    """Load a TrueType/OpenType font with Pillow's basic (fast) layout engine."""
    return ImageFont.truetype(path, size, layout_engine=_BASIC_LAYOUT)


def font_dirs_to_search(font_dirs=None):
    """Folders :func:`find_fonts` searches: ``font_dirs``, else $CRNN_FONT_DIRS, else defaults."""
    if font_dirs:
        dirs = list(font_dirs)
    elif os.environ.get(FONT_DIRS_ENV):
        dirs = [d for d in os.environ[FONT_DIRS_ENV].split(os.pathsep) if d]
    else:
        dirs = list(DEFAULT_FONT_DIRS)
    return [os.path.expanduser(d) for d in dirs]


def _font_files(directory):
    found = []
    for root, _, files in os.walk(directory, followlinks=True):
        for name in files:
            if name.lower().endswith(FONT_EXTENSIONS):
                found.append(os.path.join(root, name))
    return found


def _render(font, text):
    """Pixels and advance of ``text``: two different glyphs practically never match both."""
    left, top, right, bottom = font.getbbox(text)
    canvas = Image.new("L", (max(1, right - left) + 2, max(1, bottom - top) + 2), 0)
    ImageDraw.Draw(canvas).text((1 - left, 1 - top), text, fill=255, font=font)
    return canvas.size, canvas.tobytes(), font.getlength(text)


def missing_chars(path, chars):
    """Characters of ``chars`` that the font at ``path`` draws as its .notdef glyph.

    Whitespace is never reported: it renders blank in every font.
    Raises OSError if the font file cannot be loaded.
    """
    font = load_font(path, _PROBE_SIZE)
    notdef = _render(font, _UNMAPPED_CODEPOINT)
    missing = []
    for char in chars:
        if char.isspace() or char in missing:
            continue
        if _render(font, char) == notdef:
            missing.append(char)
    return missing


def font_supports(path, chars):
    """True if the font at ``path`` has a real glyph for every character in ``chars``."""
    try:
        return not missing_chars(path, chars)
    except (OSError, ValueError):
        return False


def find_fonts(font_dirs=None, chars=None):
    """Sorted .ttf/.otf paths under the font folders, recursively.

    Folders: ``font_dirs`` if given, else the ``CRNN_FONT_DIRS`` environment
    variable (``os.pathsep``-separated), else the usual system and user font
    folders. With ``chars``, fonts lacking any of them are dropped.

    Raises FileNotFoundError naming the folders searched when nothing usable
    is found.
    """
    dirs = font_dirs_to_search(font_dirs)
    fonts = sorted(set(path for d in dirs if os.path.isdir(d) for path in _font_files(d)))
    if not fonts:
        raise FileNotFoundError(
            "no .ttf/.otf fonts found in %s; install some (Debian/Ubuntu: apt-get install "
            "fonts-dejavu-core) or point --font-dir / $%s at a folder of fonts"
            % (", ".join(dirs), FONT_DIRS_ENV))
    if chars:
        usable = [path for path in fonts if font_supports(path, chars)]
        if not usable:
            raise FileNotFoundError(
                "none of the %d fonts found in %s can draw every character of the charset "
                "(%s); add fonts that cover it with --font-dir / $%s"
                % (len(fonts), ", ".join(dirs), _preview(chars), FONT_DIRS_ENV))
        fonts = usable
    return fonts


def _preview(chars, limit=20):
    text = "".join(chars)
    return text if len(text) <= limit else text[:limit] + "..."


def split_fonts(fonts, holdout_fraction=0.25, seed=0):
    """Deterministically split fonts into ``(train_fonts, heldout_fonts)``.

    The split depends on font file names (not their folders) and ``seed``, so
    the same fonts installed elsewhere split the same way. With two or more
    fonts both sides are non-empty; a single font goes to training.
    """
    if not 0.0 <= holdout_fraction <= 1.0:
        raise ValueError("holdout_fraction must be in [0, 1], got %r" % holdout_fraction)
    ordered = sorted(set(fonts), key=lambda path: (os.path.basename(path), path))
    count = len(ordered)
    if count < 2:
        return ordered, []
    heldout_count = min(count - 1, max(1, int(round(count * holdout_fraction))))
    permutation = np.random.RandomState(seed % 2 ** 32).permutation(count)
    heldout = set(int(i) for i in permutation[:heldout_count])
    train_fonts = [path for i, path in enumerate(ordered) if i not in heldout]
    heldout_fonts = [path for i, path in enumerate(ordered) if i in heldout]
    return train_fonts, heldout_fonts
