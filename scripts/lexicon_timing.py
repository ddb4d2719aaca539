"""Cost of lexicon decoding on a large lexicon: BK-tree build time and per-image decode time.

Words: a random 50,000 of /usr/share/dict/american-english fitted to the default
0-9a-z charset (lower-cased; words with apostrophes or accents dropped). Images:
the per-frame log-probabilities of a 100-pixel-wide line (25 frames x 37 classes)
whose greedy reading is a lexicon word with 0-2 random edits (a near miss), the
frames peaked on that reading. Decode time = BK-tree search + CTC scoring of the
candidates, per image, one image at a time. Usage::

    python scripts/lexicon_timing.py [--words 50000] [--images 200] [--dict FILE]
"""
import argparse
import os
import random
import string
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from crnn_multigpu.datasets.charset import Charset  # noqa: E402
from crnn_multigpu.ocr.lexicon import LexiconDecoder, fit_to_charset, read_lexicon  # noqa: E402

CHARSET = Charset.default()
FRAMES = 25  # a 100-pixel-wide image


def near_miss(word, rng):
    """``word`` with 0-2 random substitutions, insertions or deletions."""
    letters = list(word)
    for _ in range(rng.randint(0, 2)):
        position = rng.randrange(len(letters) + 1)
        edit = rng.choice("sid") if letters else "i"
        char = rng.choice(string.ascii_lowercase)
        if edit == "i":
            letters.insert(position, char)
        elif position < len(letters):
            if edit == "s":
                letters[position] = char
            else:
                del letters[position]
    return "".join(letters) or word


def frames_reading(text, rng):
    """[FRAMES, 37] log-probs whose greedy decoding is ``text`` (blanks between characters)."""
    path = []
    for char in text:
        path += [CHARSET.encode(char)[0], CHARSET.blank]
    path = (path + [CHARSET.blank] * FRAMES)[:FRAMES]
    probs = rng.dirichlet(np.ones(CHARSET.num_classes), size=FRAMES) * 0.3
    probs[np.arange(FRAMES), path] += 0.7
    return np.log(probs)


def timed(decoder, queries):
    start = time.perf_counter()
    for text, frames in queries:
        decoder.decode(text, frames)
    return (time.perf_counter() - start) / len(queries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dict", default="/usr/share/dict/american-english")
    parser.add_argument("--words", type=int, default=50000)
    parser.add_argument("--images", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(0)
    fitted, dropped = fit_to_charset(read_lexicon(args.dict), CHARSET)
    words = rng.sample(fitted, min(args.words, len(fitted)))
    print("%s: %d words fit the charset (%d dropped); using %d"
          % (args.dict, len(fitted), len(dropped), len(words)))

    start = time.perf_counter()
    decoder = LexiconDecoder(words, CHARSET, delta=3, search="nearest")
    print("BK-tree build: %.2f s" % (time.perf_counter() - start))

    noise = np.random.RandomState(0)
    queries = []
    for word in rng.sample(words, args.images):
        text = near_miss(word, rng)[:FRAMES // 2]
        queries.append((text, frames_reading(text, noise)))
    tree = decoder.tree
    for delta in (1, 2, 3):
        decoder.delta = delta
        start = time.perf_counter()
        counts = [len(decoder.candidates(text)) for text, _ in queries]
        search = (time.perf_counter() - start) / len(queries)
        visited = [0]
        measure = tree.distance

        def counting(a, b):
            visited[0] += 1
            return measure(a, b)
        tree.distance = counting
        for text, _ in queries:
            decoder.candidates(text)
        tree.distance = measure
        print("delta %d: %.1f ms per image (BK-tree search %.1f ms, visiting %.0f%% of the words); "
              "%.0f candidates on average (median %d, max %d)"
              % (delta, 1000 * timed(decoder, queries), 1000 * search,
                 100.0 * visited[0] / len(queries) / len(words), np.mean(counts),
                 np.median(counts), max(counts)))
    exact = LexiconDecoder(words, CHARSET, search="all")
    print("all %d words (exact): %.0f ms per image"
          % (len(words), 1000 * timed(exact, queries[:max(1, args.images // 10)])))


if __name__ == "__main__":
    main()
