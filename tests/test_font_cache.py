"""The font coverage cache: answers kept across processes, checked again when a file changes."""
import json
import os
import shutil

import pytest

from crnn_multigpu.datasets import fonts
from crnn_multigpu.datasets.font_cache import CACHE_NAME, CoverageCache, cache_path

DEJAVU = "/usr/share/fonts/truetype/dejavu"


class Counting(object):
    """A coverage check that counts its calls: every face draws everything but "中"."""

    def __init__(self):
        self.calls = []

    def __call__(self, path, chars):
        self.calls.append((path, chars))
        return u"中" not in chars


def font_copy(tmp_path, name="face.ttf"):
    source = sorted(os.path.join(DEJAVU, f) for f in os.listdir(DEJAVU) if f.endswith(".ttf"))[0]
    target = str(tmp_path / name)
    shutil.copy(source, target)
    return target


def test_answers_survive_the_process_and_follow_the_characters(tmp_path):
    face, store = font_copy(tmp_path), str(tmp_path / "cache" / CACHE_NAME)
    check = Counting()
    first = CoverageCache(store)
    assert first.supports(face, "abc", check) and not first.supports(face, u"a中", check)
    assert first.supports(face, "abc", check) and len(check.calls) == 2  # once per question
    first.save()
    again = CoverageCache(store)  # as a new process would
    assert again.supports(face, "abc", check) and not again.supports(face, u"a中", check)
    assert len(check.calls) == 2
    assert again.supports(face, "xyz", check) and len(check.calls) == 3


def test_a_changed_font_file_is_checked_again(tmp_path):
    face, store = font_copy(tmp_path), str(tmp_path / CACHE_NAME)
    check = Counting()
    cache = CoverageCache(store)
    cache.supports(face, "abc", check)
    cache.save()
    with open(face, "ab") as stream:  # another file now: larger, later
        stream.write(b"\0" * 16)
    CoverageCache(store).supports(face, "abc", check)
    assert len(check.calls) == 2


def test_a_cache_that_cannot_be_read_or_written_is_passed_over(tmp_path):
    face, check = font_copy(tmp_path), Counting()
    garbled = tmp_path / CACHE_NAME
    garbled.write_text(u"{not json")
    assert CoverageCache(str(garbled)).supports(face, "abc", check)
    blocked = tmp_path / "a file"
    blocked.write_text(u"")
    cache = CoverageCache(str(blocked / CACHE_NAME))  # its folder would be a file
    assert cache.supports(face, "abc", check) and not cache.supports(face, u"中", check)
    cache.save()  # nothing raised, nothing written
    assert len(check.calls) == 3 and blocked.read_text() == u""


def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    from crnn_multigpu.datasets import font_cache
    face, folder = font_copy(tmp_path), tmp_path / "cache"
    cache = CoverageCache(str(folder / CACHE_NAME))
    cache.supports(face, "abc", Counting())

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
    monkeypatch.setattr(fonts, "font_supports", no_rendering)
    assert fonts.find_fonts([DEJAVU], chars="abc123") == first
    with pytest.raises(AssertionError, match="rendered"):
        fonts.find_fonts([DEJAVU], chars="abcd")  # other characters: another question
