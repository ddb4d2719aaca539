"""Synthetic printed lines: what they say (LineSampler), how they look (lines=True), the CLI."""
import os
import re

import numpy as np
import pytest

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.cli import generate
from crnn_multigpu.datasets import find_fonts, open_dataset, read_labels
from crnn_multigpu.datasets.fonts import font_style
from crnn_multigpu.datasets.lines import LineSampler, ascii_spelling, load_prose, prose_units
from crnn_multigpu.datasets.synthetic import make_generator

ASCII = Charset.printable_ascii()
DEJAVU_DIR = "/usr/share/fonts/truetype/dejavu"


@pytest.fixture(scope="module")
def dejavu():
    """DejaVu faces (every machine of the project has them), by file name."""
    return dict((os.path.basename(path), path)
                for path in find_fonts([DEJAVU_DIR], chars=ASCII.chars))


@pytest.fixture(scope="module")
def sampler():
    return LineSampler(ASCII, part="train")


def test_typeset_text_is_spelt_in_ascii():
    # What pdftotext gives for a typeset line: ligatures, an en dash, curly quotes, a minus
    # sign and an asterisk operator; a bullet has no ASCII spelling and stays.
    typeset = u"\ufb01le \u2013 \u201cof\ufb02ine\u201d \u22123 \u2217 \u2022"
    assert ascii_spelling(typeset) == u'file - "offline" -3 * \u2022'


def test_lines_are_tidy_and_within_length(sampler):
    rng = np.random.RandomState(0)
    lines = [sampler.sample(rng) for _ in range(400)]
    assert all(drawn == label for drawn, label in lines)
    texts = [label for _, label in lines]
    assert all(1 <= len(text) <= 60 and text == text.strip() and "  " not in text
               for text in texts)
    assert not any(ASCII.unknown_chars(text) for text in texts)
    joined = "".join(texts)
    # What documents hold beside words: identifiers, brackets, quotes, digits, capitals.
    for char in "_.()\"'0123456789ABCDEF\\^~%$":
        assert char in joined, char
    assert sum(len(text) >= 25 for text in texts) > len(texts) / 2  # mostly long lines
    assert sum(" " in text for text in texts) > 0.7 * len(texts)


def test_prose_parts_are_disjoint_and_deterministic(sampler):
    heldout = load_prose(ASCII, part="heldout")
    assert heldout and not set(heldout) & set(sampler.units)
    assert len(heldout) < len(sampler.units) / 5
    first = [sampler.sample(np.random.RandomState(7)) for _ in range(3)]
    assert first == [sampler.sample(np.random.RandomState(7)) for _ in range(3)]


def test_user_text_replaces_the_packaged_prose(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(u"The quick brown fox jumps over the lazy dog.  It was \u201cfast\u201d.\n\n"
                    u">>> fox.jump(3)\n... done\n", encoding="utf-8")
    assert prose_units(path.read_text(encoding="utf-8")) == [
        u"The quick brown fox jumps over the lazy dog.", u"It was \u201cfast\u201d.",
        ">>> fox.jump(3)", "... done"]
    units = load_prose(ASCII, [str(path)])
    assert 'It was "fast".' in units  # typographic quotes spelled in ASCII
    only_prose = LineSampler(ASCII, texts=[str(path)], kinds=["prose"], max_len=200)
    rng = np.random.RandomState(1)
    words = set(" ".join(units).split())
    for _ in range(50):
        line = only_prose.sample(rng)[1]
        # Whole prose words, or one token mixed into the prose.
        assert sum(word not in words for word in line.split()) <= 1, line


def test_table_rows_are_drawn_with_column_gaps_and_labelled_with_single_spaces():
    tables = LineSampler(ASCII, kinds=["table"])
    rng = np.random.RandomState(3)
    rows = [tables.sample(rng) for _ in range(200)]
    for drawn, label in rows:
        assert label == " ".join(drawn.split()) and len(label) <= 60, (drawn, label)
        assert "  " not in label and label == label.strip()
    assert sum("  " in drawn for drawn, _ in rows) > 150  # most rows keep their column gaps
    # Single-letter cells, lower and upper case: the marks of feature tables.
    cells = [cell for _, label in rows for cell in label.split()[1:]]
    assert set("yn") <= set(cells) and any(len(c) == 1 and c.isupper() for c in cells)
    # Tables are drawn only when asked for: the default mix is unchanged.
    assert "table" not in LineSampler(ASCII).kinds
    mixed = LineSampler(ASCII, kinds=["prose", "table"])
    assert mixed.kinds == ["prose", "table"]


def test_confusable_lines_pack_look_alike_glyphs():
    confusable = LineSampler(ASCII, kinds=["confusable"])
    rng = np.random.RandomState(4)
    lines = [confusable.sample(rng)[1] for _ in range(300)]
    assert all(len(line) <= 60 for line in lines)
    text = " ".join(lines)
    tokens = text.split()
    # Identifiers ending in look-alikes (pdp10, lib1l), capitals with underscores, hex dumps
    # and hexadecimal numbers, option lists.
    assert sum(re.fullmatch(r"[a-z_]{3,}[01lIO]{1,3}", t) is not None for t in tokens) > 20
    assert sum(re.fullmatch(r"[A-Z]+(_[A-Z0-9]+)+", t) is not None for t in tokens) > 20
    assert sum(re.fullmatch(r"[0-9a-fA-F]{8}:", t) is not None for t in tokens) > 10
    assert sum(re.fullmatch(r"0x[0-9a-fA-F]{2,}", t) is not None for t in tokens) > 10
    assert sum(t.startswith("--") for t in tokens) > 10
    for glyph in "1lI|0Oo":
        assert text.count(glyph) > 30, glyph
    # Like tables, drawn only when named: the default mix is unchanged.
    assert "confusable" not in LineSampler(ASCII).kinds


def test_lines_need_a_space_and_known_kinds(tmp_path):
    with pytest.raises(ValueError, match="space"):
        LineSampler(Charset.default())
    with pytest.raises(ValueError, match="unknown line kind"):
        LineSampler(ASCII, kinds=["poem"])
    with pytest.raises(FileNotFoundError, match="--text"):
        LineSampler(ASCII, texts=[str(tmp_path / "missing.txt")])


def test_font_styles_from_names_and_glyphs(dejavu):
    assert font_style(dejavu["DejaVuSansMono.ttf"]) == frozenset(["mono"])
    assert font_style(dejavu["DejaVuSans-Bold.ttf"]) == frozenset(["bold"])
    assert font_style(dejavu["DejaVuSerif-Italic.ttf"]) == frozenset(["italic"])
    assert font_style(dejavu["DejaVuSans.ttf"]) == frozenset()


def test_line_renderings_are_reproducible_and_mix_faces(dejavu):
    fonts = [dejavu[name] for name in ("DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf",
                                       "DejaVuSansMono.ttf")]
    generator = make_generator(ASCII, fonts, lines=True, seed=3, difficulty=0.2)
    image, label = generator.sample(11)
    again, same = generator.sample(11)
    assert label == same and np.array_equal(np.asarray(image), np.asarray(again))
    assert image.mode == "L" and image.size[0] > image.size[1]
    # One to three words set in a second face, sometimes: serif lines get bold or mono words.
    serif, bold, mono = (generator._font(path, 24)[0] for path in fonts)
    faces = [generator._faces_of_words("use the get_value() call here", fonts[0], serif, 24,
                                       np.random.RandomState(seed)) for seed in range(200)]
    mixed = [runs for runs in faces if len(runs) > 1]
    assert 0.1 * len(faces) < len(mixed) < 0.45 * len(faces)
    assert all("".join(piece for piece, _ in runs) == "use the get_value() call here"
               for runs in faces)
    seconds = set(id(face) for runs in mixed for _, face in runs if face is not serif)
    assert seconds == {id(bold), id(mono)}


def test_generate_lines_folder_and_recipe(tmp_path, capsys):
    out = str(tmp_path / "lines")
    assert generate.main(["--out", out, "--lines", "--count", "12", "--workers", "1",
                          "--quiet", "--font-dir", DEJAVU_DIR]) == 0
    labels = [text for _, text in read_labels(os.path.join(out, "labels.txt"))]
    assert len(labels) == 12 and any(" " in text for text in labels)
    assert Charset.from_file(os.path.join(out, "charset.txt")) == ASCII
    lazy = str(tmp_path / "lazy")
    text = tmp_path / "prose.txt"
    text.write_text(u"Lines are cut from this very sentence, and only from it.\n")
    assert generate.main(["--out", lazy, "--text", str(text), "--kinds", "prose", "--lazy",
                          "--count", "5", "--font-dir", DEJAVU_DIR]) == 0
    dataset = open_dataset(lazy)
    array, label = dataset[2]
    assert array.shape[0] == 32
    words = set("Lines are cut from this very sentence, and only from it.".split())
    assert sum(word not in words for word in label.split()) <= 1, label  # a token mixed in
    assert generate.main(["--out", str(tmp_path / "x"), "--lines", "--charset",
                          os.path.join(os.path.dirname(os.path.dirname(
                              os.path.abspath(__file__))), "data", "charsets",
                              "digits_lower.txt")]) == 2
    assert "error: lines need a charset with the space character" in capsys.readouterr().err
