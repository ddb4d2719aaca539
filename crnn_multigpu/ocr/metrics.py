"""Text recognition figures: word accuracy, character error rate, normalized edit distance."""
import unicodedata

try:
    from editdistance import eval as _edit_distance
except ImportError:  # pure-Python fallback keeps evaluation working without the C extension
    def _edit_distance(a, b):
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
            previous = current
        return previous[-1]


def scoring_fold(fold_case=False, alnum=False, nfkc_blank_blind=False):
    """A function that maps a text to the form it is scored in: NFKC-normalised with every
    whitespace character dropped with ``nfkc_blank_blind`` (Chinese: text layers and man pages
    put spaces between words that have none, and full-width forms such as ``，`` equal their
    ASCII twins), lower-cased with ``fold_case``, only letters and digits kept with ``alnum``;
    identity with none.

    It lets a model of one alphabet be scored on labels of a smaller one (a case-sensitive
    printable-ASCII model on a 36-class word set, or another engine's output)."""
    def fold(text):
        if nfkc_blank_blind:
            text = "".join(unicodedata.normalize("NFKC", text).split())
        if fold_case:
            text = text.lower()
        if alnum:
            text = "".join(char for char in text if char.isalnum())
        return text
    return fold


# The scorings a language description may name (datasets/languages/*.json "scoring").
SCORINGS = {"strict": dict(), "nfkc-blank-blind": dict(nfkc_blank_blind=True)}


def edit_distance(prediction, truth):
    """Levenshtein distance between two strings."""
    return int(_edit_distance(prediction, truth))


def text_metrics(predictions, truths):
    """Compare predicted and true strings.

    Returns a dict: ``n``, ``word_accuracy`` (exact matches / n), ``cer`` (total
    edit distance / total truth characters), ``mean_ned`` (mean over examples of
    :func:`normalized_edit_distance`, each in [0, 1]).
    """
    predictions, truths = list(predictions), list(truths)
    if len(predictions) != len(truths):
        raise ValueError("%d predictions for %d ground-truth labels" % (len(predictions), len(truths)))
    n = len(truths)
    if n == 0:
        return dict(n=0, word_accuracy=0.0, cer=0.0, mean_ned=0.0)
    distances = [edit_distance(p, t) for p, t in zip(predictions, truths)]
    characters = sum(len(t) for t in truths)
    return dict(
        n=n,
        word_accuracy=sum(p == t for p, t in zip(predictions, truths)) / float(n),
        cer=sum(distances) / float(max(characters, 1)),
        mean_ned=sum(normalized_edit_distance(p, t, d)
                     for p, t, d in zip(predictions, truths, distances)) / n,
    )


def normalized_edit_distance(prediction, truth, distance=None):
    """The edit distance over the longer of the two texts, in [0, 1]: 0 when they are equal
    (two empty texts too), 1 when no character is right. Over the truth's length alone, a
    reading of an empty label would count its whole length (ten characters: 10, one image
    outweighing nine right ones)."""
    if distance is None:
        distance = edit_distance(prediction, truth)
    return distance / float(max(len(prediction), len(truth), 1))
