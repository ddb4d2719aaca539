"""Single-device inference from a training run: the plain CRNN, restored from a checkpoint.

Checkpoints hold variables under the plain model's names (no tower prefix),
so whatever the number of towers a run was trained on, inference builds the
model alone on one device and restores it.
"""
import logging

import numpy as np

from crnn_multigpu.charset import Charset
from crnn_multigpu.checkpoints import load_config, require_checkpoint
from crnn_multigpu.compat import tf
from crnn_multigpu.crnn import CRNN
from crnn_multigpu.datasets import load_image, make_batch
from crnn_multigpu.devices import session_config
from crnn_multigpu.metrics import text_metrics

log = logging.getLogger(__name__)


def decode_rows(charset, ids):
    """Decoded id rows (padded with -1) -> strings."""
    return [charset.decode([int(i) for i in row if i >= 0]) for row in np.asarray(ids)]


class Recognizer(object):
    """Recognise text lines with the newest checkpoint of a run directory.

    Args:
      run_dir: the ``--out`` directory of ``crnn-train`` (config.json + checkpoints/).
      beam_width: 0/1 greedy decoding, >1 CTC beam search.
      checkpoint: a specific checkpoint path prefix instead of the newest intact one.
      lexicon: optional :class:`~crnn_multigpu.lexicon.LexiconDecoder` for this model's
        charset (also settable later as ``recognizer.lexicon``): every transcription
        is then post-processed by it, and its log probability is log p(text | image)
        summed over all CTC alignments instead of that of the best path.
    """

    def __init__(self, run_dir, beam_width=0, checkpoint=None, lexicon=None):
        self.config = load_config(run_dir)
        self.charset = Charset(self.config["charset"])
        self.lexicon = lexicon
        self.image_width = self.config.get("image_width")
        self.checkpoint = require_checkpoint(run_dir, checkpoint)
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.model = CRNN(beam_width=beam_width, **self.config["model"])
            saver = tf.train.Saver(tf.global_variables())
        self.session = tf.Session(graph=self.graph, config=session_config(1))
        saver.restore(self.session, self.checkpoint)
        log.info("restored %s", self.checkpoint)

    @property
    def lexicon(self):
        """The :class:`~crnn_multigpu.lexicon.LexiconDecoder` applied to every output, or None."""
        return self._lexicon

    @lexicon.setter
    def lexicon(self, decoder):
        if decoder is not None and decoder.charset != self.charset:
            raise ValueError("the lexicon was fitted to charset %r but the model reads %r"
                             % (decoder.charset, self.charset))
        self._lexicon = decoder

    @property
    def time_steps(self):
        """Time steps of the fixed image width, or None when widths vary."""
        return CRNN.time_steps(self.image_width) if self.image_width else None

    def _run(self, batch, frames):
        """(texts, log probabilities, per-image frame log-probabilities or None) of a ``Batch``."""
        fetches = [self.model.predict, self.model.log_prob]
        if frames:
            fetches += [self.model.log_probs_per_frame, self.model.seq_lengths]
        values = self.session.run(fetches, self.model.feed_dict(batch, training=False))
        texts, log_probs = decode_rows(self.charset, values[0]), [float(p) for p in values[1]]
        if not frames:
            return texts, log_probs, None
        per_frame, lengths = values[2], values[3]  # [T, B, C], [B]
        return texts, log_probs, [per_frame[:n, i] for i, n in enumerate(lengths)]

    def frame_log_probs(self, batch):
        """Per-image log-probabilities ``[T_i, num_classes]`` (valid frames; blank last)."""
        return self._run(batch, frames=True)[2]

    def recognize_batch(self, batch):
        """Texts and log probabilities for a ``Batch`` (through the lexicon when there is one)."""
        texts, log_probs, frames = self._run(batch, frames=self.lexicon is not None)
        if self.lexicon is not None:
            decoded = [self.lexicon.decode(text, rows) for text, rows in zip(texts, frames)]
            texts, log_probs = [d[0] for d in decoded], [d[1] for d in decoded]
        return texts, log_probs

    def recognize_arrays(self, arrays, batch_size=64):
        """Recognise normalised image arrays ([32, w] from ``load_image``)."""
        texts, log_probs = [], []
        for start in range(0, len(arrays), batch_size):
            chunk = arrays[start:start + batch_size]
            batch = make_batch(chunk, None, self.charset, self.image_width)
            got_texts, got_probs = self.recognize_batch(batch)
            texts.extend(got_texts)
            log_probs.extend(got_probs)
        return texts, log_probs

    def recognize_files(self, paths, batch_size=64):
        """Recognise image files of any size and mode; returns (texts, log_probs, arrays)."""
        arrays = [load_image(path, self.model.height) for path in paths]
        texts, log_probs = self.recognize_arrays(arrays, batch_size)
        return texts, log_probs, arrays

    def evaluate(self, dataset, batch_size=64, keep_examples=24, progress=None):
        """Figures over a dataset (``len`` + ``safe_get``); unreadable images are counted."""
        predictions, truths, examples, unreadable = [], [], [], 0
        arrays, texts = [], []

        def flush():
            got, _ = self.recognize_arrays(arrays, batch_size)
            predictions.extend(got)
            truths.extend(texts)
            for array, text, predicted in zip(arrays, texts, got):
                if len(examples) < keep_examples:
                    examples.append((array, predicted, text))
            del arrays[:], texts[:]

        for index in range(len(dataset)):
            sample = dataset.safe_get(index) if hasattr(dataset, "safe_get") else dataset[index]
            if sample is None:
                unreadable += 1
                continue
            arrays.append(sample[0])
            texts.append(sample[1])
            if len(arrays) == batch_size:
                flush()
                if progress:
                    progress(len(truths), len(dataset))
        if arrays:
            flush()
        figures = text_metrics(predictions, truths)
        figures["unreadable"] = unreadable
        return figures, examples

    def close(self):
        self.session.close()
