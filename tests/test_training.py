"""The training tools end to end on a tiny CRNN: train, resume, evaluate, predict, export."""
import json
import os
import threading

import numpy as np
import pytest
from PIL import Image

from assertions import levenshtein
from waiting import HANG_GUARD
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.runtime.checkpoints import latest_checkpoint
from crnn_multigpu.cli import evaluate, export, predict, train
from crnn_multigpu.ocr.shipped import shipped_model
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import (SyntheticTextGenerator, find_fonts, load_image, read_labels,
                                    write_dataset, write_lmdb)
from crnn_multigpu.ocr import picture
from crnn_multigpu.ocr.inference import Recognizer

from faces import DEJAVU
TINY = ["--model", "tiny", "--batch-size", "8", "--log-every", "5", "--validate-every", "0"]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """A 48-image folder dataset and the same images as LMDB, in DejaVu faces (every test
    machine has them), so the images do not change with the other families installed."""
    root = tmp_path_factory.mktemp("data")
    generator = SyntheticTextGenerator(Charset.default(), find_fonts([DEJAVU])[:3], max_len=5,
                                       seed=5)
    write_dataset(str(root / "folder"), generator, 48, progress=False)
    write_lmdb(str(root / "lmdb"), generator.iterate(0, 48))
    return str(root / "folder"), str(root / "lmdb")


def run_train(args):
    graph = tf.Graph()
    with graph.as_default():
        return train.main(args)


def variables_of(run_dir):
    reader = tf.train.load_checkpoint(latest_checkpoint(run_dir))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def read_alone(run_dir, paths, beam_width=0, labelled=False):
    """What the run's newest checkpoint reads in each image, run on that image alone, as
    crnn-predict reads a crop (its text found: ``Recognizer.crop_array``) or, ``labelled``, as
    crnn-evaluate reads a dataset's image (as training crops are made: ``load_image``)."""
    recognizer = Recognizer(run_dir, beam_width=beam_width)
    to_array = (lambda path: load_image(path, recognizer.height)) if labelled else \
        recognizer.crop_array
    try:
        return [recognizer.read_crops([to_array(path)])[0][0] for path in paths]
    finally:
        recognizer.close()


def read_folder(run_dir, folder):
    """(readings, labels) of the folder dataset's images, each read alone, in labels.txt order."""
    labels = read_labels(os.path.join(folder, "labels.txt"))
    return read_alone(run_dir, [os.path.join(folder, path) for path, _ in labels],
                      labelled=True), \
        [text for _, text in labels]


def figures_of(readings, truths):
    """Word accuracy, CER and mean normalised edit distance, computed here."""
    distances = [levenshtein(read, truth) for read, truth in zip(readings, truths)]
    return dict(n=len(truths), unreadable=0,
                word_accuracy=np.mean([read == truth for read, truth in zip(readings, truths)]),
                cer=sum(distances) / float(sum(len(truth) for truth in truths)),
                mean_ned=np.mean([d / float(max(len(r), len(t), 1))
                                  for d, r, t in zip(distances, readings, truths)]))


def assert_figures(got, expected):
    for key in ("n", "unreadable", "word_accuracy", "cer", "mean_ned"):
        assert got[key] == pytest.approx(expected[key], abs=1e-6), (key, got, expected)


def assert_picture(path, folder, readings, truths):
    """crnn-evaluate's --picture: a PNG with a row for each of the first 24 samples, the image at
    twice its width, then the reading in green when right, in red (with the truth) when wrong."""
    paths = [os.path.join(folder, path)
             for path, _ in read_labels(os.path.join(folder, "labels.txt"))[:24]]
    text_left = 2 * max(load_image(path).shape[1] for path in paths) + 16
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == (text_left + picture.TEXT_WIDTH + 8, picture.ROW_HEIGHT * 24)
        rows = [image.convert("RGB").crop((text_left, row * picture.ROW_HEIGHT, image.size[0],
                                           (row + 1) * picture.ROW_HEIGHT)) for row in range(24)]
    for index, (row, read, truth) in enumerate(zip(rows, readings, truths)):
        colours = set(colour for _, colour in row.getcolors(1 << 16))
        assert ((200, 0, 0) in colours, (0, 128, 0) in colours) == (read != truth, read == truth), \
            (index, read, truth)


def test_train_writes_checkpoints_and_loss_falls(datasets, tmp_path, capsys):
    folder, _ = datasets
    out = str(tmp_path / "run")
    assert run_train(["--train", folder, "--val", folder, "--out", out, "--steps", "40",
                      "--towers", "2", "--lr", "3e-3"] + TINY) == 0
    captured = capsys.readouterr()
    figures = json.loads(captured.out.strip().splitlines()[-1])
    # The final validation scores what the trained weights read in each image against its
    # label (the tiny model reads nothing yet: the image-dependent check is the LMDB test's).
    assert figures["step"] == 40
    assert_figures(figures, figures_of(*read_folder(out, folder)))
    losses = [float(line.split("loss ")[1].split()[0]) for line in captured.err.splitlines()
              if "] step " in line]
    assert len(losses) == 8 and losses[-1] < 0.7 * losses[0], losses
    assert variables_of(out)["global_step"] == 40
    assert json.load(open(os.path.join(out, "config.json")))["model"]["lstm_units"] == 32
    # Validation in training (2 towers of the training graph) and crnn-evaluate (one tower of
    # a restored graph) are one loop and read the same.
    assert evaluate.main(["--checkpoint", out, "--data", folder]) == 0
    assert_figures(json.loads(capsys.readouterr().out.strip().splitlines()[-1]), figures)


@pytest.mark.slow
@pytest.mark.parametrize("augment", ["0", "0.5"])
def test_resume_continues_exactly(datasets, tmp_path, augment):
    folder, _ = datasets
    straight, resumed = str(tmp_path / "straight"), str(tmp_path / "resumed")
    common = ["--train", folder, "--towers", "1", "--checkpoint-every", "5",
              "--augment", augment] + TINY
    assert run_train(common + ["--out", straight, "--steps", "12"]) == 0
    assert run_train(common + ["--out", resumed, "--steps", "12", "--stop-at", "6"]) == 0
    assert run_train(common + ["--out", resumed, "--steps", "12"]) == 2, "must refuse to overwrite"
    assert run_train(common + ["--out", resumed, "--steps", "12", "--resume"]) == 0
    a, b = variables_of(straight), variables_of(resumed)
    assert set(a) == set(b) and b["global_step"] == 12
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-4, atol=1e-6, err_msg=name)
    assert json.load(open(os.path.join(resumed, "config.json")))["augment"] == float(augment)


@pytest.mark.slow
def test_lmdb_training_evaluate_predict_export(datasets, tmp_path, capsys):
    folder, lmdb_dir = datasets
    out = str(tmp_path / "run")
    assert run_train(["--train", lmdb_dir, "--out", out, "--steps", "6", "--towers", "2"] + TINY) == 0
    capsys.readouterr()

    # Each evaluation's figures are those of reading the folder's images (each alone) against
    # their labels: the LMDB holds the same images and labels in the same order. The 6 tiny
    # steps read nothing right yet; the shipped word model reads nearly all right.
    for model, picture_path in ((["--checkpoint", out], tmp_path / "run.png"),
                                (["--model", "words"], tmp_path / "words.png")):
        assert evaluate.main(model + ["--data", lmdb_dir, "--picture", str(picture_path)]) == 0
        figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        readings, truths = read_folder(out if "--checkpoint" in model else shipped_model("words"),
                                       folder)
        assert_figures(figures, figures_of(readings, truths))
        assert_picture(str(picture_path), folder, readings, truths)
    assert figures["word_accuracy"] > 0.9, list(zip(readings, truths))

    images = [os.path.join(folder, "images", name)
              for name in sorted(os.listdir(os.path.join(folder, "images")))[:3]]
    assert predict.main(["--checkpoint", out, "--beam-width", "3"] + images) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    # Each image, in the order given, with the beam search's reading of it alone.
    assert [line.split("\t") for line in lines] == \
        [[path, text] for path, text in zip(images, read_alone(out, images, beam_width=3))]

    saved = str(tmp_path / "export")
    assert export.main(["--checkpoint", out, "--out", saved]) == 0
    recognizer = Recognizer(out)
    # The model's one plain reading of each crop as the tools cut it (the tools may keep a
    # reading of it widened, inverted or framed as capitals instead: the reader's choices).
    arrays = [recognizer.crop_array(path) for path in images]
    texts = recognizer.recognize_arrays(arrays)[0]
    from crnn_multigpu.datasets import make_batch
    batch = make_batch(arrays, None, recognizer.charset, recognizer.image_width)
    graph = tf.Graph()
    with graph.as_default(), tf.Session(graph=graph) as session:
        meta = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING], saved)
        signature = meta.signature_def["serving_default"]
        ids = session.run(signature.outputs["predict"].name,
                          {signature.inputs["images"].name: batch.images,
                           signature.inputs["widths"].name: batch.widths})
    exported = [recognizer.charset.decode([i for i in row if i >= 0]) for row in ids]
    assert exported == texts


@pytest.mark.slow
def test_strategies_share_checkpoints_and_evaluation_runs_on_towers(datasets, tmp_path, capsys):
    folder, _ = datasets
    out = str(tmp_path / "run")
    common = ["--train", folder, "--out", out, "--checkpoint-every", "0"] + TINY
    assert run_train(common + ["--steps", "6", "--towers", "2", "--strategy", "replicated",
                               "--num-packs", "2"]) == 0
    names = set(variables_of(out))
    assert names and not [n for n in names if "replica" in n or "tower" in n], sorted(names)
    # The replicated run's checkpoint continues under another strategy and tower count.
    assert run_train(common + ["--steps", "8", "--towers", "3", "--strategy", "ps-towers",
                               "--resume"]) == 0
    assert variables_of(out)["global_step"] == 8 and set(variables_of(out)) == names
    capsys.readouterr()

    images = [os.path.join(folder, "images", name)
              for name in sorted(os.listdir(os.path.join(folder, "images")))[:5]]

    def predicted(towers):
        assert predict.main(["--checkpoint", out, "--towers", towers, "--with-prob"] + images) == 0
        return capsys.readouterr().out

    # The tiny run reads little yet, but each image's log probability is its own.
    assert predicted("3") == predicted("1")

    def evaluated(towers):  # the shipped text model: outputs worth comparing
        assert evaluate.main(["--data", folder, "--batch-size", "7", "--towers", towers,
                              "--fold-case"]) == 0
        return json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    one = evaluated("1")
    assert one["word_accuracy"] > 0.2, one
    assert evaluated("2") == one


@pytest.mark.parametrize("args, message", [
    (["--train", "/nonexistent"], "does not exist"),
    (["--strategy", "replicated", "--all-reduce", "nccl", "--towers", "2"],
     "NCCL has no CPU kernel. Use Replicated(all_reduce='ring')"),
    (["--strategy", "ps", "--all-reduce", "ring"], "--all-reduce ring chooses how replicas"),
    (["--strategy", "mirrored"], "--strategy: invalid choice"),
    (["--num-packs", "-1"], "--num-packs must be at least 0"),
    (["--towers", "0"], "at least 1"),
    (["--width", "102"], "multiple of 4"),
    (["--augment", "1.5"], "--augment must be a strength in [0, 1]"),
    (["--batch-size", "1", "--towers", "2"], "smaller than the 2 towers"),
])
def test_train_bad_arguments(datasets, tmp_path, capsys, args, message):
    folder, _ = datasets
    base = {"--train": folder, "--out": str(tmp_path / "run"), "--steps": "2"}
    for key, value in zip(args[::2], args[1::2]):
        base[key] = value
    argv = [item for pair in base.items() for item in pair] + ["--model", "tiny"]
    assert run_train(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


class _StuckSession(object):
    """A session whose close blocks until released, like TF 2.21's deadlocked close."""

    def __init__(self):
        self.release, self.closed = threading.Event(), threading.Event()

    def close(self):
        self.release.wait()
        self.closed.set()


def test_close_session_gives_up_on_a_close_that_never_returns():
    from crnn_multigpu.wrapper.devices import close_session
    stuck = _StuckSession()
    assert close_session(stuck, timeout=0.2) is False  # the caller goes on
    assert not stuck.closed.is_set()
    stuck.release.set()  # the close finishes in its own thread once TF lets it
    assert stuck.closed.wait(HANG_GUARD)
    quick = _StuckSession()
    quick.release.set()
    assert close_session(quick) is True and quick.closed.is_set()


@pytest.mark.slow
def test_init_from_takes_weights_and_starts_the_optimizer_afresh(datasets, tmp_path, capsys):
    folder, _ = datasets
    source, tuned = str(tmp_path / "source"), str(tmp_path / "tuned")
    common = ["--train", folder, "--towers", "1"] + TINY
    assert run_train(common + ["--out", source, "--steps", "6", "--lr", "3e-3"]) == 0
    # A learning rate too small to move the weights: what the run saves is what it started from.
    assert run_train(common + ["--out", tuned, "--steps", "1", "--lr", "1e-12",
                               "--init-from", source]) == 0
    assert "weights from %s" % latest_checkpoint(source) in capsys.readouterr().err
    a, b = variables_of(source), variables_of(tuned)
    assert a["global_step"] == 6 and b["global_step"] == 1
    # (Batch-norm moving statistics move with the one step's batch whatever the rate.)
    weights = [name for name in a if name.startswith("crnn/") and "Adam" not in name
               and "moving" not in name]
    assert len(weights) > 10
    for name in weights:
        np.testing.assert_allclose(b[name], a[name], atol=1e-6, err_msg=name)
    # Adam's beta1 power is 0.9 ** (steps + 1): the tuned run's optimizer took one step.
    assert a["beta1_power"] == pytest.approx(0.9 ** 7) and b["beta1_power"] == pytest.approx(0.81)
    assert json.load(open(os.path.join(tuned, "config.json")))["init_from"] == source
    # Once the run has checkpoints of its own, --resume continues them, not --init-from's.
    assert run_train(common + ["--out", tuned, "--steps", "2", "--lr", "1e-12", "--resume",
                               "--init-from", source]) == 0
    err = capsys.readouterr().err
    assert "resumed from" in err and "weights from" not in err


@pytest.mark.parametrize("extra,message", [
    (["--model", "small"], "holds crnn/conv1/kernel with shape [3, 3, 1, 8], this model's is"),
    (["--charset", "CHARSET"], "was trained on other characters (36)"),
    (["--init-from", "MISSING"], "--init-from MISSING does not exist"),
])
def test_init_from_another_model_is_one_line(datasets, tmp_path, capsys, extra, message):
    folder, _ = datasets
    source = str(tmp_path / "source")
    assert run_train(["--train", folder, "--out", source, "--steps", "2"] + TINY) == 0
    charset = tmp_path / "letters.txt"
    charset.write_text(u"\n".join("abcdefghijklmnopqrstuvwxyz0123456789!") + u"\n")
    missing = str(tmp_path / "no-such-run")
    extra = [str(charset) if item == "CHARSET" else missing if item == "MISSING" else item
             for item in extra]
    message = message.replace("MISSING", missing)
    capsys.readouterr()
    argv = ["--train", folder, "--out", str(tmp_path / "tuned"), "--steps", "2", "--init-from",
            source] + TINY + extra
    assert run_train(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err


def test_evaluate_can_score_folded_labels(datasets, tmp_path, capsys):
    folder, _ = datasets  # read by the shipped word model (lower case and digits)
    capsys.readouterr()
    # The case-sensitive text model on case-blind labels: scored as asked, with a note.
    assert evaluate.main(["--data", folder]) == 0
    assert "--fold-case --alnum scores case-blind labels" in capsys.readouterr().err
    shouting = tmp_path / "shouting"
    os.makedirs(str(shouting))
    os.symlink(os.path.join(folder, "images"), str(shouting / "images"))
    with open(os.path.join(folder, "labels.txt")) as labels:
        rows = [line.rstrip("\n").split("\t") for line in labels if line.strip()]
    # The same images with labels in capitals and punctuated: what a case-blind model cannot write.
    (shouting / "labels.txt").write_text(u"".join(u"%s\t%s!\n" % (path, text.upper())
                                                  for path, text in rows))
    capsys.readouterr()
    scores = {}
    for name, data, flags in (("plain", folder, []), ("shouting", str(shouting), []),
                              ("folded", str(shouting), ["--fold-case", "--alnum"])):
        assert evaluate.main(["--data", data, "--model", "words"] + flags) == 0
        scores[name] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert scores["plain"]["word_accuracy"] > 0.5
    assert scores["shouting"]["word_accuracy"] == 0.0
    for key in ("word_accuracy", "cer", "mean_ned", "n"):
        assert scores["folded"][key] == pytest.approx(scores["plain"][key]), key
    assert scores["folded"]["scoring"] == "fold-case+alnum" and scores["plain"]["scoring"] == "exact"


def test_evaluate_reads_a_synthetic_recipe_with_the_text_model(tmp_path, capsys):
    """A recipe has no label list to look at for the case note: it is evaluated all the same."""
    from crnn_multigpu.datasets.recipe import write_recipe
    recipe = str(tmp_path / "recipe")
    write_recipe(recipe, count=6, seed=3, fonts="all", font_dirs=[DEJAVU])
    assert evaluate.main(["--data", recipe]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["n"] == 6
