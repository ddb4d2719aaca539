"""Folder datasets: image files plus a ``labels.txt`` index.

``labels.txt`` is UTF-8 with one sample per line::

    images/000000001.png<TAB>hello world

The path is relative to the folder; the text is everything after the TAB (it may contain
spaces, not at its ends). Blank lines are skipped. A line with a second TAB (a third column)
or a label with spaces around it is refused, naming the file and line: no reading has them,
so such a label would score as wrong whatever was read.
"""
import codecs
import io
import logging
import os
import sys
import time

from crnn_multigpu.datasets.charset import describe_rejections, filter_labels
from crnn_multigpu.datasets.images import UNREADABLE, load_image, scaled_width
from crnn_multigpu.files import make_folder, write_text, written_whole

log = logging.getLogger(__name__)
LABELS_FILE = "labels.txt"
_GOOD_LINE = "a good line looks like 'images/000000001.png<TAB>hello'"


def format_label_line(relative_path, text):
    """One ``labels.txt`` line (with newline); rejects paths/texts that would not read back."""
    if not relative_path or any(c in relative_path for c in "\t\r\n"):
        raise ValueError("image path %r must be non-empty without TAB or newline" % relative_path)
    if "\n" in text or "\r" in text:
        raise ValueError("label %r must not contain a newline" % text)
    problem = label_problem(text)
    if problem:
        raise ValueError("label %r %s" % (text, problem))
    return "%s\t%s\n" % (relative_path, text)


def label_problem(text):
    """Why ``text`` cannot be a label (what to do included), or None: a TAB in it (a third
    column: which one is the label?) or white space at its ends (no reading has it)."""
    if "\t" in text:
        return ("holds a TAB: a line is the image path, one TAB and the label; remove the "
                "extra columns")
    if text != text.strip():
        return "has white space at its start or end, which no reading has: remove it"
    return None


def read_labels(labels_path):
    """Parse ``labels.txt`` into a list of ``(relative_path, text)``.

    Raises ValueError naming the file and line number of a malformed line.
    """
    entries = []
    with io.open(labels_path, "rb") as handle:
        raw = handle.read()
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        before = raw[:error.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line_number = before.count(b"\n") + 1
        raise ValueError("%s line %d: not UTF-8 text (byte 0x%02x: %s); save the file as UTF-8"
                         % (labels_path, line_number, raw[error.start], error.reason))
    with io.StringIO(content, newline="") as handle:
        for line_number, line in enumerate(handle, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise ValueError("%s line %d: no TAB between image path and text in %r; %s"
                                 % (labels_path, line_number, line[:80], _GOOD_LINE))
            path, text = line.split("\t", 1)
            if not path.strip():
                raise ValueError("%s line %d: empty image path before the TAB; %s"
                                 % (labels_path, line_number, _GOOD_LINE))
            problem = label_problem(text)
            if problem:
                raise ValueError("%s line %d: the label %r %s; %s"
                                 % (labels_path, line_number, text[:80], problem, _GOOD_LINE))
            entries.append((path, text))
    return entries


def write_labels(root, entries, name=LABELS_FILE):
    """Write ``(relative_path, text)`` pairs to ``root/labels.txt`` (or ``name``), whole or not at
    all (:func:`~crnn_multigpu.files.write_text`); returns its path."""
    make_folder(root)
    labels_path = os.path.join(root, name)
    write_text(labels_path, "".join(format_label_line(relative_path, text)
                                    for relative_path, text in entries))
    return labels_path


class LabelledImageDataset(object):
    """Shared behaviour of the on-disk datasets.

    Subclasses set ``self.texts`` (one per sample) and implement
    ``_read(i, degrade) -> array`` (``load_image`` of the raw image, passing ``degrade``)
    and ``describe(i) -> str``. Samples whose label fails ``charset.check_label`` are
    dropped at load: ``rejected`` maps the reason to the dropped texts. ``safe_get``
    returns None for an unreadable image and records it in ``unreadable``.
    """

    height = 32
    texts = ()

    def _drop_unusable_labels(self, items, texts, charset, time_steps, source):
        """Return the items whose texts pass the filter, logging a summary of the rest."""
        self.rejected = {}
        self.unreadable = []
        if charset is None:
            return list(items), list(texts)
        kept, self.rejected = filter_labels(texts, charset, time_steps)
        if self.rejected:
            log.warning("%s: %s", source, describe_rejections(self.rejected, len(texts)))
        return [items[i] for i in kept], [texts[i] for i in kept]

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, index):
        """``(image array [height, w], text)``; raises ValueError on an unreadable image."""
        return self._sample(index)

    def safe_get(self, index, degrade=None):
        """Like ``ds[index]`` but returns None (and records it) when the image is unreadable.

        ``degrade``: applied to the raw image before normalisation (see ``load_image``);
        training-time augmentation passes one per sample.
        """
        try:
            return self._sample(index, degrade)
        except ValueError as error:
            self.unreadable.append(self.describe(index))
            log.debug("%s", error)
            return None

    def _sample(self, index, degrade=None):
        if not -len(self) <= index < len(self):
            raise IndexError("sample %d out of range for %d samples" % (index, len(self)))
        return self._read(index, degrade), self.texts[index]

    def width_keys(self, indices):
        """Label lengths of samples ``indices``: the bucketing key where widths are unknown."""
        return [len(self.texts[index]) for index in indices]

    def _read(self, index, degrade=None):
        raise NotImplementedError

    def describe(self, index):
        raise NotImplementedError


class FolderDataset(LabelledImageDataset):
    """A folder with ``labels.txt`` and image files.

    Args:
      root: the folder.
      charset, time_steps: when given, labels that ``charset.check_label``
        rejects are dropped (see ``rejected``).
      height: images are normalised to this height by ``load_image``.
    """

    def __init__(self, root, charset=None, time_steps=None, height=32):
        if not os.path.isdir(root):
            raise FileNotFoundError("dataset folder %s does not exist" % root)
        labels_path = os.path.join(root, LABELS_FILE)
        if not os.path.isfile(labels_path):
            raise FileNotFoundError("%s has no %s: a folder dataset needs one line per image, %s "
                                    "(crnn-generate writes such folders)"
                                    % (root, LABELS_FILE, _GOOD_LINE))
        entries = read_labels(labels_path)
        if not entries:
            raise ValueError("%s lists no samples; %s" % (labels_path, _GOOD_LINE))
        self.root = root
        self.height = height
        paths = [path for path, _ in entries]
        self.paths, self.texts = self._drop_unusable_labels(
            paths, [text for _, text in entries], charset, time_steps, labels_path)

    def image_path(self, index):
        """Absolute-or-root-relative file path of sample ``index``."""
        return os.path.join(self.root, self.paths[index])

    def describe(self, index):
        return self.image_path(index)

    def width_keys(self, indices):
        """Image widths of samples ``indices`` at the dataset's height, from the files' headers
        (no pixel decoding); label lengths stand in for files whose header cannot be read."""
        from PIL import Image
        keys = []
        for index in indices:
            text = self.texts[index]
            try:
                with Image.open(self.image_path(index)) as image:
                    keys.append(scaled_width(image.size[0], image.size[1], self.height))
            except UNREADABLE:
                keys.append(len(text) * self.height // 2)
        return keys

    def _read(self, index, degrade=None):
        return load_image(self.image_path(index), self.height, degrade)


def with_progress(items, total, every=1000, stream=None, what="images"):
    """Yield ``items``, printing ``done/total`` and the rate to stderr every ``every`` items."""
    stream = sys.stderr if stream is None else stream
    started = time.time()
    done = 0
    for item in items:
        yield item
        done += 1
        if every and (done % every == 0 or done == total):
            rate = done / max(time.time() - started, 1e-9)
            stream.write("%d/%d %s, %.0f %s/s\n" % (done, total, what, rate, what))
            stream.flush()


def _render_slice(job):
    """Worker: render samples ``start .. start + count - 1`` into ``out_dir/images``."""
    out_dir, generator, start, count = job
    entries = []
    for index, (image, text) in enumerate(generator.iterate(start, count), start):
        relative = "images/%09d.png" % index
        with written_whole(os.path.join(out_dir, relative)) as temporary:
            image.save(temporary, compress_level=1)
        entries.append((relative, text))
    return entries


def write_dataset(out_dir, generator, count, start=0, progress=True, every=1000, workers=1):
    """Render ``count`` samples of ``generator`` (a ``SyntheticTextGenerator``) into ``out_dir``.

    Writes ``charset.txt``, ``images/000000123.png`` (named by sample index) and, last,
    ``labels.txt``: the folder is a dataset only when complete. Every file is written whole
    or not at all, and one that cannot be written (full disk, permissions) is one
    :class:`~crnn_multigpu.files.WriteError` naming it. With
    ``workers`` > 1, slices of the index range are rendered in that many
    processes (samples are a function of their index, so the result is the
    same). Returns a dict with ``count``, ``seconds`` and ``images_per_second``.
    """
    image_dir = os.path.join(out_dir, "images")
    make_folder(image_dir)
    generator.charset.to_file(os.path.join(out_dir, "charset.txt"))
    started = time.time()
    chunk = max(1, min(every or 1000, -(-count // max(1, workers))))
    jobs = [(out_dir, generator, first, min(chunk, start + count - first))
            for first in range(start, start + count, chunk)]
    if workers > 1 and len(jobs) > 1:
        import multiprocessing
        pool = multiprocessing.get_context("spawn").Pool(min(workers, len(jobs)))
        slices = pool.imap(_render_slice, jobs)
    else:
        pool, slices = None, (_render_slice(job) for job in jobs)
    try:
        entries = []
        for part in slices:
            entries.extend(part)
            if progress:
                rate = len(entries) / max(time.time() - started, 1e-9)
                sys.stderr.write("%d/%d images, %.0f images/s\n" % (len(entries), count, rate))
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    write_labels(out_dir, entries)
    seconds = time.time() - started
    return {"count": count, "seconds": seconds, "images_per_second": count / max(seconds, 1e-9)}
