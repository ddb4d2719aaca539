"""One loader for every input (crnn_multigpu.datasets.inputs, issue 54.1): EXIF orientation
applied, every frame of a multi-page TIFF a page named ``file.tif#page=N``, the pixel limit
checked from the header without Pillow's warning; and names as data (crnn_multigpu.ocr.names,
issue 54.3): escaped in text and hOCR, JSON-escaped in JSON, recoverable byte for byte."""
import json
import os
import warnings
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from PIL import Image, ImageDraw

from crnn_multigpu.datasets import pdf
from crnn_multigpu.datasets.images import UnreadableImage, open_image
from crnn_multigpu.datasets.inputs import sources
from crnn_multigpu.ocr.names import escaped, json_line, unescaped
from crnn_multigpu.ocr.page_result import Page, Row

HOSTILE = [b"tab\there.png", b"new\nline.png", b"back\\slash.png", b"quote\"s'.png",
           b"bad\xff\xfebytes.png", b"cr\rbell\x07.png", "\u4e2d\u6587.png".encode("utf-8")]


def asymmetric(size=(60, 24)):
    """An image that no turn or mirror leaves unchanged."""
    image = Image.new("L", size, 255)
    ImageDraw.Draw(image).rectangle((2, 2, 12, 8), fill=0)
    ImageDraw.Draw(image).line((20, 20, 50, 3), fill=90)
    return image


@pytest.mark.parametrize("orientation, stored", [
    (3, lambda image: image.rotate(180)),
    (6, lambda image: image.rotate(90, expand=True)),       # stored turned left: shown right
    (8, lambda image: image.rotate(270, expand=True)),
    (2, lambda image: image.transpose(Image.FLIP_LEFT_RIGHT)),
])
def test_an_image_is_read_as_its_exif_orientation_shows_it(tmp_path, orientation, stored):
    upright = asymmetric()
    path = str(tmp_path / "photo.png")
    exif = Image.Exif()
    exif[0x0112] = orientation
    stored(upright).save(path, exif=exif)
    with Image.open(path) as raw:
        assert raw.getexif().get(0x0112) == orientation   # the file says it, its pixels do not
    shown = open_image(path)
    assert shown.size == upright.size
    np.testing.assert_array_equal(np.asarray(shown), np.asarray(upright))
    again = open_image(shown)   # turned once: the orientation is gone from the result
    np.testing.assert_array_equal(np.asarray(again), np.asarray(upright))


def frames_tiff(path, count=3):
    """A TIFF of ``count`` frames of different sizes and shades."""
    frames = [Image.new("L", (40 + 10 * index, 30), 40 * index) for index in range(count)]
    frames[0].save(path, save_all=True, append_images=frames[1:])
    return frames


def test_every_frame_of_a_tiff_is_a_page_named_as_pdf_pages_are(tmp_path):
    path = str(tmp_path / "scan.tif")
    frames = frames_tiff(path)
    single = str(tmp_path / "one.tif")
    frames[1].save(single)
    found = sources([path, single])
    assert [source.name for source in found] == \
        ["%s#page=%d" % (path, number) for number in (1, 2, 3)] + [single]
    for source, frame in zip(found, frames + [frames[1]]):
        np.testing.assert_array_equal(np.asarray(source.load()), np.asarray(frame))
    chosen = sources([path], pdf.PageSelection("3,1"))
    assert [source.name for source in chosen] == [path + "#page=3", path + "#page=1"]
    assert chosen[0].load().size == frames[2].size


def test_a_page_past_a_tiffs_end_skips_that_input_only(tmp_path):
    path = str(tmp_path / "scan.tif")
    frames_tiff(path, 2)
    found = sources([path], pdf.PageSelection("2-4"))
    assert [source.name for source in found] == [path]
    with pytest.raises(UnreadableImage) as refused:
        found[0].load()
    assert refused.value.reason == "has 2 pages: pages 2-4 ask for page 4"
    with pytest.raises(ValueError, match="none of the inputs is one"):
        sources([str(tmp_path / "any.png")], pdf.PageSelection("1"))


def test_too_many_pixels_are_refused_from_the_header_without_pillows_warning(tmp_path,
                                                                             monkeypatch):
    path = str(tmp_path / "large.png")
    Image.new("L", (20, 20), 255).save(path)
    # 400 pixels against a limit of 300: Pillow would warn and decode; 700: it reads quietly.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UnreadableImage) as refused:
            open_image(path)
        assert sources([path])[0].name == path
    assert not caught, [str(warning.message) for warning in caught]
    assert str(refused.value).startswith("cannot read image %s: it has 0.0 M pixels, more than "
                                         "the 0.0 M an image may have here" % path)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 700)
    assert open_image(path).size == (20, 20)


@pytest.mark.parametrize("scale", [1.0, 255.0])
@pytest.mark.parametrize("channels", [3, 4])
def test_a_colour_array_of_floats_reads_as_its_8_bit_image(channels, scale):
    # matplotlib's imread gives a PNG as float32 RGBA in [0, 1]; Pillow has no mode for it.
    grey = np.asarray(asymmetric()).astype(np.float32)
    colour = np.stack([grey] * 3 + [np.full_like(grey, 255.0)] * (channels - 3), axis=-1)
    loaded = sources([colour * scale / 255.0])[0].load()
    assert loaded.mode == ("RGB", "RGBA")[channels - 3]
    np.testing.assert_allclose(np.asarray(loaded.convert("L"), np.float32), grey, atol=1)


def test_images_arrays_and_bytes_are_inputs_named_by_their_place(tmp_path):
    picture = asymmetric()
    grey = np.asarray(picture)
    found = sources([picture, grey, grey / 255.0, np.zeros((2, 2, 7)), b"not an image"])
    assert [source.name for source in found] == ["<image 1>", "<array 2>", "<array 3>",
                                                 "<array 4>", "<bytes 5>"]
    for source in found[:3]:
        np.testing.assert_allclose(np.asarray(source.load(), np.float32) /
                                   (1.0 if source.name == "<array 3>" else 255.0),
                                   grey / 255.0, atol=1e-6)
    for source, said in zip(found[3:], ("is not an image", "not an image format Pillow reads")):
        with pytest.raises(UnreadableImage, match="cannot read image %s: .*%s"
                                                  % (source.name, said)):
            source.load()


@pytest.mark.parametrize("name", HOSTILE)
def test_an_escaped_name_is_one_printable_field_that_gives_the_bytes_back(name):
    text = escaped(os.fsdecode(name))
    assert "\t" not in text and "\n" not in text and "\r" not in text
    assert all(ord(char) >= 0x20 and ord(char) != 0x7f for char in text)
    text.encode("utf-8")   # no surrogate left
    assert unescaped(text) == name
    quoted = escaped(os.fsdecode(name), quote=True)
    assert '"' not in quoted.replace('\\"', "") and unescaped(quoted) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_a_json_line_is_valid_utf8_and_gives_the_name_back(name):
    line = json_line({"image": os.fsdecode(name), "text": "x"})
    assert "\n" not in line
    decoded = json.loads(line.encode("utf-8").decode("utf-8"))
    assert os.fsencode(decoded["image"]) == name


@pytest.mark.parametrize("name", HOSTILE)
def test_hocr_of_a_hostile_name_is_well_formed_and_gives_it_back(name):
    page = Page(100, 40, 0, 0.0, (Row((2, 3, 50, 20), "a <b> & c", 0.9, 0, ()),),
                os.fsdecode(name))
    hocr = page.to_hocr()
    hocr.encode("utf-8")
    root = ElementTree.fromstring(hocr)
    space = {"h": "http://www.w3.org/1999/xhtml"}
    title = root.find(".//h:div[@class='ocr_page']", space).get("title")
    assert title.startswith('image "') and title.endswith('"; bbox 0 0 100 40; ppageno 0')
    assert unescaped(title[len('image "'):-len('"; bbox 0 0 100 40; ppageno 0')]) == name
    assert root.find(".//h:span[@class='ocr_line']", space).text == "a <b> & c"
