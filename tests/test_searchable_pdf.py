"""The searchable PDF (crnn_multigpu.ocr.searchable_pdf) read back by tools that know nothing of
it: poppler (pdftotext, -bbox, pdfinfo, pdffonts, pdfimages, pdftoppm) and qpdf --check
(poppler-utils and qpdf: scripts/install_system_packages.sh --minimal)."""
import html
import io
import os
import re
import struct
import subprocess
from types import SimpleNamespace

import editdistance
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from crnn_multigpu.cli.pdf_output import check_pdf_request
from crnn_multigpu.files import WriteError
from crnn_multigpu.ocr.pdf_font import glyphless_truetype
from crnn_multigpu.ocr.searchable_pdf import write_searchable_pdf
from faces import DEJAVU, MICROHEI

TOLERANCE = 1.0  # points: poppler's word boxes against the boxes the words were given
ENGLISH = ["The quick brown fox jumps over the lazy dog.", "Invoice 2026-12-07: total $1,234.50",
           "tiny", "A line (with parentheses) and a back\\slash", "Zebras 42 x 7 = 294"]
CHINESE = ["中文文本的识别结果", "可搜索的文档，每一行都在它的框里。", "第3页 共12页", "机器学习 与 光学字符识别"]


def run(*command):
    """stdout of a tool that must succeed without a word on stderr (poppler warns there about
    broken fonts, streams and cross-references)."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # pdftotext -bbox says so of a page without words
    complaints = done.stderr.replace(b"no word list\n", b"")
    assert done.returncode == 0 and not complaints, (command, done.stderr)
    return done.stdout.decode("utf-8")


def drawn_page(lines, face, size=30, width=1400, mode="L"):
    """An image with ``lines`` drawn one below another in ``face`` and ``[(text, box)]`` with
    each line's ink box."""
    image = Image.new(mode, (width, 70 + len(lines) * size * 2), "white")
    draw, font, boxes = ImageDraw.Draw(image), ImageFont.truetype(face, size), []
    for number, text in enumerate(lines):
        draw.text((40 + 17 * number, 40 + number * size * 2), text, fill="black", font=font)
        boxes.append((text, draw.textbbox((40 + 17 * number, 40 + number * size * 2), text,
                                          font=font)))
    return image, boxes


def word_boxes(path):
    """Per page, ``[(word, (xMin, yMin, xMax, yMax))]`` in points, as ``pdftotext -bbox`` finds
    them."""
    found = run("pdftotext", "-bbox", path, "-")
    return [[(html.unescape(word), tuple(float(value) for value in box))
             for *box, word in re.findall(r'<word xMin="([\d.]+)" yMin="([\d.]+)" '
                                          r'xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', page)]
            for page in found.split("<page ")[1:]]


def given_word_boxes(lines, dpi):
    """``[(word, box in points)]`` of ``lines``: each word's character share of its line's box
    (searchable_pdf's layout, the spaces' shares being the gaps)."""
    words = []
    for text, (x0, y0, x1, y1) in lines:
        share = (x1 - x0) / len(text)
        words.extend((match.group(), tuple(value * 72.0 / dpi for value in (
            x0 + match.start() * share, y0, x0 + match.end() * share, y1)))
            for match in re.finditer(r"\S+", text))
    return words


def page_texts(path, pages):
    """Each page's text from plain ``pdftotext`` (its lines, blank ones left out)."""
    return [[line for line in run("pdftotext", "-f", str(number), "-l", str(number), path,
                                  "-").splitlines() if line.strip("\f ")]
            for number in range(1, pages + 1)]


def layout_lines(path):
    """The lines of ``pdftotext -layout`` (the page as laid out), spaces collapsed."""
    return [" ".join(line.split()) for line in run("pdftotext", "-layout", path, "-").splitlines()
            if line.strip("\f ")]


def page_sizes(path):
    """``[(width, height)]`` in points of every page, from ``pdfinfo``."""
    found = run("pdfinfo", "-f", "1", "-l", "999", path)
    return [(float(width), float(height)) for width, height in
            re.findall(r"Page +\d+ size: +([\d.]+) x ([\d.]+) pts", found)]


def character_error_rate(found, given):
    return editdistance.eval("\n".join(found), "\n".join(given)) / float(len("\n".join(given)))


def check_round_trip(path, lines, dpi):
    """The one-page PDF at ``path`` gives ``lines`` (``[(text, box)]``) back: its text with at
    most 0.5 % of the characters wrong (whitespace between words comes back as one space), and
    each word on its box (:func:`check_words_on_boxes`)."""
    texts = [" ".join(text.split()) for text, _ in lines]
    assert character_error_rate(page_texts(path, 1)[0], texts) <= 0.005
    check_words_on_boxes(path, given_word_boxes(lines, dpi))


def check_words_on_boxes(path, given):
    """The one-page PDF at ``path`` holds the words ``given`` (``[(word, box in points)]``), each
    on its box (within TOLERANCE points), drawn in render mode 3; qpdf finds nothing wrong."""
    found = word_boxes(path)[0]
    assert sorted(word for word, _ in found) == sorted(word for word, _ in given)
    for word, box in given:
        assert any(text == word and np.allclose(at, box, atol=TOLERANCE)
                   for text, at in found), (word, box, found)
    assert "No syntax or stream encoding errors" in run("qpdf", "--check", path)
    # the words are drawn in render mode 3 (neither filled nor stroked), as Tesseract draws them
    run("qpdf", "--qdf", "--object-streams=disable", path, path + ".qdf")
    with open(path + ".qdf", "rb") as uncompressed:
        drawn = re.findall(rb"\bBT (\d) Tr\b(.*?)\bET\b", uncompressed.read(), re.S)
    assert [mode for mode, _ in drawn] == [b"3"] and b"Tr" not in drawn[0][1]


def test_an_english_page_round_trips(tmp_path):
    image, lines = drawn_page(ENGLISH, os.path.join(DEJAVU, "DejaVuSans.ttf"))
    path = str(tmp_path / "english.pdf")
    write_searchable_pdf(path, [(image, lines)], dpi=300)
    check_round_trip(path, lines, 300)
    assert page_texts(path, 1) == [ENGLISH]


def test_a_chinese_page_of_page_objects_round_trips(tmp_path):
    image, lines = drawn_page(CHINESE, MICROHEI, size=36)
    page = SimpleNamespace(image=image, dpi=150, lines=[SimpleNamespace(
        text=text, box=box, confidence=0.9) for text, box in lines])
    path = str(tmp_path / "chinese.pdf")
    write_searchable_pdf(path, [page])
    check_round_trip(path, lines, 150)
    fonts = run("pdffonts", path).splitlines()[2:]
    assert len(fonts) == 1 and fonts[0].split()[:8] == [
        "GlyphLessFont", "CID", "TrueType", "Identity-H", "yes", "no", "yes", "3"][:8]


def test_a_typeset_page_comes_back_as_poppler_reads_the_original(tmp_path):
    """A real page (tests/data/README.md: prose, commands, a two-column table): its image drawn
    by poppler, its lines and their boxes from the original's text layer; the searchable PDF
    gives the same text as the original, in the same order, and every word on its box."""
    source, dpi = os.path.join(os.path.dirname(__file__), "data", "simh_doc_page7.pdf"), 150
    run("pdftoppm", "-r", str(dpi), "-gray", "-singlefile", source, str(tmp_path / "page"))
    lines = [(" ".join(html.unescape(word) for word in re.findall(r"<word [^>]*>(.*?)</word>",
                                                                   words)),
              tuple(float(value) * dpi / 72 for value in box))
             for *box, words in re.findall(r'<line xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" '
                                           r'yMax="([\d.]+)">(.*?)</line>',
                                           run("pdftotext", "-bbox-layout", source, "-"), re.S)]
    path = str(tmp_path / "searchable.pdf")
    write_searchable_pdf(path, [(Image.open(str(tmp_path / "page.pgm")), lines)], dpi=dpi)
    assert len(lines) == 39 and page_texts(path, 1) == page_texts(source, 1)
    check_round_trip(path, lines, dpi)


def test_a_row_of_pieces_far_apart_lays_each_piece_on_its_box(tmp_path):
    image, lines = drawn_page(["Chapter 3", "page 17", "Contents"],
                              os.path.join(DEJAVU, "DejaVuSans.ttf"))
    (head, head_box), (number, number_box), (next_row, next_box) = lines
    number_box = (1000, head_box[1], 1000 + number_box[2] - number_box[0], head_box[3])
    row = SimpleNamespace(text="Chapter 3 page 17", box=head_box[:2] + number_box[2:], pieces=[
        SimpleNamespace(text=head, box=head_box), SimpleNamespace(text=number, box=number_box)])
    path = str(tmp_path / "pieces.pdf")
    write_searchable_pdf(path, [SimpleNamespace(image=image, lines=[
        row, SimpleNamespace(text=next_row, box=next_box, pieces=())])], dpi=72)
    check_words_on_boxes(path, given_word_boxes(
        [(head, head_box), (number, number_box), (next_row, next_box)], 72))
    assert layout_lines(path) == ["Chapter 3 page 17", "Contents"]


def turned_clockwise(box, turn, size):
    """``box`` of an image of ``size`` on that image turned clockwise by ``turn`` degrees."""
    (x0, y0, x1, y1), (width, height) = box, size
    return {90: (height - y1, x0, height - y0, x1), 180: (width - x1, height - y1, width - x0,
            height - y0), 270: (y0, width - x1, y1, width - x0)}[turn]


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_a_page_read_turned_has_its_words_along_its_lines(tmp_path, turn):
    upright, lines = drawn_page(ENGLISH[:3], os.path.join(DEJAVU, "DejaVuSans.ttf"))
    lying = upright.rotate(-turn, expand=True)  # the scan as given; turn: what made it upright
    page = SimpleNamespace(image=lying, turn=turn, lines=[
        SimpleNamespace(text=text, box=turned_clockwise(box, turn, upright.size))
        for text, box in lines])
    path = str(tmp_path / "turned.pdf")
    write_searchable_pdf(path, [page], dpi=72)
    assert page_sizes(path) == [lying.size]
    check_words_on_boxes(path, [(word, turned_clockwise(box, turn, upright.size))
                                for word, box in given_word_boxes(lines, 72)])
    # poppler's reading order of text running upwards is its own; its layout mode keeps lines
    assert layout_lines(path) == ENGLISH[:3]


def test_odd_characters_map_back(tmp_path):
    odd = ["( ) \\ \\\\ (unbalanced <hex> %comment /Name [array] {proc}", "tab\there € £ ñ é",
           "beyond the BMP: 𝔘𝔫𝔦 😀 𠀀𠀁 ﬁ", "full-width　（括号）、「引号」"]
    image = Image.new("L", (2700, 500), "white")
    lines = [(text, (30, 30 + 110 * number, 30 + 45 * len(text), 110 + 110 * number))
             for number, text in enumerate(odd)]
    path = str(tmp_path / "odd.pdf")
    write_searchable_pdf(path, [(image, lines)], dpi=200)
    words = [word for word, _ in word_boxes(path)[0]]
    assert words == [word for text in odd for word in text.split()]
    check_round_trip(path, lines, 200)


def test_pages_keep_their_order_size_and_text_an_empty_page_included(tmp_path):
    first, first_lines = drawn_page(ENGLISH[:2], os.path.join(DEJAVU, "DejaVuSerif.ttf"))
    third, third_lines = drawn_page(CHINESE[:2], MICROHEI, width=900)
    empty = np.full((600, 500), 255, np.uint8)
    path = str(tmp_path / "three.pdf")
    write_searchable_pdf(path, [(first, first_lines), (empty, []), (third, third_lines)], dpi=120)
    assert page_texts(path, 3) == [ENGLISH[:2], [], CHINESE[:2]]
    assert page_sizes(path) == [(first.width * 0.6, first.height * 0.6), (300.0, 360.0),
                                (third.width * 0.6, third.height * 0.6)]
    assert [len(words) for words in word_boxes(path)] == [
        len(" ".join(ENGLISH[:2]).split()), 0, len(" ".join(CHINESE[:2]).split())]


def test_page_size_is_the_image_at_its_resolution(tmp_path):
    declared = Image.new("L", (400, 200), "white")
    declared.info["dpi"] = (200.0, 200.0)
    pages = [(declared, []), (np.full((300, 600), 255, np.uint8), []),
             (SimpleNamespace(image=np.full((100, 100), 255, np.uint8), lines=[], dpi=50))]
    path = str(tmp_path / "sizes.pdf")
    write_searchable_pdf(path, pages)
    # the image's own resolution, else 300 dpi, the page's .dpi before both
    assert page_sizes(path) == [(144.0, 72.0), (144.0, 72.0), (144.0, 144.0)]
    write_searchable_pdf(path, pages, dpi=72)  # the argument before all
    assert page_sizes(path) == [(400.0, 200.0), (600.0, 300.0), (100.0, 100.0)]


def extracted_images(path, folder):
    """The images of the PDF as ``pdfimages -list`` describes them (color, bpc, enc) and as
    ``pdfimages -png`` gives their pixels back."""
    listed = [line.split()[5:9] for line in run("pdfimages", "-list", path).splitlines()[2:]]
    run("pdfimages", "-png", path, os.path.join(folder, "image"))
    names = sorted(name for name in os.listdir(folder) if name.startswith("image-"))
    images = [Image.open(os.path.join(folder, name)) for name in names]
    return listed, [np.asarray(image.convert("L") if image.mode == "1" else image)
                    for image in images]


def test_images_are_stored_losslessly_in_the_fewest_channels_and_shown_as_they_are(tmp_path):
    random = np.random.RandomState(7)
    grey = random.randint(0, 256, (60, 80)).astype(np.uint8)
    colour = random.randint(0, 256, (60, 80, 3)).astype(np.uint8)
    bits = random.rand(60, 80) > 0.5
    clear = np.dstack([colour, np.where(bits, 255, 0).astype(np.uint8)])
    pages = [(grey, []), (np.dstack([grey] * 3), []), (colour, []), (bits, []),
             (Image.fromarray(clear, "RGBA"), [])]
    path = str(tmp_path / "images.pdf")
    write_searchable_pdf(path, pages, dpi=72)
    listed, pixels = extracted_images(path, str(tmp_path))
    assert listed == [["gray", "1", "8", "image"], ["gray", "1", "8", "image"],
                      ["rgb", "3", "8", "image"], ["gray", "1", "1", "image"],
                      ["rgb", "3", "8", "image"]]
    on_white = np.where(bits[:, :, None], colour, 255)
    for found, given in zip(pixels, [grey, grey, colour, bits * 255, on_white]):
        assert np.array_equal(found, given)
    # drawn by poppler, the page looks the same with its text as without: the text is unseen
    image, lines = drawn_page(ENGLISH[:2], os.path.join(DEJAVU, "DejaVuSans.ttf"))
    drawn = []
    for name, text in (("with", lines), ("without", [])):
        write_searchable_pdf(str(tmp_path / name), [(image, text)], dpi=150)
        run("pdftoppm", "-r", "150", "-gray", str(tmp_path / name), str(tmp_path / name))
        drawn.append(np.asarray(Image.open(str(tmp_path / (name + "-1.pgm")))))
    assert drawn[0].shape == (image.height, image.width) and drawn[0].min() == 0
    assert np.array_equal(drawn[0], drawn[1])


def test_jpeg_quality_stores_photos_as_jpeg(tmp_path):
    gradient = np.add.outer(np.arange(120), np.arange(160)).astype(np.uint8)
    photo = np.dstack([gradient, gradient[::-1], 255 - gradient])
    path = str(tmp_path / "photo.pdf")
    write_searchable_pdf(path, [(photo, [("words", (10, 10, 100, 40))])], dpi=72,
                         jpeg_quality=90)
    listed, pixels = extracted_images(path, str(tmp_path))
    assert listed == [["rgb", "3", "8", "jpeg"]]
    assert np.abs(pixels[0].astype(int) - photo).mean() < 3
    assert page_texts(path, 1) == [["words"]]


def test_the_font_is_a_truetype_face_without_ink():
    face = glyphless_truetype()
    # the whole file sums to the magic number that head.checkSumAdjustment aims at
    assert sum(struct.unpack(">%dI" % (len(face) // 4), face)) & 0xFFFFFFFF == 0xB1B0AFBA
    font = ImageFont.truetype(io.BytesIO(face), 40)  # FreeType, as poppler uses it, loads it
    canvas = Image.new("L", (300, 60), 0)
    ImageDraw.Draw(canvas).text((5, 5), "Any text 中文", fill=255, font=font)
    assert np.asarray(canvas).max() == 0
    assert font.getlength("abcd") == 4 * 20  # each glyph half an em wide


def test_a_path_that_cannot_be_written_names_itself_and_leaves_nothing(tmp_path):
    image, lines = drawn_page(ENGLISH[:1], os.path.join(DEJAVU, "DejaVuSans.ttf"))
    missing = str(tmp_path / "no such folder" / "out.pdf")
    with pytest.raises(WriteError, match="cannot write %s: " % re.escape(missing)):
        write_searchable_pdf(missing, [(image, lines)])
    with pytest.raises(OSError, match="cannot write %s: " % re.escape(str(tmp_path))):
        write_searchable_pdf(str(tmp_path), [(image, lines)])
    # a bad page after a good one: the file already there stays as it was, nothing is left beside
    kept = tmp_path / "kept.pdf"
    kept.write_bytes(b"the old file")
    with pytest.raises(ValueError, match="page 2: an image array must be uint8"):
        write_searchable_pdf(str(kept), [(image, lines), (np.zeros((9, 9)), [])])
    assert kept.read_bytes() == b"the old file" and os.listdir(str(tmp_path)) == ["kept.pdf"]


@pytest.mark.parametrize("pages, message", [
    ([], "no pages to write"),
    ([(np.zeros((10, 10), np.uint8), [("word", (5, 5, 5, 9))])], r"page 1, line 1: the box"),
    ([(np.zeros((10, 10), np.uint8), [("a", "box")])], r"page 1, line 1: box must be"),
    ([(np.zeros((10, 10), np.uint8), [("", (0, 0, 0, 0)), ("b", (20, 20, 30, 30))])],
     r"page 1, line 2: the box \(20, 20, 30, 30\) of 'b' holds no part of the 10 x 10 image"),
    ([np.zeros((10, 10), np.uint8)], r"page 1: expected \(image, lines\)"),
    ([("scan.png", [])], "page 1: the image must be a PIL image or a numpy array, got str"),
    ([SimpleNamespace(image=np.zeros((10, 10), np.uint8), lines=[], turn=45)],
     "page 1: turn must be one of 0, 90, 180, 270 degrees, got 45"),
])
def test_bad_pages_are_refused_by_name(tmp_path, pages, message):
    path = tmp_path / "bad.pdf"
    with pytest.raises(ValueError, match=message):
        write_searchable_pdf(str(path), pages)
    assert not os.listdir(str(tmp_path))


def test_more_characters_than_one_font_maps_are_refused(tmp_path):
    many = "".join(chr(code) for code in range(0x10000, 0x20000))  # 65,536 different ones
    with pytest.raises(ValueError, match="page 2: the document holds more than 65535 different"):
        write_searchable_pdf(str(tmp_path / "big.pdf"), [
            (np.zeros((10, 10), np.uint8), [(many[:40000], (0, 0, 10, 10))]),
            (np.zeros((10, 10), np.uint8), [(many[40000:], (0, 0, 10, 10))])])
    assert not os.listdir(str(tmp_path))


@pytest.mark.parametrize("options, message", [
    ({"dpi": 0}, "dpi must be a positive number"), ({"jpeg_quality": 100}, "jpeg_quality must be")])
def test_bad_options_are_refused(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        write_searchable_pdf(str(tmp_path / "bad.pdf"), [(np.zeros((10, 10), np.uint8), [])],
                             **options)
    assert not os.listdir(str(tmp_path))


def test_the_command_line_request_is_checked_before_reading(tmp_path):
    out = str(tmp_path / "out.pdf")
    check_pdf_request("pdf", True, out, False)
    check_pdf_request("text", False, None, False)
    with pytest.raises(ValueError, match="add --page"):
        check_pdf_request("pdf", False, out, False)
    with pytest.raises(ValueError, match="--out FILE.pdf"):
        check_pdf_request("pdf", True, None, False)
    (tmp_path / "out.pdf").write_bytes(b"")
    with pytest.raises(FileExistsError, match="--overwrite"):
        check_pdf_request("pdf", True, out, False)
