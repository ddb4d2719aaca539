"""scripts/train_detector.py and scripts/make_page_material.py as a user runs them: a tiny
detector trained in two parts on material the test writes (the second part continues from the
first's checkpoint), and bad input refused in one ``error:`` line."""
import os
import random
import re
import subprocess
import sys

import pytest

from crnn_multigpu.datasets.page_material import MaterialWriter
from faces import tiny_faces
from text_pdf import write_text_pdf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = "line box page detector ink column rule shade".split()


def run_script(name, *args):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", name)] +
                          [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)
    return done.returncode, done.stdout, done.stderr


def error_lines(err):
    """The lines a user reads on stderr, TensorFlow's start-up chatter left out."""
    return [line for line in err.splitlines() if line.strip() and "tensorflow" not in line.lower()
            and not re.match(r"^[WIE]\d{4} ", line) and "oneDNN" not in line
            and "absl" not in line and not line.startswith("WARNING")]


def material(folder, documents=6):
    rng = random.Random(0)
    writer = MaterialWriter(str(folder))
    for number in range(documents):
        pdf = str(folder / ("doc%d.pdf" % number))
        lines = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(25)]
        write_text_pdf(pdf, lines, tiny_faces()[0])
        writer.add(pdf, 1, 60, "typeset", pdf)
    return str(folder)


@pytest.mark.slow
def test_training_runs_in_parts_from_its_checkpoints(tmp_path):
    folder = material(tmp_path / "material")
    common = ["--material", folder, "--out", tmp_path / "run", "--model", "tiny", "--crop", 64,
              "--batch", 2, "--towers", 2, "--validation-share", 0.5, "--validation-crops", 2,
              "--log-every", 1, "--validate-every", 2]
    code, out, err = run_script("train_detector.py", "--steps", 2, *common)
    assert code == 0, err
    assert "step 0 of 2\n" in out and re.search(r"step 2 validation: loss [\d.]+, lines "
                                                 r"precision/recall ([\d.]+/[\d.]+ at 0\.\d0(, )?)"
                                                 r"{3}\n", out), out
    assert os.path.exists(str(tmp_path / "run" / "detector-2.index"))
    code, out, err = run_script("train_detector.py", "--steps", 3, *common)
    assert code == 0, err
    assert re.search(r"step 2 of 3 \(from .*detector-2\)", out) and "step 3: loss" in out, out
    assert "step 1: loss" not in out


def test_bad_input_is_refused_in_one_line(tmp_path):
    code, _, err = run_script("train_detector.py", "--material", tmp_path / "none", "--out",
                              tmp_path / "run")
    assert code == 2 and error_lines(err) == [
        "error: train_detector: cannot read page material %s: No such file or directory (make "
        "it with scripts/make_page_material.py)" % (tmp_path / "none" / "pages.jsonl")]
    code, _, err = run_script("make_page_material.py", "--out", tmp_path / "m", "--dpi", "96-x")
    assert code == 2 and error_lines(err) == [
        "error: make_page_material: --dpi must be a resolution or a range of them within 50-600, "
        "e.g. 96-200; got '96-x'"]
