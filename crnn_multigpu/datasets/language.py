"""A language as data: its charset, type designs, text sources and scoring in one description.

Each language is a JSON file in ``crnn_multigpu/datasets/languages/`` (``en.json``,
``zh.json``); :func:`get_language` reads one by name. Nothing in the code branches on a
language: a new one (Japanese, Korean, Icelandic) is a new description and, if it needs one, a
charset file beside it. The keys:

* ``extends``: a shared base description (``_latin.json``) whose keys this one's override;
* ``charset``: ``printable_ascii`` or a charset file beside the description; ``normalize``: the
  Unicode normal form text is put in before it is spelt (``NFC``: precomposed letters);
* ``fonts``: ``dirs`` to search (default: the system's font folders), ``exclude_families``
  (regular expressions on the family name) for faces that draw the charset but not in the
  language's own design (e.g. the Japanese faces of a CJK collection), and
  ``max_missing_share``: the share of the charset a face may lack and still draw the text it
  can (default :data:`crnn_multigpu.datasets.fonts.MAX_MISSING_SHARE`; few faces draw
  Vietnamese);
* ``prose`` (text sources, :mod:`text_sources`), ``words``: the word list, ``paths`` (the first
  that exists; inside the Python ``package`` when one is named), its ``format`` (``words``: one a
  line, an optional count after ``separator``; ``hunspell``: a Hunspell ``.dic``) and a list of
  ``common`` words drawn more often;
* ``mixes``: the training mixes the language joins, with its share (``{"latin": 0.05}``); a
  description with ``mix`` (``latin.json``) draws its lines from its mix's members by share;
* how text is cut and spelt: ``spelling`` (characters outside the charset and what to write
  instead), ``nfkc_fold`` (else NFKC's form when the charset writes it), ``sentence_end``,
  ``content`` (a unit must hold one such character), ``token`` and ``joiner`` (how a line is
  cut into pieces and put back), ``no_space_beside`` (characters beside which no space is
  written: Chinese has none between words, though text layers put some in);
* ``phrase`` punctuation, ``line_kinds`` (the mix of kinds of line), and ``scoring``
  (``strict`` or ``nfkc-blank-blind``: what :func:`crnn_multigpu.ocr.metrics.scoring_fold`
  compares);
* ``band_room``: how a crop of one band of ink (no part of it reaching above or below the rest)
  is framed as a full line (:mod:`crnn_multigpu.ocr.text_box`): the room above and below the
  band, in band heights; the default, :data:`LATIN_BAND_ROOM`, takes the band for small letters
  (a Chinese band is the characters themselves);
* ``char_lm``: the character language model the reading tools fuse with the image
  (:mod:`crnn_multigpu.ocr.char_lm`): its ``order``, ``weight`` and ``bonus``, whether they
  read with it unless told otherwise (``on_by_default``), whether the word list joins the
  prose it is counted from (``with_word_list``), and the file of counts shipped beside the
  description (``counts``; else they are counted from the prose at start-up);
* ``checks``: what the side-by-side checks need (``scripts/compare_latin.py``,
  ``scripts/reading_systems.py``): ``tesseract``, the Tesseract model that reads the language
  (``deu``); ``reserved_pdf``, a document in the language reserved for the final checks (a
  translation of lshort: no model trains, validates or is chosen on it), and ``pages``, the body
  pages of it scored whole (lines are cut from its other pages).
"""
import importlib
import io
import json
import os
import re
import unicodedata
import zlib

from crnn_multigpu.datasets.text_sources import make_source

LANGUAGES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "languages")
DEFAULT_LANGUAGE = "en"
PARTS = ("all", "train", "heldout")
HELDOUT_EVERY = 10  # one prose unit in ten is held out
# The character language model's settings where a description leaves them out: chosen with
# make train's model on 1,000 words of its held-out families rendered apart from its
# validation set (crnn-generate --fonts heldout --kinds word --seed 7), over orders 3-6,
# weights 0.1-1.2 and bonuses 0-2.5: 91.8 % greedy, 93.4 % so (docs/ocr.md); off unless
# asked for.
# A description's ``band_room`` where it has none: the room a full line has above and below a
# band of Latin small letters, in band heights (DejaVu: brackets rise 0.39 x-heights above it,
# descenders fall 0.44 below; Times 0.51 and 0.49).
LATIN_BAND_ROOM = (0.45, 0.45)
CHAR_LM_DEFAULTS = {"order": 4, "weight": 0.2, "bonus": 1.5, "on_by_default": False,
                    "with_word_list": False, "counts": None}


def language_names():
    """The names of the described languages, sorted (``_*.json`` are shared bases, not
    languages)."""
    return sorted(name[:-5] for name in os.listdir(LANGUAGES_DIR)
                  if name.endswith(".json") and not name.startswith("_"))


def _description(name):
    """The description ``languages/<name>.json``, with the keys of the base it ``extends``
    under its own."""
    path = os.path.join(LANGUAGES_DIR, "%s.json" % name)
    if not os.path.isfile(path):
        raise ValueError("no language %r; described languages: %s"
                         % (name, ", ".join(language_names())))
    with io.open(path, encoding="utf-8") as handle:
        description = json.load(handle)
    base = description.pop("extends", None)
    return dict(_description(base), **description) if base else description


def get_language(name=None):
    """The :class:`Language` described by ``languages/<name>.json`` (default: English)."""
    return Language(_description(name or DEFAULT_LANGUAGE))


def mix_members(mix):
    """``[(Language, share)]``: every described language that joins the training mix ``mix``
    (its ``mixes`` key names it, with its share), by name."""
    members = []
    for name in language_names():
        share = _description(name).get("mixes", {}).get(mix)
        if share:
            members.append((get_language(name), float(share)))
    return members


class Language(object):
    """One language's description (see the module docstring), with the operations on text
    that follow from it."""

    def __init__(self, description):
        self.description = description
        self.name = description["name"]
        self.title = description["title"]
        fonts = description.get("fonts", {})
        self.font_dirs = fonts.get("dirs")
        self._excluded_families = [re.compile(p, re.I) for p in fonts.get("exclude_families", ())]
        self.prose_sources = [make_source(spec) for spec in description.get("prose", ())]
        self.words = description.get("words") or {}
        self.mix = description.get("mix")
        self._normal_form = description.get("normalize")
        self.max_missing_share = fonts.get("max_missing_share")
        self._spelling = description.get("spelling", {})
        self._nfkc = bool(description.get("nfkc_fold"))
        self._sentence_end = re.compile(description["sentence_end"])
        self._content = re.compile(description["content"])
        self.token = re.compile(description["token"])
        self.joiner = description["joiner"]
        beside = description.get("no_space_beside")
        self._space_beside = re.compile(r" +(?=%s)|(?<=%s) +" % (beside, beside)) \
            if beside else None
        self.phrase = description["phrase"]
        self.code_words = description.get("code_words", "words")
        self.line_kinds = description["line_kinds"]
        self.scoring = description.get("scoring", "strict")
        self.char_lm = dict(CHAR_LM_DEFAULTS, **description.get("char_lm", {}))
        self.band_room = tuple(description.get("band_room", LATIN_BAND_ROOM))
        self._checks = description.get("checks", {})
        self._charset = None

    @property
    def charset(self):
        """The language's :class:`~crnn_multigpu.datasets.charset.Charset`."""
        if self._charset is None:
            from crnn_multigpu.datasets.charset import Charset
            name = self.description["charset"]
            self._charset = Charset.printable_ascii() if name == "printable_ascii" else \
                Charset.from_file(os.path.join(LANGUAGES_DIR, name))
        return self._charset

    @property
    def checks(self):
        """The side-by-side checks' data (the ``checks`` key): ``tesseract`` (a model name or
        None), ``reserved_pdf`` (a path or None) and ``pages`` (a list of page numbers)."""
        return {"tesseract": self._checks.get("tesseract"),
                "reserved_pdf": self._checks.get("reserved_pdf"),
                "pages": list(self._checks.get("pages", ()))}

    def draws_family(self, family):
        """False for a family the description leaves out (another language's design)."""
        return not any(pattern.search(family) for pattern in self._excluded_families)

    def spell(self, text):
        """``text`` respelt (:meth:`respell`) and tidied (:meth:`tidy`)."""
        return self.tidy(self.respell(text))

    def respell(self, text, charset=None):
        """``text`` in the description's normal form (``normalize``: NFC, say), with the
        characters outside ``charset`` (default: the language's) spelt as it writes them (the
        ``spelling`` table, then NFKC when asked for); what cannot be written is kept, for the
        caller to refuse."""
        charset = charset or self.charset
        if self._normal_form:
            text = unicodedata.normalize(self._normal_form, text)
        out = []
        for char in text:
            if char in charset:
                out.append(char)
            elif char in self._spelling:
                out.append(self._spelling[char])
            elif self._nfkc and not charset.unknown_chars(unicodedata.normalize("NFKC", char)):
                out.append(unicodedata.normalize("NFKC", char))
            else:
                out.append(char)
        return "".join(out)

    def tidy(self, text):
        """No leading, trailing or doubled spaces (an image cannot show them), and none beside
        a character that takes none."""
        return self.unspace(re.sub(r"\s+", " ", text).strip())

    def unspace(self, text):
        """``text`` without the spaces beside a character that takes none (``no_space_beside``;
        English: ``text`` itself)."""
        return self._space_beside.sub("", text) if self._space_beside else text

    def join_pieces(self, pieces):
        """The pieces of one row of a page, read apart, as one line: a space between two
        pieces, but none beside a character that takes none."""
        return self.unspace(" ".join(pieces))

    def label_of(self, text):
        """How the language writes ``text`` (spelt and tidied), or None if its charset cannot."""
        label = self.spell(text)
        return None if not label or self.charset.unknown_chars(label) else label

    def units(self, text):
        """Sentences of running text and single lines of code, in order."""
        units = []
        for paragraph in re.split(r"\n\s*\n", text):
            lines = [line.strip() for line in paragraph.splitlines() if line.strip()]
            if any(line.startswith((">>>", "...")) for line in lines):
                units.extend(lines)  # an interactive example: one line is one unit
                continue
            joined = " ".join(lines)
            units.extend(part.strip() for part in self._sentence_end.split(joined)
                         if part.strip())
        return units

    def prose(self, part="all", paths=None, charset=None):
        """Prose units ``charset`` (default: the language's) can write, spelt: from ``paths``
        (text files), else the description's sources. ``part``: "train", "heldout" (one unit
        in :data:`HELDOUT_EVERY`, by a hash of the unit) or "all"."""
        charset = charset or self.charset
        if part not in PARTS:
            raise ValueError("text part must be one of %s, got %r" % (", ".join(PARTS), part))
        if paths:
            for path in paths:
                if not os.path.isfile(path):
                    raise FileNotFoundError("--text %s does not exist: pass a UTF-8 text file "
                                            "of %s prose" % (path, self.title))
            sources = [make_source({"source": "files", "paths": list(paths)})]
        else:
            sources = self.prose_sources
        units, seen = [], set()
        for source in sources:
            for unit in self.units(self.respell(source.text(), charset)):
                unit = self.tidy(unit)
                # Rulers ("-----") and other runs of punctuation are not text.
                if unit in seen or charset.unknown_chars(unit) or \
                        not self._content.search(unit):
                    continue
                seen.add(unit)
                held = zlib.crc32(unit.encode("utf-8")) % HELDOUT_EVERY == 0
                if part == "all" or held == (part == "heldout"):
                    units.append(unit)
        if not units:
            where = ", ".join(paths) if paths else "; ".join(s.describe() for s in sources)
            raise ValueError("no %s%s prose the charset can write was found in %s"
                             % ("" if part == "all" else part + " ", self.title, where))
        return units

    def char_lm_counts_path(self):
        """The path of the character model's counts the description ships, or None."""
        counts = self.char_lm["counts"]
        return os.path.join(LANGUAGES_DIR, counts) if counts else None

    def word_list_path(self):
        """The language's word list, or None (then words come from the prose): the first of the
        description's ``words.paths`` that exists, inside the installed Python
        ``words.package`` when one is named (jieba's dictionary)."""
        paths = self.words.get("paths", ())
        package = self.words.get("package")
        if package:
            try:
                module = importlib.import_module(package)
            except ImportError:
                raise ValueError("the %s word list comes with the Python package %s: pip install "
                                 "%s" % (self.title, package, package))
            paths = [os.path.join(os.path.dirname(module.__file__), path) for path in paths]
        return next((path for path in paths if os.path.isfile(path)), None)

    @property
    def word_list_format(self):
        """How the word list is written (:data:`crnn_multigpu.datasets.words.WORD_LIST_FORMATS`)."""
        return self.words.get("format", "words")

    @property
    def word_list_separator(self):
        """What separates a word from its count in the word list (default: a TAB)."""
        return self.words.get("separator", "\t")

    @property
    def common_words_path(self):
        """A list of the language's commoner words (drawn more often), or None."""
        return self.words.get("common")
