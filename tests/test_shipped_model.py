"""The word model shipped in models/words: the tools use it by default and it reads unseen text."""
import os
import subprocess
import sys

from PIL import Image, ImageDraw

from crnn_multigpu.cli.evaluate import SHIPPED_MODEL
from crnn_multigpu.datasets import find_fonts, load_font
from crnn_multigpu.inference import Recognizer
from waiting import HANG_GUARD

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["invoice", "Station", "PARKING", "number", "window", "Monday", "OPEN", "coffee",
         "library", "exit", "2048", "Route66", "welcome", "garden", "TICKET", "summer"]


def draw_word(text, font_path, size=40, ink=30, paper=235):
    """A plain word on paper: nothing the synthetic generator made."""
    font = load_font(font_path, size)
    left, top, right, bottom = font.getbbox(text)
    image = Image.new("L", (right - left + 16, bottom - top + 12), paper)
    ImageDraw.Draw(image).text((8 - left, 6 - top), text, fill=ink, font=font)
    return image


def test_shipped_model_is_small_and_complete():
    files = [os.path.join(root, name) for root, _, names in os.walk(SHIPPED_MODEL) for name in names]
    assert os.path.join(SHIPPED_MODEL, "config.json") in files
    assert os.path.isfile(os.path.join(SHIPPED_MODEL, "README.md"))
    assert all(os.path.getsize(path) <= 20 * 2 ** 20 for path in files)


def test_shipped_model_reads_plain_words_in_any_installed_font():
    recognizer = Recognizer(SHIPPED_MODEL)
    fonts = [f for f in find_fonts(chars="abcdefghijklmnopqrstuvwxyz0123456789")
             if "Mono" not in f][:4]
    images = [draw_word(word, font) for font in fonts for word in WORDS]
    from crnn_multigpu.datasets import load_image
    texts, _ = recognizer.recognize_arrays([load_image(image) for image in images])
    truths = [word.lower() for _ in fonts for word in WORDS]
    right = sum(text == truth for text, truth in zip(texts, truths))
    assert right >= 0.9 * len(truths), list(zip(texts, truths))


def test_predict_uses_the_shipped_model_without_checkpoint(tmp_path):
    path = str(tmp_path / "word.png")
    draw_word("Welcome", find_fonts(chars="Welcome".lower())[0]).convert("RGB").save(path)
    done = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.predict", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG_GUARD,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "%s\twelcome" % path
