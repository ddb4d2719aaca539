"""The page-makes benchmark's own arithmetic and wiring (scripts/page_makes.py and
scripts/page_makes_pages.py) with fakes: the languages of paths and pages, the validation side
of the detector's split, reserved documents and faces refused, the DocBook PDFs found by their
creator, the figures and the table, and the command end to end with fake pages and readers.
No Chromium, Tesseract, PP-OCR, PDF or model is needed."""
import gzip
import json
import os
import sys
from collections import namedtuple

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import page_makes  # noqa: E402
import page_makes_pages as pages_module  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.datasets.page_crops import split_by_source  # noqa: E402
from crnn_multigpu.ocr.document import Document, Skipped  # noqa: E402
from page_makes import Reading  # noqa: E402
from page_makes_pages import Page  # noqa: E402

ENGLISH_ROW = "the reader reads the rows of a page and the text of each"
CHINESE_ROW = u"程序支持国际化的行为是通过配置环境变量来支持本地化"


def test_a_path_names_its_language():
    assert pages_module.path_language("/usr/share/debian-reference/ch08.zh-cn.html") == "zh"
    assert pages_module.path_language("/doc/html/zh-CN/apt.html") == "zh"
    assert pages_module.path_language("/doc/html/zh-TW/apt.html") == "other"
    assert pages_module.path_language("/usr/share/debian-reference/ch08.de.html") == "other"
    assert pages_module.path_language("/doc/html/en-US/apt.html") == "en"
    assert pages_module.path_language("/doc/python3-doc/html/library/os.html") == "en"


def test_a_page_is_english_chinese_or_neither():
    assert pages_module.page_language([ENGLISH_ROW] * 3) == "en"
    assert pages_module.page_language([CHINESE_ROW, "LANG=zh_CN.UTF-8"]) == "zh"
    assert pages_module.page_language(["der Leser liest die Zeilen einer Seite"] * 3) is None
    accented = u"\u00e4\u00f6\u00fc\u00df \u00e9\u00e8\u00ea \u00c4\u00d6\u00dc \u00e0\u00e2\u00e7"
    assert pages_module.page_language([accented + " the of and to in is"]) is None
    assert pages_module.page_language(["\\tableofcontents", "\\listoffigures"]) is None
    assert pages_module.page_language([]) is None


def test_only_validation_side_documents_are_used_and_never_a_reserved_one():
    documents = ["/doc/manual-%03d.pdf" % i for i in range(300)]
    training, validation = split_by_source([{"source": path} for path in documents], 0.1, 7)
    # A reserved document that the split would put on the validation side.
    reserved = next(path for path in ("/doc/lshort-%d.pdf" % i for i in range(1000))
                    if split_by_source([{"source": path}], 0.1, 7)[1])
    chosen = pages_module.validation_documents(documents + [reserved], 0.1, 7)
    assert chosen == [entry["source"] for entry in validation]
    assert 0 < len(chosen) < 100 and reserved not in chosen


def test_docbook_pdfs_are_found_by_their_creator_and_reserved_ones_never_opened(tmp_path):
    root, scratch = tmp_path / "doc", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    (root / "dblatex-manual.pdf").write_bytes(b"%PDF made by DBLaTeX")
    with gzip.open(str(root / "valgrind.pdf.gz"), "wb") as packed:
        packed.write(b"%PDF made by Apache FOP")
    (root / "latex-guide.pdf").write_bytes(b"%PDF made by pdfTeX")
    (root / "debian-faq.en.pdf").write_bytes(b"%PDF made by DBLaTeX")
    (root / "notes.txt").write_bytes(b"DBLaTeX")
    (root / "link").mkdir()
    os.symlink(str(root / "dblatex-manual.pdf"), str(root / "link" / "manual.pdf"))
    opened = []

    def creator(pdf):
        opened.append(os.path.basename(pdf))
        with open(pdf, "rb") as stream:
            return stream.read().decode().replace("%PDF made by ", "")
    found = pages_module.docbook_pdfs(str(scratch), roots=(str(root),), creator=creator)
    assert found == [str(root / "dblatex-manual.pdf"), str(root / "valgrind.pdf.gz")]
    assert "debian-faq.en.pdf" not in opened and "notes.txt" not in opened
    assert sorted(opened) == ["dblatex-manual.pdf", "latex-guide.pdf", "unpacked.pdf"]


class FakePdf(object):
    """Stands in for poppler: a PDF of ``rows_of[number]`` rows a page, drawn as a white page."""

    def __init__(self, monkeypatch, rows_of, refusal=None):
        self.drawn = []
        monkeypatch.setattr(pages_module, "font_refusal", lambda pdf: refusal)
        monkeypatch.setattr(pages_module, "page_count", lambda pdf: len(rows_of))
        monkeypatch.setattr(pages_module.page_material, "line_boxes", lambda pdf, number, dpi, recipe: [
            [0, 0, 10, 10, row] for row in rows_of[number - 1]])
        monkeypatch.setattr(pages_module, "render_page", self.render)

    def render(self, pdf, number, dpi):
        from PIL import Image
        self.drawn.append(number)
        return Image.new("L", (20, 20), 255)


def maker(tmp_path, log, per_document=2):
    import random
    return pages_module.PageMaker("en", [], 150, str(tmp_path), random.Random(0), log,
                                  per_document)


def test_pages_have_enough_rows_in_the_language_and_at_most_per_document(monkeypatch, tmp_path):
    english, short, german = [ENGLISH_ROW] * 12, [ENGLISH_ROW] * 3, ["die Zeile einer Seite"] * 12
    pdf = FakePdf(monkeypatch, [english, short, german, english, english, english])
    found = maker(tmp_path, []).pages("typeset", ["/doc/a.pdf", "/doc/b.pdf"], 3)
    assert [page.source for page in found] == ["/doc/a.pdf", "/doc/a.pdf", "/doc/b.pdf"]
    assert all(page.truth == english for page in found)
    assert all(os.path.isfile(page.path) for page in found)
    assert len(set(page.path for page in found)) == 3
    assert set(pdf.drawn) <= {1, 4, 5, 6}


def test_pages_drawn_in_a_photo_look_are_the_pages_a_clean_run_chooses(monkeypatch, tmp_path):
    import random
    from PIL import Image
    FakePdf(monkeypatch, [[ENGLISH_ROW] * 12] * 6)  # pages of two documents, shuffled
    chosen = {}
    for look in ("clean", "photo"):
        folder = tmp_path / look
        folder.mkdir()
        maker = pages_module.PageMaker("en", [], 150, str(folder), random.Random(0), [].append,
                                       2, look=look)
        found = maker.pages("typeset", ["/doc/a.pdf", "/doc/b.pdf"], 3)
        chosen[look] = [(page.source, page.number, page.truth) for page in found]
        sizes = set(Image.open(page.path).size for page in found)
        assert sizes == {(20, 20)} if look == "clean" else all(
            width < 20 for width, _ in sizes)
    assert chosen["clean"] == chosen["photo"] and len(chosen["clean"]) == 3


def test_pages_of_documents_of_one_name_are_kept_apart(monkeypatch, tmp_path):
    FakePdf(monkeypatch, [[ENGLISH_ROW] * 12, []])  # page 1 of both guide.pdf
    found = maker(tmp_path, []).pages("typeset", ["/doc/a/guide.pdf", "/doc/b/guide.pdf"], 2)
    assert [(page.source, page.number) for page in found] == [("/doc/a/guide.pdf", 1),
                                                             ("/doc/b/guide.pdf", 1)]
    assert found[0].path != found[1].path


def test_a_print_in_a_reserved_face_is_left_out_with_a_line(monkeypatch, tmp_path):
    FakePdf(monkeypatch, [[ENGLISH_ROW] * 12] * 3,
            refusal="font-maybe-reserved: ABCDEF+LiberationSerif")
    log = []
    assert maker(tmp_path, log.append).pages("typeset", ["/doc/a.pdf"], 2) == []
    assert log == ["left out /doc/a.pdf: its fonts may not be used (font-maybe-reserved: "
                   "ABCDEF+LiberationSerif)"]


def page(truth, name="p.png", make="typeset"):
    return Page(make, "en", "/doc/x.pdf", 1, name, truth)


def test_figures_count_rows_read_exactly_page_cer_refusals_turns_and_seconds():
    english = get_language("en")
    pages = [page([u"\u201cabc\u201d", "de"]), page(["xyz"]), page(["hello"]), page(["ok"])]
    readings = [Reading(['"abc"', "de"], 1.0, False, False),  # spelt alike: both right
                Reading(["xyy"], 2.0, False, False),
                Reading([], 3.0, False, True),               # refused: read as nothing
                Reading(["ok"], 6.0, True, False)]
    figures = page_makes.figures(pages, readings, english)
    # Edits: 0 + 1 + 5 + 0 over '"abc"\nde' (8) + 3 + 5 + 2 characters; rows: 3 of 5 exact.
    assert figures == dict(pages=4, refused=1, turned=1, rows=5, rows_exact=0.6,
                           cer=6 / 18.0, seconds_per_page=3.0)


def test_chinese_is_scored_as_the_compare_scripts_score_it():
    # Spaces dropped and full-width forms equal to their ASCII twins (NFKC, blank-blind).
    figures = page_makes.figures([page([u"中 文\uff0c字"])],
                                 [Reading([u"中文,字"], 1.0, False, False)], get_language("zh"))
    assert figures["rows_exact"] == 1.0 and figures["cer"] == 0.0


def test_the_table_gives_a_row_per_make_language_and_system():
    rows = [dict(make="browser", language="zh", system=page_makes.PROJECT, pages=6, refused=1,
                 turned=2, rows=40, rows_exact=0.25, cer=0.1234, seconds_per_page=7.25),
            dict(make="browser", language="zh", system="Tesseract", pages=6, refused=0,
                 turned=0, rows=40, rows_exact=0.5, cer=0.05, seconds_per_page=3.0)]
    lines = page_makes.table(rows).splitlines()
    assert lines[2] == "| browser | zh | this project | 6 | 1 / 2 | 25.0 % of 40 | 12.34 % | 7.2 |"
    assert lines[3] == "| browser | zh | Tesseract | 6 | - | 50.0 % of 40 | 5.00 % | 3.0 |"
    assert len(lines) == 4


Line = namedtuple("Line", "text")
ReadPage = namedtuple("ReadPage", "lines turn")


def test_the_project_is_read_through_the_front_door_turns_and_refusals_counted(monkeypatch):
    from crnn_multigpu import ocr
    documents = {"up.png": Document([ReadPage([Line("one"), Line(" ")], 0)]),
                 "turned.png": Document([ReadPage([Line("two")], 90)]),
                 "refused.png": Document([], [Skipped("refused.png", "its way up is unclear")])}

    class FakeReader(object):
        def __init__(self, model):
            assert model == "zh"

        def read(self, path):
            return documents[path]
    monkeypatch.setattr(ocr, "Reader", FakeReader, raising=False)
    project = page_makes.ProjectPages("zh")
    readings = project.read(["up.png", "turned.png", "refused.png"], lambda text: text.upper())
    assert [(r.rows, r.turned, r.refused) for r in readings] == [
        (["ONE"], False, False), (["TWO"], True, False), ([], False, True)]


class FakeSystem(object):
    """Reads each page as ``answers[path]``, one second a page."""

    def __init__(self, name, answers):
        self.name, self.answers, self.startup = name, answers, 1.5

    def read(self, paths, spell):
        return [Reading([spell(row) for row in self.answers[path]], 1.0, False, False)
                for path in paths]


def test_the_command_reads_every_make_with_every_system_and_writes_json(monkeypatch, tmp_path,
                                                                        capsys):
    drawn = {"browser": [page(["a b", "c"], "b1.png", "browser"), page(["d"], "b2.png",
                                                                        "browser")],
             "typeset": [page(["e"], "t1.png")], "docbook": []}
    answers = {"b1.png": ["a b", "c"], "b2.png": ["x"], "t1.png": ["e"]}
    monkeypatch.setattr(page_makes, "draw_pages", lambda args, language, scratch, log: drawn)
    monkeypatch.setattr(page_makes, "systems_for", lambda language, scratch, project: (
        [FakeSystem(page_makes.PROJECT, answers), FakeSystem("Tesseract", dict(
            (path, []) for path in answers))], ["skipping PP-OCRv4: missing its venv"]))
    out = str(tmp_path / "figures.json")
    assert page_makes.main(["--languages", "en", "--pages-per-make", "2", "--json", out]) == 0
    printed, err = capsys.readouterr()
    assert "| browser | en | this project | 2 | 0 / 0 | 66.7 % of 3 | 16.67 % | 1.0 |" in printed
    assert "| typeset | en | this project | 1 | 0 / 0 | 100.0 % of 1 | 0.00 % | 1.0 |" in printed
    assert "| typeset | en | Tesseract | 1 | - | 0.0 % of 1 | 100.00 % | 1.0 |" in printed
    assert "docbook" not in printed and "load average" in printed
    assert "skipping PP-OCRv4" in err
    with open(out) as stream:
        report = json.load(stream)
    assert len(report["figures"]) == 4 and report["skipped"] == ["skipping PP-OCRv4: missing its "
                                                                  "venv"]
    assert [(row["make"], row["system"]) for row in report["figures"]] == [
        ("browser", "this project"), ("browser", "Tesseract"), ("typeset", "this project"),
        ("typeset", "Tesseract")]
    second = report["pages"]["en"]["browser"][1]
    assert (second["source"], second["page"], second["image"], second["rows"]) == (
        "/doc/x.pdf", 1, "b2.png", 1)
    assert (second["systems"]["this project"]["cer"],
            report["pages"]["en"]["browser"][0]["systems"]["this project"]["cer"]) == (1.0, 0.0)
    assert report["startup_seconds"]["en"] == {"this project": 1.5, "Tesseract": 1.5}


@pytest.mark.parametrize("argv", [["--languages", "fr"], ["--makes", "scan"],
                                  ["--pages-per-make", "0"]])
def test_a_bad_option_stops_with_exit_code_2(argv, capsys):
    assert page_makes.main(argv) == 2
    assert "error:" in capsys.readouterr().err


def test_tesseract_reads_with_one_column_of_rows_and_with_its_own_layout_analysis(monkeypatch):
    monkeypatch.setattr(page_makes, "tesseract_languages", lambda: ["eng"])
    monkeypatch.setattr(page_makes, "rapidocr_ready", lambda: False)
    systems, skipped = page_makes.systems_for(get_language("en"), "/scratch",
                                              project=lambda model: FakeSystem(model, {}))
    assert [system.name for system in systems] == ["text", "Tesseract --psm 4",
                                                   "Tesseract --psm 3"]
    assert [system.tesseract.page_psm for system in systems[1:]] == [4, 3]
    assert len(skipped) == 1 and "PP-OCRv4" in skipped[0]
