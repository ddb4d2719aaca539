"""The numpy CTC decoders (crnn_multigpu.ocr.ctc) read as TensorFlow's decoders: the same ids and
log probability, greedy and beam, for readers that run the model outside TensorFlow."""
import numpy as np
import pytest

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.ctc import beam_decode, greedy_decode


def random_frames(seed, frames, classes, scale, normalised):
    """Seeded scores [frames, classes]: log-probabilities when ``normalised``, else logits."""
    rng = np.random.RandomState(seed)
    scores = rng.randn(frames, classes) * scale
    if normalised:
        scores -= np.logaddexp.reduce(scores, axis=1, keepdims=True)
    return scores.astype(np.float32)


# Flat frames keep many prefixes alive (the beam's every rule is exercised); sharp ones are a
# model's; logits (not normalised) are what TensorFlow's decoders take too.
@pytest.mark.parametrize("classes, scale, normalised", [(6, 3.0, True), (6, 3.0, False),
                                                        (30, 5.0, True), (12, 1.0, False)])
def test_numpy_decoders_read_as_tensorflows(classes, scale, normalised, make_session):
    batch = [random_frames(seed, 8 + seed % 17, classes, scale, normalised) for seed in range(24)]
    width = max(len(frames) for frames in batch)
    inputs = np.zeros([width, len(batch), classes], np.float32)
    for index, frames in enumerate(batch):
        inputs[:len(frames), index] = frames
    lengths = [len(frames) for frames in batch]
    (greedy,), negative = tf.nn.ctc_greedy_decoder(inputs, lengths, merge_repeated=True)
    fetches = [tf.sparse_tensor_to_dense(greedy, default_value=-1), -negative[:, 0]]
    for beam_width in (2, 5, 16):
        (best,), log_prob = tf.nn.ctc_beam_search_decoder(
            inputs, lengths, beam_width=beam_width, top_paths=1, merge_repeated=False)
        fetches += [tf.sparse_tensor_to_dense(best, default_value=-1), log_prob[:, 0]]
    values = make_session().run(fetches)
    decoders = [greedy_decode] + [lambda f, w=w: beam_decode(f, w) for w in (2, 5, 16)]
    for decode, ids, log_probs in zip(decoders, values[::2], values[1::2]):
        for frames, row, log_prob in zip(batch, ids, log_probs):
            got_ids, got_log_prob = decode(frames)
            assert got_ids == [int(i) for i in row if i >= 0]
            assert got_log_prob == pytest.approx(log_prob, abs=1e-4)
