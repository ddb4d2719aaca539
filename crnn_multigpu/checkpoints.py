"""Checkpoints that survive being killed at any moment, and the run's configuration.

TensorFlow's Saver writes the data and index files first and only then swaps
the small ``checkpoint`` state file (an atomic rename), so a process killed
during a save leaves the state file naming the last complete checkpoint. This
module adds what the Saver leaves open: a writability check before training,
a save that never takes the previous checkpoint down with it, and the run
configuration that inference needs to rebuild the model.
"""
import json
import logging
import os
import tempfile

from crnn_multigpu.compat import tf

log = logging.getLogger(__name__)

CONFIG_NAME = "config.json"
CHECKPOINT_SUBDIR = "checkpoints"
CHECKPOINT_PREFIX = "model.ckpt"


def atomic_write_text(path, text):
    """Write ``text`` to ``path`` through a temporary file and a rename: never half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def ensure_writable(directory):
    """Create ``directory`` and prove a file can be written there, or raise a clear error."""
    try:
        os.makedirs(directory, exist_ok=True)
        atomic_write_text(os.path.join(directory, ".write-test"), "ok")
        os.remove(os.path.join(directory, ".write-test"))
    except OSError as error:
        raise OSError("cannot write checkpoints to %s: %s. Choose another --out directory or free "
                      "disk space before training." % (directory, error.strerror or error))


def save_config(run_dir, config):
    """Store the run configuration (model arguments, charset, image width) as JSON."""
    atomic_write_text(os.path.join(run_dir, CONFIG_NAME),
                      json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False))


def load_config(run_dir):
    """Read the configuration written by ``save_config``; a clear error if the run is not there."""
    path = os.path.join(run_dir, CONFIG_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError("%s is not a training run directory (no %s). Pass the --out "
                                "directory of crnn-train." % (run_dir, CONFIG_NAME))
    with open(path) as stream:
        return json.load(stream)


def checkpoint_dir(run_dir):
    """The folder holding the run's TensorFlow checkpoints."""
    return os.path.join(run_dir, CHECKPOINT_SUBDIR)


def latest_checkpoint(run_dir):
    """Path prefix of the newest complete checkpoint of a run (or of a checkpoint folder), or None."""
    for directory in (checkpoint_dir(run_dir), run_dir):
        if os.path.isdir(directory):
            path = tf.train.latest_checkpoint(directory)
            if path:
                return path
    return None


def require_checkpoint(run_dir):
    """Like ``latest_checkpoint`` but raise a clear error when there is none."""
    path = latest_checkpoint(run_dir)
    if path is None:
        raise FileNotFoundError("no checkpoint found in %s (looked in %s). Train first with "
                                "crnn-train --out %s" % (run_dir, checkpoint_dir(run_dir), run_dir))
    return path


class CheckpointSaver(object):
    """Periodic, failure-tolerant saving of the full training state.

    The full state is every global variable: weights, optimizer slots, batch-norm
    moving statistics and the global step, so a resumed run continues exactly.
    """

    def __init__(self, run_dir, max_to_keep=3, var_list=None):
        self.directory = checkpoint_dir(run_dir)
        ensure_writable(self.directory)
        self.saver = tf.train.Saver(var_list=var_list, max_to_keep=max_to_keep,
                                    save_relative_paths=True)

    def save(self, session, step):
        """Save at ``step``; on failure (disk full, ...) log it and keep the previous checkpoint."""
        try:
            path = self.saver.save(session, os.path.join(self.directory, CHECKPOINT_PREFIX),
                                   global_step=step, write_meta_graph=False)
            return path
        except (tf.errors.OpError, OSError, ValueError) as error:  # Saver wraps some as ValueError
            log.error("saving the checkpoint at step %d failed (%s); the previous checkpoint %s is "
                      "kept", step, getattr(error, "message", error),
                      tf.train.latest_checkpoint(self.directory))
            return None

    def restore_latest(self, session):
        """Restore the newest checkpoint if there is one; returns its path or None."""
        path = tf.train.latest_checkpoint(self.directory)
        if path:
            self.saver.restore(session, path)
        return path
