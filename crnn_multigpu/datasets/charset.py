"""The characters a recognizer can emit and their CTC class ids.

Class ids ``0 .. len(chars) - 1`` are the characters in order; the CTC blank
is the LAST class (``len(chars)``), which is what ``tf.nn.ctc_loss`` and the
TensorFlow CTC decoders assume.
"""
import io
import os
import string

from crnn_multigpu.files import write_text

EMPTY_LABEL = "empty label"
OUTSIDE_CHARSET = "characters outside the charset"
TOO_LONG = "too long for the model's time steps"


class Charset(object):
    """An ordered set of distinct single characters."""

    def __init__(self, chars):
        chars = tuple(chars)
        index = {}
        for position, char in enumerate(chars):
            if not isinstance(char, str) or len(char) != 1:
                raise ValueError("charset entry %d is %r: every entry must be exactly one character"
                                 % (position, char))
            if char in index:
                raise ValueError("charset entry %d %r repeats entry %d: characters must be distinct"
                                 % (position, char, index[char]))
            index[char] = position
        if not chars:
            raise ValueError("a charset needs at least one character")
        self._chars = chars
        self._index = index

    @classmethod
    def default(cls):
        """Digits then lowercase ASCII letters (36 characters)."""
        return cls(string.digits + string.ascii_lowercase)

    @classmethod
    def printable_ascii(cls):
        """The 95 printable ASCII characters, space first (data/charsets/printable_ascii.txt)."""
        return cls(chr(code) for code in range(32, 127))

    @classmethod
    def from_file(cls, path):
        """Read a UTF-8 file with one character per line; blank lines are ignored.

        Only the line terminator is stripped, so a line holding a single space
        defines the space character.
        """
        if not os.path.isfile(path):
            raise FileNotFoundError("charset file %s does not exist: pass the path of a UTF-8 "
                                    "text file with one character per line" % path)
        chars = []
        first_line = {}
        # utf-8-sig: editors on Windows like to prepend a byte-order mark.
        with io.open(path, "rb") as handle:
            data = handle.read()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ValueError("charset file %s is not UTF-8 text (byte %d, line %d); save it as "
                             "UTF-8" % (path, error.start, data[:error.start].count(b"\n") + 1))
        for line_number, line in enumerate(io.StringIO(text, newline=""), 1):
            char = line.rstrip("\r\n")
            if not char:
                continue
            if len(char) != 1:
                raise ValueError("%s line %d: %r has %d characters; put exactly one character "
                                 "on each line (check for trailing spaces)"
                                 % (path, line_number, char, len(char)))
            if char in first_line:
                raise ValueError("%s line %d: %r already appears on line %d; delete one of them"
                                 % (path, line_number, char, first_line[char]))
            first_line[char] = line_number
            chars.append(char)
        if not chars:
            raise ValueError("charset file %s has no characters: put one character on each line"
                             % path)
        return cls(chars)

    def to_file(self, path):
        """Write the charset in the format :meth:`from_file` reads (whole or not at all)."""
        write_text(path, "".join(char + "\n" for char in self._chars))

    @property
    def chars(self):
        """The characters as a string, in class-id order."""
        return "".join(self._chars)

    @property
    def num_classes(self):
        """Number of output classes including the CTC blank."""
        return len(self._chars) + 1

    @property
    def blank(self):
        """Class id of the CTC blank (the last class)."""
        return len(self._chars)

    def __len__(self):
        return len(self._chars)

    def __contains__(self, char):
        return char in self._index

    def __eq__(self, other):
        return isinstance(other, Charset) and self._chars == other._chars

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._chars)

    def __repr__(self):
        preview = self.chars if len(self) <= 40 else self.chars[:37] + "..."
        return "Charset(%r, %d chars)" % (preview, len(self))

    def unknown_chars(self, text):
        """Distinct characters of ``text`` that are not in the charset, in order of appearance."""
        unknown = []
        for char in text:
            if char not in self._index and char not in unknown:
                unknown.append(char)
        return unknown

    def encode(self, text):
        """Map ``text`` to a list of class ids; unknown characters raise ``ValueError``."""
        try:
            return [self._index[char] for char in text]
        except KeyError:
            raise ValueError("cannot encode %r: characters outside the charset: %s"
                             % (text, _quote_chars(self.unknown_chars(text))))

    def decode(self, ids):
        """Map class ids back to text, skipping the blank and negative padding ids."""
        size = len(self._chars)
        return "".join(self._chars[i] for i in (int(x) for x in ids) if 0 <= i < size)

    @staticmethod
    def required_time_steps(text):
        """Minimum CTC input length for ``text``: a blank must separate repeated characters."""
        repeats = sum(1 for left, right in zip(text, text[1:]) if left == right)
        return len(text) + repeats

    def check_label(self, text, time_steps=None):
        """Return None if ``text`` can be trained on, else a short reason string."""
        problem = self._label_problem(text, time_steps)
        return None if problem is None else problem[1]

    def _label_problem(self, text, time_steps):
        """(category, detail) of what makes ``text`` unusable, or None."""
        if not text:
            return EMPTY_LABEL, EMPTY_LABEL
        unknown = self.unknown_chars(text)
        if unknown:
            return OUTSIDE_CHARSET, "%s: %s" % (OUTSIDE_CHARSET, _quote_chars(unknown))
        if time_steps is not None:
            needed = self.required_time_steps(text)
            if needed > time_steps:
                return TOO_LONG, "needs %d time steps but the model has %d" % (needed, time_steps)
        return None


def _quote_chars(chars):
    return " ".join(repr(char) for char in chars)


def filter_labels(texts, charset, time_steps=None):
    """Split labels into usable and rejected ones.

    Returns ``(kept_indices, rejected)`` where ``rejected`` maps a reason
    category (``EMPTY_LABEL``, ``OUTSIDE_CHARSET``, ``TOO_LONG``) to the list
    of every rejected text with that reason, so ``len()`` gives the counts.
    """
    kept = []
    rejected = {}
    for position, text in enumerate(texts):
        problem = charset._label_problem(text, time_steps)
        if problem is None:
            kept.append(position)
        else:
            rejected.setdefault(problem[0], []).append(text)
    return kept, rejected


def describe_rejections(rejected, total, max_examples=3):
    """One line summarising ``filter_labels`` rejections, with a few examples per reason."""
    if not rejected:
        return "kept all %d labels" % total
    dropped = sum(len(texts) for texts in rejected.values())
    parts = []
    for reason in sorted(rejected):
        examples = ", ".join(repr(text) for text in rejected[reason][:max_examples])
        parts.append("%d %s (e.g. %s)" % (len(rejected[reason]), reason, examples))
    return "dropped %d of %d labels: %s" % (dropped, total, "; ".join(parts))
