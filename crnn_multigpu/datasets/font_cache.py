"""Which faces draw which characters, remembered across processes.

Whether a face draws every character of a charset is found by rendering each one (about 10 ms a
face); on a machine with a thousand faces that is 10-20 s at every start of a tool that chooses
fonts. The answer depends only on the font file and the characters, so it is kept in a small
JSON file, ``font_coverage.json`` under ``$XDG_CACHE_HOME/crnn_multigpu`` (default
``~/.cache/crnn_multigpu``), keyed by the file's real path, size and modification time and a
checksum of the characters: a changed or replaced file is checked again. A cache that cannot be
read or written is passed over: the answer is then computed as without it.
"""
import json
import logging
import os
import tempfile
import zlib

from crnn_multigpu.datasets.face_names import face_file

log = logging.getLogger(__name__)

CACHE_NAME = "font_coverage.json"
_VERSION = 1


def cache_path():
    """Where the coverage cache lives ($XDG_CACHE_HOME or ~/.cache, then crnn_multigpu/)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "crnn_multigpu", CACHE_NAME)


class CoverageCache(object):
    """``supports(path, chars, check)``: ``check(path, chars)``'s answer, from the file when
    it holds one for this very font file; ``save()`` writes new answers back."""

    def __init__(self, path=None):
        self.path = path or cache_path()
        self._entries, self._new = None, False

    def supports(self, path, chars, check):
        key = _font_key(path)
        if key is None:  # unreadable: nothing to remember it by
            return check(path, chars)
        answers = self._load().setdefault(key, {})
        chars_key = "%08x" % (zlib.crc32(chars.encode("utf-8")) & 0xffffffff)
        if chars_key not in answers:
            answers[chars_key] = bool(check(path, chars))
            self._new = True
        return answers[chars_key]

    def save(self):
        """Write the answers (atomically); a cache folder that cannot be written is passed over."""
        if not self._new:
            return
        temporary = None
        try:
            folder = os.path.dirname(self.path)
            os.makedirs(folder, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=folder, prefix=".coverage-")
            with os.fdopen(handle, "w") as stream:
                json.dump({"version": _VERSION, "fonts": self._entries}, stream)
            os.replace(temporary, self.path)
            self._new = False
        except OSError as error:
            log.debug("font coverage cache %s not written: %s", self.path, error)
            if temporary is not None and os.path.exists(temporary):
                os.remove(temporary)  # a full disk leaves no half-written file behind

    def _load(self):
        if self._entries is None:
            self._entries = {}
            try:
                with open(self.path) as stream:
                    stored = json.load(stream)
                if stored.get("version") == _VERSION and isinstance(stored.get("fonts"), dict):
                    self._entries = stored["fonts"]
            except (OSError, ValueError, AttributeError) as error:
                log.debug("font coverage cache %s not read: %s", self.path, error)
        return self._entries


def _font_key(face):
    file, index = face_file(face)
    try:
        real = os.path.realpath(file)
        status = os.stat(real)
    except OSError:
        return None
    return "%s|%d|%d%s" % (real, status.st_size, status.st_mtime_ns, "#%d" % index if index else "")
