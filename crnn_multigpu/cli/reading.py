"""What the reading tools (crnn-evaluate, crnn-predict, crnn-export) share: which model reads
(a shipped model, a run or an ONNX export) and what runs it (TensorFlow or onnxruntime), how
its frames are decoded (greedy, beam, language model, lexicon), on how many towers, and the
picture of what it read."""
import os

from crnn_multigpu.cli.common import (add_model_class_argument, chosen_model_class,
                                      float_range, non_negative_int, positive_int)
from crnn_multigpu.datasets.language import get_language, language_names
from crnn_multigpu.ocr import char_lm, ctc
from crnn_multigpu.ocr.shipped import DEFAULT_MODEL, ENGINES, SHIPPED, resolve_run, shipped_model

# --lm-weight W raises the character model's probabilities to the power W in the fused score
# (char_lm: log p_ctc + W log p_lm + B len). At 1 they count as counted, as much as the
# image's; above 1 the model is made surer than its own counts, overruling the pixels more
# and more (the text model on 60 words / 30 lines at the default bonus: 100 / 97 % right at
# 0.2, 88 / 50 % at 1, 37 / 27 % at 2, 10 / 20 % at 4).
MAX_LM_WEIGHT = 1.0
# --lm-bonus B pays B nats for every character read. The search tries only characters with at
# least 1e-3 of a frame (char_lm._PRUNE), so the image charges at most -log(1e-3) = 6.9 nats
# for any of them: a larger bonus pays for characters whatever the pixels say, and readings
# fill with them (30 lines at weight 0.2: 97 % right at bonus 1.5, 63 % at 7, 37 % at 10).
MAX_LM_BONUS = round(-float(char_lm._PRUNE), 1)


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


def language_model_decoder(args, reader):
    """The CharLmDecoder the language-model flags give ``reader`` (a TextReader: its charset
    and language), or None: --char-lm, --no-char-lm, else the language's default unless
    --beam-width asks for TensorFlow's beam search (whose reading the character model's
    search would replace)."""
    enabled = args.char_lm
    if enabled is None and getattr(args, "beam_width", 0) > 1:
        enabled = False
    return char_lm.reading_decoder(reader.language, reader.charset, enabled, args.lm_weight,
                                   args.lm_bonus)


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


def add_model_arguments(parser):
    """--checkpoint, --model and --model-class: which model reads."""
    parser.add_argument("--checkpoint",
                        help="run directory of crnn-train, or a checkpoint path prefix inside it "
                             "(default: the shipped model named by --model)")
    parser.add_argument("--model", choices=sorted(SHIPPED),
                        help="a shipped model, used when no --checkpoint is given: text "
                             "(models/text: the 95 printable ASCII characters, words, lines and "
                             "pages; the default), words (models/words: single words in digits "
                             "and lower case) or zh (models/zh: Simplified Chinese with Latin "
                             "words, numbers and code mixed in: crops, lines and pages)")
    add_model_class_argument(parser)


def chosen_run(args, default=DEFAULT_MODEL):
    """``(run_dir, checkpoint prefix or None)`` of --checkpoint, or --model (else ``default``);
    with ``--engine onnx`` ``(the ONNX file, None)``: the export --checkpoint names, or the
    shipped model's ONNX file."""
    from crnn_multigpu.ocr.onnx_reader import is_onnx_export, onnx_file
    if args.checkpoint is not None and args.model is not None:
        raise ValueError("give --checkpoint or --model, not both: --model names a shipped "
                         "model, used when there is no --checkpoint")
    if args.engine == "onnx":
        if args.towers > 1:
            raise ValueError("--towers splits batches over TensorFlow devices; --engine onnx "
                             "runs one onnxruntime session on all cores: drop --towers")
        if args.checkpoint is None:
            return shipped_model(args.model or default, engine="onnx"), None
        return onnx_file(args.checkpoint), None
    if args.checkpoint is not None and is_onnx_export(args.checkpoint):
        from crnn_multigpu.runtime.checkpoints import checkpoint_dir
        if not os.path.isdir(checkpoint_dir(args.checkpoint)):  # not a run that has both
            raise ValueError("--checkpoint %s is an ONNX export: read it with --engine onnx"
                             % args.checkpoint)
    if args.checkpoint is None:
        return resolve_run(None, args.model or default)
    return resolve_run(args.checkpoint)


def chosen_recognizer(args, run, words):
    """The reader the reading options describe: ``run`` (``chosen_run``'s answer) run by
    --engine (TensorFlow's Recognizer on --towers, or an OnnxRecognizer), read as --beam-width,
    --char-lm and --lexicon say (``words``: ``lexicon_words``'s answer, read before the model
    loads)."""
    run_dir, checkpoint = run
    if args.engine == "onnx":
        from crnn_multigpu.ocr.onnx_reader import OnnxRecognizer
        recognizer = OnnxRecognizer(run_dir, beam_width=args.beam_width)
    else:
        from crnn_multigpu.ocr.inference import Recognizer
        recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint,
                                towers=args.towers, model_cls=chosen_model_class(args))
    recognizer.language_model = language_model_decoder(args, recognizer)
    recognizer.lexicon = lexicon_decoder(args, words, recognizer.charset)
    return recognizer
