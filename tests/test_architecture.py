"""The tree shows the architecture: the wrapper a user imports stands on its own."""
import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "crnn_multigpu")
# What each part may import of the package besides itself: its floors below. compat (the one
# TensorFlow import) and files (files written whole) are the ground floor, importing nothing.
ALLOWED = {
    "wrapper": {"compat"},
    "runtime": {"compat", "files", "wrapper"},
    "ocr": {"compat", "files", "wrapper", "runtime", "datasets"},
}


def package_imports(path):
    """The parts of crnn_multigpu (first component after it) that the file at ``path`` imports."""
    parts = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            pieces = name.split(".")
            if pieces[0] == "crnn_multigpu" and len(pieces) > 1:
                parts.add(pieces[1])
    return parts


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_part_imports_only_the_floors_below_it(part):
    folder = os.path.join(PACKAGE, part)
    sources = [name for name in os.listdir(folder) if name.endswith(".py")]
    assert len(sources) > 2
    for name in sources:
        beyond = package_imports(os.path.join(folder, name)) - ALLOWED[part] - {part}
        assert not beyond, "%s/%s imports crnn_multigpu.%s" % (part, name, ", ".join(beyond))


def test_the_top_level_names_still_import():
    import crnn_multigpu
    for name in crnn_multigpu.__all__:
        assert getattr(crnn_multigpu, name) is not None, name


# The tools are thin (issue 36): every function of cli/ fits on a screen, its body (docstring
# included) at most this many lines.
MAX_TOOL_FUNCTION_LINES = 40


def function_lengths(path):
    """``(name, line of its def, lines of its body)`` of every function in the file at ``path``.
    The body ends before the next line that is not blank and indented no deeper than the def
    (Python 3.7's ast gives no end line)."""
    lines = open(path, encoding="utf-8").read().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0].lineno  # 1-based
        end = first
        for number in range(first + 1, len(lines) + 1):
            text = lines[number - 1]
            if text.strip() and len(text) - len(text.lstrip()) <= node.col_offset:
                break
            if text.strip():
                end = number
        found.append((node.name, node.lineno, end - first + 1))
    return found


def test_no_function_of_the_tools_is_longer_than_a_screen():
    folder = os.path.join(PACKAGE, "cli")
    sources = sorted(name for name in os.listdir(folder) if name.endswith(".py"))
    assert len(sources) > 5
    long = ["cli/%s:%d %s, %d lines" % (name, line, function, length) for name in sources
            for function, line, length in function_lengths(os.path.join(folder, name))
            if length > MAX_TOOL_FUNCTION_LINES]
    assert not long, "longer than %d lines: split into named steps: %s" % (
        MAX_TOOL_FUNCTION_LINES, "; ".join(long))
