"""Memory of TensorFlow's CTC beam search per entry (classes x beam width x frames), the figure
behind ``crnn_multigpu.ocr.ctc.BYTES_PER_ENTRY``.

TensorFlow's ``CTCBeamSearchDecoder`` keeps a tree of prefixes for each image: every frame,
each prefix in the beam gets a child for every class, and the children stay until the image is
decoded. Each measurement runs in a process of its own and reports the growth of its peak
resident memory (``ru_maxrss``) over a greedy decode of the same frames, divided by
classes x width x frames. Usage: ``python scripts/beam_search_memory.py`` (prints one JSON line).
"""
import json
import os
import subprocess
import sys

# (classes, width, frames): entry counts from 2.5 M to 20 M, shaped like the shipped models.
CASES = ((96, 400, 64), (96, 800, 128), (6900, 4, 256), (37, 4000, 32), (6900, 16, 128))

CHILD = """
import resource, sys
import numpy as np
from crnn_multigpu.compat import tf
classes, width, frames = map(int, sys.argv[1:4])
logits = np.random.RandomState(0).randn(frames, 1, classes).astype(np.float32)
inputs = tf.constant(logits)
lengths = tf.constant([frames], tf.int32)
greedy = tf.nn.ctc_greedy_decoder(inputs, lengths)[0][0].values
beam = tf.nn.ctc_beam_search_decoder(inputs, lengths, beam_width=width, top_paths=1,
                                     merge_repeated=False)[0][0].values
with tf.Session() as session:
    session.run(greedy)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    session.run(beam if width > 1 else greedy)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024)
"""


def grown_bytes(classes, width, frames):
    """Bytes the peak resident memory of a fresh process grew by in one beam search."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", CHILD, str(classes), str(width), str(frames)],
                          stdout=subprocess.PIPE, check=True, env=env)
    return int(done.stdout.split()[-1])


def main():
    rows = []
    for classes, width, frames in CASES:
        entries = classes * width * frames
        grown = grown_bytes(classes, width, frames)
        rows.append(dict(classes=classes, width=width, frames=frames, entries=entries,
                         grown_bytes=grown, bytes_per_entry=round(grown / float(entries), 1)))
    import tensorflow
    print(json.dumps(dict(tensorflow=tensorflow.__version__, cases=rows)))


if __name__ == "__main__":
    main()
