"""crnn-train's validation: a validation set read by the towers being trained."""
from crnn_multigpu.datasets import make_batch
from crnn_multigpu.ocr.inference import read_batch
from crnn_multigpu.ocr.text_reader import evaluate_dataset


class ValidationReader(object):
    """Reads a validation set with the training graph's towers and scores it as crnn-evaluate.

    What it reads: the first ``limit`` images of ``dataset`` (0: all of them), ``batch_size``
    at a time, made into batches of width ``width`` (None: each batch as wide as its widest
    image, padded to a multiple of ``model_cls.DOWNSAMPLE``) and read by ``towers`` (the
    ``MultiGpuModel`` being trained, in inference mode; greedy decoding, no lexicon).

    How it scores: :func:`~crnn_multigpu.ocr.text_reader.evaluate_dataset`, the loop of
    crnn-evaluate, strictly (no case or whitespace folding): a reading is right only when it
    equals its label, and its edit distance to the label counts towards the CER. An image that
    cannot be read counts as a wrong, empty reading; its name goes to the list ``unreadable``
    when one is given (kept as the attribute of that name).

    Its result: called with a session (and the global step, which the scores do not use) it
    returns the dict of :func:`~crnn_multigpu.ocr.metrics.text_metrics` (``n``,
    ``word_accuracy``, ``cer``, ``mean_ned``) plus ``unreadable``, the count of images that
    could not be read.
    """

    def __init__(self, towers, dataset, charset, width, model_cls, limit=0, batch_size=64,
                 unreadable=None):
        self.towers, self.dataset, self.charset = towers, dataset, charset
        self.width, self.model_cls = width, model_cls
        self.limit, self.batch_size, self.unreadable = limit, batch_size, unreadable

    def __call__(self, session, step=None):
        """The figures of reading the validation set in ``session`` (see the class)."""
        def recognize(arrays):
            batch = make_batch(arrays, None, self.charset, self.width, self.model_cls.DOWNSAMPLE)
            return read_batch(session, self.towers, batch, self.charset, self.model_cls)[0]
        return evaluate_dataset(self.dataset, recognize, self.batch_size,
                                limit=self.limit or None, unreadable=self.unreadable)[0]
