"""Datasets: image normalisation, batching, fonts, synthetic data, folder and LMDB formats."""
import io
import logging
import os
import threading

import numpy as np
import pytest
from PIL import Image

from crnn_multigpu.datasets.charset import EMPTY_LABEL, OUTSIDE_CHARSET, TOO_LONG, Charset
from crnn_multigpu.cli import generate
from crnn_multigpu.datasets import (BatchLoader, FolderDataset, LmdbDataset, SyntheticDataset,
                                    SyntheticTextGenerator, batch_indices, find_fonts, fit_width,
                                    font_supports, iterate_batches, load_image, make_batch,
                                    open_dataset, read_labels, split_fonts, write_dataset,
                                    write_labels, write_lmdb)
from crnn_multigpu.datasets.fonts import FONT_EXTENSIONS

CHARSET = Charset.default()


def text_like(dark_on_light=True, size=(120, 40), mode="L"):
    """A fake text line: three vertical strokes on a flat background."""
    ink, paper = (30, 220) if dark_on_light else (220, 30)
    pixels = np.full(size[::-1], paper, dtype=np.uint8)
    for left in (16, 56, 96):
        pixels[8:32, left:left + 8] = ink
    return Image.fromarray(pixels).convert(mode)


def assert_light_on_dark(array, height=32):
    assert array.dtype == np.float32 and array.ndim == 2 and array.shape[0] == height
    assert 0.0 <= array.min() and array.max() <= 1.0
    strokes, background = array[:, array.shape[1] // 2 + 1], array[:, 1]
    assert strokes[12:20].mean() > 0.8, "text is not light"
    assert background.mean() < 0.2, "background is not dark"


@pytest.mark.parametrize("dark_on_light", [True, False])
@pytest.mark.parametrize("mode", ["L", "RGB", "P", "1", "CMYK"])
def test_load_image_modes_and_polarity(mode, dark_on_light):
    image = text_like(dark_on_light, mode=mode)
    array = load_image(image)
    assert array.shape == (32, 96)  # 120 x 40 scaled to height 32
    assert_light_on_dark(array)


def test_load_image_rgba_with_transparent_background():
    pixels = np.zeros((40, 120, 4), dtype=np.uint8)  # transparent black
    pixels[8:32, 56:64] = (0, 0, 0, 255)  # opaque black stroke: invisible without alpha
    assert_light_on_dark(load_image(Image.fromarray(pixels)))


@pytest.mark.parametrize("dark_on_light", [True, False])
def test_load_image_sixteen_bit_from_memory_and_png(tmp_path, dark_on_light):
    eight_bit = np.asarray(text_like(dark_on_light), dtype=np.uint16)
    image = Image.fromarray(eight_bit * 257)
    assert image.mode.startswith("I")
    assert_light_on_dark(load_image(image))
    path = str(tmp_path / "sixteen.png")
    image.save(path)
    assert_light_on_dark(load_image(path))


def test_load_image_height_and_minimum_width():
    assert load_image(text_like(), height=48).shape == (48, 144)
    assert load_image(Image.new("L", (1, 200), 255)).shape == (32, 1)


def test_load_image_flat_image_is_all_background():
    assert not load_image(Image.new("L", (50, 20), 200)).any()


def test_load_image_corrupt_and_truncated_files_name_the_path(tmp_path):
    garbage = tmp_path / "garbage.png"
    garbage.write_bytes(b"this is not an image")
    with pytest.raises(ValueError, match="cannot read image .*garbage.png"):
        load_image(str(garbage))
    buffer = io.BytesIO()
    Image.fromarray(np.random.RandomState(0).randint(0, 255, (64, 256), dtype=np.uint8)).save(
        buffer, format="PNG")
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(buffer.getvalue()[:len(buffer.getvalue()) // 2])
    with pytest.raises(ValueError, match="cannot read image .*truncated.png"):
        load_image(str(truncated))
    with pytest.raises(ValueError, match="missing.png"):
        load_image(str(tmp_path / "missing.png"))


def test_fit_width_squeezes_and_pads():
    array = np.ones((32, 50), dtype=np.float32)
    padded = fit_width(array, 80)
    assert padded.shape == (32, 80) and padded[:, :50].min() == 1 and not padded[:, 50:].any()
    squeezed = fit_width(np.ones((32, 200), dtype=np.float32), 80)
    assert squeezed.shape == (32, 80) and np.allclose(squeezed, 1.0)


def test_make_batch_pads_to_width_multiple():
    arrays = [np.ones((32, w), dtype=np.float32) for w in (10, 37, 5)]
    batch = make_batch(arrays, ["ab", "", "hello"], CHARSET)
    assert batch.images.shape == (3, 32, 40, 1) and batch.images.dtype == np.float32
    assert batch.widths.tolist() == [10, 37, 5] and batch.widths.dtype == np.int32
    assert batch.images[1, :, 37:].max() == 0 and batch.images[1, :, :37].min() == 1
    assert batch.label_lengths.tolist() == [2, 0, 5]
    assert batch.labels.shape == (3, 5) and batch.labels.dtype == np.int32
    assert batch.labels[0].tolist() == CHARSET.encode("ab") + [0, 0, 0]
    assert batch.texts == ["ab", "", "hello"]


def test_make_batch_fixed_width_and_prediction():
    arrays = [np.ones((32, w), dtype=np.float32) for w in (30, 150)]
    batch = make_batch(arrays, None, CHARSET, fixed_width=100)
    assert batch.images.shape == (2, 32, 100, 1)
    assert batch.widths.tolist() == [30, 100]
    assert batch.labels.shape == (2, 1) and batch.label_lengths.tolist() == [0, 0]
    assert batch.texts == ["", ""]
    with pytest.raises(ValueError, match="one height"):
        make_batch([np.ones((32, 4)), np.ones((16, 4))], ["a", "b"], CHARSET)


def test_batch_indices_deterministic_and_cover_each_index_once():
    first = batch_indices(103, 10, shuffle=True, seed=7, epoch=3)
    assert first == batch_indices(103, 10, shuffle=True, seed=7, epoch=3)
    assert sorted(i for batch in first for i in batch) == list(range(103))
    assert [len(b) for b in first] == [10] * 10 + [3]
    assert first != batch_indices(103, 10, shuffle=True, seed=7, epoch=4)
    assert first != batch_indices(103, 10, shuffle=True, seed=8, epoch=3)
    dropped = batch_indices(103, 10, shuffle=True, seed=7, epoch=3, drop_remainder=True)
    assert dropped == first[:10]
    assert batch_indices(5, 2, shuffle=False) == [[0, 1], [2, 3], [4]]


class ListDataset(object):
    """Samples in memory; indices in ``broken`` behave like unreadable images."""

    def __init__(self, count, broken=()):
        self.texts = ["%d" % i for i in range(count)]
        self.broken = set(broken)
        self.unreadable = []

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, index):
        return np.full((32, 8 + index), index / 100.0, dtype=np.float32), self.texts[index]

    def safe_get(self, index):
        if index in self.broken:
            self.unreadable.append(index)
            return None
        return self[index]


def test_batch_loader_prefetch_matches_synchronous_order():
    dataset = ListDataset(23)
    loader = BatchLoader(dataset, CHARSET, 5, shuffle=True, seed=1, prefetch=2)
    prefetched = [b.texts for b in loader.epoch(2)]
    direct = [b.texts for b in iterate_batches(dataset, CHARSET, 5, shuffle=True, seed=1, epoch=2)]
    assert prefetched == direct and len(prefetched) == 5 == len(loader)
    assert sorted(t for texts in prefetched for t in texts) == sorted(dataset.texts)


def test_batch_loader_skips_unreadable_and_keeps_batches_full(caplog):
    dataset = ListDataset(20, broken=(3, 11))
    loader = BatchLoader(dataset, CHARSET, 6, shuffle=False, drop_remainder=True)
    with caplog.at_level(logging.WARNING):
        batches = list(loader.epoch(0))
    assert [len(b.texts) for b in batches] == [6, 6, 6]
    assert sorted(loader.skipped) == [3, 11]
    assert "3" not in batches[0].texts and batches[0].texts[-1] == "6"
    assert "unreadable" in caplog.text


def test_batch_loader_stops_its_thread_when_closed():
    before = threading.active_count()
    batches = BatchLoader(ListDataset(200), CHARSET, 2, prefetch=2).epoch(0)
    next(batches)
    assert threading.active_count() == before + 1
    batches.close()
    assert threading.active_count() == before


def test_batch_loader_reraises_producer_errors():
    class Failing(ListDataset):
        def __getitem__(self, index):
            raise RuntimeError("boom %d" % index)
    with pytest.raises(RuntimeError, match="boom"):
        list(BatchLoader(Failing(4), CHARSET, 2).epoch(0))


@pytest.fixture(scope="module")
def fonts():
    # No skip: the suite needs fonts (Debian: fonts-dejavu-core, which .ci/run installs if missing).
    return find_fonts(chars=CHARSET.chars)


def test_find_fonts_and_split(fonts, tmp_path, monkeypatch):
    assert fonts == sorted(fonts) and all(f.lower().endswith(FONT_EXTENSIONS) for f in fonts)
    assert font_supports(fonts[0], "abc123") and not font_supports(fonts[0], u"中")
    train, heldout = split_fonts(fonts, 0.25, seed=0)
    assert (train, heldout) == split_fonts(list(reversed(fonts)), 0.25, seed=0)
    assert train and heldout and sorted(train + heldout) == sorted(fonts)
    assert split_fonts(fonts[:2]) [0] and split_fonts(fonts[:2])[1]
    with pytest.raises(FileNotFoundError, match="fonts-dejavu-core"):
        find_fonts([str(tmp_path)])
    monkeypatch.setenv("CRNN_FONT_DIRS", os.path.dirname(fonts[0]))
    assert fonts[0] in find_fonts()


def test_generator_is_deterministic_per_seed_and_index(fonts):
    generator = SyntheticTextGenerator(CHARSET, fonts, seed=5, min_len=2, max_len=6)
    image, text = generator.sample(17)
    again_image, again_text = SyntheticTextGenerator(CHARSET, fonts, seed=5, min_len=2,
                                                     max_len=6).sample(17)
    assert text == again_text and np.array_equal(np.asarray(image), np.asarray(again_image))
    other_image, other_text = generator.sample(18)
    assert other_text != text or not np.array_equal(np.asarray(other_image), np.asarray(image))
    texts = [t for _, t in generator.iterate(0, 40)]
    assert all(2 <= len(t) <= 6 and CHARSET.check_label(t) is None for t in texts)
    assert len(set(texts)) > 35
    assert image.mode == "L"
    assert_text_is_visible(load_image(image))


def assert_text_is_visible(array):
    assert array.max() > 0.9 and np.median(array) < 0.5


def test_write_dataset_then_folder_round_trip(fonts, tmp_path):
    generator = SyntheticTextGenerator(CHARSET, fonts, seed=3)
    stats = write_dataset(str(tmp_path), generator, 12, start=100, progress=False)
    assert stats["count"] == 12 and stats["images_per_second"] > 0
    assert os.path.isfile(str(tmp_path / "images" / "000000111.png"))
    assert Charset.from_file(str(tmp_path / "charset.txt")) == CHARSET
    dataset = open_dataset(str(tmp_path))
    assert isinstance(dataset, FolderDataset) and len(dataset) == 12
    assert dataset.texts == [t for _, t in generator.iterate(100, 12)]
    array, text = dataset[0]
    assert array.shape[0] == 32 and text == generator.sample(100)[1]
    assert np.allclose(array, load_image(generator.sample(100)[0]))
    on_the_fly = SyntheticDataset(generator, 12, start=100)
    assert np.allclose(on_the_fly[0][0], array)


def test_labels_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        FolderDataset(str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="labels.txt"):
        FolderDataset(str(tmp_path))
    labels = tmp_path / "labels.txt"
    labels.write_text(u"\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no samples"):
        FolderDataset(str(tmp_path))
    labels.write_text(u"a.png\tfine text\n\nb.png hello\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        FolderDataset(str(tmp_path))
    assert str(labels) in str(error.value) and "line 3" in str(error.value)
    assert "<TAB>" in str(error.value)
    labels.write_text(u"a.png\tx\n\thello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: empty image path"):
        read_labels(str(labels))


def test_folder_filters_labels_and_skips_corrupt_images(tmp_path, caplog):
    text_like().save(str(tmp_path / "good.png"))
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    write_labels(str(tmp_path), [("good.png", "abc"), ("bad.png", "abd"), ("good.png", ""),
                                 ("good.png", "ABC"), ("good.png", "a" * 30),
                                 ("good.png", "two words")])
    with caplog.at_level(logging.WARNING):
        dataset = FolderDataset(str(tmp_path), charset=CHARSET, time_steps=25)
    assert dataset.texts == ["abc", "abd"]
    assert {k: len(v) for k, v in dataset.rejected.items()} == {
        EMPTY_LABEL: 1, OUTSIDE_CHARSET: 2, TOO_LONG: 1}
    assert "dropped 4 of 6 labels" in caplog.text
    with pytest.raises(ValueError, match="bad.png"):
        dataset[1]
    assert dataset.safe_get(1) is None and dataset.unreadable[-1].endswith("bad.png")
    loader = BatchLoader(dataset, CHARSET, 4, shuffle=False)
    batches = list(loader.epoch(0))
    assert [b.texts for b in batches] == [["abc"]] and loader.skipped == [1]


def require_lmdb():
    """lmdb is pinned in both requirement files: a missing package is a failure, not a skip."""
    import lmdb
    return lmdb


def test_lmdb_round_trip_with_one_based_keys(tmp_path):
    lmdb = require_lmdb()
    path = str(tmp_path / "db")
    buffer = io.BytesIO()
    text_like(False).save(buffer, format="JPEG")
    count = write_lmdb(path, [(text_like(), u"hello"), (buffer.getvalue(), u"jpeg"),
                              (text_like(), u"中文")])
    assert count == 3
    env = lmdb.open(path, readonly=True, lock=False)
    with env.begin() as txn:
        assert txn.get(b"num-samples") == b"3"
        assert txn.get(b"label-000000001") == b"hello"
        assert txn.get(b"image-000000003").startswith(b"\x89PNG")
        assert txn.get(b"label-000000000") is None
    env.close()
    dataset = open_dataset(path)
    assert isinstance(dataset, LmdbDataset) and len(dataset) == 3
    assert dataset.texts == [u"hello", u"jpeg", u"中文"]
    for index in range(3):
        assert_light_on_dark(dataset[index][0])
    filtered = LmdbDataset(os.path.join(path, "data.mdb"), charset=CHARSET)
    assert filtered.texts == [u"hello", u"jpeg"] and len(filtered.rejected[OUTSIDE_CHARSET]) == 1
    with pytest.raises(FileExistsError):
        write_lmdb(path, [])


def test_lmdb_corrupt_image_is_skipped_and_counted(tmp_path):
    require_lmdb()
    path = str(tmp_path / "db")
    write_lmdb(path, [(text_like(), "ok"), (b"not an image", "broken"), (text_like(), "fine")])
    dataset = LmdbDataset(path, charset=CHARSET)
    with pytest.raises(ValueError, match="image-000000002"):
        dataset[1]
    loader = BatchLoader(dataset, CHARSET, 8, shuffle=False)
    assert [b.texts for b in loader.epoch(0)] == [["ok", "fine"]]
    assert loader.skipped == [1] and "image-000000002" in dataset.unreadable[0]


def test_open_dataset_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_dataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="labels.txt .*data.mdb"):
        open_dataset(str(tmp_path))


def test_generate_cli_folder_and_lmdb(fonts, tmp_path, capsys):
    out = str(tmp_path / "folder")
    assert generate.main(["--out", out, "--count", "8", "--seed", "4", "--max-len", "5",
                          "--fonts", "heldout", "--quiet"]) == 0
    assert "wrote 8 images" in capsys.readouterr().out
    dataset = FolderDataset(out, charset=CHARSET)
    assert len(dataset) == 8 and all(1 <= len(t) <= 5 for t in dataset.texts)
    assert_text_is_visible(dataset[0][0])
    require_lmdb()
    out = str(tmp_path / "lmdb")
    assert generate.main(["--out", out, "--count", "5", "--format", "lmdb", "--quiet"]) == 0
    expected = [t for _, t in SyntheticTextGenerator(CHARSET, fonts, seed=0).iterate(0, 5)]
    assert open_dataset(out).texts == expected


def test_generate_cli_errors_are_one_line(tmp_path, capsys):
    assert generate.main(["--out", str(tmp_path / "x"), "--font-dir", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no" in err and err.count("\n") == 1
    assert generate.main(["--out", str(tmp_path / "x"), "--font-dir", str(tmp_path)]) == 2
    assert "no .ttf/.otf/.pfb/.woff fonts found" in capsys.readouterr().err
    assert generate.main(["--out", str(tmp_path / "x"), "--min-len", "5", "--max-len", "2"]) == 2
    assert generate.main(["--count", "3"]) == 2  # --out is required
