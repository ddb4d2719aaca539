"""scripts/join_sets.py: labelled folders joined as links, a set taken N times."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "join_sets.py")


def labelled_folder(path, labels):
    os.makedirs(os.path.join(path, "images"))
    with open(os.path.join(path, "labels.txt"), "w", encoding="utf-8") as out:
        for index, text in enumerate(labels):
            name = "images/%d.png" % index
            with open(os.path.join(path, name), "w") as image:
                image.write(text)  # the link's target is what matters, not the format
            out.write("%s\t%s\n" % (name, text))


def test_sets_are_joined_with_copies_and_links_reach_their_labels(tmp_path):
    labelled_folder(str(tmp_path / "a"), ["one", "two"])
    labelled_folder(str(tmp_path / "b"), ["中文"])
    out = tmp_path / "joined"
    subprocess.run([sys.executable, SCRIPT, "--out", str(out), str(tmp_path / "a"),
                    str(tmp_path / "b") + "x3"], check=True, stdout=subprocess.PIPE)
    lines = (out / "labels.txt").read_text(encoding="utf-8").splitlines()
    texts = [line.split("\t")[1] for line in lines]
    assert texts == ["one", "two", "中文", "中文", "中文"]
    for line in lines:
        path, text = line.split("\t")
        assert os.path.islink(str(out / path))
        assert (out / path).read_text(encoding="utf-8") == text
    assert len(set(line.split("\t")[0] for line in lines)) == 5


def test_an_existing_out_or_a_folder_without_labels_is_refused(tmp_path):
    labelled_folder(str(tmp_path / "a"), ["one"])
    (tmp_path / "empty").mkdir()
    for argv in (["--out", str(tmp_path / "a"), str(tmp_path / "a")],
                 ["--out", str(tmp_path / "new"), str(tmp_path / "empty")]):
        done = subprocess.run([sys.executable, SCRIPT] + argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        assert done.returncode != 0
        assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "new").exists()
