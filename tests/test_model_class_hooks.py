"""A model class that fails the tools (issue 35): a hook that raises (``__init__``,
``feed_dict``, ``check_config``), an output of the wrong shape (``predict``, ``log_prob``), a
module that calls sys.exit on import. Each is one ``error:`` line naming the class, the hook
and what it raised or gave, exit code 2: never a traceback, a numpy message or a silent exit.

The failing classes live in a module written to tmp_path and put on sys.path (the tools import
it as a user's module); they are SmallConvCTC (tests/models_for_tools.py) with one thing wrong.
"""
import json
import os
import shutil
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assertions import one_error_line, run_tool
from crnn_multigpu.cli import evaluate, export, predict, train
from crnn_multigpu.datasets import read_labels

MODULE = "model_class_hooks_35"
FAILING = """
from crnn_multigpu.compat import tf
from tests.models_for_tools import SmallConvCTC

# The hook that fails and what it raises, set by the test: (hook name, exception) or None.
FAILURE = None


def _fail_if_chosen(hook):
    if FAILURE is not None and FAILURE[0] == hook:
        raise FAILURE[1]


class Failing(SmallConvCTC):
    def __init__(self, **kwargs):
        _fail_if_chosen("__init__")
        SmallConvCTC.__init__(self, **kwargs)

    def feed_dict(self, batch, training=True):
        _fail_if_chosen("feed_dict")
        return SmallConvCTC.feed_dict(self, batch, training)

    @classmethod
    def check_config(cls, model_kwargs):
        _fail_if_chosen("check_config")


class FlatPredict(SmallConvCTC):
    # Rank 1 in the graph: refused when built.
    def __init__(self, **kwargs):
        SmallConvCTC.__init__(self, **kwargs)
        self.predict = tf.reshape(self.predict, [-1])


class FirstRowOnly(SmallConvCTC):
    # Rank 2 as asked, but one row whatever the batch: only the values show it.
    def __init__(self, **kwargs):
        SmallConvCTC.__init__(self, **kwargs)
        self.predict = self.predict[:1]


class PairedLogProb(SmallConvCTC):
    # [B, 2] of unknown rank in the graph: only the values show it.
    def __init__(self, **kwargs):
        SmallConvCTC.__init__(self, **kwargs)
        self.log_prob = tf.placeholder_with_default(
            tf.stack([self.log_prob, self.log_prob], 1), shape=None)
"""
EXITS = "import sys\nsys.exit(3)\n"
SEE = "fix the class (see crnn_multigpu.ocr.model_class) or name another with --model-class"


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    """The folder holding the failing classes' module (and one that exits on import), on
    sys.path for this file's tests; yields the imported failing module."""
    import importlib
    import sys
    folder = tmp_path_factory.mktemp("user-modules")
    (folder / (MODULE + ".py")).write_text(FAILING)
    (folder / "exits_on_import_35.py").write_text(EXITS)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(MODULE)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(MODULE, None)


@pytest.fixture(scope="module")
def run(tiny_dataset, tmp_path_factory, modules):
    """A 2-step run of the failing class (nothing failing while it trained) on varying widths:
    its config.json names MODULE:Failing, so the reading tools build that class."""
    out = str(tmp_path_factory.mktemp("hooks") / "run")
    code, _, stderr = run_tool(train.main, [
        "--train", tiny_dataset, "--out", out, "--model-class", MODULE + ":Failing",
        "--width", "0", "--steps", "2", "--batch-size", "8", "--validate-every", "0"])
    assert code == 0, stderr
    return out


@pytest.fixture
def failure(modules):
    """Set which hook of Failing fails, with what: ``failure(hook, exception)``; reset after."""
    def choose(hook, error):
        modules.FAILURE = (hook, error)
    yield choose
    modules.FAILURE = None


def first_image(folder):
    return os.path.join(folder, read_labels(os.path.join(folder, "labels.txt"))[0][0])


def what_it_raised(error):
    """How the message names ``error``: its type and the first line of its text."""
    if isinstance(error, SystemExit):
        return "called sys.exit(%r)" % (error.code,)
    text = str(error).strip()
    return "raised %s%s" % (type(error).__name__, ": " + text.splitlines()[0] if text else "")


class UsersOwnError(Exception):
    """An exception type the tools know nothing about."""


ERRORS = st.sampled_from([KeyError, RuntimeError, TypeError, AttributeError, ZeroDivisionError,
                          AssertionError, NotImplementedError, IndexError, OSError, ImportError,
                          UsersOwnError])
TEXTS = st.text(alphabet=string.ascii_letters + string.digits + " '\n:;()", max_size=40)
EXCEPTIONS = st.one_of(st.builds(lambda kind, text: kind(text), ERRORS, TEXTS),
                       st.builds(SystemExit, st.integers(0, 255)))
# Each example builds and restores a small model (a fraction of a second).
BUILDS = settings(max_examples=12, deadline=None,
                  suppress_health_check=[HealthCheck.function_scoped_fixture])


@BUILDS
@given(st.sampled_from(["__init__", "feed_dict", "check_config"]), EXCEPTIONS)
def test_a_hook_that_raises_anything_is_one_line_naming_class_hook_and_error(
        run, tiny_dataset, failure, hook, error):
    failure(hook, error)
    line = one_error_line(*run_tool(predict.main, ["--checkpoint", run,
                                                   first_image(tiny_dataset)])[::2])
    assert line == "error: model class %s:Failing: its %s %s; %s" % (
        MODULE, hook, what_it_raised(error), SEE)


def test_check_config_refusing_by_contract_names_the_config(run, tiny_dataset, failure):
    """A ValueError is check_config's way to say the recorded arguments are not its class's."""
    failure("check_config", ValueError("model 'depth' must be 3\nsecond line"))
    line = one_error_line(*run_tool(evaluate.main, ["--checkpoint", run, "--data",
                                                    tiny_dataset])[::2])
    assert line == "error: %s: model 'depth' must be 3" % os.path.join(run, "config.json")


@pytest.mark.parametrize("hook, argv", [("__init__", []), ("feed_dict", ["--input", "feed"])])
def test_train_names_the_hook_that_failed(hook, argv, tiny_dataset, tmp_path, failure):
    failure(hook, KeyError("images"))
    code, _, err = run_tool(train.main, ["--train", tiny_dataset, "--out", str(tmp_path / "out"),
                                         "--model-class", MODULE + ":Failing", "--width", "0",
                                         "--steps", "2", "--batch-size", "8"] + argv)
    # (With --input feed the first feed comes after the "training ..." line.)
    lines = [line for line in err.splitlines() if not line.startswith(("INFO ", "training "))]
    assert code == 2 and lines == ["error: model class %s:Failing: its %s raised KeyError: "
                                   "'images'; %s" % (MODULE, hook, SEE)], err
    assert not os.path.exists(str(tmp_path / "out" / "checkpoints" / "checkpoint"))


def with_class(run, tmp_path, name):
    """A copy of ``run`` whose config.json names MODULE:``name`` (same variables)."""
    copy = str(tmp_path / name)
    shutil.copytree(run, copy)
    path = os.path.join(copy, "config.json")
    config = json.load(open(path))
    config["model_class"] = "%s:%s" % (MODULE, name)
    with open(path, "w") as stream:
        json.dump(config, stream)
    return copy


@pytest.mark.parametrize("tool", ["predict", "evaluate", "export"])
def test_an_output_of_the_wrong_rank_in_the_graph_is_refused_when_built(
        tool, run, tiny_dataset, tmp_path):
    copy = with_class(run, tmp_path, "FlatPredict")
    main, argv = {"predict": (predict.main, [first_image(tiny_dataset)]),
                  "evaluate": (evaluate.main, ["--data", tiny_dataset]),
                  "export": (export.main, ["--out", str(tmp_path / "saved")])}[tool]
    line = one_error_line(*run_tool(main, ["--checkpoint", copy] + argv)[::2])
    assert line == ("error: model class %s:FlatPredict: its predict is int32 of shape [None] in "
                    "the graph; the tools need whole numbers of shape [B, L] (class ids padded "
                    "with -1); %s" % (MODULE, SEE))
    assert not os.path.exists(str(tmp_path / "saved"))


@pytest.mark.parametrize("name, message", [
    ("FirstRowOnly", "its predict gave shape [1, {length}] (int32) for a batch of 48 image(s); "
                     "the tools need whole numbers of shape [48, L] (class ids padded with -1)"),
    ("PairedLogProb", "its log_prob gave shape [48, 2] (float32) for a batch of 48 image(s); "
                      "the tools need floats of shape [48] (a log probability per image)"),
])
def test_outputs_of_the_wrong_shape_are_refused_where_first_read(name, message, run,
                                                                   tiny_dataset, tmp_path):
    copy = with_class(run, tmp_path, name)
    line = one_error_line(*run_tool(evaluate.main, ["--checkpoint", copy, "--data",
                                                    tiny_dataset])[::2])
    prefix = "error: model class %s:%s: " % (MODULE, name)
    assert line.startswith(prefix) and line.endswith("; " + SEE), line
    # (How long the one row is depends on what the model reads after 2 steps.)
    got = line[len(prefix):-len("; " + SEE)]
    length = got.split("[1, ")[1].split("]")[0] if name == "FirstRowOnly" else None
    assert got == message.format(length=length)


@pytest.mark.parametrize("tool", ["train", "evaluate", "predict", "export"])
def test_a_module_that_exits_on_import_is_one_line(tool, run, tiny_dataset, tmp_path):
    out = str(tmp_path / "out")
    main, argv = {"train": (train.main, ["--train", tiny_dataset, "--out", out, "--steps", "2"]),
                  "evaluate": (evaluate.main, ["--checkpoint", run, "--data", tiny_dataset]),
                  "predict": (predict.main, ["--checkpoint", run, first_image(tiny_dataset)]),
                  "export": (export.main, ["--checkpoint", run, "--out", out])}[tool]
    code, _, err = run_tool(main, argv + ["--model-class", "exits_on_import_35:Model"])
    assert one_error_line(code, err) == (
        "error: --model-class exits_on_import_35:Model: cannot import module exits_on_import_35 "
        "(it calls sys.exit(3) on import)")
    assert not os.path.exists(out)
