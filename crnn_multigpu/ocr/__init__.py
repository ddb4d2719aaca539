"""The OCR product, the wrapper's first user: the CRNN model (``crnn``), its characters
(``charset``), reading and decoding (``inference``, ``lexicon``, ``metrics``), printed pages
(``page``, ``page_layout``), pictures of the results (``picture``), and training
(``TrainingRun(TrainingSettings(...)).run()``, as crnn-train trains).

The front doors are imported on first use, so that ``from crnn_multigpu import ocr`` loads no
TensorFlow.
"""
from crnn_multigpu.lazy import lazy_names

_PUBLIC = {
    "TrainingResult": "crnn_multigpu.ocr.training",
    "TrainingRun": "crnn_multigpu.ocr.training",
    "TrainingSettings": "crnn_multigpu.ocr.training_settings",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
