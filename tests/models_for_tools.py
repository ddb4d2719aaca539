"""A second model class for the OCR tools (``--model-class tests.models_for_tools:SmallConvCTC``):
a small all-convolutional CTC recogniser, no LSTM, that downsamples the width by 8 (CRNN: 4).

It follows only what ``crnn_multigpu.ocr.model_class`` asks for (no SIZES, no beam search, no
sync_bn, no height), and it is strict where CRNN is lenient, so that a tool that forgets the
class's DOWNSAMPLE fails loudly: the graph refuses images whose width is not a multiple of 8,
and the CTC loss raises on a label longer than its image's time steps (CRNN's gives it 0).
"""
from crnn_multigpu.compat import tf
from crnn_multigpu.wrapper import layers


class SmallConvCTC(object):
    """Three blocks of 3x3 conv, batch norm, ReLU and 2x2 max pool (height 32 -> 4, width / 8),
    then a 4x1 conv to the class scores of each column; CTC loss, greedy decoding."""

    DOWNSAMPLE = 8

    def __init__(self, num_classes, channels=(8, 16, 32), inputs=None):
        inputs = inputs or {}

        def _input(name, dtype, shape):
            if name in inputs:
                return tf.placeholder_with_default(tf.cast(inputs[name], dtype), shape, name=name)
            return tf.placeholder(dtype, shape, name=name)

        self.images = _input("images", tf.float32, [None, 32, None, 1])
        self.widths = _input("widths", tf.int32, [None])
        self.labels = _input("labels", tf.int32, [None, None])
        self.label_lengths = _input("label_lengths", tf.int32, [None])
        self.training = tf.placeholder_with_default(False, [], name="training")
        self.batch_size = tf.shape(self.images)[0]
        whole_steps = tf.assert_equal(tf.shape(self.images)[2] % self.DOWNSAMPLE, 0,
                                      message="SmallConvCTC: image width not a multiple of 8")
        with tf.control_dependencies([whole_steps]):
            x = tf.identity(self.images)
        with tf.variable_scope("smallconv"):
            for index, filters in enumerate(channels):
                x = layers.conv2d(x, filters, (3, 3), use_bias=False, name="conv%d" % index)
                x = tf.nn.relu(layers.batch_norm(x, self.training, name="bn%d" % index))
                x = layers.max_pool(x, (2, 2))
            x = layers.conv2d(x, num_classes, (4, 1), padding="VALID", name="classes")
        self.logits = layers.float32(tf.transpose(tf.squeeze(x, axis=1), [1, 0, 2]))  # [T, B, C]
        self.seq_lengths = tf.clip_by_value((self.widths + self.DOWNSAMPLE - 1) // self.DOWNSAMPLE,
                                            1, tf.shape(self.logits)[0])
        where = tf.where(tf.sequence_mask(self.label_lengths, tf.shape(self.labels)[1]))
        sparse_labels = tf.SparseTensor(where, tf.gather_nd(self.labels, where),
                                        tf.cast(tf.shape(self.labels), tf.int64))
        self.loss = tf.reduce_mean(tf.nn.ctc_loss(
            labels=sparse_labels, inputs=self.logits, sequence_length=self.seq_lengths,
            ignore_longer_outputs_than_inputs=False, time_major=True))
        self.log_probs_per_frame = tf.nn.log_softmax(self.logits)
        (best,), neg_sum = tf.nn.ctc_greedy_decoder(self.log_probs_per_frame, self.seq_lengths)
        self.log_prob = -neg_sum[:, 0]
        self.predict = tf.cast(tf.sparse_tensor_to_dense(best, default_value=-1), tf.int32)

    def feed_dict(self, batch, training=True):
        """Feed for a ``datasets.Batch`` (images, widths, labels, label_lengths)."""
        return {self.images: batch.images, self.widths: batch.widths, self.labels: batch.labels,
                self.label_lengths: batch.label_lengths, self.training: bool(training)}


class WithoutFrames(SmallConvCTC):
    """SmallConvCTC without the optional ``log_probs_per_frame`` (a class that decodes inside
    its graph only): it trains and reads, and cannot be exported as its frames (ONNX)."""

    def __init__(self, num_classes, **kwargs):
        SmallConvCTC.__init__(self, num_classes, **kwargs)
        del self.log_probs_per_frame
