"""What :meth:`crnn_multigpu.ocr.Reader.read` gives: a :class:`Document`, the pages read from
every input in order, and the inputs that could not be read.

``doc.text`` is the text as ``crnn-predict --page`` prints it; ``doc.pages[i]`` a
:class:`~crnn_multigpu.ocr.page_result.Page` whose ``lines`` have ``text``, ``box`` (``(x0, y0,
x1, y1)`` in pixels of the page as a viewer shows it: a PDF page drawn at the dpi asked, an image
turned by its EXIF orientation) and ``confidence``; ``doc.to_json()``, ``doc.to_hocr()`` and
``doc.save_pdf(path)`` (the pages with an invisible text layer) write it out.
"""
import collections

from crnn_multigpu.ocr.page_result import hocr_document

Skipped = collections.namedtuple("Skipped", ["name", "reason"])
Skipped.__doc__ = """An input (or a document's page) that could not be read: its name
(``file.pdf#page=N`` for a page) and the reason, one line."""
PageImage = collections.namedtuple("PageImage", ["image", "lines", "dpi", "turn"])
PageImage.__doc__ = """A page's image as it was read (a PIL image, as a viewer shows it), its
lines (``text``, ``box`` in that image's pixels, ``pieces``), the dpi it was drawn at (a PDF
page; None for an image, whose file may declare its own) and the turn it was read at: what
:func:`~crnn_multigpu.ocr.searchable_pdf.write_searchable_pdf` takes."""


class Document(object):
    """The pages read from a reader's inputs, in order (``pages``: Pages), and the inputs
    skipped (``skipped``: :class:`Skipped`), each read or skipped on its own. ``sources`` holds
    each page's :class:`~crnn_multigpu.datasets.inputs.Source`, whose ``load()`` gives its image
    again (a file decoded, a PDF page drawn again): a document of many pages does not hold
    their pixels."""

    def __init__(self, pages, skipped=(), sources=None):
        self.pages, self.skipped = list(pages), list(skipped)
        self._sources = list(sources) if sources is not None else [None] * len(self.pages)

    @property
    def text(self):
        """The pages' text as ``crnn-predict --page`` prints it: each page's lines, one line per
        line of text, each page ended by a newline and the pages separated by a form feed."""
        return "".join(("\f" if index else "") + page.text() + "\n"
                       for index, page in enumerate(self.pages))

    def to_json(self):
        """``{"pages": [each page's JSON, as crnn-predict --page --format json prints it],
        "skipped": [{"image": name, "reason": str}]}``."""
        return {"pages": [page.to_json() for page in self.pages],
                "skipped": [{"image": skip.name, "reason": skip.reason} for skip in self.skipped]}

    def to_hocr(self):
        """One hOCR document of the pages, as ``crnn-predict --page --format hocr`` prints it."""
        return hocr_document(self.pages)

    def page_images(self):
        """Each page's image with its lines (:class:`PageImage`), one at a time."""
        for page, source in zip(self.pages, self._sources):
            if source is None:
                raise ValueError("page %s has no image to hand over: it was not read by a "
                                 "Reader" % page.image)
            yield PageImage(source.load(), page.lines, source.dpi, page.turn)

    def save_pdf(self, path):
        """Write the pages to the PDF ``path``: each page's image with an invisible text layer
        whose words lie on their boxes, so that a viewer can search and select them."""
        from crnn_multigpu.ocr.searchable_pdf import write_searchable_pdf
        return write_searchable_pdf(path, self.page_images())

    def __repr__(self):
        return "Document(%d pages, %d skipped)" % (len(self.pages), len(self.skipped))
