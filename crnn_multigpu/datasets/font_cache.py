"""Which faces draw which characters, remembered across processes.

Which characters of a charset a face lacks is found by rendering each one: about 10 ms a face for
English's 95, about a second for a Chinese face and Chinese's 6,899 (a face that soon shows it
lacks more than a charset's 1 % is left after a few ms); on a machine with a thousand faces that
is, by those costs, 10-60 s at every start of a tool that chooses fonts. The answer depends only
on the font file and the characters, so it is kept in a small JSON file, ``font_coverage.json``
under ``$XDG_CACHE_HOME/crnn_multigpu`` (default ``~/.cache/crnn_multigpu``), keyed by the file's
real path, size and modification time and a checksum of the characters: a changed or replaced
file is checked again. A cache that cannot be read or written is passed over: the answer is then
computed as without it.
"""
import json
import logging
import os
import stat
import zlib

from crnn_multigpu.datasets.face_names import face_file
from crnn_multigpu.files import written_whole

log = logging.getLogger(__name__)

CACHE_NAME = "font_coverage.json"
_VERSION = 2  # 1 kept whether a face drew everything; 2 keeps what it lacks
# Marks the key of a partial answer: the first characters found missing of a face that lacks
# too many to be used (a question asked with ``at_most``).
_PARTIAL = "+"
_WARNED = set()  # the paths of caches that are not regular files, warned about once


def cache_path():
    """Where the coverage cache lives ($XDG_CACHE_HOME or ~/.cache, then crnn_multigpu/)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "crnn_multigpu", CACHE_NAME)


class CoverageCache(object):
    """``missing(path, chars, check)``: ``check(path, chars)``'s answer (the characters the face
    lacks, a string), from the file when it holds one for this very font file; ``save()`` writes
    new answers back."""

    def __init__(self, path=None):
        self.path = path or cache_path()
        self._entries, self._new = None, False
        self.checked = 0  # questions answered by checking the face, not from what was kept
        self._elsewhere = False  # the path is not a regular file: nothing is written there

    def missing(self, path, chars, check, at_most=None):
        """The characters of ``chars`` the face at ``path`` lacks, as a string.

        ``check(path, chars, at_most)`` finds them. With ``at_most``, an answer longer than
        ``at_most`` may be cut short (a face lacking that many is not used, whatever else it
        lacks); such partial answers are kept apart and never given to a question without it.
        """
        key = _font_key(path)
        if key is None:  # unreadable: nothing to remember it by
            self.checked += 1
            return "".join(check(path, chars, at_most))
        answers = self._load().setdefault(key, {})
        kept = _kept(answers, chars, at_most)
        if kept is not None:
            return kept
        found = "".join(check(path, chars, at_most))
        self.checked += 1
        whole = _chars_key(chars)
        answers[whole + _PARTIAL if at_most is not None and len(found) > at_most else whole] = found
        self._new = True
        return found

    def knows(self, path, chars, at_most=None):
        """True if :meth:`missing` would answer from what is kept, without checking."""
        key = _font_key(path)
        return key is not None and _kept(self._load().get(key, {}), chars, at_most) is not None

    def save(self):
        """Write the answers (whole or not at all); a cache folder that cannot be written, or a
        cache path that is not a regular file, is passed over."""
        if not self._new or self._elsewhere:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with written_whole(self.path) as temporary:
                with open(temporary, "w") as stream:
                    json.dump({"version": _VERSION, "fonts": self._entries}, stream)
            self._new = False
        except OSError as error:
            log.debug("font coverage cache %s not written: %s", self.path, error)

    def _load(self):
        if self._entries is None:
            self._entries = {}
            try:
                stored = self._read()
                if stored.get("version") == _VERSION and isinstance(stored.get("fonts"), dict):
                    self._entries = stored["fonts"]
            except (OSError, ValueError, AttributeError) as error:
                log.debug("font coverage cache %s not read: %s", self.path, error)
        return self._entries

    def _read(self):
        """The stored JSON, read only from a regular file. Opening a FIFO would wait for a
        writer for ever (and a device may never end): such a path gets one warning and is left
        alone, the answers then kept in memory for this process."""
        # Non-blocking: a FIFO opens at once instead of waiting; the mode says what it is.
        handle = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            os.close(handle)
            self._elsewhere = True
            if self.path in _WARNED:  # find_fonts may run more than once in a process
                return {}
            _WARNED.add(self.path)
            log.warning("the font coverage cache %s is %s, not a regular file: it is left "
                        "alone and fonts are checked again (remove it to keep the answers "
                        "across runs)", self.path, _kind(mode))
            return {}
        with os.fdopen(handle) as stream:
            return json.load(stream)


def _kind(mode):
    """What a file of ``mode`` is, in words."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a special file"


def _kept(answers, chars, at_most):
    """The kept answer to the question (a face's ``answers``), or None: the whole answer, else
    a partial one long enough to show the face lacks more than ``at_most``."""
    whole = _chars_key(chars)
    if whole in answers:
        return answers[whole]
    partial = answers.get(whole + _PARTIAL, "")
    return partial if at_most is not None and len(partial) > at_most else None


def _chars_key(chars):
    return "%08x" % (zlib.crc32(chars.encode("utf-8")) & 0xffffffff)


def _font_key(face):
    file, index = face_file(face)
    try:
        real = os.path.realpath(file)
        status = os.stat(real)
    except OSError:
        return None
    return "%s|%d|%d%s" % (real, status.st_size, status.st_mtime_ns, "#%d" % index if index else "")
