"""Width bucketing: batches of similar widths, data order still a pure function of (seed, step)."""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.cli import train
from crnn_multigpu.datasets import FolderDataset, batch_indices, write_labels
from crnn_multigpu.datasets.steps import StepBatches


def padding_share(batches, sizes):
    """Share of the padded batch area that is padding."""
    padded = sum(max(sizes[i] for i in batch) * len(batch) for batch in batches)
    return 1.0 - sum(sizes[i] for batch in batches for i in batch) / float(padded)


def test_buckets_cover_every_index_once_and_cut_padding():
    sizes = np.random.RandomState(0).randint(8, 240, size=1000)
    plain = batch_indices(1000, 32, True, seed=3, epoch=2, drop_remainder=True)
    bucketed = batch_indices(1000, 32, True, seed=3, epoch=2, drop_remainder=True,
                             sizes=sizes, bucket=8)
    assert bucketed == batch_indices(1000, 32, True, seed=3, epoch=2, drop_remainder=True,
                                     sizes=sizes, bucket=8)
    assert bucketed != batch_indices(1000, 32, True, seed=3, epoch=3, drop_remainder=True,
                                     sizes=sizes, bucket=8)
    assert len(bucketed) == len(plain) == 31 and all(len(b) == 32 for b in bucketed)
    # The same samples are visited in the epoch; only their grouping changes.
    assert sorted(i for b in bucketed for i in b) == sorted(i for b in plain for i in b)
    assert padding_share(plain, sizes) > 0.35
    assert padding_share(bucketed, sizes) < 0.15
    # Batches are shuffled: widths do not just rise window by window.
    widest = [max(sizes[i] for i in batch) for batch in bucketed[:8]]
    assert widest != sorted(widest)
    with pytest.raises(ValueError, match="one size per sample"):
        batch_indices(10, 2, True, sizes=[1, 2], bucket=2)


class MeasuredOnRequest(object):
    """1,000 samples whose widths are known only when asked for (like render-on-read ones)."""

    def __init__(self):
        self.asked = []

    def __len__(self):
        return 1000

    def width_keys(self, indices):
        self.asked.extend(int(i) for i in indices)
        return [(7 * int(i)) % 240 for i in indices]


def test_widths_are_read_a_window_at_a_time():
    dataset = MeasuredOnRequest()
    batches = StepBatches(dataset, Charset.default(), 10, seed=2, bucket=5)
    order = batches.epoch_order(0)
    assert len(order) == 100 and dataset.asked == []
    first = order[0]
    assert len(dataset.asked) == 50 and set(first) <= set(dataset.asked)
    order[3]  # same window: nothing more to read
    assert len(dataset.asked) == 50
    order[99]
    assert len(dataset.asked) == 100
    assert [order[i] for i in range(100)] == list(batches.epoch_order(0))  # pure, list-like
    with pytest.raises(IndexError):
        order[100]


@pytest.fixture(scope="module")
def varied_folder(tmp_path_factory):
    """40 images 32 px high and 8-320 px wide, labelled with texts of matching length."""
    root = tmp_path_factory.mktemp("varied")
    rng = np.random.RandomState(1)
    (root / "images").mkdir()
    entries = []
    for index in range(40):
        width = int(rng.randint(2, 81)) * 4
        pixels = (rng.rand(32, width) * 255).astype(np.uint8)
        Image.fromarray(pixels).save(str(root / "images" / ("%02d.png" % index)))
        entries.append(("images/%02d.png" % index, "a" * max(1, width // 16)))
    write_labels(str(root), entries)
    return str(root)


def test_step_batches_bucket_by_real_widths_and_resume_exactly(varied_folder):
    charset = Charset.default()
    dataset = FolderDataset(varied_folder, charset=charset)
    everyone = range(len(dataset))
    assert dataset.width_keys(everyone) == [dataset[i][0].shape[1] for i in everyone]
    batches = StepBatches(dataset, charset, 4, seed=5, bucket=5)
    fresh = StepBatches(FolderDataset(varied_folder, charset=charset), charset, 4, seed=5,
                        bucket=5)
    plain = StepBatches(dataset, charset, 4, seed=5)
    for step in (0, 7, 12, 23):  # 10 batches per epoch: steps of three epochs
        batch = batches(step)
        assert np.array_equal(batch.images, fresh(step).images)  # what --resume relies on
    padded = lambda source: sum(source(s).images.shape[2] * 4 - source(s).widths.sum()  # noqa
                                for s in range(10))
    assert padded(batches) < 0.5 * padded(plain)
    with ThreadPoolExecutor(4) as pool:  # as the feed-free input's decoding threads ask
        parallel = list(pool.map(batches, range(20)))
    assert all(np.array_equal(a.images, fresh(s).images) for s, a in enumerate(parallel))
    fixed = StepBatches(dataset, charset, 4, fixed_width=100, bucket=5)
    assert fixed.bucket == 0  # one width for all: nothing to sort


def test_train_refuses_buckets_with_a_fixed_width(varied_folder, tmp_path, capsys):
    status = train.main(["--train", varied_folder, "--out", str(tmp_path / "run"),
                         "--width", "100", "--bucket", "8", "--steps", "1"])
    assert status == 2
    assert "--bucket 8 sorts batches by image width" in capsys.readouterr().err
