"""Print HTML documentation of one language as a browser does, in seeded styles: PDFs to cut
recogniser training lines from (``scripts/pdf_training_set.py``).

Usage::

    python scripts/browser_prints.py --language zh --out runs/zh/prints --count 300 --seed 1
    python scripts/pdf_training_set.py --language zh --out runs/zh/print_rows --pages 900 \\
        --max-pages-per-pdf 3 --words-per-page 0 --seed 2 runs/zh/prints

The page readers' own checks (``scripts/page_makes.py``) print documents of the validation side
of the detector's split (``split_by_source``, share 0.1, seed 0) in the training faces; the
recognisers trained only on typeset and synthetic lines, and read those prints' rows worse
than typeset ones (decorated headings, hand-lettered and calligraphic training faces, grey
boxes). This script prints the other side's documents: each print is a document drawn at
random among the training side's HTML files whose path names ``--language``
(``page_makes_pages.path_language``), in a style drawn by ``page_style.page_recipe`` from the
language's training faces (``page_makes.faces_for``), never a reserved document
(``text_sources.is_reserved_document``). A print whose fonts may not be trained on (a face
Chromium fell back on: ``datasets.pdf.font_refusal``) is removed with a line. Each print's
source and recipe go to ``prints.jsonl``; running again with another ``--seed`` adds prints.
Needs Chromium and the HTML documentation (``scripts/install_system_packages.sh --detector``,
and ``--chinese`` for Chinese).
"""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from crnn_multigpu.datasets import page_material  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.datasets.page_style import page_recipe, recipe_css  # noqa: E402
from crnn_multigpu.datasets.pdf import font_refusal  # noqa: E402
from page_makes import faces_for  # noqa: E402
from page_makes_pages import BROWSER_ROOTS, path_language, validation_documents  # noqa: E402
from reports import fail, one_line_errors  # noqa: E402

INDEX = "prints.jsonl"


def training_documents(language, share, seed, roots=BROWSER_ROOTS):
    """The HTML documents of ``language`` on the training side of ``split_by_source(share,
    seed)``, reserved ones never among them, sorted."""
    documents = [path for path in page_material.html_documents(roots)
                 if path_language(path) == language]
    held_out = set(validation_documents(documents, share, seed))
    return [path for path in documents if path not in held_out]


def print_documents(documents, faces, out, count, rng, log=print):
    """Print ``count`` documents drawn from ``documents`` with ``rng``, each in a style drawn
    from ``faces``, into ``out`` (continuing its numbering and its ``prints.jsonl``); returns
    how many prints were kept. A print that fails or whose fonts may not be trained on is
    logged and left out."""
    os.makedirs(out, exist_ok=True)
    index = os.path.join(out, INDEX)
    number = 0
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as stream:
            number = sum(1 for _ in stream)
    kept = 0
    for _ in range(count):
        source = rng.choice(documents)
        recipe = page_recipe(rng, faces)
        pdf = os.path.join(out, "print%06d.pdf" % number)
        try:
            page_material.print_html(source, recipe_css(recipe), pdf)
            why = font_refusal(pdf)
            if why:
                raise ValueError("its fonts may not be trained on (%s)" % why)
        except ValueError as error:
            log("left out %s: %s" % (source, error))
            if os.path.exists(pdf):
                os.remove(pdf)
            continue
        with open(index, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(dict(pdf=os.path.basename(pdf), source=source,
                                         recipe=recipe), ensure_ascii=False) + "\n")
        number, kept = number + 1, kept + 1
        log("%d of %d prints (%s)" % (kept, count, source))
    return kept


def main_body(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", required=True, choices=("en", "zh"),
                        help="the documents' language (as their paths name it)")
    parser.add_argument("--out", required=True, help="folder of prints (created or continued)")
    parser.add_argument("--count", type=int, default=100, help="documents to print")
    parser.add_argument("--seed", type=int, default=0, help="draws documents and styles")
    parser.add_argument("--validation-share", type=float, default=0.1,
                        help="the detector split's share, kept out (default: %(default)s)")
    parser.add_argument("--split-seed", type=int, default=0, help="the detector split's seed")
    args = parser.parse_args(argv)
    documents = training_documents(args.language, args.validation_share, args.split_seed)
    if not documents:
        fail("no %s HTML document to print under %s; run scripts/install_system_packages.sh "
             "--detector (and --chinese for zh)" % (args.language, ", ".join(BROWSER_ROOTS)))
    faces = faces_for(get_language(args.language))
    kept = print_documents(documents, faces, args.out, args.count, random.Random(args.seed),
                           lambda line: print(line, flush=True))
    print("%d prints of %d training-side %s documents in %s" % (
        kept, len(documents), args.language, args.out))
    return 0


main = one_line_errors(main_body)

if __name__ == "__main__":
    sys.exit(main())
