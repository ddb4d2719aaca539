"""crnn-predict --page --format json and hocr (issue 36): a page of known truth read as rows with
their boxes in the image given (as it came, turned by a quarter turn, turned by 2 degrees),
texts and confidences; one hOCR document of several pages; the page's ink found once."""
import json
import math
import xml.etree.ElementTree as ElementTree

import editdistance
import numpy as np
import pytest
from PIL import Image

from assertions import one_error_line, run_tool
from crnn_multigpu.cli import predict
from crnn_multigpu.datasets.images import grey_pixels, normalise
from crnn_multigpu.ocr import page as page_module
from crnn_multigpu.ocr.page_photo import WORK_SIDE
from crnn_multigpu.ocr.text_box import frame_text
from test_page import render_page
from test_page_orientation import turned_box

SKEW = 2.0  # degrees, counter-clockwise
XHTML = "{http://www.w3.org/1999/xhtml}"


def union(boxes):
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
            max(b[3] for b in boxes))


def truth_rows(truth):
    """``[(text, ink box)]`` of each row of render_page's page: its last two pieces share one."""
    (left, left_box), (right, right_box) = truth[-2:]
    return truth[:-2] + [(left + " " + right, union([left_box, right_box]))]


def skewed(page, truth):
    """The page turned by SKEW degrees and the ink box of each of its rows on it: the pixels
    darker than the paper that lie in the row's box turned with the page."""
    image = page.rotate(SKEW, resample=Image.BICUBIC, fillcolor=255)
    labels = Image.new("L", page.size, 0)
    for index, (_, (x0, y0, x1, y1)) in enumerate(truth):
        labels.paste(index + 1, (x0 - 2, y0 - 2, x1 + 2, y1 + 2))
    labels = np.asarray(labels.rotate(SKEW, resample=Image.NEAREST))
    ink = np.asarray(image) < 250
    boxes = []
    for index, (text, _) in enumerate(truth):
        rows, columns = np.nonzero(ink & (labels == index + 1))
        boxes.append((text, (columns.min(), rows.min(), columns.max() + 1, rows.max() + 1)))
    return image, boxes


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The page of test_page.render_page as it came, turned by 90 degrees and turned by SKEW,
    read by ``crnn-predict --page --format json`` and ``--format hocr`` (its first two) with
    the shipped text model: ``{"truths", "paths", "json", "hocr", "masks"}``, ``masks``
    counting the ink masks the JSON run computed. Every ink mask is thresholded by
    page._otsu_of_counts, so counting its calls counts them wherever ink_mask is imported."""
    folder = tmp_path_factory.mktemp("pages")
    page, truth = render_page()
    rows = truth_rows(truth)
    turned = page.rotate(90, expand=True)
    images = [page, turned, None]
    truths = [rows, [(text, turned_box(box, 90, page.size)) for text, box in rows], None]
    images[2], truths[2] = skewed(page, rows)
    paths = [str(folder / name) for name in ("upright.png", "turned.png", "skewed.png")]
    for image, path in zip(images, paths):
        image.save(path)
    counted, otsu = [], page_module._otsu_of_counts
    # (The photo check thresholds the page shrunk to WORK_SIDE pixels: no ink mask of it.)
    page_module._otsu_of_counts = lambda counts, bins: counted.append(
        1 if np.sum(counts) > WORK_SIDE ** 2 else 0) or otsu(counts, bins)
    try:
        code, out, err = run_tool(predict.main, ["--page", "--format", "json"] + paths)
    finally:
        page_module._otsu_of_counts = otsu
    assert code == 0, err
    hocr = run_tool(predict.main, ["--page", "--format", "hocr"] + paths[:2])
    assert hocr[0] == 0, hocr[2]
    return {"truths": truths, "paths": paths, "json": [json.loads(line) for line in
                                                       out.splitlines()],
            "hocr": hocr[1], "masks": sum(counted)}


def test_each_page_finds_its_ink_once(pages):
    # Before the page reader owned the pipeline, the layout's witness, the straightening, the
    # columns and each column's rules and lines found it again: 5 times an upright page, 9 a
    # turned one (19 for these three pages).
    assert pages["masks"] == len(pages["paths"])


def test_json_rows_hold_the_texts_read_and_boxes_around_their_ink(pages):
    for page, truth, path in zip(pages["json"], pages["truths"], pages["paths"]):
        assert page["image"] == path and len(page["rows"]) == len(truth), page
        # Boxes in the image given, around each row's ink: exact up to anti-aliased edges,
        # a few pixels looser around a slanted line (its corners are no ink).
        slack = 8 if "skewed" in path else 1
        for row, (text, box) in zip(page["rows"], truth):
            assert 0 <= row["confidence"] <= 1, row
            for piece in row["pieces"]:
                assert union([row["box"], piece["box"]]) == tuple(row["box"]), row
            if text == "......":  # dots are boxed at a line's height
                continue
            outside = np.subtract(row["box"], box) * (1, 1, -1, -1)  # > 0: ink left out
            assert outside.max() <= 1 and -outside.min() <= slack, (path, row, box)
        read = [(row["text"], text) for row, (text, _) in zip(page["rows"], truth)
                if text != "......"]
        errors = sum(editdistance.eval(got, want) for got, want in read)
        assert errors <= 0.06 * sum(len(want) for _, want in read), (path, read)
    upright, turned, straightened = pages["json"]
    assert (upright["turn"], turned["turn"]) == (0, 270)
    assert abs(straightened["skew"] - SKEW) <= 0.1
    assert [row["text"] for row in turned["rows"]] == [row["text"] for row in upright["rows"]]
    # Rows read exactly are, on the whole, read more surely than any row read wrong.
    right = [row["confidence"] for row, (text, _) in zip(upright["rows"], pages["truths"][0])
             if row["text"] == text]
    wrong = [row["confidence"] for row, (text, _) in zip(upright["rows"], pages["truths"][0])
             if row["text"] != text]
    assert len(right) >= 4 and wrong and np.mean(right) > max(wrong), (right, wrong)


def test_hocr_is_one_document_of_pages_of_lines_with_boxes_and_confidences(pages):
    document = ElementTree.fromstring(pages["hocr"].encode("utf-8"))
    elements = list(document.iter())

    def of_class(name, inside=elements):
        return [element for element in inside if element.get("class") == name]

    hocr_pages = of_class("ocr_page")
    assert len(hocr_pages) == 2
    for hocr_page, page, path in zip(hocr_pages, pages["json"], pages["paths"]):
        assert hocr_page.get("title") == 'image "%s"; bbox 0 0 %d %d; ppageno %d' % (
            path, page["width"], page["height"], pages["paths"].index(path))
        lines = of_class("ocr_line", list(hocr_page.iter()))
        assert len(lines) == len(page["rows"])
        for line, row in zip(lines, page["rows"]):
            fields = dict(field.strip().split(" ", 1) for field in line.get("title").split(";"))
            x0, y0, x1, y1 = map(int, fields["bbox"].split())
            assert [x0, y0, x1, y1] == row["box"]
            assert 0 <= x0 < x1 <= page["width"] and 0 <= y0 < y1 <= page["height"]
            assert abs(int(fields["x_wconf"]) - 100 * row["confidence"]) <= 0.51
            assert (line.text or "") == row["text"]
        assert len(of_class("ocr_carea", list(hocr_page.iter()))) == 1
    # The page turned by 90 degrees counter-clockwise: its lines run up the image.
    assert "textangle 90" in of_class("ocr_line", list(hocr_pages[1].iter()))[0].get("title")
    assert document.tag == XHTML + "html"


def test_crops_in_json_are_one_object_each_and_hocr_needs_pages(tmp_path, capsys):
    page, truth = render_page()
    crop = str(tmp_path / "attributes.png")
    (x0, y0, x1, y1) = dict(truth)["Attributes"]
    page.crop((x0 - 4, y0 - 8, x1 + 4, y1 + 8)).save(crop)
    code, out, err = run_tool(predict.main, ["--lines", "--format", "json", "--with-prob", crop])
    assert code == 0, err
    reading = json.loads(out)
    assert set(reading) == {"image", "text", "confidence", "log_prob"}
    assert reading["image"] == crop and reading["text"] == "Attributes"
    frames = normalise(frame_text(grey_pixels(crop)), 32).shape[1] / 4.0  # as crop_array cuts it
    assert abs(reading["confidence"] - math.exp(reading["log_prob"] / frames)) <= 1e-3
    # hOCR describes pages: refused for crops in one line, before any model is loaded.
    code, out, err = run_tool(predict.main, ["--format", "hocr", crop])
    assert out == "" and "--format hocr describes pages" in one_error_line(code, err)
    assert "add --page" in err
