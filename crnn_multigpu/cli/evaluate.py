"""crnn-evaluate: word accuracy, CER and normalized edit distance of a trained run on a dataset.

The LAST line of output is one JSON object (word_accuracy, cer, mean_ned, n, ...)
for tools to parse; progress goes to stderr.
"""
import glob
import os
import sys

from crnn_multigpu.cli.common import (ArgumentParser, add_model_class_argument,
                                      chosen_model_class, non_negative_float, non_negative_int,
                                      positive_int, print_figures, refuse_to_overwrite, run_main,
                                      setup_logging)
from crnn_multigpu.ocr import char_lm


def build_parser():
    parser = ArgumentParser(prog="crnn-evaluate", description=__doc__.splitlines()[0])
    add_model_arguments(parser)
    parser.add_argument("--data", required=True, help="dataset: folder with labels.txt, or LMDB")
    parser.add_argument("--beam-width", type=non_negative_int, default=0,
                        help="0: greedy; >1: CTC beam search")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--picture", help="write a PNG of sample predictions here")
    parser.add_argument("--overwrite", action="store_true",
                        help="let --picture replace an existing file")
    parser.add_argument("--fold-case", action="store_true",
                        help="score readings and labels lower-cased (a case-sensitive model on "
                             "case-blind labels such as the 36-class word sets)")
    parser.add_argument("--alnum", action="store_true",
                        help="score only letters and digits: spaces and punctuation dropped from "
                             "readings and labels before comparing")
    add_language_model_arguments(parser)
    add_lexicon_arguments(parser)
    add_towers_argument(parser)
    parser.add_argument("--verbose", action="store_true")
    return parser


def add_towers_argument(parser):
    """--towers (shared with crnn-predict): split each batch over N towers, same outputs."""
    parser.add_argument("--towers", type=positive_int, default=1, metavar="N",
                        help="run each batch over N towers: the first N GPUs, or N virtual CPU "
                             "devices without enough GPUs (default 1); the outputs are those of "
                             "one device")


def add_lexicon_arguments(parser):
    """--lexicon, --lexicon-delta, --lexicon-search (shared with crnn-predict)."""
    parser.add_argument("--lexicon", metavar="FILE",
                        help="read only words of this UTF-8 file (one per line): the most probable "
                             "word near the unconstrained output (CRNN paper, 2.3.2)")
    parser.add_argument("--lexicon-delta", type=non_negative_int, default=3, metavar="N",
                        help="candidates are lexicon words within edit distance N of the "
                             "unconstrained output; none: keep that output (default 3)")
    parser.add_argument("--lexicon-search", choices=("auto", "all", "nearest"), default="auto",
                        help="all: score every lexicon word (exact); nearest: only those within "
                             "--lexicon-delta; auto (default): all for lexicons of <= 1000 words")


def add_language_model_arguments(parser):
    """--char-lm, --lm-weight, --lm-bonus (shared with crnn-predict)."""
    parser.add_argument("--char-lm", action="store_true",
                        help="read each image by a CTC beam search with a character %d-gram "
                             "model of English, counted at start-up (about 2 s) from the "
                             "training part of the line generator's prose"
                             % char_lm.DEFAULT_ORDER)
    parser.add_argument("--lm-weight", type=non_negative_float, default=char_lm.DEFAULT_WEIGHT,
                        metavar="W", help="with --char-lm: weight of the language model's log "
                                          "probability (default: %(default)s)")
    parser.add_argument("--lm-bonus", type=non_negative_float, default=char_lm.DEFAULT_BONUS,
                        metavar="B", help="with --char-lm: score added per character read, "
                                          "against the model's cost of each (default: "
                                          "%(default)s)")


def language_model_decoder(args, charset):
    """The CharLmDecoder of the language-model flags for a model's charset, or None."""
    if not args.char_lm:
        return None
    return char_lm.CharLmDecoder(char_lm.prose_language_model(charset), weight=args.lm_weight,
                                 bonus=args.lm_bonus)


def lexicon_words(args):
    """The words of --lexicon, or None; read before the model loads so a bad file fails fast."""
    if args.lexicon is None:
        return None
    from crnn_multigpu.ocr.lexicon import read_lexicon
    return read_lexicon(args.lexicon)


def lexicon_decoder(args, words, charset):
    """The LexiconDecoder of the lexicon flags for a model's charset, or None without words."""
    if words is None:
        return None
    from crnn_multigpu.ocr.lexicon import LexiconDecoder
    return LexiconDecoder(words, charset, delta=args.lexicon_delta, search=args.lexicon_search,
                          name="lexicon %s" % args.lexicon)


def models_dir():
    """Where the shipped models are: ``crnn_multigpu/models`` in an installed package, else
    ``models/`` of the checkout this package runs from."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "models")
    return installed if os.path.isdir(installed) else os.path.join(os.path.dirname(package),
                                                                   "models")


# The models shipped with the package (their README.md says how they were trained).
MODELS_DIR = models_dir()
SHIPPED_MODELS = {
    # Printable ASCII, case-sensitive, any width: words, lines and pages.
    "text": os.path.join(MODELS_DIR, "text"),
    # 36 classes (digits, lower case), 100 px wide words: the CRNN paper's setting.
    "words": os.path.join(MODELS_DIR, "words"),
}
DEFAULT_MODEL = "text"


def add_model_arguments(parser):
    """--checkpoint, --model and --model-class (shared with crnn-predict): which model reads."""
    parser.add_argument("--checkpoint",
                        help="run directory of crnn-train, or a checkpoint path prefix inside it "
                             "(default: the shipped model named by --model)")
    parser.add_argument("--model", choices=sorted(SHIPPED_MODELS),
                        help="a shipped model, used when no --checkpoint is given: text "
                             "(models/text: the 95 printable ASCII characters, words, lines and "
                             "pages; the default) or words (models/words: single words in digits "
                             "and lower case)")
    add_model_class_argument(parser)


def chosen_run(args, default=DEFAULT_MODEL):
    """``(run_dir, checkpoint prefix or None)`` of --checkpoint, or --model (else ``default``)."""
    if args.checkpoint is not None and args.model is not None:
        raise ValueError("give --checkpoint or --model, not both: --model names a shipped "
                         "model, used when there is no --checkpoint")
    if args.checkpoint is None:
        return resolve_run(None, SHIPPED_MODELS[args.model or default])
    return resolve_run(args.checkpoint)


def resolve_run(path, shipped=SHIPPED_MODELS[DEFAULT_MODEL], flag="--checkpoint"):
    """Accept a run directory or a checkpoint prefix inside its checkpoints/ folder.

    ``None`` means the shipped model at ``shipped`` (the text model unless told otherwise);
    ``flag`` is the option the path came from, for the error messages.
    """
    if path is None:
        if os.path.isfile(os.path.join(shipped, "config.json")):
            return shipped, None
        raise FileNotFoundError("no --checkpoint given and the shipped model is missing from "
                                "%s (it has no config.json); pass the --out folder of crnn-train "
                                "as --checkpoint (e.g. runs/lines/run after make train-lines)"
                                % shipped)
    if os.path.isdir(path):
        return path, None
    if os.path.isfile(path):
        raise FileNotFoundError("%s %s is a file; pass the run directory that holds it "
                                "(%s), or a checkpoint prefix without its extension (e.g. "
                                "RUN/checkpoints/model.ckpt-1000)"
                                % (flag, path, os.path.dirname(os.path.abspath(path))))
    if not glob.glob(glob.escape(path) + ".*"):
        raise FileNotFoundError("%s %s does not exist: pass the --out directory of "
                                "crnn-train (or a checkpoint prefix inside its checkpoints/)"
                                % (flag, os.path.abspath(path)))
    folder = os.path.dirname(path)
    run_dir = os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
    return run_dir, path


def reads_case(charset):
    """True when ``charset`` holds both cases of some letter (the model tells them apart)."""
    chars = set(charset.chars)
    return any(char.upper() in chars for char in chars if char.islower())


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    refuse_to_overwrite(args.picture, "--picture", args.overwrite)
    words = lexicon_words(args)
    from crnn_multigpu.datasets import open_dataset
    from crnn_multigpu.ocr.inference import Recognizer
    from crnn_multigpu.ocr.metrics import scoring_fold
    run_dir, checkpoint = chosen_run(args)
    # Labels outside the charset cannot be predicted but still count as errors: keep them all.
    dataset = open_dataset(args.data)
    recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint,
                            towers=args.towers, model_cls=chosen_model_class(args))
    recognizer.language_model = language_model_decoder(args, recognizer.charset)
    recognizer.lexicon = lexicon_decoder(args, words, recognizer.charset)

    def progress(done, total):
        sys.stderr.write("\revaluated %d/%d" % (done, total))
        sys.stderr.flush()

    fold = scoring_fold(args.fold_case, args.alnum) if args.fold_case or args.alnum else None
    # A synthetic recipe draws its labels when read: it has no list of them to look at.
    labels = getattr(dataset, "texts", None)
    if fold is None and labels is not None and reads_case(recognizer.charset) and not any(
            text != text.lower() for text in labels):
        sys.stderr.write("note: the labels of %s have no capitals but the model reads case; "
                         "--fold-case --alnum scores case-blind labels (such as a 36-class word "
                         "set) fairly\n" % args.data)
    figures, examples = recognizer.evaluate(dataset, args.batch_size, progress=progress,
                                            fold=fold)
    sys.stderr.write("\n")
    if not figures["n"]:
        unreadable = getattr(dataset, "unreadable", None) or ["?"]
        raise ValueError("none of the %d image(s) of %s could be read (e.g. %s): nothing to "
                         "evaluate" % (len(dataset), args.data, unreadable[0]))
    if args.picture:
        from crnn_multigpu.ocr.picture import prediction_grid
        prediction_grid([e[0] for e in examples], [e[1] for e in examples],
                        [e[2] for e in examples], args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    figures["checkpoint"] = recognizer.checkpoint
    figures["scoring"] = "+".join(name for name, on in (("fold-case", args.fold_case),
                                                        ("alnum", args.alnum)) if on) or "exact"
    if recognizer.language_model is not None:
        figures.update(char_lm=dict(order=char_lm.DEFAULT_ORDER, weight=args.lm_weight,
                                    bonus=args.lm_bonus))
    if recognizer.lexicon is not None:
        figures.update(lexicon=args.lexicon, lexicon_words=len(recognizer.lexicon))
    print_figures(figures)
    return 0


def main(argv=None):
    """Console entry point of crnn-evaluate."""
    return run_main(main_body, argv)


if __name__ == "__main__":
    sys.exit(main())
