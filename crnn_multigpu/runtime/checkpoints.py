"""Checkpoints that survive being killed at any moment, damage on disk, full disks and divergence.

TensorFlow's Saver writes the data and index files first and only then swaps
the small ``checkpoint`` state file (an atomic rename), so a process killed
during a save leaves the state file naming the last complete checkpoint. This
module adds what the Saver leaves open:

- reading: ``latest_checkpoint`` returns the newest checkpoint that is *intact*
  (``checkpoint_problem``), found from the state file and from the files on
  disk, and names in one warning the damaged ones it skipped;
- writing: ``CheckpointSaver`` never saves NaN/Inf, never replaces a file of an
  existing checkpoint (a damaged one is renamed to ``*.damaged`` first), and
  turns a failed write into one line that keeps the last good checkpoint;
- a writability check before training, and the lock that lets one trainer at a time use a
  run folder. (The run's config.json is ``ocr.run_config.RunConfig``'s.)
"""
import contextlib
import errno
import logging
import os
import re

import numpy as np

from crnn_multigpu.compat import tf
from crnn_multigpu.files import write_text
from crnn_multigpu.tflog import one_line

log = logging.getLogger(__name__)

CHECKPOINT_SUBDIR = "checkpoints"
CHECKPOINT_PREFIX = "model.ckpt"
DAMAGED_SUFFIX = ".damaged"

# The files of checkpoint PREFIX: PREFIX.index and PREFIX.data-00000-of-00001 (one per shard),
# plus the .tempstateNNN names TensorFlow writes them under before renaming them.
_FILE = re.compile(r"^(?P<prefix>.+?)\.(index|data-\d{5}-of-\d{5})(?P<temp>\.tempstate\d+)?$")
_STEP = re.compile(r"-(\d+)$")


class CheckpointError(RuntimeError):
    """A checkpoint problem the user must act on; the message says what to do (one line)."""
    user_facing = True


class NoIntactCheckpointError(CheckpointError):
    """Checkpoint files exist, but none of them can be used."""


class NonFiniteStateError(CheckpointError):
    """The variables hold NaN or Inf: such a state is never saved."""


class CheckpointSaveError(CheckpointError):
    """Writing a checkpoint failed (disk full, permissions, ...); the previous one is kept."""


def ensure_writable(directory):
    """Create ``directory`` and prove a file can be written there, or raise a clear error."""
    # A name of this process's own: two trainers started at once must not remove each other's.
    probe = os.path.join(directory, ".write-test-%d" % os.getpid())
    try:
        os.makedirs(directory, exist_ok=True)
        write_text(probe, "ok")
        os.remove(probe)
    except OSError as error:
        raise OSError("cannot write checkpoints to %s: %s. Choose another --out directory or free "
                      "disk space before training." % (directory, error.strerror or error))


# The file in a run folder whose lock its trainer holds (``run_folder_lock``).
LOCK_NAME = ".crnn-train.lock"


class RunFolderInUse(RuntimeError):
    """Another process holds the run folder's lock: it trains into that folder now."""
    user_facing = True


@contextlib.contextmanager
def run_folder_lock(run_dir):
    """Hold the exclusive lock of the run folder ``run_dir`` (which must exist) while the block
    runs; raise ``RunFolderInUse`` at once, naming the folder, when another process holds it.

    Two trainers in one folder would each save over the other's checkpoints and config.json.
    The lock is ``flock`` on ``LOCK_NAME``, taken on an open file: the kernel releases it when
    its holder closes the file or dies in any way, SIGKILL included, so no lock outlives a
    process. The file holds the holder's process id, for the message.
    """
    try:
        import fcntl
    except ImportError:  # Windows has no flock: the folder goes unguarded there, as before
        yield None
        return
    path = os.path.join(run_dir, LOCK_NAME)
    # "a+": opening must not truncate the id of a holder before the lock says who holds it.
    with open(path, "a+") as stream:
        try:
            fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            raise RunFolderInUse(
                "another crnn-train%s holds the run folder %s (its lock %s): wait for it to "
                "end, or choose another --out" % (_holder(path), run_dir, path))
        stream.seek(0)
        stream.truncate()
        stream.write("%d\n" % os.getpid())
        stream.flush()
        try:
            yield path
        finally:
            stream.seek(0)
            stream.truncate()  # a later holder is never named by this one's stale id


def _holder(lock_path):
    """`` (process N)`` of the id in a held lock file, or "" when it holds none yet."""
    try:
        with open(lock_path) as stream:
            text = stream.read().strip()
    except OSError:
        return ""
    return " (process %s)" % text if text.isdigit() else ""


def checkpoint_dir(run_dir):
    """The folder holding the run's TensorFlow checkpoints."""
    return os.path.join(run_dir, CHECKPOINT_SUBDIR)


# -- finding and verifying -------------------------------------------------------------------

def checkpoint_step(prefix):
    """The global step in a checkpoint's name (``model.ckpt-1500`` -> 1500), or -1."""
    match = _STEP.search(prefix)
    return int(match.group(1)) if match else -1


def checkpoint_files(prefix):
    """The files on disk that belong to checkpoint ``prefix`` (index, data shards, temporaries)."""
    directory, base = os.path.split(prefix)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    return [os.path.join(directory, name) for name in sorted(names)
            if _FILE.match(name) and _FILE.match(name).group("prefix") == base]


def checkpoint_prefixes(directory):
    """Every checkpoint in ``directory``, newest (highest global step) first.

    Taken from the ``checkpoint`` state file's list *and* from the index and data files on
    disk: a deleted or garbled state file, or a checkpoint whose index file is gone, hides
    none of the others. The list may name damaged checkpoints; see ``checkpoint_problem``.
    """
    found = set()
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError, UnicodeDecodeError):  # a garbled state file
        state = None
    if state is not None:
        # By name only: our Saver writes relative paths, and a run folder that was moved
        # still holds its checkpoints beside the state file.
        found.update(os.path.join(directory, os.path.basename(path)) for path in
                     list(state.all_model_checkpoint_paths) + [state.model_checkpoint_path])
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    for name in names:
        match = _FILE.match(name)
        if match and not match.group("temp"):  # a temporary alone is a save under way
            found.add(os.path.join(directory, match.group("prefix")))
    return sorted(found, key=lambda prefix: (checkpoint_step(prefix), prefix), reverse=True)


# Verdicts of checkpoint_problem by (file, size, modification time): a process that looks
# at a run several times (config check, resume step, restore; a test polling) reads each
# checkpoint once.
_verdicts = {}


def checkpoint_problem(prefix):
    """Why the checkpoint at ``prefix`` cannot be used, in a few words; None when it is intact.

    Intact means: the index file reads, every tensor it lists reads back in full from the
    data files (TensorFlow checks each one's size and checksum against the index) with the
    shape the index gives it, and every floating-point value is finite. Reading a whole
    checkpoint costs about as much as restoring it.
    """
    files = checkpoint_files(prefix)
    if not files:
        return "files missing"
    if prefix + ".index" not in files:
        return "index file missing"
    if not any(".data-" in os.path.basename(path) for path in files):
        return "data file missing"
    try:
        signature = tuple((path, os.stat(path).st_size, os.stat(path).st_mtime_ns)
                          for path in files)
    except OSError as error:  # removed while we looked
        return "unreadable: %s" % (error.strerror or error)
    if signature not in _verdicts:
        _verdicts[signature] = _read_all(prefix)
    return _verdicts[signature]


def _read_all(prefix):
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        for name in sorted(shapes):
            value = np.asarray(reader.get_tensor(name))
            if list(value.shape) != list(shapes[name]):
                return "%s has shape %s but the index says %s" % (name, list(value.shape),
                                                                  list(shapes[name]))
            if value.dtype.kind in "fc" and not np.all(np.isfinite(value)):
                return "%s holds NaN or Inf" % name
    except Exception as error:  # the readers raise OpError, IndexError, ... by TF version
        return "unreadable: %s" % one_line(error)
    return None


# Damaged checkpoints already named in a warning by this process: it may look several times.
_reported = set()


def newest_intact(directory):
    """Path prefix of the newest intact checkpoint in ``directory``; None if it holds none at all.

    Damaged newer ones are skipped with one warning naming them and why. Raises
    ``NoIntactCheckpointError`` when there are checkpoint files but none is intact: never
    a silent "no checkpoint", which would let training start again from step 0.
    """
    # A second look when nothing is intact: another process may have been between the
    # data and the index file of its first save, which is complete a moment later.
    for _ in range(2):
        prefixes, skipped = checkpoint_prefixes(directory), []
        if not prefixes:
            return None
        for prefix in prefixes:
            problem = checkpoint_problem(prefix)
            if problem is None:
                if skipped and tuple(skipped) not in _reported:
                    _reported.add(tuple(skipped))
                    log.warning("skipped damaged checkpoint(s) %s; using %s",
                                _describe(skipped), prefix)
                return prefix
            skipped.append((prefix, problem))
    raise NoIntactCheckpointError(
        "%s holds %d checkpoint(s) but none is intact: %s. Restore them from a backup, or move "
        "them away to train from the start" % (directory, len(skipped), _describe(skipped)))


def _describe(skipped):
    return ", ".join("%s (%s)" % (os.path.basename(prefix), problem) for prefix, problem in skipped)


def latest_checkpoint(run_dir):
    """Path prefix of the newest intact checkpoint of a run (or of a checkpoint folder), or None.

    None only when there are no checkpoint files at all; see ``newest_intact``.
    """
    for directory in (checkpoint_dir(run_dir), run_dir):
        if os.path.isdir(directory) and checkpoint_prefixes(directory):
            return newest_intact(directory)
    return None


def require_checkpoint(run_dir, prefix=None):
    """The checkpoint to read: ``prefix``, else the newest of ``run_dir``; intact, or an error."""
    if prefix is not None:
        problem = checkpoint_problem(prefix)
        if problem == "files missing":
            raise FileNotFoundError("no checkpoint %s (no %s.index); pass the --out directory of "
                                    "crnn-train, or a checkpoint path prefix in its %s/ folder"
                                    % (prefix, os.path.basename(prefix), CHECKPOINT_SUBDIR))
        if problem:
            raise NoIntactCheckpointError("checkpoint %s is damaged (%s); pass the run directory "
                                          "to use its newest intact checkpoint" % (prefix, problem))
        return prefix
    path = latest_checkpoint(run_dir)
    if path is None:
        raise FileNotFoundError("no checkpoint found in %s (looked in %s). Train first with "
                                "crnn-train --out %s" % (run_dir, checkpoint_dir(run_dir), run_dir))
    return path


def variables_mismatch(prefix, variables):
    """None when the checkpoint at ``prefix`` holds every one of ``variables`` (by plain name)
    in its shape, else a few words on the first that differs."""
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    for variable in variables:
        name = variable.op.name
        if name not in shapes:
            return "has no variable %s (it was made by another kind of model)" % name
        if list(shapes[name]) != variable.shape.as_list():
            return "holds %s with shape %s, this model's is %s" % (
                name, list(shapes[name]), variable.shape.as_list())
    return None


class WarmStart(object):
    """Model weights taken from another run's (or a shipped model's) checkpoint, while the
    optimizer state and the global step start afresh: fine-tuning, or training on from a
    variables-only export.

    Built with the graph (it checks names and shapes and makes its Saver then); ``restore``
    loads the weights into a session after the variables were initialised.
    """

    def __init__(self, prefix, variables):
        mismatch = variables_mismatch(prefix, variables)
        if mismatch:
            raise ValueError("--init-from %s %s: pass the --model (and --charset) it was "
                             "trained with" % (prefix, mismatch))
        self.prefix = prefix
        self.saver = tf.train.Saver(var_list=dict((v.op.name, v) for v in variables))

    def restore(self, session):
        """Load the weights into ``session``; returns the checkpoint's path."""
        self.saver.restore(session, self.prefix)
        return self.prefix


def move_aside(prefix, reason):
    """Rename the files of a damaged checkpoint to ``*.damaged``, so no save replaces them."""
    for path in checkpoint_files(prefix):
        target, number = path + DAMAGED_SUFFIX, 1
        while os.path.exists(target):
            target, number = "%s%s.%d" % (path, DAMAGED_SUFFIX, number), number + 1
        os.rename(path, target)
    log.warning("moved the damaged checkpoint %s (%s) aside as %s*%s before saving that step "
                "again", prefix, reason, os.path.basename(prefix), DAMAGED_SUFFIX)


# -- saving ----------------------------------------------------------------------------------

class FiniteCheck(object):
    """One session call that tells which floating-point variables hold NaN or Inf."""

    def __init__(self, variables):
        self.variables = [v for v in variables if v.dtype.base_dtype.is_floating]
        with tf.name_scope("finite_check"):
            self._flags = tf.stack([tf.reduce_all(tf.is_finite(v)) for v in self.variables]) \
                if self.variables else None

    def nonfinite(self, session):
        """Names of the variables that hold NaN or Inf now."""
        if self._flags is None:
            return []
        flags = session.run(self._flags)
        return [v.op.name for v, finite in zip(self.variables, flags) if not finite]


class CheckpointSaver(object):
    """Periodic saving of the full training state that never loses a good checkpoint.

    The full state is ``var_list`` (default: every global variable); a trainer passes its
    wrapper's ``savable_variables``: weights, optimizer slots, batch-norm moving statistics
    and the global step under their plain names, so a resumed run continues exactly, under
    any placement strategy and tower count.
    Before a save, the variables are checked to be finite (a diverged run can poison
    batch-norm statistics or optimizer slots while its loss still looks finite);
    files of an existing checkpoint are never replaced.
    """

    def __init__(self, run_dir, max_to_keep=3, var_list=None):
        self.directory = checkpoint_dir(run_dir)
        ensure_writable(self.directory)
        self.saver = tf.train.Saver(var_list=var_list, max_to_keep=max_to_keep,
                                    save_relative_paths=True)
        variables = var_list.values() if isinstance(var_list, dict) else var_list
        self.finite = FiniteCheck(list(variables or tf.global_variables()))
        self.last_path = None  # the newest checkpoint of this state: restored or saved here

    def save(self, session, step):
        """Save at ``step``; returns the path, or None after a failed write (logged in one line).

        Training may go on after a failed write (space may be freed); the previous
        checkpoint is kept. Raises ``NonFiniteStateError`` instead of saving NaN/Inf.
        """
        try:
            return self.save_or_raise(session, step)
        except CheckpointSaveError as error:
            log.error("%s", error)
            return None

    def save_or_raise(self, session, step):
        """Like ``save`` but a failed write raises ``CheckpointSaveError``."""
        prefix = os.path.join(self.directory, "%s-%d" % (CHECKPOINT_PREFIX, step))
        if prefix == self.last_path:
            return prefix  # this very state is on disk already (restored, or saved at this step)
        bad = self.finite.nonfinite(session)
        if bad:
            raise NonFiniteStateError(
                "refusing to save step %d: %d variable(s) hold NaN or Inf (%s); %s. The model "
                "diverged: lower --lr (keep --clip-norm) and continue with --resume"
                % (step, len(bad), ", ".join(bad[:3]) + (", ..." if len(bad) > 3 else ""),
                   self._kept()))
        if checkpoint_files(prefix):
            problem = checkpoint_problem(prefix)
            if problem is None:
                raise CheckpointSaveError("not saving step %d: %s already holds an intact "
                                          "checkpoint of that step from another run, which is "
                                          "never overwritten" % (step, prefix))
            move_aside(prefix, problem)
        try:
            path = self.saver.save(session, os.path.join(self.directory, CHECKPOINT_PREFIX),
                                   global_step=step, write_meta_graph=False)
        except (tf.errors.OpError, OSError, ValueError) as error:  # Saver wraps some as ValueError
            for partial in checkpoint_files(prefix):  # only ours: the step had no files before
                _remove_quietly(partial)
            raise CheckpointSaveError("could not save the checkpoint of step %d in %s: %s; %s. "
                                      "Free disk space (or fix permissions) and continue with "
                                      "--resume" % (step, self.directory, one_line(error),
                                                    self._kept()))
        self.last_path = path
        return path

    def _kept(self):
        if self.last_path is None:
            return "no checkpoint of this run was saved yet"
        return "the last good checkpoint %s is kept" % self.last_path

    def restore_latest(self, session):
        """Restore the newest intact checkpoint if there is one; returns its path or None."""
        path = newest_intact(self.directory)
        if path:
            self.saver.restore(session, path)
            self.last_path = path
        return path


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass
