"""The looks of a page (datasets/page_looks.py): each registered once, seeded, and each page
point followed onto the look by its homography."""
import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets.page_looks import LOOKS, Scan, look_of, map_points


def page_with_a_square(left=300, top=200, side=60):
    """A white 800x600 page with a black square, and the square's centre."""
    page = Image.new("L", (800, 600), 255)
    page.paste(0, (left, top, left + side, top + side))
    return page, (left + side / 2.0, top + side / 2.0)


def square_centre(image, blank):
    """The centre of the pixels of ``image`` much darker than in ``blank`` (the same look of
    the page without its square: the same geometry, light and noise)."""
    darker = np.asarray(blank, dtype=np.float32) - np.asarray(image, dtype=np.float32)
    ys, xs = np.nonzero(darker > 0.5 * darker.max())
    return xs.mean() + 0.5, ys.mean() + 0.5


def test_the_looks_are_registered_by_name_and_an_unknown_one_is_refused():
    assert list(LOOKS) == ["clean", "scan", "photo"]
    assert all(look_of(name).name == name for name in LOOKS)
    with pytest.raises(ValueError, match="the looks are clean, scan, photo"):
        look_of("fax")


@pytest.mark.parametrize("name", ["clean", "scan", "photo"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_page_point_lands_where_the_homography_carries_it(name, seed):
    page, centre = page_with_a_square(left=100 + 150 * seed, top=80 + 120 * seed)
    looked = look_of(name).draw(page, np.random.RandomState(seed))
    blank = look_of(name).draw(Image.new("L", page.size, 255), np.random.RandomState(seed))
    assert looked.image.mode == "L"
    found = square_centre(looked.image, blank.image)
    expected = map_points(looked.homography, [centre])[0]
    assert np.hypot(*np.subtract(found, expected)) < 3.0, (found, expected)


def test_a_look_is_drawn_again_alike_from_the_same_seed():
    page, _ = page_with_a_square()
    first, second = (look_of("photo").draw(page, np.random.RandomState(7)) for _ in range(2))
    assert np.array_equal(np.asarray(first.image), np.asarray(second.image))
    assert np.allclose(first.homography, second.homography)


def test_a_photo_is_slanted_smaller_unevenly_lit_and_on_a_darker_table():
    page = Image.new("L", (800, 600), 255)
    looked = look_of("photo").draw(page, np.random.RandomState(3))
    corners = map_points(looked.homography, [[0, 0], [800, 0], [800, 600], [0, 600]])
    width, height = looked.image.size
    assert width < 800 and height < 600
    assert (corners >= -1e-6).all() and (corners[:, 0] <= width).all() and \
        (corners[:, 1] <= height).all()
    top_side = corners[1] - corners[0]
    assert abs(np.degrees(np.arctan2(top_side[1], top_side[0]))) > 0.05  # not a mere scaling
    pixels = np.asarray(looked.image, dtype=np.float32)
    inside = pixels[height // 3:2 * height // 3, width // 3:2 * width // 3]
    assert pixels[0, 0] < inside.mean() - 60  # the table is darker than the page
    left, right = pixels[height // 3:2 * height // 3, width // 8:width // 4], \
        pixels[height // 3:2 * height // 3, -width // 4:-width // 8]
    top, bottom = pixels[height // 8:height // 4, width // 3:2 * width // 3], \
        pixels[-height // 4:-height // 8, width // 3:2 * width // 3]
    assert max(abs(left.mean() - right.mean()), abs(top.mean() - bottom.mean())) > 4  # uneven


def test_a_scan_turns_by_half_a_degree_at_most_and_greys_the_paper():
    page, _ = page_with_a_square()
    looked = look_of("scan").draw(page, np.random.RandomState(0))
    turned = map_points(looked.homography, [[0, 0], [800, 0]])
    angle = np.degrees(np.arctan2(*(turned[1] - turned[0])[::-1]))
    assert abs(angle) <= 0.5 and looked.image.size == (800, 600)
    assert 180 < np.median(np.asarray(looked.image)) < 240


def test_a_scan_turned_far_still_carries_its_points():
    class TurnedFar(Scan):
        max_turn = 8.0
    page, centre = page_with_a_square(left=40, top=40)
    rng_seed = 1  # turns by -1.3 degrees: the square's centre moves by about 9 px
    looked = TurnedFar().draw(page, np.random.RandomState(rng_seed))
    blank = TurnedFar().draw(Image.new("L", page.size, 255), np.random.RandomState(rng_seed))
    expected = map_points(looked.homography, [centre])[0]
    assert np.hypot(*np.subtract(expected, centre)) > 5
    assert np.hypot(*np.subtract(square_centre(looked.image, blank.image), expected)) < 1.0
