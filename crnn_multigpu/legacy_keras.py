"""Legacy Keras, so that models written with ``tf.compat.v1.layers`` run on TF 2.x. Imports no TensorFlow.

From TF 2.16 on, ``tf.keras`` is Keras 3, and ``tf.compat.v1.layers.dense`` (all of ``tf.layers``,
which many graph-mode models are written with) raises "`dense` is not available with Keras 3".
The Keras 2 code those functions need lives on in the ``tf_keras`` package; TensorFlow routes
``tf.layers`` and ``tf.keras`` to it when the environment variable ``TF_USE_LEGACY_KERAS`` is true.
TensorFlow reads the variable while it is imported and again when ``tf.layers``/``tf.keras`` are
first used, so it has to be set before either: ``compat.py`` calls ``prefer_legacy_keras`` just
before it imports TensorFlow.

The rule: when ``tf_keras`` is installed and the variable is not set, set it to ``1``. A value the
user set is kept, so ``TF_USE_LEGACY_KERAS=0`` opts out (``tf.keras`` stays Keras 3). On TF 1.x
``tf.layers`` is built in and ``tf_keras`` is not installed, so nothing changes there.
"""
import importlib.util
import os

ENV = "TF_USE_LEGACY_KERAS"
PACKAGE = "tf_keras"
_TRUE = ("true", "True", "1")  # the values TensorFlow itself treats as on
# The names TensorFlow's own wheels are published under; an environment should hold one.
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel")


def installed():
    """Whether the ``tf_keras`` package can be imported (looked up, not imported)."""
    return importlib.util.find_spec(PACKAGE) is not None


def prefer_legacy_keras(environ=None, available=None):
    """Turn legacy Keras on for this process (and its children) unless the user decided.

    Sets ``TF_USE_LEGACY_KERAS=1`` in ``environ`` (default ``os.environ``) when it is unset and
    ``tf_keras`` is installed (``available``, default: looked up). Setting it without the package
    would break ``tf.keras`` altogether, so then nothing is set. Returns whether legacy Keras is on.
    """
    environ = os.environ if environ is None else environ
    if ENV not in environ:
        if not (installed() if available is None else available):
            return False
        environ[ENV] = "1"
    return environ[ENV] in _TRUE


def distribution_version(name):
    """The installed version of distribution ``name`` (``"2.21.0"``), or None when absent."""
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7 (the TF 1.15 stack)
        import pkg_resources
        try:
            return pkg_resources.get_distribution(name).version
        except pkg_resources.DistributionNotFound:
            return None
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def installed_tensorflow():
    """``{distribution: version}`` of the TensorFlow wheels installed (one, in a sound environment)."""
    found = ((name, distribution_version(name)) for name in TENSORFLOW_DISTRIBUTIONS)
    return {name: version for name, version in found if version is not None}


def requirement():
    """The pip requirement of the ``tf_keras`` that matches the installed TensorFlow: ``tf_keras==2.21.*``.

    tf_keras is released in step with TensorFlow's minor versions. Install it with ``--no-deps``:
    its metadata asks for the ``tensorflow`` wheel, so with ``tensorflow-cpu`` installed pip would
    add a second, full TensorFlow beside it. It needs nothing TensorFlow does not bring already.
    """
    versions = sorted(set(installed_tensorflow().values()))
    if len(versions) != 1:
        raise RuntimeError("expected one TensorFlow installation, found %s"
                           % (installed_tensorflow() or "none"))
    major_minor = ".".join(versions[0].split(".")[:2])
    if int(major_minor.split(".")[0]) < 2:
        raise RuntimeError("TensorFlow %s has tf.layers built in; tf_keras is for TF 2.x" % versions[0])
    return "%s==%s.*" % (PACKAGE, major_minor)
