"""VGG16, ResNet-50 and AlexNet built from the project's layers, as single-device tower models.

They exist to check ``scripts/transfer_model.py`` against published multi-GPU figures
(tf_cnn_benchmarks on ImageNet shapes), so they follow the published architectures
(Simonyan & Zisserman 2014, configuration D; He et al. 2015, ResNet-50 v1 with bottleneck
blocks; Krizhevsky et al. 2012 as tf_cnn_benchmarks sizes it) in their variables and
arithmetic. They are never trained here: every shape is static (``batch`` examples of
224 x 224 x 3, AlexNet 227 x 227 x 3) so that TensorFlow's profiler can count their FLOPs.
"""
from crnn_multigpu.wrapper import layers
from crnn_multigpu.compat import tf

CLASSES = 1000


class _ImageClassifier(object):
    """Placeholders, softmax loss and the tower-model interface shared by the networks."""

    IMAGE_SIZE = 224

    def __init__(self, batch=64):
        size = self.IMAGE_SIZE
        self.images = tf.placeholder(tf.float32, [batch, size, size, 3], name="images")
        self.labels = tf.placeholder(tf.int32, [batch], name="labels")
        self.training = tf.placeholder_with_default(True, [], name="training")
        logits = self.logits(self.images)
        self.loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=self.labels, logits=logits), name="loss")
        self.batch_size = tf.shape(self.images)[0]

    def feed_dict(self, batch):
        return {self.images: batch["images"], self.labels: batch["labels"]}


class VGG16(_ImageClassifier):
    """VGG configuration D: 13 3x3 convolutions with biases, 3 dense layers; 138 M parameters."""

    STAGES = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))

    def logits(self, x):
        for stage, (filters, repeats) in enumerate(self.STAGES):
            for i in range(repeats):
                x = tf.nn.relu(layers.conv2d(x, filters, name="conv%d_%d" % (stage + 1, i + 1)))
            x = layers.max_pool(x, (2, 2))
        x = tf.reshape(x, [int(x.shape[0]), -1])
        x = tf.nn.relu(layers.dense(x, 4096, name="fc6"))
        x = tf.nn.relu(layers.dense(x, 4096, name="fc7"))
        return layers.dense(x, CLASSES, name="fc8")


class ResNet50(_ImageClassifier):
    """ResNet-50 v1: 7x7 stem, bottleneck blocks (3, 4, 6, 3), batch norm; 25.6 M parameters."""

    STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))

    def _conv_bn(self, x, filters, kernel, strides, name, relu=True):
        x = layers.conv2d(x, filters, kernel, strides=strides, use_bias=False, name=name)
        x = layers.batch_norm(x, self.training, name=name + "_bn")
        return tf.nn.relu(x) if relu else x

    def _bottleneck(self, x, filters, strides, name):
        shortcut = x
        if strides != 1 or int(x.shape[-1]) != 4 * filters:
            shortcut = self._conv_bn(x, 4 * filters, 1, strides, name + "_proj", relu=False)
        y = self._conv_bn(x, filters, 1, strides, name + "_a")
        y = self._conv_bn(y, filters, 3, 1, name + "_b")
        y = self._conv_bn(y, 4 * filters, 1, 1, name + "_c", relu=False)
        return tf.nn.relu(y + shortcut)

    def logits(self, x):
        x = self._conv_bn(x, 64, 7, 2, "conv1")
        x = layers.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
        for stage, (filters, blocks, strides) in enumerate(self.STAGES):
            for block in range(blocks):
                x = self._bottleneck(x, filters, strides if block == 0 else 1,
                                     "res%d_%d" % (stage + 2, block + 1))
        x = tf.reduce_mean(x, axis=[1, 2])
        return layers.dense(x, CLASSES, name="fc1000")


class AlexNet(_ImageClassifier):
    """AlexNet in one tower as tf_cnn_benchmarks sizes it: 5 convolutions with biases, 3 dense
    layers; 61.8 M parameters, 54.5 M of them in fc6 and fc7.

    Inputs are 227 x 227 so that the first 11 x 11 stride-4 convolution without padding gives
    55 x 55; pools are 3 x 3, stride 2, unpadded. Dropout is left out: it has no variables and
    next to no arithmetic, so it changes neither the bytes nor the FLOPs counted.
    """

    IMAGE_SIZE = 227
    CONVOLUTIONS = ((64, 11, 4, "VALID"), (192, 5, 1, "SAME"), (384, 3, 1, "SAME"),
                    (384, 3, 1, "SAME"), (256, 3, 1, "SAME"))
    POOLED_AFTER = (0, 1, 4)

    def logits(self, x):
        for index, (filters, kernel, stride, padding) in enumerate(self.CONVOLUTIONS):
            x = tf.nn.relu(layers.conv2d(x, filters, kernel, strides=stride, padding=padding,
                                         name="conv%d" % (index + 1)))
            if index in self.POOLED_AFTER:
                x = layers.max_pool(x, (3, 3), strides=(2, 2))
        x = tf.reshape(x, [int(x.shape[0]), -1])
        x = tf.nn.relu(layers.dense(x, 4096, name="fc6"))
        x = tf.nn.relu(layers.dense(x, 4096, name="fc7"))
        return layers.dense(x, CLASSES, name="fc8")
