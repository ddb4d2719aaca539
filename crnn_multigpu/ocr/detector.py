"""A learned text detector: DB (Liao et al. 2020, "Real-time Scene Text Detection with
Differentiable Binarization") in a size that trains on two CPU cores.

``Detector(**kwargs)`` builds its whole graph for one device, whole-batch tensors in, one loss
out, like :class:`~crnn_multigpu.ocr.crnn.CRNN`, so ``MultiGpuModel(Detector, ...)`` trains it
on any number of towers with the weights shared by variable-scope reuse (every variable from
``tf.get_variable`` under ``detector/``, see :mod:`crnn_multigpu.wrapper.layers`).

The net: a conv backbone of four stages (strides 2, 4, 8, 16), a feature pyramid joining them
top-down at stride 4, and two heads growing back to the input's size: a text probability map P
and a threshold map T. The binary map ``B = sigmoid(k (P - T))`` (k = 50) is DB's
differentiable binarisation: it lets the loss teach T where the borders between lines lie.

The loss is a mean over images of each image's own loss (not one pooled over the batch's
pixels), so a tower's shard mean weighted by its size is the whole batch's mean: two towers
give exactly one tower's gradients (with ``sync_bn=True``, whose batch moments are the whole
batch's). Per image: balanced binary cross-entropy on P (text and background pixels weigh
half each: a page is mostly background), Dice loss on B, and 10 x the L1 distance of T to
its target near the boxes (DB's weights 1, 1, 10). DB's hard-negative mining (the 3:1 hardest
background pixels) is left out: its top-k differs in size per image and shard.

Reading a page: ``probability`` gives P; :func:`crnn_multigpu.ocr.detector_boxes.boxes_from_map`
turns it into line boxes.
"""
import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.ocr import detector_boxes
from crnn_multigpu.wrapper import layers

__all__ = ["Detector", "make_batch", "TARGET_NAMES"]

# The batch fields besides ``images`` (see ``make_batch``), one map per image each.
TARGET_NAMES = ("prob", "prob_mask", "thresh", "thresh_mask")


def make_batch(images, boxes, ratio=detector_boxes.SHRINK_RATIO, ignored=None):
    """A detector batch (a dict the wrapper can split) from grey page crops and their lines:
    ``images`` uint8 or float [B, H, W] dark text on light (0-255), ``boxes`` one list of
    ``(x0, y0, x1, y1)`` line boxes in pixels per image (``ignored``: one list per image of
    boxes that are neither text nor background). The images become light on dark in [0, 1] as
    the model reads them, [B, H, W, 1]; the targets are ``detector_boxes.targets``."""
    images = np.asarray(images, np.float32)
    if images.ndim != 3 or len(boxes) != images.shape[0]:
        raise ValueError("make_batch needs [B, H, W] images and one box list per image, got "
                         "%s images and %d box lists" % (list(images.shape), len(boxes)))
    height, width = images.shape[1:]
    ignored = ignored or [()] * len(boxes)
    maps = [detector_boxes.targets(image_boxes, height, width, ratio, ignored=image_ignored)
            for image_boxes, image_ignored in zip(boxes, ignored)]
    batch = {"images": (1.0 - images / 255.0)[..., None]}
    for name in TARGET_NAMES:
        batch[name] = np.stack([m[name] for m in maps])
    return batch


class Detector(object):
    """DB text detector graph for one shard of a batch.

    Inputs (placeholders): ``images`` float32 [B, H, W, 1], light text on dark in [0, 1], H and
    W multiples of 16; the targets ``prob``, ``prob_mask``, ``thresh``, ``thresh_mask`` float32
    [B, H, W] (see ``make_batch``); ``training`` bool scalar (default False). ``inputs``: an
    optional dict of tensors for any of them, used as the placeholders' defaults.

    Outputs: ``probability`` and ``threshold`` [B, H, W], ``binary`` (DB's approximate
    binary map), ``loss`` (mean over images), its parts ``prob_loss``, ``binary_loss``,
    ``thresh_loss``, ``error`` (the share of wrongly classified pixels of P at 0.5, under
    ``prob_mask``) and ``batch_size``.
    """

    # Channels of the backbone's four stages and of the pyramid (and heads).
    TINY = dict(channels=(8, 8, 16, 16), pyramid=8)
    DEFAULTS = dict(channels=(16, 32, 64, 96), pyramid=32)
    SIZES = {"tiny": TINY, "small": DEFAULTS}
    DEFAULT_SIZE = "small"
    DOWNSAMPLE = 16  # input sides must be multiples of the deepest stride
    STEEPNESS = 50.0  # DB's k
    BINARY_WEIGHT, THRESH_WEIGHT = 1.0, 10.0

    def __init__(self, channels=DEFAULTS["channels"], pyramid=DEFAULTS["pyramid"],
                 inputs=None, sync_bn=False):
        if len(channels) != 4:
            raise ValueError("channels needs 4 entries (one per stage), got %r" % (channels,))
        self.channels = tuple(int(c) for c in channels)
        self.pyramid = int(pyramid)
        self.sync_bn = bool(sync_bn)
        inputs = inputs or {}

        def _input(name, shape):
            if name in inputs:
                return tf.placeholder_with_default(tf.cast(inputs[name], tf.float32), shape,
                                                   name=name)
            return tf.placeholder(tf.float32, shape, name=name)

        self.images = _input("images", [None, None, None, 1])
        self.targets = dict((name, _input(name, [None, None, None])) for name in TARGET_NAMES)
        self.training = tf.placeholder_with_default(False, [], name="training")
        self.batch_size = tf.shape(self.images)[0]
        with tf.variable_scope("detector"):
            features = self._pyramid(self._backbone(self.images))
            self.probability = tf.sigmoid(layers.float32(self._head(features, "prob_head")))
            self.threshold = tf.sigmoid(layers.float32(self._head(features, "thresh_head")))
        self.binary = tf.sigmoid(self.STEEPNESS * (self.probability - self.threshold))
        self._build_loss()

    # ------------------------------------------------------------------ graph
    def _conv(self, x, filters, kernel, name, strides=1):
        x = layers.conv2d(x, filters, kernel, strides=strides, use_bias=False, name=name)
        return tf.nn.relu(layers.batch_norm(x, self.training, sync=self.sync_bn,
                                            name=name + "_bn"))

    def _backbone(self, x):
        """Four stages, each a strided conv and a conv: features at strides 2, 4, 8, 16."""
        stages = []
        for i, filters in enumerate(self.channels):
            x = self._conv(x, filters, 3, "stage%d_down" % (i + 1), strides=2)
            x = self._conv(x, filters, 3, "stage%d_conv" % (i + 1))
            stages.append(x)
        return stages[1:]

    def _pyramid(self, stages):
        """Top-down pyramid over the stride 4, 8, 16 stages, all brought to stride 4 and
        concatenated (DB's neck, with one level fewer)."""
        f = self.pyramid
        lateral = [layers.conv2d(s, f, 1, use_bias=False, name="lateral%d" % i)
                   for i, s in enumerate(stages)]
        merged = [lateral[-1]]
        for level in reversed(lateral[:-1]):
            merged.insert(0, level + _upsample(merged[0], 2))
        smooth = [self._conv(m, f, 3, "smooth%d" % i) for i, m in enumerate(merged)]
        return tf.concat([_upsample(s, 2 ** i) if i else s for i, s in enumerate(smooth)], -1)

    def _head(self, x, name):
        """A map's logits at the input's size: conv, upsample x2, conv, upsample x2, 1x1."""
        with tf.variable_scope(name):
            x = self._conv(x, self.pyramid, 3, "conv1")
            x = self._conv(_upsample(x, 2), self.pyramid, 3, "conv2")
            x = layers.conv2d(_upsample(x, 2), 1, 1, name="logits")
            return tf.squeeze(x, -1)

    def _build_loss(self):
        t = self.targets
        axes = [1, 2]
        eps = 1e-6
        prob = tf.clip_by_value(self.probability, eps, 1.0 - eps)
        bce = -(t["prob"] * tf.log(prob) + (1.0 - t["prob"]) * tf.log(1.0 - prob))
        text = t["prob"] * t["prob_mask"]
        background = (1.0 - t["prob"]) * t["prob_mask"]

        def mean_over(weight, values):
            return tf.reduce_sum(weight * values, axes) / (tf.reduce_sum(weight, axes) + eps)

        prob_loss = 0.5 * (mean_over(text, bce) + mean_over(background, bce))
        overlap = tf.reduce_sum(self.binary * text, axes)
        union = (tf.reduce_sum(self.binary * t["prob_mask"], axes) +
                 tf.reduce_sum(text, axes) + eps)
        binary_loss = 1.0 - 2.0 * overlap / union
        thresh_loss = mean_over(t["thresh_mask"], tf.abs(self.threshold - t["thresh"]))
        self.prob_loss = tf.reduce_mean(prob_loss)
        self.binary_loss = tf.reduce_mean(binary_loss)
        self.thresh_loss = tf.reduce_mean(thresh_loss)
        per_image = (prob_loss + self.BINARY_WEIGHT * binary_loss +
                     self.THRESH_WEIGHT * thresh_loss)
        self.loss = tf.reduce_mean(per_image, name="loss")
        wrong = tf.abs(tf.cast(self.probability > 0.5, tf.float32) - t["prob"])
        self.error = tf.reduce_mean(mean_over(t["prob_mask"], wrong), name="error")

    # ----------------------------------------------------------------- helpers
    def feed_dict(self, batch, training=True):
        """Feed for a batch (a dict, see ``make_batch``); for reading, the targets may be
        left out (the loss is then meaningless, ``probability`` is not)."""
        images = np.asarray(batch["images"], np.float32)
        feed = {self.images: images, self.training: bool(training)}
        for name in TARGET_NAMES:
            value = batch.get(name)
            feed[self.targets[name]] = (np.zeros(images.shape[:3], np.float32) if value is None
                                        else np.asarray(value, np.float32))
        return feed


def _upsample(x, factor):
    """Nearest-neighbour upsampling of NHWC ``x`` by a whole ``factor`` (each pixel repeated
    ``factor`` x ``factor`` times), from reshapes and a tile alone: the same graph on both
    TensorFlow stacks, and its gradient a plain sum."""
    if factor == 1:
        return x
    shape = tf.shape(x)
    channels = int(x.shape[-1])
    tiled = tf.tile(x[:, :, None, :, None, :], [1, 1, factor, 1, factor, 1])
    return tf.reshape(tiled, [shape[0], shape[1] * factor, shape[2] * factor, channels])
