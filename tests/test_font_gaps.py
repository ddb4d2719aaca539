"""Faces that lack a few characters of a large charset (web fonts joined from their slices lack
rare ones): kept by find_fonts, and never asked to draw what they lack."""
import os

import pytest

from crnn_multigpu.datasets import fonts
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.synthetic import SyntheticTextGenerator

from faces import DEJAVU, MICROHEI

HAN = u"中"
ZH = get_language("zh")  # English leaves the WenQuanYi faces out


def find(folder, chars=None):
    return fonts.find_fonts([folder], chars=chars, language=ZH)


def is_dejavu(face):
    return "DejaVu" in os.path.basename(face)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """DejaVu Sans and Sans Mono and the WenQuanYi Micro Hei collection, alone in a folder."""
    folder = tmp_path_factory.mktemp("gaps")
    for path in (os.path.join(DEJAVU, "DejaVuSans.ttf"), os.path.join(DEJAVU, "DejaVuSansMono.ttf"),
                 MICROHEI):
        os.symlink(path, str(folder / os.path.basename(path)))
    return str(folder)


@pytest.fixture(scope="module")
def chars(folder):
    """Over 100 characters all faces draw, and "中": DejaVu lacks 1 of them (under 1 %)."""
    latin = [chr(code) for code in list(range(0x21, 0x7f)) + list(range(0xc0, 0x100))]
    faces = find(folder)
    both = [char for char in latin if all(fonts.font_supports(face, char) for face in faces)]
    assert len(both) >= 100
    return "".join(both) + HAN


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def test_a_face_lacking_under_one_percent_is_kept_and_what_it_lacks_is_known(folder, chars):
    found = find(folder, chars)
    dejavu = [face for face in found if is_dejavu(face)]
    assert len(found) == 4 and len(dejavu) == 2  # two DejaVu faces, the collection's two
    assert fonts.face_gaps(found, chars) == dict((face, frozenset(HAN)) for face in dejavu)
    # Two lacked characters in 102: more than 1 %, so the face is dropped.
    fewer = chars[:100] + HAN + u"文"
    assert not any(is_dejavu(face) for face in find(folder, fewer))
    # A charset under 100 characters allows none.
    assert find(folder, u"abc" + HAN) == sorted(set(found) - set(dejavu))


class Texts(object):
    """Every other text needs "中"; they are two words, so a line may set one in a second face."""

    def sample(self, rng):
        text = u"ab " + HAN if rng.rand() < 0.5 else u"ab c"
        return text, text


def faces_drawn(generator, count):
    """``[(text, faces)]`` of ``count`` samples: the faces each text was drawn in."""
    font, calls, pairs = generator._font, [], []

    def spy(path, size):
        calls.append(path)
        return font(path, size)
    generator._font = spy
    for index in range(count):
        del calls[:]
        text = generator.sample(index)[1]
        pairs.append((text, list(calls)))
    return pairs


@pytest.mark.parametrize("lines", [False, True])
def test_text_that_needs_a_lacked_character_is_drawn_in_a_face_that_has_it(folder, chars, lines):
    found = find(folder, chars)
    generator = SyntheticTextGenerator(Charset(chars), found, seed=3, texts=Texts(), lines=lines)
    pairs = faces_drawn(generator, 120)
    with_han = [face for text, faces in pairs if HAN in text for face in faces]
    without = [faces[0] for text, faces in pairs if HAN not in text]
    assert with_han and not any(is_dejavu(face) for face in with_han)
    # Texts they draw still come to them: half of about 60, 30 +- 5 standard deviations.
    assert 12 <= sum(is_dejavu(face) for face in without) <= 48
    # Cut neighbours at the crop edges come from what every face draws.
    assert HAN not in generator._neighbours and len(generator._neighbours) > 50


class HanOnly(object):
    def sample(self, rng):
        return HAN, HAN


def test_text_that_no_face_draws_is_drawn_again_and_its_characters_named(folder, chars, caplog):
    dejavu = [face for face in find(folder, chars) if is_dejavu(face)]
    generator = SyntheticTextGenerator(Charset(chars), dejavu, seed=3, texts=Texts())
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        u"no font draws 1 character(s) of the charset (中): no sample holds them; add a font "
        u"that draws them"]
    labels = [generator.sample(index)[1] for index in range(40)]
    assert labels == [u"ab c"] * 40  # every other text was "ab 中": drawn again
    assert generator.sample(7)[1] == labels[7]  # still a pure function of (seed, index)
    only_han = SyntheticTextGenerator(Charset(chars), dejavu, seed=3, texts=HanOnly())
    with pytest.raises(ValueError, match=u"none of the 2 fonts draws 中"):
        only_han.sample(0)
