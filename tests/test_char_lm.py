"""The character n-gram model and the CTC beam search fused with it."""
import argparse
import itertools

import numpy as np
import pytest

from crnn_multigpu.ocr.reader import language_model_decoder
from crnn_multigpu.ocr.char_lm import (CharLmDecoder, CharNgramModel, prose_language_model,
                                       weighted_words)
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.datasets.language import Language, get_language
from crnn_multigpu.datasets.words import WordList
from crnn_multigpu.ocr.lexicon import ctc_log_likelihood

CHARSET = Charset("abcdeghilnopqrstu")


def frames_for(readings, charset=CHARSET, sharp=8.0):
    """[T, C] log-probabilities: one frame per entry of ``readings``, each a dict
    {char or "-" (blank): weight}; the weights become a softmax of ``sharp * weight``."""
    rows = np.full((len(readings), charset.num_classes), -sharp)
    for row, reading in zip(rows, readings):
        for char, weight in reading.items():
            row[charset.blank if char == "-" else charset.chars.index(char)] = sharp * weight
    return rows - np.logaddexp.reduce(rows, axis=1, keepdims=True)


def spelled(text):
    """Frames that spell ``text`` clearly: each character, then a blank."""
    return [frame for char in text for frame in ({char: 1.0}, {"-": 1.0})]


def test_every_context_is_a_distribution_over_the_charset_and_the_end():
    model = CharNgramModel(CHARSET, ["the quest", "question", "queue", "a"], order=4)
    for context in ("", model.context_of(""), model.context_of("q"), model.context_of("que"),
                    model.context_of("zzz"), model.context_of("tion")):
        probs = np.exp(model.log_probs(context))
        assert probs.shape == (CHARSET.num_classes,)
        assert probs.min() > 0  # smoothing: nothing is impossible
        assert probs.sum() == pytest.approx(1.0, abs=1e-9)
    # Counted: after "q" comes "u"; "que" goes on as "s", "t" or "u", never "q".
    after_q = model.log_probs(model.context_of("q"))
    assert np.argmax(after_q) == CHARSET.chars.index("u")
    after_que = model.log_probs(model.context_of("que"))
    assert after_que[CHARSET.chars.index("s")] > after_que[CHARSET.chars.index("q")] + 1.0
    # The text's end is a class of its own: "a" ends right after its start.
    after_a = model.log_probs(model.context_of("a"))
    assert np.argmax(after_a) == CHARSET.blank
    assert model.text_log_prob("queue") > model.text_log_prob("qeueu")


def test_a_word_start_is_one_context_not_a_chain_of_start_marks():
    # "s" then "n" at a word's start never seen, but "sn" inside words was: the start
    # context backs off once to "s", not once per missing start mark.
    model = CharNgramModel(CHARSET, ["si", "sa", "so"] * 20 + ["isnt"] * 5, order=5)
    start_s = model.log_probs(model.context_of("s"))[CHARSET.chars.index("n")]
    assert start_s > np.log(1e-3), start_s


def test_without_the_model_the_search_reads_what_greedy_reads():
    model = CharNgramModel(CHARSET, ["unrelated text"], order=3)
    decoder = CharLmDecoder(model, weight=0.0, bonus=0.0, beam=4)
    for text in ("queen", "aa", "ballot", "", "tt"):
        frames = frames_for(spelled(text))
        got, log_prob = decoder.decode(None, frames)
        assert got == text
        assert log_prob == pytest.approx(ctc_log_likelihood(frames, CHARSET.encode(text)))


def test_a_doubled_letter_needs_a_blank_between():
    decoder = CharLmDecoder(CharNgramModel(CHARSET, ["on"], order=2), weight=0.0, bonus=0.0)
    # "o" over three frames without a blank is one "o"; with a blank it is two.
    assert decoder.decode(None, frames_for([{"o": 1}, {"o": 1}, {"o": 1}]))[0] == "o"
    assert decoder.decode(None, frames_for([{"o": 1}, {"-": 1}, {"o": 1}]))[0] == "oo"


def test_the_language_model_settles_what_the_image_leaves_in_doubt():
    model = CharNgramModel(CHARSET, ["the queen sings"] * 30, order=4)
    # "q" and "g" are equally likely in the image's first frame: "queen" or "gueen".
    doubtful = frames_for([{"q": 0.5, "g": 0.5}, {"-": 1}] + spelled("ueen"))
    acoustic = CharLmDecoder(model, weight=0.0, bonus=0.0)
    fused = CharLmDecoder(model, weight=1.0, bonus=1.0)
    assert acoustic.decode(None, doubtful)[0] in ("queen", "gueen")
    assert fused.decode(None, doubtful)[0] == "queen"
    # The other way round the language model changes nothing the image shows clearly.
    assert fused.decode(None, frames_for(spelled("gueen")))[0] == "gueen"


def test_bad_settings_are_refused():
    model = CharNgramModel(CHARSET, ["abc"], order=2)
    for kwargs, message in (({"weight": -1.0}, "weight must be a number >= 0"),
                            ({"weight": float("nan")}, "weight must be a number >= 0"),
                            ({"bonus": float("inf")}, "bonus must be a finite number"),
                            ({"beam": 0}, "beam must be a whole number >= 1")):
        with pytest.raises(ValueError, match=message):
            CharLmDecoder(model, **kwargs)
    with pytest.raises(ValueError, match="order must be a whole number >= 1"):
        CharNgramModel(CHARSET, ["abc"], order=0)
    with pytest.raises(ValueError, match="no text in the model's charset"):
        CharNgramModel(CHARSET, ["XYZ", "123"])
    with pytest.raises(ValueError, match=r"log_probs must be \[frames, %d\]" % CHARSET.num_classes):
        CharLmDecoder(model).decode(None, np.zeros((3, 4)))


def test_the_prose_model_of_a_word_charset_knows_words_and_their_ends():
    model = prose_language_model(Charset.default())
    # Lower-cased words of the prose: "the" is far more probable than a shuffle of it, and
    # a word may end after "the" but hardly after "th".
    assert model.text_log_prob("the") > max(model.text_log_prob("".join(p)) for p in
                                            itertools.permutations("the") if p != tuple("the"))
    end = Charset.default().blank
    assert model.log_probs(model.context_of("the"))[end] > \
        model.log_probs(model.context_of("th"))[end] + 2.0


def test_saved_counts_load_as_the_same_model(tmp_path):
    model = CharNgramModel(CHARSET, ["the quest", "question", "queue", "a"], order=3)
    path = str(tmp_path / "counts")  # written where asked, with no ".npz" added
    model.save(path)
    loaded = CharNgramModel.load(path, CHARSET)
    assert loaded.order == 3 and loaded.context_count == model.context_count
    for prefix in ("", "q", "que", "zz", "tion", "a"):
        context = model.context_of(prefix)
        assert np.array_equal(loaded.log_probs(context), model.log_probs(context)), prefix


def test_counts_load_onto_a_charset_that_lacks_some_of_their_characters(tmp_path):
    path = str(tmp_path / "counts.npz")
    CharNgramModel(CHARSET, ["queue", "quest", "quiet"] * 5 + ["tsi"], order=3).save(path)
    smaller = Charset("eqstu")  # no "i": "qui" cannot be read, "que" and "qu" still can
    loaded = CharNgramModel.load(path, smaller)
    # "ts" was only ever followed by "i": nothing of it is left but the shorter context's share.
    after_ts = np.exp(loaded.log_probs(loaded.context_of("ts")))
    assert np.isfinite(after_ts).all() and after_ts.sum() == pytest.approx(1.0, abs=1e-9)
    probs = np.exp(loaded.log_probs(loaded.context_of("qu")))
    assert probs.shape == (smaller.num_classes,)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9) and probs.min() > 0
    assert smaller.chars[np.argmax(probs)] == "e"  # "i" (5 of 15) is dropped, "e" (10) leads
    assert np.argmax(loaded.log_probs(loaded.context_of("q"))) == smaller.chars.index("u")


def test_a_word_list_joins_the_counts_by_the_logarithm_of_its_frequencies(tmp_path):
    words = tmp_path / "dict.txt"
    words.write_text(u"queen 1000 n\nqu 0 x\nq 99999 x\nquiz 9 n\n", encoding="utf-8")
    word_list = WordList(str(words), lambda word: None if CHARSET.unknown_chars(word) else word,
                         common_path=None, min_len=2, separator=" ")
    got = list(weighted_words(word_list))
    # 1,000 -> 3 times; 0 -> once; one character is no word; "quiz" has a "z" the charset lacks.
    assert got == ["qu"] + ["queen"] * 3


def test_a_language_says_whether_its_text_is_read_with_its_model():
    chinese = get_language("zh")
    reader = argparse.Namespace(language=chinese, charset=chinese.charset)
    decoder = language_model_decoder(reader)  # the shipped counts of zh.json
    assert (decoder.model.order, decoder.weight, decoder.bonus) == (
        chinese.char_lm["order"], chinese.char_lm["weight"], chinese.char_lm["bonus"])
    # Counted for the model's charset: the common word outweighs its look-alike.
    assert decoder.model.text_log_prob(u"\u76ee\u5f55") > \
        decoder.model.text_log_prob(u"\u65e5\u5f55") + 2.0  # "目录" against "日录"
    for off in (dict(enabled=False, beam_width=0), dict(enabled=None, beam_width=10)):
        # --no-char-lm, or --beam-width: TensorFlow's beam search, which the character model's
        # search would replace.
        assert language_model_decoder(reader, **off) is None, off
    assert language_model_decoder(reader, enabled=True, beam_width=10) is not None
    english = get_language("en")
    assert language_model_decoder(argparse.Namespace(
        language=english, charset=english.charset)) is None  # English: only with --char-lm


def test_a_description_that_asks_for_a_word_list_it_lacks_is_refused():
    description = dict(get_language("en").description,
                       words={"paths": ["/nonexistent/crnn-words"]}, char_lm={"with_word_list": True})
    with pytest.raises(ValueError, match="none of its \"words\" paths is installed"):
        prose_language_model(Charset.default(), language=Language(description))
