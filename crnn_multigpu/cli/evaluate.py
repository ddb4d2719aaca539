"""crnn-evaluate: word accuracy, CER and normalized edit distance of a trained run on a dataset.

The LAST line of output is one JSON object (word_accuracy, cer, mean_ned, n, ...)
for tools to parse; progress goes to stderr.
"""
import sys

from crnn_multigpu.cli.common import (ArgumentParser, console_entry, positive_int, print_figures,
                                      check_output_file, report_unreadable, setup_logging)
from crnn_multigpu.cli.reading import add_reading_arguments, chosen_reader
from crnn_multigpu.ocr.metrics import SCORINGS


def build_parser():
    """crnn-evaluate's arguments."""
    parser = ArgumentParser(prog="crnn-evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="dataset: folder with labels.txt, or LMDB")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    scoring = parser.add_argument_group("scoring against labels in a smaller alphabet")
    scoring.add_argument("--scoring", choices=sorted(SCORINGS),
                         help="strict: the texts as they are; nfkc-blank-blind: NFKC-normalised "
                              "with whitespace ignored (Chinese has no spaces between words; "
                              "，equals ,). Default: the model's language's (English: strict, "
                              "Chinese: nfkc-blank-blind)")
    scoring.add_argument("--fold-case", action="store_true", help="compare lower-cased")
    scoring.add_argument("--alnum", action="store_true",
                         help="compare letters and digits only (spaces, punctuation dropped)")
    add_reading_arguments(parser, picture_help="write a PNG of sample predictions here")
    parser.add_argument("--verbose", action="store_true")
    return parser


def reads_case(charset):
    """True when ``charset`` holds both cases of some letter (the model tells them apart)."""
    chars = set(charset.chars)
    return any(char.upper() in chars for char in chars if char.islower())


def chosen_fold(args, recognizer, dataset):
    """``(scoring name, fold or None)`` of --scoring, --fold-case and --alnum for ``recognizer``;
    a note on stderr when the labels have no capitals but the model reads case."""
    from crnn_multigpu.ocr.metrics import scoring_fold
    scoring = args.scoring or recognizer.language.scoring
    blind = SCORINGS[scoring].get("nfkc_blank_blind", False)
    fold = scoring_fold(args.fold_case, args.alnum, blind) \
        if args.fold_case or args.alnum or blind else None
    # A synthetic recipe draws its labels when read: it has no list of them to look at.
    labels = getattr(dataset, "texts", None)
    if fold is None and labels is not None and reads_case(recognizer.charset) and not any(
            text != text.lower() for text in labels):
        sys.stderr.write("note: the labels of %s have no capitals but the model reads case; "
                         "--fold-case --alnum scores case-blind labels (such as a 36-class word "
                         "set) fairly\n" % args.data)
    name = "+".join(part for part, on in ((scoring, blind), ("fold-case", args.fold_case),
                                          ("alnum", args.alnum)) if on) or "exact"
    return name, fold


class Progress(object):
    """The progress line on stderr, rewritten after every batch; ``end()`` closes it, if any."""

    shown = False

    def __call__(self, done, total):
        sys.stderr.write("\revaluated %d/%d" % (done, total))
        sys.stderr.flush()
        self.shown = True

    def end(self):
        if self.shown:
            sys.stderr.write("\n")


def evaluated(args, recognizer, dataset):
    """``(figures, examples)`` over every label of ``dataset``: an image that cannot be read
    counts as a wrong, empty reading, and is named on stderr (a few, then a count)."""
    scoring, fold = chosen_fold(args, recognizer, dataset)
    unreadable, progress = [], Progress()
    figures, examples = recognizer.evaluate(dataset, args.batch_size, progress=progress,
                                            fold=fold, unreadable=unreadable)
    progress.end()
    if not figures["n"] or figures["unreadable"] == figures["n"]:
        raise ValueError("none of the %d image(s) of %s could be read (e.g. %s): nothing to "
                         "evaluate" % (len(dataset), args.data, (unreadable or ["?"])[0]))
    report_unreadable(unreadable, len(dataset), args.data)
    figures["scoring"] = scoring
    return figures, examples


def main_body(argv=None):
    """crnn-evaluate on the command line ``argv``: the figures as one JSON line on stdout."""
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    check_output_file(args.picture, "--picture", args.overwrite)
    from crnn_multigpu.datasets import open_dataset
    from crnn_multigpu.ocr.reader import lexicon_words
    # A bad lexicon, then a damaged dataset, are refused before the model is loaded (seconds of
    # TensorFlow start-up). Labels outside the charset cannot be predicted but still count as
    # errors: keep them all.
    lexicon_words(args.lexicon)
    dataset = open_dataset(args.data)
    recognizer = chosen_reader(args).recognizer
    figures, examples = evaluated(args, recognizer, dataset)
    if args.picture:
        from crnn_multigpu.ocr.picture import prediction_grid
        prediction_grid([e[0] for e in examples], [e[1] for e in examples],
                        [e[2] for e in examples], args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    figures["checkpoint"] = recognizer.checkpoint
    if recognizer.language_model is not None:
        decoder = recognizer.language_model
        figures.update(char_lm=dict(order=decoder.model.order, weight=decoder.weight,
                                    bonus=decoder.bonus))
    if recognizer.lexicon is not None:
        figures.update(lexicon=args.lexicon, lexicon_words=len(recognizer.lexicon))
    print_figures(figures)
    return 0


main = console_entry(main_body, "crnn-evaluate")

if __name__ == "__main__":
    sys.exit(main())
