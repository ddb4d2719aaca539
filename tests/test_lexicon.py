"""Lexicon-constrained decoding: BK-tree, CTC forward score, decoder, and the CLI flags."""
import itertools
import json
import logging
import os
import random

import numpy as np
import pytest

from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.cli import evaluate, predict, train
from crnn_multigpu.compat import tf
from crnn_multigpu.ocr.crnn import CRNN
from crnn_multigpu.datasets import LABELS_FILE, read_labels
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.lexicon import (BKTree, LexiconDecoder, ctc_log_likelihood,
                                   ctc_log_likelihoods, fit_to_charset, read_lexicon)
from crnn_multigpu.ocr.metrics import edit_distance

CHARSET = Charset.default()


# ------------------------------------------------------------------ BK-tree
def test_bk_tree_finds_exactly_the_words_within_delta():
    rng = random.Random(3)
    words = ["".join(rng.choice("abcde") for _ in range(rng.randint(1, 8))) for _ in range(600)]
    tree = BKTree(words)
    assert len(tree) == len(set(words))
    for _ in range(60):
        query = "".join(rng.choice("abcdef") for _ in range(rng.randint(0, 9)))
        for delta in range(4):
            expected = sorted((edit_distance(query, w), w) for w in set(words)
                              if edit_distance(query, w) <= delta)
            assert tree.search(query, delta) == expected, (query, delta)


def test_bk_tree_empty_and_exact():
    assert BKTree().search("abc", 3) == []
    assert BKTree(["abc", "abd", "xyz"]).search("abc", 0) == [(0, "abc")]


# ------------------------------------------------------------ CTC forward
def _collapse(path, blank):
    out, previous = [], None
    for c in path:
        if c != previous and c != blank:
            out.append(c)
        previous = c
    return tuple(out)


def test_ctc_forward_equals_path_enumeration():
    rng = np.random.RandomState(0)
    frames, classes = 5, 4
    log_probs = np.log(rng.dirichlet(np.ones(classes), size=frames))
    totals = {}
    for path in itertools.product(range(classes), repeat=frames):
        label = _collapse(path, classes - 1)
        probability = np.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
        totals[label] = totals.get(label, 0.0) + probability
    labels = sorted(totals)  # every label with a path, including (), repeats like (0, 0), length 5
    scores = ctc_log_likelihoods(log_probs, labels)
    np.testing.assert_allclose(np.exp(scores), [totals[label] for label in labels], rtol=1e-10)
    assert abs(sum(totals.values()) - 1.0) < 1e-9
    # Labels that fit no alignment of 5 frames: too long, or repeats needing blanks.
    assert ctc_log_likelihoods(log_probs, [(0,) * 6, (1, 1, 1, 2)]).tolist() == [-np.inf, -np.inf]
    assert ctc_log_likelihood(log_probs, (2, 0)) == pytest.approx(np.log(totals[(2, 0)]))


def test_ctc_forward_matches_the_models_own_loss(make_session):
    """-per_example_loss of a (random) CRNN equals the numpy score of its per-frame log-probs."""
    model = CRNN(num_classes=6, channels=(4, 4, 4, 4, 4, 4, 4), lstm_units=4)
    rng = np.random.RandomState(1)
    labels = np.array([[0, 1, 2, 3], [4, 4, 0, 0], [2, 0, 0, 0]], np.int32)
    lengths = np.array([4, 2, 1], np.int32)
    feed = {model.images: rng.rand(3, 32, 48, 1).astype(np.float32),
            model.widths: np.array([48, 40, 20], np.int32),
            model.labels: labels, model.label_lengths: lengths}
    session = make_session()
    session.run(tf.global_variables_initializer())
    loss, frames, steps = session.run(
        [model.per_example_loss, model.log_probs_per_frame, model.seq_lengths], feed)
    for i in range(3):
        ours = ctc_log_likelihood(frames[:steps[i], i], labels[i, :lengths[i]])
        assert ours == pytest.approx(-loss[i], rel=1e-4, abs=1e-4)


# ------------------------------------------------------------------ decoder
def _frames(spec):
    """Per-frame log-probs: each frame a dict char -> probability ('-' the blank), rest spread."""
    rows = []
    for frame in spec:
        row = np.full(CHARSET.num_classes, 0.0)
        for char, p in frame.items():
            row[CHARSET.blank if char == "-" else CHARSET.encode(char)[0]] = p
        rest = CHARSET.num_classes - len(frame)
        row[row == 0] = (1.0 - sum(frame.values())) / rest
        rows.append(np.log(row))
    return np.array(rows)


# greedy reads h e l - - o = "helo"; "hello" has 0.4 at frame 5, "cello" also 0.4 at frame 1.
NEAR_MISS = _frames([{"h": 0.55, "c": 0.4}, {"e": 0.9}, {"l": 0.9}, {"-": 0.9},
                     {"-": 0.55, "l": 0.4}, {"o": 0.9}])


def test_decoder_corrects_a_near_miss():
    decoder = LexiconDecoder(["hello", "help", "held", "world", "yellow"], CHARSET,
                             search="nearest")
    text, log_prob = decoder.decode("helo", NEAR_MISS)
    assert text == "hello"
    assert log_prob == pytest.approx(ctc_log_likelihood(NEAR_MISS, CHARSET.encode("hello")))
    assert log_prob > ctc_log_likelihood(NEAR_MISS, CHARSET.encode("help"))


def test_decoder_keeps_the_best_candidate_and_probability_beats_distance():
    both = LexiconDecoder(["hello", "helo", "help"], CHARSET, search="nearest")
    assert both.decode("helo", NEAR_MISS)[0] == "helo"  # the greedy output is itself the best
    # "halo" is 1 edit from "helo", "cello" 2, but "cello" is far more probable.
    assert LexiconDecoder(["halo", "cello"], CHARSET, search="nearest").decode(
        "helo", NEAR_MISS)[0] == "cello"


def test_decoder_without_a_near_word_keeps_the_output_unless_exact():
    nearest = LexiconDecoder(["world"], CHARSET, delta=1, search="nearest")
    text, log_prob = nearest.decode("helo", NEAR_MISS)
    assert (text, log_prob) == ("helo", pytest.approx(ctc_log_likelihood(
        NEAR_MISS, CHARSET.encode("helo"))))
    assert LexiconDecoder(["world"], CHARSET, delta=1).decode("helo", NEAR_MISS)[0] == "world"
    assert LexiconDecoder(["world"], CHARSET, search="all").search == "all"
    # Words too long for the frames score -inf: none fits -> the output is kept.
    assert LexiconDecoder(["abcdefg"], CHARSET, search="all").decode("helo", NEAR_MISS)[0] == "helo"


def test_exact_mode_equals_nearest_with_a_large_delta():
    rng = random.Random(0)
    words = ["".join(rng.choice("helocwr") for _ in range(rng.randint(2, 5))) for _ in range(300)]
    exact = LexiconDecoder(words, CHARSET, search="all")
    wide = LexiconDecoder(words, CHARSET, delta=10, search="nearest")
    best = max(exact.words, key=lambda w: ctc_log_likelihood(NEAR_MISS, CHARSET.encode(w)))
    assert exact.decode("helo", NEAR_MISS)[0] == wide.decode("helo", NEAR_MISS)[0] == best


def test_lexicon_words_are_fitted_to_the_charset(caplog):
    kept, dropped = fit_to_charset(["Hello", "HELLO", "naïve", "it's", "OK", "42"], CHARSET)
    assert kept == ["hello", "ok", "42"] and dropped == ["naïve", "it's"]
    upper = Charset("ABC")
    assert fit_to_charset(["abc", "Cab", "abd"], upper) == (["ABC", "CAB"], ["abd"])
    mixed = Charset("aAbB")
    assert fit_to_charset(["Ab", "ab", "c"], mixed) == (["Ab", "ab"], ["c"])
    with caplog.at_level(logging.INFO, logger="crnn_multigpu"):
        decoder = LexiconDecoder(["Hello", "naïve", "it's"], CHARSET, name="lexicon words.txt")
    assert decoder.dropped == 2 and len(decoder) == 1
    assert "lexicon words.txt: dropped 2 of 3 words" in caplog.text
    with pytest.raises(ValueError, match="none of its 1 words fits"):
        LexiconDecoder(["é"], CHARSET)
    with pytest.raises(ValueError, match="delta"):
        LexiconDecoder(["a"], CHARSET, delta=-1)


# ------------------------------------------------------------- lexicon files
def test_read_lexicon(tmp_path):
    good = tmp_path / "good.txt"
    good.write_bytes(b"\xef\xbb\xbfhello\r\n\n  world \nna\xc3\xafve\n")
    assert read_lexicon(str(good)) == ["hello", "world", "naïve"]
    with pytest.raises(FileNotFoundError, match="missing.txt does not exist"):
        read_lexicon(str(tmp_path / "missing.txt"))
    (tmp_path / "empty.txt").write_bytes(b"\n  \n")
    with pytest.raises(ValueError, match="empty.txt has no words"):
        read_lexicon(str(tmp_path / "empty.txt"))
    (tmp_path / "latin1.txt").write_bytes(b"hello\nna\xefve\n")
    with pytest.raises(ValueError, match="latin1.txt line 2 is not UTF-8"):
        read_lexicon(str(tmp_path / "latin1.txt"))


@pytest.mark.parametrize("tool", [evaluate, predict])
@pytest.mark.parametrize("content, message", [
    (None, "missing.txt does not exist"),
    (b"", "empty.txt has no words"),
    (b"ok\n\xff\xfe\n", "latin1.txt line 2 is not UTF-8"),
])
def test_bad_lexicon_file_is_one_line_exit_2(tool, content, message, tmp_path, capsys):
    name = {None: "missing.txt", b"": "empty.txt"}.get(content, "latin1.txt")
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    # The lexicon is read before the model: no checkpoint is needed to see the error.
    args = ["--checkpoint", str(tmp_path / "no-run"), "--lexicon", str(path)]
    args += ["--data", str(tmp_path)] if tool is evaluate else ["image.png"]
    assert tool.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


# ------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny CRNN trained briefly on 48 synthetic lines, its data and its label lexicon."""
    from crnn_multigpu.datasets import SyntheticTextGenerator, write_dataset
    from faces import tiny_faces
    root = tmp_path_factory.mktemp("lexicon")
    folder, out = str(root / "folder"), str(root / "run")
    generator = SyntheticTextGenerator(CHARSET, tiny_faces(), max_len=5, seed=5)
    write_dataset(folder, generator, 48, progress=False)
    graph = tf.Graph()
    with graph.as_default():
        assert train.main(["--train", folder, "--out", out, "--steps", "30", "--towers", "1",
                           "--model", "tiny", "--batch-size", "8", "--lr", "3e-3",
                           "--validate-every", "0"]) == 0
    entries = read_labels(os.path.join(folder, LABELS_FILE))
    lexicon = str(root / "words.txt")
    with open(lexicon, "w") as handle:
        handle.write("\n".join(text for _, text in entries) + "\nNaïve\n")
    images = [os.path.join(folder, path) for path, _ in entries]
    return out, folder, lexicon, images, sorted(set(text for _, text in entries))


def test_recognizer_with_lexicon_picks_the_most_probable_word(trained):
    out, _, _, images, words = trained
    recognizer = Recognizer(out)
    try:
        arrays = [recognizer.crop_array(path) for path in images[:6]]
        plain = recognizer.recognize_arrays(arrays)[0]
        from crnn_multigpu.datasets import make_batch
        frames = recognizer.frame_log_probs(make_batch(arrays, None, recognizer.charset,
                                                       recognizer.image_width))
        recognizer.lexicon = LexiconDecoder(words, recognizer.charset, search="all")
        texts, log_probs = recognizer.recognize_arrays(arrays)
        for text, log_prob, rows in zip(texts, log_probs, frames):
            scores = [ctc_log_likelihood(rows, CHARSET.encode(w)) for w in words]
            assert text == words[int(np.argmax(scores))]
            assert log_prob == pytest.approx(max(scores), rel=1e-6)
        # Delta 0: the only candidate is the output itself, so nothing changes.
        recognizer.lexicon = LexiconDecoder(words, recognizer.charset, delta=0, search="nearest")
        assert recognizer.recognize_arrays(arrays)[0] == plain
        with pytest.raises(ValueError, match="charset"):
            recognizer.lexicon = LexiconDecoder(["ab"], Charset("ab"))
    finally:
        recognizer.close()


def test_cli_lexicon_end_to_end(trained, capsys, caplog):
    out, folder, lexicon, images, words = trained
    with caplog.at_level(logging.INFO, logger="crnn_multigpu"):
        assert predict.main(["--checkpoint", out, "--lexicon", lexicon, "--with-prob"]
                            + images[:8]) == 0
    captured = capsys.readouterr()
    rows = [line.split("\t") for line in captured.out.strip().splitlines()]
    assert [row[0] for row in rows] == images[:8]
    assert all(row[1] in words and np.isfinite(float(row[2])) for row in rows), rows
    assert "dropped 1 of %d words" % (len(images) + 1) in caplog.text

    assert evaluate.main(["--checkpoint", out, "--data", folder, "--lexicon", lexicon,
                          "--lexicon-search", "nearest", "--lexicon-delta", "2"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["n"] == 48 and figures["lexicon_words"] == len(words)
    assert figures["lexicon"] == lexicon


def test_recognizer_reads_through_the_language_model(trained):
    from crnn_multigpu.datasets import make_batch
    from crnn_multigpu.ocr.char_lm import CharLmDecoder, CharNgramModel
    out, _, _, images, words = trained
    recognizer = Recognizer(out)
    try:
        arrays = recognizer.recognize_files(images[:6])[2]
        frames = recognizer.frame_log_probs(make_batch(arrays, None, recognizer.charset,
                                                       recognizer.image_width))
        decoder = CharLmDecoder(CharNgramModel(recognizer.charset, words, order=3), weight=2.0)
        recognizer.language_model = decoder
        texts, log_probs = recognizer.recognize_arrays(arrays)
        expected = [decoder.decode(None, rows) for rows in frames]
        assert texts == [text for text, _ in expected]
        assert log_probs == pytest.approx([log_prob for _, log_prob in expected], rel=1e-6)
        with pytest.raises(ValueError, match="the language model was fitted to charset"):
            recognizer.language_model = CharLmDecoder(CharNgramModel(Charset("ab"), ["ab"]))
    finally:
        recognizer.close()


def test_cli_char_lm_reads_and_says_so(trained, capsys):
    out, folder, _, images, _ = trained
    assert evaluate.main(["--checkpoint", out, "--data", folder, "--char-lm",
                          "--lm-weight", "0.3", "--lm-bonus", "1"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["n"] == 48 and figures["char_lm"] == {"order": 4, "weight": 0.3, "bonus": 1.0}
    assert predict.main(["--checkpoint", out, "--char-lm"] + images[:3]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.strip().splitlines()]
    assert [row[0] for row in rows] == images[:3]
