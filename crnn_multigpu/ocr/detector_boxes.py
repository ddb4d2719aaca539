"""Line boxes and the text detector's maps, both ways, in numpy: the maps a detector learns from
a page's line boxes (``targets``) and the line boxes read back from a predicted probability map
(``boxes_from_map``).

Boxes are axis-aligned rectangles ``(x0, y0, x1, y1)`` in pixel edges (a box ``(0, 0, 2, 1)``
covers the two pixels of the first row), as a page's text layer gives its lines. A pixel belongs
to a box when its centre ``(x + 0.5, y + 0.5)`` lies inside.

The shrink follows DB (Liao et al. 2020): a box of area A and perimeter L is shrunk by
``D = A (1 - r^2) / L`` on every side, so neighbouring lines that touch keep their kernels
apart. DB grows a found kernel back by a fixed ratio (1.5), a heuristic for polygons; for a
rectangle the shrink can be undone exactly (``unclip``: the positive root of a quadratic), so a
kernel found exactly gives back its line exactly.
"""
import numpy as np

from crnn_multigpu.datasets.ink_runs import runs_of

__all__ = ["SHRINK_RATIO", "shrink_distance", "shrink", "unclip", "targets", "components",
           "boxes_from_map", "match_boxes"]

# DB's default is 0.4 (a kernel a sixth of a line's height). Page lines are thin and each
# pixel of error in a kernel's height grows by h / h' in the unclipped box; 0.6 keeps a third
# of the height (error x2.8 instead of x6) and still leaves a third of a line's height between
# the kernels of lines that touch.
SHRINK_RATIO = 0.6
# DB's threshold map runs from 0.3 (far from a border) to 0.7 (on it).
THRESHOLD_LOW, THRESHOLD_HIGH = 0.3, 0.7


def shrink_distance(width, height, ratio=SHRINK_RATIO):
    """DB's shrink offset ``A (1 - r^2) / L`` of a ``width`` x ``height`` rectangle."""
    width, height = np.asarray(width, float), np.asarray(height, float)
    return width * height * (1.0 - ratio ** 2) / np.maximum(2.0 * (width + height), 1e-12)


def shrink(box, ratio=SHRINK_RATIO):
    """``box`` shrunk by its shrink offset on every side (may come out empty for a tiny box)."""
    x0, y0, x1, y1 = (float(v) for v in box)
    d = float(shrink_distance(x1 - x0, y1 - y0, ratio))
    return (x0 + d, y0 + d, x1 - d, y1 - d)


def unclip(box, ratio=SHRINK_RATIO):
    """The rectangle that ``shrink`` turns into ``box``: with a = 1 - r^2, s = w' + h' and
    p = w' h' of the kernel, the offset D solves a (w' + 2D)(h' + 2D) = D * 2(s + 4D) (area
    times a = offset times perimeter), i.e. (8 - 4a) D^2 + (2 - 2a) s D - a p = 0, whose
    positive root is taken."""
    x0, y0, x1, y1 = (float(v) for v in box)
    a, s, p = 1.0 - ratio ** 2, (x1 - x0) + (y1 - y0), (x1 - x0) * (y1 - y0)
    qa, qb = 8.0 - 4.0 * a, (2.0 - 2.0 * a) * s
    d = (-qb + np.sqrt(qb * qb + 4.0 * qa * a * p)) / (2.0 * qa)
    return (x0 - d, y0 - d, x1 + d, y1 + d)


def _pixel_span(low, high, size):
    """Indices of the pixels whose centres lie in [low, high), clipped to ``[0, size)``."""
    first = int(np.clip(np.ceil(low - 0.5), 0, size))
    last = int(np.clip(np.ceil(high - 0.5), first, size))
    return first, last


def targets(boxes, height, width, ratio=SHRINK_RATIO, min_kernel=1.0, ignored=()):
    """The four maps a detector learns from for an image ``height`` x ``width`` with the line
    ``boxes``, each float32 [height, width]:

    ``prob``: 1 on the shrunk boxes (the kernels); ``prob_mask``: 0 over boxes whose kernel is
    thinner than ``min_kernel`` pixels and over the ``ignored`` boxes (lines cut by a crop's
    edge): neither text nor background to learn from; else 1;
    ``thresh``: DB's threshold map, 0.7 on a box's border falling to 0.3 at the offset ``D``
    from it (inside and out), 0.3 elsewhere; ``thresh_mask``: 1 on the boxes grown by ``D``."""
    prob = np.zeros([height, width], np.float32)
    prob_mask = np.ones([height, width], np.float32)
    closeness = np.zeros([height, width], np.float32)
    thresh_mask = np.zeros([height, width], np.float32)
    for box in boxes:
        x0, y0, x1, y1 = (float(v) for v in box)
        if x1 <= x0 or y1 <= y0:
            continue
        d = float(shrink_distance(x1 - x0, y1 - y0, ratio))
        kx0, ky0, kx1, ky1 = x0 + d, y0 + d, x1 - d, y1 - d
        if min(kx1 - kx0, ky1 - ky0) < min_kernel:
            ignored = list(ignored) + [(x0, y0, x1, y1)]
            continue
        c0, c1 = _pixel_span(kx0, kx1, width)
        r0, r1 = _pixel_span(ky0, ky1, height)
        prob[r0:r1, c0:c1] = 1.0
        c0, c1 = _pixel_span(x0 - d, x1 + d, width)
        r0, r1 = _pixel_span(y0 - d, y1 + d, height)
        if c1 <= c0 or r1 <= r0:
            continue
        xs = np.arange(c0, c1) + 0.5
        ys = np.arange(r0, r1)[:, None] + 0.5
        # Distance from each pixel centre to the rectangle's border, inside and outside.
        dx = np.maximum(x0 - xs, xs - x1)
        dy = np.maximum(y0 - ys, ys - y1)
        outside = np.hypot(np.maximum(dx, 0.0), np.maximum(dy, 0.0))
        inside = -np.maximum(dx, dy)
        distance = np.where((dx < 0) & (dy < 0), inside, outside)
        near = np.clip(1.0 - distance / max(d, 1e-6), 0.0, 1.0).astype(np.float32)
        closeness[r0:r1, c0:c1] = np.maximum(closeness[r0:r1, c0:c1], near)
        thresh_mask[r0:r1, c0:c1] = 1.0
    for x0, y0, x1, y1 in ignored:
        c0, c1 = _pixel_span(x0, x1, width)
        r0, r1 = _pixel_span(y0, y1, height)
        prob_mask[r0:r1, c0:c1] = 0.0
    thresh = THRESHOLD_LOW + (THRESHOLD_HIGH - THRESHOLD_LOW) * closeness
    return dict(prob=prob, prob_mask=prob_mask, thresh=thresh.astype(np.float32),
                thresh_mask=thresh_mask)


def components(mask, values=None):
    """The 4-connected components of the boolean ``mask`` [H, W], as rows
    ``(x0, y0, x1, y1, pixels, value_sum)``: each component's bounding box in pixel edges, its
    size and the sum of ``values`` (default: ones) over it. Runs of a row are joined to the
    runs of the row above they touch (union-find), so the cost grows with the runs, not the
    pixels."""
    mask = np.asarray(mask, bool)
    values = np.ones(mask.shape, float) if values is None else np.asarray(values, float)
    parent, pieces, previous = [], [], []
    for y in range(mask.shape[0]):
        sums = np.cumsum(np.concatenate([[0.0], values[y]]))
        current, j = [], 0
        for start, stop in runs_of(mask[y]):
            index = len(parent)
            parent.append(index)
            pieces.append((y, start, stop, sums[stop] - sums[start]))
            current.append((start, stop, index))
            while j < len(previous) and previous[j][1] <= start:
                j += 1
            k = j
            while k < len(previous) and previous[k][0] < stop:
                _join(parent, index, previous[k][2])
                k += 1
        previous = current
    found = {}
    for index, (y, start, stop, total) in enumerate(pieces):
        root = _root(parent, index)
        x0, y0, x1, y1, pixels, value_sum = found.get(root, (start, y, stop, y + 1, 0, 0.0))
        found[root] = (min(x0, start), y0, max(x1, stop), y + 1, pixels + stop - start,
                       value_sum + total)
    return sorted(found.values(), key=lambda row: (row[1], row[0]))


def _root(parent, index):
    while parent[index] != index:
        parent[index] = parent[parent[index]]
        index = parent[index]
    return index


def _join(parent, a, b):
    ra, rb = _root(parent, a), _root(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


def boxes_from_map(prob, threshold=0.3, min_score=0.6, min_pixels=3, ratio=SHRINK_RATIO,
                   scale=1.0):
    """Line boxes read from a probability map ``prob`` [H, W]: its pixels above ``threshold``
    joined into components, each kept when it has ``min_pixels`` pixels and a mean probability
    of at least ``min_score``, grown back by ``unclip`` and multiplied by ``scale`` (image pixels
    per map pixel). Returns float [N, 5] rows ``(x0, y0, x1, y1, score)``, top to bottom."""
    prob = np.asarray(prob, float)
    found = []
    for x0, y0, x1, y1, pixels, total in components(prob > threshold, prob):
        score = total / pixels
        if pixels >= min_pixels and score >= min_score:
            found.append([v * scale for v in unclip((x0, y0, x1, y1), ratio)] + [score])
    return np.asarray(found, float).reshape([-1, 5])


def _iou(a, b):
    """Intersection over union of two boxes ``(x0, y0, x1, y1)``."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union


def match_boxes(found, truth, min_iou=0.5):
    """How many of the ``found`` boxes match a ``truth`` box one to one at ``min_iou``
    (greedily, the closest pairs first): ``(matched, len(found), len(truth))``, from which
    precision (matched / found) and recall (matched / truth) follow, as ICDAR counts them."""
    pairs = sorted(((_iou(f, t), i, j) for i, f in enumerate(found) for j, t in enumerate(truth)),
                   reverse=True)
    used_found, used_truth = set(), set()
    for iou, i, j in pairs:
        if iou < min_iou:
            break
        if i not in used_found and j not in used_truth:
            used_found.add(i)
            used_truth.add(j)
    return len(used_found), len(found), len(truth)
