"""The main job (`make train`): synthetic data, a CRNN trained on all towers, held-out evaluation.

1. renders a training set with one part of the system's font families and a
   validation set with the families held out from training (so the figure
   measures reading type designs it never saw, not memorised ones), real words
   in three cases, colours and degradations, both in parallel processes;
2. trains the default CRNN as crnn-train does (``ocr.TrainingRun``) on --towers towers: the
   first GPUs, or virtual CPUs on a machine without GPUs (refused at once when there are GPUs
   but fewer);
3. evaluates the newest checkpoint on the validation set and writes a PNG of
   sample predictions. Re-running continues an interrupted run.

``--lines`` (``make train-lines``) is the same job for whole printed lines: the 95 printable
ASCII characters, lines of 1-60 characters (training prose for training, held-out prose with
the held-out families for validation), variable widths (``--width 0``) with width buckets,
and CER and exact-line accuracy at the end.
"""
import os
import sys
import time

from crnn_multigpu.cli.common import (ArgumentParser, add_font_arguments, console_entry,
                                      output_folder, positive_float, positive_int, print_figures,
                                      setup_logging)


WORD_DEFAULTS = dict(train_count=40000, val_count=2000, steps=4000, lr=0.003)
# Lines, estimated from CPU time measured on a busy 2-core EPYC (25 ms per training image of
# the small CRNN at --width 0 with buckets, 8 ms per rendered line): ~2 min rendering, ~24 min
# training, ~1 min evaluation on 2 idle cores.
LINE_DEFAULTS = dict(train_count=30000, val_count=1000, steps=3500, lr=0.001)
# Documents are cleaner than scene text: milder geometry and degradations than words.
LINE_DIFFICULTY = 0.3


def build_parser():
    """The main job's arguments."""
    parser = ArgumentParser(prog="python -m crnn_multigpu.cli.main_job",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/main", type=output_folder,
                        help="everything goes here (data/, run/)")
    parser.add_argument("--lines", action="store_true",
                        help="whole printed lines instead of words (make train-lines)")
    parser.add_argument("--towers", type=positive_int, default=2,
                        help="towers to train on, as crnn-train --towers (default 2)")
    # Words: 3e-3 rather than crnn-train's 1e-3: measured on this job, the small CRNN (batch
    # norm, Adam) reaches 82.8 % at step 2,000 instead of 76.0 %, so the 15-minute budget goes
    # further. Lines: 1e-3, the rate seen to leave the CTC blank plateau (by step ~200).
    for key, kind, what in (("train_count", positive_int, "training images"),
                            ("val_count", positive_int, "validation images"),
                            ("steps", positive_int, "training steps"),
                            ("lr", positive_float, "Adam learning rate")):
        parser.add_argument("--" + key.replace("_", "-"), type=kind, default=None,
                            help="%s (default %g for words, %g for lines)"
                            % (what, WORD_DEFAULTS[key], LINE_DEFAULTS[key]))
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--model", choices=("tiny", "small", "medium", "paper"), default="small",
                        help="CRNN size (see crnn-train --model; tiny is for smoke tests)")
    parser.add_argument("--workers", type=positive_int, default=max(1, os.cpu_count() or 1),
                        help="processes rendering the synthetic data")
    parser.add_argument("--seed", type=int, default=0)
    add_font_arguments(parser)
    return parser


def render(out_dir, make, count, workers):
    """Render ``count`` samples of the generator ``make()`` builds, in ``workers`` processes,
    into one folder dataset (once: an existing one is kept)."""
    from crnn_multigpu.datasets import write_dataset
    if os.path.isfile(os.path.join(out_dir, "labels.txt")):
        sys.stderr.write("using existing %s\n" % out_dir)
        return
    stats = write_dataset(out_dir, make(), count, progress=False, workers=workers)
    sys.stderr.write("rendered %d images into %s in %.0f s (%.0f images/s with %d processes)\n"
                     % (count, out_dir, stats["seconds"], stats["images_per_second"], workers))


def main_body(argv=None):
    """The main job on the command line ``argv``: render, train, evaluate; the exit code."""
    args = build_parser().parse_args(argv)
    setup_logging()
    for key, value in (LINE_DEFAULTS if args.lines else WORD_DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    from crnn_multigpu.datasets.charset import Charset
    charset = Charset.printable_ascii() if args.lines else Charset.default()
    data_dir, run_dir = os.path.join(args.out, "data"), os.path.join(args.out, "run")
    train_dir, val_dir = os.path.join(data_dir, "train"), os.path.join(data_dir, "val")
    render_sets(args, charset, train_dir, val_dir)

    from crnn_multigpu.ocr.training import TrainingRun
    started = time.time()
    result = TrainingRun(training_settings(args, train_dir, val_dir, run_dir)).run(
        owns_process=True)
    if result.stopped_by:
        return 128 + result.stopped_by
    minutes = (time.time() - started) / 60.0
    print_figures(evaluate_run(args, run_dir, val_dir, minutes))
    return 0


def split_fonts_of(args, charset):
    """``(training faces, held-out faces)`` of the fonts that draw ``charset``, said on stderr
    (with a warning when there are too few for the figures to mean much)."""
    from crnn_multigpu.datasets import find_fonts, split_fonts
    from crnn_multigpu.datasets.fonts import font_family
    fonts = find_fonts(args.font_dir, chars=charset.chars)
    train_fonts, heldout_fonts = split_fonts(fonts, args.holdout_fraction, seed=args.seed)
    sys.stderr.write("fonts: %d faces for training, %d held out for validation, from families: "
                     "%s\n" % (len(train_fonts), len(heldout_fonts),
                               ", ".join(sorted(set(font_family(f) for f in heldout_fonts)))))
    if len(fonts) < 100:
        sys.stderr.write("warning: only %d fonts found; the figures will not reflect unseen "
                         "typefaces well (run scripts/install_system_packages.sh as root)\n"
                         % len(fonts))
    return train_fonts, heldout_fonts


def render_sets(args, charset, train_dir, val_dir):
    """Render the training set (training faces) and the validation set (held-out faces), once
    --towers is known to be one crnn-train takes."""
    from crnn_multigpu.datasets.synthetic import make_generator
    train_fonts, heldout_fonts = split_fonts_of(args, charset)
    # crnn-train's refusal of --towers before minutes of rendering (after the fonts' checks:
    # listing the GPUs starts CUDA, which logs to stderr on TF 1.15 without GPUs).
    from crnn_multigpu.runtime.placement import resolve_placement
    resolve_placement(args.towers)
    if args.lines:
        # Held-out families read held-out prose: neither the faces nor the sentences were seen.
        render(train_dir, lambda: make_generator(charset, train_fonts, lines=True,
                                                 text_part="train", seed=args.seed,
                                                 difficulty=LINE_DIFFICULTY),
               args.train_count, args.workers)
        render(val_dir, lambda: make_generator(charset, heldout_fonts, lines=True,
                                               text_part="heldout", seed=args.seed + 1000003,
                                               difficulty=LINE_DIFFICULTY),
               args.val_count, args.workers)
    else:
        render(train_dir, lambda: make_generator(charset, train_fonts, seed=args.seed),
               args.train_count, args.workers)
        # Validation: dictionary words (lower case, Capitalised, UPPER) in the held-out families.
        render(val_dir, lambda: make_generator(charset, heldout_fonts, seed=args.seed + 1000003,
                                               kinds=("word",)),
               args.val_count, args.workers)


def training_settings(args, train_dir, val_dir, run_dir):
    """The job's ``TrainingSettings`` (resuming when the run has a checkpoint)."""
    from crnn_multigpu.ocr.training_settings import TrainingSettings
    from crnn_multigpu.runtime.checkpoints import latest_checkpoint
    every = max(1, min(500, args.steps // 4)) if args.lines else 500
    lines = dict(width=0, charset=os.path.join(train_dir, "charset.txt"),
                 log_every=max(1, min(50, args.steps // 10))) if args.lines else {}
    return TrainingSettings(train=train_dir, val=val_dir, out=run_dir, towers=args.towers,
                            steps=args.steps, lr=args.lr, batch_size=args.batch_size,
                            seed=args.seed, model=args.model, validate_every=every,
                            validate_max=300 if args.lines else 500,
                            resume=bool(latest_checkpoint(run_dir)), **lines)


def evaluate_run(args, run_dir, val_dir, minutes):
    """The held-out figures of the run's newest checkpoint (and the picture of its sample
    predictions), said in a line on stderr; ``minutes``: how long training took."""
    from crnn_multigpu.datasets import open_dataset
    from crnn_multigpu.ocr.inference import Recognizer
    from crnn_multigpu.ocr.picture import prediction_grid
    recognizer = Recognizer(run_dir)
    figures, examples = recognizer.evaluate(open_dataset(val_dir))
    picture = prediction_grid([e[0] for e in examples], [e[1] for e in examples],
                              [e[2] for e in examples], os.path.join(args.out, "predictions.png"))
    figures.update(train_minutes=round(minutes, 1), towers=args.towers, steps=args.steps,
                   picture=picture, checkpoint=recognizer.checkpoint)
    with_lm = ""
    if args.lines:
        figures["line_accuracy"] = figures["word_accuracy"]
    else:
        with_lm = add_char_lm_figures(recognizer, val_dir, figures)
    sys.stderr.write("held-out-font validation: %s %.2f %%, CER %.2f %%%s on %d images; "
                     "training took %.1f min; sample predictions in %s\n"
                     % ("lines exactly right" if args.lines else "word accuracy",
                        100 * figures["word_accuracy"], 100 * figures["cer"], with_lm,
                        figures["n"], minutes, picture))
    return figures


def add_char_lm_figures(recognizer, val_dir, figures):
    """Add to ``figures`` the reading crnn-evaluate --char-lm gives; the words that say it."""
    # The language model's weights were chosen on words of the held-out families, so it is
    # reported for words only.
    from crnn_multigpu.datasets import open_dataset
    from crnn_multigpu.ocr.char_lm import reading_decoder
    recognizer.language_model = reading_decoder(recognizer.language, recognizer.charset,
                                                enabled=True)
    read_with_lm = recognizer.evaluate(open_dataset(val_dir), keep_examples=0)[0]
    figures.update(word_accuracy_char_lm=read_with_lm["word_accuracy"],
                   cer_char_lm=read_with_lm["cer"])
    return " (%.2f %% and CER %.2f %% with the character language model, --char-lm)" % (
        100 * read_with_lm["word_accuracy"], 100 * read_with_lm["cer"])


main = console_entry(main_body, "the main job")

if __name__ == "__main__":
    sys.exit(main())
