"""The Latin script as data: its charset, the descriptions of its languages and their mix, word
lists of every format, manual pages as text, a model moved onto the charset, and a tiny model of
accented letters trained and read by the tools."""
import gzip
import json
import os
import shutil
import sys
import unicodedata

import numpy as np
import pytest

from crnn_multigpu.cli import evaluate, generate, predict, train
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import language as language_module
from crnn_multigpu.datasets import read_labels
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets.language import get_language, language_names, mix_members
from crnn_multigpu.datasets.lines import LanguageMix, line_sampler
from crnn_multigpu.datasets.text_sources import ManualPages, roff_text
from crnn_multigpu.datasets.words import WordList
from crnn_multigpu.ocr.charset_transfer import NEW_CLASS_PENALTY, transfer_to_charset
from crnn_multigpu.ocr.shipped import shipped_model

from assertions import run_tool
from faces import DEJAVU

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import make_latin_charset  # noqa: E402

LATIN = get_language("latin")
# The languages issue 52 asks for, English among them.
EUROPE_AND_VIETNAM = ("en de fr es it pt nl pl cs sk sl hr hu ro tr fi et da sv nb ca vi").split()


def test_the_latin_charset_extends_printable_ascii_with_every_letter_in_nfc():
    chars = LATIN.charset.chars
    ascii_ = Charset.printable_ascii().chars
    assert chars[:95] == ascii_  # the text model's classes keep their ids
    assert list(chars) == [chr(c) for c in range(32, 127)] + make_latin_charset.latin_letters() + \
        list(make_latin_charset.SIGNS)  # the script writes the shipped file
    for letter in u"\u00df\u1e9e\u0219\u021b\u0103\u0151\u0142\u0159\u011f\u0131\u01a1\u01b0" \
                  u"\u1ec7\u1ea5\u00e6\u0153\u20ac\u201e\u00ab\u2013\u2014\u2026":
        assert letter in LATIN.charset, letter
    assert all(unicodedata.normalize("NFC", c) == c for c in chars)
    assert u"\u017f" not in LATIN.charset  # long s: obsolete, spelt "s"


def test_every_language_of_europe_and_vietnam_is_a_description_in_the_latin_mix():
    names = set(language_names())
    assert set(EUROPE_AND_VIETNAM) <= names and "latin" in names
    assert not [name for name in names if name.startswith("_")]  # bases are not languages
    members = dict((language.name, share) for language, share in mix_members("latin"))
    assert set(members) == set(EUROPE_AND_VIETNAM)
    assert all(share > 0 for share in members.values())
    for name in EUROPE_AND_VIETNAM[1:]:
        language = get_language(name)
        assert language.charset.chars == LATIN.charset.chars, name
        assert language.prose_sources, name


def test_text_is_spelt_nfc_and_english_keeps_its_quotes_in_the_latin_charset():
    german = get_language("de")
    assert german.spell(u"Gro\u0308\u00dfe\u00a0Stra\u00dfe") == u"Gr\u00f6\u00dfe Stra\u00dfe"
    assert german.spell(u"\ufb01nden \u2212 \u017fein") == u"finden - sein"
    english = get_language("en")
    quoted = u"\u201cit\u2019s\u201d"
    assert english.respell(quoted) == u"\"it's\""  # the ASCII text model's spelling
    assert english.respell(quoted, LATIN.charset) == quoted  # the Latin model reads them


@pytest.fixture
def languages_dir(tmp_path, monkeypatch):
    """A languages folder holding the Latin base and charset and two new languages, each a
    description only: prose in a file, a word list in each format."""
    folder = tmp_path / "languages"
    folder.mkdir()
    for name in ("_latin.json", "latin.json", "latin_charset.txt"):
        shutil.copy(os.path.join(language_module.LANGUAGES_DIR, name), str(folder / name))
    prose = tmp_path / "prose.txt"
    prose.write_text(u"\u017d\u00e1k \u010dte knihu. V\u00edtr fouk\u00e1.\n", encoding="utf-8")
    dic = tmp_path / "xx.dic"
    dic.write_bytes(u"3\n\u0161\u0165astn\u00fd/AB\nk\u016f\u0148\tpo:noun\n1\\/2\n"
                    .encode("iso8859-2"))
    (tmp_path / "xx.aff").write_bytes(b"SET ISO8859-2\nTRY abc\n")
    words = tmp_path / "yy.txt"
    words.write_text(u"caf\u00e9\nna\u00efve\n", encoding="utf-8")
    for name, share, words_spec in (("xx", 0.9, {"paths": [str(dic)], "format": "hunspell"}),
                                    ("yy", 0.1, {"paths": [str(words)]})):
        (folder / (name + ".json")).write_text(json.dumps(
            {"name": name, "title": name.upper(), "extends": "_latin", "mixes": {"latin": share},
             "prose": [{"source": "files", "paths": [str(prose)]}], "words": words_spec}),
            encoding="utf-8")
    monkeypatch.setattr(language_module, "LANGUAGES_DIR", str(folder))
    return tmp_path


def test_a_new_language_is_a_description_and_joins_the_mix_by_its_share(languages_dir):
    assert language_names() == ["latin", "xx", "yy"]
    members = mix_members("latin")
    assert [(language.name, share) for language, share in members] == [("xx", 0.9), ("yy", 0.1)]
    sampler = line_sampler(LATIN.charset, 1, 40, kinds=["phrase"], language=get_language("latin"))
    assert isinstance(sampler, LanguageMix)
    rng = np.random.RandomState(0)
    lines = [sampler.sample(rng)[1] for _ in range(400)]
    # Phrases are words of the drawing language's list: yy's are cafe and naive.
    from_yy = sum(1 for line in lines if u"caf\u00e9" in line.lower() or u"na\u00efve" in line.lower())
    # 400 draws at 0.1: mean 40, sd 6; seeded, and the bound is 5 sd wide either way.
    assert 10 <= from_yy <= 70, from_yy
    with pytest.raises(ValueError, match="mixes the prose and word lists"):
        line_sampler(LATIN.charset, language=get_language("latin"), words=str(languages_dir))


def test_word_lists_are_read_in_each_format_and_encoding(languages_dir):
    xx = get_language("xx")
    hunspell = WordList(xx.word_list_path(), lambda word: word, fmt=xx.word_list_format)
    assert hunspell.words == sorted([u"\u0161\u0165astn\u00fd", u"k\u016f\u0148", "1/2"])
    yy = get_language("yy")
    assert WordList(yy.word_list_path(), lambda word: word).words == [u"caf\u00e9", u"na\u00efve"]
    with pytest.raises(ValueError, match="format 'aspell' is not one of words, hunspell"):
        WordList(yy.word_list_path(), lambda word: word, fmt="aspell")


def test_manual_pages_give_their_running_text(tmp_path):
    source = (u".\\\" a comment\n.TH LS 1\n.SH BEZEICHNUNG\nls \\- Verzeichnisinhalte auflisten\n"
              u".PP\n\\fBls\\fR [\\,OPTION\\/]\\&\\(em f\\(:ur \\(ssa \\(lqalle\\(rq\n.BR dir (1),\n"
              u".B \"zwei W\u00f6rter\"\n")
    text = roff_text(source)
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
    assert paragraphs == [u"BEZEICHNUNG", u"ls - Verzeichnisinhalte auflisten",
                          u"ls [OPTION]\u2014 f\u00fcr \u00dfa \u201calle\u201d\ndir(1),\nzwei W\u00f6rter"]
    page = tmp_path / "ls.1.gz"
    with gzip.open(str(page), "wb") as handle:
        handle.write(source.encode("utf-8"))
    (tmp_path / "bad.1.gz").write_bytes(b"not gzip")
    assert ManualPages([str(tmp_path / "*.gz")]).text().strip() == text.strip()


def _logits(folder):
    prefix = tf.train.latest_checkpoint(os.path.join(folder, "checkpoints"))
    reader = tf.train.load_checkpoint(prefix)
    return reader.get_tensor("crnn/logits/kernel"), reader.get_tensor("crnn/logits/bias")


def test_a_model_moved_onto_the_latin_charset_keeps_its_classes_and_builds_the_new_ones(tmp_path):
    """The shipped text model on the Latin charset: ASCII columns as they were, a new letter
    from its base letter, a bit less likely; a sign made of nothing known silent; the blank last."""
    text = shipped_model("text")
    out = transfer_to_charset(text, LATIN.charset, str(tmp_path / "latin"), language="latin")
    (old_kernel, old_bias), (kernel, bias) = _logits(text), _logits(out)
    charset = LATIN.charset
    assert kernel.shape == (old_kernel.shape[0], len(charset) + 1)
    np.testing.assert_array_equal(kernel[:, :95], old_kernel[:, :95])
    np.testing.assert_array_equal(kernel[:, -1], old_kernel[:, -1])  # the blank
    e, e_acute = charset.encode(u"e\u00e9")
    np.testing.assert_array_equal(kernel[:, e_acute], old_kernel[:, e])
    assert bias[e_acute] == pytest.approx(old_bias[e] - NEW_CLASS_PENALTY)
    arrow = charset.encode(u"\u2192")[0]  # nothing known it is made of
    assert not kernel[:, arrow].any() and bias[arrow] < old_bias[:-1].min()
    config = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert config["language"] == "latin" and config["model"]["num_classes"] == len(charset) + 1
    assert config["charset"] == "".join(charset.chars)
    with pytest.raises(FileExistsError, match="already exists"):
        transfer_to_charset(text, LATIN.charset, out)


@pytest.mark.slow
def test_a_tiny_model_of_accented_letters_trains_and_reads(tmp_path):
    """crnn-generate, crnn-train --language latin, crnn-evaluate and crnn-predict on a tiny model
    of eight letters that differ by their marks alone, drawn in DejaVu."""
    charset = tmp_path / "charset.txt"
    letters = u"a\u00e1\u00e4e\u00e9\u011b\u01a1\u1ec7"
    charset.write_text(u"".join(c + u"\n" for c in letters), encoding="utf-8")
    data, out = str(tmp_path / "data"), str(tmp_path / "run")
    code, _, err = run_tool(generate.main, [
        "--language", "latin", "--charset", str(charset), "--kinds", "random", "--max-len", "3",
        "--count", "128", "--difficulty", "0", "--font-dir", DEJAVU, "--seed", "4", "--out", data,
        "--workers", "1", "--quiet"])
    assert code == 0, err
    labels = read_labels(os.path.join(data, "labels.txt"))
    assert all(1 <= len(text) <= 3 and not set(text) - set(letters) for _, text in labels)
    code, _, err = run_tool(train.main, [
        "--language", "latin", "--charset", str(charset), "--train", data, "--out", out,
        "--model", "tiny", "--steps", "300", "--lr", "3e-3", "--batch-size", "16", "--seed", "2",
        "--log-every", "100", "--validate-every", "0", "--width", "64"])
    assert code == 0, err
    config = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert config["language"] == "latin" and config["model"]["num_classes"] == 9
    code, report, err = run_tool(evaluate.main, ["--checkpoint", out, "--data", data])
    assert code == 0, err
    figures = json.loads(report.strip().splitlines()[-1])
    assert figures["scoring"] == "exact" and figures["n"] == 128
    assert figures["word_accuracy"] >= 0.75, figures
    paths = [os.path.join(data, path) for path, _ in labels[:8]]
    code, read, err = run_tool(predict.main, ["--checkpoint", out] + paths)
    assert code == 0, err
    texts = [line.split("\t")[1] for line in read.strip().splitlines()]
    assert sum(text == truth for text, (_, truth) in zip(texts, labels[:8])) >= 6, texts


def test_gettext_messages_lose_menu_mnemonics_but_not_identifiers():
    from crnn_multigpu.datasets.text_sources import without_mnemonic
    assert [without_mnemonic(m) for m in (u"Mạ_ng", u"_Öffnen", u"Enregistrer &sous")] == \
        [u"Mạng", u"Öffnen", u"Enregistrer sous"]
    for kept in (u"LC_ALL", u"--no_check", u"x_1", u"Tom & Jerry", u"a_b c_d"):
        assert without_mnemonic(kept) == kept
