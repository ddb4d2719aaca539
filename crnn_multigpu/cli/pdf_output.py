"""``crnn-predict --page --format pdf --out FILE.pdf``: the checks made before reading; the pages
read are then written by ``Document.save_pdf(out)`` (crnn_multigpu.ocr.searchable_pdf)."""
from crnn_multigpu.cli.common import check_output_file


def check_pdf_request(form, page, out, overwrite):
    """Refuse, before any reading, a ``--format pdf`` that could not be written: without
    ``--page`` (a searchable PDF is made of pages), without ``--out`` (a PDF is a file, not
    printed text) or with an ``--out`` that cannot be written (``check_output_file``)."""
    if form != "pdf":
        return
    if not page:
        raise ValueError("--format pdf writes the pages read with their text laid on them: add "
                         "--page to read the images as pages")
    if not out:
        raise ValueError("--format pdf writes a file: name it with --out FILE.pdf")
    check_output_file(out, "--out", overwrite)
