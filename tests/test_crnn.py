import collections
import itertools

import numpy as np
import pytest

from assertions import levenshtein
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.crnn import CRNN

TINY = dict(channels=(4, 4, 8, 8, 8, 8, 8), lstm_units=8)
Batch = collections.namedtuple("Batch", "images widths labels label_lengths texts")


@pytest.fixture
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def _session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


def _batch(n, width, labels, widths=None, seed=0):
    rng = np.random.RandomState(seed)
    lengths = np.array([len(l) for l in labels], np.int32)
    dense = np.zeros([n, max(1, lengths.max())], np.int32)
    for i, l in enumerate(labels):
        dense[i, :len(l)] = l
    widths = np.full(n, width, np.int32) if widths is None else np.asarray(widths, np.int32)
    images = rng.rand(n, 32, width, 1).astype(np.float32)
    for i, w in enumerate(widths):
        images[i, :, w:] = 0.0
    return Batch(images, widths, dense, lengths, None)


def test_default_logits_shape_and_variables(graph, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("tf.Variable used")
    monkeypatch.setattr(tf, "Variable", forbidden)
    m = CRNN()
    assert m.logits.shape.as_list() == [None, None, 37]
    names = [v.op.name for v in tf.global_variables()]
    assert names and all(n.startswith("crnn/") for n in names)
    assert "crnn/conv1/kernel" in names
    assert "crnn/bn7/moving_variance" in names
    assert "crnn/logits/kernel" in names
    # 2 moving-average updates per BN layer, one BN layer per conv.
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 14
    assert all(u.name.startswith("crnn/bn") for u in updates)
    # Building a second tower under reuse creates no variable at all.
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        CRNN()
    assert [v.op.name for v in tf.global_variables()] == names
    with _session() as sess:
        for width, steps in [(100, 25), (128, 32)]:
            b = _batch(2, width, [[1, 2], [3]])
            logits, n = sess.run([m.logits, m.batch_size], m.feed_dict(b))
            assert logits.shape == (steps, 2, 37) == (CRNN.time_steps(width), 2, 37)
            assert n == 2


def test_paper_config():
    assert CRNN.PAPER == dict(channels=(64, 128, 256, 256, 512, 512, 512), lstm_units=256)
    assert CRNN.MEDIUM == dict(channels=(32, 64, 128, 128, 256, 256, 256), lstm_units=128)
    assert CRNN.time_steps(100) == 25 and CRNN.time_steps(128) == 32


def test_seq_lengths(graph):
    m = CRNN(**TINY)
    b = _batch(5, 100, [[1]] * 5, widths=[100, 37, 4, 0, 100])
    b = b._replace(widths=np.array([100, 37, 4, 0, 400], np.int32))
    with _session() as sess:
        assert sess.run(m.seq_lengths, m.feed_dict(b)).tolist() == [25, 10, 1, 1, 25]


def test_loss_error_predict(graph):
    m = CRNN(num_classes=6, **TINY)
    b = _batch(3, 40, [[0, 1, 2], [4, 4], [3]], widths=[40, 24, 12])
    with _session() as sess:
        loss, err, pred, logp, lp, sl, (ind, val, shape) = sess.run(
            [m.loss, m.error, m.predict, m.log_prob, m.log_probs_per_frame, m.seq_lengths,
             m.decoded], m.feed_dict(b, training=False))
    assert np.ndim(loss) == 0 and np.isfinite(loss) and loss > 0
    assert 0.0 <= err <= 1.0
    # Reference: mean over examples of min(1, levenshtein(pred, label) / len(label)).
    ref_err = np.mean([min(1.0, levenshtein([v for v in p if v >= 0], l) / len(l))
                       for p, l in zip(pred.tolist(), [[0, 1, 2], [4, 4], [3]])])
    np.testing.assert_allclose(err, ref_err, rtol=1e-5)
    assert pred.dtype == np.int32 and pred.shape[0] == 3 and pred.shape[1] <= 10
    # Reference greedy decode: best class per valid frame, merge repeats, drop blank (5).
    for i in range(3):
        best = lp[:sl[i], i].argmax(axis=1)
        ref = [int(c) for j, c in enumerate(best) if c != 5 and (j == 0 or c != best[j - 1])]
        assert pred[i].tolist() == ref + [-1] * (pred.shape[1] - len(ref))
        np.testing.assert_allclose(logp[i], lp[:sl[i], i].max(axis=1).sum(), rtol=1e-4)
    assert np.all(pred < 5)
    assert val.tolist() == [v for v in pred.ravel().tolist() if v >= 0]


def test_infeasible_labels_give_finite_loss_and_gradients(graph):
    m = CRNN(num_classes=6, **TINY)
    grads = tf.gradients(m.loss, tf.trainable_variables())
    # width 16 -> T = 4: a 6-long label is longer than T (ignored by CTC), and
    # "1 1 1 1" fits in length but needs 7 frames with its blanks (inf -> 0).
    b = _batch(3, 16, [[0, 1, 2, 3, 4, 0], [1, 1, 1, 1], [2]])
    with _session() as sess:
        loss, bad, per, gv = sess.run([m.loss, m.num_infeasible, m.per_example_loss, grads],
                                      m.feed_dict(b))
    assert np.isfinite(loss) and loss > 0
    assert bad == 1 and per[0] == 0.0 and per[1] == 0.0 and per[2] > 0
    assert all(np.all(np.isfinite(g)) for g in gv)


def _labelling_log_probs(frames, blank):
    """Exact ``log p(labelling | frames)`` of every labelling of ``frames`` [T, C] (log
    probabilities): each of the C**T paths collapsed (repeats merged, blanks dropped) and
    the paths of a labelling summed."""
    steps, classes = frames.shape
    paths = np.array(list(itertools.product(range(classes), repeat=steps)))
    scores = frames[np.arange(steps), paths].sum(axis=1)
    exact = {}
    for path, score in zip(paths.tolist(), scores):
        labelling = tuple(c for j, c in enumerate(path) if c != blank and (j == 0 or c != path[j - 1]))
        exact[labelling] = np.logaddexp(exact.get(labelling, -np.inf), score)
    return exact


def _rows(dense):
    """Id rows padded with -1 -> tuples; the padding only on the right."""
    rows = []
    for row in dense:
        k = int((row >= 0).sum())
        assert np.all(row[:k] >= 0) and np.all(row[k:] == -1), row
        rows.append(tuple(int(v) for v in row[:k]))
    return rows


def test_beam_search_finds_the_most_probable_labelling(graph):
    # Widths 16 and 12: 4 and 3 frames of 6 classes, few enough to score every labelling.
    m = CRNN(num_classes=6, beam_width=3, **TINY)
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
        # Wider than the 781 prefixes of up to 4 labels of 5: this beam prunes nothing.
        wide = CRNN(num_classes=6, beam_width=1000, **TINY)
    b = _batch(2, 16, [[1], [2]], widths=[16, 12])
    feed = m.feed_dict(b, False)
    feed.update(wide.feed_dict(b, False))
    with _session() as sess:
        pred, logp, wide_pred, wide_logp, lp, sl = sess.run(
            [m.predict, m.log_prob, wide.predict, wide.log_prob, m.log_probs_per_frame,
             m.seq_lengths], feed)
    assert sl.tolist() == [4, 3] and pred.shape[0] == 2 and np.all(pred < 5)
    for i, (narrow, found) in enumerate(zip(_rows(pred), _rows(wide_pred))):
        exact = _labelling_log_probs(lp[:sl[i], i], blank=5)
        # Unpruned, it reads the most probable labelling, scored over all its alignments.
        np.testing.assert_allclose(exact[found], max(exact.values()), rtol=1e-5)
        np.testing.assert_allclose(wide_logp[i], exact[found], rtol=1e-4)
        # A narrow beam scores its reading over the alignments it kept: never above the truth.
        assert logp[i] <= exact[narrow] + 1e-4 * abs(exact[narrow]), (logp[i], exact[narrow])
        assert logp[i] <= wide_logp[i] + 1e-4 * abs(wide_logp[i])


def test_beam_search_reads_as_greedy_on_peaked_frames(graph):
    # The logits layer refitted so that each valid frame's best class is the one of PATHS, by
    # 40 nats over the next: one path carries all the probability, so the beam's reading is
    # the greedy one, that path collapsed (a repeat across a blank kept, "1 1" merged), and its
    # score the path's log probability. Blank is 5.
    paths = [[1, 1, 5, 1, 2, 5, 5, 2], [3, 5, 3, 0, 0]]
    m = CRNN(num_classes=6, beam_width=3, **TINY)
    b = _batch(2, 32, [[1], [2]], widths=[32, 20])
    fd = m.feed_dict(b, False)
    kernel = tf.global_variables("crnn/logits/kernel")[0]
    features = [op for op in tf.get_default_graph().get_operations()
                if op.name.startswith("crnn/logits/") and op.type == "MatMul"][0].inputs[0]
    with _session() as sess:
        flat, sl = sess.run([features, m.seq_lengths], fd)  # [T * B, units], time major
        assert sl.tolist() == [len(path) for path in paths]
        rows = [t * 2 + i for i, path in enumerate(paths) for t in range(len(path))]
        wanted = -np.ones([len(rows), 6], np.float32)
        wanted[np.arange(len(rows)), [c for path in paths for c in path]] = 1.0
        fitted = np.linalg.lstsq(flat[rows], wanted, rcond=None)[0]
        top = np.sort(flat[rows].dot(fitted), axis=1)
        kernel.load((40.0 / (top[:, -1] - top[:, -2]).min() * fitted).astype(np.float32), sess)
        pred, logp, greedy, lp = sess.run([m.predict, m.log_prob, m.decoded,
                                           m.log_probs_per_frame], fd)
    assert [lp[:n, i].argmax(axis=1).tolist() for i, n in enumerate(sl)] == paths
    read = [tuple(c for j, c in enumerate(path) if c != 5 and (j == 0 or c != path[j - 1]))
            for path in paths]
    greedy_rows = [tuple(int(v) for (row, _), v in zip(greedy.indices, greedy.values) if row == i)
                   for i in range(2)]
    assert _rows(pred) == greedy_rows == read
    np.testing.assert_allclose(logp, [lp[:n, i].max(axis=1).sum() for i, n in enumerate(sl)],
                               rtol=1e-4, atol=1e-4)


def test_feed_dict_for_prediction_without_labels(graph):
    m = CRNN(**TINY)
    images = np.random.RandomState(0).rand(3, 32, 24, 1).astype(np.float32)
    b = Batch(images, np.array([24, 20, 8]), np.zeros([3, 1], np.int32), np.zeros(3, np.int32),
              ["", "", ""])
    fd = m.feed_dict(b, training=False)
    assert fd[m.training] is False and m.feed_dict(b)[m.training] is True
    with _session() as sess:
        pred, logp = sess.run([m.predict, m.log_prob], fd)
        fd_none = m.feed_dict(b._replace(labels=None, label_lengths=None), training=False)
        pred2 = sess.run(m.predict, fd_none)
    assert pred.shape[0] == 3 and pred.shape[1] <= 6 and logp.shape == (3,)
    np.testing.assert_array_equal(pred, pred2)




def _synthetic_batch():
    """4 images of width 32 (T = 8); class k = a 6-px block with k+1 bright bars."""
    labels = [[0], [1, 2], [2, 0, 1], [1, 1]]
    images = np.zeros([4, 32, 32, 1], np.float32)
    for i, lab in enumerate(labels):
        for j, c in enumerate(lab):
            x0 = 2 + 10 * j
            for bar in range(c + 1):
                images[i, 6:26, x0 + 2 * bar, 0] = 1.0
    return _batch(4, 32, labels)._replace(images=images)


def test_few_adam_steps_reduce_loss(graph):
    tf.set_random_seed(0)
    m = CRNN(num_classes=4, **TINY)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(1e-3).minimize(m.loss)
    fd = m.feed_dict(_synthetic_batch(), training=True)
    with _session() as sess:
        first = sess.run(m.loss, fd)
        mm0 = sess.run(tf.global_variables("crnn/bn1/moving_mean")[0])
        for _ in range(100):
            sess.run(train, fd)
        last = sess.run(m.loss, fd)
        mm1 = sess.run(tf.global_variables("crnn/bn1/moving_mean")[0])
    print("loss %.3f -> %.3f" % (first, last))
    assert np.isfinite(first) and last < 0.5 * first, (first, last)
    assert np.abs(mm1 - mm0).max() > 0  # BN updates ran with the train op


def test_inputs_are_placeholder_defaults(graph):
    b = _batch(2, 24, [[1, 2], [3]], widths=[24, 16])
    inputs = {"images": tf.constant(b.images), "widths": tf.constant(b.widths),
              "labels": tf.constant(b.labels), "label_lengths": tf.constant(b.label_lengths)}
    m = CRNN(num_classes=6, inputs=inputs, **TINY)
    with _session() as sess:
        fed = sess.run([m.loss, m.predict], m.feed_dict(b, training=False))
        free = sess.run([m.loss, m.predict])
    np.testing.assert_allclose(free[0], fed[0], rtol=1e-5)
    np.testing.assert_array_equal(free[1], fed[1])
