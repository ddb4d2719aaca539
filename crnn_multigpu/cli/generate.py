"""crnn-generate: render a synthetic text-line dataset.

    python -m crnn_multigpu.cli.generate --out data/train --count 100000
    python -m crnn_multigpu.cli.generate --out data/val --count 2000 --seed 1 --fonts heldout

Sample ``i`` depends only on ``--seed`` and ``i`` (``--start`` shifts the
indices), so a dataset can be rendered in pieces and still be reproducible.
"""
import argparse
import os
import sys
import time

from crnn_multigpu.cli.common import run_main, setup_logging

FONT_CHOICES = ("all", "train", "heldout")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="crnn-generate",
        description="Render synthetic text-line images with their labels, in the folder format "
                    "(images/*.png + labels.txt) or the crnn.pytorch LMDB format.")
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument("--count", type=int, default=1000, metavar="N",
                        help="number of images (default: %(default)s)")
    parser.add_argument("--start", type=int, default=0, metavar="I",
                        help="index of the first sample (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.add_argument("--charset", metavar="FILE",
                        help="charset file, one character per line (default: 0-9 and a-z)")
    parser.add_argument("--font-dir", action="append", metavar="DIR",
                        help="folder searched recursively for .ttf/.otf fonts; repeatable "
                             "(default: $CRNN_FONT_DIRS or the system font folders)")
    parser.add_argument("--fonts", choices=FONT_CHOICES, default="all",
                        help="which side of the deterministic train/held-out font split to use "
                             "(default: %(default)s)")
    parser.add_argument("--holdout-fraction", type=float, default=0.25,
                        help="share of fonts held out by the split (default: %(default)s)")
    parser.add_argument("--min-len", type=int, default=1, help="shortest text (default: 1)")
    parser.add_argument("--max-len", type=int, default=10, help="longest text (default: 10)")
    parser.add_argument("--difficulty", type=float, default=0.5,
                        help="distortion strength from 0 (clean) to 1 (default: %(default)s)")
    parser.add_argument("--format", choices=("folder", "lmdb"), default="folder",
                        help="output format (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def _check_arguments(args):
    if args.count < 1:
        raise ValueError("--count must be at least 1, got %d" % args.count)
    if args.start < 0:
        raise ValueError("--start must not be negative, got %d" % args.start)
    if not 1 <= args.min_len <= args.max_len:
        raise ValueError("need 1 <= --min-len <= --max-len, got %d and %d"
                         % (args.min_len, args.max_len))
    if not 0.0 <= args.difficulty <= 1.0:
        raise ValueError("--difficulty must be between 0 and 1, got %s" % args.difficulty)
    for font_dir in args.font_dir or ():
        if not os.path.isdir(font_dir):
            raise FileNotFoundError("--font-dir %s is not a folder" % font_dir)


def _pick_fonts(args, charset):
    from crnn_multigpu.datasets import find_fonts, split_fonts
    fonts = find_fonts(args.font_dir, chars=charset.chars)
    if args.fonts == "all":
        return fonts
    train_fonts, heldout_fonts = split_fonts(fonts, args.holdout_fraction, seed=0)
    chosen = train_fonts if args.fonts == "train" else heldout_fonts
    if not chosen:
        raise ValueError("--fonts %s selects no font: only %d usable font(s) found; add fonts "
                         "with --font-dir or use --fonts all" % (args.fonts, len(fonts)))
    return chosen


def generate(argv=None):
    """Parse ``argv``, render the dataset, print a summary; returns 0."""
    args = build_parser().parse_args(argv)
    setup_logging()
    _check_arguments(args)
    from crnn_multigpu.charset import Charset
    from crnn_multigpu.datasets import SyntheticTextGenerator, write_dataset, write_lmdb
    from crnn_multigpu.datasets.synthetic import with_progress

    charset = Charset.from_file(args.charset) if args.charset else Charset.default()
    fonts = _pick_fonts(args, charset)
    generator = SyntheticTextGenerator(charset, fonts, min_len=args.min_len,
                                       max_len=args.max_len, seed=args.seed,
                                       difficulty=args.difficulty)
    every = 0 if args.quiet else max(100, min(10000, args.count // 10))
    started = time.time()
    if args.format == "folder":
        write_dataset(args.out, generator, args.count, start=args.start,
                      progress=not args.quiet, every=every)
    else:
        samples = generator.iterate(args.start, args.count)
        if every:
            samples = with_progress(samples, args.count, every)
        write_lmdb(args.out, samples, overwrite=True)
        charset.to_file(os.path.join(args.out, "charset.txt"))
    seconds = time.time() - started
    print("wrote %d images to %s (%s format, %d fonts) in %.1f s: %.0f images/s"
          % (args.count, args.out, args.format, len(fonts), seconds,
             args.count / max(seconds, 1e-9)))
    return 0


def main(argv=None):
    """Entry point of ``crnn-generate``; returns the exit code (2 on a user error)."""
    try:
        return run_main(generate, argv)
    except SystemExit as exit_request:  # argparse: --help, or a malformed command line
        return exit_request.code if isinstance(exit_request.code, int) else 2


if __name__ == "__main__":
    sys.exit(main())
