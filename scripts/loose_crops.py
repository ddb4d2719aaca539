"""Words and lines cut loosely, as people crop them by hand: how many each reader reads exactly.

Usage::

    python scripts/loose_crops.py --count 150 --tesseract        # this checkout
    CRNN_CHECKOUT=/path/to/older/checkout python scripts/loose_crops.py --count 150
                                  # the same images read by another checkout (before/after)

``--count`` words and as many lines (dictionary words, capitalised or in capitals now and
then, lines with numbers and punctuation), seeded, each drawn 18-48 px high in a face of the
text model's training side (DejaVu Sans or Serif) or of the English held-out families (never a
reserved one), dark on light or light grey on grey, with uneven margins of 10-250 % of the
text's height on each side. The same seed draws the same images, so two checkouts read the
same crops. The models read them as the checkout's tools read a crop (``crop_array`` where the
recognizer has one, else ``load_image``); Tesseract (``--tesseract``; Debian's
``tesseract-ocr`` and ``tesseract-ocr-eng``) reads each with ``--psm 7``. Printed: exactly
right per model and material; the words model (digits and lower case only) scored on words,
case-blind; the others case-sensitive. ``--zh N``: N Chinese lines too (common words of jieba's
dictionary in WenQuanYi Micro Hei, which the zh model never trained on), read by the zh model
alone.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, ImageDraw

# The checkout whose readers read (CRNN_CHECKOUT: another one, for a before/after comparison).
sys.path.insert(0, os.environ.get("CRNN_CHECKOUT") or
                os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.datasets.fonts import is_reserved, load_font, select_fonts  # noqa: E402
from crnn_multigpu.datasets.language import get_language  # noqa: E402
from crnn_multigpu.datasets.words import default_word_list  # noqa: E402

TRAINING_FACES = ["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                  "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"]
PUNCTUATION = (",", ".", ":", ";", "!", "?")
ZH_FACE = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"


def heldout_faces():
    """The English held-out families of the font split that are not reserved."""
    faces = select_fonts("heldout", chars=Charset.default().chars, language=get_language("en"))
    return [face for face in faces if not is_reserved(face)]


def texts(count, rng):
    """``count`` words and ``count`` lines."""
    with open(default_word_list(), encoding="utf-8") as stream:
        words = sorted(set(w for w in stream.read().split() if re.fullmatch(r"[a-z]{2,12}", w)))

    def word():
        text = words[rng.randint(len(words))]
        return (text, text.capitalize(), text.upper())[rng.choice(3, p=(0.6, 0.3, 0.1))]

    def line():
        pieces = [word() for _ in range(rng.randint(2, 7))]
        if rng.rand() < 0.4:
            pieces.insert(rng.randint(len(pieces) + 1), str(rng.randint(1, 5000)))
        return " ".join(pieces) + (PUNCTUATION[rng.randint(len(PUNCTUATION))]
                                   if rng.rand() < 0.5 else "")
    return [word() for _ in range(count)], [line() for _ in range(count)]


def loose_crop(text, face, rng):
    """``text`` drawn in ``face`` with loose, uneven margins on plain or grey paper."""
    font = load_font(face, int(rng.randint(18, 49)))
    left, top, right, bottom = font.getbbox(text)
    height = bottom - top
    margins = [int(round(rng.uniform(0.1, 2.5) * height)) for _ in range(4)]
    paper = int(rng.randint(200, 256)) if rng.rand() < 0.5 else 255
    ink = int(rng.randint(0, 60)) if rng.rand() < 0.7 else int(rng.randint(90, 140))
    image = Image.new("L", (right - left + margins[0] + margins[2],
                            height + margins[1] + margins[3]), paper)
    ImageDraw.Draw(image).text((margins[0] - left, margins[1] - top), text, fill=ink, font=font)
    return image


def render(out, count, seed):
    """The crops, ``[(material, path, truth)]``, written into ``out``."""
    rng = np.random.RandomState(seed)
    words, lines = texts(count, rng)
    faces = {"training face": TRAINING_FACES, "held-out faces": heldout_faces()}
    samples = []
    for kind, items in (("words", words), ("lines", lines)):
        for index, text in enumerate(items):
            side = ("training face", "held-out faces")[index % 2]
            choice = faces[side][rng.randint(len(faces[side]))]
            path = os.path.join(out, "%s%05d.png" % (kind, index))
            loose_crop(text, choice, rng).save(path)
            samples.append(("%s, %s" % (kind, side), path, text))
    return samples


def chinese_lines(out, count, rng):
    """``count`` loose crops of Chinese lines, ``[(material, path, truth)]``: two to six
    common words of jieba's dictionary (counted 2,000 times or more, Hanzi only) drawn in
    WenQuanYi Micro Hei, a face the zh model never trained on."""
    import jieba
    from crnn_multigpu.datasets.language import get_language
    chars = set(get_language("zh").charset.chars)
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as lines:
        words = [word for word, count, _ in (line.split() for line in lines)
                 if int(count) >= 2000 and re.fullmatch("[\u4e00-\u9fff]+", word) and
                 set(word) <= chars]
    samples = []
    for index in range(count):
        text = "".join(words[rng.randint(len(words))] for _ in range(rng.randint(2, 7)))
        path = os.path.join(out, "zh%05d.png" % index)
        loose_crop(text, ZH_FACE, rng).save(path)
        samples.append(("Chinese lines, held-out face", path, text))
    return samples


def model_readings(name, paths):
    """The shipped model ``name``'s readings of ``paths``, as the checkout's tools read crops."""
    from crnn_multigpu.datasets import load_image
    from crnn_multigpu.ocr.inference import Recognizer
    recognizer = Recognizer.shipped(name)
    to_array = getattr(recognizer, "crop_array", None) or \
        (lambda path: load_image(path, recognizer.height))
    texts = recognizer.read_crops([to_array(path) for path in paths])[0]
    recognizer.close()
    return [recognizer.language.tidy(text) for text in texts]


def tesseract_readings(paths):
    """Tesseract's ``--psm 7`` readings of ``paths``."""
    return [subprocess.run(["tesseract", path, "stdout", "--psm", "7"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=dict(os.environ, OMP_THREAD_LIMIT="1"))
            .stdout.decode("utf-8", "replace").strip() for path in paths]


def table(samples, readings):
    """Rows ``material: reader exactly right %`` for every reader of ``readings``."""
    materials = sorted(set(material for material, _, _ in samples))
    lines = ["%-28s %s" % ("", "  ".join("%9s" % name for name in readings))]
    for material in materials:
        cells = []
        for name, read in readings.items():
            pairs = [(got, truth) for (kind, _, truth), got in zip(samples, read)
                     if kind == material]
            if name == "words":  # digits and lower case only: case-blind, words only
                pairs = [(got, truth.lower()) for got, truth in pairs if " " not in truth
                         and truth.isascii()]
            if (name == "zh") != material.startswith("Chinese"):  # the zh model: Chinese only
                pairs = []
            right = sum(got == truth for got, truth in pairs)
            cells.append("%8.1f%%" % (100.0 * right / len(pairs)) if pairs else "%9s" % "-")
        lines.append("%-28s %s" % (material, "  ".join(cells)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=150, help="words, and as many lines")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--models", default="text,words", help="shipped models to read with")
    parser.add_argument("--tesseract", action="store_true", help="Tesseract --psm 7 beside")
    parser.add_argument("--keep", help="write the crops into this folder and keep them")
    parser.add_argument("--zh", type=int, default=0,
                        help="this many Chinese lines too, read by the zh model (needs jieba)")
    args = parser.parse_args()
    out = args.keep or tempfile.mkdtemp(prefix="loose_crops_")
    os.makedirs(out, exist_ok=True)
    samples = render(out, args.count, args.seed)
    models = args.models.split(",")
    if args.zh:
        samples += chinese_lines(out, args.zh, np.random.RandomState(args.seed))
        models.append("zh")
    paths = [path for _, path, _ in samples]
    readings = dict((name, model_readings(name, paths)) for name in models)
    if args.tesseract:
        readings["tesseract"] = tesseract_readings(paths)
    print("%d crops, exactly right:" % len(samples))
    print(table(samples, readings))


if __name__ == "__main__":
    main()
