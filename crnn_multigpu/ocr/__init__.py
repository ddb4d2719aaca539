"""The OCR product, the wrapper's first user: the CRNN model (``crnn``), its characters
(``charset``), reading and decoding (``inference``, ``lexicon``, ``metrics``), printed pages
(``page``, ``page_layout``) and pictures of the results (``picture``).

The front doors: :class:`Reader` (``ocr.reader``), which reads as ``crnn-predict`` does and
gives a :class:`Document` (``ocr.document``), and ``TrainingRun(TrainingSettings(...)).run()``,
which trains as ``crnn-train`` does. They are imported on first use, so that
``from crnn_multigpu import ocr`` loads no TensorFlow; a reader with ``engine="tf"`` loads it
when it opens its model.
"""
from crnn_multigpu.lazy import lazy_names

_PUBLIC = {
    "Document": "crnn_multigpu.ocr.document",
    "Reader": "crnn_multigpu.ocr.reader",
    "TrainingResult": "crnn_multigpu.ocr.training",
    "TrainingRun": "crnn_multigpu.ocr.training",
    "TrainingSettings": "crnn_multigpu.ocr.training_settings",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
