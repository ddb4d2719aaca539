"""Cut a check set of photographed words (street signs, shop fronts) from packaged photos.

Usage::

    python scripts/photo_words.py --out DIR [--boxes scripts/photo_words.tsv] [--photos DIR]

The photos are the scene-text examples that Debian's ``opencv-doc`` package
ships in ``/usr/share/doc/opencv-doc/examples/text/`` (``scenetext0N.jpg`` and
four single-word crops). Without the package installed, the script fetches it
with ``apt-get download opencv-doc`` (no root needed) and unpacks only that
folder into a temporary directory. ``scripts/photo_words.tsv`` lists one word per
line: photo, box in full-size pixels (x0 y0 x1 y1, drawn by hand for this
project) and the label in lower case. The output is a folder dataset
(``images/*.png`` + ``labels.txt``) that ``crnn-evaluate --data DIR`` reads.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets import write_labels  # noqa: E402

PACKAGE = "opencv-doc"
PHOTO_DIR = "/usr/share/doc/opencv-doc/examples/text"
DEFAULT_BOXES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "photo_words.tsv")


def read_boxes(path):
    """``[(photo, (x0, y0, x1, y1), label)]`` from the tab-separated list (``#`` comments)."""
    rows = []
    with open(path) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 6:
                raise ValueError("%s line %d: expected photo, x0, y0, x1, y1, label separated "
                                 "by tabs" % (path, number))
            rows.append((fields[0], tuple(int(v) for v in fields[1:5]), fields[5]))
    return rows


def unpack_package(work_dir):
    """Download the opencv-doc .deb and unpack it; returns its photo folder."""
    try:
        subprocess.run(["apt-get", "download", PACKAGE], cwd=work_dir, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deb = glob.glob(os.path.join(work_dir, PACKAGE + "_*.deb"))[0]
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work_dir, "root")], check=True)
    except (OSError, subprocess.CalledProcessError, IndexError) as error:
        raise SystemExit("error: could not fetch Debian package %s (%s); install it "
                         "(apt-get install %s) or pass --photos DIR" % (PACKAGE, error, PACKAGE))
    return os.path.join(work_dir, "root", PHOTO_DIR.lstrip("/"))


def cut(rows, photo_dir, out):
    """Crop every box, save it as a PNG under ``out/images`` and write ``labels.txt``."""
    os.makedirs(os.path.join(out, "images"), exist_ok=True)
    entries = []
    for index, (photo, box, label) in enumerate(rows):
        path = os.path.join(photo_dir, photo)
        if not os.path.isfile(path):
            raise SystemExit("error: %s is missing (is %s complete?)" % (path, PACKAGE))
        name = "images/%03d_%s.png" % (index, label)
        Image.open(path).convert("RGB").crop(box).save(os.path.join(out, name))
        entries.append((name, label))
    write_labels(out, entries)
    return entries


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder dataset to write")
    parser.add_argument("--boxes", default=DEFAULT_BOXES, help="word boxes and labels (TSV)")
    parser.add_argument("--photos", help="folder holding the photos (default: the installed "
                                         "package's, else a downloaded copy)")
    args = parser.parse_args(argv)
    rows = read_boxes(args.boxes)
    if args.photos or os.path.isdir(PHOTO_DIR):
        entries = cut(rows, args.photos or PHOTO_DIR, args.out)
    else:
        with tempfile.TemporaryDirectory() as work_dir:
            entries = cut(rows, unpack_package(work_dir), args.out)
    sys.stderr.write("wrote %d photographed words from %d photos into %s\n"
                     % (len(entries), len(set(r[0] for r in rows)), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
