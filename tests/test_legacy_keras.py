"""tf.compat.v1.layers on both stacks: legacy Keras switched on before TensorFlow, with an opt-out."""
import os
import subprocess
import sys

import pytest

from crnn_multigpu import legacy_keras
from crnn_multigpu.compat import TF_VERSION
from waiting import HANG_GUARD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERAS_3_ERROR = "not available with Keras 3"


@pytest.mark.parametrize("environ, available, on, after", [
    ({}, True, True, "1"),            # installed, user silent: switched on
    ({}, False, False, None),         # not installed: setting it would break tf.keras
    ({legacy_keras.ENV: "0"}, True, False, "0"),        # the user's opt-out is kept
    ({legacy_keras.ENV: "true"}, False, True, "true"),  # and so is the user's own opt-in
])
def test_the_users_setting_wins(environ, available, on, after):
    assert legacy_keras.prefer_legacy_keras(environ, available=available) is on
    assert environ.get(legacy_keras.ENV) == after


def test_one_tensorflow_installation_and_a_matching_tf_keras():
    tensorflows = legacy_keras.installed_tensorflow()
    assert len(tensorflows) == 1, "two TensorFlow wheels in one environment: %s" % tensorflows
    if TF_VERSION[0] >= 2:
        # What `make venv` installs: tf_keras of TensorFlow's minor version, next to it.
        tf_keras = legacy_keras.distribution_version("tf_keras")
        assert tf_keras is not None, "tf_keras is missing: tf.compat.v1.layers cannot run"
        minor = ".".join(next(iter(tensorflows.values())).split(".")[:2])
        assert tf_keras.startswith(minor + "."), (tf_keras, tensorflows)
        assert legacy_keras.requirement() == "tf_keras==%s.*" % minor
    else:
        with pytest.raises(RuntimeError, match="built in"):
            legacy_keras.requirement()


@pytest.mark.parametrize("setting", [None, "0"])
def test_a_fresh_process_builds_a_tf_layers_model_unless_opted_out(setting):
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop(legacy_keras.ENV, None)  # the test process's own import set it
    if setting is not None:
        env[legacy_keras.ENV] = setting
    code = ("from crnn_multigpu.compat import tf\n"
            "x = tf.placeholder(tf.float32, [None, 3])\n"
            "tf.layers.dense(x, 2)\n"
            "print('built', [v.op.name for v in tf.trainable_variables()])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=HANG_GUARD)
    if setting == "0" and TF_VERSION[0] >= 2:
        assert done.returncode != 0 and KERAS_3_ERROR in done.stderr, done.stderr[-2000:]
    else:
        assert done.returncode == 0, done.stderr[-2000:]
        assert "built ['dense/kernel', 'dense/bias']" in done.stdout
