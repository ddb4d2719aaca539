"""crnn-generate: render a synthetic text-line dataset.

    python -m crnn_multigpu.cli.generate --out data/train --count 100000
    python -m crnn_multigpu.cli.generate --out data/val --count 2000 --seed 1 --fonts heldout
    python -m crnn_multigpu.cli.generate --out data/synth --lazy --count 1000000
    python -m crnn_multigpu.cli.generate --list-fonts
    python -m crnn_multigpu.cli.generate --out data/lines --lines --count 20000
    python -m crnn_multigpu.cli.generate --out data/mine --lines --text my_prose.txt

Sample ``i`` depends only on ``--seed`` and ``i`` (``--start`` shifts the
indices), so a dataset can be rendered in pieces and still be reproducible.
"""
import os
import sys
import time

from crnn_multigpu.cli.common import (ArgumentParser, add_font_arguments, console_entry,
                                      non_negative_int, output_folder, positive_int,
                                      setup_logging, unit_float)
from crnn_multigpu.datasets.fonts import FONT_SIDES
from crnn_multigpu.datasets.language import DEFAULT_LANGUAGE, get_language, language_names
from crnn_multigpu.files import make_folder



def build_parser():
    """crnn-generate's arguments."""
    parser = ArgumentParser(
        prog="crnn-generate",
        description="Render synthetic text-line images with their labels, in the folder format "
                    "(images/*.png + labels.txt) or the crnn.pytorch LMDB format.")
    add_output_group(parser.add_argument_group("where and how the images are written"))
    add_text_group(parser.add_argument_group("what the images say"))
    add_look_group(parser.add_argument_group("how the text looks"))
    return parser


def add_output_group(output):
    """The output group: where, how many, in which format, by how many processes."""
    output.add_argument("--out", metavar="DIR", type=output_folder,
                        help="output folder (required unless --list-fonts)")
    output.add_argument("--list-fonts", action="store_true",
                        help="list the font families found, with their side of the split, and exit")
    output.add_argument("--count", type=positive_int, default=1000, metavar="N",
                        help="number of images (default: %(default)s)")
    output.add_argument("--start", type=non_negative_int, default=0, metavar="I",
                        help="index of the first sample (default: %(default)s)")
    output.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    output.add_argument("--format", choices=("folder", "lmdb"), default="folder",
                        help="output format (default: %(default)s)")
    output.add_argument("--lazy", action="store_true",
                        help="write only a recipe (synthetic.json): images are rendered when "
                             "read, e.g. by crnn-train, so --count can be millions")
    output.add_argument("--overwrite", action="store_true",
                        help="replace an existing dataset in --out")
    output.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                        help="processes rendering the folder format (default: one per CPU)")
    output.add_argument("--quiet", action="store_true", help="no progress lines")


def add_text_group(text):
    """The text group: the language, charset, kind and length of the texts drawn."""
    text.add_argument("--language", choices=language_names(), default=DEFAULT_LANGUAGE,
                      help="whose prose, words, punctuation and type designs to draw "
                           "(crnn_multigpu/datasets/languages/; default: %(default)s)")
    text.add_argument("--charset", metavar="FILE",
                      help="charset file, one character per line (default: 0-9 and a-z; with "
                           "--lines the language's charset: for en the 95 printable ASCII "
                           "characters)")
    text.add_argument("--lines", action="store_true",
                      help="whole printed lines (1-60 characters) of English prose, phrases, "
                           "code and numbers, in mixed faces, instead of single words")
    text.add_argument("--text", action="append", metavar="FILE",
                      help="with --lines: UTF-8 prose to cut lines from, repeatable (default: "
                           "the Python documentation and /usr/share/common-licenses); "
                           "implies --lines")
    text.add_argument("--words", metavar="FILE", help="word list, one word (or word<TAB>count) "
                                                      "a line (default: /usr/share/dict's)")
    text.add_argument("--kinds", metavar="K,K",
                      help="kinds of text, comma-separated, from word (dictionary words), number, "
                           "code (letters and digits), pseudo (pronounceable), random; with "
                           "--lines from prose, phrase, code, numbers (default: these four, mixed), "
                           "table (rows of short cells) and confusable (identifiers and codes "
                           "of look-alike glyphs: 1/l/I, 0/O), the last two drawn only when named")
    text.add_argument("--min-len", type=positive_int, default=1, help="shortest text (default: 1)")
    text.add_argument("--max-len", type=positive_int, help="longest (default: 10; 60 with --lines)")


def add_look_group(look):
    """The look group: the type designs and the distortions."""
    look.add_argument("--fonts", choices=FONT_SIDES, default="all",
                      help="which side of the deterministic train/held-out split (by font "
                           "family) to use (default: %(default)s)")
    add_font_arguments(look)
    look.add_argument("--include-reserved", action="store_true",
                      help="also use the families reserved for independent evaluation "
                           "(Liberation, Arimo, Tinos, Cousine, FreeFont, URW base35, TeX Gyre)")
    look.add_argument("--difficulty", type=unit_float, default=0.5,
                      help="distortion strength from 0 (clean) to 1 (default: %(default)s)")
    look.add_argument("--underline", type=unit_float, default=0.0, metavar="SHARE",
                      help="the share of images with a link's underline under some words, as "
                           "browsers draw it, broken at descenders (default: %(default)s)")


def _check_arguments(args):
    if not args.out and not args.list_fonts:
        raise ValueError("--out is required: the folder to write the dataset to")
    if args.text:
        args.lines = True
    if args.max_len is None:
        args.max_len = 60 if args.lines else 10
    if args.min_len > args.max_len:
        raise ValueError("--min-len %d is longer than --max-len %d" % (args.min_len, args.max_len))
    existing = [name for name in ("labels.txt", "data.mdb", "synthetic.json")
                if args.out and os.path.exists(os.path.join(args.out, name))]
    if existing and not args.overwrite:
        raise ValueError("%s already holds a dataset (%s); pass --overwrite to replace it or "
                         "choose another --out" % (args.out, existing[0]))


def list_fonts(args, charset, language):
    """Print every font family found, its faces and its side of the split; returns 0."""
    from crnn_multigpu.datasets.fonts import (find_fonts, font_family, is_reserved, split_fonts,
                                              superfamily)
    fonts = find_fonts(args.font_dir, chars=charset.chars, include_reserved=True,
                       language=language)
    usable = [f for f in fonts if args.include_reserved or not is_reserved(f)]
    _, heldout = split_fonts(usable, args.holdout_fraction) if usable else ([], [])
    families = {}
    for path in fonts:
        family = font_family(path)
        side = "reserved" if path not in usable else "heldout" if path in heldout else "train"
        families.setdefault((superfamily(family), family, side), []).append(path)
    for (_, family, side), paths in sorted(families.items()):
        print("%-8s %-34s %3d face(s)  %s" % (side, family, len(paths), os.path.dirname(paths[0])))
    print("%d faces in %d families (%d groups): %d for training, %d held out, %d reserved%s"
          % (len(fonts), len(families), len(set(k[0] for k in families)),
             len(usable) - len(heldout), len(heldout), len(fonts) - len(usable),
             "" if args.include_reserved else " (left out; --include-reserved uses them)"))
    return 0


def main_body(argv=None):
    """Parse ``argv``, render the dataset, print a summary; returns 0."""
    args = build_parser().parse_args(argv)
    setup_logging()
    _check_arguments(args)
    from crnn_multigpu.datasets.charset import Charset
    from crnn_multigpu.datasets.fonts import select_fonts

    language = get_language(args.language)
    charset = Charset.from_file(args.charset) if args.charset else \
        language.charset if args.lines else Charset.default()
    if args.list_fonts:
        return list_fonts(args, charset, language)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else None
    fonts = select_fonts(args.fonts, args.font_dir, charset.chars, args.holdout_fraction,
                         include_reserved=args.include_reserved, language=language)
    if args.lazy:
        return write_lazy(args, charset, kinds, fonts)
    return write_rendered(args, charset, kinds, fonts, language)


def write_lazy(args, charset, kinds, fonts):
    """Write the recipe (synthetic.json) of ``--lazy``, print what it holds; returns 0."""
    from crnn_multigpu.datasets import write_recipe
    path = write_recipe(args.out, count=args.count, start=args.start, seed=args.seed,
                        fonts=args.fonts, holdout_fraction=args.holdout_fraction,
                        font_dirs=[os.path.abspath(d) for d in args.font_dir or ()] or None,
                        include_reserved=args.include_reserved, min_len=args.min_len,
                        max_len=args.max_len, difficulty=args.difficulty,
                        words=args.words and os.path.abspath(args.words), kinds=kinds,
                        charset="".join(charset.chars), lines=args.lines,
                        text=[os.path.abspath(t) for t in args.text] if args.text else None,
                        language=args.language, underline=args.underline)
    print("wrote %s: %d images in %d fonts, rendered when read" % (path, args.count, len(fonts)))
    return 0


def write_rendered(args, charset, kinds, fonts, language):
    """Render the images into --out in --format, print how fast; returns 0."""
    from crnn_multigpu.datasets.synthetic import make_generator, text_part_of
    generator = make_generator(charset, fonts, lines=args.lines, text_files=args.text,
                               text_part=text_part_of(args.fonts), min_len=args.min_len,
                               max_len=args.max_len, seed=args.seed, difficulty=args.difficulty,
                               words=args.words, kinds=kinds, language=language,
                               underline=args.underline)
    started = time.time()
    write_samples(args, generator, charset)
    seconds = time.time() - started
    processes = args.workers if args.format == "folder" else 1
    print("wrote %d images to %s (%s format, %d fonts) in %.1f s: %.0f images/s with %d "
          "process(es)" % (args.count, args.out, args.format, len(fonts), seconds,
                           args.count / max(seconds, 1e-9), processes))
    return 0


def write_samples(args, generator, charset):
    """Write the samples of ``generator`` into --out: a folder dataset, or an LMDB."""
    from crnn_multigpu.datasets import write_dataset, write_lmdb
    from crnn_multigpu.datasets.folder import with_progress
    every = 0 if args.quiet else max(100, min(10000, args.count // 10))
    if args.format == "folder":
        write_dataset(args.out, generator, args.count, start=args.start,
                      progress=not args.quiet, every=every, workers=args.workers)
        return
    samples = generator.iterate(args.start, args.count)
    if every:
        samples = with_progress(samples, args.count, every)
    make_folder(args.out)
    # The charset first: data.mdb, which makes the folder a dataset, only when complete.
    charset.to_file(os.path.join(args.out, "charset.txt"))
    write_lmdb(args.out, samples, overwrite=True)


main = console_entry(main_body, "crnn-generate")

if __name__ == "__main__":
    sys.exit(main())
