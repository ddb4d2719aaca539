"""Property-based tests of the image and dataset readers: whatever the bytes, the Pillow mode,
the float values or the size, an image either loads as a normalised array or is refused with
one ValueError naming it, and a bad image never changes what its neighbours read."""
import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from crnn_multigpu.datasets import FolderDataset, load_image, write_labels

BOUNDED = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])
MODES = ["1", "L", "P", "RGB", "RGBA", "CMYK", "YCbCr", "LA", "PA", "I", "F", "I;16", "HSV"]


def check_loaded(pixels, height):
    assert pixels.dtype == np.float32 and pixels.ndim == 2 and pixels.shape[0] == height
    assert pixels.shape[1] >= 1 and np.isfinite(pixels).all()
    assert pixels.min() >= 0.0 and pixels.max() <= 1.0


def load_or_refuse(source, name, height=32):
    """The array, or None after checking that the refusal is one ValueError naming ``name``."""
    try:
        pixels = load_image(source, height)
    except ValueError as error:
        assert str(error).startswith("cannot read image ") and name in str(error), error
        assert "\n" not in str(error)
        return None
    check_loaded(pixels, height)
    return pixels


@BOUNDED
@given(st.binary(max_size=400), st.sampled_from([b"", b"\x89PNG\r\n\x1a\n", b"GIF89a", b"BM",
                                                 b"II*\x00", b"\xff\xd8\xff"]))
def test_random_bytes_load_or_are_refused(tmp_path, data, magic):
    path = str(tmp_path / "random.img")
    with open(path, "wb") as stream:
        stream.write(magic + data)
    load_or_refuse(path, path)
    load_or_refuse(magic + data, "bytes in memory")


@BOUNDED
@given(st.sampled_from(MODES), st.integers(1, 300), st.integers(1, 120), st.integers(0, 2 ** 31))
def test_every_mode_and_size_loads(mode, width, height, seed):
    rng = np.random.RandomState(seed % (2 ** 32))
    image = Image.fromarray(rng.randint(0, 256, (height, width, 3)).astype(np.uint8), "RGB")
    try:
        image = image.convert(mode)
    except ValueError:
        image = image.convert("L").convert(mode)
    sources = [image]
    buffer = io.BytesIO()
    try:
        image.save(buffer, format="TIFF" if mode in ("I", "F", "I;16", "CMYK", "YCbCr")
                   else "PNG")
        sources.append(buffer.getvalue())
    except OSError:
        pass  # a mode Pillow keeps in memory only (HSV, PA)
    # Every mode is readable in memory; a file Pillow wrote may still be refused in one line
    # (Pillow 9.5 cannot read back its own 1 x 1 YCbCr TIFF).
    assert load_or_refuse(image, "") is not None, mode
    for source in sources[1:]:
        load_or_refuse(source, "bytes in memory")


@BOUNDED
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 255.0, 65535.0, -3.0, 1e30, float("nan"),
                                 float("inf"), float("-inf")]), min_size=4, max_size=64),
       st.integers(1, 8))
def test_float_images_are_read_or_refused_for_their_non_finite_pixels(values, rows):
    pixels = np.resize(np.array(values, dtype=np.float32), (rows, len(values)))
    loaded = load_or_refuse(Image.fromarray(pixels, mode="F"), "")
    assert (loaded is None) == (not np.isfinite(pixels).all())


@BOUNDED
@given(st.integers(1, 2000))
def test_truncated_files_are_refused_or_read_whole(keep):
    image = Image.fromarray(np.random.RandomState(keep).randint(0, 256, (40, 120)).astype(
        np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = buffer.getvalue()
    loaded = load_or_refuse(data[:max(0, len(data) - keep)], "bytes in memory")
    # Losing only the end marker (or a checksum) still leaves every pixel: then it reads whole.
    assert loaded is None or np.array_equal(loaded, load_image(data))
    if keep > 200:
        assert loaded is None


def test_a_bad_image_never_changes_its_neighbours(tiny_dataset, tmp_path):
    """One folder of good images, a second with bad ones between them: every good image reads
    the same in both, every bad one is None and counted."""
    good = FolderDataset(tiny_dataset)
    root = str(tmp_path / "mixed")
    os.makedirs(os.path.join(root, "images"))
    entries, bad = [], 0
    rng = np.random.RandomState(7)
    for index in range(12):
        entries.append((os.path.join(tiny_dataset, good.paths[index]), good.texts[index]))
        path = os.path.join(root, "images", "bad%02d.png" % index)
        with open(path, "wb") as stream:
            stream.write(rng.bytes(int(rng.randint(0, 200))))
        entries.append((path, "bad"))
        bad += 1
    write_labels(root, entries)
    mixed = FolderDataset(root)
    read = [mixed.safe_get(index) for index in range(len(mixed))]
    for index in range(12):
        array, text = read[2 * index]
        np.testing.assert_array_equal(array, good[index][0])
        assert text == good.texts[index] and read[2 * index + 1] is None
    assert len(mixed.unreadable) == bad


@pytest.mark.parametrize("size", [(0, 10), (10, 0)])
def test_images_without_pixels_are_refused(size):
    with pytest.raises(ValueError, match="it has no pixels"):
        load_image(Image.new("L", size))
