"""The one place that imports TensorFlow.

Library code is written against ``tensorflow.compat.v1`` in graph mode so that
the very same source runs on TF 1.15 (Python 3.7) and TF 2.x (Python 3.11).
Everything else in the package does ``from crnn_multigpu.compat import tf``.

Before the import, legacy Keras is switched on when ``tf_keras`` is installed (see
``legacy_keras``), so that models written with ``tf.compat.v1.layers`` run on TF 2.x too;
``TF_USE_LEGACY_KERAS=0`` in the environment opts out.
"""
import os

from crnn_multigpu import legacy_keras, tflog

# TF prints pages of C++ start-up chatter; keep the user's terminal readable unless they
# asked for more (their own TF_CPP_MIN_LOG_LEVEL, or a tool's --verbose). The variable
# quiets TF's later messages (and reaches subprocesses); what absl prints during the import
# whatever the variable says is held back by tflog.quiet_startup.
os.environ.setdefault(tflog.ENV, str(tflog.DEFAULT_LEVEL))

# TensorFlow decides where tf.layers and tf.keras lead while it is imported: say it first.
legacy_keras.prefer_legacy_keras()

with tflog.quiet_startup():
    import tensorflow.compat.v1 as tf  # noqa: E402
    if tf.test.is_built_with_cuda():
        # CUDA starts when the GPUs are first listed or a session first made; on a machine
        # without a driver it logs an error that is none. Started here, that line is held back
        # with the rest of the start-up log, whichever tool or error comes later.
        tf.config.experimental.list_physical_devices("GPU")

if tf.executing_eagerly():
    # Only eager execution is switched off: the rest of TF 2 behaviour
    # (resource variables, v2 control flow) stays, which is what graph-mode
    # TF 2 users get anyway.
    tf.disable_eager_execution()

TF_VERSION = tuple(int(p) for p in tf.__version__.split(".")[:2]) if hasattr(tf, "__version__") \
    else tuple(int(p) for p in tf.VERSION.split(".")[:2])

tf.logging.set_verbosity(tf.logging.ERROR)

__all__ = ["tf", "TF_VERSION"]
