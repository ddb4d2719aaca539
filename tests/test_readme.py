"""The README and the pages under docs/ stay true: every python block runs as printed, every
make target, tool flag and script they name exists, every link and picture resolves, and the
README's first screen is the front door (what it is, two commands, the wrapper example, one table).

A python block that cannot run on its own (it needs Horovod, a cluster, your model) starts with
``# not run: <why>``; such blocks are still compiled and their ``crnn_multigpu`` imports resolved,
and there may be at most MAX_NOT_RUN of them.
"""
import ast
import glob
import importlib
import io
import os
import re
import shlex

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
NOT_RUN = "# not run:"
MAX_NOT_RUN = 3
# The first screen holds the two front doors (the wrapper's example and the OCR's, five lines)
# and the table beside Tesseract.
FIRST_SCREEN = 70
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def read(path):
    with io.open(path, encoding="utf-8") as handle:
        return handle.read()


def relative(path):
    return os.path.relpath(path, ROOT)


def doc_files():
    """The README first, then docs/*.md: the pages whose blocks must run."""
    return [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def linked_files():
    """Pages whose links and pictures are checked (the shipped models' READMEs link in too)."""
    return doc_files() + sorted(glob.glob(os.path.join(ROOT, "models", "*", "README.md")))


class Block(object):
    def __init__(self, path, lang, code, line):
        self.path, self.lang, self.code, self.line = path, lang, code, line

    @property
    def name(self):
        return "%s:%d" % (relative(self.path), self.line)

    @property
    def not_run(self):
        return self.code.lstrip().startswith(NOT_RUN)


def code_blocks(path, lang=None):
    text = read(path)
    blocks = [Block(path, m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1)
              for m in FENCE.finditer(text)]
    return [b for b in blocks if lang is None or b.lang == lang]


def python_blocks():
    return [b for path in doc_files() for b in code_blocks(path, "python")]


def sh_blocks():
    return [b for path in doc_files() for b in code_blocks(path, "sh")]


def without_code_blocks(text):
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


# ------------------------------------------------------------------ python blocks

def is_readme_example(block):
    first = python_blocks()[0]
    return (block.path, block.line) == (first.path, first.line)


def is_ocr_example(block):
    """The README's Python OCR example: it reads ``scan.png``, which the test draws."""
    return block.path == README and "ocr.Reader(" in block.code


OCR_LINES = ["The front door reads", "this page from Python."]


def draw_scan(folder):
    """``scan.png`` for the OCR example: two lines in DejaVu Serif."""
    from PIL import Image, ImageDraw
    from crnn_multigpu.datasets import load_font
    page = Image.new("L", (700, 200), 255)
    font = load_font("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", 28)
    for row, text in enumerate(OCR_LINES):
        ImageDraw.Draw(page).text((40, 40 + 60 * row), text, fill=0, font=font)
    page.save(os.path.join(str(folder), "scan.png"))


def is_function_style(block):
    return "MultiGpuModel.from_function(" in block.code


def check_output(block, out):
    """What the two examples the README promises print."""
    if is_readme_example(block):
        match = re.match(r"loss (\d+\.\d+)", out)
        assert match, out
        assert float(match.group(1)) < 1e-4, out
    if is_function_style(block):
        assert re.match(r"loss \d+\.\d+, accuracy (0\.9[5-9]\d|1\.000)$", out.strip()), out
    if is_ocr_example(block):
        text, box = out.rsplit("\n", 2)[:2]
        assert text.splitlines()[:2] == OCR_LINES, out
        x0, y0, x1, y1 = ast.literal_eval(box)
        assert 36 <= x0 <= 44 and 36 <= y0 <= 52 and x1 > 300 and y1 < 100, box


def run_block(block, tmp_path, monkeypatch):
    from crnn_multigpu.compat import tf
    monkeypatch.chdir(str(tmp_path))
    if is_ocr_example(block):
        draw_scan(tmp_path)
    with tf.Graph().as_default():
        exec(compile(block.code, block.name, "exec"), {"__name__": "doc_block"})


@pytest.mark.parametrize("block", [b for b in python_blocks() if not b.not_run],
                         ids=lambda b: b.name)
def test_python_block_runs(block, tmp_path, monkeypatch, capsys):
    run_block(block, tmp_path, monkeypatch)
    check_output(block, capsys.readouterr().out)


def test_readme_opens_with_the_wrapper_example():
    first = python_blocks()[0]
    assert first.path == README and not first.not_run
    for needle in ("MultiGpuModel(", "sess.run(wrapper.objective, wrapper.feed_dict("):
        assert needle in first.code, needle


def test_the_function_style_is_shown_once():
    blocks = [b for b in python_blocks() if is_function_style(b)]
    assert len(blocks) == 1, "README.md and docs/ should show the function style once: %s" % (
        [b.name for b in blocks])
    assert not blocks[0].not_run


def test_blocks_not_run_are_few_say_why_and_import_what_exists():
    blocks = [b for b in python_blocks() if b.not_run]
    assert len(blocks) <= MAX_NOT_RUN, [b.name for b in blocks]
    for block in blocks:
        reason = block.code.lstrip().splitlines()[0][len(NOT_RUN):].strip()
        assert len(reason) >= 10, "%s: say why it is not run" % block.name
        tree = ast.parse(block.code, block.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [(node.module, alias.name) for alias in node.names]
            else:
                continue
            for module, name in modules:
                if not module.startswith("crnn_multigpu"):
                    continue
                imported = importlib.import_module(module)
                if name is not None and not hasattr(imported, name):
                    importlib.import_module(module + "." + name)  # a submodule, or ImportError


# ------------------------------------------------------------------ the first screen

def test_readme_first_screen_is_the_front_door():
    lines = read(README).splitlines()
    screen = "\n".join(lines[:FIRST_SCREEN])
    assert "```sh\nmake train" in screen and "\nmake test" in screen
    first = python_blocks()[0]
    assert first.line + first.code.count("\n") < FIRST_SCREEN
    ocr_example = [block for block in python_blocks() if is_ocr_example(block)]
    assert len(ocr_example) == 1 and ocr_example[0].code.count("\n") <= 6
    assert ocr_example[0].line + ocr_example[0].code.count("\n") < FIRST_SCREEN
    assert re.search(r"^\|[^\n]*Tesseract[^\n]*\|$", screen, re.M), "the table beside Tesseract"
    assert screen.count("\n|---") == 1, "one table on the first screen"
    row = next(i for i, line in enumerate(lines) if line.startswith("|---"))
    while row + 1 < len(lines) and lines[row + 1].startswith("|"):
        row += 1
    assert row < FIRST_SCREEN, "the whole table on the first screen"
    assert "docs/accuracy.md" in screen, "the table names where its material and date are"


# ------------------------------------------------------------------ commands

def makefile_targets():
    targets = set()
    for line in read(os.path.join(ROOT, "Makefile")).splitlines():
        match = re.match(r"^([A-Za-z0-9_.$()/ -]+?)\s*:(?!=)", line)
        if match and not line.startswith("\t"):
            targets.update(match.group(1).split())
    return targets


def shell_commands(text):
    """Simple commands of a shell text: continuations joined, comments dropped, split at
    ;, &&, || and |. Each command is a list of words."""
    text = text.replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        command = []
        for word in words:
            if word in (";", "&&", "||", "|", "&"):
                commands.append(command)
                command = []
            else:
                command.append(word)
        commands.append(command)
    return [c for c in commands if c]


def without_assignments(command):
    while command and re.match(r"^[A-Z_][A-Z0-9_]*=", command[0]):
        command = command[1:]
    return command


def make_targets_named(text):
    named = []
    for command in shell_commands(text):
        command = without_assignments(command)
        if not command or command[0] != "make":
            continue
        for word in command[1:]:
            if word.startswith((">", "<", "2>")):
                break
            if word.startswith("-") or "=" in word:
                continue
            named.append(word)
    return named


def inline_make_commands(path):
    return [span for span in re.findall(r"`([^`\n]+)`", without_code_blocks(read(path)))
            if span.startswith("make ")]


def test_make_targets_named_in_the_docs_exist():
    targets = makefile_targets()
    assert {"train", "test", "train-lines", "compare"} <= targets, sorted(targets)
    named = {}
    for block in sh_blocks():
        for name in make_targets_named(block.code):
            named.setdefault(name, block.name)
    for path in doc_files():
        for span in inline_make_commands(path):
            for name in make_targets_named(span):
                named.setdefault(name, relative(path))
    assert {"train", "test"} <= set(named)
    missing = {name: where for name, where in named.items() if name not in targets}
    assert not missing, "make targets named in the docs but not in the Makefile: %s" % missing


def console_scripts():
    section = read(os.path.join(ROOT, "pyproject.toml")).split("[project.scripts]", 1)[1]
    section = section.split("\n[", 1)[0]
    return dict(re.findall(r'^([\w-]+)\s*=\s*"([\w.]+):\w+"', section, re.M))


def tool_of(command, scripts):
    """The cli module a command runs, or None."""
    command = without_assignments(command)
    if command and command[0] in scripts:
        return command[0], scripts[command[0]]
    for i, word in enumerate(command[:-1]):
        if word == "-m" and command[i + 1].startswith("crnn_multigpu.cli."):
            return command[i + 1], command[i + 1]
    return None


def test_tools_and_flags_named_in_the_docs_exist():
    """Every crnn-* command (and python -m crnn_multigpu.cli.X) in a sh block of the README and
    docs/ is a console script, and each of its --flags is one its parser knows."""
    scripts = console_scripts()
    parsers, unknown, checked = {}, [], 0
    for block in sh_blocks():
        for command in shell_commands(block.code):
            word = without_assignments(command)[:1]
            if word and word[0].startswith("crnn-"):
                assert word[0] in scripts, "%s: no console script %s" % (block.name, word[0])
            tool = tool_of(command, scripts)
            if tool is None:
                continue
            name, module = tool
            if module not in parsers:
                parsers[module] = importlib.import_module(module).build_parser()
            known = parsers[module]._option_string_actions
            for flag in command:
                if flag.startswith("--"):
                    checked += 1
                    if flag.split("=", 1)[0] not in known:
                        unknown.append("%s: %s %s" % (block.name, name, flag))
    assert checked > 20, "no tool commands found in the docs' sh blocks"
    assert not unknown, "flags the tools do not know:\n" + "\n".join(unknown)


# Paths of other repositories that the docs cite (tensorflow/benchmarks keeps its own scripts/).
ELSEWHERE = ("scripts/tf_cnn_benchmarks/",)


def test_scripts_named_in_the_docs_exist():
    missing = []
    for path in doc_files():
        for name in set(re.findall(r"\bscripts/[\w./-]*\w", read(path))):
            if name.startswith(ELSEWHERE):
                continue
            if not os.path.exists(os.path.join(ROOT, name)):
                missing.append("%s: %s" % (relative(path), name))
    assert not missing, missing


# ------------------------------------------------------------------ links and pictures

def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text, flags=re.U).replace(" ", "-")


def anchors(path):
    seen, result = {}, set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", without_code_blocks(read(path)), re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else "%s-%d" % (base, count))
    return result


def links(path):
    text = re.sub(r"`[^`\n]*`", "", without_code_blocks(read(path)))
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)


def test_links_and_pictures_resolve():
    broken = []
    for path in linked_files():
        for target in links(path):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(resolved):
                broken.append("%s: %s (no such file)" % (relative(path), target))
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                broken.append("%s: %s (no such heading)" % (relative(path), target))
    assert not broken, "\n".join(broken)


def test_every_picture_in_docs_is_shown():
    shown = set()
    for path in linked_files():
        for target in links(path):
            shown.add(os.path.normpath(os.path.join(os.path.dirname(path), target)))
    pictures = glob.glob(os.path.join(ROOT, "docs", "*.png"))
    assert pictures
    assert not [relative(p) for p in pictures if p not in shown]
