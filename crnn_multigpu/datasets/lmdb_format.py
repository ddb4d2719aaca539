"""LMDB datasets in the layout of crnn.pytorch and deep-text-recognition-benchmark.

Keys (all values are bytes)::

    num-samples        ASCII decimal count N
    image-000000001    encoded image (PNG, JPEG, ...)
    label-000000001    UTF-8 text
    ...                indices run from 1 to N
"""
import io
import os
import threading

from crnn_multigpu.datasets.folder import LabelledImageDataset
from crnn_multigpu.files import make_folder, require_space, written_whole
from crnn_multigpu.datasets.images import load_image

NUM_SAMPLES_KEY = b"num-samples"
DATA_FILE = "data.mdb"


def _import_lmdb():
    try:
        import lmdb
    except ImportError as error:
        raise ImportError("LMDB datasets need the 'lmdb' package, which could not be imported "
                          "(%s): pip install lmdb (on Python 3.7: pip install 'lmdb<2')" % error)
    return lmdb


def image_key(index):
    """Key of the 1-based sample ``index``'s image."""
    return ("image-%09d" % index).encode("ascii")


def label_key(index):
    """Key of the 1-based sample ``index``'s label."""
    return ("label-%09d" % index).encode("ascii")


# LMDB refuses to open one environment twice in a process, yet a train and an
# eval view of the same database are legitimate: share the handle, counting users.
_OPEN_ENVIRONMENTS = {}
_OPEN_LOCK = threading.Lock()


def _acquire_environment(lmdb, path):
    key = (os.path.realpath(path), os.getpid())
    with _OPEN_LOCK:
        entry = _OPEN_ENVIRONMENTS.get(key)
        if entry is None:
            env = _open_checked(lmdb, path)
            entry = _OPEN_ENVIRONMENTS[key] = [env, 0]
        entry[1] += 1
        return key, entry[0]


def _open_checked(lmdb, path):
    """Open the environment read-only, after checking ``data.mdb`` holds every page it claims.

    A truncated file would otherwise be mapped and the first read past its end would kill
    the process with SIGBUS; a garbled one raises ``lmdb.Error``. Both become a ValueError
    naming the file.
    """
    data_file = os.path.join(path, DATA_FILE)
    try:
        env = lmdb.open(path, readonly=True, lock=False, readahead=False, meminit=False,
                        max_readers=256, subdir=True)
    except lmdb.Error as error:
        raise ValueError("%s is not a readable LMDB file (%s)" % (data_file, _reason(error)))
    try:
        needed = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
        size = os.path.getsize(data_file)
    except (lmdb.Error, OSError) as error:
        env.close()
        raise ValueError("%s is not a readable LMDB file (%s)" % (data_file, _reason(error)))
    if size < needed:
        env.close()
        raise ValueError("%s is truncated: %d bytes, but its LMDB header needs %d; copy the "
                         "dataset again" % (data_file, size, needed))
    return env


def _reason(error):
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _release_environment(key):
    with _OPEN_LOCK:
        entry = _OPEN_ENVIRONMENTS.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            entry[0].close()
            del _OPEN_ENVIRONMENTS[key]


def _database_dir(path):
    return os.path.dirname(path) if os.path.basename(path) == DATA_FILE else path


class LmdbDataset(LabelledImageDataset):
    """Read-only view of an LMDB dataset; same interface as ``FolderDataset``.

    Labels are read once at construction (so unusable ones can be filtered);
    images are decoded on access. The environment is reopened after a fork,
    because LMDB handles must not cross processes.
    """

    def __init__(self, path, charset=None, time_steps=None, height=32):
        self._lmdb = _import_lmdb()
        self.path = _database_dir(path)
        if not os.path.isfile(os.path.join(self.path, DATA_FILE)):
            raise FileNotFoundError("no LMDB dataset at %s: expected %s inside it"
                                    % (self.path, DATA_FILE))
        self.height = height
        self._env, self._env_key = None, None
        try:
            indices, texts = self._read_labels()
        except self._lmdb.Error as error:
            self.close()
            raise ValueError("%s is not a readable LMDB file (%s)"
                             % (os.path.join(self.path, DATA_FILE), _reason(error)))
        except ValueError:
            self.close()
            raise
        self.indices, self.texts = self._drop_unusable_labels(
            indices, texts, charset, time_steps, self.path)

    def _read_labels(self):
        """(indices, texts) of every sample; ValueError naming the file (and key) if unusable."""
        with self._environment().begin() as txn:
            raw_count = txn.get(NUM_SAMPLES_KEY)
            if raw_count is None:
                raise ValueError("%s has no 'num-samples' key: not a crnn.pytorch-style LMDB "
                                 "dataset (write one with write_lmdb or crnn-generate --format "
                                 "lmdb)" % self.path)
            try:
                count = int(raw_count.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                raise ValueError("%s: num-samples is %r, not a whole number"
                                 % (self.path, bytes(raw_count[:40])))
            if count <= 0:
                raise ValueError("%s lists no samples: num-samples is %d" % (self.path, count))
            indices, texts = [], []
            for index in range(1, count + 1):
                key = label_key(index)
                raw_label = txn.get(key)
                if raw_label is None:
                    raise ValueError("%s: num-samples is %d but key %s is missing"
                                     % (self.path, count, key.decode("ascii")))
                try:
                    texts.append(bytes(raw_label).decode("utf-8"))
                except UnicodeDecodeError as error:
                    raise ValueError("%s: key %s is not UTF-8 text (%s)"
                                     % (self.path, key.decode("ascii"), error.reason))
                indices.append(index)
        return indices, texts

    def _environment(self):
        if self._env is None or self._env_key[1] != os.getpid():
            self._env_key, self._env = _acquire_environment(self._lmdb, self.path)
        return self._env

    def describe(self, index):
        return "%s in %s" % (image_key(self.indices[index]).decode("ascii"), self.path)

    def _read(self, index, degrade=None):
        try:
            with self._environment().begin() as txn:
                encoded = txn.get(image_key(self.indices[index]))
                encoded = None if encoded is None else bytes(encoded)
        except self._lmdb.Error as error:
            raise ValueError("cannot read image %s: %s" % (self.describe(index), _reason(error)))
        if encoded is None:
            raise ValueError("cannot read image %s: key is missing" % self.describe(index))
        try:
            return load_image(encoded, self.height, degrade)
        except ValueError as error:
            raise ValueError("cannot read image %s: %s"
                             % (self.describe(index), str(error).split(": ", 1)[-1]))

    def close(self):
        """Close the LMDB environment (it reopens on the next access)."""
        if self._env is not None and self._env_key[1] == os.getpid():
            _release_environment(self._env_key)
        self._env, self._env_key = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def _encode(image):
    if isinstance(image, (bytes, bytearray)):
        return bytes(image)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def write_lmdb(path, samples, overwrite=False, map_size=1 << 36, commit_every=1000):
    """Write ``(PIL image or encoded bytes, text)`` samples as an LMDB dataset at ``path``.

    PIL images are stored as PNG. Returns the number of samples written.
    ``map_size`` is the largest the database may grow (64 GiB by default); on
    Linux the file only takes the space actually used.

    ``data.mdb`` appears only complete: it is written under a temporary name and renamed.
    Nothing of it is left when writing fails, and a full disk or a folder that cannot be
    written is one :class:`~crnn_multigpu.files.WriteError` naming ``data.mdb``. No lock file
    is written (its sparse memory map killed the process with SIGBUS when the disk was full),
    and free space is checked before each commit (LMDB reports a full disk as an I/O error).
    """
    lmdb = _import_lmdb()
    data_file = os.path.join(path, DATA_FILE)
    if os.path.exists(data_file):
        if not overwrite:
            raise FileExistsError("%s already holds an LMDB database; pass overwrite=True or "
                                  "choose another folder" % path)
        for name in (DATA_FILE, "lock.mdb"):
            if os.path.exists(os.path.join(path, name)):
                os.remove(os.path.join(path, name))
    make_folder(path)
    with written_whole(data_file, errors=(lmdb.Error,)) as temporary:
        # One writer of a file no one reads yet: no lock file is needed.
        env = lmdb.open(temporary, map_size=map_size, subdir=False, lock=False)
        try:
            return _put_samples(env, samples, commit_every, data_file)
        finally:
            env.close()


# Room for what one commit writes beside its values: branch pages, the pages it copies on write.
_COMMIT_MARGIN = 1 << 20


def _put_samples(env, samples, commit_every, data_file):
    """Put ``samples`` into ``env`` ``commit_every`` at a time, checking before each commit that
    the disk of ``data_file`` has room for it; the count last. Returns the number written."""
    page = env.stat()["psize"]
    count, pending = 0, _COMMIT_MARGIN
    txn = env.begin(write=True)
    try:
        for image, text in samples:
            count += 1
            encoded, label = _encode(image), text.encode("utf-8")
            txn.put(image_key(count), encoded)
            txn.put(label_key(count), label)
            # A large value takes whole pages of its own; a label, a share of a leaf page.
            pending += -(-(len(encoded) + 16) // page) * page + 2 * (len(label) + 32)
            if count % commit_every == 0:
                require_space(data_file, pending)
                txn.commit()
                txn, pending = env.begin(write=True), _COMMIT_MARGIN
        # Written last: a reader never sees a count that covers missing samples.
        txn.put(NUM_SAMPLES_KEY, str(count).encode("ascii"))
        require_space(data_file, pending)
        txn.commit()
    except BaseException:
        txn.abort()
        raise
    return count
