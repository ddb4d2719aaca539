"""The Chinese side-by-side check's own pieces (scripts/compare_chinese.py, scripts/zh_material.py and
scripts/rapidocr_read.py) on small made-up inputs: PP-OCR's boxes put into rows, the scoring, the
table, the man-page text and the one-line errors. Tesseract's chi_sim, rapidocr and the reserved
material are not needed (comparison tools and material, not dependencies)."""
import json
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import compare_chinese as compare  # noqa: E402
import zh_material as material  # noqa: E402
import rapidocr_read  # noqa: E402
from assertions import one_error_line  # noqa: E402
from fake_pp_ocr import SECONDS, line_images, use_fake_runner  # noqa: E402


def box(left, top, right, bottom):
    """Corner points of an axis-aligned box, clockwise from the top left (as PP-OCR gives)."""
    return [[left, top], [right, top], [right, bottom], [left, bottom]]


def test_pp_ocr_boxes_become_rows_top_to_bottom_pieces_left_to_right():
    results = [
        (box(400, 103, 600, 125), "右边", 0.9),       # the first line's right piece, first given
        (box(40, 140, 300, 160), "第二行", 0.9),
        (box(40, 100, 380, 122), "左边", 0.9),        # 1.5 px higher than its neighbour
        (box(320, 98, 380, 130), "大", 0.9),          # taller (a big glyph), same line
        (box(40, 180, 90, 200), "   ", 0.9),          # nothing read: no row
        (box(40, 181, 300, 201), "第三行", 0.9),
    ]
    assert rapidocr_read.page_rows(results) == [["左边", "大", "右边"], ["第二行"], ["第三行"]]
    assert rapidocr_read.page_rows(None) == [] and rapidocr_read.page_rows([]) == []


def test_a_box_more_than_half_a_line_lower_starts_a_new_row():
    # Lines 20 px high: a centre 10 px lower is still the row, 11 px lower is the next one.
    same = [(box(0, 0, 50, 20), "甲", 1.0), (box(60, 10, 110, 30), "乙", 1.0)]
    apart = [(box(0, 0, 50, 20), "甲", 1.0), (box(60, 11, 110, 31), "乙", 1.0)]
    assert rapidocr_read.page_rows(same) == [["甲", "乙"]]
    assert rapidocr_read.page_rows(apart) == [["甲"], ["乙"]]


def test_a_recogniser_only_result_is_its_text():
    assert rapidocr_read.line_text([["你好", 0.98]]) == "你好"
    assert rapidocr_read.line_text(None) == ""


def test_pp_ocr_pieces_join_as_chinese_joins_them(tmp_path):
    # The shared reader (scripts/pp_ocr.py) as compare_chinese builds it, through a fake runner.
    reader = use_fake_runner(compare.PaddleOcr(compare.ZH.tidy, compare.ZH.join_pieces),
                             tmp_path, rows=[["如果", "file", "可以存取"], ["第二行 "]])
    pages = reader.read("page", line_images(tmp_path, ["", ""]), str(tmp_path))
    assert pages.texts == [["如果file可以存取", "第二行"]] * 2
    lines = reader.read("line", line_images(tmp_path, [" 你 好 world ", "x"]), str(tmp_path))
    assert lines.texts == ["你好world", "x"] and lines.seconds == [SECONDS, SECONDS]


def test_readings_differing_only_in_spaces_and_full_width_forms_score_as_exact():
    labels = ["如果 file 可以存取，那么成功退出。", "大小为字号的1.2倍"]
    readings = ["如果file 可 以存取, 那么成功退出。", "大小为字号的１．２倍"]
    figures = compare.line_figures(readings, labels)
    assert figures["word_accuracy"] == 1.0 and figures["cer"] == 0.0
    wrong = compare.line_figures(["如果file可以存取，那么成功退出。", "大小为字号的1.3倍"], labels)
    assert wrong["word_accuracy"] == 0.5
    # One edit over the folded labels' 18 + 10 characters (no spaces, "，" as ",").
    assert abs(wrong["cer"] - 1.0 / 28) < 1e-12


def test_page_scores_fold_rows_and_match_each_truth_row_once():
    truth = ["第一行，有逗号", "second line", "第三行"]
    read = ["第三行", "第一行, 有逗号", "secondline"]  # all three right, out of order
    edits, characters, exact, rows = compare.page_scores(read, truth)
    assert (exact, rows, characters) == (3, 3, len("第一行,有逗号secondline第三行"))
    assert edits > 0  # the page's text is read in another order
    assert compare.page_scores(truth, truth)[0] == 0
    assert compare.page_scores(truth[:1] * 2, truth[:1] + truth[:1])[2] == 2
    assert compare.page_scores(truth[:1] * 2, truth)[2] == 1  # a row read twice counts once


def test_the_table_has_a_column_per_system_and_cells_of_exact_and_cer():
    assert compare.cell(0.683, 0.0403) == "68.3 % / 4.03 %"
    systems = ["this project", "Tesseract 5.3.0 chi_sim", "PP-OCRv4 (rapidocr-onnxruntime 1.4.4)"]
    rows = [("lines", "300", ["68.3 % / 4.03 %", "50.0 % / 9.00 %", "80.0 % / 2.00 %"]),
            ("seconds per page", "6", ["1.20", "4.00", "9.00"])]
    lines = compare.markdown_table(systems, rows).split("\n")
    assert lines[0] == ("| material | n | this project | Tesseract 5.3.0 chi_sim | "
                        "PP-OCRv4 (rapidocr-onnxruntime 1.4.4) |")
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[2] == "| lines | 300 | 68.3 % / 4.03 % | 50.0 % / 9.00 % | 80.0 % / 2.00 % |"
    assert len(lines) == 4 and all(line.count("|") == 6 for line in lines)
    with pytest.raises(ValueError):
        compare.markdown_table(systems, [("lines", "1", ["a", "b"])])


def stopped_with(capsys, what, *args):
    """The one error line ``what(*args)`` stops with (exit code 2)."""
    with pytest.raises(SystemExit) as stopped:
        what(*args)
    return one_error_line(stopped.value.code, capsys.readouterr().err)


def exit_message(monkeypatch, capsys, languages, rapidocr):
    monkeypatch.setattr(compare, "tesseract_languages", lambda: languages)
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: rapidocr)
    return stopped_with(capsys, compare.require_peers)


def test_a_missing_peer_stops_with_one_line_naming_what_to_install(monkeypatch, capsys):
    no_chi = exit_message(monkeypatch, capsys, {"eng", "osd"}, True)
    assert "chi_sim" in no_chi and "install_system_packages.sh --compare" in no_chi
    assert "venv-rapidocr" not in no_chi
    no_rapidocr = exit_message(monkeypatch, capsys, {"eng", "chi_sim"}, False)
    assert "make venv-rapidocr" in no_rapidocr and "install_system_packages" not in no_rapidocr
    neither = exit_message(monkeypatch, capsys, None, False)
    assert "Tesseract" in neither and "make venv-rapidocr" in neither
    monkeypatch.setattr(compare, "tesseract_languages", lambda: {"chi_sim"})
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: True)
    compare.require_peers()  # both there: no exit


def test_rapidocr_is_missing_without_its_venv(tmp_path):
    assert compare.rapidocr_ready(str(tmp_path / "no-venv" / "bin" / "python")) is False


def test_the_checkpoint_error_names_the_flag_and_wants_a_chinese_model(tmp_path, capsys):
    no_model = stopped_with(capsys, compare.check_checkpoint, str(tmp_path / "models" / "zh"))
    assert "--checkpoint" in no_model
    with open(str(tmp_path / "config.json"), "w") as handle:
        json.dump({"charset": "ab"}, handle)  # a run of before languages: no "language"
    not_chinese = stopped_with(capsys, compare.check_checkpoint, str(tmp_path))
    assert "language" in not_chinese and "--checkpoint" in not_chinese
    with open(str(tmp_path / "config.json"), "w") as handle:
        json.dump({"charset": "ab", "language": "zh"}, handle)
    compare.check_checkpoint(str(tmp_path))


MAN_PAGE = """ACCESS(1)                    General Commands Manual                    ACCESS(1)

NAME(名称)
       access - 确定文件是否可以存取访问

DESCRIPTION (描述)
       如果 file 可以在特定模式下存取访问, 那么成功退出.
       这一行与上一行是同一段.
              缩进不同的一行是另一段.

[中文版维护人]
       riser <email>
跋
       本页面中文版由中文 man 手册页计划提供。

                                  2003.11.22                          ACCESS(1)
"""


def test_man_pages_give_their_body_paragraphs_without_headings_or_credits():
    assert material.man_paragraphs(MAN_PAGE) == [
        "access - 确定文件是否可以存取访问",
        "如果 file 可以在特定模式下存取访问, 那么成功退出. 这一行与上一行是同一段.",
        "缩进不同的一行是另一段."]
    units = material.prose_units("\n\n".join(material.man_paragraphs(MAN_PAGE)))
    assert "如果file可以在特定模式下存取访问,那么成功退出.这一行与上一行是同一段." in units
    assert all(material.hanzi_count(unit) >= material.MIN_HANZI for unit in units)


def test_a_long_unit_is_cut_to_a_window_of_whole_tokens():
    unit = material.ZH.tidy("在 Windows 系统上如果要切换到其他分区，还需加上选项，例如 cd /d "
                           "C:\\Program Files 这样的命令与参数以及更多的文字")
    assert " " in unit and len(unit) > 2 * material.MAX_LINE
    rng = np.random.RandomState(3)
    lines = set()
    for _ in range(30):
        line = material.line_window(unit, rng)
        lines.add(line)
        # At least half a line (a start token may be a space, dropped), at most a line.
        assert material.MAX_LINE // 2 - 1 <= len(line) <= material.MAX_LINE
        assert line == line.strip() and line in unit
        # A Latin word is one token: whole or absent, never cut at the window's ends.
        assert set(re.findall(r"[A-Za-z]+", line)) <= {"Windows", "cd", "d", "C", "Program",
                                                       "Files"}
    assert len(lines) > 5  # windows start at drawn tokens
    assert material.line_window("短的一行", rng) == "短的一行"
