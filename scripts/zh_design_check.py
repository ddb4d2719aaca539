"""How a Chinese model reads clean prints in each held-out type design: its own validation by design.

Usage::

    python scripts/zh_design_check.py --checkpoint models/zh --checkpoint runs/zh/run5

Held-out prose of the Chinese description (one unit in ten, never trained on: the programs'
translated messages, the Debian reference, the manuals' text layers), cut into lines of at most
30 characters, printed black on white at 18-30 px (``zh_material.print_line``, the framing
of the reserved check) in one face of each held-out family of the font split (the WenQuanYi
families, FandolKai and, once installed, Ma Shan Zheng; a face that lacks a character of a line
leaves that line out). Each checkpoint reads the same images; one table of lines exactly right / CER
per face, scored NFKC with whitespace ignored; read greedily, or with ``--char-lm`` as
crnn-predict reads. Material of the project's own only: no reserved face or text, so a model
may be chosen on it.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from crnn_multigpu.datasets import load_image  # noqa: E402
from crnn_multigpu.datasets.fonts import face_gaps, font_family, select_fonts  # noqa: E402
from compare_chinese import cell, line_figures  # noqa: E402
from zh_material import MIN_HANZI, ZH, hanzi_count, line_window, print_line  # noqa: E402


def heldout_lines(count, seed):
    """``count`` lines of held-out Chinese prose (at least :data:`MIN_HANZI` Hanzi each)."""
    rng = np.random.RandomState(seed)
    units = [unit for unit in ZH.prose(part="heldout") if hanzi_count(unit) >= MIN_HANZI]
    lines = []
    for index in rng.permutation(len(units)):
        line = line_window(units[index], rng)
        if hanzi_count(line) >= MIN_HANZI and line not in lines:
            lines.append(line)
        if len(lines) == count:
            break
    return lines, rng


def printed_sets(lines, rng, out):
    """``{family: [(array, label)]}``: every line printed in one face of each held-out family."""
    faces = select_fonts("heldout", chars=ZH.charset.chars, language=ZH)
    sets = {}
    for face in faces:
        family = font_family(face)
        if family in sets:
            continue
        samples, lacked = [], face_gaps([face], ZH.charset.chars).get(face, frozenset())
        for index, line in enumerate(lines):
            if not lacked.isdisjoint(line):
                continue
            path = os.path.join(out, "%s_%04d.png" % (family.replace(" ", "_"), index))
            print_line(line, face, rng.randint(18, 31)).save(path)
            samples.append((load_image(path, 32), line))
        sets[family] = samples
    return sets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", action="append", required=True,
                        help="a run folder or exported model; repeatable")
    parser.add_argument("--lines", type=int, default=200, help="lines per face")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--char-lm", action="store_true",
                        help="read with the language's character model, as crnn-predict does "
                             "(default: greedy, the model's own reading)")
    args = parser.parse_args(argv)
    from pathlib import Path
    from crnn_multigpu.ocr import Reader
    lines, rng = heldout_lines(args.lines, args.seed)
    with tempfile.TemporaryDirectory() as out:
        sets = printed_sets(lines, rng, out)
        print("| face | " + " | ".join(args.checkpoint) + " |")
        print("|---" * (len(args.checkpoint) + 1) + "|")
        cells = dict((family, []) for family in sets)
        for checkpoint in args.checkpoint:
            reader = Reader(Path(checkpoint), char_lm=args.char_lm)
            for family, samples in sorted(sets.items()):
                # The samples are arrays as the model reads them already: its crop reading.
                texts, _ = reader.recognizer.read_crops([array for array, _ in samples])
                figures = line_figures(texts, [label for _, label in samples])
                cells[family].append(cell(figures["word_accuracy"], figures["cer"]))
            reader.close()
        for family in sorted(cells):
            print("| %s (%d lines) | %s |" % (family, len(sets[family]), " | ".join(cells[family])))


if __name__ == "__main__":
    main()
