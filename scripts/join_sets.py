"""Join datasets into one training set, each set taken N times: a mixture (``sets.json``).

    python scripts/join_sets.py --out runs/zh/train2 runs/zh/gen60k runs/zh/gen100k runs/zh/pdf400x2
    python scripts/join_sets.py --out runs/latin/train2 runs/latin/train1 runs/latin/pdf_trainx3

A set written ``FOLDER`` is taken once, ``FOLDERxN`` N times (a small set of real rows beside a
large synthetic one). Any dataset crnn-train reads may be a set: a folder, LMDB, a synthetic
recipe rendered when read (``crnn-generate --lazy``) or another mixture. Nothing is copied, so
the sets must stay where they are while the mixture is used; crnn-train shuffles.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from crnn_multigpu.datasets import dataset_format, write_mixture  # noqa: E402
from reports import one_line_errors  # noqa: E402


def parse_set(spec):
    """``FOLDER`` or ``FOLDERxN`` -> (folder, copies)."""
    match = re.fullmatch(r"(.+?)x(\d+)", spec)
    if match and not os.path.exists(spec):
        return match.group(1), int(match.group(2))
    return spec, 1


def main_body(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="FOLDER or FOLDERxN (taken N times)")
    parser.add_argument("--out", required=True, help="new folder (must not exist)")
    args = parser.parse_args(argv)
    if os.path.exists(args.out):
        raise ValueError("--out %s exists; choose a new folder" % args.out)
    sets = [parse_set(spec) for spec in args.sets]
    print("wrote %s: %s" % (write_mixture(args.out, sets), ", ".join(
        "%s (%s) x %d" % (folder, dataset_format(folder), copies) for folder, copies in sets)))
    return 0


main = one_line_errors(main_body)

if __name__ == "__main__":
    sys.exit(main())
