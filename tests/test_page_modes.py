"""A page reads alike in every image mode (issue 35): 16-bit, float, RGBA, palette and CMYK pages
are brought to the same grey page as an 8-bit one before lines are found; NaN pixels are refused."""
import numpy as np
import pytest
from PIL import Image, ImageDraw

from crnn_multigpu.datasets import find_fonts, load_font
from crnn_multigpu.datasets.images import grey_page
from crnn_multigpu.ocr.page_reader import PageReader

from faces import DEJAVU


class RecordingReader(object):
    """Stands in for a Recognizer: keeps the line images the page reader hands it first (its
    lines; a sample of them is then read upside down), every one read as surely."""
    height, language, downsample = 32, None, 4

    def __init__(self):
        self.arrays = None

    def recognize_arrays(self, arrays, batch_size):
        self.arrays = arrays if self.arrays is None else self.arrays
        return ["line %d" % index for index in range(len(arrays))], [0.0] * len(arrays)


@pytest.fixture(scope="module")
def page():
    """Six lines of dark print on light paper, 8-bit grey."""
    font = load_font([f for f in find_fonts([DEJAVU]) if f.endswith("/DejaVuSerif.ttf")][0], 20)
    image = Image.new("L", (700, 330), 235)
    draw = ImageDraw.Draw(image)
    for row in range(6):
        draw.text((40, 30 + 45 * row), "Line %d of a page, read in every mode." % row,
                  fill=20, font=font)
    return image


def variants(page):
    pixels = np.asarray(page)
    ink = (255 - pixels).astype(np.uint8)
    rgba = np.zeros(pixels.shape + (4,), np.uint8)
    rgba[..., 3] = ink  # black print on transparent paper
    return {"16-bit": Image.fromarray((pixels.astype(np.uint16) * 257)),
            "float": Image.fromarray(pixels.astype(np.float32) / 255.0),
            "32-bit integer": Image.fromarray(pixels.astype(np.int32) * 257, mode="I"),
            "RGBA on transparent paper": Image.fromarray(rgba, mode="RGBA"),
            "palette": page.convert("P"), "CMYK": page.convert("CMYK"), "RGB": page.convert("RGB")}


def lines_of(image):
    reader = RecordingReader()
    page = PageReader(reader).read(image)
    return [row.box for row in page.rows], reader.arrays


def test_every_mode_gives_the_lines_of_the_grey_page(page):
    boxes, arrays = lines_of(page)
    assert len(boxes) == 6
    for name, image in variants(page).items():
        got_boxes, got_arrays = lines_of(image)
        assert got_boxes == boxes, name
        # The same crops, up to a grey level of rounding (transparency is laid on white paper,
        # not the page's 235 grey: the crops are contrast-stretched, so they agree all the same).
        for got, want in zip(got_arrays, arrays):
            assert got.shape == want.shape and np.abs(got - want).max() < 0.06, name


def test_a_page_with_nan_pixels_is_refused_by_name(page, tmp_path):
    pixels = np.asarray(page).astype(np.float32) / 255.0
    pixels[100, 200] = np.nan
    path = str(tmp_path / "nan.tiff")
    Image.fromarray(pixels).save(path)
    with pytest.raises(ValueError, match=r"cannot read image .*nan\.tiff: 1 of its pixels are "
                                         r"NaN or infinite"):
        grey_page(path)


def test_a_page_read_as_a_crop_gets_a_hint_to_pass_page(page, tmp_path, capsys):
    from crnn_multigpu.cli import predict
    page_path, word_path = str(tmp_path / "page.png"), str(tmp_path / "word.png")
    page.save(page_path)
    page.crop((30, 20, 330, 60)).save(word_path)  # one line of it, as a crop
    assert predict.main([page_path, word_path]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 2  # both still read, as asked
    assert captured.err.count("note:") == 1, captured.err
    assert "note: %s looks like a page (6 lines of text) but is read as one word or line: " \
           "pass --page to read its lines" % page_path in captured.err


def test_a_line_given_to_the_words_model_gets_a_hint_to_read_it_as_a_line(page, tmp_path, capsys):
    from crnn_multigpu.cli import predict
    line_path, word_path = str(tmp_path / "line.png"), str(tmp_path / "word.png")
    line = page.crop((30, 20, 690, 60))
    Image.fromarray(np.hstack([np.asarray(line)] * 3)).save(line_path)  # a line 3 sentences long
    page.crop((30, 20, 110, 60)).save(word_path)  # about one word of it
    assert predict.main(["--model", "words", line_path, word_path]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 2  # both still read, as asked
    assert captured.err.count("note:") == 1, captured.err
    assert "note: %s is " % line_path in captured.err
    assert "times as wide as the 128 px crops of single words this model reads, its letters " \
           "squeezed out of shape: read lines with the text model (--lines)" in captured.err
