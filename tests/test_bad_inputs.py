"""The table of bad inputs: each gives a clear error (type and message) or is skipped and counted.

Command-line cases check the one-line ``error: ...`` and exit code 2 (never a
traceback); library cases check the exception type and message.
"""
import os
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import toy_models as toys
from assertions import one_error_line, run_captured
from crnn_multigpu import MultiGpuModel
from crnn_multigpu.datasets.charset import Charset
from crnn_multigpu.cli import evaluate, generate, train
from crnn_multigpu.cli.common import UsageError
from crnn_multigpu.compat import tf
from crnn_multigpu.datasets import FolderDataset, open_dataset
from crnn_multigpu.wrapper.devices import cpu_devices, tower_devices
from waiting import HANG_GUARD


def cli(main, argv, capsys):
    """``(exit code, stderr)`` of a tool run in-process (``assertions.run_captured``)."""
    code, _, err = run_captured(main, argv, capsys)
    return code, err


def broken_copy(tiny_dataset, tmp_path, labels=None, corrupt=()):
    root = str(tmp_path / "broken")
    shutil.copytree(tiny_dataset, root)
    if labels is not None:
        with open(os.path.join(root, "labels.txt"), "w") as stream:
            stream.write(labels)
    for index in corrupt:
        path = os.path.join(root, "images", sorted(os.listdir(os.path.join(root, "images")))[index])
        with open(path, "r+b") as stream:
            stream.truncate(40)  # a truncated PNG
    return root


CONFIG_CASES = {
    "zero towers": (lambda d, t: ["--towers", "0"], "--towers must be at least 1"),
    "zero accumulate": (lambda d, t: ["--accumulate", "0"], "--accumulate must be at least 1"),
    "batch smaller than towers": (lambda d, t: ["--towers", "4", "--batch-size", "3"],
                                  "smaller than the 4 towers"),
    "unknown charset file": (lambda d, t: ["--charset", str(t / "nope.txt")], "nope.txt does not exist"),
    "missing dataset": (lambda d, t: ["--train", str(t / "missing")], "does not exist"),
    "empty dataset": (lambda d, t: ["--train", broken_copy(d, t, labels="")], "lists no samples"),
    "malformed labels.txt": (lambda d, t: ["--train", broken_copy(d, t, labels="images/a.png\tab\nno-tab-here\n")],
                             "labels.txt line 2"),
    "no readable image": (lambda d, t: ["--train", broken_copy(d, t, corrupt=range(48))],
                          "readable images in the batch"),
    "unwritable --out": (lambda d, t: ["--out", os.path.join(d, "labels.txt", "run")],
                         "--out must name a folder, but "),
}


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
def test_train_configuration_errors(case, tiny_dataset, tmp_path, capsys):
    make_args, message = CONFIG_CASES[case]
    args = {"--train": tiny_dataset, "--out": str(tmp_path / "run"), "--steps": "2",
            "--model": "tiny", "--batch-size": "8"}
    extra = make_args(tiny_dataset, tmp_path)
    args.update(zip(extra[::2], extra[1::2]))
    code, err = cli(train.main, [x for pair in args.items() for x in pair], capsys)
    assert code == 2 and message in err, err
    assert not os.path.exists(os.path.join(str(tmp_path / "run"), "checkpoints", "checkpoint"))


def test_missing_fonts_is_a_clear_error(tmp_path, capsys, monkeypatch):
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    monkeypatch.setenv("CRNN_FONT_DIRS", str(empty))
    code, err = cli(generate.main, ["--out", str(tmp_path / "out"), "--count", "2",
                                    "--font-dir", str(empty), "--quiet"], capsys)
    assert code == 2 and "font" in err.lower() and str(empty) in err


def test_evaluate_without_a_run_is_a_clear_error(tiny_dataset, tmp_path, capsys):
    code, err = cli(evaluate.main, ["--checkpoint", str(tmp_path), "--data", tiny_dataset], capsys)
    assert code == 2 and "not a training run directory" in err


def test_bad_labels_are_dropped_and_counted(tmp_path):
    root = tmp_path / "labels"
    (root / "images").mkdir(parents=True)
    Image.new("L", (40, 20), 255).save(str(root / "images" / "a.png"))
    lines = ["images/a.png\tgood", "images/a.png\t", "images/a.png\tUPPER", "images/a.png\t" + "ab" * 20]
    (root / "labels.txt").write_text("\n".join(lines) + "\n")
    dataset = FolderDataset(str(root), charset=Charset.default(), time_steps=25)
    assert dataset.texts == ["good"]
    counts = {reason: len(texts) for reason, texts in dataset.rejected.items()}
    assert sorted(counts.values()) == [1, 1, 1], counts


def test_corrupt_images_are_skipped_and_counted(tiny_dataset, tmp_path):
    dataset = open_dataset(broken_copy(tiny_dataset, tmp_path, corrupt=(0, 5)),
                           charset=Charset.default())
    loaded = [dataset.safe_get(i) for i in range(len(dataset))]
    assert sum(sample is None for sample in loaded) == 2 and len(dataset.unreadable) == 2


@pytest.mark.parametrize("mode", ["RGB", "P", "LA", "I;16"])
def test_any_image_mode_or_height_is_converted(tmp_path, mode):
    from crnn_multigpu.datasets import load_image
    path = str(tmp_path / "x.png")
    if mode == "I;16":
        image = Image.fromarray(np.full((61, 90), 60000, np.uint16))
    else:
        image = Image.new("RGB", (90, 61), (250, 250, 250)).convert(mode)
    image.save(path)
    assert load_image(path).shape == (32, 47)


MODEL_CASES = {
    "no loss": (toys.NoLoss, TypeError, "has no `loss`"),
    "unshared variables": (toys.WithTfVariable, ValueError, "new trainable variable"),
    "non-scalar loss": (toys.VectorLoss, ValueError, "must be a scalar"),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_bad_models(case):
    model, error, message = MODEL_CASES[case]
    with pytest.raises(error, match=message):
        MultiGpuModel(model, devices=cpu_devices(2))


def test_more_gpus_than_visible_lists_what_is_visible():
    with pytest.raises(ValueError, match=r"n_gpus=3 but only 0 GPU\(s\) are visible \(none\)"):
        tower_devices(n_gpus=3)
    with pytest.raises(ValueError, match="names no device"):
        tower_devices(devices=[])


def test_shard_arrays_of_different_lengths():
    wrapper = MultiGpuModel(toys.Linear, devices=cpu_devices(2))
    with pytest.raises(ValueError, match="disagree on the number of examples"):
        wrapper.split(dict(x=np.ones((4, 3)), y=np.ones((3, 2))))


# Issue 14, items 4, 6 and 7: numeric flags, damaged data, failed exports.

@pytest.fixture(scope="module")
def tiny_run(tiny_dataset, tmp_path_factory):
    """A two-step run of the tiny model: something to evaluate and export."""
    out = str(tmp_path_factory.mktemp("bad-inputs") / "run")
    with tf.Graph().as_default():
        assert train.main(["--train", tiny_dataset, "--out", out, "--steps", "2", "--model", "tiny",
                           "--batch-size", "8", "--checkpoint-every", "0", "--log-every", "0"]) == 0
    return out


# flag: (a bad value, what the flag must be); the expected line is "FLAG must be WHAT, got VALUE".
TRAIN_FLAGS = {
    "--steps": ("-5", "at least 1"), "--stop-at": ("0", "at least 1"),
    "--checkpoint-every": ("-1", "at least 0"), "--log-every": ("-50", "at least 0"),
    "--validate-every": ("-1", "at least 0"), "--validate-max": ("-1", "at least 0"),
    "--batch-size": ("0", "at least 1"), "--lr": ("-1", "greater than 0"),
    "--clip-norm": ("-0.5", "at least 0"), "--width": ("-8", "in [0, 4096]"),
    "--towers": ("-2", "at least 1"), "--gpus-per-task": ("-1", "at least 0"),
    "--augment": ("nan", "a finite number"),
}
OTHER_FLAGS = [
    ("evaluate", ["--data", "x", "--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    ("evaluate", ["--data", "x", "--beam-width", "-1"], "--beam-width must be at least 0, got -1"),
    ("evaluate", ["--data", "x", "--lexicon-delta", "-1"], "--lexicon-delta must be at least 0"),
    ("evaluate", ["--data", "x", "--lm-weight", "-1"], "--lm-weight must be in [0, 1], got -1"),
    ("predict", ["x.png", "--lm-bonus", "nan"], "--lm-bonus must be a finite number"),
    ("predict", ["x.png", "--beam-width", "-3"], "--beam-width must be at least 0, got -3"),
    ("export", ["--checkpoint", "r", "--out", "o", "--beam-width", "-1"], "--beam-width must be"),
    # Issue 35: 1e30 read words as "1" or "heIl0o" (the model's own bound: test_beam_bounds.py).
    ("predict", ["x.png", "--beam-width", "1e30"], "--beam-width must be a whole number"),
    ("evaluate", ["--data", "x", "--lm-weight", "1e30"], "--lm-weight must be in [0, 1], got 1e30"),
    ("predict", ["x.png", "--lm-weight", "4"], "--lm-weight must be in [0, 1], got 4"),
    ("evaluate", ["--data", "x", "--lm-bonus", "1e30"], "--lm-bonus must be in [0, 6.9], got 1e30"),
    ("predict", ["x.png", "--lm-bonus", "-1"], "--lm-bonus must be in [0, 6.9], got -1"),
    ("generate", ["--out", "o", "--count", "-1"], "--count must be at least 1, got -1"),
    ("generate", ["--out", "o", "--count", "ten"], "--count must be a whole number, got 'ten'"),
    ("generate", ["--out", "o", "--workers", "0"], "--workers must be at least 1, got 0"),
    ("generate", ["--out", "o", "--difficulty", "1.5"], "--difficulty must be in [0, 1], got 1.5"),
    ("generate", ["--out", "o", "--holdout-fraction", "1"], "--holdout-fraction must be in [0, 1)"),
    ("main_job", ["--steps", "-1"], "--steps must be at least 1, got -1"),
    ("generate", ["--out", "o", "--font-dir", "/no/fonts"], "--font-dir must be an existing folder"),
    ("main_job", ["--font-dir", "/no/fonts"], "--font-dir must be an existing folder, got '/no/"),
    ("predict", ["x.png", "--lines", "--page"], "--page: not allowed with argument --lines"),
]
TOOLS = ("evaluate", "export", "generate", "main_job", "predict", "train")


@pytest.mark.parametrize("flag", sorted(TRAIN_FLAGS))
def test_every_numeric_train_flag_is_range_checked(flag, tiny_dataset, tmp_path, capsys):
    value, bound = TRAIN_FLAGS[flag]
    code, err = cli(train.main, ["--train", tiny_dataset, "--out", str(tmp_path / "run"),
                                 flag, value], capsys)
    got = value if bound != "a finite number" else repr(value)
    assert one_error_line(code, err) == "error: %s must be %s, got %s" % (flag, bound, got)
    assert not os.path.exists(str(tmp_path / "run"))


@pytest.mark.parametrize("tool, argv, message", OTHER_FLAGS,
                         ids=["%s %s" % (c[0], " ".join(c[1][-2:])) for c in OTHER_FLAGS])
def test_every_numeric_flag_of_the_other_tools_is_range_checked(tool, argv, message, capsys):
    import importlib
    module = importlib.import_module("crnn_multigpu.cli." + tool)
    code, err = cli(module.main, argv, capsys)
    assert message in one_error_line(code, err)


# Issue 35: every numeric reading option bounded where its meaning ends (cli/reading.py says
# why each bound; --beam-width by the model: test_beam_bounds.py), and crnn-train's fixed
# --width. (flag, low, high, whole numbers?)
BOUNDED_FLAGS = [("--lm-weight", 0.0, 1.0, False), ("--lm-bonus", 0.0, 6.9, False)]
PARSER_ONLY = settings(max_examples=60, deadline=None,
                       suppress_health_check=[HealthCheck.function_scoped_fixture])
NUMBERS = st.one_of(st.floats(-10, 1010), st.floats(-1e40, 1e40, allow_nan=False))


@PARSER_ONLY
@given(st.sampled_from(BOUNDED_FLAGS), NUMBERS, st.sampled_from(["evaluate", "predict"]))
def test_reading_options_take_their_range_and_refuse_the_rest_in_one_line(flag, number, tool):
    import importlib
    name, low, high, whole = flag
    value = int(number) if whole else number
    parser = importlib.import_module("crnn_multigpu.cli." + tool).build_parser()
    # FLAG=VALUE: argparse takes "-1e-05" after a flag for an option, as a user would meet it.
    argv = (["--data", "x"] if tool == "evaluate" else ["x.png"]) + ["%s=%r" % (name, value)]
    if low <= value <= high:
        assert getattr(parser.parse_args(argv), name[2:].replace("-", "_")) == value
        return
    with pytest.raises(UsageError) as refused:
        parser.parse_args(argv)
    assert str(refused.value) == "%s must be in [%g, %g], got %r" % (name, low, high, value)


@PARSER_ONLY
@given(st.one_of(st.integers(-10, 5000), st.integers(-2 ** 60, 2 ** 60)))
def test_train_width_takes_0_to_4096(width):
    argv = ["--train", "t", "--out", "o", "--width=%d" % width]
    if 0 <= width <= 4096:
        assert train.build_parser().parse_args(argv).width == width
        return
    with pytest.raises(UsageError, match=r"^--width must be in \[0, 4096\], got %d$" % width):
        train.build_parser().parse_args(argv)


@pytest.mark.parametrize("tool", TOOLS)
def test_help_returns_0_and_a_malformed_line_2_to_an_in_process_caller(tool, capsys):
    import importlib
    module = importlib.import_module("crnn_multigpu.cli." + tool)
    assert module.main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out
    code, err = cli(module.main, ["--no-such-option"], capsys)
    assert "--no-such-option" in one_error_line(code, err) or "required" in err


def test_a_file_named_as_an_option_is_pointed_to_dash_dash(tmp_path, monkeypatch):
    from crnn_multigpu.cli import predict
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-scan.png").write_bytes(b"an image")
    parser = predict.build_parser()
    for argv in (["-scan.png"], ["--page", "-scan.png", "a.png"]):  # images missing; unknown
        with pytest.raises(UsageError) as refused:
            parser.parse_args(argv)
        assert str(refused.value) == ("-scan.png is a file, but begins with '-' as an option "
                                      "does: pass it as ./-scan.png, or after -- (-- -scan.png)")
    assert parser.parse_args(["--", "-scan.png"]).images == ["-scan.png"]
    with pytest.raises(UsageError, match="unrecognized arguments: -other.png$"):
        parser.parse_args(["a.png", "-other.png"])  # no such file: argparse's own line


def test_a_missing_checkpoint_is_named(tiny_dataset, tmp_path, capsys):
    code, err = cli(evaluate.main, ["--checkpoint", str(tmp_path / "nope"), "--data", tiny_dataset],
                    capsys)
    assert "--checkpoint %s does not exist" % (tmp_path / "nope") in one_error_line(code, err)


def lmdb_copy(tmp_path, name, damage):
    lmdb = pytest.importorskip("lmdb")
    from crnn_multigpu.datasets import write_lmdb
    path = str(tmp_path / name)
    write_lmdb(path, [(Image.new("L", (60, 32), 30 * i), "ab%d" % i) for i in range(60)],
               map_size=1 << 26)
    data = os.path.join(path, "data.mdb")
    if damage == "truncated":
        os.truncate(data, os.path.getsize(data) // 2)
    elif damage == "random":
        with open(data, "wb") as stream:
            stream.write(np.random.RandomState(0).bytes(os.path.getsize(data)))
    else:
        env = lmdb.open(path, map_size=1 << 26)
        with env.begin(write=True) as txn:
            txn.put(*damage)
        env.close()
    return path


LMDB_CASES = {
    "truncated": ("truncated", "data.mdb is truncated"),
    "random bytes": ("random", "data.mdb is not a readable LMDB file"),
    "negative num-samples": ((b"num-samples", b"-5"), "lists no samples: num-samples is -5"),
    "zero num-samples": ((b"num-samples", b"0"), "lists no samples: num-samples is 0"),
    "num-samples not a number": ((b"num-samples", b"many"), "num-samples is b'many'"),
    "label not UTF-8": ((b"label-000000007", b"a\xffb"), "key label-000000007 is not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(LMDB_CASES))
def test_damaged_lmdb_is_one_line_naming_the_file(case, tiny_run, tmp_path):
    # A subprocess: before the size check a truncated data.mdb killed the process with SIGBUS.
    import subprocess
    import sys
    damage, message = LMDB_CASES[case]
    path = lmdb_copy(tmp_path, "db", damage)
    result = subprocess.run([sys.executable, "-m", "crnn_multigpu.cli.evaluate", "--checkpoint",
                             tiny_run, "--data", path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, timeout=HANG_GUARD)
    line = one_error_line(result.returncode, result.stderr)
    assert message in line and path in line, line


def test_labels_txt_that_is_not_utf8_names_the_line(tiny_dataset, tmp_path, capsys):
    root = broken_copy(tiny_dataset, tmp_path)
    with open(os.path.join(root, "labels.txt"), "rb") as stream:
        lines = stream.read().splitlines(True)
    lines[2] = lines[2].rstrip(b"\n") + b"\xe9\n"  # Latin-1, not UTF-8
    with open(os.path.join(root, "labels.txt"), "wb") as stream:
        stream.writelines(lines)
    code, err = cli(train.main, ["--train", root, "--out", str(tmp_path / "run")], capsys)
    assert "labels.txt line 3: not UTF-8 text" in one_error_line(code, err)


def test_evaluate_with_no_readable_image_is_an_error(tiny_dataset, tiny_run, tmp_path, capsys):
    root = broken_copy(tiny_dataset, tmp_path)
    shutil.rmtree(os.path.join(root, "images"))
    code, err = cli(evaluate.main, ["--checkpoint", tiny_run, "--data", root], capsys)
    line = one_error_line(code, err)
    assert "none of the 48 image(s)" in line and "nothing to evaluate" in line


def leftovers(folder):
    return sorted(name for name in os.listdir(folder) if "partial" in name)


def test_export_to_a_path_through_a_file_is_one_line(tiny_run, tmp_path, capsys):
    from crnn_multigpu.cli import export
    out = os.path.join(tiny_run, "config.json", "exported")
    code, err = cli(export.main, ["--checkpoint", tiny_run, "--out", out], capsys)
    assert "--out must name a folder, but %s (in %s) is a file" % (os.path.join(
        tiny_run, "config.json"), out) in one_error_line(code, err)


def test_export_where_no_folder_can_be_made_says_what_to_do(tiny_run, capsys):
    """/proc takes no new folder, even from root: the write advice every tool gives."""
    from crnn_multigpu.cli import export
    code, err = cli(export.main, ["--checkpoint", tiny_run, "--out", "/proc/crnn-exported"], capsys)
    line = one_error_line(code, err)
    assert "cannot write /proc/crnn-exported" in line and "check the folder" in line, line


@pytest.mark.parametrize("export_format", ["savedmodel", "checkpoint"])
def test_a_failed_export_leaves_nothing_behind(export_format, tiny_run, tmp_path, capsys,
                                               monkeypatch):
    import errno
    from crnn_multigpu.cli import export
    real = export.EXPORTS[export_format]

    def disk_full_at_the_end(recognizer, out_dir):
        real(recognizer, out_dir)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setitem(export.EXPORTS, export_format, disk_full_at_the_end)
    out = str(tmp_path / "exported")
    argv = ["--checkpoint", tiny_run, "--out", out, "--format", export_format]
    code, err = cli(export.main, argv, capsys)
    assert "could not export to %s: No space left on device" % out in one_error_line(code, err)
    assert not os.path.exists(out) and leftovers(str(tmp_path)) == []
    monkeypatch.setitem(export.EXPORTS, export_format, real)
    code, err = cli(export.main, argv, capsys)  # the retry is not blocked
    assert code == 0 and os.path.isdir(out) and leftovers(str(tmp_path)) == []


def test_export_on_a_really_full_disk_leaves_nothing_behind(tiny_run, tmp_path, capsys):
    import subprocess
    from crnn_multigpu.cli import export
    small = str(tmp_path / "small")
    os.mkdir(small)
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or subprocess.call(
            ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", small],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) != 0:
        pytest.skip("needs root and tmpfs mounts for a real full disk")
    try:
        out = os.path.join(small, "exported")
        code, err = cli(export.main, ["--checkpoint", tiny_run, "--out", out], capsys)
        assert "No space left on device" in one_error_line(code, err)
        assert os.listdir(small) == []
    finally:
        subprocess.call(["umount", small])
