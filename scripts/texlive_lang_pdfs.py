"""Print the documentation PDFs of the installed ``texlive-lang-*`` packages on one side of the
Latin model's document split, one path a line, for ``scripts/pdf_training_set.py``.

Usage::

    python scripts/texlive_lang_pdfs.py --side train   # or --side val

The split is by document, fixed by the path alone so that any machine draws the same line: a PDF
whose ``sha1(path) % 7 == 0`` is a validation document, every other one a training document.
Left out on both sides: the packages of other scripts (``--skip``: chinese, cjk, english by
default) and every reserved document (``text_sources.is_reserved_document``: the lshort
translations and the rest). Needs ``scripts/install_system_packages.sh --compare``.
"""
import argparse
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets.text_sources import is_reserved_document  # noqa: E402
from reports import fail, one_line_errors  # noqa: E402

VALIDATION_MODULUS = 7


def side_of(path):
    """``"val"`` or ``"train"``: the side of the document split ``path`` falls on."""
    digest = int(hashlib.sha1(path.encode("utf-8")).hexdigest(), 16)
    return "val" if digest % VALIDATION_MODULUS == 0 else "train"


def installed_packages(prefix):
    """Names of the installed Debian packages that start with ``prefix``."""
    listing = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status}\n", prefix + "*"],
                             capture_output=True, text=True).stdout
    return sorted(line.split()[0] for line in listing.splitlines()
                  if line.endswith(" installed"))


def package_pdfs(package):
    """The PDF files package ``package`` installed, sorted."""
    files = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout
    return sorted(path for path in files.splitlines()
                  if path.endswith(".pdf") and os.path.isfile(path))


def split_pdfs(side, skip):
    """The non-reserved PDFs of texlive-lang-* (but the ``skip`` languages) on ``side``."""
    packages = [name for name in installed_packages("texlive-lang-")
                if name[len("texlive-lang-"):] not in skip]
    if not packages:
        fail("no texlive-lang-* package is installed; run scripts/install_system_packages.sh "
             "--compare")
    return [path for package in packages for path in package_pdfs(package)
            if not is_reserved_document(path) and side_of(path) == side]


def print_split(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--side", choices=("train", "val"), required=True)
    parser.add_argument("--skip", default="chinese,cjk,english",
                        help="texlive-lang-* packages left out, by the name after the prefix")
    args = parser.parse_args(argv)
    for path in split_pdfs(args.side, set(args.skip.split(","))):
        print(path)


main = one_line_errors(print_split)

if __name__ == "__main__":
    sys.exit(main())
