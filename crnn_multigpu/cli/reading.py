"""What the reading tools (crnn-evaluate, crnn-predict, crnn-export) share: the options that
say which model reads (a shipped model, a run or an ONNX export) and what runs it (TensorFlow
or onnxruntime), how its frames are decoded (greedy, beam, language model, lexicon), on how many
towers, and the picture of what it read; :func:`chosen_reader` makes the
:class:`~crnn_multigpu.ocr.reader.Reader` they describe."""
from crnn_multigpu.cli.common import (add_model_class_argument, chosen_model_class,
                                      float_range, non_negative_int, positive_int)
from crnn_multigpu.datasets.language import get_language, language_names
from crnn_multigpu.ocr import ctc
from crnn_multigpu.ocr.reader import MAX_LM_BONUS, MAX_LM_WEIGHT
from crnn_multigpu.ocr.shipped import DEFAULT_MODEL, DESCRIPTIONS, ENGINES, SHIPPED

def add_reading_arguments(parser, picture_help):
    """The options every tool that reads images takes: model, engine, decoding, towers,
    picture."""
    add_model_arguments(parser)
    parser.add_argument("--engine", choices=ENGINES, default="tf",
                        help="what runs the model: tf (TensorFlow, the default) or onnx "
                             "(onnxruntime, no TensorFlow needed: reads the shipped model's "
                             "model.onnx, or the model.onnx, or its folder, that crnn-export "
                             "--format onnx wrote, given as --checkpoint; pip install "
                             "crnn_multigpu[onnx])")
    add_beam_width_argument(parser)
    parser.add_argument("--picture", help=picture_help)
    parser.add_argument("--overwrite", action="store_true",
                        help="let --picture replace an existing file")
    add_language_model_arguments(parser)
    add_lexicon_arguments(parser)
    add_towers_argument(parser)


def add_beam_width_argument(parser):
    """--beam-width: how the model's frames become text."""
    parser.add_argument("--beam-width", type=non_negative_int, default=0,
                        help="0: greedy; >1: CTC beam search this wide, as wide as the model "
                             "allows: the search keeps about %d bytes per class x width x frame, "
                             "at most %.0f GB an image (a %d px line, or the model's fixed "
                             "width), so a model of many classes allows less (docs/reliability.md "
                             "lists the shipped models' bounds); a wider beam is refused before "
                             "reading" % (ctc.BYTES_PER_ENTRY, ctc.BEAM_MEMORY_BUDGET / 2 ** 30,
                                          ctc.LONG_LINE_PIXELS))


def add_towers_argument(parser):
    """--towers: split each batch over N towers, same outputs."""
    parser.add_argument("--towers", type=positive_int, default=1, metavar="N",
                        help="run each batch over N towers: the first N GPUs, or N virtual CPU "
                             "devices on a machine without GPUs, as crnn-train (default 1); the "
                             "outputs are those of one device")


def add_lexicon_arguments(parser):
    """--lexicon, --lexicon-delta, --lexicon-search."""
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
    """--char-lm / --no-char-lm, --lm-weight, --lm-bonus."""
    parser.add_argument("--char-lm", dest="char_lm", action="store_const", const=True,
                        default=None,
                        help="read each image by a CTC beam search fused with a character n-gram "
                             "model of the model's language (its description's char_lm: English "
                             "counted at start-up, about 2 s, from the training part of the line "
                             "generator's prose; Chinese shipped, counted from its prose and "
                             "jieba's words). Chinese reads with it unless --no-char-lm or "
                             "--beam-width")
    parser.add_argument("--no-char-lm", dest="char_lm", action="store_const", const=False,
                        help="read without the character model (greedy or --beam-width), even "
                             "in a language that reads with it by default")
    parser.add_argument("--lm-weight", type=float_range(0.0, MAX_LM_WEIGHT), default=None,
                        metavar="W",
                        help="with the character model: weight of its log probability, in "
                             "[0, %g] (1: as much as the image's; default: the language's, %s)"
                             % (MAX_LM_WEIGHT, _described("weight")))
    parser.add_argument("--lm-bonus", type=float_range(0.0, MAX_LM_BONUS), default=None,
                        metavar="B",
                        help="with the character model: score added per character read, "
                             "against the model's cost of each, in [0, %g] (more pays for "
                             "characters the image does not show; default: the language's, %s)"
                             % (MAX_LM_BONUS, _described("bonus")))


def _described(setting):
    """Each described language's char_lm ``setting``, for --help: "English 0.2, ..."."""
    return ", ".join("%s %g" % (language.title, language.char_lm[setting])
                     for language in map(get_language, language_names()))


def add_model_arguments(parser):
    """--checkpoint, --model and --model-class: which model reads."""
    parser.add_argument("--checkpoint",
                        help="run directory of crnn-train, or a checkpoint path prefix inside it "
                             "(default: the shipped model named by --model)")
    parser.add_argument("--model", choices=sorted(SHIPPED),
                        help="a shipped model, used when no --checkpoint is given (default: "
                             "%s): %s" % (DEFAULT_MODEL, "; ".join(
                                 "%s (models/%s: %s)" % (name, name, DESCRIPTIONS[name])
                                 for name in SHIPPED)))
    add_model_class_argument(parser)


def chosen_reader(args):
    """The :class:`~crnn_multigpu.ocr.reader.Reader` the reading options describe: --checkpoint
    (a path) or --model (else the text model), run by --engine on --towers, read as
    --beam-width, --char-lm and --lexicon say."""
    from pathlib import Path
    from crnn_multigpu.ocr.reader import Reader
    if args.checkpoint is not None and args.model is not None:
        raise ValueError("give --checkpoint or --model, not both: --model names a shipped "
                         "model, used when there is no --checkpoint")
    model = Path(args.checkpoint) if args.checkpoint is not None else args.model or DEFAULT_MODEL
    return Reader(model, engine=args.engine, beam_width=args.beam_width, char_lm=args.char_lm,
                  lm_weight=args.lm_weight, lm_bonus=args.lm_bonus, lexicon=args.lexicon,
                  lexicon_delta=args.lexicon_delta, lexicon_search=args.lexicon_search,
                  towers=args.towers, model_class=chosen_model_class(args))
