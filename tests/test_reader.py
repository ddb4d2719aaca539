"""ocr.Reader, the reading front door (issue 53.1), reads as crnn-predict reads with the same
options: the text, words and zh models on crops, lines, pages and a PDF; and what a user's
machine hands over (issue 54): EXIF-turned photos, multi-page TIFFs, one bad input among good
ones, hostile file names."""
import json
import os
import subprocess
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from PIL import Image, ImageDraw

from assertions import run_captured
from crnn_multigpu import ocr
from crnn_multigpu.cli import predict
from crnn_multigpu.datasets import load_font
from crnn_multigpu.ocr.names import unescaped
from faces import DEJAVU, MICROHEI
from text_pdf import write_text_pdf

SANS = os.path.join(DEJAVU, "DejaVuSans.ttf")
LINES = ["Hello world", "reading 42 pages", "The quick brown fox."]
WORDS = ["welcome", "route66", "garden"]
CHINESE = [u"\u4e2d\u6587", u"\u6570\u636e\u6587\u4ef6", u"\u4f7f\u7528\u8bf4\u660e"]


def print_line(text, face=SANS, size=28):
    """Black print on white with a margin, as a line cut from a page."""
    font = load_font(face, size)
    image = Image.new("L", (int(font.getlength(text)) + 16, size + 16), 255)
    ImageDraw.Draw(image).text((8, 6), text, fill=0, font=font)
    return image


def print_page(lines, face=SANS, size=26, width=760):
    page = Image.new("L", (width, 80 + 2 * size * len(lines)), 255)
    for row, text in enumerate(lines):
        ImageDraw.Draw(page).text((40, 40 + 2 * size * row), text, fill=0,
                                  font=load_font(face, size))
    return page


def saved(folder, images, names=None):
    paths = []
    for index, image in enumerate(images):
        paths.append(os.path.join(str(folder), (names or ["crop%d.png"])[0] % index
                                  if not names else names[index]))
        image.save(paths[-1], format="PNG")
    return paths


@pytest.fixture(scope="module")
def readers():
    """One reader of each shipped model, opened once."""
    opened = {}

    def get(model, **options):
        key = (model, tuple(sorted(options.items())))
        if key not in opened:
            opened[key] = ocr.Reader(model, **options)
        return opened[key]
    yield get
    for reader in opened.values():
        reader.close()


def predicted(argv, capsys):
    """crnn-predict's exit code, its stdout's columns (one list per line) and its stderr."""
    code, out, err = run_captured(predict.main, argv, capsys)
    return code, [line.split("\t") for line in out.splitlines()], err


@pytest.mark.parametrize("model, texts, face, flags", [
    ("text", LINES, SANS, ["--lines"]),
    ("words", WORDS, SANS, ["--model", "words"]),
    ("zh", CHINESE, MICROHEI, ["--model", "zh"]),
])
def test_read_lines_reads_crops_as_predict_does(readers, model, texts, face, flags, tmp_path,
                                                capsys):
    images = [print_line(text, face) for text in texts]
    paths = saved(tmp_path, images)
    code, columns, _ = predicted(flags + paths, capsys)
    assert code == 0 and [column[0] for column in columns] == paths
    reader = readers(model)
    read = reader.read_lines(paths)
    assert read == [column[1] for column in columns]
    # The same crops handed over in memory read the same.
    assert reader.read_lines(images) == read
    assert reader.read_lines([np.asarray(image) for image in images]) == read
    assert sum(got == text for got, text in zip(read, texts)) >= 2, read


def test_the_chinese_reader_reads_with_its_character_model_as_predict_does(readers):
    assert readers("zh").recognizer.language_model is not None   # zh.json: on by default
    assert readers("text").recognizer.language_model is None     # English: only when asked
    assert readers("zh", beam_width=2).recognizer.language_model is None   # its widest beam


def test_decoding_options_read_as_predicts_flags(readers, tmp_path, capsys):
    paths = saved(tmp_path, [print_line(text) for text in LINES])
    lexicon = str(tmp_path / "lexicon.txt")
    with open(lexicon, "w") as stream:
        stream.write("Hello world\nreading 42 pages\nThe quick brown fox.\nunused words\n")
    code, columns, _ = predicted(["--beam-width", "10", "--lexicon", lexicon] + paths, capsys)
    reader = readers("text", beam_width=10, lexicon=lexicon)
    assert code == 0 and reader.read_lines(paths) == [column[1] for column in columns] == LINES
    code, columns, _ = predicted(["--char-lm", "--lm-weight", "0.3"] + paths, capsys)
    reader = readers("text", char_lm=True, lm_weight=0.3)
    assert reader.recognizer.language_model.weight == 0.3
    assert code == 0 and reader.read_lines(paths) == [column[1] for column in columns]


@pytest.fixture(scope="module")
def english_pages(tmp_path_factory):
    """A page image and a two-page PDF."""
    folder = tmp_path_factory.mktemp("pages")
    image = str(folder / "page.png")
    print_page(LINES).save(image)
    parts = [str(folder / "part1.pdf"), str(folder / "part2.pdf")]
    write_text_pdf(parts[0], ["A first page of a document,", "in two lines."],
                   os.path.join(DEJAVU, "DejaVuSerif.ttf"), size=14)
    write_text_pdf(parts[1], ["And the second page."], os.path.join(DEJAVU, "DejaVuSerif.ttf"),
                   size=14)
    document = str(folder / "document.pdf")
    subprocess.run(["pdfunite"] + parts + [document], check=True)
    return image, document


def test_read_gives_pages_and_pdfs_as_predict_page_prints_them(readers, english_pages, capsys):
    image, document = english_pages
    argv = ["--page", "--pages", "2,1", "--dpi", "120", image, document]
    doc = readers("text").read([image, document], pages="2,1", dpi=120)
    assert [page.image for page in doc.pages] == [image, document + "#page=2",
                                                  document + "#page=1"]
    code, out, _ = run_captured(predict.main, argv, capsys)
    assert code == 0 and doc.text == out
    assert doc.pages[0].text().splitlines() == LINES
    code, out, _ = run_captured(predict.main, argv + ["--format", "json"], capsys)
    assert [json.loads(line) for line in out.splitlines()] == doc.to_json()["pages"]
    code, out, _ = run_captured(predict.main, argv + ["--format", "hocr"], capsys)
    assert out == doc.to_hocr()
    line = doc.pages[1].lines[0]
    assert line.text == "And the second page." and 0 < line.confidence <= 1
    x0, y0, x1, y1 = line.box   # 72 pt margins at 120 dpi: 120 px from the page's left
    assert 110 <= x0 <= 130 and x1 > x0 + 100 and y1 > y0 > 100


def test_a_chinese_page_reads_as_predict_reads_it(readers, tmp_path, capsys):
    path = str(tmp_path / "zh.png")
    print_page(CHINESE, MICROHEI, size=30, width=400).save(path)
    code, out, _ = run_captured(predict.main, ["--page", "--model", "zh", path], capsys)
    doc = readers("zh").read(path)
    assert code == 0 and doc.text == out and len(doc.pages[0].lines) == len(CHINESE)
    assert sum(line.text == text for line, text in zip(doc.pages[0].lines, CHINESE)) >= 2, \
        doc.text


def test_an_exif_turned_photo_reads_upright_with_boxes_as_a_viewer_shows_it(readers, tmp_path):
    upright = print_page(LINES)
    exif = Image.Exif()
    exif[0x0112] = 6   # stored turned a quarter to the left; shown turned back
    turned = str(tmp_path / "photo.jpg")
    upright.rotate(90, expand=True).save(turned, exif=exif, quality=95)
    line = str(tmp_path / "line.jpg")
    print_line(LINES[0]).rotate(90, expand=True).save(line, exif=exif, quality=95)
    reader = readers("text")
    straight, photo = reader.read([upright, turned]).pages
    assert photo.turn == 0 and (photo.width, photo.height) == upright.size
    assert photo.text() == straight.text()
    for got, want in zip(photo.lines, straight.lines):
        assert np.abs(np.subtract(got.box, want.box)).max() <= 2, (got.box, want.box)
    assert reader.read_lines([line]) == [LINES[0]]


def test_each_page_of_a_multi_page_tiff_is_read_and_named(readers, tmp_path, capsys):
    pages = [print_page(LINES[:1]), print_page(LINES[1:])]
    path = str(tmp_path / "scan.tif")
    pages[0].save(path, save_all=True, append_images=pages[1:], compression="tiff_deflate")
    doc = readers("text").read(path)
    assert [page.image for page in doc.pages] == [path + "#page=1", path + "#page=2"]
    assert [page.text() for page in doc.pages] == [p.text() for p in readers("text").read(
        pages).pages]
    code, out, err = run_captured(predict.main, ["--page", path], capsys)
    assert code == 0 and out == doc.text and "read page 2 of 2: %s#page=2" % path in err


def test_one_bad_input_costs_nothing_but_itself(readers, tmp_path, capsys):
    good = saved(tmp_path, [print_line(text) for text in LINES])
    damaged = str(tmp_path / "damaged.png")
    with open(damaged, "wb") as stream:
        stream.write(open(good[0], "rb").read()[:60])
    thin = str(tmp_path / "thin.png")
    Image.new("L", (1, 240), 255).save(thin)   # one pixel wide, taller than a line
    code, columns, err = predicted([good[0], damaged, thin, good[1], good[2]], capsys)
    assert code == 1 and err.count("skipped: ") == 1 and "skipped: %s: " % damaged in err
    assert columns == [[good[0], LINES[0]], [thin, ""], [good[1], LINES[1]],
                       [good[2], LINES[2]]]
    readings = readers("text").crop_readings([good[0], damaged, thin])
    assert [r.reason is None for r in readings] == [True, False, True]
    assert "truncated" in readings[1].reason or "cannot identify" in readings[1].reason, readings
    with pytest.raises(ValueError, match="cannot read crop %s: " % damaged):
        readers("text").read_lines([good[0], damaged])
    # Pages: the damaged one is skipped, the hOCR of the others stays a whole document.
    page = str(tmp_path / "page.png")
    print_page(LINES).save(page)
    code, out, err = run_captured(predict.main, ["--page", "--format", "hocr", page, damaged,
                                                 page], capsys)
    assert code == 1 and err.count("skipped: %s: " % damaged) == 1
    root = ElementTree.fromstring(out)
    assert len(root.findall(".//{http://www.w3.org/1999/xhtml}div[@class='ocr_page']")) == 2
    doc = readers("text").read([page, damaged])
    assert len(doc.pages) == 1 and [skip.name for skip in doc.skipped] == [damaged]


HOSTILE = [b"tab\there.png", b"new\nline.png", b"bad\xff\xfebytes.png"]


def test_hostile_names_keep_every_output_parseable(readers, tmp_path, capsys):
    folder = os.fsencode(str(tmp_path))
    paths = [os.fsdecode(os.path.join(folder, name)) for name in HOSTILE]
    for path, text in zip(paths, LINES):
        print_line(text).save(path, format="PNG")
    code, out, _ = run_captured(predict.main, paths, capsys)
    out.encode("utf-8")   # strict: what a UTF-8 terminal or pipe takes
    lines = out.split("\n")[:-1]
    assert code == 0 and len(lines) == len(paths)
    assert [unescaped(line.split("\t")[0]) for line in lines] == [os.fsencode(p) for p in paths]
    assert [line.split("\t")[1] for line in lines] == LINES
    code, out, _ = run_captured(predict.main, ["--format", "json"] + paths, capsys)
    out.encode("utf-8")
    read = [json.loads(line) for line in out.split("\n")[:-1]]
    assert [os.fsencode(r["image"]) for r in read] == [os.fsencode(p) for p in paths]
    code, out, _ = run_captured(predict.main, ["--page", "--format", "hocr"] + paths, capsys)
    out.encode("utf-8")
    titles = [div.get("title") for div in ElementTree.fromstring(out).iter(
        "{http://www.w3.org/1999/xhtml}div") if div.get("class") == "ocr_page"]
    assert [unescaped(title.split('"')[1]) for title in titles] == [os.fsencode(p) for p in paths]


def test_save_pdf_lays_the_text_read_on_the_pages(readers, english_pages, tmp_path):
    image, document = english_pages
    doc = readers("text").read([image, document], pages="2", dpi=120)
    out = str(tmp_path / "searchable.pdf")
    doc.save_pdf(out)
    text = subprocess.run(["pdftotext", out, "-"], stdout=subprocess.PIPE, check=True
                          ).stdout.decode("utf-8")
    pages = text.split("\f")
    assert [page.split() for page in pages[:2]] == [page.text().split() for page in doc.pages]
    # The PDF page of the document keeps its size: 8.5 x 11 inches drawn at 120 dpi.
    info = subprocess.run(["pdfinfo", "-f", "2", "-l", "2", out], stdout=subprocess.PIPE,
                          check=True).stdout.decode("utf-8")
    assert "612 x 792 pts" in info, info
    # crnn-predict --format pdf writes the same pages; a page it cannot read is skipped.
    damaged = str(tmp_path / "damaged.png")
    with open(damaged, "wb") as stream:
        stream.write(b"\x89PNG\r\n\x1a\n")
    written = str(tmp_path / "predict.pdf")
    assert predict.main(["--page", "--pages", "2", "--dpi", "120", "--format", "pdf", "--out",
                         written, image, damaged, document]) == 1
    assert subprocess.run(["pdftotext", written, "-"], stdout=subprocess.PIPE, check=True
                          ).stdout.decode("utf-8") == text
    assert predict.main(["--format", "json", "--out", written, image]) == 2   # --out is pdf's


def test_a_mistyped_model_name_is_named_with_the_shipped_ones(tmp_path, monkeypatch):
    from crnn_multigpu import ocr
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as refused:
        ocr.Reader(model="txet")
    assert str(refused.value).startswith(
        "model 'txet' is neither a shipped model (latin, text, words, zh) nor a path that exists")
