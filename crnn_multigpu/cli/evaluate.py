"""crnn-evaluate: word accuracy, CER and normalized edit distance of a trained run on a dataset.

The LAST line of output is one JSON object (word_accuracy, cer, mean_ned, n, ...)
for tools to parse; progress goes to stderr.
"""
import argparse
import json
import sys

from crnn_multigpu.cli.common import run_main, setup_logging


def build_parser():
    parser = argparse.ArgumentParser(prog="crnn-evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True,
                        help="run directory of crnn-train (or a checkpoint path prefix inside it)")
    parser.add_argument("--data", required=True, help="dataset: folder with labels.txt, or LMDB")
    parser.add_argument("--beam-width", type=int, default=0, help="0: greedy; >1: CTC beam search")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--picture", help="write a PNG of sample predictions here")
    parser.add_argument("--verbose", action="store_true")
    return parser


def resolve_run(path):
    """Accept a run directory or a checkpoint prefix inside its checkpoints/ folder."""
    import os
    if os.path.isdir(path):
        return path, None
    folder = os.path.dirname(path)
    run_dir = os.path.dirname(folder) if os.path.basename(folder) == "checkpoints" else folder
    return run_dir, path


def main_body(argv=None):
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    from crnn_multigpu.datasets import open_dataset
    from crnn_multigpu.inference import Recognizer
    run_dir, checkpoint = resolve_run(args.checkpoint)
    recognizer = Recognizer(run_dir, beam_width=args.beam_width, checkpoint=checkpoint)
    # Labels outside the charset cannot be predicted but still count as errors: keep them all.
    dataset = open_dataset(args.data)

    def progress(done, total):
        sys.stderr.write("\revaluated %d/%d" % (done, total))
        sys.stderr.flush()

    figures, examples = recognizer.evaluate(dataset, args.batch_size, progress=progress)
    sys.stderr.write("\n")
    if args.picture:
        from crnn_multigpu.picture import prediction_grid
        prediction_grid([e[0] for e in examples], [e[1] for e in examples],
                        [e[2] for e in examples], args.picture)
        sys.stderr.write("wrote %s\n" % args.picture)
    figures["checkpoint"] = recognizer.checkpoint
    print(json.dumps(figures, sort_keys=True))
    return 0


def main(argv=None):
    """Console entry point of crnn-evaluate."""
    return run_main(main_body, argv)


if __name__ == "__main__":
    sys.exit(main())
