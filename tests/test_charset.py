"""Charset: class ids, CTC blank, file format and label checks."""
import io
import os
import string

import pytest

from crnn_multigpu.datasets.charset import (EMPTY_LABEL, OUTSIDE_CHARSET, TOO_LONG, Charset,
                                   describe_rejections, filter_labels)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHARSETS = os.path.join(REPO, "data", "charsets")


def write_text(path, text):
    with io.open(str(path), "w", encoding="utf-8") as handle:
        handle.write(text)
    return str(path)


def test_default_is_digits_then_lowercase_with_blank_last():
    charset = Charset.default()
    assert charset.chars == string.digits + string.ascii_lowercase
    assert len(charset) == 36
    assert charset.num_classes == 37
    assert charset.blank == 36
    assert charset.encode("09az") == [0, 9, 10, 35]
    assert "q" in charset and "Q" not in charset


def test_encode_decode_round_trip():
    charset = Charset.default()
    text = "hello2024world"
    assert charset.decode(charset.encode(text)) == text


def test_decode_skips_blank_and_negative_padding():
    charset = Charset.default()
    ids = charset.encode("ab") + [charset.blank, -1, -1] + charset.encode("c") + [-1]
    assert charset.decode(ids) == "abc"


def test_encode_names_unknown_characters():
    with pytest.raises(ValueError) as error:
        Charset.default().encode("abC!")
    assert "'C'" in str(error.value) and "'!'" in str(error.value)


def test_constructor_rejects_duplicates_and_multichar_entries():
    with pytest.raises(ValueError, match="repeats"):
        Charset("abca")
    with pytest.raises(ValueError, match="exactly one character"):
        Charset(["a", "bc"])
    with pytest.raises(ValueError):
        Charset("")


@pytest.mark.parametrize("text, steps", [("", 0), ("a", 1), ("ab", 2), ("aab", 4), ("aaa", 5),
                                         ("abab", 4), ("hello", 6)])
def test_required_time_steps_counts_blanks_between_repeats(text, steps):
    assert Charset.required_time_steps(text) == steps


def test_check_label_reasons():
    charset = Charset.default()
    assert charset.check_label("abc", 10) is None
    assert charset.check_label("abc") is None
    assert charset.check_label("", 10) == "empty label"
    reason = charset.check_label("aB!", 10)
    assert reason.startswith("characters outside the charset:") and "'B'" in reason
    assert charset.check_label("aab", 3) == "needs 4 time steps but the model has 3"
    assert charset.check_label("aab", 4) is None


def test_filter_labels_groups_rejections_with_counts():
    charset = Charset.default()
    texts = ["ok", "", "Bad", "a" * 20, "fine", "", "xyz"]
    kept, rejected = filter_labels(texts, charset, time_steps=10)
    assert kept == [0, 4, 6]
    assert rejected[EMPTY_LABEL] == ["", ""]
    assert rejected[OUTSIDE_CHARSET] == ["Bad"]
    assert rejected[TOO_LONG] == ["a" * 20]
    summary = describe_rejections(rejected, len(texts))
    assert summary.startswith("dropped 4 of 7 labels")
    assert "2 empty label" in summary and "'Bad'" in summary


def test_file_round_trip_with_space(tmp_path):
    charset = Charset("ab c")
    path = str(tmp_path / "charset.txt")
    charset.to_file(path)
    assert Charset.from_file(path) == charset


def test_from_file_skips_blank_lines_and_bom(tmp_path):
    path = write_text(tmp_path / "c.txt", u"\ufeffa\n\nb\r\nc\n\n")
    assert Charset.from_file(path).chars == "abc"


def test_shipped_charsets():
    digits_lower = Charset.from_file(os.path.join(CHARSETS, "digits_lower.txt"))
    assert digits_lower == Charset.default()
    cjk = Charset.from_file(os.path.join(CHARSETS, "cjk_example.txt"))
    assert len(cjk) >= 50
    assert set(string.digits) <= set(cjk.chars)
    text = u"中国人2024"
    assert cjk.decode(cjk.encode(text)) == text
    assert cjk.blank == len(cjk) and cjk.num_classes == len(cjk) + 1


def test_printable_ascii_charset_has_space_as_a_class():
    charset = Charset.from_file(os.path.join(CHARSETS, "printable_ascii.txt"))
    assert charset.chars == "".join(chr(code) for code in range(32, 127))
    assert len(charset) == 95 and charset.num_classes == 96
    assert charset.encode(" ") == [0]
    line = 'Version ::= INTEGER  -- see "1.2. What is this spec?"'
    assert charset.decode(charset.encode(line)) == line
    assert charset.check_label("asn1_der_decoding_element") is None
    assert charset.unknown_chars(u"caf\u00e9\t") == [u"\u00e9", "\t"]


def test_from_file_duplicate_names_file_and_lines(tmp_path):
    path = write_text(tmp_path / "dup.txt", u"a\nb\n\nа\nb\n")  # the 'а' on line 4 is Cyrillic
    with pytest.raises(ValueError) as error:
        Charset.from_file(path)
    message = str(error.value)
    assert path in message and "line 5" in message and "line 2" in message


def test_from_file_multichar_line_names_file_and_line(tmp_path):
    path = write_text(tmp_path / "multi.txt", u"a\nb \nc\n")
    with pytest.raises(ValueError) as error:
        Charset.from_file(path)
    assert path in str(error.value) and "line 2" in str(error.value)
    assert "one character" in str(error.value)


def test_from_file_missing_or_empty(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Charset.from_file(missing)
    with pytest.raises(ValueError, match="no characters"):
        Charset.from_file(write_text(tmp_path / "empty.txt", u"\n\n"))
