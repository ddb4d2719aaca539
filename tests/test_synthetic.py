"""Synthetic data that generalises: reserved and held-out font families, real words, looks, recipes."""
import collections
import os
import re
import shutil

import numpy as np
import pytest

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.cli import generate
from crnn_multigpu.datasets import (SyntheticDataset, SyntheticTextGenerator, find_fonts,
                                    open_dataset, write_recipe)
from crnn_multigpu.datasets import fonts as font_module
from crnn_multigpu.datasets.augment import Degrader
from crnn_multigpu.datasets.fonts import is_reserved, split_fonts, superfamily
from crnn_multigpu.datasets.images import load_image
from crnn_multigpu.datasets.words import TextSampler, WordList

CHARSET = Charset.default()
WITH_CAPITALS = Charset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


@pytest.fixture(scope="module")
def fonts():
    return find_fonts(chars=CHARSET.chars)


# Reserved by the family name alone (the file named "face.ttf"): every pattern of
# fonts.RESERVED_FAMILY_PATTERNS, in the spellings the families' fonts carry.
RESERVED_FAMILIES = [
    "Liberation Sans", "Liberation Serif", "Liberation Mono", "Liberation Sans Narrow",
    # Liberation's designs as Google Fonts / @fontsource name them
    "Arimo", "Tinos", "Cousine",
    # GNU FreeFont
    "FreeSerif", "FreeSans", "FreeMono", "Free Sans", "GNU FreeFont",
    # URW base35, as urw-base35 and as ghostscript's older gsfonts name them
    "Nimbus Roman", "Nimbus Sans", "Nimbus Sans Narrow", "Nimbus Mono PS", "Nimbus Roman No9 L",
    "URW Gothic", "URW Bookman", "URW Palladio L", "URW Chancery L", "Bookman Old Style",
    "C059", "P052", "Z003", "Century Schoolbook L", "Standard Symbols PS", "Standard Symbols L",
    "TeX Gyre Termes", "TeX Gyre Heros", "TeXGyreCursor", "LIBERATION SERIF",
    # AR PL, as Debian's fonts-arphic-* name them and as PDFs name the embedded faces
    "AR PL UKai CN", "AR PL UMing TW", "AR PL SungtiL GB", "AR PL KaitiM Big5", "UKaiCN",
    "UMingHK"]
# Reserved by the file's base name alone (the family read as "Plain"): every pattern of
# fonts.RESERVED_FILE_PATTERNS.
RESERVED_FILES = [
    "LiberationSans-Regular.ttf", "LiberationSansNarrow-Bold.ttf", "arimo-latin-400-normal.woff",
    "Tinos-Bold.ttf", "Cousine-Regular.ttf", "FreeSerif.ttf", "FreeSansBoldOblique.ttf",
    "FreeMono.ttf", "NimbusSans-Regular.otf", "NimbusMonoPS-Bold.pfb", "URWGothic-Book.otf",
    "URWBookman-Light.pfb", "C059-Roman.otf", "P052-Italic.pfb", "Z003-MediumItalic.otf",
    "texgyretermes-regular.otf", "TeXGyreHeros-Bold.otf",
    # ghostscript's URW Type 1 files and their metrics, named by a code only
    "c059013l.pfb", "n019003l.pfb", "a010013l.afm", "b018012l.pfb", "d050000l.pfb",
    "p052003l.pfb", "s050000l.pfb", "z003034l.pfb", "D050000L.pfb",
    # AR PL (fonts-arphic-*): collections named with their face, and the GB/Big5 files
    "ukai.ttc#0", "uming.ttc#2", "gbsn00lp.ttf", "gkai00mp.ttf", "bkai00mp.ttf", "bsmi00lp.ttf"]


@pytest.mark.parametrize("family", RESERVED_FAMILIES)
def test_reserved_families_are_recognised_by_their_family_name(family):
    assert is_reserved("/fonts/face.ttf", family)


@pytest.mark.parametrize("name", RESERVED_FILES)
def test_reserved_files_are_recognised_by_their_file_name(name):
    assert is_reserved("/fonts/" + name, "Plain")
    # An unreadable file: its family is read as its name without the extension.
    assert is_reserved("/nonexistent/" + name)


def test_reserved_cases_cover_every_pattern():
    assert not is_reserved("/fonts/face.ttf", "Plain")  # the neutral name and family
    for patterns, cases in ((font_module.RESERVED_FAMILY_PATTERNS, RESERVED_FAMILIES),
                            (font_module.RESERVED_FILE_PATTERNS, RESERVED_FILES)):
        for pattern in patterns:
            assert any(re.search(pattern, case.lower()) for case in cases), pattern


@pytest.mark.parametrize("path,family", [
    ("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf", "Liberation Sans"),
    ("/usr/share/fonts/truetype/freefont/FreeSerif.ttf", "FreeSerif"),
    ("/usr/share/fonts/opentype/urw-base35/NimbusRoman-Regular.otf", "Nimbus Roman"),
    ("/usr/local/share/fonts/fontsource/arimo/arimo-latin-400-normal.woff", "Arimo"),
    ("/usr/share/fonts/type1/gsfonts/c059013l.pfb", "Century Schoolbook L"),
    ("/fonts/p052003l.pfb", "p052003l"),
])
def test_reserved_fonts_are_recognised(path, family):
    assert is_reserved(path, family)


@pytest.mark.parametrize("path,family", [
    ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVu Sans"),
    ("/usr/share/fonts/truetype/roboto/Roboto-Regular.ttf", "Roboto"),
    ("/usr/share/fonts/truetype/crosextra/Carlito-Regular.ttf", "Carlito"),
    ("/usr/share/fonts/truetype/lato/Lato-Medium.ttf", "Lato"),
    ("/usr/share/fonts/opentype/cabin/Cabin-Bold.otf", "Cabin"),
    ("/usr/share/fonts/X11/Type1/c0419bt_.pfb", "Courier 10 Pitch"),
    # Computer Modern, Latin Modern and CM-Super are trained on (no longer reserved)
    ("/fonts/lmroman10-regular.otf", "Latin Modern Roman"), ("/fonts/lmmi10.pfb", "LMMathItalic10"),
    ("/site-packages/matplotlib/mpl-data/fonts/ttf/cmr10.ttf", "cmr10"),
    ("/fonts/cmunrm.ttf", "CMU Serif"), ("/fonts/cminch.pfb", "CMINCH"),
    ("/usr/share/texmf/fonts/type1/public/cm-super/sfrm1000.pfb", "Computer Modern"),
    # the folders above a font do not decide: a home folder named after a reserved family
    ("/home/durward/.fonts/DejaVuSans.ttf", "DejaVu Sans"),
    ("/home/liberation/fonts/Roboto-Regular.ttf", "Roboto"),
    ("/srv/urw/texgyre/Lato-Regular.ttf", "Lato"),
    ("/usr/share/fonts/truetype/freefont/Carlito-Regular.ttf", "Carlito"),
    ("/usr/local/share/fonts/fontsource/abel/abel-latin-400-normal.woff", "Abel"),
    # look-alikes a bare substring match would reserve: a reserved name inside a word
    # (m-ARIMO, mar-TINOS, b-URW-ood), FreeFont's words after another first word, "free"
    # before other words, Standard Symbols' first word, Century Schoolbook without URW's L
    ("/fonts/Marimo-Regular.ttf", "Marimo"), ("/fonts/Martinos-Regular.ttf", "Martinos"),
    ("/fonts/Burwood-Regular.ttf", "Burwood"), ("/fonts/CarefreeSans-Regular.ttf", "Carefree Sans"),
    ("/fonts/Freeman-Regular.ttf", "Freeman"), ("/fonts/Freehand-Regular.ttf", "Freehand"),
    ("/usr/share/fonts/truetype/fonts-oldstandard/OldStandard-Regular.ttf", "Old Standard TT"),
    ("/fonts/CENSCBK.TTF", "Century Schoolbook"),
    # ... and a reserved name at the start or end of another word, in the family or the file
    ("/fonts/Cumulonimbus-Regular.ttf", "Cumulonimbus"), ("/fonts/Deliberation.ttf", "Deliberation"),
    ("/fonts/cousinet-latin-400-normal.woff", "Cousinet"), ("/fonts/tinosa-regular.ttf", "Tinosa"),
    ("/fonts/arimoto-latin-400-normal.woff", "Arimoto"),
    # a code-named Type 1 file of another foundry (Bitstream Charter)
    ("/usr/share/fonts/X11/Type1/c0648bt_.pfb", "Bitstream Charter"),
])
def test_ordinary_families_are_not_reserved(path, family):
    assert not is_reserved(path, family)


def test_find_fonts_leaves_reserved_files_out_unless_asked(fonts, tmp_path):
    shutil.copy(fonts[0], str(tmp_path / "LiberationSerif-Regular.ttf"))
    shutil.copy(fonts[0], str(tmp_path / "Ordinary-Regular.ttf"))
    found = [os.path.basename(f) for f in find_fonts([str(tmp_path)], chars=CHARSET.chars)]
    assert found == ["Ordinary-Regular.ttf"]
    everything = find_fonts([str(tmp_path)], chars=CHARSET.chars, include_reserved=True)
    assert len(everything) == 2


def test_web_fonts_are_found(fonts, tmp_path):
    # npm's @fontsource families come as .woff; FreeType tells the format by its content.
    shutil.copy(fonts[0], str(tmp_path / "abel-latin-400-normal.woff"))
    shutil.copy(fonts[0], str(tmp_path / "notes.txt"))
    found = [os.path.basename(f) for f in find_fonts([str(tmp_path)], chars=CHARSET.chars)]
    assert found == ["abel-latin-400-normal.woff"]


def test_superfamily_groups_sister_families():
    assert superfamily("Noto Sans") == superfamily("Noto Serif Display") == "noto"
    assert superfamily("Oxygen-Sans") == superfamily("Oxygen Mono") == "oxygen"
    assert superfamily("PT Sans Narrow") == "pt" != superfamily("Roboto")


def test_split_holds_out_whole_superfamilies_and_is_stable(monkeypatch):
    families = ["Alpha Sans", "Alpha Serif", "Beta", "Gamma Mono", "Delta", "Epsilon Sans",
                "Zeta", "Eta", "Theta Serif", "Iota", "Kappa", "Lambda"]
    paths = dict(("/f/%s-%d.ttf" % (name.replace(" ", ""), weight), name)
                 for name in families for weight in range(3))
    monkeypatch.setattr(font_module, "font_family", lambda path: paths[path])
    train, heldout = split_fonts(list(paths), 0.25, seed=0)
    assert train and heldout and sorted(train + heldout) == sorted(paths)
    train_groups = set(superfamily(paths[p]) for p in train)
    heldout_groups = set(superfamily(paths[p]) for p in heldout)
    assert not train_groups & heldout_groups
    assert (train, heldout) == split_fonts(list(reversed(list(paths))), 0.25, seed=0)
    # Adding a family never moves another one across the split.
    paths["/f/Omega-0.ttf"] = "Omega"
    train2, heldout2 = split_fonts(list(paths), 0.25, seed=0)
    assert set(heldout) <= set(heldout2) and set(train) <= set(train2)


def test_split_of_one_family_falls_back_to_files(fonts):
    dejavu = [f for f in fonts if "DejaVu" in f]
    train, heldout = split_fonts(dejavu, 0.25)
    assert train and heldout


def write_words(tmp_path, text):
    path = tmp_path / "words.txt"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def test_word_list_weights_possessives_and_charset(tmp_path):
    path = write_words(tmp_path, u"apple\t8\nbanana\t2\ncaf\u00e9\t50\nbanana's\t1\n")
    sampler = TextSampler(CHARSET, words=path)
    assert sampler.words.words == ["apple", "banana"]
    rng = np.random.RandomState(0)
    counts = collections.Counter(sampler.words.sample(rng) for _ in range(4000))
    assert 0.75 < counts["apple"] / 4000.0 < 0.85


def test_word_list_errors_name_file_and_line(tmp_path):
    with pytest.raises(ValueError, match="words.txt line 2: 'many' is not a count"):
        WordList(write_words(tmp_path, u"one\t1\ntwo\tmany\n"), TextSampler(CHARSET).label_of)
    with pytest.raises(ValueError, match="words.txt is not UTF-8"):
        WordList(write_words(tmp_path, b"ok\n\xff\xfe\n"), TextSampler(CHARSET).label_of)
    with pytest.raises(FileNotFoundError, match="wamerican"):
        WordList(str(tmp_path / "none.txt"), TextSampler(CHARSET).label_of)


def test_case_insensitive_labels_for_a_lowercase_charset(tmp_path):
    sampler = TextSampler(CHARSET, min_len=2, max_len=8, words=write_words(tmp_path, u"paris\nnot\n"))
    pairs = [sampler.sample(np.random.RandomState(i)) for i in range(400)]
    assert all(label == drawn.lower() and len(label) <= 8 for drawn, label in pairs)
    drawn = set(d for d, _ in pairs)
    assert {"NOT", "Not", "not", "PARIS", "Paris"} <= drawn
    capital = TextSampler(WITH_CAPITALS, words=write_words(tmp_path, u"paris\n"))
    assert capital.label_of("NOT") == "NOT" and capital.label_of("n\u00f6") is None


def test_generator_draws_capitals_but_labels_the_charset_case(fonts, tmp_path):
    generator = SyntheticTextGenerator(CHARSET, fonts[:4], seed=1, difficulty=1.0,
                                       words=write_words(tmp_path, u"alpha\nbeta\n"))
    labels = []
    for index in range(150):  # every look branch at the strongest setting
        image, label = generator.sample(index)
        assert image.mode == "L" and image.size[0] >= 2 and image.size[1] >= 8
        assert CHARSET.check_label(label) is None
        labels.append(label)
    assert "alpha" in labels and "beta" in labels
    assert any(d != d.lower() for d, _ in (generator.random_text(np.random.RandomState(i))
                                           for i in range(50)))


def test_degrader_is_a_pure_function_of_its_rng(fonts):
    image, _ = SyntheticTextGenerator(CHARSET, fonts[:2], seed=2, difficulty=0.0).sample(0)
    degrade = Degrader(1.0)
    first = np.asarray(degrade(image, np.random.RandomState(7)))
    assert np.array_equal(first, np.asarray(degrade(image, np.random.RandomState(7))))
    assert not np.array_equal(first, np.asarray(image))
    assert np.array_equal(np.asarray(Degrader(0.0)(image, np.random.RandomState(7))),
                          np.asarray(image))
    with pytest.raises(ValueError, match="strength"):
        Degrader(1.5)


def test_recipe_opens_as_a_dataset_rendered_on_read(tmp_path):
    out = str(tmp_path / "lazy")
    write_recipe(out, count=50, seed=4, fonts="all", max_len=6)
    dataset = open_dataset(out)
    assert isinstance(dataset, SyntheticDataset) and len(dataset) == 50
    array, label = dataset[3]
    image, same_label = dataset.generator.sample(3)
    assert label == same_label and np.allclose(array, load_image(image))
    with pytest.raises(ValueError, match="max_len 6 may need up to 12 CTC time steps"):
        open_dataset(out, time_steps=10)
    with pytest.raises(ValueError, match="unknown synthetic recipe setting"):
        write_recipe(out, colour=1)


def test_generate_lists_fonts_writes_recipes_and_never_overwrites(tmp_path, capsys):
    assert generate.main(["--list-fonts"]) == 0
    listing = capsys.readouterr().out
    assert "faces in" in listing and "held out" in listing and "reserved" in listing
    out = str(tmp_path / "recipe")
    assert generate.main(["--out", out, "--lazy", "--count", "1000000"]) == 0
    assert os.path.isfile(os.path.join(out, "synthetic.json"))
    assert generate.main(["--out", out, "--lazy", "--count", "10"]) == 2
    assert "already holds a dataset" in capsys.readouterr().err
    assert generate.main(["--out", out, "--lazy", "--count", "10", "--overwrite"]) == 0
    assert len(open_dataset(out)) == 10


def test_text_kinds_restrict_what_is_drawn(tmp_path):
    words = write_words(tmp_path, u"river\nstone\n")
    only_words = TextSampler(CHARSET, words=words, kinds=["word"])
    assert set(label for _, label in (only_words.sample(np.random.RandomState(i))
                                      for i in range(100))) == {"river", "stone"}
    numbers = TextSampler(CHARSET, min_len=3, max_len=5, kinds=["number"])
    assert all(label.isdigit() for _, label in (numbers.sample(np.random.RandomState(i))
                                                for i in range(50)))
    with pytest.raises(ValueError, match="unknown text kind"):
        TextSampler(CHARSET, kinds=["poem"])


def test_parallel_rendering_writes_the_same_dataset(fonts, tmp_path):
    from crnn_multigpu.datasets import read_labels, write_dataset
    generator = SyntheticTextGenerator(CHARSET, fonts[:3], seed=9)
    serial, parallel = str(tmp_path / "serial"), str(tmp_path / "parallel")
    write_dataset(serial, generator, 24, start=5, progress=False)
    write_dataset(parallel, generator, 24, start=5, progress=False, every=5, workers=2)
    labels = read_labels(os.path.join(serial, "labels.txt"))
    assert labels == read_labels(os.path.join(parallel, "labels.txt")) and len(labels) == 24
    for relative, _ in labels:
        with open(os.path.join(serial, relative), "rb") as one, \
                open(os.path.join(parallel, relative), "rb") as other:
            assert one.read() == other.read()


def test_crops_reach_into_neighbour_glyphs_but_never_past_a_thin_one(fonts):
    from crnn_multigpu.datasets.fonts import load_font
    dejavu = [f for f in fonts if os.path.basename(f) == "DejaVuSans.ttf"] or fonts[:1]
    font = load_font(dejavu[0], 64)
    room = SyntheticTextGenerator._room
    ink_left, _, ink_right, _ = font.getbbox("l")
    # After the word: into the 'l' (past its side bearing) but short of its right edge.
    assert ink_left < room(font, "l", True) < ink_right
    # Before the word the glyph is entered from its right edge.
    assert font.getlength("l") - ink_right < room(font, "l", False) < font.getlength("l") - ink_left
    # A gap adds its width; no glyph on a side leaves that side unlimited.
    assert room(font, " l", True) == pytest.approx(font.getlength(" ") + room(font, "l", True))
    assert room(font, "", True) == float("inf")
