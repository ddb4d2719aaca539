"""What synthetic images say: real words, numbers, codes and pseudo-words, in three cases.

``TextSampler(charset, words)`` draws ``(drawn, label)`` pairs from a RandomState.
``drawn`` is what the image shows ("NOT", "Paris"); ``label`` is what the model must
read: each character as the charset has it, so the default 0-9a-z charset reads
"NOT" as "not" (case-insensitive, the CRNN paper's setting) while a charset with
capitals keeps them.

Real words come from a word list (Debian's ``wamerican``: /usr/share/dict). Word
lists carry no counts, so commonness is taken from SCOWL's size classes: a word
that is also in the small list (``wamerican-small``, the commoner words) is drawn
:data:`COMMON_WEIGHT` times as often. A list may also give counts as
``word<TAB>count`` lines, which are then the weights.
"""
import io
import os
import re
import string
import unicodedata

import numpy as np

COMMON_WEIGHT = 4.0
VOWELS = "aeiou"
# Syllable shapes for pronounceable pseudo-words: C = consonant, V = vowel.
_SYLLABLES = ("CV", "CV", "CVC", "V", "VC", "CCV")
# Share of each kind of text when the charset has letters and a word list is loaded.
TEXT_MIX = (("word", 0.58), ("number", 0.10), ("code", 0.10), ("pseudo", 0.12),
            ("random", 0.10))


def default_word_list():
    """The default language's installed word list (English: the system's), or None."""
    from crnn_multigpu.datasets.language import get_language
    return get_language().word_list_path()


def default_common_words():
    """The default language's list of commoner words, or None."""
    from crnn_multigpu.datasets.language import get_language
    return get_language().common_words_path


# How a word list is written: "words", one word a line (an optional count after a separator);
# "hunspell", a Hunspell dictionary (.dic: a count line, then word/FLAGS lines, in the encoding
# its .aff's SET names).
WORD_LIST_FORMATS = ("words", "hunspell")


def _hunspell_encoding(dic_path):
    """The encoding the ``.aff`` beside a Hunspell ``.dic`` names (``SET``; default UTF-8)."""
    aff = os.path.splitext(dic_path)[0] + ".aff"
    if os.path.isfile(aff):
        with io.open(aff, "rb") as handle:
            for raw in handle:
                if raw.startswith(b"SET "):
                    return raw.split()[1].decode("ascii").lower()
    return "utf-8"


def _read_lines(path, fmt="words"):
    """The words of the list at ``path`` (with what follows them on their lines)."""
    if fmt not in WORD_LIST_FORMATS:
        raise ValueError("word list format %r is not one of %s" % (fmt, ", ".join(WORD_LIST_FORMATS)))
    encoding = _hunspell_encoding(path) if fmt == "hunspell" else "utf-8"
    try:
        with io.open(path, "r", encoding=encoding) as handle:
            lines = unicodedata.normalize("NFC", handle.read()).splitlines()
    except (UnicodeDecodeError, LookupError) as error:
        raise ValueError("word list %s is not %s text: %s" % (path, encoding.upper(), error))
    if fmt == "hunspell":
        # The first line counts the words; a word's flags follow a slash (an escaped one,
        # "\\/", is part of the word), its morphology a TAB or space.
        lines = [re.split(r"(?<!\\)/|\s", line.strip(), 1)[0].replace("\\/", "/")
                 for line in lines[1:]]
    return lines


class WordList(object):
    """Words a charset can write, with sampling weights.

    ``label_of(word)`` must say how the charset writes a word (None: it cannot).
    Possessives ("dog's") lose their "'s"; duplicates after that are merged.
    """

    def __init__(self, path, label_of, common_path=None, min_len=1, max_len=None,
                 separator="\t", fmt="words"):
        if not os.path.isfile(path):
            raise FileNotFoundError("word list %s does not exist (Debian/Ubuntu: apt-get install "
                                    "wamerican, or pass a file with one word per line)" % path)
        common = set()
        if common_path and os.path.isfile(common_path) and common_path != path:
            common = set(line.strip() for line in _read_lines(common_path))
        weights = {}
        for number, line in enumerate(_read_lines(path, fmt), 1):
            fields = line.strip().split(separator)
            word = fields[0].strip()
            if word.endswith("'s"):
                word = word[:-2]
            if not word or label_of(word) is None or len(word) < min_len or \
                    (max_len and len(word) > max_len):
                continue
            if len(fields) > 1:
                try:
                    weight = float(fields[1])
                except ValueError:
                    raise ValueError("word list %s line %d: %r is not a count (expected "
                                     "word%scount)" % (path, number, fields[1],
                                                       "<TAB>" if separator == "\t" else separator))
            else:
                weight = COMMON_WEIGHT if fields[0] in common else 1.0
            weights[word] = max(weights.get(word, 0.0), weight)
        if not weights:
            raise ValueError("word list %s has no word the charset can write" % path)
        self.path = path
        self.words = sorted(weights)
        self.weights = [weights[w] for w in self.words]  # the list's counts, where it has them
        self._cumulative = np.cumsum(self.weights)

    def __len__(self):
        return len(self.words)

    def sample(self, rng):
        """One word, drawn by weight."""
        position = rng.uniform(0, self._cumulative[-1])
        return self.words[min(int(np.searchsorted(self._cumulative, position, side="right")),
                              len(self.words) - 1)]


class TextSampler(object):
    """Draws ``(drawn, label)`` texts of ``min_len..max_len`` characters for a charset.

    ``words``: a :class:`WordList`, a path, or None for the system list (if any;
    without one, words are pseudo-words). ``kinds``: the kinds of :data:`TEXT_MIX`
    to draw (default: all), e.g. ``("word",)`` for a dictionary-word test set.
    Charsets without latin letters get random strings only.
    """

    def __init__(self, charset, min_len=1, max_len=10, words=None, kinds=None):
        self.charset, self.min_len, self.max_len = charset, min_len, max_len
        self._visible = [c for c in charset.chars if not c.isspace()]
        self._space = " " if " " in charset else None
        letters = set(c.lower() for c in charset.chars if c in string.ascii_letters)
        self._vowels = sorted(letters & set(VOWELS))
        self._consonants = sorted(letters - set(VOWELS))
        self._digits = [c for c in charset.chars if c.isdigit()]
        self._has_letters = bool(self._vowels and self._consonants)
        if words is None and self._has_letters:
            words = default_word_list()
        if isinstance(words, str):
            words = WordList(words, self.label_of, common_path=default_common_words(),
                             min_len=min_len, max_len=max_len)
        self.words = words
        unknown = set(kinds or ()) - set(kind for kind, _ in TEXT_MIX)
        if unknown:
            raise ValueError("unknown text kind(s) %s; choose from %s" % (
                ", ".join(sorted(unknown)), ", ".join(kind for kind, _ in TEXT_MIX)))
        wanted = kinds or [kind for kind, _ in TEXT_MIX]
        kinds = [(kind, share) for kind, share in TEXT_MIX
                 if kind in wanted and (kind != "word" or words is not None) and
                 (kind not in ("word", "pseudo", "code") or self._has_letters) and
                 (kind != "number" or self._digits)]
        if not kinds:
            raise ValueError("none of the text kinds %s can be drawn with this charset and word "
                             "list" % ", ".join(wanted))
        total = sum(share for _, share in kinds)
        self._kinds = [kind for kind, _ in kinds]
        self._kind_cumulative = np.cumsum([share / total for _, share in kinds])

    def label_of(self, drawn):
        """How the charset writes ``drawn`` (case folded where it has one case); None if it can't."""
        label = []
        for char in drawn:
            if char in self.charset:
                label.append(char)
            elif char.lower() in self.charset:
                label.append(char.lower())
            elif char.upper() in self.charset:
                label.append(char.upper())
            else:
                return None
        return "".join(label)

    def sample(self, rng):
        """``(drawn, label)``: the text to draw and the label the model must read."""
        kind = self._kinds[min(int(np.searchsorted(self._kind_cumulative, rng.rand())),
                               len(self._kinds) - 1)]
        length = rng.randint(self.min_len, self.max_len + 1)
        if kind == "word":
            drawn = self._cased(self.words.sample(rng), rng)
        elif kind == "number":
            drawn = "".join(self._digits[i] for i in rng.randint(len(self._digits), size=length))
        elif kind == "code":
            drawn = self._code(rng, length)
        elif kind == "pseudo":
            drawn = self._cased(self._pseudo_word(rng, length), rng)
        else:
            drawn = self._random_string(rng, length)
        drawn = drawn[:self.max_len]
        return drawn, self.label_of(drawn)

    def _cased(self, word, rng):
        """Lower case, Capitalised or UPPER CASE."""
        style = rng.rand()
        if style < 0.2:
            return word.upper()
        if style < 0.45:
            return word[:1].upper() + word[1:]
        return word

    def _pseudo_word(self, rng, length):
        letters = []
        while len(letters) < length:
            for slot in _SYLLABLES[rng.randint(len(_SYLLABLES))]:
                pool = self._vowels if slot == "V" else self._consonants
                letters.append(pool[rng.randint(len(pool))])
        return "".join(letters[:length])

    def _code(self, rng, length):
        """Mixed letters and digits: "b52", "x7k3", "abc123"."""
        letters = self._vowels + self._consonants
        pools = [letters, self._digits or letters]
        if rng.rand() < 0.5:  # a block of letters then a block of digits (or the reverse)
            split = rng.randint(0, length + 1)
            first = rng.randint(2)
            picks = [pools[first if i < split else 1 - first] for i in range(length)]
        else:
            picks = [pools[rng.randint(2)] for _ in range(length)]
        text = "".join(pool[rng.randint(len(pool))] for pool in picks)
        return text.upper() if rng.rand() < 0.3 else text

    def _random_string(self, rng, length):
        chars = [self._visible[i] for i in rng.randint(0, len(self._visible), size=length)]
        if self._space is not None and length >= 3:
            # Spaces only between visible characters, never doubled: leading,
            # trailing or repeated spaces cannot be seen in the image.
            for position in range(1, length - 1):
                if rng.rand() < 0.12 and chars[position - 1] != self._space:
                    chars[position] = self._space
        return "".join(chars)
