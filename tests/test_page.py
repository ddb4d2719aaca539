"""Finding and reading the lines of a printed page: rendered pages with known boxes, a PDF made
here and a real PDF page, read against poppler's text layer."""
import os
import subprocess

import editdistance
import numpy as np
import pytest
from PIL import Image, ImageDraw

from crnn_multigpu.cli import predict
from crnn_multigpu.ocr import shipped
from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.datasets.fonts import load_font
from crnn_multigpu.datasets.lines import ascii_spelling
from crnn_multigpu.ocr.page import (DESCENDER, LineBox, baseline_row, crop_line, find_lines,
                                ink_mask, line_crops, line_frames, page_text, remove_rules)
from text_pdf import write_text_pdf

DEJAVU = "/usr/share/fonts/truetype/dejavu/"
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
REAL_PAGE = os.path.join(DATA, "simh_doc_page7.pdf")
TABLE_PAGE = os.path.join(DATA, "simh_doc_page18.pdf")
# (text, font file, size, x) of each line; None: a paragraph break. At 110 dpi, 10 pt is 15 px.
PAGE = [
    ("Appendix 2: Debugging", "DejaVuSans-Bold.ttf", 36, 90),  # its descenders are no line
    ("1.2. What is this spec?", "DejaVuSans-Bold.ttf", 22, 90),
    ("Attributes", "DejaVuSerif-Bold.ttf", 18, 90),
    None,
    ("Version ::= INTEGER  -- the asn1_der_decoding_element() call", "DejaVuSansMono.ttf", 14, 110),
    ("Most people who run OCR on their own material have pages:", "DejaVuSerif.ttf", 15, 90),
    ("whole lines with capitals, spaces, punctuation and numbers", "DejaVuSerif.ttf", 15, 90),
    ("minimum union", "DejaVuSerif.ttf", 15, 90),  # no ascenders: i-dots float above
    None,
    ("......", "DejaVuSerif.ttf", 15, 90),  # a line of dots is text, unlike a rule
    ("Chapter 3", "DejaVuSerif-Italic.ttf", 15, 90),
]
RIGHT_PIECE = ("page 17", "DejaVuSerif.ttf", 15)  # on the last row, at the right margin


def render_page():
    """A 935 x 1210 page (A4-ish at 110 dpi) and the exact ink box of every line piece."""
    page = Image.new("L", (935, 1210), 255)
    draw = ImageDraw.Draw(page)
    truth, y = [], 100
    for entry in PAGE:
        if entry is None:
            y += 14
            continue
        text, name, size, x = entry
        truth.append((text, ink_box(page.size, (x, y), text, load_font(DEJAVU + name, size))))
        draw.text((x, y), text, fill=20, font=load_font(DEJAVU + name, size))
        y += int(size * 1.45)
    text, name, size = RIGHT_PIECE
    font = load_font(DEJAVU + name, size)
    at = (935 - 90 - int(font.getlength(text)), y - int(15 * 1.45))
    truth.append((text, ink_box(page.size, at, text, font)))
    draw.text(at, text, fill=20, font=font)
    draw.line((90, y + 20, 845, y + 20), fill=0, width=1)  # a rule under the text: not a line
    return page, truth


def ink_box(size, at, text, font):
    alone = Image.new("L", size, 0)
    ImageDraw.Draw(alone).text(at, text, fill=255, font=font)
    return alone.getbbox()


def test_found_boxes_are_the_lines_ink_boxes():
    page, truth = render_page()
    boxes = find_lines(page)
    assert len(boxes) == len(truth)
    rows = sorted(set(box.row for box in boxes))
    assert rows == list(range(len(truth) - 1))  # the right-hand piece shares the last row
    for box, (text, (left, top, right, bottom)) in zip(boxes, truth):
        if text == "......":  # dots are boxed at a line's height, around their ink
            assert abs(box.left - left) <= 1 and abs(box.right - right) <= 1
            assert box.top <= top and box.bottom >= bottom and box.bottom - box.top >= 12
            continue
        # Exact up to the faintest anti-aliased edge pixels.
        assert np.abs(np.subtract(box[:4], (left, top, right, bottom))).max() <= 1, text
    assert boxes[-1].row == boxes[-2].row and boxes[-1].left > boxes[-2].right
    # The page's text: one line per row, pieces of a row joined by a space.
    texts = [text for text, _ in truth]
    assert page_text(boxes, texts).split("\n") == texts[:-2] + ["Chapter 3 page 17"]


def test_light_print_on_dark_paper_and_crops():
    page, truth = render_page()
    inverted = Image.fromarray(255 - np.asarray(page))
    assert find_lines(inverted) == find_lines(page)
    box = find_lines(page)[3]
    crop = crop_line(page, box)
    assert crop.size[1] > box.bottom - box.top and crop.size[0] > box.right - box.left
    assert find_lines(Image.new("L", (50, 50), 255)) == []
    with pytest.raises(ValueError, match="2-D image"):
        ink_mask(np.zeros((1, 5)))
    assert ink_mask(np.ones((4, 4))).sum() == 0


def ruled_table(rules):
    """A page holding a 4-row, 2-column table of serif text, with its frame and column rules
    drawn when ``rules``: the same text either way."""
    page = Image.new("L", (935, 600), 255)
    draw = ImageDraw.Draw(page)
    font = load_font(DEJAVU + "DejaVuSerif.ttf", 15)
    cells = [("camlint", "int or long integer type"), ("errorcheck", "typedef"),
             ("in", "function parameter"), ("size_is (le1, le2)", "array type")]
    top, row_height, columns = 100, 30, (90, 330, 700)
    for index, (left_text, right_text) in enumerate(cells):
        y = top + index * row_height + 7
        draw.text((columns[0] + 10, y), left_text, fill=20, font=font)
        draw.text((columns[1] + 10, y), right_text, fill=20, font=font)
    if rules:
        bottom = top + len(cells) * row_height
        for x in columns:
            draw.line((x, top, x, bottom), fill=0, width=1)
        for index in range(len(cells) + 1):
            y = top + index * row_height
            draw.line((columns[0], y, columns[-1], y), fill=0, width=1)
    return page


def test_table_rules_are_painted_out_before_lines_are_found():
    plain, ruled = ruled_table(rules=False), ruled_table(rules=True)
    # Left in, the vertical rules join the table's rows into one band.
    assert len(set(box.row for box in find_lines(ruled))) < 4
    boxes, crops = line_crops(ruled)
    # The page's ink is found once, rules and all: their dark pixels move its threshold a
    # little, so the text's boxes and crops are the plain table's up to an anti-aliased edge.
    plain_boxes, plain_crops = line_crops(plain)
    assert len(boxes) == len(plain_boxes) and len(set(box.row for box in boxes)) == 4
    assert np.abs(np.subtract(boxes, plain_boxes)).max() <= 1
    assert np.abs(np.subtract([crop.size for crop in crops],
                              [crop.size for crop in plain_crops])).max() <= 1
    # What is painted out is the rules and their anti-aliased edges, nothing of the text.
    cleaned = np.asarray(remove_rules(ruled), dtype=np.int16)
    assert np.abs(cleaned - np.asarray(plain, dtype=np.int16)).max() <= 8
    # A page without rules comes back as it was; glyphs such as "|" and "l" are not rules.
    page, _ = render_page()
    kept = np.asarray(page).copy()
    kept[np.asarray(page).min(axis=1) == 0] = 255  # render_page's one rule, under its text
    assert np.array_equal(np.asarray(remove_rules(page)), kept)
    bars = Image.new("L", (400, 60), 255)
    ImageDraw.Draw(bars).text((20, 15), "a | b | l | I [x] {y}", fill=0,
                              font=load_font(DEJAVU + "DejaVuSans.ttf", 22))
    assert np.array_equal(np.asarray(remove_rules(bars)), np.asarray(bars))


@pytest.mark.parametrize("dash, step", [(2, 6), (8, 14)])  # dotted, dashed
def test_dotted_and_dashed_rules_are_not_lines_but_a_line_of_dots_is(dash, step):
    """A separator and a note box's frame drawn in dots or dashes were read as rows of
    ". . . ."; "......" on its own line is text."""
    page = Image.new("L", (935, 400), 255)
    draw = ImageDraw.Draw(page)
    font = load_font(DEJAVU + "DejaVuSerif.ttf", 15)
    draw.text((90, 60), "Most people who run OCR have pages", fill=20, font=font)
    for x in range(90, 845, step):
        draw.rectangle((x, 110, x + dash - 1, 111), fill=20)
    draw.text((90, 160), "of their own to read.", fill=20, font=font)
    draw.text((90, 220), "......", fill=20, font=font)
    rows = [(box.top, box.bottom) for box in find_lines(page)]
    assert len(rows) == 3 and all(bottom < 110 or top > 112 for top, bottom in rows), rows


def test_predict_page_prints_one_line_per_row(tmp_path, capsys):
    page, truth = render_page()
    path = str(tmp_path / "page.png")
    page.save(path)
    picture = str(tmp_path / "boxes.png")
    # What is tested is the page's shape, and that a one-word line is read.
    assert predict.main(["--page", path, "--picture", picture]) == 0
    lines = capsys.readouterr().out.rstrip("\n").split("\n")
    assert len(lines) == len(truth) - 1
    assert lines[[text for text, _ in truth].index("Attributes")] == "Attributes"
    assert Image.open(picture).size == (2 * page.size[0], page.size[1])


def test_the_shipped_text_model_reads_a_printed_page(tmp_path, capsys):
    page, truth = render_page()
    path = str(tmp_path / "page.png")
    page.save(path)
    assert predict.main(["--page", path]) == 0  # no --checkpoint: models/text
    read = capsys.readouterr().out.rstrip("\n").split("\n")
    # The right-hand piece joins its row; the row of dots is read as some row of marks.
    rows = [text for text, _ in truth[:-2]] + [truth[-2][0] + " " + truth[-1][0]]
    assert len(read) == len(rows), read
    words = [(r, t) for r, t in zip(read, rows) if t != "......"]
    errors = sum(editdistance.eval(r, t) for r, t in words)
    assert errors <= 0.06 * sum(len(t) for _, t in words), list(zip(read, rows))
    assert sum(r == t for r, t in words) >= 4, list(zip(read, rows))


def test_page_and_lines_without_the_text_model_say_how_to_make_one(tmp_path, capsys,
                                                                     monkeypatch):
    missing = str(tmp_path / "models" / "text")
    monkeypatch.setattr(shipped, "shipped_model",
                        lambda name: missing if name == "text" else shipped_model(name))
    path = str(tmp_path / "page.png")
    render_page()[0].save(path)
    for flag in ("--page", "--lines"):
        assert predict.main([flag, path]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and "error: the shipped model is missing from %s" \
            % missing in error and "make train-lines" in error
    # The word model (128 px wide, no space) cannot read lines: said, not tried, whether it is
    # named or given by its path.
    for flags in (["--page", "--model", "words"], ["--lines", "--checkpoint",
                                                    shipped_model("words")]):
        assert predict.main(flags + [path]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and "error: %s needs a model that reads whole lines" \
            % flags[0] in error and "128 px wide crops of 36 characters" in error, error
    assert LineBox(0, 0, 1, 1, 0).row == 0


# A page of prose and code, as a PDF made here: its text layer is known to be exactly this.
PDF_LINES = [
    "3.2 Saving and Restoring State",
    None,
    "The SAVE command writes the complete state of the simulator to a file.",
    "It includes the contents of main memory and all registers (except for",
    "network devices), and the I/O connections of the devices: 17 in all.",
    "    save <filename> -- restore it with: restore <filename>",
    "Note: the file format compresses zeroes; a 64 KB memory takes 2,048 bytes.",
]


def pdf_text_rows(pdf):
    """The text layer's rows as poppler lays them out (``pdftotext -layout``), runs of spaces
    collapsed, typographic characters spelt in ASCII, blank rows dropped."""
    layout = subprocess.run(["pdftotext", "-layout", pdf, "-"], check=True,
                            stdout=subprocess.PIPE).stdout.decode("utf-8")
    rows = (" ".join(ascii_spelling(row).split()) for row in layout.splitlines())
    return [row for row in rows if row]


def read_pdf_page(pdf, tmp_path, capsys, dpi=110):
    """Rasterise the PDF's first page with poppler and read it with ``crnn-predict --page``
    and the shipped line model; the rows read, spaces collapsed as in pdf_text_rows."""
    prefix = str(tmp_path / "page")
    subprocess.run(["pdftoppm", "-gray", "-r", str(dpi), "-png", "-singlefile", pdf, prefix],
                   check=True)
    assert predict.main(["--page", prefix + ".png"]) == 0
    return [" ".join(row.split()) for row in capsys.readouterr().out.splitlines()]


def character_error_rate(read, truth):
    return editdistance.eval("\n".join(read), "\n".join(truth)) / float(len("\n".join(truth)))


def test_a_pdf_made_here_reads_as_its_text_layer(tmp_path, capsys):
    pdf = str(tmp_path / "made.pdf")
    write_text_pdf(pdf, PDF_LINES, DEJAVU + "DejaVuSerif.ttf", size=11)
    truth = pdf_text_rows(pdf)
    assert truth == [" ".join(line.split()) for line in PDF_LINES if line]  # poppler agrees
    read = read_pdf_page(pdf, tmp_path, capsys)
    assert len(read) == len(truth), read  # one output line per text line, in order
    assert character_error_rate(read, truth) <= 0.02, list(zip(read, truth))  # today: 0.0 %
    assert sum(r == t for r, t in zip(read, truth)) >= 5, list(zip(read, truth))  # today: 6


def test_a_real_pdf_page_reads_as_its_text_layer(tmp_path, capsys):
    # Page 7 of the SIMH user's guide (Debian package simh; MIT-style licence, see
    # tests/data/README.md): Helvetica prose, Courier commands and a two-column table.
    truth = pdf_text_rows(REAL_PAGE)
    read = read_pdf_page(REAL_PAGE, tmp_path, capsys)
    assert abs(len(read) - len(truth)) <= 2, list(zip(read, truth))
    # Today 0.04 % (34 of 35 rows exactly right; 0.08 % and 33 with the 16,500-step model). The
    # 13,000-step line model read 1.4 % (23 rows) before lines were framed like training lines
    # (page.line_frame), 0.17 % (32) after.
    assert character_error_rate(read, truth) <= 0.01, list(zip(read, truth))
    assert sum(r == t for r, t in zip(read, truth)) >= 28, list(zip(read, truth))


def test_lines_are_framed_alike_whatever_their_letters():
    """A line without ascenders or descenders is cropped with the room a full line of its
    font takes, baseline at the same height, as the training lines are framed."""
    page, truth = render_page()
    boxes, crops = line_crops(page)
    texts = [text for text, _ in truth]
    full, bare = texts.index("Most people who run OCR on their own material have pages:"), \
        texts.index("minimum union")
    assert boxes[bare].bottom - boxes[bare].top < 0.85 * (boxes[full].bottom - boxes[full].top)
    assert abs(crops[bare].size[1] - crops[full].size[1]) <= 2

    def baseline_from_bottom(crop):
        return crop.size[1] - baseline_row(ink_mask(crop))

    assert abs(baseline_from_bottom(crops[bare]) - baseline_from_bottom(crops[full])) <= 2
    # A heading, taller than the page's lines, keeps its own box.
    heading = texts.index("1.2. What is this spec?")
    assert crops[heading].size[1] < 1.3 * (boxes[heading].bottom - boxes[heading].top)


def test_a_lone_table_cell_takes_its_rows_baseline():
    """A lone "y" whose foot is as wide as its top: its own ink would put the baseline at the
    foot; it is framed on the baseline of its row's main piece instead."""
    ink = np.zeros((200, 400), dtype=bool)
    boxes = []
    for row, top in enumerate((20, 50, 80)):  # three full lines: 20 px, baseline 16 px down
        ink[top:top + 16, 20:300:3] = True
        ink[top + 16:top + 20, 40:300:40] = True  # thin descenders
        boxes.append(LineBox(20, top, 300, top + 20, row))
    # Row 3: "CPU" from 120 (caps) to its baseline at 134, and two "y" cells from 124 to 138.
    ink[120:134, 20:60:2] = True
    ink[120, 20:60] = ink[133, 20:60] = True
    boxes.append(LineBox(20, 120, 60, 134, 3))
    for left in (100, 160):
        ink[124, left:left + 8] = True   # the arms' serifs
        ink[125:134, left + 3] = True    # the stem, down through the baseline
        ink[134:137, left + 3] = True    # the descender
        ink[137, left:left + 8] = True   # a foot as wide as the top
        boxes.append(LineBox(left, 124, left + 8, 138, 3))
    assert 124 + baseline_row(ink[124:138, 100:108]) == 138  # its own ink: the foot
    frames = line_frames(ink, boxes)
    cpu, cells = frames[3], frames[4:]
    assert np.allclose(cells, [cpu, cpu])  # one row, one baseline: 134
    assert np.allclose(cpu, (134 + DESCENDER * 20 - 20, 134 + DESCENDER * 20))
    # Alone on its row, a cell keeps its own ink's baseline: nothing tells otherwise.
    alone = line_frames(ink, boxes[:3] + [boxes[4]._replace(row=3)])[3]
    assert alone[1] > cpu[1] + 0.5 * DESCENDER * 20


def test_a_real_table_of_single_letter_cells_reads_as_its_text_layer(tmp_path, capsys):
    # Page 18 of the SIMH user's guide (see tests/data/README.md): a feature table in Courier
    # whose cells are single "y", "n", "h", "d" and "-", under a bold heading with descenders.
    # Framed on their own ink, the "y" cells were read as "Y", and the heading's descenders
    # made a row of their own: 18 of 49 rows right, 5.9 % CER (16,500-step model). Today 44 rows
    # and 0.44 %.
    truth = pdf_text_rows(TABLE_PAGE)
    read = read_pdf_page(TABLE_PAGE, tmp_path, capsys)
    assert len(read) == len(truth), list(zip(read, truth))
    assert character_error_rate(read, truth) <= 0.02, list(zip(read, truth))
    assert sum(r == t for r, t in zip(read, truth)) >= 38, list(zip(read, truth))


def test_the_8_bit_ink_mask_is_the_float_one():
    """Mode L pages take a histogram path (no float copy, no sort): the same mask and the same
    paper grey as the float path and numpy's median, on light and dark pages alike."""
    from crnn_multigpu.ocr.page import ink_mask, median_of_counts
    rng = np.random.RandomState(0)
    for trial in range(120):
        shape = (rng.randint(2, 50), rng.randint(2, 50))
        print_, paper = sorted(rng.randint(0, 256, 2)) if trial % 2 else \
            sorted(rng.randint(0, 256, 2))[::-1]
        pixels = np.where(rng.rand(*shape) < rng.uniform(0.05, 0.5),
                          rng.normal(print_, 25, shape), rng.normal(paper, 25, shape))
        values = np.clip(pixels, 0, 255).astype(np.uint8)
        fast = ink_mask(Image.fromarray(values))
        slow = ink_mask(Image.fromarray(values).convert("RGB"))  # to_gray_float, Otsu on floats
        assert np.array_equal(fast, slow), trial
        assert median_of_counts(np.bincount(values.ravel(), minlength=256)) == np.median(values)
