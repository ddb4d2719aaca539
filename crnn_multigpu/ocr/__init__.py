"""The OCR product, the wrapper's first user: the CRNN model (``crnn``), its characters
(``charset``), reading and decoding (``inference``, ``lexicon``, ``metrics``), printed pages
(``page``, ``page_layout``) and pictures of the results (``picture``).

The front door is :class:`Reader` (``ocr.reader``), which reads as ``crnn-predict`` does and
gives a :class:`Document` (``ocr.document``). They are imported on first use, so that
``from crnn_multigpu import ocr`` loads no TensorFlow; a reader with ``engine="tf"`` loads it
when it opens its model.
"""
from crnn_multigpu.lazy import lazy_names

_PUBLIC = {
    "Reader": "crnn_multigpu.ocr.reader",
    "Document": "crnn_multigpu.ocr.document",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = lazy_names(__name__, _PUBLIC)
