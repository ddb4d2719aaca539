"""Files written whole or not at all, and one line naming the path when one cannot be written.

A writer writes to a hidden temporary name in the file's own folder, which is renamed over the
file only when it is complete (a rename within a folder is atomic). A full disk, a missing
permission or an exception leaves no half-written file behind: a rerun would otherwise trip
over it (``--picture`` refuses an existing file, ``crnn-generate`` an existing dataset).
"""
import contextlib
import errno
import os
import shutil
import uuid

# What to do about each reason a write fails; other reasons are named as the system gives them.
AGAIN = "free space and run the same command again"
_ADVICE = {
    errno.ENOSPC: "no space left on the disk: " + AGAIN,
    errno.EDQUOT: "the disk quota is used up: " + AGAIN,
    errno.EACCES: "permission denied: write somewhere you may, or fix the folder's permissions",
    errno.EPERM: "permission denied: write somewhere you may, or fix the folder's permissions",
    errno.EROFS: "the file system is read-only: write somewhere else",
}


class WriteError(OSError):
    """A file could not be written: the message names it and says what to do, in one line;
    nothing half-written was left at its path."""


def write_error(path, error):
    """The :class:`WriteError` of ``error`` (an OSError, or another library's error such as
    LMDB's) met while writing ``path``."""
    if isinstance(error, WriteError):
        return error
    number = getattr(error, "errno", None)
    reason = _ADVICE.get(number)
    if reason is None:
        text = getattr(error, "strerror", None) or str(error).strip() or type(error).__name__
        reason = "%s: check the folder and the disk, then run the same command again" % (
            text.splitlines()[0])
    failure = WriteError("cannot write %s: %s" % (path, reason))
    failure.errno = number  # one message argument: str() stays the line, without "[Errno N]"
    return failure


def temporary_name(path):
    """A hidden name beside ``path``, unique to this write, with the same extension (a writer
    that picks its format by the name, such as Pillow's, picks the same)."""
    folder, name = os.path.split(path)
    stem, extension = os.path.splitext(name)
    return os.path.join(folder, ".%s.partial-%d-%s%s" % (stem, os.getpid(), uuid.uuid4().hex[:8],
                                                        extension))


@contextlib.contextmanager
def written_whole(path, errors=()):
    """Yield a temporary path beside ``path`` for the block to write, and rename it to ``path``
    when the block ends; when the block fails, remove it. An OSError (or an exception of the
    classes ``errors``) becomes a :class:`WriteError` naming ``path``.

    The writer creates the temporary file itself, so it gets the usual permissions (umask).
    """
    temporary = temporary_name(path)
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException as error:
        _remove(temporary)
        if isinstance(error, (OSError,) + tuple(errors)):
            raise write_error(path, error)
        raise


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass  # never created, or the folder went away: nothing left behind either way


def write_text(path, text):
    """Write the str ``text`` to ``path`` as UTF-8 (``\\n`` line ends), whole or not at all, and
    on disk before it takes the name (fsync): a crash just after leaves the old file or the new
    one, never an empty one."""
    with written_whole(path) as temporary:
        with open(temporary, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())


def make_folder(path):
    """Create the folder ``path`` (and its parents) unless it exists; a :class:`WriteError`
    naming it when it cannot be."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise write_error(path, error)


def free_bytes(folder):
    """Bytes free for this user in the file system of ``folder``."""
    return shutil.disk_usage(folder).free


def require_space(path, needed):
    """Raise the full-disk :class:`WriteError` naming ``path`` when its folder has fewer than
    ``needed`` bytes free."""
    folder = os.path.dirname(os.path.abspath(path))
    free = free_bytes(folder)
    if free < needed:
        failure = WriteError("cannot write %s: it needs about %d MB, and %d MB are free on its "
                             "disk: %s" % (path, -(-needed // 2 ** 20), free // 2 ** 20, AGAIN))
        failure.errno = errno.ENOSPC
        raise failure
