"""What synthetic printed LINES say: prose, phrases, code and numbers, 1-60 characters.

What a line is made of comes from its language's description
(:mod:`crnn_multigpu.datasets.language`): its prose sources, word list, punctuation and
spacing. English is the default; its prose is real English that every Debian/Ubuntu machine
already has, read at run time (nothing is copied into this repository):

* the Python reference manual as plain text (``pydoc_data.topics``, part of every CPython;
  Debian package libpython3.x-stdlib): technical English full of identifiers, quotes,
  brackets and code, much like the documents people run OCR on;
* the licence texts in ``/usr/share/common-licenses`` (Debian's essential base-files):
  legal English with numbered sections, dates and addresses.

``--text FILE`` replaces both with the user's own text. Prose units (sentences, code lines)
are split deterministically into a training part and a held-out part (one in ten, by a hash
of the unit), so a validation set can read sentences the model never trained on.

Beside prose fragments, a line may be a phrase of dictionary words with punctuation, a
code-like line (identifiers with underscores and dots, calls, assignments, paths, options)
or numbers (dates, times, amounts, versions, section numbers). Prose fragments sometimes
get one word replaced by such a token, as documents mix them into running text.
"""
import re

import numpy as np

from crnn_multigpu.datasets.language import get_language, mix_members
from crnn_multigpu.datasets.words import WordList
# Share of each kind of line in the default mix.
LINE_MIX = (("prose", 0.55), ("phrase", 0.15), ("code", 0.15), ("numbers", 0.15))
# Kinds drawn only when named in ``kinds`` (then with this share among the named), so the
# default mix, and the figures measured with it, stay as they are.
EXTRA_KINDS = (("table", 0.15), ("confusable", 0.15))
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
# Glyphs that look alike in many faces (1 l I i |, 0 O o).
_LOOKALIKES = "1lIi|!0Oo"
_CODE_WORDS = ("self", "args", "value", "name", "path", "data", "size", "count", "index",
               "key", "item", "result", "buffer", "config", "node", "error", "len", "str",
               "int", "None", "True", "False", "return", "const", "char", "void", "NULL")


def ascii_spelling(text):
    """``text`` with typographic characters (curly quotes, dashes, ligatures) spelt in ASCII."""
    return get_language("en").respell(text)


def prose_units(text):
    """Sentences of running English text and single lines of code, in order."""
    return get_language("en").units(text)


def load_prose(charset, paths=None, part="all", language=None):
    """Prose units the charset can write: from ``paths`` (text files), else the language's
    sources (default: English); see :meth:`~crnn_multigpu.datasets.language.Language.prose`."""
    return (language or get_language()).prose(part, paths, charset)


class LineSampler(object):
    """Draws ``(drawn, label)`` printed lines of ``min_len..max_len`` characters.

    The same interface as :class:`~crnn_multigpu.datasets.words.TextSampler`, so the
    renderer takes either. The charset must contain the space; lines never start or end
    with one, nor hold two in a row (an image cannot show them).

    Args:
      charset: the model's characters (e.g. data/charsets/printable_ascii.txt).
      min_len, max_len: line length in characters.
      texts: text files of prose (default: see the module docstring).
      part: "train", "heldout" or "all" of the prose units.
      words: word list path for phrases and identifiers (default: the system list; without
        one, words are taken from the prose).
      kinds: which of :data:`LINE_MIX` and :data:`EXTRA_KINDS` to draw (default: the
        language's ``line_kinds``).
      language: a :class:`~crnn_multigpu.datasets.language.Language` (default: English): its
        prose, words, punctuation and spacing.
    """

    def __init__(self, charset, min_len=1, max_len=60, texts=None, part="all", words=None,
                 kinds=None, language=None):
        if " " not in charset:
            raise ValueError("lines need a charset with the space character; use "
                             "data/charsets/printable_ascii.txt or add a line holding one space")
        if not 1 <= min_len <= max_len:
            raise ValueError("need 1 <= min_len <= max_len, got %d and %d" % (min_len, max_len))
        known = LINE_MIX + EXTRA_KINDS
        unknown = set(kinds or ()) - set(kind for kind, _ in known)
        if unknown:
            raise ValueError("unknown line kind(s) %s; choose from %s" % (
                ", ".join(sorted(unknown)), ", ".join(kind for kind, _ in known)))
        self.language = language = language or get_language()
        self.charset, self.min_len, self.max_len = charset, min_len, max_len
        self.units = language.prose(part, texts, charset)
        # Identifiers are ASCII; a language without a word list takes its words from its prose.
        self._prose_words = sorted(set(w for u in self.units for w in re.findall(r"[A-Za-z]{3,}", u)))
        self._prose_vocabulary = sorted(set(w for u in self.units for w in re.findall(r"[^\W\d_]{3,}", u)))
        words = words or language.word_list_path()
        writable = lambda word: word if not charset.unknown_chars(word) else None  # noqa: E731
        self.words = WordList(words, writable, max_len=20, common_path=language.common_words_path,
                              separator=language.word_list_separator,
                              fmt=language.word_list_format) if words else None
        self._code_word = self._word if language.code_words == "words" else self._prose_word
        mix = [(kind, share) for kind, share in known if kind in kinds] if kinds else \
            list(language.line_kinds.items())
        total = sum(share for _, share in mix)
        self.kinds = [kind for kind, _ in mix]  # the kinds drawn, in mix order
        self._kind_cumulative = np.cumsum([share / total for _, share in mix])

    def label_of(self, drawn):
        """The label of ``drawn``: itself, or None if the charset cannot write it."""
        return None if self.charset.unknown_chars(drawn) else drawn

    def sample(self, rng):
        """``(drawn, label)`` of one line: equal (a line charset is case-sensitive), but for the
        wider gaps a table row draws between its cells, which its label spells as one space."""
        kind = self.kinds[min(int(np.searchsorted(self._kind_cumulative, rng.rand())),
                              len(self.kinds) - 1)]
        # Documents are mostly long lines; short ones are headings, labels, table cells.
        if rng.rand() < 0.6:
            length = rng.randint(max(self.min_len, min(25, self.max_len)), self.max_len + 1)
        else:
            length = rng.randint(self.min_len, min(25, self.max_len) + 1)
        make = getattr(self, "_" + kind)
        for _ in range(10):
            drawn = make(rng, length)
            tidy = self.language.tidy(drawn)
            line = _fit(tidy, self.max_len)
            if len(line) >= self.min_len and self.label_of(line) is not None:
                # Only a table row is drawn with its own gaps (columns), unless it was cut to
                # fit; other lines are drawn as labelled, one space between words.
                return (drawn if kind == "table" and tidy == line else line), line
        line = self._word(rng)[:self.max_len]  # fallback: one word always fits
        line = (line * self.min_len)[:max(self.min_len, len(line))][:self.max_len]
        return line, self.label_of(line)

    # ----- kinds of line -----

    def _prose(self, rng, length):
        """A token-aligned window of a prose unit (words, or characters where the language
        writes no spaces), sometimes with a token mixed in."""
        unit = self.units[rng.randint(len(self.units))]
        joiner = self.language.joiner
        words = self.language.token.findall(unit)
        if len(unit) > length:
            start = rng.randint(len(words))
            picked = []
            for word in words[start:]:
                if len(joiner.join(picked + [word])) > length:
                    break
                picked.append(word)
            words = picked or [words[start][:length]]
        if len(words) > 2 and rng.rand() < 0.25:
            words[rng.randint(len(words))] = self._token(rng)
        return joiner.join(words)

    def _phrase(self, rng, length):
        """Dictionary words with commas, a closing stop, sometimes quotes or brackets, in the
        language's punctuation."""
        joiner, punctuation = self.language.joiner, self.language.phrase
        commas, stops = punctuation["comma"], punctuation["stops"]
        words = []
        while len(joiner.join(words)) < length:
            word = self._word(rng)
            style = rng.rand()
            if style < 0.15:
                word = word.capitalize()
            elif style < 0.2:
                word = word.upper()
            if rng.rand() < 0.1:
                word += commas[rng.randint(len(commas))] if len(commas) > 1 else commas
            words.append(word)
        if rng.rand() < 0.3:
            words[0] = words[0].capitalize()
            words[-1] += stops[0] if rng.rand() < 0.7 else rng.choice(list(stops[1:]))
        if len(words) > 2 and rng.rand() < 0.2:
            start = rng.randint(len(words) - 1)
            brackets = punctuation["brackets"]
            left, right = brackets[rng.randint(len(brackets))]
            words[start] = left + words[start]
            words[start + 1] = words[start + 1] + right
        return joiner.join(words)

    def _code(self, rng, length):
        """A line of code or configuration."""
        parts = []
        while len(" ".join(parts)) < length:
            parts.append(self._code_piece(rng))
            if rng.rand() < 0.4:
                break
        return " ".join(parts)

    def _numbers(self, rng, length):
        """Dates, times, amounts, versions, section numbers, with a word or two between."""
        parts = []
        while len(" ".join(parts)) < length:
            parts.append(self._number(rng) if rng.rand() < 0.6 else self._word(rng))
        return " ".join(parts)

    def _table(self, rng, length):
        """A row of a table: a label, then short cells of one type (y/n marks, single letters,
        numbers, dashes for empty cells, short words) with column gaps of 2-6 spaces."""
        label = " ".join(self._word(rng) for _ in range(rng.randint(1, 3)))
        label = label.capitalize() if rng.rand() < 0.4 else \
            label.upper() if rng.rand() < 0.15 else label
        kind = rng.randint(4)
        cells = []
        for _ in range(rng.randint(2, 9)):
            if rng.rand() < 0.2:
                cell = "-"
            elif kind == 0:
                cell = "yn"[rng.randint(2)] if rng.rand() < 0.7 else "xhdcYNX"[rng.randint(7)]
            elif kind == 1:
                cell = self._number(rng) if rng.rand() < 0.3 else \
                    str(rng.randint(0, 10 ** rng.randint(1, 5)))
            elif kind == 2:
                cell = min((self._word(rng) for _ in range(3)), key=len)  # short words
            else:
                cell = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng.randint(52)]
            cells.append(cell)
        row = label
        for cell in cells:  # columns of different widths: a gap of its own before each cell
            row += " " * rng.randint(2, 7) + cell
        return row

    def _confusable(self, rng, length):
        """Text where look-alike glyphs decide: identifiers mixing 1/l/I and 0/O, capitals with
        underscores, hex dumps and option lists (what readers of manuals misread most)."""
        parts = []
        while len(" ".join(parts)) < length:
            parts.append(self._confusable_piece(rng))
        return " ".join(parts)

    # ----- tokens -----

    def _word(self, rng):
        if self.words is not None:
            return self.words.sample(rng)
        return self._prose_vocabulary[rng.randint(len(self._prose_vocabulary))]

    def _prose_word(self, rng):
        return self._prose_words[rng.randint(len(self._prose_words))]

    def _identifier(self, rng):
        words = [self._code_word(rng).lower() for _ in range(rng.randint(1, 4))]
        words = [re.sub(r"[^a-z0-9]", "", w) or "x" for w in words]
        style = rng.rand()
        if style < 0.45:
            name = "_".join(words)
        elif style < 0.65:
            name = words[0] + "".join(w.capitalize() for w in words[1:])
        elif style < 0.8:
            name = ".".join(words)
        elif style < 0.9:
            name = "_".join(words).upper()
        else:
            name = "".join(w.capitalize() for w in words)
        if rng.rand() < 0.2:
            name += str(rng.randint(0, 100))
        return name

    def _number(self, rng):
        kind = rng.randint(11)
        year, month, day = rng.randint(1950, 2040), rng.randint(1, 13), rng.randint(1, 29)
        if kind == 0:
            return "%04d-%02d-%02d" % (year, month, day)
        if kind == 1:
            return "%s %d, %d" % (_MONTHS[month - 1], day, year)
        if kind == 2:
            return "%02d/%02d/%04d" % (day, month, year)
        if kind == 3:
            return "%d:%02d" % (rng.randint(0, 24), rng.randint(0, 60))
        if kind == 4:
            return "$%s.%02d" % ("{:,}".format(rng.randint(0, 100000)), rng.randint(0, 100))
        if kind == 5:
            return "%d%%" % rng.randint(0, 101)
        if kind == 6:
            return "v%d.%d.%d" % tuple(rng.randint(0, 20, size=3))
        if kind == 7:
            return ".".join(str(n) for n in rng.randint(1, 13, size=rng.randint(1, 4))) + "."
        if kind == 8:
            return "0x%X" % rng.randint(0, 2 ** 16)
        if kind == 9:
            return "%d-%d" % (rng.randint(1, 100), rng.randint(100, 1000))
        return str(rng.randint(0, 10 ** rng.randint(1, 7)))

    def _token(self, rng):
        """A token documents mix into prose: a number, identifier, quoted or bracketed word."""
        kind = rng.randint(5)
        if kind == 0:
            return self._number(rng)
        if kind == 1:
            return self._identifier(rng)
        if kind == 2:
            return '"%s"' % self._word(rng)
        if kind == 3:
            return "(%s)" % self._word(rng)
        return "%s()" % self._identifier(rng)

    def _code_piece(self, rng):
        name, other = self._identifier(rng), self._identifier(rng)
        word = _CODE_WORDS[rng.randint(len(_CODE_WORDS))]
        number = self._number(rng) if rng.rand() < 0.5 else str(rng.randint(0, 1000))
        templates = (
            "%(name)s(%(word)s, %(number)s)", "%(name)s = %(other)s;", "%(name)s ::= %(upper)s",
            "%(name)s.%(other)s()", "if (%(word)s > %(number)s) {", "return %(name)s;",
            "#include <%(other)s.h>", "--%(dashed)s=%(number)s", "/usr/share/%(other)s/%(word)s",
            "%(name)s[%(word)s] += %(number)s", "\"%(word)s\": \"%(other)s\",",
            "$ %(word)s %(dashed)s", "def %(name)s(%(word)s):", "%(other)s->%(word)s",
            "<%(word)s>%(name)s</%(word)s>", "{%(word)s: %(number)s}", "%(name)s@%(other)s.org",
            "%(word)s & ~%(upper)s | %(number)s", "'%(other)s' | `%(word)s`",
            # Backslashes, carets and tildes: Windows paths and prompts, escapes, TeX, regular
            # expressions, control keys. Rare in prose, common in manuals (measured: the
            # lines above gave one backslash in 18,000 characters).
            "C:\\%(word)s\\%(other)s> %(word)s", "set PATH=%%PATH%%;C:\\%(word)s\\bin",
            "printf(\"%(word)s: %%d\\n\", %(name)s);", "\\%(word)s{%(name)s}",
            "s/^%(word)s\\s*/%(other)s/g", "press ^%(letter)s to %(word)s",
            "%(name)s ^= %(number)s", "~/%(dashed)s/%(word)s")
        template = templates[rng.randint(len(templates))]
        return template % dict(name=name, other=other, word=word, number=number,
                               upper=name.upper(), dashed=name.replace("_", "-").lower(),
                               letter="ABCDEFGHIJKLMNOPQRSTUVWXYZ"[rng.randint(26)])


    def _confusable_piece(self, rng):
        kind = rng.randint(6)
        words = [re.sub(r"[^a-z]", "", self._word(rng).lower()) or "x"
                 for _ in range(rng.randint(1, 4))]
        if kind == 0:  # a hex dump row: offset, then bytes
            case = "%02X" if rng.rand() < 0.5 else "%02x"
            data = " ".join(case % b for b in rng.randint(0, 256, size=rng.randint(2, 9)))
            return ("%08X:" if case == "%02X" else "%08x:") % rng.randint(0, 2 ** 20) + " " + data
        if kind == 1:  # an option list entry
            letter = _LOOKALIKES[rng.randint(len(_LOOKALIKES))]
            return ("-%s, --%s" % (letter, "-".join(words)) if rng.rand() < 0.5
                    else "-%s%s" % (letter, str(rng.randint(0, 4)) if rng.rand() < 0.5 else ""))
        if kind == 2:  # CAPS_WITH_UNDERSCORES, often numbered
            name = "_".join(word.upper() for word in words)
            return name + ("_%d" % rng.randint(0, 100) if rng.rand() < 0.5 else "")
        if kind == 3:  # snake_case or camelCase ending in digits: pdp10, lib1, MT0, io_11
            name = "_".join(words) if rng.rand() < 0.5 else \
                words[0] + "".join(word.capitalize() for word in words[1:])
            return name + "".join(rng.choice(list("0101lIO"), size=rng.randint(1, 3)))
        if kind == 4:  # a code of look-alikes: serial numbers, keys, registers
            return "".join(rng.choice(list(_LOOKALIKES + "8B5S2Z-"), size=rng.randint(3, 9)))
        return "0x%0*X" % (rng.randint(2, 9), rng.randint(0, 2 ** 32)) if rng.rand() < 0.5 \
            else "0x%0*x" % (rng.randint(2, 9), rng.randint(0, 2 ** 32))


class LanguageMix(object):
    """Lines of several languages in one charset: each line is drawn by one member of the mix,
    chosen by its share (a mixed description's ``mix``: every language whose ``mixes`` names
    it). The same interface as :class:`LineSampler`."""

    def __init__(self, charset, members, min_len=1, max_len=60, part="all", kinds=None):
        if not members:
            raise ValueError("the mix has no members: no described language names it in its "
                             "\"mixes\"")
        self.charset = charset
        self.samplers = [LineSampler(charset, min_len, max_len, part=part, kinds=kinds,
                                     language=language) for language, _ in members]
        shares = np.array([share for _, share in members], dtype=np.float64)
        self._cumulative = np.cumsum(shares / shares.sum())

    def label_of(self, drawn):
        """The label of ``drawn``: itself, or None if the charset cannot write it."""
        return None if self.charset.unknown_chars(drawn) else drawn

    def sample(self, rng):
        """``(drawn, label)`` of one line of one member, chosen by share."""
        member = min(int(np.searchsorted(self._cumulative, rng.rand())), len(self.samplers) - 1)
        return self.samplers[member].sample(rng)


def line_sampler(charset, min_len=1, max_len=60, texts=None, part="all", words=None, kinds=None,
                 language=None):
    """The sampler of ``language``'s lines: a :class:`LanguageMix` of its members for a mixed
    description, else a :class:`LineSampler` (arguments as there)."""
    language = language or get_language()
    if not language.mix:
        return LineSampler(charset, min_len, max_len, texts=texts, part=part, words=words,
                           kinds=kinds, language=language)
    if texts or words:
        raise ValueError("%s mixes the prose and word lists of its languages: pass --language "
                         "with one of them to draw from --text or --words" % language.title)
    return LanguageMix(charset, mix_members(language.mix), min_len, max_len, part, kinds)


def _fit(line, max_len):
    """``line`` cut to ``max_len`` characters, at a space when one is not too far back."""
    if len(line) <= max_len:
        return line
    cut = line.rfind(" ", 0, max_len + 1)
    return (line[:cut] if cut >= max_len // 2 else line[:max_len]).rstrip()
