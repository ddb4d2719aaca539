"""The models shipped in models/: the tools use them by default and they read unseen text."""
import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
from PIL import Image, ImageDraw

from assertions import one_error_line
from crnn_multigpu.datasets import load_font, load_image
from crnn_multigpu.ocr.inference import Recognizer
from crnn_multigpu.ocr.shipped import SHIPPED, shipped_model
from waiting import HANG_GUARD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Faces every test machine has (Debian's fonts-dejavu-core and -extra), so the test is the same
# on every machine whatever else it has installed.
DEJAVU = "/usr/share/fonts/truetype/dejavu/"
FACES = [DEJAVU + name + ".ttf" for name in ("DejaVuSans", "DejaVuSans-Bold",
                                             "DejaVuSansCondensed-Oblique", "DejaVuSerif-Italic")]
WORDS = ["invoice", "Station", "PARKING", "number", "window", "Monday", "OPEN", "coffee",
         "library", "exit", "2048", "Route66", "welcome", "garden", "TICKET", "summer"]


def draw_word(text, font_path, size=40, ink=30, paper=235):
    """A plain word on paper: nothing the synthetic generator made."""
    font = load_font(font_path, size)
    left, top, right, bottom = font.getbbox(text)
    image = Image.new("L", (right - left + 16, bottom - top + 12), paper)
    ImageDraw.Draw(image).text((8 - left, 6 - top), text, fill=ink, font=font)
    return image


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_model_is_small_and_complete(name):
    root = shipped_model(name)
    files = [os.path.join(top, base) for top, _, names in os.walk(root) for base in names]
    assert os.path.join(root, "config.json") in files
    assert os.path.isfile(os.path.join(root, "README.md"))
    assert all(os.path.getsize(path) <= 20 * 2 ** 20 for path in files)


# Shipped models are found one way, as the package crnn_multigpu.models (models/, mapped by
# pyproject.toml) through importlib.resources: the same folder its import finds, on both stacks.
@pytest.mark.parametrize("name, language", [("text", "en"), ("zh", "zh")])
def test_shipped_models_load_from_the_package_resources(name, language):
    import crnn_multigpu.models
    package = os.path.dirname(os.path.abspath(crnn_multigpu.models.__file__))
    assert shipped_model(name) == os.path.join(package, name)
    recognizer = Recognizer.shipped(name)
    try:
        assert recognizer.checkpoint.startswith(os.path.join(package, name, "checkpoints") + os.sep)
        assert recognizer.language.name == language
    finally:
        recognizer.close()
    with pytest.raises(ValueError, match="no shipped model is called 'en': the shipped models "
                                         "are text, words, zh, latin"):
        shipped_model("en")


def test_without_the_package_installed_predict_says_to_install_it(tmp_path):
    """Run from a checkout that pip never installed (no editable finder: ``python -S``, the
    dependencies on PYTHONPATH), the shipped models are not guessed from the folders around."""
    paths = sorted(set(sysconfig.get_paths()[key] for key in ("purelib", "platlib")))
    done = subprocess.run([sys.executable, "-S", "-m", "crnn_multigpu.cli.predict",
                           str(tmp_path / "any.png")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=HANG_GUARD, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO] + paths)))
    assert one_error_line(done.returncode, done.stderr.decode()) == (
        "error: the shipped models are missing (No module named 'crnn_multigpu.models'): "
        "install the package (pip install crnn_multigpu, or pip install -e . in a checkout)")

# The word model writes digits and lower case only; the text model keeps the case.
@pytest.mark.parametrize("name, spelt", [("words", str.lower), ("text", str)])
def test_shipped_model_reads_plain_words_in_dejavu_faces(name, spelt):
    recognizer = Recognizer.shipped(name)
    images = [draw_word(word, font) for font in FACES for word in WORDS]
    texts, _ = recognizer.read_crops([recognizer.crop_array(image) for image in images])
    truths = [spelt(word) for _ in FACES for word in WORDS]
    right = sum(text == truth for text, truth in zip(texts, truths))
    assert right >= 0.9 * len(truths), list(zip(texts, truths))


# A held-out Chinese design (fonts-wqy-microhei, installed for the tests; the zh model never
# trained on WenQuanYi Micro Hei) and common words; the mixed one keeps its Latin word whole but
# takes no space beside a Chinese character.
MICROHEI = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc#0"
CHINESE = [(u"\u4e2d\u6587", u"\u4e2d\u6587"), (u"\u4f7f\u7528\u8bf4\u660e", None),
           (u"\u6570\u636e\u6587\u4ef6", None), (u"apt-get \u5b89\u88c5", u"apt-get\u5b89\u88c5")]


def print_line(text, size=28):
    """Black print on white as a page line holds it: the face's line height and a margin."""
    font = load_font(MICROHEI, size)
    image = Image.new("L", (int(font.getlength(text)) + 12, size + 12), 255)
    ImageDraw.Draw(image).text((6, 4), text, fill=0, font=font)
    return image


def test_the_chinese_model_reads_common_words_without_spaces_beside_hanzi():
    recognizer = Recognizer.shipped("zh")
    try:
        crops = [recognizer.crop_array(print_line(text)) for text, _ in CHINESE]
        read = recognizer.read_crops(crops)[0]
    finally:
        recognizer.close()
    assert recognizer.language.name == "zh"
    # Part 1 reads the three Chinese words so printed, on both stacks (drawn tight, as
    # draw_word does, two of them); the bound leaves one for other machines and later parts.
    assert sum(got == (want or text) for got, (text, want) in zip(read, CHINESE)) >= 2, read
    assert read[-1].startswith("apt") and " " not in read[-1], read  # no space beside a Hanzi


def test_images_read_the_same_in_width_sorted_batches_as_alone():
    recognizer = Recognizer.shipped("text")
    # Widths from a short word to a long phrase, in no order, with a blank image among them.
    texts = ["exit", "Monday coffee", "OPEN", "a library window", "2048", "Route66 garden summer"]
    arrays = [load_image(draw_word(text, FACES[0])) for text in texts]
    arrays.insert(3, load_image(Image.new("L", (60, 40), 235)))
    together, together_log_probs = recognizer.recognize_arrays(arrays, batch_size=3)
    alone = [recognizer.recognize_arrays([array], batch_size=1) for array in arrays]
    assert together == [read[0][0] for read in alone]
    assert together[3] == "" and together[:3] + together[4:] == texts
    # The padding reaches only the last frames' receptive fields: a little probability.
    for log_prob, (_, (single,)) in zip(together_log_probs, alone):
        assert log_prob == pytest.approx(single, abs=0.01)


@pytest.mark.parametrize("flags, read", [([], "Welcome"), (["--model", "words"], "welcome")])
def test_predict_uses_a_shipped_model_without_checkpoint(tmp_path, flags, read):
    path = str(tmp_path / "word.png")
    draw_word("Welcome", FACES[0]).convert("RGB").save(path)
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.predict", path] + flags,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG_GUARD,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "%s\t%s" % (path, read)


def test_the_model_option_describes_every_shipped_model(capsys):
    from crnn_multigpu.cli import evaluate
    assert evaluate.main(["--help"]) == 0
    described = " ".join(capsys.readouterr().out.split())
    assert all("%s (models/%s: " % (name, name) in described for name in SHIPPED)


def test_checkpoint_and_model_together_are_refused(tmp_path, capsys):
    from crnn_multigpu.cli import predict
    assert predict.main(["--checkpoint", shipped_model("words"), "--model", "words",
                         str(tmp_path / "any.png")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "give --checkpoint or --model, not both" in error


@pytest.mark.slow
def test_an_installed_wheel_reads_a_word_and_a_page(tmp_path):
    """A wheel built from the repo and installed by ``pip`` into a fresh venv gives a
    ``crnn-predict`` that reads text: the shipped models travel in the package
    (crnn_multigpu/models), and nothing comes from the checkout."""
    from test_page import render_page
    source, wheels, venv = tmp_path / "source", tmp_path / "wheels", tmp_path / "venv"
    os.makedirs(str(source))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), str(source / name))
    for name in ("crnn_multigpu", "models"):
        shutil.copytree(os.path.join(REPO, name), str(source / name),
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))

    def run(*argv, **kwargs):
        done = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=HANG_GUARD, cwd=str(tmp_path), **kwargs)
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        return done.stdout.decode()

    pip = ["-m", "pip", "--disable-pip-version-check", "-q"]
    run(sys.executable, *pip, "wheel", "--no-deps", "-w", str(wheels), str(source))
    run(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    # The dependencies (TensorFlow, numpy, Pillow) come from this interpreter's site-packages,
    # added as plain directories: a .pth inside them (this checkout's editable install) is
    # not processed, so only the wheel provides crnn_multigpu.
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    with open(os.path.join(purelib.strip(), "test-dependencies.pth"), "w") as pth:
        pth.write("\n".join(sorted(set(sysconfig.get_paths()[key]
                                       for key in ("purelib", "platlib")))) + "\n")
    run(python, *pip, "install", "--no-deps", *[str(p) for p in wheels.iterdir()])
    word, page = str(tmp_path / "word.png"), str(tmp_path / "page.png")
    draw_word("Welcome", FACES[0]).save(word)
    picture, truth = render_page()
    picture.save(page)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    predict = str(venv / "bin" / "crnn-predict")
    assert run(predict, word, env=env).strip() == "%s\tWelcome" % word
    assert run(predict, "--page", page, env=env).split("\n")[0] == truth[0][0]
    where = run(python, "-c", "from crnn_multigpu.ocr.shipped import shipped_model as s; "
                "print(s('text'))", env=env).strip()
    assert where == os.path.join(purelib.strip(), "crnn_multigpu", "models", "text")
