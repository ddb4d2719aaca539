"""The DB text detector (ocr.detector) and its boxes (ocr.detector_boxes): the maps it learns
from, the post-process back to line boxes, training through MultiGpuModel on two towers, and
two towers' gradients equal to one model's on the whole batch."""
import math
import zlib

import numpy as np
import pytest

from assertions import load_values
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr import detector_boxes as boxes_of
from crnn_multigpu.ocr.detector import Detector, make_batch
from crnn_multigpu.wrapper.devices import cpu_devices


def synthetic_page(rng, height=64, width=128):
    """A grey page [height, width] of text-like lines (dark glyph blocks on grainy paper) and
    their boxes: each box spans its line's height and its first to last glyph."""
    image = (255 - rng.randint(0, 60, [height, width])).astype(np.uint8)
    boxes, y = [], int(rng.randint(2, 8))
    while True:
        line = int(rng.randint(9, 15))
        if y + line > height - 2:
            return image, boxes
        x, end = int(rng.randint(0, 30)), int(rng.randint(60, width))
        first = x
        while x < end:
            glyph = int(rng.randint(2, 6))
            image[y + 2:y + line - 2, x:min(x + glyph, end)] = rng.randint(0, 80)
            last = min(x + glyph, end)
            x += glyph + int(rng.randint(1, 3))
        boxes.append((first, y, last, y + line))
        y += line + int(rng.randint(4, 10))


def synthetic_batch(n, seed):
    rng = np.random.RandomState(seed)
    pages = [synthetic_page(rng) for _ in range(n)]
    return make_batch([p[0] for p in pages], [p[1] for p in pages])


# ------------------------------------------------------------------ boxes and maps
def flood_components(mask):
    """Bounding boxes and sizes of the 4-connected components, found pixel by pixel (an
    independent count to check the run-based union-find against)."""
    seen = np.zeros(mask.shape, bool)
    found = []
    for y, x in zip(*np.nonzero(mask)):
        if seen[y, x]:
            continue
        stack, pixels = [(y, x)], []
        seen[y, x] = True
        while stack:
            cy, cx = stack.pop()
            pixels.append((cy, cx))
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if (0 <= ny < mask.shape[0] and 0 <= nx < mask.shape[1] and mask[ny, nx] and
                        not seen[ny, nx]):
                    seen[ny, nx] = True
                    stack.append((ny, nx))
        ys, xs = np.array(pixels).T
        found.append((xs.min(), ys.min(), xs.max() + 1, ys.max() + 1, len(pixels)))
    return sorted(found, key=lambda row: (row[1], row[0]))


@pytest.mark.parametrize("seed", range(5))
def test_components_match_a_pixel_by_pixel_flood_fill(seed):
    mask = np.random.RandomState(seed).rand(40, 50) < 0.45  # near percolation: odd shapes
    got = [tuple(row[:5]) for row in boxes_of.components(mask)]
    assert got == flood_components(mask)
    assert sum(row[4] for row in got) == mask.sum()


def test_unclip_undoes_shrink():
    rng = np.random.RandomState(0)
    for _ in range(200):
        x0, y0 = rng.uniform(0, 100, 2)
        box = (x0, y0, x0 + rng.uniform(2, 400), y0 + rng.uniform(2, 60))
        np.testing.assert_allclose(boxes_of.unclip(boxes_of.shrink(box)), box, atol=1e-9)


def test_the_post_process_recovers_known_rectangles_exactly():
    # Kernels on whole pixels, the lines they come from by unclip: the map built from those
    # lines must hold exactly these kernels, and the post-process must give the lines back.
    kernels = [(5, 4, 90, 8), (12, 20, 60, 23), (70, 20, 140, 26), (3, 40, 30, 41),
               (40, 40, 150, 44)]
    lines = [boxes_of.unclip(k) for k in kernels]
    maps = boxes_of.targets(lines, 60, 160)
    found = boxes_of.boxes_from_map(maps["prob"], min_pixels=1)
    np.testing.assert_allclose(found[:, :4], lines, atol=1e-6)
    np.testing.assert_array_equal(found[:, 4], 1.0)
    assert maps["prob"].sum() == sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in kernels)
    scaled = boxes_of.boxes_from_map(maps["prob"], min_pixels=1, scale=2.5)
    np.testing.assert_allclose(scaled[:, :4], 2.5 * np.asarray(lines), atol=1e-6)


def test_whole_pixel_lines_come_back_within_the_kernels_quantisation():
    # A kernel edge found on whole pixels is off by at most half a pixel; unclip then moves
    # each edge of the line by at most that plus the change of its offset D, bounded here by
    # the offsets of the kernels one pixel smaller and larger.
    rng = np.random.RandomState(1)
    lines = []
    for row in range(6):
        x0 = int(rng.randint(0, 40))
        lines.append((x0, 4 + 18 * row, x0 + int(rng.randint(30, 200)),
                      4 + 18 * row + int(rng.randint(8, 16))))
    found = boxes_of.boxes_from_map(boxes_of.targets(lines, 120, 260)["prob"])
    assert len(found) == len(lines)
    for line, got in zip(lines, found):
        kernel = boxes_of.shrink(line)
        width, height = kernel[2] - kernel[0], kernel[3] - kernel[1]
        offset = lambda w, h: boxes_of.unclip((0, 0, w, h))[2] - w  # noqa: E731
        bound = 0.5 + max(abs(offset(width + s, height + s) - offset(width, height))
                          for s in (-1.0, 1.0))
        assert np.abs(got[:4] - np.asarray(line)).max() <= bound, (line, got, bound)


def test_target_maps():
    line = (10.0, 10.0, 110.0, 26.0)
    maps = boxes_of.targets([line, (120, 5, 121, 6)], 40, 130)
    d = float(boxes_of.shrink_distance(100, 16))
    ys, xs = np.nonzero(maps["prob"])
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == tuple(
        int(math.ceil(v - 0.5)) for v in boxes_of.shrink(line))
    assert maps["thresh"].min() == pytest.approx(boxes_of.THRESHOLD_LOW)
    # Highest on the border (pixel centres half a pixel from it), 0.3 beyond D outside it.
    assert maps["thresh"][10, 50] == pytest.approx(0.3 + 0.4 * (1 - 0.5 / d), abs=1e-6)
    assert maps["thresh_mask"][int(26 + d + 1), 50] == 0 and maps["thresh_mask"][27, 50] == 1
    # Text pixels are exactly those whose centres lie in a kernel (checked by brute force).
    rng = np.random.RandomState(2)
    ys, xs = np.mgrid[0:40, 0:130] + 0.5
    for x0, y0 in [(3.3, 2.2), (7.9, 20.6)]:
        box = (x0, y0, x0 + rng.uniform(40, 110), y0 + rng.uniform(9, 16))
        kx0, ky0, kx1, ky1 = boxes_of.shrink(box)
        want = (xs >= kx0) & (xs < kx1) & (ys >= ky0) & (ys < ky1)
        np.testing.assert_array_equal(boxes_of.targets([box], 40, 130)["prob"] == 1, want)
    # The one-pixel box has no kernel: masked out, neither text nor background.
    assert maps["prob_mask"][5, 120] == 0 and maps["prob_mask"].sum() == 40 * 130 - 1


def test_ignored_boxes_are_neither_text_nor_background():
    maps = boxes_of.targets([(10, 10, 100, 26)], 40, 130, ignored=[(0, 30, 130, 40)])
    assert maps["prob_mask"][30:40].sum() == 0 and maps["prob_mask"][:30].min() == 1
    assert maps["prob"][30:40].sum() == 0


def test_boxes_are_matched_one_to_one_at_the_iou_bound():
    truth = [(0, 0, 100, 10), (0, 20, 100, 30), (0, 40, 50, 50)]
    found = [(0, 0, 100, 10), (2, 0, 100, 10), (0, 21, 100, 31), (0, 40, 100, 50)]
    # The second box repeats the first line (matched once); the last covers twice its line:
    # IoU 0.5 exactly, which counts; the third is off by a pixel (IoU 9/11).
    assert boxes_of.match_boxes(found, truth) == (3, 4, 3)
    assert boxes_of.match_boxes(found, truth, min_iou=0.85) == (1, 4, 3)
    assert boxes_of.match_boxes([], truth) == (0, 0, 3)


# ------------------------------------------------------------------ the model
def test_make_batch_refuses_mismatched_boxes():
    with pytest.raises(ValueError, match="one box list per image"):
        make_batch(np.zeros([2, 16, 16]), [[]])


def test_loss_falls_below_what_any_constant_map_can_reach_on_two_towers(make_session):
    # Balanced cross-entropy of a constant probability p is (-ln p - ln(1 - p)) / 2 >= ln 2
    # per image: a net that ignored its input could not go below ln 2. Half of it means the
    # two towers learned where the lines are.
    batch = synthetic_batch(8, seed=0)
    tf.set_random_seed(0)
    wrapper = MultiGpuModel(Detector, devices=cpu_devices(2),
                            optimizer=tf.train.AdamOptimizer(0.01), **Detector.TINY)
    prob_loss = tf.add_n([m.prob_loss * tf.cast(m.batch_size, tf.float32)
                          for m in wrapper.models]) / 8.0
    session = make_session()
    session.run(tf.global_variables_initializer())
    feed = wrapper.feed_dict(wrapper.split(batch))
    first = session.run(wrapper.loss, feed)
    for _ in range(80):
        session.run(wrapper.objective, feed)
    last, last_prob = session.run([wrapper.loss, prob_loss], feed)
    assert last_prob < 0.5 * math.log(2.0), (first, last, last_prob)
    assert last < 0.5 * first
    probability = session.run(wrapper.models[0].probability, wrapper.models[0].feed_dict(
        {k: v[:1] for k, v in batch.items()}, training=False))
    found = boxes_of.boxes_from_map(probability[0])
    assert len(found) >= 1


def initialise(session):
    """The same weights in every graph (the initialisers' seeds depend on the op order)."""
    session.run(tf.global_variables_initializer())
    load_values(session, dict((v.op.name, np.random.RandomState(
        zlib.crc32(v.op.name.encode())).uniform(-0.3, 0.3, v.shape.as_list()).astype(np.float32))
        for v in tf.trainable_variables()))


def plain_gradients(make_session, batch):
    graph = tf.Graph()
    with graph.as_default():
        model = Detector(**Detector.TINY)
        variables = tf.trainable_variables()
        grads = tf.gradients(model.loss, variables)
        session = make_session(graph)
        initialise(session)
        loss, values = session.run([model.loss, grads], model.feed_dict(batch))
        return loss, dict(zip((v.op.name for v in variables), values))


def tower_gradients(make_session, batch, sync_bn):
    graph = tf.Graph()
    with graph.as_default():
        wrapper = MultiGpuModel(Detector, devices=cpu_devices(2), sync_bn=sync_bn,
                                optimizer=tf.train.GradientDescentOptimizer(0.1), **Detector.TINY)
        session = make_session(graph)
        initialise(session)
        shards = [{k: v[:3] for k, v in batch.items()}, {k: v[3:] for k, v in batch.items()}]
        loss, values = session.run([wrapper.loss, [g for g, _ in wrapper.grads_and_vars]],
                                   wrapper.feed_dict(shards))
        return loss, dict(zip((v.op.name for _, v in wrapper.grads_and_vars), values))


def test_two_towers_give_one_models_gradients_on_the_same_batch(make_session):
    # Shards of 3 and 2: a mean of shard means would be off. The paper's grain matters: on a
    # flat white page some first-stage channels are nearly constant, and their tiny variances
    # magnify the float32 rounding of the two ways (fused, and summed across towers) of taking
    # the same moments, to 2 % in those layers' gradients, while every other layer meets 1e-4.
    batch = synthetic_batch(5, seed=3)
    want_loss, want = plain_gradients(make_session, batch)
    loss, got = tower_gradients(make_session, batch, sync_bn=True)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    assert sorted(got) == sorted(want) and len(want) > 20
    for name in want:
        scale = np.abs(want[name]).max()
        np.testing.assert_allclose(got[name], want[name], rtol=1e-3, atol=1e-4 * scale + 1e-7,
                                   err_msg=name)
    # Without synchronised batch norm each tower normalises its own shard: visibly different.
    _, unsynced = tower_gradients(make_session, batch, sync_bn=False)
    worst = max(np.abs(unsynced[n] - want[n]).max() / (np.abs(want[n]).max() + 1e-12)
                for n in want)
    assert worst > 1e-2
