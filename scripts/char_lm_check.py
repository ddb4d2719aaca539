"""The character language model (--char-lm) on real documents, beside Tesseract.

Words and lines are cut from the four check manuals of ``pdf_words_sources.txt`` (never the
reserved PDFs) as ``compare_tesseract.py`` cuts its own, and read by the shipped text model
with and without the language model, and by Tesseract (one process per crop). Words are scored
case-blind on letters and digits, lines exactly. Needs poppler, Tesseract and the manuals'
Debian packages (the list's first comment says which)::

    .venv/bin/python scripts/char_lm_check.py            # 1,000 words, 400 lines: ~9 minutes
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compare_tesseract as compare  # noqa: E402  (beside this script)
from crnn_multigpu.ocr import Reader  # noqa: E402
from crnn_multigpu.ocr.metrics import scoring_fold  # noqa: E402


def check_pdfs(path=os.path.join(HERE, "pdf_words_sources.txt")):
    """The PDFs of the list's ``package path`` lines."""
    with open(path) as stream:
        return [line.split()[1] for line in stream if line.strip() and not line.startswith("#")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=1000, help="word crops (110 dpi)")
    parser.add_argument("--lines", type=int, default=400, help="line crops (150 dpi)")
    parser.add_argument("--pages", default="3-14", help="pages the lines are cut from")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    pdfs = check_pdfs()
    missing = [pdf for pdf in pdfs if not os.path.isfile(pdf)]
    if missing:
        compare.fail("%s missing: install the packages named in scripts/pdf_words_sources.txt"
                     % ", ".join(missing))
    scratch = tempfile.mkdtemp(prefix="char-lm-check-")
    os.makedirs(os.path.join(scratch, "lines"))
    sets = [("words, case-blind", compare.cut_pdf_words(scratch, [(p, None) for p in pdfs],
                                                        args.words, args.seed),
             8, scoring_fold(True, True)),
            ("lines, exact", compare.cut_pdf_lines(os.path.join(scratch, "lines"),
                                                   [(p, args.pages) for p in pdfs],
                                                   args.lines, args.seed), 7, None)]
    readers = [Reader("text"), Reader("text", char_lm=True)]   # crnn-predict, and --char-lm
    tesseract = compare.Tesseract()
    for name, samples, psm, fold in sets:
        labels = [text for _, text in samples]
        readings = [reader.read_lines([path for path, _ in samples]) for reader in readers]
        readings.append([tesseract.text(path, psm) for path, _ in samples])
        for who, texts in zip(("project", "project --char-lm", tesseract.version), readings):
            figures = compare.sample_figures(texts, labels, fold)
            print("%-18s %-20s %6.2f %% exactly right, CER %.2f %%, n=%d"
                  % (name, who, 100 * figures["word_accuracy"], 100 * figures["cer"],
                     len(samples)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
