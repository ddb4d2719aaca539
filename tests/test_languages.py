"""Languages as data: the descriptions, Chinese text and faces, scoring, and a tiny Chinese model
trained and read by the tools."""
import json
import os
import shutil
import struct
import sys
import unicodedata

import numpy as np
import pytest

from crnn_multigpu.compat import tf
from crnn_multigpu.cli import evaluate, generate, predict, train
from crnn_multigpu.datasets import find_fonts, read_labels
from crnn_multigpu.datasets.fonts import font_family, is_reserved, load_font
from crnn_multigpu.datasets.language import get_language, language_names
from crnn_multigpu.datasets.lines import LineSampler
from crnn_multigpu.datasets.text_sources import (GettextCatalogs, PdfTextLayers,
                                                 catalog_messages, html_text)
from crnn_multigpu.ocr.metrics import scoring_fold
from crnn_multigpu.ocr.page import LineBox, page_text

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import make_zh_charset  # noqa: E402

# fonts-wqy-microhei (scripts/install_system_packages.sh --minimal), alone in a folder of its own
# so that what the tests render does not change with the Chinese faces a machine has.
MICROHEI = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
ZH = get_language("zh")
HANZI = u"\u4e00-\u9fff"
PROSE = (u"\u5982\u679c\u4f60\u6b63\u5728\u9605\u8bfb\u672c\u6587\u6863\uff0c\u4f60\u53ef\u80fd"
         u"\u4e0d\u9700\u8981\u4eb2\u81ea\u7f16\u8bd1\u5185\u6838\u3002\u4f7f\u7528 apt-get "
         u"\u5b89\u88c5\u8f6f\u4ef6\u5305\uff1a\u5148\u8fd0\u884c apt-get update\uff0c\u518d"
         u"\u5b89\u88c5\u3002\u4e2d\u6587\u6ca1\u6709\u7a7a\u683c\uff1f\u662f\u7684\u3002\n\n"
         u"\u7b2c 7 \u8282 \u7ae0\u8282\u6807\u9898\u6837\u5f0f\u8bbe\u7f6e\uff08\u53ef\u9009"
         u"\uff09\u3002\n")


@pytest.fixture(scope="module")
def microhei_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("microhei")
    os.symlink(MICROHEI, str(folder / "wqy-microhei.ttc"))
    return str(folder)


def beside_hanzi_space(text):
    """True if a space stands next to a Chinese character or Chinese punctuation."""
    return any(char == " " and any(ZH.unspace(pair) != pair for pair in (text[i - 1:i + 1],
                                                                            text[i:i + 2]))
               for i, char in enumerate(text))


def test_languages_are_described_and_an_unknown_one_is_named():
    assert {"en", "zh"} <= set(language_names())
    with pytest.raises(ValueError, match="no language .xx.; described languages: ca, cs, da, de, en, "):
        get_language("xx")
    assert get_language().name == "en" and get_language("en").charset.num_classes == 96


def test_chinese_charset_is_gb2312_printable_ascii_and_chinese_punctuation():
    chars = ZH.charset.chars
    hanzi = make_zh_charset.gb2312_hanzi()
    assert len(hanzi) == 6763 and len(set(hanzi)) == 6763
    # The file is what the script writes: ASCII, the punctuation, then GB2312 in code order.
    assert chars == "".join(chr(c) for c in range(32, 127)) + make_zh_charset.PUNCTUATION + \
        "".join(hanzi)
    for char in u"\uff0c\u3002\u3001\uff1a\u201c\u201d\u300a\u300b\uff08\uff09\u6c49\u5b57\u9f44":
        assert char in ZH.charset, char
    # Only what NFKC does not fold to ASCII, or what Chinese text keeps as it is: its
    # full-width punctuation, the ellipsis (\u2026\u2026) and the numero sign.
    folded = [char for char in chars if unicodedata.normalize("NFKC", char) != char]
    assert set(folded) <= set(u"\uff0c\uff1a\uff1b\uff1f\uff01\uff08\uff09\uff5e\uffe5"
                              u"\u2026\u2116"), folded


def test_chinese_spelling_drops_spaces_beside_chinese_and_folds_full_width_forms():
    assert ZH.spell(u"\u4f7f\u7528 apt-get  \u5b89\u88c5") == u"\u4f7f\u7528apt-get\u5b89\u88c5"
    assert ZH.spell(u"\u7248\u672c \uff21\uff22\uff23\uff11\u3000\u53f7") == \
        u"\u7248\u672cABC1\u53f7"
    assert ZH.spell(u"see apt get") == u"see apt get"  # Latin words keep their spaces
    assert ZH.label_of(u"\u00e9t\u00e9") is None  # outside the charset: refused
    assert ZH.label_of(u"\u2022 \u4e00") == u"\u00b7\u4e00"
    en = get_language("en")
    assert en.spell(u"\u201cfi\u201d  x") == u'"fi" x' and en.unspace(u"a \u4e00") == u"a \u4e00"


def test_chinese_prose_is_cut_at_sentence_ends_and_joined_without_spaces(tmp_path):
    text = tmp_path / "prose.txt"
    text.write_text(PROSE, encoding="utf-8")
    units = ZH.prose(paths=[str(text)])
    assert units[0] == u"\u5982\u679c\u4f60\u6b63\u5728\u9605\u8bfb\u672c\u6587\u6863\uff0c" \
                       u"\u4f60\u53ef\u80fd\u4e0d\u9700\u8981\u4eb2\u81ea\u7f16\u8bd1\u5185" \
                       u"\u6838\u3002"
    assert u"\u4f7f\u7528apt-get\u5b89\u88c5\u8f6f\u4ef6\u5305\uff1a\u5148\u8fd0\u884capt-get " \
           u"update\uff0c\u518d\u5b89\u88c5\u3002" in units
    assert len(units) == 5 and not any(beside_hanzi_space(unit) for unit in units)
    assert html_text(u"<p>\u4e00<b>\u4e8c</b></p><script>x=1</script><li>\u4e09</li>") \
        .split() == [u"\u4e00\u4e8c", u"\u4e09"]


def test_chinese_lines_are_in_the_charset_and_never_spaced_between_hanzi(tmp_path):
    text, words = tmp_path / "prose.txt", tmp_path / "words.txt"
    text.write_text(PROSE, encoding="utf-8")
    words.write_text(u"\u4e2d\u6587 30 n\n\u6c49\u5b57 10 n\nlatex 3 eng\n", encoding="utf-8")
    sampler = LineSampler(ZH.charset, 1, 24, texts=[str(text)], words=str(words), language=ZH)
    rng = np.random.RandomState(3)
    lines = [sampler.sample(rng) for _ in range(300)]
    labels = [label for _, label in lines]
    assert all(1 <= len(label) <= 24 and not ZH.charset.unknown_chars(label) for label in labels)
    assert not any(beside_hanzi_space(label) for label in labels)
    assert sum(any(u"\u4e00" <= char <= u"\u9fff" for char in label) for label in labels) > 200
    joined = "".join(labels)
    for char in u"\uff0c\u3002\u6c49\u5b57apt0123456789":  # punctuation, phrases, prose, numbers
        assert char in joined, char
    again = np.random.RandomState(3)
    assert lines[:5] == [sampler.sample(again) for _ in range(5)]


def test_faces_of_a_collection_are_found_and_english_leaves_chinese_designs_out(microhei_dir):
    faces = find_fonts([microhei_dir], language=ZH)
    assert faces == [microhei_dir + "/wqy-microhei.ttc#0", microhei_dir + "/wqy-microhei.ttc#1"]
    assert [font_family(face) for face in faces] == ["WenQuanYi Micro Hei",
                                                      "WenQuanYi Micro Hei Mono"]
    assert load_font(faces[1], 20).getlength(u"\u4e2d") > 0
    # English draws Latin faces: WenQuanYi maps ASCII but is a Chinese design.
    with pytest.raises(FileNotFoundError, match="no .ttf/.otf"):
        find_fonts([microhei_dir])


def test_ar_pl_designs_are_reserved_by_family_file_and_pdf_font_name():
    for face, family in (("/x/arphic/ukai.ttc#0", "AR PL UKai CN"),
                         ("/x/arphic/uming.ttc#3", "AR PL UMing HK"),
                         ("/x/arphic-gbsn00lp/gbsn00lp.ttf", "AR PL SungtiL GB"),
                         ("/x/gkai00mp.ttf", "other name"), ("ukaicn", "UKaiCN")):
        assert is_reserved(face, family), face
    assert not is_reserved("/x/NotoSerifCJK-Regular.ttc#2", "Noto Serif CJK SC")
    assert not is_reserved("/x/LXGWWenKai-Regular.ttf", "LXGW WenKai")


def test_reserved_pdfs_give_no_training_text(tmp_path):
    source = os.path.join(HERE, "data", "simh_doc_page7.pdf")
    for name in ("lshort-zh-cn.pdf", "ctex-faq.pdf", "other.pdf"):
        shutil.copy(source, str(tmp_path / name))
    assert PdfTextLayers([str(tmp_path / "lshort-zh-cn.pdf"),
                          str(tmp_path / "ctex-faq.pdf")]).text() == ""
    alone = PdfTextLayers([str(tmp_path / "other.pdf")]).text()
    assert "implementation specific" in alone
    assert PdfTextLayers([str(tmp_path / "*.pdf")]).text() == alone


def mo_bytes(pairs, order="<"):
    """A compiled gettext catalogue (GNU .mo layout) of ``(msgid, msgstr)`` pairs."""
    ids = [original.encode("utf-8") for original, _ in pairs]
    strs = [translation.encode("utf-8") for _, translation in pairs]
    header = 28
    originals, translations = header, header + 8 * len(pairs)
    offset, tables, blobs = translations + 8 * len(pairs), [[], []], b""
    for table, strings in zip(tables, (ids, strs)):
        for string in strings:
            table.append(struct.pack(order + "2I", len(string), offset + len(blobs)))
            blobs += string + b"\0"
    return struct.pack(order + "7I", 0x950412de, 0, len(pairs), originals, translations, 0,
                       0) + b"".join(tables[0]) + b"".join(tables[1]) + blobs


def test_gettext_catalogues_give_their_translations_as_a_reader_sees_them(tmp_path):
    pairs = [("", "Content-Type: text/plain; charset=UTF-8\n"),
             ("Usage: %s [OPTION]... FILE...", u"\u7528\u6cd5\uff1a%s [\u9009\u9879]... \u6587\u4ef6..."),
             ("%d file\0%d files", u"%d \u4e2a\u6587\u4ef6"),
             ("  -a, --all\n  -q", u"  -a, --all  \u5168\u90e8\n  -q  \u5b89\u9759\uff1a%m")]
    (tmp_path / "little.mo").write_bytes(mo_bytes(pairs))
    (tmp_path / "big.mo").write_bytes(mo_bytes(pairs, ">"))
    (tmp_path / "other.mo").write_bytes(b"not a catalogue at all, just text")
    (tmp_path / "short.mo").write_bytes(mo_bytes(pairs)[:40])
    expected = [u"\u7528\u6cd5\uff1a%s [\u9009\u9879]... \u6587\u4ef6...", u"%d \u4e2a\u6587\u4ef6",
                u"  -a, --all  \u5168\u90e8\n  -q  \u5b89\u9759\uff1a%m"]
    assert catalog_messages(str(tmp_path / "little.mo")) == expected
    assert catalog_messages(str(tmp_path / "big.mo")) == expected
    assert catalog_messages(str(tmp_path / "other.mo")) == []
    assert catalog_messages(str(tmp_path / "short.mo")) == []  # its tables cut off
    text = GettextCatalogs([str(tmp_path / "little.mo"), str(tmp_path / "other.mo")]).text()
    assert text.split("\n\n") == [u"\u7528\u6cd5\uff1aFILE [\u9009\u9879]... \u6587\u4ef6...",
                                   u"3 \u4e2a\u6587\u4ef6", u"  -a, --all  \u5168\u90e8",
                                   u"  -q  \u5b89\u9759\uff1aFILE"]
    units = ZH.units(ZH.respell(text))
    assert u"3\u4e2a\u6587\u4ef6" in [ZH.tidy(unit) for unit in units]


def test_page_rows_join_chinese_pieces_without_spaces_and_latin_ones_with():
    boxes = [LineBox(0, 0, 10, 5, 0), LineBox(40, 0, 50, 5, 0), LineBox(0, 9, 10, 14, 1),
             LineBox(40, 9, 50, 14, 1), LineBox(60, 9, 70, 14, 1)]
    texts = [u"\u4e2d\u6587", u"\u9875\u9762", "use", "apt-get", u"\u5b89\u88c5"]
    assert page_text(boxes, texts, language=ZH) == \
        u"\u4e2d\u6587\u9875\u9762\nuse apt-get\u5b89\u88c5"
    assert page_text(boxes, texts) == u"\u4e2d\u6587 \u9875\u9762\nuse apt-get \u5b89\u88c5"


def test_nfkc_blank_blind_scoring():
    fold = scoring_fold(nfkc_blank_blind=True)
    assert fold(u"\u4f7f\u7528 apt-get\uff0c \u5b89\u88c5\u3000\uff21") == \
        u"\u4f7f\u7528apt-get,\u5b89\u88c5A"
    assert scoring_fold()(u"a \uff0c") == u"a \uff0c"


def run_tool(tool, args):
    graph = tf.Graph()
    with graph.as_default():
        return tool.main(args)


@pytest.mark.slow
def test_a_tiny_chinese_model_trains_and_reads(microhei_dir, tmp_path, capsys):
    """crnn-generate --language zh, crnn-train --language zh, crnn-evaluate (Chinese scoring by
    default) and crnn-predict on a tiny model of eight characters, from the command lines."""
    charset = tmp_path / "charset.txt"
    charset.write_text(u"".join(c + u"\n" for c in u"\u4e2d\u6587\u5b57\u5929\u5730\u4eba"
                                                     u"\u5c71\u6c34"), encoding="utf-8")
    data, out = str(tmp_path / "data"), str(tmp_path / "run")
    assert run_tool(generate, ["--language", "zh", "--charset", str(charset), "--kinds", "random",
                               "--max-len", "3", "--count", "128", "--difficulty", "0",
                               "--font-dir", microhei_dir, "--seed", "4", "--out", data,
                               "--workers", "1", "--quiet"]) == 0
    labels = read_labels(os.path.join(data, "labels.txt"))
    assert all(1 <= len(text) <= 3 and not set(text) - set(charset.read_text("utf-8"))
               for _, text in labels)
    # Seeded data and weights; 300 steps take the model from reading nothing to reading
    # nearly all of its training crops (measured: 128 of 128 on both stacks; the bound leaves
    # a quarter for other machines).
    assert run_tool(train, ["--language", "zh", "--charset", str(charset), "--train", data,
                            "--out", out, "--model", "tiny", "--steps", "300", "--lr", "3e-3",
                            "--batch-size", "16", "--seed", "2", "--log-every", "100",
                            "--validate-every", "0", "--width", "64"]) == 0
    config = json.load(open(os.path.join(out, "config.json"), encoding="utf-8"))
    assert config["language"] == "zh" and config["model"]["num_classes"] == 9
    capsys.readouterr()
    assert run_tool(evaluate, ["--checkpoint", out, "--data", data]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["scoring"] == "nfkc-blank-blind" and figures["n"] == 128
    assert figures["word_accuracy"] >= 0.75, figures
    paths = [os.path.join(data, path) for path, _ in labels[:8]]
    assert run_tool(predict, ["--checkpoint", out] + paths) == 0
    read = [line.split("\t")[1] for line in capsys.readouterr().out.strip().splitlines()]
    assert sum(text == truth for text, (_, truth) in zip(read, labels[:8])) >= 6, read


def test_reserved_documents_are_never_training_text(tmp_path):
    from crnn_multigpu.datasets.text_sources import expand, is_reserved_document
    for path in ("/usr/share/doc/texlive-doc/latex/lshort-german/l2kurz.pdf",
                 "/usr/share/doc/texlive-doc/latex/lshort-finnish/lyhyt2e.pdf",
                 "/usr/share/doc/texlive-doc/latex/lshort-slovak/lshort-sk.pdf",
                 "/usr/share/doc/texlive-doc/latex/it-lshort.pdf",
                 "/usr/share/doc/python-reportlab-doc/reportlab-reference.pdf",
                 "/usr/share/doc/debian-faq-de/debian-faq.de.html/index.html",
                 "/usr/share/doc/installation-guide-amd64/fr/ch01.html",
                 "/usr/share/man/zh_CN/man1/ls.1.gz"):
        assert is_reserved_document(path), path
    for path in ("/usr/share/doc/texlive-doc/latex/babel-german/ngerman.pdf",
                 "/usr/share/doc/debian-reference-de/index.de.html",
                 "/usr/share/man/de/man1/ls.1.gz"):
        assert not is_reserved_document(path), path
    kept, reserved = tmp_path / "guide" / "a.txt", tmp_path / "lshort-french" / "b.txt"
    for path in (kept, reserved):
        path.parent.mkdir()
        path.write_text(u"text")
    assert expand([str(tmp_path / "*" / "*.txt")]) == [str(kept)]
