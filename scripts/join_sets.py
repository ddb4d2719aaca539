"""Join labelled image folders into one training folder of links, each set taken N times.

    python scripts/join_sets.py --out runs/zh/train2 runs/zh/gen60k runs/zh/gen100k runs/zh/pdf400x2

A set written ``FOLDER`` is taken once, ``FOLDERxN`` N times (a small set of real rows beside a
large synthetic one). The output's images are symbolic links named ``s<set>_<copy>_<number>.<ext>``
so that copies stay distinct files, and its ``labels.txt`` lists them in set order (crnn-train
shuffles). Nothing is copied, so the sets must stay where they are while the folder is used.
"""
import argparse
import os
import re
import sys


def parse_set(spec):
    """``FOLDER`` or ``FOLDERxN`` -> (folder, copies)."""
    match = re.fullmatch(r"(.+?)x(\d+)", spec)
    if match and not os.path.isdir(spec):
        return match.group(1), int(match.group(2))
    return spec, 1


def labelled_images(folder):
    """(absolute image path, label) for each line of ``folder/labels.txt``."""
    labels = os.path.join(folder, "labels.txt")
    if not os.path.isfile(labels):
        sys.exit("error: %s has no labels.txt: pass folders written by crnn-generate or "
                 "scripts/pdf_training_set.py" % folder)
    with open(labels, encoding="utf-8") as handle:
        for line in handle:
            path, _, text = line.rstrip("\n").partition("\t")
            yield os.path.abspath(os.path.join(folder, path)), text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="FOLDER or FOLDERxN (taken N times)")
    parser.add_argument("--out", required=True, help="new folder (must not exist)")
    args = parser.parse_args()
    if os.path.exists(args.out):
        sys.exit("error: --out %s exists; choose a new folder" % args.out)
    sets = [parse_set(spec) for spec in args.sets]
    sets = [(folder, copies, list(labelled_images(folder))) for folder, copies in sets]
    os.makedirs(os.path.join(args.out, "images"))
    count = 0
    with open(os.path.join(args.out, "labels.txt"), "w", encoding="utf-8") as out:
        for index, (folder, copies, samples) in enumerate(sets):
            for copy in range(copies):
                for number, (image, text) in enumerate(samples):
                    name = "s%d_%d_%07d%s" % (index, copy, number, os.path.splitext(image)[1])
                    os.symlink(image, os.path.join(args.out, "images", name))
                    out.write("images/%s\t%s\n" % (name, text))
                    count += 1
            print("%s: %d images x %d" % (folder, len(samples), copies))
    print("wrote %d images to %s" % (count, args.out))


if __name__ == "__main__":
    main()
