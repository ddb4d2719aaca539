"""The font coverage cache: answers kept across processes, checked again when a file changes."""
import collections
import json
import logging
import os
import shutil

import pytest

from crnn_multigpu.datasets import fonts
from crnn_multigpu.datasets.font_cache import CACHE_NAME, CoverageCache, cache_path
from crnn_multigpu.datasets.language import get_language

from faces import DEJAVU, MICROHEI


class Counting(object):
    """A coverage check that counts its calls: every face draws everything but "中"."""

    def __init__(self):
        self.calls = []

    def __call__(self, path, chars, at_most=None):
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

    def no_rendering(path, chars, at_most=None):
        raise AssertionError("rendered %s again" % path)
    monkeypatch.setattr(fonts, "missing_chars", no_rendering)
    monkeypatch.setattr(fonts, "_GAPS", {})  # what this process learnt: as a new process
    assert fonts.find_fonts([DEJAVU], chars="abc123") == first
    with pytest.raises(AssertionError, match="rendered"):
        fonts.find_fonts([DEJAVU], chars="abcd")  # other characters: another question


def test_a_partial_answer_serves_only_the_question_it_answers(tmp_path):
    face, check = font_copy(tmp_path), Counting()
    cache = CoverageCache(str(tmp_path / CACHE_NAME))

    def lacks_four(path, chars, at_most=None):
        check(path, chars)
        return "wxyz"[:None if at_most is None else at_most + 1]
    assert cache.missing(face, "abwxyz", lacks_four, at_most=1) == "wx"  # lacks more than 1
    assert cache.knows(face, "abwxyz", at_most=1) and not cache.knows(face, "abwxyz")
    assert cache.missing(face, "abwxyz", lacks_four, at_most=0) == "wx" and len(check.calls) == 1
    assert cache.missing(face, "abwxyz", lacks_four, at_most=2) == "wxy"  # "wx" cannot tell
    assert cache.missing(face, "abwxyz", lacks_four) == "wxyz" and len(check.calls) == 3
    assert cache.missing(face, "abwxyz", lacks_four, at_most=1) == "wxyz"  # the whole answer
    assert len(check.calls) == 3 and cache.checked == 3


def renders_by_face(monkeypatch):
    """{font file: number of characters rendered} while find_fonts checks faces."""
    counts, render = collections.Counter(), fonts._render

    def counted(font, text):
        counts[os.path.basename(font.path)] += 1
        return render(font, text)
    monkeypatch.setattr(fonts, "_render", counted)
    return counts


def test_a_face_lacking_too_much_of_a_large_charset_is_rendered_only_until_that_is_clear(
        tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "fonts"
    folder.mkdir()
    for path in (os.path.join(DEJAVU, "DejaVuSans.ttf"), MICROHEI):
        os.symlink(path, str(folder / os.path.basename(path)))
    han = "".join(chr(code) for code in range(0x4e00, 0x4e00 + 300))  # Micro Hei draws them
    chars, allowed = "abc" + han, 3  # 1 % of 303
    renders = renders_by_face(monkeypatch)
    found = fonts.find_fonts([str(folder)], chars=chars, language=get_language("zh"))
    assert [os.path.basename(face) for face in found] == ["wqy-microhei.ttc#0", "wqy-microhei.ttc#1"]
    # .notdef, "abc", then Hanzi until more than `allowed` are missing; each Micro Hei face: all.
    assert renders == {"DejaVuSans.ttf": 1 + 3 + allowed + 1, "wqy-microhei.ttc": 2 * (1 + 303)}
    assert fonts.face_gaps([str(folder / "DejaVuSans.ttf")], chars) == {
        str(folder / "DejaVuSans.ttf"): frozenset(han)}  # asked for all it lacks: all of them


def test_a_long_check_says_what_it_does_and_a_stopped_one_keeps_its_answers(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(fonts, "_ANNOUNCED_CHECKS", 0)
    monkeypatch.setattr(fonts, "_REPORT_EVERY", 2)
    faces = fonts.find_fonts([DEJAVU])
    assert len(faces) >= 6  # fonts-dejavu-core alone has six
    checks, missing_chars = [], fonts.missing_chars

    def stopped_at_the_sixth(path, chars, at_most=None):
        if len(checks) == 5:
            raise KeyboardInterrupt
        checks.append(path)
        return missing_chars(path, chars, at_most)
    monkeypatch.setattr(fonts, "missing_chars", stopped_at_the_sixth)
    with caplog.at_level(logging.INFO, logger="crnn_multigpu"):
        with pytest.raises(KeyboardInterrupt):
            fonts.find_fonts([DEJAVU], chars="abc")
    every = max(2, len(faces) // 10)
    assert [record.getMessage() for record in caplog.records] == [
        "checking which of 3 characters each of %d faces draws (once per machine; kept in %s)"
        % (len(faces), cache_path())] + [
        "checked %d of %d faces" % (done, len(faces)) for done in range(every, 6, every)]
    kept = json.load(open(cache_path()))["fonts"]
    assert len(kept) == 5 // every * every  # as of the last report


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
