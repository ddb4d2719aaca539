"""The reserved-page check's own choices and wiring (scripts/page_reserved.py) with fakes: the
manuals' files found once each and taking turns by language, every make drawn into a folder of
its own with the right faces, the "Done when" verdicts, and the command end to end. No
Chromium, Tesseract, PP-OCR, PDF or model is needed."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))
import page_reserved  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from page_makes import PADDLE, PROJECT  # noqa: E402
from page_makes_pages import Page  # noqa: E402


def test_a_manuals_files_are_found_once_each_whatever_their_names(monkeypatch, tmp_path):
    faq = tmp_path / "FAQ"
    (faq / "zh-cn").mkdir(parents=True)
    body = b"<p>" + b"x" * page_reserved.MIN_HTML_BYTES + b"</p>"
    (faq / "basics.html").write_bytes(body)
    (faq / "basics.en.html").write_bytes(body)  # the same page under a second name
    (faq / "tiny.en.html").write_bytes(b"<p>stub</p>")
    (faq / "zh-cn" / "basics.zh-cn.html").write_bytes(body + b"zh")
    (faq / "faq.en.pdf.gz").write_bytes(b"pdf")
    monkeypatch.setitem(page_reserved.MANUALS, "debian-faq", (str(faq),))
    html = page_reserved.manual_files("debian-faq", "html")
    assert len(html) == 2 and str(faq / "zh-cn" / "basics.zh-cn.html") in html
    assert page_reserved.manual_files("debian-faq", "pdf") == [str(faq / "faq.en.pdf.gz")]


def test_the_manuals_take_turns_and_only_the_language_asked_is_kept():
    files = {"debian-faq": ["/f/a.en.html", "/f/b.en.html", "/f/c.en.html",
                            "/f/zh-cn/a.zh-cn.html"],
             "maint-guide": ["/m/a.en.html"],
             "installation-guide": ["/i/en/a.html", "/i/de/a.html"]}
    found = page_reserved.documents("html", "en", random.Random(0),
                                    lambda manual, kind: files[manual])
    assert [path[:2] for path in found[:3]] == ["/f", "/m", "/i"]
    assert sorted(found) == ["/f/a.en.html", "/f/b.en.html", "/f/c.en.html", "/i/en/a.html",
                             "/m/a.en.html"]
    assert page_reserved.documents("html", "zh", random.Random(0),
                                   lambda manual, kind: files[manual]) == ["/f/zh-cn/a.zh-cn.html"]


def test_the_reserved_faces_are_reserved_families_that_a_print_can_load(monkeypatch):
    found = ["/fonts/LiberationSerif-Regular.ttf", "/fonts/DejaVuSans.ttf",
             "/fonts/NimbusSans-Regular.t1", "/fonts/texgyretermes-regular.otf"]
    monkeypatch.setattr(page_reserved, "find_fonts", lambda **how: found if how[
        "include_reserved"] else [])
    assert page_reserved.reserved_faces(get_language("en")) == [
        "/fonts/LiberationSerif-Regular.ttf", "/fonts/texgyretermes-regular.otf"]


class FakeMaker(object):
    """Records what each make is drawn from and with, and gives one page a document."""
    made = []

    def __init__(self, language, faces, dpi, scratch, rng, log, per_document, fonts_checked):
        self.faces, self.scratch, self.per_document = faces, scratch, per_document
        FakeMaker.made.append(self)
        assert fonts_checked is False

    def pages(self, make, documents, count):
        self.make, self.documents = make, documents
        return [Page(make, "en", path, 1, os.path.join(self.scratch, "p.png"), ["row"])
                for path in documents[:count]]


def args(**settings):
    values = dict(pages_per_make=4, per_document=1, dpi=150, seed=0, makes=page_reserved.MAKES)
    values.update(settings)
    return type("Args", (), values)


def test_each_make_is_drawn_in_a_folder_of_its_own_from_its_documents_and_faces(monkeypatch,
                                                                               tmp_path):
    FakeMaker.made = []
    monkeypatch.setattr(page_reserved, "PageMaker", FakeMaker)
    monkeypatch.setattr(page_reserved, "reserved_faces", lambda language: ["/r/Liberation.ttf"])
    monkeypatch.setattr(page_reserved, "faces_for", lambda language: ["/t/DejaVuSans.ttf"])
    files = {"html": ["/f/a.html", "/f/b.html"], "pdf": ["/f/faq.pdf.gz", "/m/guide.pdf"]}
    drawn = page_reserved.draw_pages(args(), get_language("en"), str(tmp_path), lambda line: None,
                                     lambda manual, kind: files[kind] if manual == "debian-faq"
                                     else [])
    assert list(drawn) == list(page_reserved.MAKES)
    reserved, training, shipped = FakeMaker.made
    assert reserved.faces == ["/r/Liberation.ttf"] and training.faces == ["/t/DejaVuSans.ttf"]
    assert (reserved.make, shipped.make, shipped.faces) == ("browser", "typeset", [])
    assert sorted(shipped.documents) == files["pdf"] and shipped.per_document == 2
    assert len(set(maker.scratch for maker in FakeMaker.made)) == 3


def test_a_make_without_documents_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(page_reserved, "PageMaker", FakeMaker)
    try:
        page_reserved.draw_pages(args(), get_language("zh"), str(tmp_path), lambda line: None,
                                 lambda manual, kind: [])
    except ValueError as error:
        assert "--compare" in str(error) and "zh" in str(error)
    else:
        raise AssertionError("no documents must stop the check")


def row(system, rows_exact, cer, refused=0, turned=0, make="shipped PDF"):
    return dict(make=make, language="en", system=system, pages=2, refused=refused,
                turned=turned, rows=10, rows_exact=rows_exact, cer=cer, seconds_per_page=1.0)


def test_the_verdicts_name_what_the_done_when_misses():
    met = [row(PROJECT, 0.9, 0.01), row("Tesseract --psm 4", 0.5, 0.2),
           row("Tesseract --psm 3", 0.8, 0.01), row(PADDLE, 0.9, 0.05)]
    assert page_reserved.verdicts(met) == ["shipped PDF, en: met"]
    missed = [row(PROJECT, 0.7, 0.03, refused=1), row("Tesseract --psm 4", 0.5, 0.2),
              row("Tesseract --psm 3", 0.8, 0.02), row(PADDLE, 0.75, 0.05)]
    assert page_reserved.verdicts(missed) == [
        "shipped PDF, en: 1 pages refused, 0 read turned; rows 70.0 % < PP-OCRv4's 75.0 %; "
        "page CER 3.00 % > Tesseract's 2.00 %"]
    assert page_reserved.verdicts([row(PROJECT, 1.0, 0.0)]) == [
        "shipped PDF, en: met (a peer missing: not judged in full)"]


def test_the_command_prints_the_table_and_the_verdicts(monkeypatch, capsys):
    pages = {make: [Page("browser", "en", "/f/a.html", 1, make + ".png", ["a row"])]
             for make in page_reserved.MAKES}
    monkeypatch.setattr(page_reserved, "draw_pages", lambda args, language, scratch, log: pages)
    monkeypatch.setattr(page_reserved, "read_language", lambda drawn, language, scratch, log: (
        [row(PROJECT, 1.0, 0.0, make=make) for make in drawn], {}, {}, ["skipping PP-OCRv4"]))
    assert page_reserved.main(["--languages", "en"]) == 0
    printed, err = capsys.readouterr()
    assert "| shipped PDF | en | this project | 2 | 0 / 0 | 100.0 % of 10 | 0.00 % | 1.0 |" \
        in printed
    assert "- browser, reserved faces, en: met (a peer missing" in printed
    assert "skipping PP-OCRv4" in err
    assert page_reserved.main(["--makes", "photos"]) == 2
    assert "error:" in capsys.readouterr().err
