"""CRNN text recogniser (Shi, Bai & Yao 2015): VGG conv stack + BiLSTM + CTC.

``CRNN(**kwargs)`` builds its whole graph (placeholders, logits, loss, decoders)
in the current device / variable scope, so a tower wrapper can call it once per
tower and share the weights by variable-scope reuse. All variables come from
``tf.get_variable`` (see :mod:`crnn_multigpu.wrapper.layers`) under ``crnn/``.
"""
import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper import layers

__all__ = ["CRNN"]


class CRNN(object):
    """CRNN graph for one shard of a batch.

    Inputs (placeholders): ``images`` float32 [B, height, W, 1] in [0, 1] with
    zero padding on the right (W a multiple of 4), ``widths`` int32 [B] valid
    pixel widths, ``labels`` int32 [B, L] dense padded ids, ``label_lengths``
    int32 [B], ``training`` bool scalar (default False).

    ``inputs``: optional dict with any of those four names -> tensors, used as the
    placeholders' defaults (feed-free input from ``tf.data``).

    ``sync_bn``: in a tower wrapper, batch norm uses the moments of the whole global batch
    (``layers.batch_norm(sync=True)``); a plain model computes the same either way.

    Outputs: ``logits`` [T, B, num_classes] (T = W // 4), ``log_probs_per_frame``,
    ``seq_lengths``, ``loss`` (mean CTC loss), ``decoded`` (greedy, sparse),
    ``error`` (mean of min(1, edit distance / label length)), ``predict`` int32 [B, maxlen]
    padded with -1, ``log_prob`` float32 [B], ``batch_size``.

    The CTC blank is the LAST class (``num_classes - 1``).
    """

    DOWNSAMPLE = 4  # width / time-step ratio of the conv stack
    # Sizes (the default is a quarter of the paper's width so that it trains at
    # ~5 steps/s, batch 32 x width 100, on 2 CPU cores; MEDIUM ~2 steps/s there).
    # TINY is for smoke tests and CI: it trains but will not read well.
    TINY = dict(channels=(8, 16, 32, 32, 32, 32, 32), lstm_units=32)
    DEFAULTS = dict(channels=(16, 32, 64, 64, 128, 128, 128), lstm_units=64)
    MEDIUM = dict(channels=(32, 64, 128, 128, 256, 256, 256), lstm_units=128)
    # For charsets of thousands of classes (Chinese): small's cheap lower layers, a top and a
    # sequence head twice and 1.5x as wide; about 1.5x small's cost per time step at 6,900
    # classes, where the output projection is a third of the step.
    WIDE = dict(channels=(16, 32, 64, 64, 128, 256, 256), lstm_units=96)
    PAPER = dict(channels=(64, 128, 256, 256, 512, 512, 512), lstm_units=256)
    # What crnn-train --model chooses from (crnn_multigpu.ocr.model_class).
    SIZES = {"tiny": TINY, "small": DEFAULTS, "medium": MEDIUM, "paper": PAPER, "wide": WIDE}
    DEFAULT_SIZE = "small"
    # The variables whose last axis is the class axis (ocr.charset_transfer maps it by character).
    OUTPUT_VARIABLES = ("crnn/logits/kernel", "crnn/logits/bias")

    def __init__(self, num_classes=37, channels=DEFAULTS["channels"],
                 lstm_units=DEFAULTS["lstm_units"], lstm_layers=2, height=32, beam_width=0,
                 inputs=None, sync_bn=False):
        if len(channels) != 7:
            raise ValueError("channels needs 7 entries, got %r" % (channels,))
        if height % 16 != 0 or height <= 0:
            raise ValueError("height must be a positive multiple of 16, got %d" % height)
        self.num_classes = int(num_classes)
        self.blank = self.num_classes - 1
        self.channels = tuple(int(c) for c in channels)
        self.lstm_units = int(lstm_units)
        self.lstm_layers = int(lstm_layers)
        self.height = int(height)
        self.beam_width = int(beam_width)
        self.sync_bn = bool(sync_bn)

        # ``inputs`` (optional, e.g. from tf.data via the tower wrapper's input_fn):
        # a dict of tensors used as the placeholders' defaults; feeding still works.
        inputs = inputs or {}

        def _input(name, dtype, shape):
            if name in inputs:
                return tf.placeholder_with_default(tf.cast(inputs[name], dtype), shape, name=name)
            return tf.placeholder(dtype, shape, name=name)

        self.images = _input("images", tf.float32, [None, self.height, None, 1])
        self.widths = _input("widths", tf.int32, [None])
        self.labels = _input("labels", tf.int32, [None, None])
        self.label_lengths = _input("label_lengths", tf.int32, [None])
        self.training = tf.placeholder_with_default(False, [], name="training")
        self.batch_size = tf.shape(self.images)[0]

        with tf.variable_scope("crnn"):
            features = self._conv_stack(self.images)            # [B, 1, T, C]
            seq = tf.transpose(tf.squeeze(features, axis=1), [1, 0, 2])  # [T, B, C]
            num_steps = tf.shape(seq)[0]
            ds = self.DOWNSAMPLE
            self.seq_lengths = tf.clip_by_value((self.widths + ds - 1) // ds, 1, num_steps,
                                                name="seq_lengths")
            # CTC and the softmax read float32 logits whatever the towers compute in.
            self.logits = layers.float32(self._sequence_head(seq, self.seq_lengths))
        self.log_probs_per_frame = tf.nn.log_softmax(self.logits)
        self._build_loss()
        self._build_decoders()

    # ------------------------------------------------------------------ graph
    def _conv_stack(self, x):
        """VGG stack: H 32 -> 1 (any multiple of 16 collapses to 1), W -> W/4."""
        c = self.channels
        # (filters, kernel, padding, pool after or None)
        plan = [(c[0], (3, 3), "SAME", (2, 2)),
                (c[1], (3, 3), "SAME", (2, 2)),
                (c[2], (3, 3), "SAME", None),
                (c[3], (3, 3), "SAME", (2, 1)),
                (c[4], (3, 3), "SAME", None),
                (c[5], (3, 3), "SAME", (2, 1)),
                (c[6], (self.height // 16, 1), "VALID", None)]
        for i, (filters, kernel, padding, pool) in enumerate(plan):
            n = i + 1
            x = layers.conv2d(x, filters, kernel, padding=padding, use_bias=False,
                              name="conv%d" % n)
            x = tf.nn.relu(layers.batch_norm(x, self.training, sync=self.sync_bn,
                                             name="bn%d" % n))
            if pool is not None:
                x = layers.max_pool(x, pool)
        return x

    def _sequence_head(self, seq, lengths):
        for i in range(self.lstm_layers):
            seq = layers.bidirectional_lstm(seq, lengths, self.lstm_units,
                                            name="bilstm%d" % (i + 1))
        return layers.dense(seq, self.num_classes, name="logits")

    def _build_loss(self):
        mask = tf.sequence_mask(self.label_lengths, tf.shape(self.labels)[1])
        idx = tf.where(mask)
        self.sparse_labels = tf.SparseTensor(idx, tf.gather_nd(self.labels, idx),
                                             tf.cast(tf.shape(self.labels), tf.int64))
        losses = tf.nn.ctc_loss(labels=self.sparse_labels, inputs=self.logits,
                                sequence_length=self.seq_lengths,
                                preprocess_collapse_repeated=False,
                                ctc_merge_repeated=True,
                                ignore_longer_outputs_than_inputs=True,
                                time_major=True)
        # Too-long labels give 0 (ignore_longer_outputs_than_inputs). A label
        # that fits but needs extra blanks between repeats (e.g. "aa" in 2
        # frames) has no valid path: loss = inf with a finite gradient. Zero it
        # (its gradient is then multiplied by 0) so one bad example cannot
        # poison the shard mean; the data side should reject such labels.
        finite = tf.is_finite(losses)
        self.per_example_loss = tf.where(finite, losses, tf.zeros_like(losses))
        self.num_infeasible = tf.reduce_sum(1 - tf.cast(finite, tf.int32))
        self.loss = tf.reduce_mean(self.per_example_loss, name="loss")

    def _build_decoders(self):
        log_probs = self.log_probs_per_frame
        (greedy,), neg_sum = tf.nn.ctc_greedy_decoder(log_probs, self.seq_lengths,
                                                      merge_repeated=True)
        self.decoded = greedy
        truth = tf.cast(self.sparse_labels, tf.int64)
        dist = tf.edit_distance(greedy, truth, normalize=False)
        # Normalised edit distance (CER) per example, capped at 1 so that
        # insertions cannot push a shard's error above 1.
        denom = tf.cast(tf.maximum(self.label_lengths, 1), tf.float32)
        self.error = tf.reduce_mean(tf.minimum(dist / denom, 1.0), name="error")
        if self.beam_width > 1:
            # merge_repeated=False: the v1 beam decoder would otherwise merge
            # genuine repeats ("a-a" -> "a") in its output beams.
            (best,), log_p = tf.nn.ctc_beam_search_decoder(
                log_probs, self.seq_lengths, beam_width=self.beam_width, top_paths=1,
                merge_repeated=False)
            self.log_prob = log_p[:, 0]
        else:
            best = greedy
            self.log_prob = -neg_sum[:, 0]
        self.predict = tf.cast(tf.sparse_tensor_to_dense(best, default_value=-1),
                               tf.int32, name="predict")

    # ----------------------------------------------------------------- helpers
    @classmethod
    def check_config(cls, model_kwargs):
        """Raise ValueError unless a run's recorded ``model_kwargs`` can build a CRNN: 7 conv
        ``channels`` and ``lstm_units``, positive whole numbers (``model_class``'s hook)."""
        units = model_kwargs.get("lstm_units")
        if not isinstance(units, int) or isinstance(units, bool) or units < 1:
            raise ValueError("model 'lstm_units' must be a positive whole number, got %r"
                             % (units,))
        channels = model_kwargs.get("channels")
        if not (isinstance(channels, list) and len(channels) == 7 and
                all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in channels)):
            raise ValueError("model 'channels' must be 7 positive whole numbers, got %r"
                             % (channels,))

    @classmethod
    def time_steps(cls, width):
        """Number of CTC time steps produced for an image of ``width`` pixels."""
        return int(width) // cls.DOWNSAMPLE

    def feed_dict(self, batch, training=True):
        """Feed for a batch with fields images, widths, labels, label_lengths.

        For prediction ``labels`` may be a [B, 1] array with zero lengths (or
        None); loss and error are then meaningless but ``predict`` works.
        """
        images = np.asarray(batch.images, dtype=np.float32)
        n = images.shape[0]
        labels = getattr(batch, "labels", None)
        lengths = getattr(batch, "label_lengths", None)
        if labels is None:
            labels = np.zeros([n, 1], np.int32)
        if lengths is None:
            lengths = np.zeros([n], np.int32)
        return {self.images: images,
                self.widths: np.asarray(batch.widths, dtype=np.int32),
                self.labels: np.asarray(labels, dtype=np.int32),
                self.label_lengths: np.asarray(lengths, dtype=np.int32),
                self.training: bool(training)}
