"""Cut a training set of lines and words from real typeset PDFs (issue 23).

Usage::

    python scripts/pdf_training_set.py --out DIR [--pages 600] [--seed S] [--jobs 2] PDF_OR_FOLDER...

Synthetic renders teach the recogniser type designs; real documents add what rendering
misses: the spacing, kerning, hinting and rasterisation of typeset pages. Each drawn page is
rasterised by poppler at a random resolution (``--dpi``, default 96-300), its rows are found
by the project's own page reader (``ocr.page.line_crops``, so the crops are those the page
reader feeds the model) and labelled with poppler's text layer (``page_check.truth_rows``):
a piece of a row found exactly is kept with the text layer's words whose centres lie in it,
joined by single spaces and spelt as the language (``--language``) writes them (English:
typographic characters in ASCII; Chinese: no space beside a Chinese character), when its
charset writes all of them. Words (``pdf_words.find_words``: 1-20 letters and digits, case kept) are
cropped with the margins of the word checks, at most ``--words-per-page`` a page.

Kept out, so a figure measured on them stays independent: the PDFs the project reserves
(``text_sources.is_reserved_document``), the PDFs of the page and word checks (``CHECK_PACKAGES``:
simh, d-itg, camlidl, gutenprint), and every PDF with a font that is not embedded (poppler
would substitute a system face) or whose name is a reserved family or a PostScript base-35
name (such a font may be URW's clone: Times, Helvetica, Courier, ...). Needs poppler-utils.
"""
import argparse
import collections
import multiprocessing
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets import write_labels  # noqa: E402
from crnn_multigpu.datasets.language import get_language, language_names  # noqa: E402
from crnn_multigpu.datasets.pdf import font_refusal  # noqa: E402
from crnn_multigpu.datasets.pdf import page_count as pdf_pages  # noqa: E402
from page_check import labelled_rows, truth_rows  # noqa: E402
from crnn_multigpu.datasets.text_sources import is_reserved_document  # noqa: E402
from pdf_words import drawn, fail, find_words, or_fail, word_crop  # noqa: E402

CHECK_PACKAGES = ("/simh/", "/d-itg/", "/camlidl/", "/gutenprint-doc/")
def refusal(pdf):
    """Why ``pdf`` may not be trained on, or None."""
    if is_reserved_document(pdf):
        return "reserved"
    if any(package in pdf for package in CHECK_PACKAGES):
        return "check PDF"
    return font_refusal(pdf)


def usable_pdfs(paths, pool):
    """The PDFs under ``paths`` (files or folders) that may be trained on, and the refusals."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in os.walk(path):
                found.extend(os.path.join(folder, n) for n in names if n.endswith(".pdf"))
        else:
            found.append(path)
    found = sorted(set(found))
    reasons = pool.map(refusal, found, chunksize=8)
    return ([pdf for pdf, why in zip(found, reasons) if not why],
            [(pdf, why) for pdf, why in zip(found, reasons) if why])


def page_count(pdf):
    """The number of pages of ``pdf`` (poppler's pdfinfo); one ``error:`` line if it fails."""
    return or_fail(pdf_pages, pdf)


def page_samples(task):
    """The line and word crops of one page: ``[(kind, PIL image, text)]``."""
    pdf, page, dpi, words_per_page, seed, language = task
    language = get_language(language)
    image = drawn(pdf, page, dpi)
    kept, _, _ = labelled_rows(image, truth_rows(pdf, page, dpi), language)
    samples = [("line", crop, text) for crop, text in kept]
    words = find_words(pdf, page)[2] if words_per_page else []
    for _, box, text in random.Random(seed).sample(words, min(words_per_page, len(words))):
        samples.append(("word", word_crop(image, box, dpi), text))
    return samples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PDF_OR_FOLDER")
    parser.add_argument("--out", required=True, help="folder dataset to write")
    parser.add_argument("--pages", type=int, default=600, help="pages drawn over all PDFs")
    parser.add_argument("--max-pages-per-pdf", type=int, default=8)
    parser.add_argument("--dpi", default="96-300", help="range of resolutions, e.g. 96-300")
    parser.add_argument("--words-per-page", type=int, default=25,
                        help="Latin words cut from each page (0 for none)")
    parser.add_argument("--language", choices=language_names(), default="en",
                        help="how row labels are spelt and which characters they may hold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    low, _, high = args.dpi.partition("-")
    low, high = int(low), int(high or low)
    rng = random.Random(args.seed)
    with multiprocessing.Pool(args.jobs) as pool:
        pdfs, refused = usable_pdfs(args.paths, pool)
        kinds = collections.Counter(why.split(":")[0] for _, why in refused)
        print("%d PDFs usable; refused: %s" % (len(pdfs), ", ".join(
            "%d %s" % (n, kind) for kind, n in sorted(kinds.items()))), flush=True)
        if not pdfs:
            fail("no PDF under %s may be trained on (%s); give other PDFs or folders"
                 % (", ".join(args.paths), "; ".join("%s: %s" % r for r in refused[:3])))
        rng.shuffle(pdfs)
        tasks = []
        for pdf in pdfs:
            if len(tasks) >= args.pages:
                break
            pages = range(1, page_count(pdf) + 1)
            tasks.extend((pdf, page, rng.randint(low, high), args.words_per_page,
                          rng.randrange(1 << 30), args.language)
                         for page in rng.sample(pages, min(args.max_pages_per_pdf, len(pages))))
        tasks = tasks[:args.pages]
        os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
        entries, counts = [], {"line": 0, "word": 0}
        for done, samples in enumerate(pool.imap(page_samples, tasks), 1):
            for kind, crop, text in samples:
                relative = "images/%s%07d.png" % (kind[0], len(entries))
                crop.save(os.path.join(args.out, relative), compress_level=1)
                entries.append((relative, text))
                counts[kind] += 1
            if done % 25 == 0 or done == len(tasks):
                print("%d of %d pages: %d lines, %d words" % (
                    done, len(tasks), counts["line"], counts["word"]), flush=True)
    write_labels(args.out, entries)
    get_language(args.language).charset.to_file(os.path.join(args.out, "charset.txt"))
    print("%d lines and %d words from %d pages of %d PDFs in %s" % (
        counts["line"], counts["word"], len(tasks), len(set(t[0] for t in tasks)), args.out))


if __name__ == "__main__":
    main()
