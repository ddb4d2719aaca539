"""Photos of pages (ocr/page_photo.py): the page found on its table and seen square, boxes carried
back to the photo, and prints, scans and dark pages left as they come."""
import numpy as np
import pytest
from PIL import Image, ImageDraw

from crnn_multigpu.datasets.fonts import load_font
from crnn_multigpu.datasets.page_looks import look_of, map_points
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.page_photo import box_in_photo, flatten, page_corners
from crnn_multigpu.ocr.page_reader import PageReader
from test_page import DEJAVU

LINES = ("the report was printed on Monday", "and sent to every office before noon",
         "with twelve tables of figures", "about water in rivers and lakes")


def printed_page(lines=LINES, size=28, paper=245):
    """A page of ``lines`` in DejaVu Serif, as a 150 dpi print of a short letter looks."""
    font = load_font(DEJAVU + "DejaVuSerif.ttf", size)
    page = Image.new("L", (900, 1100), paper)
    draw = ImageDraw.Draw(page)
    for row, line in enumerate(lines):
        draw.text((90, 120 + 2 * size * row), line, fill=15, font=font)
    return page


def page_edges(page):
    return [[0, 0], [page.width, 0], [page.width, page.height], [0, page.height]]


def test_the_corners_of_a_photographed_page_are_found():
    page, errors = printed_page(), []
    for seed in range(5):
        photo = look_of("photo").draw(page, np.random.RandomState(seed))
        found = page_corners(photo.image)
        assert found is not None, seed
        truth = map_points(photo.homography, page_edges(page))
        errors.append(np.abs(found - truth).max() / max(photo.image.size))
    # The extreme points of the blurred paper alone lie 1.5-2.1 % of the photo off its corners
    # (the blur rounds them); the sides' fitted lines meet 0.5-1.7 % off.
    assert max(errors) < 0.02 and np.mean(errors) < 0.012, errors


@pytest.mark.parametrize("look", ["clean", "scan"])
def test_prints_and_scans_are_read_as_they_come(look):
    image = look_of(look).draw(printed_page(), np.random.RandomState(0)).image
    flattened = flatten(image)
    assert flattened.homography is None and flattened.page is image
    assert flattened.size == image.size


def test_a_dark_page_of_light_print_is_no_photo():
    page = Image.eval(printed_page(paper=255), lambda value: 255 - value)
    assert page_corners(page) is None


def test_a_photographed_page_is_seen_square_and_evenly_lit():
    photo = look_of("photo").draw(printed_page(), np.random.RandomState(3)).image
    flat = flatten(photo).page
    pixels = np.asarray(flat, dtype=np.float32)
    paper = pixels[pixels > np.percentile(pixels, 40)]
    # Light fell off across the photo by up to 45 %; the flattened paper is even again.
    thirds = [pixels[:, i * flat.width // 3:(i + 1) * flat.width // 3] for i in range(3)]
    medians = [float(np.median(part)) for part in thirds]
    assert max(medians) - min(medians) < 12 and np.median(paper) > 220
    # Four corners cannot tell the page's true proportions under a slant: its mean sides do.
    assert abs(flat.width / float(flat.height) - 900 / 1100.0) < 0.05


def test_a_box_on_the_flattened_page_is_carried_back_to_the_photo():
    halve = np.diag([0.5, 0.5, 1.0])  # the page is the photo at half its size
    assert box_in_photo((10, 20, 30, 40), halve, (100, 100)) == (20, 40, 60, 80)
    assert box_in_photo((10, 20, 80, 90), halve, (100, 100)) == (20, 40, 100, 100)  # clipped


@pytest.fixture(scope="module")
def reader():
    recognizer = Recognizer.shipped("text")
    yield recognizer
    recognizer.close()


@pytest.mark.parametrize("seed", [0, 1])
def test_a_photographed_page_reads_as_the_print_and_its_boxes_lie_on_its_lines(reader, seed):
    page = printed_page()
    photo = look_of("photo").draw(page, np.random.RandomState(seed))
    read = PageReader(reader).read(photo.image)
    assert [row.text for row in read.rows] == list(LINES)
    assert (read.width, read.height) == photo.image.size
    for row, line in zip(read.rows, LINES):
        # The line's centre on the print, carried onto the photo, lies inside its row's box.
        middle = 90 + load_font(DEJAVU + "DejaVuSerif.ttf", 28).getlength(line) / 2.0
        x, y = map_points(photo.homography, [[middle, 120 + 56 * LINES.index(line) + 16]])[0]
        x0, y0, x1, y1 = row.box
        assert x0 <= x <= x1 and y0 <= y <= y1, (row.box, x, y)
