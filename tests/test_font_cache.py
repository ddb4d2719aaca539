"""The font coverage cache: answers kept across processes, checked again when a file changes."""
import json
import os
import shutil

import pytest

from crnn_multigpu.datasets import fonts
from crnn_multigpu.datasets.font_cache import CACHE_NAME, CoverageCache, cache_path

from faces import DEJAVU


class Counting(object):
    """A coverage check that counts its calls: every face draws everything but "中"."""

    def __init__(self):
        self.calls = []

    def __call__(self, path, chars):
        self.calls.append((path, chars))
        return [char for char in chars if char == u"中"]


def font_copy(tmp_path, name="face.ttf"):
    source = sorted(os.path.join(DEJAVU, f) for f in os.listdir(DEJAVU) if f.endswith(".ttf"))[0]
    target = str(tmp_path / name)
    shutil.copy(source, target)
    return target


def test_answers_survive_the_process_and_follow_the_characters(tmp_path):
    face, store = font_copy(tmp_path), str(tmp_path / "cache" / CACHE_NAME)
    check = Counting()
    first = CoverageCache(store)
    assert first.missing(face, "abc", check) == "" and first.missing(face, u"a中", check) == u"中"
    assert first.missing(face, "abc", check) == "" and len(check.calls) == 2  # once per question
    first.save()
    again = CoverageCache(store)  # as a new process would
    assert again.missing(face, "abc", check) == "" and again.missing(face, u"a中", check) == u"中"
    assert len(check.calls) == 2
    assert again.missing(face, "xyz", check) == "" and len(check.calls) == 3


def test_a_cache_of_the_earlier_version_is_asked_again(tmp_path):
    # Version 1 kept only whether a face drew everything; what it lacks must be found again.
    face, store = font_copy(tmp_path), tmp_path / CACHE_NAME
    first = CoverageCache(str(store))
    first.missing(face, u"a中", Counting())
    first.save()
    stored = json.loads(store.read_text())
    stored["version"] = 1
    stored["fonts"] = dict((key, dict((chars, False) for chars in answers))
                           for key, answers in stored["fonts"].items())
    store.write_text(json.dumps(stored))
    check = Counting()
    assert CoverageCache(str(store)).missing(face, u"a中", check) == u"中"
    assert len(check.calls) == 1


def test_a_changed_font_file_is_checked_again(tmp_path):
    face, store = font_copy(tmp_path), str(tmp_path / CACHE_NAME)
    check = Counting()
    cache = CoverageCache(store)
    cache.missing(face, "abc", check)
    cache.save()
    with open(face, "ab") as stream:  # another file now: larger, later
        stream.write(b"\0" * 16)
    CoverageCache(store).missing(face, "abc", check)
    assert len(check.calls) == 2


def test_a_cache_that_cannot_be_read_or_written_is_passed_over(tmp_path):
    face, check = font_copy(tmp_path), Counting()
    garbled = tmp_path / CACHE_NAME
    garbled.write_text(u"{not json")
    assert CoverageCache(str(garbled)).missing(face, "abc", check) == ""
    blocked = tmp_path / "a file"
    blocked.write_text(u"")
    cache = CoverageCache(str(blocked / CACHE_NAME))  # its folder would be a file
    assert cache.missing(face, "abc", check) == "" and cache.missing(face, u"中", check) == u"中"
    cache.save()  # nothing raised, nothing written
    assert len(check.calls) == 3 and blocked.read_text() == u""


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    from crnn_multigpu.datasets import font_cache
    face, folder = font_copy(tmp_path), tmp_path / "cache"
    cache = CoverageCache(str(folder / CACHE_NAME))
    cache.missing(face, "abc", Counting())

    def disk_full(data, stream):
        stream.write("{")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(font_cache.json, "dump", disk_full)
    cache.save()
    assert os.listdir(str(folder)) == []


def test_find_fonts_asks_each_face_once_across_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_path() == str(tmp_path / "crnn_multigpu" / CACHE_NAME)
    first = fonts.find_fonts([DEJAVU], chars="abc123")
    stored = json.load(open(cache_path()))["fonts"]
    assert len(stored) == len(first) > 0

    def no_rendering(path, chars):
        raise AssertionError("rendered %s again" % path)
    monkeypatch.setattr(fonts, "missing_chars", no_rendering)
    monkeypatch.setattr(fonts, "_GAPS", {})  # what this process learnt: as a new process
    assert fonts.find_fonts([DEJAVU], chars="abc123") == first
    with pytest.raises(AssertionError, match="rendered"):
        fonts.find_fonts([DEJAVU], chars="abcd")  # other characters: another question


def unblock_a_reader(fifo):
    """Open ``fifo`` for writing and close it: a reader stuck opening it gets an empty file."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # nobody reads it: nothing to unblock
        pass


@pytest.mark.parametrize("kind", ["a FIFO (named pipe)", "a folder", "a character device"])
def test_a_cache_that_is_not_a_regular_file_is_never_read(kind, tmp_path, caplog):
    # Issue 35: a FIFO in the cache's place made crnn-generate wait for a writer for ever.
    import threading
    from waiting import HANG_GUARD
    face, store = font_copy(tmp_path), str(tmp_path / CACHE_NAME)
    if kind.startswith("a FIFO"):
        os.mkfifo(store)
    elif kind == "a folder":
        os.mkdir(store)
    else:
        os.symlink(os.devnull, store)
    cache, check, answers = CoverageCache(store), Counting(), []
    reader = threading.Thread(target=lambda: answers.append(cache.missing(face, "abc", check)))
    reader.daemon = True
    reader.start()
    reader.join(HANG_GUARD)  # only to fail instead of hanging: it returns at once
    unblock_a_reader(store)
    assert not reader.is_alive() and answers == [""] and len(check.calls) == 1
    cache.save()  # the answers stay in memory: the path is left as it was
    assert os.path.lexists(store) and not os.path.isfile(store)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["the font coverage cache %s is %s, not a regular file: it is left alone "
                        "and fonts are checked again (remove it to keep the answers across "
                        "runs)" % (store, kind)]


def test_generate_with_a_fifo_for_its_cache_ends(tmp_path):
    import subprocess
    import sys
    from waiting import HANG_GUARD
    os.makedirs(str(tmp_path / "crnn_multigpu"))
    fifo = str(tmp_path / "crnn_multigpu" / CACHE_NAME)
    os.mkfifo(fifo)
    environment = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "crnn_multigpu.cli.generate", "--list-fonts", "--font-dir",
             DEJAVU], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
            env=environment, timeout=HANG_GUARD)
    finally:
        unblock_a_reader(fifo)
    assert done.returncode == 0 and "faces in" in done.stdout, done.stderr
    assert done.stderr.count("the font coverage cache %s is a FIFO" % fifo) == 1, done.stderr


def test_a_fifo_named_like_a_font_is_skipped_by_name(tmp_path):
    # A subprocess: FreeType opens a font file holding the interpreter's lock, so a thread
    # stuck in it could not be waited for.
    import subprocess
    import sys
    from waiting import HANG_GUARD
    folder = tmp_path / "fonts"
    folder.mkdir()
    shutil.copy(os.path.join(DEJAVU, "DejaVuSans.ttf"), str(folder))
    fifo = str(folder / "pipe.ttf")
    os.mkfifo(fifo)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "crnn_multigpu.cli.generate", "--list-fonts", "--font-dir",
             str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)),
            timeout=HANG_GUARD)  # only to fail instead of hanging: it ends at once
    finally:
        unblock_a_reader(fifo)
    assert done.returncode == 0 and "1 faces in 1 families" in done.stdout, done.stderr
    assert "skipping %s: not a regular file (a FIFO, socket or device), so not a font" % fifo \
        in done.stderr
