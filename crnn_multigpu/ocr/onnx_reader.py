"""Reading with an ONNX export (``crnn-export --format onnx``) in onnxruntime, TensorFlow-free.

The file holds the model up to its frames: inputs ``images`` float32 ``[batch, height, width,
1]`` (light text on dark in [0, 1], zero-padded on the right, as ``datasets.make_batch``
makes them; any width that is a multiple of the model's ``downsample``) and ``widths`` int32
``[batch]``; outputs ``log_probs`` float32 ``[frames, batch, classes]`` (the blank last) and
``lengths`` int32 ``[batch]`` (the valid frames of each image). The run's config (its charset
among it) is in the file's metadata under ``config``, as JSON. The file's last metadata entry,
``sha256``, is the SHA-256 of every byte before it (:func:`with_checksum`): a reader verifies
it before onnxruntime sees the file, so a damaged export that still parses is refused
(TensorFlow's checkpoints carry checksums as well). The CTC decoding stays in
Python: :mod:`crnn_multigpu.ocr.ctc` decodes as TensorFlow does, and the language model and
lexicon read the frames as they read TensorFlow's.

onnxruntime is an optional dependency: ``pip install crnn_multigpu[onnx]``, which reads
without TensorFlow (the shipped models travel as ONNX files too: ``OnnxRecognizer.shipped``).
"""
import hashlib
import importlib
import json
import os

import numpy as np

from crnn_multigpu.datasets.files_check import regular_file
from crnn_multigpu.ocr.ctc import beam_decode, greedy_decode
from crnn_multigpu.ocr.shipped import ONNX_FILE, shipped_model
from crnn_multigpu.ocr.text_reader import TextReader
from crnn_multigpu.tflog import one_line
from crnn_multigpu.runtime.run_config import RunConfig

__all__ = ["ONNX_FILE", "OnnxRecognizer", "import_extra", "is_onnx_export", "onnx_file",
           "with_checksum", "verified_model_bytes"]

# The metadata key of the run's config (JSON).
CONFIG_KEY = "config"
# The package's extras: reading (onnxruntime alone, no TensorFlow) and exporting (tf2onnx, onnx).
READING_EXTRA, EXPORT_EXTRA = "onnx", "onnx-export"
# The metadata key of the file's checksum: the hex SHA-256 of the bytes before its entry.
CHECKSUM_KEY = "sha256"
EXPORT_AGAIN = "export the run again with crnn-export --format onnx"


def import_extra(name, purpose, extra=READING_EXTRA):
    """The module ``name`` of the package's ``extra``, or an ImportError saying how to install
    it."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ImportError("%s needs %s, which is not installed here (%s): pip install "
                          "crnn_multigpu[%s]" % (purpose, name, error, extra))


def is_onnx_export(path):
    """Whether ``path`` is an ONNX file or a folder holding :data:`ONNX_FILE`."""
    return path.endswith(".onnx") or os.path.isfile(os.path.join(path, ONNX_FILE))


def onnx_file(path):
    """The ONNX file ``path`` names: itself, or :data:`ONNX_FILE` in the folder ``path``."""
    if os.path.isdir(path):
        inside = os.path.join(path, ONNX_FILE)
        if not os.path.isfile(inside):
            raise FileNotFoundError("no %s in %s: --engine onnx reads what crnn-export --format "
                                    "onnx wrote (crnn-export --checkpoint %s --format onnx --out "
                                    "NEW_FOLDER)" % (ONNX_FILE, path, path))
        return inside
    if not os.path.exists(path):
        raise FileNotFoundError("%s does not exist: --engine onnx reads the .onnx file (or its "
                                "folder) that crnn-export --format onnx wrote" % path)
    regular_file(path, "ONNX export")  # a FIFO or a device would be read for ever
    return path


def _field(number, payload):
    """A protobuf field ``number`` of wire type 2 (bytes) holding ``payload`` (< 128 bytes)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


def _checksum_entry(digest):
    """A ModelProto's ``metadata_props`` entry (field 14, a key and a value) ``sha256: digest``:
    protobuf merges a repeated field appended to a message, so it may follow the model's bytes."""
    return _field(14, _field(1, CHECKSUM_KEY.encode()) + _field(2, digest.encode()))


def with_checksum(data):
    """The serialised ONNX model ``data`` with the SHA-256 of its bytes appended as its last
    metadata entry (:data:`CHECKSUM_KEY`)."""
    return data + _checksum_entry(hashlib.sha256(data).hexdigest())


def verified_model_bytes(path):
    """The bytes of the ONNX file ``path`` once its checksum (:func:`with_checksum`) holds;
    ValueError naming the file when it has none or its bytes do not match it."""
    with open(path, "rb") as stream:
        data = stream.read()
    size = len(_checksum_entry("0" * 64))
    body, trailer = data[:-size], data[-size:]
    if trailer == _checksum_entry(hashlib.sha256(body).hexdigest()):
        return body + trailer
    if trailer[:-64] == _checksum_entry("0" * 64)[:-64]:
        raise ValueError("%s is damaged: its bytes do not match the checksum it was written with "
                         "(sha256); copy it again, or %s" % (path, EXPORT_AGAIN))
    raise ValueError("%s carries no checksum: it is cut short, or was not written by "
                     "crnn-export --format onnx (or by a version before checksums); %s"
                     % (path, EXPORT_AGAIN))


class OnnxRecognizer(TextReader):
    """The reading of :class:`~crnn_multigpu.ocr.inference.Recognizer` with the model run by
    onnxruntime from an ONNX export (a file, or the folder that holds :data:`ONNX_FILE`).

    ``beam_width``: 0/1 greedy decoding, >1 CTC beam search (both as TensorFlow decodes);
    ``lexicon`` and ``language_model`` as for ``Recognizer``.
    """

    def __init__(self, path, beam_width=0, lexicon=None, language_model=None):
        runtime = import_extra("onnxruntime", "reading with --engine onnx")
        self.checkpoint = onnx_file(path)
        data = verified_model_bytes(self.checkpoint)  # the bytes checked are the bytes run
        options = runtime.SessionOptions()
        options.log_severity_level = 3  # errors only: its warnings are not the user's concern
        try:
            self.session = runtime.InferenceSession(data, options,
                                                    providers=["CPUExecutionProvider"])
        except Exception as error:  # noqa: B902 (onnxruntime's own exception classes)
            raise ValueError("%s cannot be loaded by onnxruntime (%s): not an ONNX file, or a "
                             "damaged one; %s" % (self.checkpoint, one_line(error), EXPORT_AGAIN))
        try:
            config = json.loads(self.session.get_modelmeta().custom_metadata_map[CONFIG_KEY])
            self.downsample, self.height = int(config["downsample"]), int(config["height"])
        except (KeyError, TypeError, ValueError):
            raise ValueError("%s has no run config in its metadata: it was not written by "
                             "crnn-export --format onnx; export the run with it" % self.checkpoint)
        super(OnnxRecognizer, self).__init__(RunConfig.from_json(config, self.checkpoint),
                                             lexicon, language_model)
        self.check_beam_width(beam_width, self.checkpoint)
        self.decode = greedy_decode if beam_width <= 1 else \
            lambda frames: beam_decode(frames, beam_width)

    @classmethod
    def shipped(cls, name, **options):
        """The OnnxRecognizer of the shipped model ``name`` (``ocr.shipped.SHIPPED``: text,
        words, zh), read from the ONNX file it travels as; ``options`` as for the constructor."""
        return cls(shipped_model(name, engine="onnx"), **options)

    def _run(self, batch, frames):
        log_probs, lengths = self.session.run(
            ["log_probs", "lengths"], {"images": np.asarray(batch.images, np.float32),
                                       "widths": np.asarray(batch.widths, np.int32)})
        per_image = [log_probs[:n, i] for i, n in enumerate(lengths)]
        decoded = [self.decode(rows) for rows in per_image]
        return ([self.charset.decode(ids) for ids, _ in decoded],
                [log_prob for _, log_prob in decoded], per_image if frames else None)

    def close(self):
        self.session = None
