"""crnn-predict: recognise text in image files; one line per image, path<TAB>text."""
import sys

from crnn_multigpu.cli.common import ArgumentParser, non_negative_int, run_main, setup_logging
from crnn_multigpu.cli.evaluate import (add_lexicon_arguments, lexicon_decoder, lexicon_words,
                                        resolve_run)


def build_parser():
    parser = ArgumentParser(prog="crnn-predict", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="run directory of crnn-train (default: the shipped "
                                             "word model, models/words)")
    parser.add_argument("images", nargs="+", help="image files, any size and mode")
    parser.add_argument("--beam-width", type=non_negative_int,
                        default=0, help="0: greedy; >1: CTC beam search")
    parser.add_argument("--picture", help="write a PNG grid of the inputs with their predictions")
    parser.add_argument("--with-prob", action="store_true", help="add a third column: log probability")
    add_lexicon_arguments(parser)
    parser.add_argument("--verbose", action="store_true")
    return parser


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    words = lexicon_words(args)
    from crnn_multigpu.datasets import load_image
    from crnn_multigpu.inference import Recognizer
    run_dir, checkpoint = resolve_run(args.checkpoint)
    recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint)
    recognizer.lexicon = lexicon_decoder(args, words, recognizer.charset)
    readable, arrays, failed = [], [], 0
    for path in args.images:
        try:
            arrays.append(load_image(path, recognizer.model.height))
            readable.append(path)
        except (ValueError, OSError) as error:
            failed += 1
            sys.stderr.write("skipped: %s\n" % error)
    texts, log_probs = recognizer.recognize_arrays(arrays) if arrays else ([], [])
    for path, text, log_prob in zip(readable, texts, log_probs):
        print("%s\t%s\t%.4f" % (path, text, log_prob) if args.with_prob else "%s\t%s" % (path, text))
    if args.picture and arrays:
        from crnn_multigpu.picture import prediction_grid
        prediction_grid(arrays, texts, None, args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    return 1 if failed and not readable else 0


def main(argv=None):
    """Console entry point of crnn-predict."""
    return run_main(main_body, argv)


if __name__ == "__main__":
    sys.exit(main())
