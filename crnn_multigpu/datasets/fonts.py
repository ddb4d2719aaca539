"""Finding TrueType/OpenType fonts, checking glyph coverage, and train/held-out splits.

Two kinds of font are left out by default:

* reserved families (Liberation and its designs Arimo, Tinos and Cousine, GNU
  FreeFont, the URW base35 set, TeX Gyre): the project keeps them for its
  independent evaluation, so nothing trains or validates on them unless asked
  (``include_reserved=True``, ``--include-reserved``). A font is recognised by
  its family name or its file's base name, never by the folders above it;
* faces that are not text faces although they map Latin letters: math,
  symbol and keyboard-cap fonts.

Splits hold out whole *superfamilies* (the family name's first word: "Noto Sans"
and "Noto Serif" go together), so a validation figure measures type designs the
model never saw, not sister weights of a trained face.
"""
import functools
import logging
import os
import re
import zlib

from PIL import Image, ImageDraw, ImageFont

from crnn_multigpu.datasets.face_names import COLLECTION_EXTENSIONS, collection_face, face_file
from crnn_multigpu.datasets.font_cache import CoverageCache
from crnn_multigpu.datasets.language import get_language

log = logging.getLogger(__name__)

DEFAULT_FONT_DIRS = (
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "~/.fonts",
    "~/.local/share/fonts",
)
FONT_DIRS_ENV = "CRNN_FONT_DIRS"
# .pfb: Type 1; .woff: the web format of npm's @fontsource packages (FreeType reads both);
# .ttc/.otc: collections (Noto CJK, WenQuanYi), whose faces are named "file.ttc#N".
FONT_EXTENSIONS = (".ttf", ".otf", ".pfb", ".woff") + COLLECTION_EXTENSIONS
_MAX_COLLECTION_FACES = 64
# U+FFFF is a permanent noncharacter: no font maps it, so it renders .notdef.
_UNMAPPED_CODEPOINT = u"\uffff"
_PROBE_SIZE = 24
# Matched against the family name (lower case), at word boundaries: "Cumulonimbus" and
# "Deliberation" are other families.
RESERVED_FAMILY_PATTERNS = (
    r"\bliberation\b", r"\barimo\b", r"\btinos\b", r"\bcousine\b", r"\bfreefont\b",
    r"^free ?(serif|sans|mono)\b", r"\bnimbus", r"\burw\b", r"\bbookman\b",
    r"century schoolbook l\b", r"^standard symbols", r"^c059", r"^p052", r"^z003", r"\btex ?gyre",
    # AR PL (Arphic's Chinese designs: UKai, UMing, SungtiL, KaitiM, Mingti, ...), also as PDFs
    # name them (UKaiCN, UMingTW).
    r"^ar ?pl\b", r"^u(kai|ming)(cn|tw|hk)?\b")
# Matched against the file's base name (lower case): the same families as their files are
# named, and ghostscript's URW Type 1 files (c059013l.pfb, n019003l.pfb, ...).
RESERVED_FILE_PATTERNS = (
    r"^liberation", r"^arimo\b", r"^tinos\b", r"^cousine\b", r"^free(serif|sans|mono)", r"^nimbus",
    r"^urw", r"^c059", r"^p052", r"^z003", r"^texgyre", r"^[abcdnpsz]0\d{5}l\.(pfb|afm)$",
    r"^u(kai|ming)\.ttc", r"^(gbsn00lp|gkai00mp|bkai00mp|bsmi00lp)\.ttf")
NON_TEXT_PATTERNS = (r"\bmath\b", r"symbol", r"keyboard", r"nushu", r"emoji", r"icon",
                     r"dingbat")
# Complex shaping (raqm) is not needed for the scripts this package targets,
# and with Pillow 9 it makes every text call ~20x slower.
_BASIC_LAYOUT = getattr(getattr(ImageFont, "Layout", None), "BASIC", None)
if _BASIC_LAYOUT is None:
    _BASIC_LAYOUT = ImageFont.LAYOUT_BASIC


def load_font(path, size):
    """Load a TrueType/OpenType face (a file, or ``file.ttc#N``) with Pillow's basic (fast)
    layout engine."""
    file, index = face_file(path)
    return ImageFont.truetype(file, size, index=index, layout_engine=_BASIC_LAYOUT)


def _collection_faces(path):
    """``path#0 .. path#N-1``: the faces of a font collection (none if it cannot be read)."""
    faces = []
    for index in range(_MAX_COLLECTION_FACES):
        try:
            ImageFont.truetype(path, _PROBE_SIZE, index=index, layout_engine=_BASIC_LAYOUT)
        except (OSError, ValueError):
            break
        faces.append(collection_face(path, index))
    return faces


def font_dirs_to_search(font_dirs=None, language_dirs=None):
    """Folders :func:`find_fonts` searches: ``font_dirs``, else $CRNN_FONT_DIRS, else the
    language's folders, else the system's."""
    if font_dirs:
        dirs = list(font_dirs)
    elif os.environ.get(FONT_DIRS_ENV):
        dirs = [d for d in os.environ[FONT_DIRS_ENV].split(os.pathsep) if d]
    else:
        dirs = list(language_dirs or DEFAULT_FONT_DIRS)
    return [os.path.expanduser(d) for d in dirs]


def _font_files(directory):
    found = []
    for root, _, files in os.walk(directory, followlinks=True):
        for name in files:
            path = os.path.join(root, name)
            if not name.lower().endswith(FONT_EXTENSIONS):
                continue
            if not os.path.isfile(path):
                # A FIFO by a font's name would be waited on for ever when its name is read.
                log.warning("skipping %s: not a regular file (a FIFO, socket or device), so not "
                            "a font", path)
            elif name.lower().endswith(COLLECTION_EXTENSIONS):
                found.extend(_collection_faces(path))
            else:
                found.append(path)
    return found


def _render(font, text):
    """Pixels and advance of ``text``: two different glyphs practically never match both."""
    left, top, right, bottom = font.getbbox(text)
    canvas = Image.new("L", (max(1, right - left) + 2, max(1, bottom - top) + 2), 0)
    ImageDraw.Draw(canvas).text((1 - left, 1 - top), text, fill=255, font=font)
    return canvas.size, canvas.tobytes(), font.getlength(text)


def missing_chars(path, chars, at_most=None):
    """Characters of ``chars`` that the font at ``path`` draws as its .notdef glyph.

    Whitespace is never reported: it renders blank in every font. With ``at_most``, the search
    stops at the first ``at_most + 1`` found: a face lacking more is not used, and a Latin face
    then costs a few hundred renders of a 6,899-character charset instead of all of them.
    Raises OSError if the font file cannot be loaded.
    """
    font = load_font(path, _PROBE_SIZE)
    notdef = _render(font, _UNMAPPED_CODEPOINT)
    missing, seen = [], set()
    for char in chars:
        if char.isspace() or char in seen:
            continue
        seen.add(char)
        if _render(font, char) == notdef:
            missing.append(char)
            if at_most is not None and len(missing) > at_most:
                break
    return missing


# A face may lack this share of a charset's characters and still be used for it: npm's Chinese
# @fontsource faces, joined from Google Fonts' slices, lack 38-39 of zh's 6,899. Text that
# needs a character a face lacks is drawn in another face (:func:`face_gaps`).
MAX_MISSING_SHARE = 0.01
# (face, chars, at_most) -> frozenset of the characters it lacks, as this process learnt them
# (with at_most, possibly only the first at_most + 1 of them)
_GAPS = {}
# Checking more faces x characters than this takes long enough (tens of seconds and up) to say
# what is being done, and to keep the answers found so far if the run is stopped: they are
# written down after every tenth of the faces, and at least this many faces apart.
_ANNOUNCED_CHECKS = 200000
_REPORT_EVERY = 50


def _lacking(path, chars, at_most=None):
    """The characters of ``chars`` the face lacks, a string (all of them if it cannot be read)."""
    try:
        return "".join(missing_chars(path, chars, at_most))
    except (OSError, ValueError):
        return chars


def _learn_gaps(fonts, chars, at_most=None):
    """Learn what each of ``fonts`` lacks of ``chars`` (with ``at_most``: enough to tell whether
    it lacks more), from the coverage cache or by rendering; long checks report progress."""
    coverage = CoverageCache()
    needed = [path for path in fonts if (path, chars, at_most) not in _GAPS]
    unknown = sum(1 for path in needed if not coverage.knows(path, chars, at_most))
    announce = unknown * len(chars) > _ANNOUNCED_CHECKS
    if announce:
        log.info("checking which of %d characters each of %d faces draws (once per machine; "
                 "kept in %s)", len(chars), unknown, coverage.path)
    every = max(_REPORT_EVERY, unknown // 10)
    report_at = every
    for path in needed:
        _GAPS[path, chars, at_most] = frozenset(coverage.missing(path, chars, _lacking, at_most))
        if announce and report_at <= coverage.checked < unknown:
            coverage.save()  # a stopped run keeps what it found
            log.info("checked %d of %d faces", coverage.checked, unknown)
            report_at += every
    coverage.save()


def face_gaps(fonts, chars):
    """``{face: frozenset}``: the characters of ``chars`` each of ``fonts`` lacks, for the faces
    that lack any (:func:`find_fonts` keeps faces lacking up to ``MAX_MISSING_SHARE`` of a
    charset). Answers come from this process's earlier questions or the coverage cache."""
    chars = "".join(chars)
    _learn_gaps(fonts, chars)
    return dict((path, _GAPS[path, chars, None]) for path in fonts if _GAPS[path, chars, None])


@functools.lru_cache(maxsize=None)
def font_supports(path, chars):
    """True if the font at ``path`` has a real glyph for every character in ``chars``."""
    try:
        return not missing_chars(path, chars)
    except (OSError, ValueError):
        return False


@functools.lru_cache(maxsize=None)
def font_family(path):
    """The font's family name as its name table gives it (the file name if unreadable)."""
    try:
        return load_font(path, _PROBE_SIZE).getname()[0] or os.path.basename(path)
    except (OSError, ValueError):
        return os.path.splitext(os.path.basename(path))[0]


@functools.lru_cache(maxsize=None)
def font_style(path):
    """The face's looks as a frozenset of "bold", "italic" and "mono".

    Bold and italic come from the style name ("Bold Italic", "SemiBold", "Oblique"); mono
    from the glyphs: 'i', 'M' and 'W' advance equally. Unreadable fonts have no style.
    """
    try:
        font = load_font(path, _PROBE_SIZE)
        style = (font.getname()[1] or "").lower()
        advances = set(round(font.getlength(char), 1) for char in "iMW")
    except (OSError, ValueError):
        return frozenset()
    looks = set()
    if re.search(r"bold|black|heavy|semibold|demi", style):
        looks.add("bold")
    if re.search(r"italic|oblique|slanted", style):
        looks.add("italic")
    if len(advances) == 1:
        looks.add("mono")
    return frozenset(looks)


def superfamily(family):
    """Grouping key for splits: the family name's first word, lower case ("noto", "pt")."""
    words = re.findall(r"[a-z0-9]+", family.lower().replace("-", " "))
    return words[0] if words else family.lower()


def _matches(patterns, text):
    return any(re.search(pattern, text.lower()) for pattern in patterns)


def is_reserved(path, family=None):
    """True for fonts of the families the project reserves for its independent checks."""
    return (_matches(RESERVED_FAMILY_PATTERNS, family or font_family(path)) or
            _matches(RESERVED_FILE_PATTERNS, os.path.basename(path)))


def is_text_face(path, family=None):
    """False for math, symbol and keyboard-cap faces, which map letters but do not set text."""
    return not (_matches(NON_TEXT_PATTERNS, family or font_family(path)) or
                _matches(NON_TEXT_PATTERNS, os.path.basename(path)))


def find_fonts(font_dirs=None, chars=None, include_reserved=False, language=None):
    """Sorted .ttf/.otf/.pfb/.woff paths (and ``.ttc#N`` faces) of text faces under the font
    folders, recursively.

    Folders: ``font_dirs`` if given, else the ``CRNN_FONT_DIRS`` environment
    variable (``os.pathsep``-separated), else the ``language``'s (default: English) folders,
    else the usual system and user font folders. Reserved families (see the module docstring)
    are left out unless ``include_reserved``; math/symbol faces always, and families the
    language leaves out (another language's designs). With ``chars``, fonts lacking more than
    ``MAX_MISSING_SHARE`` of them (or the language's ``max_missing_share``) (any, for a charset under 100 characters) are dropped;
    :func:`face_gaps` then tells what each kept face lacks.

    Raises FileNotFoundError naming the folders searched when nothing usable
    is found.
    """
    language = language or get_language()
    dirs = font_dirs_to_search(font_dirs, language.font_dirs)
    fonts = sorted(set(path for d in dirs if os.path.isdir(d) for path in _font_files(d)))
    families = dict((path, font_family(path)) for path in fonts)
    fonts = [path for path in fonts if is_text_face(path, families[path]) and
             language.draws_family(families[path]) and
             (include_reserved or not is_reserved(path, families[path]))]
    if not fonts:
        raise FileNotFoundError(
            "no .ttf/.otf/.pfb/.woff fonts found in %s; install some (Debian/Ubuntu: apt-get install "
            "fonts-dejavu-core) or point --font-dir / $%s at a folder of fonts"
            % (", ".join(dirs), FONT_DIRS_ENV))
    if chars:
        chars = "".join(chars)
        share = language.max_missing_share
        allowed = int((MAX_MISSING_SHARE if share is None else share) * len(chars))
        _learn_gaps(fonts, chars, at_most=allowed)
        usable = [path for path in fonts if len(_GAPS[path, chars, allowed]) <= allowed]
        if not usable:
            raise FileNotFoundError(
                "none of the %d fonts found in %s can draw the charset (%s)%s; add fonts "
                "that cover it with --font-dir / $%s"
                % (len(fonts), ", ".join(dirs), _preview(chars),
                   " but for %d of its characters" % allowed if allowed else "", FONT_DIRS_ENV))
        fonts = usable
    return fonts


def _preview(chars, limit=20):
    text = "".join(chars)
    return text if len(text) <= limit else text[:limit] + "..."


def split_fonts(fonts, holdout_fraction=0.25, seed=0):
    """Deterministically split fonts into ``(train_fonts, heldout_fonts)`` by superfamily.

    About ``holdout_fraction`` of the superfamilies (never all of them) are held
    out whole. Which ones depends only on their names and ``seed``, so the same
    fonts installed elsewhere, or more fonts added, split the same way. With a
    single superfamily, fonts are split by file instead (DejaVu-only machines),
    so that both sides stay non-empty when there are two or more fonts.
    """
    if not 0.0 <= holdout_fraction <= 1.0:
        raise ValueError("holdout_fraction must be in [0, 1], got %r" % holdout_fraction)
    ordered = sorted(set(fonts), key=lambda path: (os.path.basename(path), path))
    if len(ordered) < 2:
        return ordered, []
    groups = dict((path, superfamily(font_family(path))) for path in ordered)
    if len(set(groups.values())) < 2:
        groups = dict((path, os.path.basename(path)) for path in ordered)
    # A stable hash per group name: adding a family never moves the others.
    score = dict((name, zlib.crc32(("%d:%s" % (seed, name)).encode("utf-8")) / 2.0 ** 32)
                 for name in set(groups.values()))
    names = sorted(score, key=lambda name: (score[name], name))
    heldout_names = set(name for name in names if score[name] < holdout_fraction)
    if not heldout_names and holdout_fraction > 0:
        heldout_names = set(names[:1])
    if len(heldout_names) == len(names):
        heldout_names.discard(names[-1])
    train_fonts = [path for path in ordered if groups[path] not in heldout_names]
    heldout_fonts = [path for path in ordered if groups[path] in heldout_names]
    return train_fonts, heldout_fonts


FONT_SIDES = ("all", "train", "heldout")


def select_fonts(side="all", font_dirs=None, chars=None, holdout_fraction=0.2, seed=0,
                 include_reserved=False, language=None):
    """The fonts of one side of the split: "all", "train" or "heldout" (see :func:`split_fonts`)."""
    if side not in FONT_SIDES:
        raise ValueError("font side must be one of %s, got %r" % (", ".join(FONT_SIDES), side))
    fonts = find_fonts(font_dirs, chars=chars, include_reserved=include_reserved,
                       language=language)
    if side == "all":
        return fonts
    train_fonts, heldout_fonts = split_fonts(fonts, holdout_fraction, seed=seed)
    chosen = train_fonts if side == "train" else heldout_fonts
    if not chosen:
        raise ValueError("the %s side of the font split is empty: only %d usable font(s) found; "
                         "add fonts with --font-dir or use all fonts" % (side, len(fonts)))
    return chosen
