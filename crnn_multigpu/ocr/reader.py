"""The reading front door: :class:`Reader` reads as ``crnn-predict`` reads, with the same
options and defaults (``crnn-predict`` is argparse over it).

    from crnn_multigpu import ocr
    reader = ocr.Reader("zh")                            # a shipped model, or a run folder
    doc = reader.read("scan.pdf", pages="1-3", dpi=150)  # pages: images, PDFs, TIFFs
    print(doc.text)
    reader.read_lines(["line1.png", "line2.png"])        # crops: one string each

A reader composes what a model reads with: the model (a shipped one by name, a run folder or a
checkpoint in it, an ONNX export for ``engine="onnx"``), what runs it (TensorFlow on ``towers``
towers, or onnxruntime), how its frames become text (greedy or a CTC beam; the character
language model of the model's language, on by default where the language says so, as for
Chinese; a lexicon) and, for pages, the page reader
(:class:`~crnn_multigpu.ocr.page_reader.PageReader`). Inputs are opened by one loader
(:mod:`crnn_multigpu.datasets.inputs`: EXIF orientation applied, each page of a PDF or a
multi-page TIFF); each input is read or skipped on its own.
"""
import collections
import os
from dataclasses import replace

from crnn_multigpu.datasets import pdf
from crnn_multigpu.datasets.inputs import reason_of, sources as input_sources
from crnn_multigpu.datasets.images import grey_page
from crnn_multigpu.ocr import char_lm
from crnn_multigpu.ocr.document import Document, Skipped
from crnn_multigpu.ocr.page_result import confidence
from crnn_multigpu.ocr.shipped import DEFAULT_MODEL, ENGINES, SHIPPED, resolve_run, shipped_model

# lm_weight W raises the character model's probabilities to the power W in the fused score
# (char_lm: log p_ctc + W log p_lm + B len). At 1 they count as counted, as much as the
# image's; above 1 the model is made surer than its own counts, overruling the pixels more and
# more (the text model on 60 words / 30 lines at the default bonus: 100 / 97 % right at 0.2,
# 88 / 50 % at 1, 37 / 27 % at 2, 10 / 20 % at 4).
MAX_LM_WEIGHT = 1.0
# lm_bonus B pays B nats for every character read. The search tries only characters with at
# least 1e-3 of a frame (char_lm._PRUNE), so the image charges at most -log(1e-3) = 6.9 nats
# for any of them: a larger bonus pays for characters whatever the pixels say, and readings
# fill with them (30 lines at weight 0.2: 97 % right at bonus 1.5, 63 % at 7, 37 % at 10).
MAX_LM_BONUS = round(-float(char_lm._PRUNE), 1)
# An image at least this tall in which the page reader finds at least this many lines of text
# is a page, not a word or a line: read as a crop it comes out as a character or two.
PAGE_HINT_MIN_HEIGHT = 100
PAGE_HINT_ROWS = 3
# A model of fixed-width crops (the words model) narrows every crop to its width: a crop more
# than this many times as wide is a line, its letters squeezed thinner than a stroke (a line
# of 60 words read as nothing, exit 0, without a word).
SQUEEZE_HINT = 3.0

CropReading = collections.namedtuple("CropReading", ["name", "text", "confidence", "log_prob",
                                                     "array", "reason", "rows"])
CropReading.__doc__ = """One crop read (:meth:`Reader.crop_readings`): its ``name``, ``text``,
``confidence`` and ``log_prob`` (page_result's measures), ``array`` (the crop as the model saw
it); ``reason`` why it could not be read (then ``text`` is None), else None; ``rows``: how
many lines of text the page reader finds in it when it looks like a page (at least
:data:`PAGE_HINT_ROWS`), else 0."""
PageReading = collections.namedtuple("PageReading", ["source", "page", "reason"])
PageReading.__doc__ = """One page read (:meth:`Reader.read_pages`): its
:class:`~crnn_multigpu.datasets.inputs.Source`, the
:class:`~crnn_multigpu.ocr.page_result.Page` read (None when skipped) and the reason it was
skipped (else None)."""


class Reader(object):
    """Reads word and line crops, pages and documents as ``crnn-predict`` reads them.

    Args:
      model: a shipped model's name (``"text"``: printable ASCII, words, lines and pages;
        ``"words"``: 100 px wide words in digits and lower case; ``"zh"``: Simplified Chinese
        with Latin mixed in; ``"latin"``: the Latin script of Europe and Vietnam; each described
        in ``ocr.shipped.DESCRIPTIONS``), or a path: the run folder of ``crnn-train`` or a
        checkpoint prefix inside it (``engine="onnx"``: the ``model.onnx``, or its folder, that
        ``crnn-export --format onnx`` wrote). A ``pathlib.Path`` is always a path.
      engine: ``"tf"`` (TensorFlow) or ``"onnx"`` (onnxruntime: ``pip install
        crnn_multigpu[onnx]``).
      beam_width: 0 greedy; > 1 a CTC beam this wide (as wide as the model allows: the
        recognizer refuses a wider one before reading, ``ocr.ctc.check_beam_width``).
      char_lm: True reads with the character language model of the model's language, False
        without; None (the default) as the language says (Chinese with it, English without),
        and without it when ``beam_width`` asks for TensorFlow's beam search.
      lm_weight, lm_bonus: the character model's weight (in [0, :data:`MAX_LM_WEIGHT`]) and
        score per character (in [0, :data:`MAX_LM_BONUS`]); None: the language's.
      lexicon: a UTF-8 file of words (one a line) or the words themselves: read only those
        (``lexicon_delta``: candidates within this edit distance of the unconstrained reading;
        ``lexicon_search``: ``"auto"``, ``"all"`` or ``"nearest"``; as crnn-predict's
        ``--lexicon-*``).
      towers: run each batch over this many towers (TensorFlow only).
      model_class: the model class to read the run with (default: the one its config.json
        names, else CRNN).

    A reader holds a model in memory: ``close()`` it (or use it in a ``with`` block) to
    release it early.
    """

    def __init__(self, model=DEFAULT_MODEL, engine="tf", beam_width=0, char_lm=None,
                 lm_weight=None, lm_bonus=None, lexicon=None, lexicon_delta=3,
                 lexicon_search="auto", towers=1, model_class=None):
        check_options(engine, beam_width, lm_weight, lm_bonus, towers)
        words = lexicon_words(lexicon)  # before the model loads: a bad file fails at once
        self.recognizer = open_recognizer(model_location(model, engine), engine, beam_width,
                                          towers, model_class)
        self.recognizer.language_model = language_model_decoder(
            self.recognizer, char_lm, beam_width, lm_weight, lm_bonus)
        self.recognizer.lexicon = lexicon_decoder(words, self.recognizer.charset, lexicon,
                                                  lexicon_delta, lexicon_search)
        self._page_reader = None

    @classmethod
    def around(cls, recognizer):
        """A reader of an opened ``recognizer`` (a
        :class:`~crnn_multigpu.ocr.text_reader.TextReader`, its decoders as set on it): the
        crops, pages and documents of a model built another way read as this class reads
        them."""
        reader = cls.__new__(cls)
        reader.recognizer, reader._page_reader = recognizer, None
        return reader

    def read_lines(self, crops):
        """The text of each of ``crops`` (word or line images: paths, PIL images, arrays), one
        string each, as ``crnn-predict --lines`` prints it. ValueError naming the first crop
        that cannot be read (:meth:`crop_readings` reads the others all the same)."""
        readings = self.crop_readings(crops)
        for reading in readings:
            if reading.reason is not None:
                raise ValueError("cannot read crop %s: %s" % (reading.name, reading.reason))
        return [reading.text for reading in readings]

    def crop_readings(self, crops):
        """A :class:`CropReading` of each of ``crops`` (of each page of a multi-page TIFF), in
        order: each crop read, or its reason, on its own."""
        loaded = [self._load_crop(source) for source in input_sources(crops, documents=False)]
        arrays = [array for _, array, _, _ in loaded if array is not None]
        texts, log_probs = self.recognizer.read_crops(arrays) if arrays else ([], [])
        readings, read = [], iter(zip(texts, log_probs))
        for name, array, reason, rows in loaded:
            if array is None:
                readings.append(CropReading(name, None, None, None, None, reason, 0))
                continue
            text, log_prob = next(read)
            frames = array.shape[1] / float(self.recognizer.downsample)
            readings.append(CropReading(name, text, confidence(log_prob, frames), log_prob,
                                        array, None, rows))
        return readings

    def squeezed(self, reading):
        """How many times the crop of ``reading`` (a :class:`CropReading` read) is narrowed to
        the model's fixed width, when that is more than :data:`SQUEEZE_HINT` (a line given to
        a model of words); else 0."""
        width = self.recognizer.image_width
        factor = reading.array.shape[1] / float(width) if width else 0
        return factor if factor > SQUEEZE_HINT else 0

    def _load_crop(self, source):
        """``(name, array as the model reads it or None, reason or None, page rows)``."""
        try:
            image = source.load()
            return source.name, self.recognizer.crop_array(image), None, page_rows(image)
        except ValueError as error:
            return source.name, None, reason_of(error, source.name), 0

    def read(self, inputs, pages=None, dpi=None):
        """The :class:`~crnn_multigpu.ocr.document.Document` of ``inputs`` read as pages (one
        or several: paths of images, PDFs and multi-page TIFFs, PIL images, numpy arrays), as
        ``crnn-predict --page`` reads them: ``pages`` chooses the pages of each document
        (``"1-3"``, ``"2,5-"``: as a print dialogue), PDF pages are drawn at ``dpi`` (default
        150). An input or page that cannot be read is skipped (``doc.skipped``); the others are
        read. The document keeps each page's straightened image (``page.draw``); for a long
        document, :meth:`read_pages` reads one page at a time."""
        self.require_line_model("reading pages")
        readings = list(self.read_pages(page_sources(inputs, pages, dpi)))
        return Document([r.page for r in readings if r.page is not None],
                        [Skipped(r.source.name, r.reason) for r in readings if r.page is None],
                        [r.source for r in readings if r.page is not None])

    def read_pages(self, sources):
        """A :class:`PageReading` of each of ``sources`` (:func:`page_sources`), one at a time
        as they are read (a generator: one page image in memory at a time)."""
        from crnn_multigpu.ocr.page_reader import PageReader
        if self._page_reader is None:
            self._page_reader = PageReader(self.recognizer)
        for source in sources:
            try:
                page = self._page_reader.read(source.load())
            except ValueError as error:
                yield PageReading(source, None, reason_of(error, source.name))
                continue
            yield PageReading(source, replace(page, image=source.name), None)

    def require_line_model(self, what):
        """Refuse a model that cannot read whole lines (one of fixed-width crops, or without
        the space: the shipped words model is both) for ``what`` needs them."""
        recognizer = self.recognizer
        if recognizer.image_width or " " not in recognizer.charset:
            raise ValueError("%s needs a model that reads whole lines (any width, a charset "
                             "with the space); %s reads %s crops of %d characters: use the text "
                             "model (drop --model and --checkpoint, or --model text)"
                             % (what, recognizer.checkpoint,
                                "%d px wide" % recognizer.image_width
                                if recognizer.image_width else "single-word",
                                len(recognizer.charset)))

    def close(self):
        """Release the model."""
        self.recognizer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def page_sources(inputs, pages=None, dpi=None):
    """The :class:`~crnn_multigpu.datasets.inputs.Source` of every page of ``inputs``
    (:meth:`Reader.read`'s arguments), none decoded yet."""
    selection = pdf.PageSelection(pages) if isinstance(pages, str) else pages
    dpi = pdf.DEFAULT_DPI if dpi is None else dpi
    if not pdf.MIN_DPI <= dpi <= pdf.MAX_DPI:
        raise ValueError("dpi must be in [%d, %d], got %s" % (pdf.MIN_DPI, pdf.MAX_DPI, dpi))
    return input_sources(inputs, selection, dpi)


def check_options(engine, beam_width, lm_weight, lm_bonus, towers):
    """ValueError, one line, for a reading option out of its range."""
    if engine not in ENGINES:
        raise ValueError("engine must be one of %s, got %r" % (", ".join(ENGINES), engine))
    # The beam's upper bound follows the model: its recognizer checks it (ctc.check_beam_width).
    checks = [("beam_width", beam_width, 0, None), ("lm_weight", lm_weight, 0.0, MAX_LM_WEIGHT),
              ("lm_bonus", lm_bonus, 0.0, MAX_LM_BONUS), ("towers", towers, 1, None)]
    for name, value, low, high in checks:
        if value is not None and not (low <= value and (high is None or value <= high)):
            raise ValueError("%s must be %s, got %r" % (
                name, "at least %g" % low if high is None else "in [%g, %g]" % (low, high), value))
    if engine == "onnx" and towers > 1:
        raise ValueError("--towers splits batches over TensorFlow devices; --engine onnx runs "
                         "one onnxruntime session on all cores: drop --towers")


def model_location(model, engine):
    """``(what the engine opens, checkpoint prefix or None)`` of ``model``: a shipped model's
    name (:mod:`crnn_multigpu.ocr.shipped`: its run folder, or its ONNX file), or a path (a
    ``pathlib.Path`` always): a run, a checkpoint in it, or with ``onnx`` an export."""
    from crnn_multigpu.ocr.onnx_reader import is_onnx_export, onnx_file
    if isinstance(model, str) and model in SHIPPED:
        return resolve_run(None, model) if engine == "tf" else \
            (shipped_model(model, engine="onnx"), None)
    if isinstance(model, str) and not os.path.exists(model):
        # A name mistyped, told as the API's caller named it (not as crnn-predict's
        # --checkpoint, which passes a Path).
        raise ValueError("model %r is neither a shipped model (%s) nor a path that exists: name "
                         "one of those, or a run folder of crnn-train (with engine=\"onnx\", "
                         "its export)" % (model, ", ".join(sorted(SHIPPED))))
    path = os.fspath(model)
    if engine == "onnx":
        return onnx_file(path), None
    if is_onnx_export(path):
        from crnn_multigpu.runtime.checkpoints import checkpoint_dir
        if not os.path.isdir(checkpoint_dir(path)):  # not a run that has both
            raise ValueError("--checkpoint %s is an ONNX export: read it with --engine onnx "
                             "(engine=\"onnx\")" % path)
    return resolve_run(path)


def open_recognizer(location, engine, beam_width, towers, model_class):
    """The model at ``location`` (:func:`model_location`) run by ``engine``: TensorFlow's
    Recognizer on ``towers``, or an OnnxRecognizer."""
    path, checkpoint = location
    if engine == "onnx":
        from crnn_multigpu.ocr.onnx_reader import OnnxRecognizer
        return OnnxRecognizer(path, beam_width=beam_width)
    from crnn_multigpu.ocr.inference import Recognizer
    return Recognizer(path, beam_width=beam_width, checkpoint=checkpoint, towers=towers,
                      model_cls=model_class)


def language_model_decoder(recognizer, enabled=None, beam_width=0, weight=None, bonus=None):
    """The CharLmDecoder ``recognizer`` (a TextReader: its charset and language) reads with, or
    None: ``enabled`` True or False, else the language's default unless ``beam_width`` asks for
    TensorFlow's beam search (whose reading the character model's search would replace)."""
    if enabled is None and beam_width > 1:
        enabled = False
    return char_lm.reading_decoder(recognizer.language, recognizer.charset, enabled, weight,
                                   bonus)


def lexicon_words(lexicon):
    """The words of ``lexicon`` (a file's path, or the words), or None."""
    if lexicon is None:
        return None
    from crnn_multigpu.ocr.lexicon import read_lexicon
    if isinstance(lexicon, (str, os.PathLike)):
        return read_lexicon(os.fspath(lexicon))
    return list(lexicon)


def lexicon_decoder(words, charset, lexicon, delta, search):
    """The LexiconDecoder of ``words`` for a model's ``charset``, or None without words."""
    if words is None:
        return None
    from crnn_multigpu.ocr.lexicon import LexiconDecoder
    name = "lexicon %s" % os.fspath(lexicon) if isinstance(lexicon, (str, os.PathLike)) \
        else "the lexicon"
    return LexiconDecoder(words, charset, delta=delta, search=search, name=name)


def page_rows(image):
    """How many lines of text the page reader finds in ``image`` (a PIL image) when it is at
    least :data:`PAGE_HINT_MIN_HEIGHT` tall and looks like a page (:data:`PAGE_HINT_ROWS`
    lines or more), else 0: a word or line crop is not looked at, and one too thin to be a
    page is none."""
    from crnn_multigpu.ocr.page import find_lines
    if image.height < PAGE_HINT_MIN_HEIGHT:
        return 0
    try:
        rows = len(set(box.row for box in find_lines(grey_page(image))))
    except ValueError:  # too small or odd to be a page: a crop
        return 0
    return rows if rows >= PAGE_HINT_ROWS else 0
