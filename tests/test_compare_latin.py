"""The Latin-script side-by-side check (scripts/compare_latin.py, scripts/latin_material.py): the
descriptions name each language's reserved document, pages and Tesseract model; a whole run over
two made-up languages whose documents are small PDFs written here (never a reserved one), with
stand-ins for the project, Tesseract and PP-OCR; the one-line errors. Tesseract's models, rapidocr
and the reserved documents are not needed (comparison tools and material, not dependencies)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from crnn_multigpu.datasets import language as language_module
from crnn_multigpu.datasets.language import get_language
from crnn_multigpu.datasets.text_sources import is_reserved_document

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import compare_latin as compare  # noqa: E402
import latin_material as material  # noqa: E402
import pp_ocr  # noqa: E402
from assertions import one_error_line  # noqa: E402
from faces import DEJAVU  # noqa: E402
from fake_pp_ocr import use_fake_runner  # noqa: E402
from text_pdf import write_text_pdf  # noqa: E402

# The 14 languages of issue 52's reserved lshort translations.
CHECKED = sorted("de fr es it pt nl pl cs sk sl tr fi et vi".split())
LATIN_MEMBERS = "en de fr es it pt nl pl cs sk sl hr hu ro tr fi et da sv nb ca vi".split()


def test_each_language_names_its_tesseract_model_and_its_reserved_document_and_pages():
    assert [language.name for language in material.checked_languages()] == CHECKED
    for name in LATIN_MEMBERS + ["zh"]:
        checks = get_language(name).checks
        assert checks["tesseract"], name
        if name in CHECKED:
            # Reserved by the rule every text source and PDF script obeys: never training text.
            assert is_reserved_document(checks["reserved_pdf"]), name
            assert "/lshort-" in checks["reserved_pdf"], name
            assert checks["pages"] and all(page > 1 for page in checks["pages"]), name
        else:
            assert checks["reserved_pdf"] is None and checks["pages"] == [], name
    assert get_language("de").checks["tesseract"] == "deu"
    assert get_language("latin").checks == {"tesseract": None, "reserved_pdf": None, "pages": []}


def test_the_reading_benchmark_takes_tesseract_s_model_from_the_description(monkeypatch,
                                                                             tmp_path):
    import reading_systems
    monkeypatch.setattr(reading_systems, "tesseract_languages", lambda: {"deu", "eng"})
    monkeypatch.setattr(reading_systems, "rapidocr_ready", lambda: False)
    found, _ = reading_systems.readers(get_language("de"), "models/text", "x.onnx",
                                       str(tmp_path), 1, 60)
    assert [reader.model for reader in found if reader.name == "Tesseract"] == ["deu"]
    found, skipped = reading_systems.readers(get_language("latin"), "models/text", "x.onnx",
                                             str(tmp_path), 1, 60)
    assert "Tesseract" not in [reader.name for reader in found]
    assert "the latin description names no Tesseract model" in skipped[0]


def stopped_with(capsys, what, *args):
    """The one error line ``what(*args)`` stops with (exit code 2)."""
    with pytest.raises(SystemExit) as stopped:
        what(*args)
    return one_error_line(stopped.value.code, capsys.readouterr().err)


def test_a_language_without_a_reserved_document_is_refused_with_one_line(capsys):
    for name in ("hr", "klingon"):
        line = stopped_with(capsys, material.checked_languages, ["de", name])
        assert name in line and "--languages" in line and "de,es" in line
    assert [language.name for language in material.checked_languages(["vi", "de"])] == ["vi", "de"]


def test_missing_peers_name_every_model_to_install(monkeypatch, capsys):
    languages = material.checked_languages(["de", "vi"])
    everything = {"deu", "vie", "eng", "Latin", "osd"}
    assert compare.missing_peers(languages, everything, True) == []
    assert compare.latin_model(everything) == "Latin"
    assert compare.latin_model({"script/Latin", "Latin"}) == "script/Latin"
    short = compare.missing_peers(languages, {"deu", "osd"}, True)
    assert len(short) == 1 and "vie, eng, script/Latin" in short[0]
    assert "install_system_packages.sh --compare" in short[0]
    neither = compare.missing_peers(languages, None, False)
    assert "Tesseract 5" in neither[0] and "make venv-rapidocr" in neither[1]
    monkeypatch.setattr(compare, "tesseract_languages", lambda: {"deu", "eng", "Latin"})
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: False)
    line = stopped_with(capsys, compare.require_peers, languages)
    assert "vie" in line and "make venv-rapidocr" in line and "deu" not in line


@pytest.fixture
def languages_dir(tmp_path, monkeypatch):
    """A languages folder holding the Latin base and charset, and made-up languages' descriptions
    written by :func:`describe`."""
    folder = tmp_path / "languages"
    folder.mkdir()
    for name in ("_latin.json", "latin_charset.txt"):
        shutil.copy(os.path.join(language_module.LANGUAGES_DIR, name), str(folder / name))
    monkeypatch.setattr(language_module, "LANGUAGES_DIR", str(folder))
    return folder


def describe(folder, name, document):
    """Describe a made-up language ``name`` whose reserved document is ``document``, its page 3
    read whole, read by Tesseract's model ``<name>x``."""
    (folder / (name + ".json")).write_text(json.dumps({
        "name": name, "title": name.upper(), "extends": "_latin",
        "checks": {"tesseract": name + "x", "reserved_pdf": str(document), "pages": [3]}}),
        encoding="utf-8")


def test_a_missing_reserved_document_is_named_with_what_to_run(languages_dir, tmp_path, capsys):
    describe(languages_dir, "xa", tmp_path / "xa.pdf")
    line = stopped_with(capsys, material.check_material, material.checked_languages())
    assert str(tmp_path / "xa.pdf") in line and "install_system_packages.sh --compare" in line


# ----- a whole run over made-up languages -------------------------------------------------

# Three pages per document: a title page (never cut), a page lines are cut from, and the page
# read whole. Every line cut starts with a capital (English's stand-in, lower-casing, misses
# them all) and holds "fi" (PP-OCR's stand-in writes the ligature, which the spelling undoes).
PAGES = {"xa": (["Title of Xa"],
                ["First line of a page", "Fine print follows", "Five fish in a field"],
                ["Whole page, first row", "Whole page, second row"]),
         "xb": (["Title of Xb"],
                ["Firm ground, 14 fibres", "Filed away (1999)", "Fit for print: yes"],
                ["Row one of the last page", "Row two of the last page", "Row three"])}


def write_document(folder, name):
    """A three-page PDF of ``PAGES[name]`` with a text layer; its path."""
    parts = []
    for number, lines in enumerate(PAGES[name]):
        parts.append(str(folder / ("%s-part%d.pdf" % (name, number))))
        write_text_pdf(parts[-1], lines, os.path.join(DEJAVU, "DejaVuSerif.ttf"), size=14,
                       leading=2.0)
    path = folder / (name + ".pdf")
    subprocess.run(["pdfunite"] + parts + [str(path)], check=True)
    return path


def stand_ins(monkeypatch, folder):
    """Put stand-ins for the project, Tesseract and PP-OCR into compare_latin, each reading the
    truth recorded as the material is cut: the project and Tesseract's own models read it as it
    is (Tesseract with its trailing newline), Tesseract's Latin model drops each line's last
    character and a page's last row, its English model lower-cases, PP-OCR writes "fi" as a
    ligature in lines and reads every page as one row of xa's page."""
    truth = {}
    cut = compare.language_material

    def recorded(out, language, count, seed):
        lines, pages, report = cut(out, language, count, seed)
        for path, label in lines:
            truth[path] = [label]
            with open(path + ".txt", "w", encoding="utf-8") as handle:  # what PP-OCR reads
                handle.write(label.replace("fi", u"\ufb01"))
        truth.update((path, rows) for path, rows, _ in pages)
        return lines, pages, report

    changes = {"project": lambda rows: rows, "xax": lambda rows: [row + "\n" for row in rows],
               "xbx": lambda rows: [row + "\n" for row in rows],
               "Latin": lambda rows: [row[:-1] for row in rows[:-1]] if len(rows) > 1 else
               [rows[0][:-1]], "eng": lambda rows: [row.lower() for row in rows]}

    class StandIn(object):
        def __init__(self, model):
            self.model, self.name = model, "stand-in %s" % model

        def read_lines(self, paths, tidy):
            return [tidy(changes[self.model](truth[path])[0]) for path in paths]

        def read_page(self, path, tidy):
            return [tidy(row) for row in changes[self.model](truth[path])]

    monkeypatch.setattr(compare, "language_material", recorded)
    monkeypatch.setattr(compare, "Project", lambda run_dir: StandIn("project"))
    monkeypatch.setattr(compare, "Tesseract", StandIn)
    monkeypatch.setattr(compare, "tesseract_languages", lambda: {"xax", "xbx", "eng", "Latin"})
    monkeypatch.setattr(compare, "rapidocr_ready", lambda: True)
    monkeypatch.setattr(compare, "PaddleOcr", lambda tidy, join: use_fake_runner(
        pp_ocr.PaddleOcr(tidy, join), folder, rows=[["Whole page,", "first row"]]))
    return truth


def test_each_language_is_cut_read_by_every_system_and_tabled(languages_dir, tmp_path,
                                                                monkeypatch, capsys):
    for name in PAGES:
        describe(languages_dir, name, write_document(tmp_path, name))
    truth = stand_ins(monkeypatch, tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"language": "en"}), encoding="utf-8")
    figures_path = tmp_path / "figures.json"
    # Five lines asked a language, three on the page they may come from: the others are left be.
    assert compare.main(["--checkpoint", str(run), "--lines", "5", "--out", str(tmp_path / "out"),
                         "--json", str(figures_path)]) == 0
    out = capsys.readouterr().out
    figures = json.loads(figures_path.read_text(encoding="utf-8"))
    assert list(figures["languages"]) == ["xa", "xb"]
    for name, entry in figures["languages"].items():
        # Lines come from the middle page only: not the title page, not the page read whole.
        labels = [rows[0] for path, rows in truth.items() if "/%s/pdfline" % name in path]
        assert sorted(labels) == sorted(PAGES[name][1])
        assert entry["pages"] == ["%s.pdf:3" % name] and entry["tesseract"] == name + "x"
        lines, page = entry["lines"], entry["page"]
        assert lines["project"] == dict(n=3, exact=1.0, cer=0.0)
        assert lines["own"]["exact"] == 1.0 and lines["paddle"]["exact"] == 1.0  # spelt alike
        assert lines["eng"]["exact"] == 0.0  # strict: case counts
        characters = sum(len(label) for label in PAGES[name][1])
        assert lines["latin"]["exact"] == 0.0 and lines["latin"]["cer"] == 3.0 / characters
        rows = len(PAGES[name][2])
        assert page["project"]["rows"] == rows and page["project"]["rows_exact"] == 1.0
        assert page["own"]["rows_exact"] == 1.0 and page["own"]["cer"] == 0.0
        assert page["latin"]["rows_exact"] == 0.0 and page["latin"]["cer"] > 0
        assert page["paddle"]["rows_exact"] == (0.5 if name == "xa" else 0.0)
    assert figures["overall"]["all"]["project"]["n"] == 6
    assert figures["overall"]["ascii"]["latin"]["n"] == 6 and \
        figures["overall"]["non_ascii"]["latin"]["n"] == 0
    paddle_pages = figures["overall"]["pages"]["paddle"]
    assert paddle_pages["rows"] == 5 and paddle_pages["rows_exact"] == 0.2
    assert figures["at_or_above_own_model"] == ["xa", "xb"]
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == (2 + 2 + 3) + (2 + 2 + 1) and all(line.count("|") == 8 for line in table)
    assert "| xa: xa.pdf (xax) | 3 | 100.0 % / 0.00 % | 100.0 % / 0.00 % | 0.0 % / " in out
    assert "stand-in project (%s)" % run in out and "2 of 2 languages (xa, xb); overall: yes" in out
