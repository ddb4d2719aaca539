"""Training-time augmentation: degradations inside the input pipeline, a pure function of
(seed, step, slot in the batch), for folder, LMDB and synthetic datasets alike."""
import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets import (SyntheticDataset, SyntheticTextGenerator, find_fonts,
                                    load_image, open_dataset, write_lmdb)
from crnn_multigpu.datasets.augment import Degrader
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets.batching import INPUT_NAMES
from crnn_multigpu.datasets.steps import StepBatches
from crnn_multigpu.wrapper.devices import cpu_devices
from crnn_multigpu.wrapper.feeding import StepInput
from crnn_multigpu.wrapper.sharding import split_batch

CHARSET = Charset.default()
BATCH, TOWERS = 8, 2


@pytest.fixture(scope="module", params=["folder", "lmdb", "synthetic"])
def dataset(request, tiny_dataset, tmp_path_factory):
    """The same kind of 48 renderings as a folder, an LMDB database and a live generator."""
    if request.param == "folder":
        return open_dataset(tiny_dataset, charset=CHARSET)
    generator = SyntheticTextGenerator(CHARSET, find_fonts()[:3], max_len=5, seed=5)
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
