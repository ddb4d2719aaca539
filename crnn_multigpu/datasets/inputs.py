"""What a user hands over to be read, as the images to read: one loader for every input.

An input is a path (an image file, a PDF, a multi-page TIFF), a PIL image, a numpy array
(``[height, width]`` grey, or ``[height, width, channels]``) or encoded bytes. Each gives one
or more :class:`Source` s, an image each, named for messages and results:

- an image file: its path, read as a viewer shows it (EXIF orientation applied:
  :func:`~crnn_multigpu.datasets.images.open_image`);
- a PDF (known by its first bytes): each page, ``file.pdf#page=N``, drawn by poppler at the dpi
  asked (:mod:`crnn_multigpu.datasets.pdf`);
- a TIFF of several frames (a scanner's multi-page TIFF): each frame as a page,
  ``file.tif#page=N``, as PDF pages are named; a PDF and a multi-page TIFF are *documents*,
  whose pages a :class:`~crnn_multigpu.datasets.pdf.PageSelection` chooses;
- a PIL image, an array or bytes: ``<image N>``, ``<array N>``, ``<bytes N>``, N its place
  among the inputs (from 1).

Nothing is decoded until a source's ``load()`` is called: one page in memory at a time, and a
file whose header declares too many pixels is refused before its pixels are read. An input
that cannot be read (missing, damaged, a PDF page past its end) still gives its source, whose
``load()`` raises the reason (:class:`~crnn_multigpu.datasets.images.UnreadableImage`, a
ValueError): each input succeeds or fails on its own, in its place.
"""
import collections
import functools
import os

import numpy as np
from PIL import Image

from crnn_multigpu.datasets import pdf
from crnn_multigpu.datasets.files_check import not_an_image
from crnn_multigpu.datasets.images import UNREADABLE, UnreadableImage, open_image, quiet_pillow

Source = collections.namedtuple("Source", ["name", "load", "dpi"], defaults=(None,))
Source.__doc__ = """One image to read: ``name`` (module docstring), ``load()``, the image (a
decoded PIL image, as a viewer shows it) or :class:`UnreadableImage` saying why not, and the
dpi a PDF page is drawn at (None for an image)."""
# Formats whose frames are pages. The frames of an animation (GIF, APNG, WebP) are not:
# such a file is read as its first frame, as a viewer shows it first.
PAGED_FORMATS = ("TIFF",)


def as_list(inputs):
    """``inputs`` as a list: one input (a path, an image, an array or bytes) or several."""
    if isinstance(inputs, (str, bytes, bytearray, os.PathLike, Image.Image, np.ndarray)):
        return [inputs]
    return list(inputs)


def sources(inputs, selection=None, dpi=pdf.DEFAULT_DPI, documents=True):
    """The :class:`Source` s of ``inputs`` (:func:`as_list`), in order: an image each, every
    chosen page of each document (``selection``: a PageSelection, or None for every page; PDF
    pages drawn at ``dpi``). Without ``documents`` (word and line crops) a PDF is one source
    that refuses to load, saying to read its pages as pages. ValueError when ``selection`` is
    given and no input is a document."""
    found, any_document = [], False
    for index, given in enumerate(as_list(inputs), 1):
        if isinstance(given, (str, os.PathLike)):
            path_sources, is_document = _path_sources(given, selection, dpi, documents)
            found.extend(path_sources)
            any_document = any_document or is_document
        else:
            found.append(Source(_memory_name(given, index), functools.partial(_in_memory, given,
                                                                              index)))
    if selection is not None and not any_document:
        raise ValueError("pages %s chooses pages of documents (PDFs, multi-page TIFFs), and none "
                         "of the inputs is one: leave the page selection out to read the images"
                         % selection.text)
    return found


def _path_sources(path, selection, dpi, documents):
    """``(sources, whether it is a document)`` of the file at ``path``."""
    name = os.fspath(path)
    if pdf.is_pdf(name):
        if not documents:
            return [_refused(name, not_an_image(name))], True
        try:
            numbers = _chosen(pdf.page_count(name), selection, name, "PDF")
        except ValueError as error:
            return [_refused(name, reason_of(error, name))], True
        return [Source(pdf.page_name(name, number),
                       functools.partial(pdf.render_page, name, number, dpi), dpi)
                for number in numbers], True
    frames = _frame_count(name)
    if frames < 2:
        return [Source(name, functools.partial(open_image, name))], False
    try:
        numbers = _chosen(frames, selection, name, "TIFF")
    except ValueError as error:
        return [_refused(name, reason_of(error, name))], True
    return [Source(pdf.page_name(name, number), functools.partial(_frame, name, number))
            for number in numbers], True


def _chosen(count, selection, name, kind):
    """The page numbers of a document of ``count`` pages that ``selection`` chooses."""
    return selection.numbers(count, name, kind) if selection else range(1, count + 1)


def _frame_count(path):
    """How many pages the image file at ``path`` holds (its header only); 1 for a file of one
    frame, an animation, or one that cannot be opened (its load says why). Only a regular file
    is opened: a FIFO would wait for a writer for ever (its load refuses it unopened)."""
    if not os.path.isfile(path):
        return 1
    try:
        with quiet_pillow():  # a bomb is refused by its load, in one line
            with Image.open(path) as header:
                if header.format not in PAGED_FORMATS:
                    return 1
                return getattr(header, "n_frames", 1)
    except UNREADABLE:
        return 1


def _frame(path, number):
    """Page ``number`` (from 1) of the multi-page file at ``path``, named as a page."""
    try:
        return open_image(path, frame=number - 1)
    except UnreadableImage as error:
        raise UnreadableImage(pdf.page_name(path, number), error.reason)


def reason_of(error, name):
    """Why ``error`` (raised reading the input ``name``) stopped it, without the name the
    message starts with: one line for ``skipped: NAME: REASON``."""
    text = getattr(error, "reason", None) or str(error)
    text = str(text).strip().splitlines()[0] if str(text).strip() else repr(error)
    for prefix in ("cannot read image %s: ", "cannot read PDF %s: ", "cannot read page %s: ",
                   "page %s: ", "PDF %s ", "TIFF %s "):
        if text.startswith(prefix % name):
            return text[len(prefix % name):]
    return text


def _refused(name, reason):
    """A source that refuses to load, saying ``reason``."""
    def load():
        raise UnreadableImage(name, reason)
    return Source(name, load)


def _memory_name(given, index):
    kind = "image" if isinstance(given, Image.Image) else \
        "array" if isinstance(given, np.ndarray) else "bytes"
    return "<%s %d>" % (kind, index)


def _in_memory(given, index):
    """The PIL image of an input held in memory: a PIL image, a numpy array or bytes."""
    name = _memory_name(given, index)
    if isinstance(given, np.ndarray):
        try:
            given = Image.fromarray(_image_array(given))
        except (TypeError, ValueError) as error:
            raise UnreadableImage(name, "a %s array of shape %s is not an image (%s): pass "
                                        "[height, width] grey or [height, width, 3 or 4] colour"
                                  % (given.dtype, given.shape, error))
    elif not isinstance(given, (Image.Image, bytes, bytearray, memoryview)):
        raise UnreadableImage(name, "a %s is not an image: pass paths, PIL images, numpy "
                                    "arrays or encoded bytes" % type(given).__name__)
    try:
        return open_image(given)
    except UnreadableImage as error:
        raise UnreadableImage(name, error.reason)


def _image_array(array):
    """A numpy image as Pillow takes it: booleans as 0/255, other integers as 8 bits when they
    fit, floats as they are (read by their values: [0, 1] or [0, 255]; colour as 8 bits)."""
    if array.dtype == np.bool_:
        return array.astype(np.uint8) * 255
    if np.issubdtype(array.dtype, np.integer) and array.size and \
            0 <= array.min() and array.max() <= 255:
        return array.astype(np.uint8)
    if np.issubdtype(array.dtype, np.floating) and array.ndim == 2:
        return array.astype(np.float32)
    if np.issubdtype(array.dtype, np.floating) and array.ndim == 3 and array.shape[2] in (3, 4) \
            and array.size and np.isfinite(array).all() and array.min() >= 0:
        # Colour in floats (matplotlib's imread gives [0, 1] RGBA), which Pillow has no mode
        # for: as 8 bits, read by their values as grey floats are.
        scale = 255.0 if array.max() <= 1.0 else 1.0
        return np.clip(np.rint(array * scale), 0, 255).astype(np.uint8)
    return array
