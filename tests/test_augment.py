"""Training-time augmentation: degradations inside the input pipeline, a pure function of
(seed, step, slot in the batch), for folder, LMDB and synthetic datasets alike."""
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets import (SyntheticDataset, SyntheticTextGenerator,
                                    load_image, open_dataset, write_lmdb)
from crnn_multigpu.datasets.augment import (Degrader, Reframer, StrokeWeight,
                                            training_augmentation)
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets.batching import INPUT_NAMES
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.feeding import StepInput
from crnn_multigpu.wrapper.sharding import split_batch
from faces import tiny_faces

CHARSET = Charset.default()
BATCH, TOWERS = 8, 2


@pytest.fixture(scope="module", params=["folder", "lmdb", "synthetic"])
def dataset(request, tiny_dataset, tmp_path_factory):
    """The same kind of 48 renderings as a folder, an LMDB database and a live generator."""
    if request.param == "folder":
        return open_dataset(tiny_dataset, charset=CHARSET)
    generator = SyntheticTextGenerator(CHARSET, tiny_faces(), max_len=5, seed=5)
    if request.param == "lmdb":
        path = str(tmp_path_factory.mktemp("augment") / "lmdb")
        write_lmdb(path, generator.iterate(0, 48))
        return open_dataset(path, charset=CHARSET)
    return SyntheticDataset(generator, 48)


def batches(dataset, strength, seed=3):
    augment = None if strength is None else Degrader(strength)
    return StepBatches(dataset, CHARSET, BATCH, fixed_width=100, seed=seed, augment=augment)


def assert_batches_equal(a, b):
    for name in INPUT_NAMES:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.texts == b.texts


def changed_rows(a, b):
    return sum(not np.array_equal(x, y) for x, y in zip(a.images, b.images))


def test_a_step_is_augmented_the_same_way_every_time(dataset):
    first, again = batches(dataset, 1.0)(5), batches(dataset, 1.0)(5)
    assert_batches_equal(first, again)
    plain = batches(dataset, None)(5)
    # Only the pixels change: same samples, same order, same widths and labels.
    assert first.texts == plain.texts
    np.testing.assert_array_equal(first.widths, plain.widths)
    assert changed_rows(first, plain) >= BATCH // 2


def test_strength_zero_is_no_augmentation(dataset):
    for step in (0, 7):
        assert_batches_equal(batches(dataset, 0.0)(step), batches(dataset, None)(step))


def test_augmented_images_keep_the_models_shape_and_range(dataset):
    batch = batches(dataset, 1.0)(2)
    assert batch.images.shape == (BATCH, 32, 100, 1) and batch.images.dtype == np.float32
    assert batch.images.min() >= 0.0 and batch.images.max() <= 1.0
    assert all(image.max() > 0.5 for image in batch.images), "every image keeps its strokes"


def test_a_sample_is_degraded_differently_at_different_steps(tiny_dataset):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)

    def whole(augment):  # one batch per epoch: every step holds every sample, reshuffled
        return StepBatches(dataset, CHARSET, len(dataset), fixed_width=100, seed=3,
                           augment=augment)

    plain, augmented = whole(None), whole(Degrader(1.0))
    # Find each sample of step 0 again in step 1 by its unaugmented pixels.
    slot = dict((image.tobytes(), i) for i, image in enumerate(plain(0).images))
    pairs = [(slot[image.tobytes()], j) for j, image in enumerate(plain(1).images)]
    assert len(pairs) == len(dataset)
    first, second = augmented(0), augmented(1)
    differ = sum(not np.array_equal(first.images[i], second.images[j]) for i, j in pairs)
    assert differ >= 0.9 * len(pairs), (differ, len(pairs))


def test_the_pipeline_delivers_the_augmented_batches_of_its_steps(tiny_dataset, make_session):
    dataset = open_dataset(tiny_dataset, charset=CHARSET)
    reference = batches(dataset, 0.5)
    # Parallel decoding threads and a resumed input (global step 3) see the same batches.
    global_step = tf.train.get_or_create_global_step()
    inputs = [StepInput(batches(dataset, 0.5), cpu_devices(TOWERS), global_step=step)
              for step in (None, global_step)]
    fresh, resumed = ([feed.tower(k) for k in range(TOWERS)] for feed in inputs)
    session = make_session()
    global_step.load(3, session)
    session.run([feed.initializers for feed in inputs])
    for step in range(5):
        for got, want in zip(session.run(fresh), split_batch(reference(step), TOWERS)):
            for name in INPUT_NAMES:
                np.testing.assert_array_equal(got[name], getattr(want, name), err_msg=name)
    for step in range(3, 5):
        for got, want in zip(session.run(resumed), split_batch(reference(step), TOWERS)):
            np.testing.assert_array_equal(got["images"], want.images)


def test_degrade_sees_a_grayscale_image_of_the_source_size():
    seen = []

    def identity(image):
        seen.append((image.mode, image.size))
        return image

    rgb = Image.new("RGB", (60, 20), (200, 180, 40))
    rgb.paste((20, 30, 90), (10, 5, 40, 15))
    transparent = Image.new("LA", (60, 20), (255, 0))
    transparent.paste((0, 255), (10, 5, 40, 15))
    for image in (rgb, transparent):
        np.testing.assert_allclose(load_image(image, degrade=identity), load_image(image),
                                   atol=1.0 / 255)
    assert seen == [("L", (60, 20))] * 2
    np.testing.assert_array_equal(load_image(rgb, degrade=identity), load_image(rgb))


def test_augmentation_needs_a_dataset_that_reads_raw_images():
    class Arrays(object):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return np.zeros((32, 16), np.float32), "a"

    with pytest.raises(ValueError, match="reads raw images"):
        StepBatches(Arrays(), CHARSET, 4, augment=Degrader(0.5))


def text_line(height=40, width=300):
    """A rendered line of text: dark strokes on a light background, ink about 0.7 of the
    height (what the renderer and the row cutter give)."""
    image = Image.new("L", (width, height), 250)
    font = ImageFont.truetype(tiny_faces()[0], int(height * 0.7))
    ImageDraw.Draw(image).text((6, 2), "Frame 42 lines", font=font, fill=10)
    return image


def ink_box(image):
    ink = np.asarray(image) < 128
    rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    return rows[0], rows[-1] + 1, columns[0], columns[-1] + 1


def test_reframing_gives_the_ink_the_drawn_share_of_the_height_and_keeps_all_of_it():
    line = text_line()
    top, bottom, left, right = ink_box(line)
    reframe, rng, spans = Reframer(1.0), np.random.RandomState(0), []
    for _ in range(200):
        framed = reframe(line, rng)
        y0, y1, x0, x1 = ink_box(framed)
        assert (y1 - y0, x1 - x0) == (bottom - top, right - left)  # no ink cut off
        # Every stroke pixel is where the frame moved it: the same ink, shifted.
        assert np.array_equal(np.asarray(framed)[y0:y1, x0:x1] < 128,
                              np.asarray(line)[top:bottom, left:right] < 128)
        spans.append((y1 - y0) / float(framed.size[1]))
        assert framed.size[0] - (x1 - x0) <= 2 * 0.6 * framed.size[1] + 2
    # Drawn from 0.35-0.95 (rounding the height to whole pixels moves it by under 1 pixel).
    assert min(spans) >= 0.35 * 27 / 28 and max(spans) <= 0.95 * 29 / 28 + 1e-9
    assert min(spans) < 0.45 and max(spans) > 0.85  # the whole range is used


def test_reframing_leaves_blank_lines_and_the_rest_of_its_draws_alone():
    blank = Image.new("L", (80, 32), 200)
    assert Reframer(1.0)(blank, np.random.RandomState(0)) is blank
    line = text_line()
    rng = np.random.RandomState(3)
    kept = [Reframer(0.5)(line, rng) is line for _ in range(400)]
    assert 150 < sum(kept) < 250  # about half: 200 +- 5 standard deviations
    assert Reframer(0.0)(line, rng) is line
    with pytest.raises(ValueError, match="probability must be in"):
        Reframer(1.5)


def test_training_augmentation_reframes_then_changes_stroke_weight_then_degrades():
    assert training_augmentation(0.0, 0.0, 32) is None
    changes = training_augmentation(0.4, 0.5, 32).changes
    assert [type(change) for change in changes] == [Reframer, Degrader]
    assert changes[0].probability == 0.5 and changes[1].strength == 0.4
    assert [type(change) for change in training_augmentation(0.4, 0.0, 32).changes] == [Degrader]
    changes = training_augmentation(0.4, 0.5, 48, stroke=0.3).changes
    assert [type(change) for change in changes] == [Reframer, StrokeWeight, Degrader]
    assert changes[1].probability == 0.3 and changes[1].reference_height == 48
    assert [type(change) for change in training_augmentation(0.0, 0.0, 32, 0.2).changes] == \
        [StrokeWeight]


def ink_pixels(image, dark=True):
    pixels = np.asarray(image)
    return int((pixels < 128).sum() if dark else (pixels >= 128).sum())


@pytest.mark.parametrize("dark_ink", [True, False])
def test_stroke_weight_makes_the_same_ink_bolder_or_lighter_in_place(dark_ink):
    line = text_line() if dark_ink else Image.eval(text_line(), lambda value: 255 - value)
    before, (top, bottom, left, right) = ink_pixels(line, dark_ink), ink_box(
        line if dark_ink else Image.eval(line, lambda value: 255 - value))
    rng, changes = np.random.RandomState(0), []
    for _ in range(60):
        changed = StrokeWeight(1.0)(line, rng)
        assert changed.size == line.size and changed.mode == "L"
        dark_view = changed if dark_ink else Image.eval(changed, lambda value: 255 - value)
        y0, y1, x0, x1 = ink_box(dark_view)
        # Strokes grow or shrink by at most half a pixel a side: the ink stays where it was.
        assert abs(y0 - top) <= 1 and abs(y1 - bottom) <= 1
        assert abs(x0 - left) <= 1 and abs(x1 - right) <= 1
        changes.append(ink_pixels(changed, dark_ink) / float(before))
    bolder, lighter = [c for c in changes if c > 1], [c for c in changes if c < 1]
    assert len(bolder) + len(lighter) == len(changes)  # every draw changed the weight
    # Half bolder, half lighter: 30 +- 4 standard deviations of 60 coin flips.
    assert 15 <= len(bolder) <= 45
    # A quarter pixel a side on strokes 2-3 pixels wide changes their ink by a tenth or more.
    assert min(bolder) > 1.05 and max(lighter) < 0.95
    assert max(bolder) > 1.1 * min(bolder)  # two bolder steps: 1/4 and 1/2 a side


def test_stroke_weight_leaves_blank_lines_and_the_rest_of_its_draws_alone():
    blank = Image.new("L", (80, 32), 200)
    assert StrokeWeight(1.0)(blank, np.random.RandomState(0)) is blank
    line, rng = text_line(), np.random.RandomState(4)
    kept = [StrokeWeight(0.3)(line, rng) is line for _ in range(400)]
    assert 220 < sum(kept) < 340  # about 0.7 of 400 = 280, +- 6.5 standard deviations
    assert StrokeWeight(0.0)(line, rng) is line
    with pytest.raises(ValueError, match="probability must be in"):
        StrokeWeight(-0.1)
