"""Writing outputs (issue 35): a full disk or a missing permission is one line naming the path
that could not be written, nothing half-written is left to block the rerun, and an --out that
names a file is refused before anything starts.

A full disk is simulated where the bytes are written (the writer raises ENOSPC after writing
part of its file), so the tests need neither root nor a small file system; LMDB's check of the
free space before each commit is tested with the free-space function patched.
"""
import errno
import os

import pytest
from PIL import Image

from assertions import one_error_line, run_captured
from crnn_multigpu import files
from crnn_multigpu.cli import evaluate, export, generate, main_job, predict, train
from crnn_multigpu.datasets import open_dataset
from crnn_multigpu.datasets import lmdb_format

FULL = "no space left on the disk: free space and run the same command again"
DENIED = "permission denied: write somewhere you may, or fix the folder's permissions"


def everything_in(folder):
    """Every file and folder under ``folder``, hidden ones included, relative to it."""
    found = []
    for root, dirs, names in os.walk(folder):
        found.extend(os.path.relpath(os.path.join(root, name), folder) for name in dirs + names)
    return sorted(found)


def failing_save(monkeypatch, error, after=0):
    """Image.save writes a few bytes and raises ``error`` once ``after`` images were saved:
    the disk filling (or the permission missing) in the middle of a file."""
    real, saved = Image.Image.save, []

    def save(image, path, *args, **kwargs):
        if not isinstance(path, str):  # an image encoded in memory
            return real(image, path, *args, **kwargs)
        if len(saved) >= after:
            with open(path, "wb") as stream:
                stream.write(b"\x89PNG\r\n")
            raise error
        saved.append(path)
        return real(image, path, *args, **kwargs)
    monkeypatch.setattr(Image.Image, "save", save)
    return lambda: monkeypatch.setattr(Image.Image, "save", real)


def test_predict_picture_on_a_full_disk(tiny_dataset, tmp_path, capsys, monkeypatch):
    image = os.path.join(tiny_dataset, "images", sorted(os.listdir(
        os.path.join(tiny_dataset, "images")))[0])
    picture = str(tmp_path / "grid.png")
    restore = failing_save(monkeypatch, OSError(errno.ENOSPC, "No space left on device"))
    code, _, err = run_captured(predict.main, ["--model", "words", image, "--picture", picture],
                                capsys)
    assert one_error_line(code, err) == "error: cannot write %s: %s" % (picture, FULL)
    assert everything_in(str(tmp_path)) == []  # nothing half-written blocks the rerun
    restore()
    code, _, err = run_captured(predict.main, ["--model", "words", image, "--picture", picture],
                                capsys)
    assert code == 0 and everything_in(str(tmp_path)) == ["grid.png"], err


def test_a_page_picture_that_may_not_be_written(tmp_path, monkeypatch):
    from crnn_multigpu.ocr.page import LineBox, draw_lines
    picture = str(tmp_path / "page.png")
    failing_save(monkeypatch, PermissionError(errno.EACCES, "Permission denied"))
    with pytest.raises(files.WriteError, match="^cannot write %s: %s$" % (picture, DENIED)):
        draw_lines(Image.new("L", (60, 40), 255), [LineBox(0, 5, 50, 20, 0)], ["text"], picture)
    assert everything_in(str(tmp_path)) == []


def test_generate_folder_on_a_full_disk(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "set")
    argv = ["--out", out, "--count", "5", "--workers", "1", "--quiet"]
    restore = failing_save(monkeypatch, OSError(errno.ENOSPC, "No space left on device"), 2)
    code, _, err = run_captured(generate.main, argv, capsys)
    assert one_error_line(code, err) == "error: cannot write %s: %s" % (
        os.path.join(out, "images", "000000002.png"), FULL)
    # Whole images and the charset only: no half image, and no labels.txt (not a dataset).
    assert everything_in(out) == ["charset.txt", "images", os.path.join("images", "000000000.png"),
                                  os.path.join("images", "000000001.png")]
    restore()
    code, _, err = run_captured(generate.main, argv, capsys)  # the rerun needs no --overwrite
    assert code == 0 and len(open_dataset(out)) == 5, err


def test_labels_that_cannot_be_written_leave_no_dataset(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "set")
    real = files.os.replace

    def denied(source, target):
        if target.endswith("labels.txt"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(source, target)
    monkeypatch.setattr(files.os, "replace", denied)
    argv = ["--out", out, "--count", "3", "--workers", "1", "--quiet"]
    code, _, err = run_captured(generate.main, argv, capsys)
    assert one_error_line(code, err) == "error: cannot write %s: %s" % (
        os.path.join(out, "labels.txt"), DENIED)
    assert "labels.txt" not in everything_in(out) and not any(
        "partial" in name for name in everything_in(out))


def lmdb_argv(out):
    return ["--out", out, "--format", "lmdb", "--count", "5", "--quiet"]


def test_generate_lmdb_checks_free_space_before_writing(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "set")
    monkeypatch.setattr(files, "free_bytes", lambda folder: 2 ** 20 // 2)
    code, _, err = run_captured(generate.main, lmdb_argv(out), capsys)
    line = one_error_line(code, err)
    assert line.startswith("error: cannot write %s: it needs about " % os.path.join(
        out, "data.mdb")) and line.endswith(
            ", and 0 MB are free on its disk: free space and run the same command again"), line
    assert everything_in(out) == ["charset.txt"]
    monkeypatch.undo()
    # The rerun needs no --overwrite.
    code, _, err = run_captured(generate.main, lmdb_argv(out), capsys)
    assert code == 0 and len(open_dataset(out)) == 5, err
    # No lock file: its sparse memory map killed crnn-generate with SIGBUS on a full disk.
    assert everything_in(out) == ["charset.txt", "data.mdb"]


def test_an_lmdb_commit_that_fails_leaves_nothing(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "set")
    lmdb = lmdb_format._import_lmdb()

    def commit_fails(path, needed):
        # What LMDB raised at the commit when the disk filled (measured on ext4 and tmpfs).
        raise lmdb.Error("mdb_txn_commit: Input/output error")
    monkeypatch.setattr(lmdb_format, "require_space", commit_fails)
    code, _, err = run_captured(generate.main, lmdb_argv(out), capsys)
    assert one_error_line(code, err) == (
        "error: cannot write %s: mdb_txn_commit: Input/output error: check the folder and the "
        "disk, then run the same command again" % os.path.join(out, "data.mdb"))
    assert everything_in(out) == ["charset.txt"]


def test_a_file_written_whole_or_not_at_all(tmp_path):
    target = tmp_path / "kept.txt"
    target.write_text(u"the old text")
    with pytest.raises(files.WriteError) as caught:
        with files.written_whole(str(target)) as temporary:
            with open(temporary, "w") as stream:
                stream.write("half of the new")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == "cannot write %s: %s" % (target, FULL)
    assert caught.value.errno == errno.ENOSPC
    assert everything_in(str(tmp_path)) == ["kept.txt"] and target.read_text() == u"the old text"
    files.write_text(str(target), u"new\n")
    assert everything_in(str(tmp_path)) == ["kept.txt"] and target.read_text() == u"new\n"


TOOLS = {
    "crnn-generate": (generate.main, []),
    "crnn-train": (train.main, ["--train", "t"]),
    "crnn-export": (export.main, ["--checkpoint", "r"]),
    "the main job": (main_job.main, []),
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize("inside", [False, True])
def test_an_out_that_names_a_file(tool, inside, tmp_path, capsys):
    main, argv = TOOLS[tool]
    afile = tmp_path / "afile.txt"
    afile.write_text(u"mine")
    out = str(afile / "run") if inside else str(afile)
    code, _, err = run_captured(main, argv + ["--out", out], capsys)
    assert one_error_line(code, err) == "error: --out must name a folder, but %s%s is a file: " \
        "pass a folder (new or existing)" % (afile, " (in %s)" % out if inside else "")
    assert everything_in(str(tmp_path)) == ["afile.txt"] and afile.read_text() == u"mine"


PICTURE_TOOLS = {"predict": lambda data, image: (predict, ["--model", "words", image]),
                 "predict --page": lambda data, image: (predict, ["--page", image]),
                 "evaluate": lambda data, image: (evaluate, ["--model", "words", "--data", data])}


@pytest.mark.parametrize("tool", sorted(PICTURE_TOOLS))
def test_a_picture_that_cannot_be_written_is_refused_before_reading(tool, tiny_dataset, tmp_path,
                                                                    capsys, monkeypatch):
    """Every tool that takes --picture: a path it could not write is one line naming it and
    what to do, before any model is loaded (it was refused only once everything was read)."""
    image = os.path.join(tiny_dataset, "images", sorted(os.listdir(
        os.path.join(tiny_dataset, "images")))[0])
    module, argv = PICTURE_TOOLS[tool](tiny_dataset, image)
    monkeypatch.setattr(module, "chosen_reader",
                        lambda *args: pytest.fail("a model was loaded before --picture was checked"))
    afile = str(tmp_path / "afile.txt")
    open(afile, "w").close()
    missing = str(tmp_path / "no" / "such")
    denied = str(tmp_path / "denied")
    os.mkdir(denied)
    cases = [
        (os.path.join(missing, "grid.png"),
         "its folder %s does not exist; create it first (mkdir -p %s) or choose a file in an "
         "existing folder" % (missing, missing)),
        (os.path.join(afile, "grid.png"),
         "%s is a file, not a folder; choose a file in a folder" % afile),
        (os.path.join(denied, "grid.png"),
         "permission denied in its folder %s; choose a file in a folder you may write" % denied)]
    real_access = os.access
    # As root every folder is writable: the refusal of a read-only one is shown by os.access.
    monkeypatch.setattr(os, "access", lambda path, mode: path != denied and real_access(path, mode))
    for picture, reason in cases:
        code, _, err = run_captured(module.main, argv + ["--picture", picture], capsys)
        assert one_error_line(code, err) == "error: --picture %s cannot be written: %s" % (
            picture, reason)
    code, _, err = run_captured(module.main, argv + ["--picture", str(tmp_path)], capsys)
    assert one_error_line(code, err) == "error: --picture %s is a folder: name a file in it " \
        "(e.g. %s)" % (tmp_path, tmp_path / "picture.png")
    assert everything_in(str(tmp_path)) == ["afile.txt", "denied"]
