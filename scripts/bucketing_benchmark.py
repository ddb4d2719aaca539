"""Training speed on variable-width lines with and without width bucketing, from one run.

Both settings train the same CRNN (``--width 0``) on the same line images, batch for batch
what ``crnn-train`` would feed at steps 0..N-1 (``StepBatches`` with ``bucket`` 0 or N);
batches are decoded before timing, so the figures are the training step alone. Repetitions
of the two settings alternate so that load from other processes hits both alike. Prints
images/s, the mean padded width and the share of padding for each, then the speed-up::

    python scripts/bucketing_benchmark.py                    # renders 1,024 lines first
    python scripts/bucketing_benchmark.py --data data/lines --steps 30 --repeats 5
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.compat import tf  # noqa: E402
from crnn_multigpu.ocr.crnn import CRNN  # noqa: E402
from crnn_multigpu.ocr.training_settings import DEFAULT_BUCKET  # noqa: E402
from crnn_multigpu.datasets import FolderDataset, write_dataset  # noqa: E402
from crnn_multigpu.datasets.fonts import select_fonts  # noqa: E402
from crnn_multigpu.datasets.steps import StepBatches  # noqa: E402
from crnn_multigpu.datasets.synthetic import make_generator  # noqa: E402
from crnn_multigpu.wrapper.devices import cpu_devices, session_config  # noqa: E402
from crnn_multigpu.wrapper.towers import MultiGpuModel  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="folder dataset of lines (default: render --count lines)")
    parser.add_argument("--count", type=int, default=1024, help="lines to render without --data")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per repetition")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--bucket", type=int, default=DEFAULT_BUCKET,
                        help="windows of this many batches (crnn-train's default)")
    parser.add_argument("--model", choices=sorted(CRNN.SIZES), default="small")
    parser.add_argument("--towers", type=int, default=1)
    return parser.parse_args(argv)


def line_dataset(args, charset, scratch):
    """The --data folder, or --count freshly rendered lines in training fonts."""
    if args.data:
        return FolderDataset(args.data, charset=charset)
    out = os.path.join(scratch, "lines")
    fonts = select_fonts("train", chars=charset.chars)
    generator = make_generator(charset, fonts, lines=True, text_part="train", seed=0,
                               difficulty=0.25)
    stats = write_dataset(out, generator, args.count, progress=False,
                          workers=max(1, os.cpu_count() or 1))
    sys.stderr.write("rendered %d lines in %.0f s\n" % (args.count, stats["seconds"]))
    return FolderDataset(out, charset=charset)


def main(argv=None):
    args = parse_args(argv)
    charset = Charset.printable_ascii()
    with tempfile.TemporaryDirectory() as scratch:
        dataset = line_dataset(args, charset, scratch)
        settings = (("no buckets", 0), ("buckets of %d" % args.bucket, args.bucket))
        steps = min(args.steps, len(dataset) // args.batch_size)
        batches = {}
        for name, bucket in settings:
            source = StepBatches(dataset, charset, args.batch_size, seed=0, bucket=bucket)
            batches[name] = [source(step) for step in range(steps)]
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        model = MultiGpuModel(CRNN, devices=cpu_devices(args.towers),
                              num_classes=charset.num_classes, **CRNN.SIZES[args.model])
        init = tf.global_variables_initializer()
    seconds = dict((name, []) for name, _ in settings)
    with tf.Session(graph=graph, config=session_config(args.towers)) as session:
        session.run(init)
        for name, _ in settings:  # warm-up: first runs of each shape
            for batch in batches[name][:3]:
                session.run(model.objective, model.feed_dict(model.split(batch)))
        for repeat in range(args.repeats):
            for name, _ in (settings if repeat % 2 == 0 else settings[::-1]):
                started = time.perf_counter()
                for batch in batches[name]:
                    session.run(model.objective, model.feed_dict(model.split(batch)))
                seconds[name].append(time.perf_counter() - started)
    rates = {}
    print("model %s, batch %d, %d towers, %d steps x %d repetitions, %d lines"
          % (args.model, args.batch_size, args.towers, steps, args.repeats, len(dataset)))
    for name, _ in settings:
        padded = np.mean([b.images.shape[2] for b in batches[name]])
        padding = 1.0 - sum(b.widths.sum() for b in batches[name]) / float(
            sum(b.images.shape[2] * len(b.widths) for b in batches[name]))
        rates[name] = steps * args.batch_size / float(np.median(seconds[name]))
        print("%-14s %7.1f images/s   mean padded width %5.0f px   padding %4.1f %%"
              % (name, rates[name], padded, 100 * padding))
    print("speed-up from bucketing: %.2fx" % (rates[settings[1][0]] / rates[settings[0][0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
