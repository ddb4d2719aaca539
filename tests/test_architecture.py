"""The tree shows the architecture: the wrapper a user imports stands on its own."""
import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "crnn_multigpu")
# The floors of the package, lowest first. A module may import its own floor and the floors below,
# never one above (imports inside functions included), so the imports run one way: the wrapper a
# user imports stands on its own, and ocr/ (the product) builds on datasets/ (charsets, images,
# fonts), never the other way. The ground floor is the top-level modules: compat (the one
# TensorFlow import), files (files written whole), lazy (names imported on first use),
# legacy_keras and tflog (compat's helpers).
# __init__ names the public classes of every floor (imported on first use), so it is the top.
FLOORS = [
    {"compat", "files", "lazy", "legacy_keras", "tflog"},
    {"wrapper"},
    {"runtime"},
    {"datasets"},
    {"ocr"},
    {"cli"},
    {"__init__"},
]
FLOOR_OF = {part: number for number, parts in enumerate(FLOORS) for part in parts}


def package_modules():
    """``(part, path inside the package)`` of every module: its folder, or its own name at the top."""
    found = []
    for folder, _, names in os.walk(PACKAGE):
        for name in sorted(names):
            if name.endswith(".py"):
                inside = os.path.relpath(os.path.join(folder, name), PACKAGE).replace(os.sep, "/")
                part = inside.split("/")[0]
                found.append((part[:-3] if part.endswith(".py") else part, inside))
    return found


def package_imports(path):
    """The parts of crnn_multigpu (first component after it) that the module at ``path`` (inside
    the package) imports, anywhere in it; relative imports are resolved against its package."""
    package = ["crnn_multigpu"] + path.split("/")[:-1]
    parts = set()
    source = open(os.path.join(PACKAGE, path), encoding="utf-8").read()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names = [module + "." + alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            pieces = name.split(".")
            if pieces[0] == "crnn_multigpu" and len(pieces) > 1:
                parts.add(pieces[1])
    return parts


def test_every_module_has_a_floor():
    modules = package_modules()
    assert {part for part, _ in modules} >= {"wrapper", "runtime", "datasets", "ocr", "cli"}
    unplaced = sorted(inside for part, inside in modules if part not in FLOOR_OF)
    assert not unplaced, "put these in FLOORS: %s" % ", ".join(unplaced)


@pytest.mark.parametrize("floor", range(len(FLOORS)),
                         ids=["+".join(sorted(parts)) for parts in FLOORS])
def test_each_module_imports_only_its_floor_and_those_below(floor):
    upward = ["%s imports crnn_multigpu.%s" % (inside, above)
              for part, inside in package_modules() if FLOOR_OF.get(part) == floor
              for above in sorted(package_imports(inside))
              if FLOOR_OF.get(above, len(FLOORS)) > floor]
    assert not upward, "an import runs up (floors, lowest first: %s): %s" % (
        " <- ".join("+".join(sorted(parts)) for parts in FLOORS), "; ".join(upward))


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


# cli/ is argparse over the library (issue 53): nothing else imports it, neither the package
# nor the scripts nor the tests' helpers (the tests of the tools do), and argparse's Namespace
# stays in it. The scripts are their own argparse layer over the library (their one-line errors:
# scripts/reports.py).
ROOT = os.path.dirname(PACKAGE)


def imported_modules(path):
    """Every module name the Python file at ``path`` imports, anywhere in it (``from a import
    b`` gives ``a`` and ``a.b``); relative imports are left out (the package's are checked by
    floor above)."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module)
            found.update(node.module + "." + alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def outside_the_tools():
    """``(path from the repository, absolute path)`` of every Python file that is not a tool
    of cli/ nor a test of one: the package's other modules, scripts/, the tests' helpers."""
    files = ["crnn_multigpu/" + inside for part, inside in package_modules() if part != "cli"]
    files += ["scripts/" + name for name in os.listdir(os.path.join(ROOT, "scripts"))
              if name.endswith(".py")]
    files += ["tests/" + name for name in os.listdir(os.path.join(ROOT, "tests"))
              if name.endswith(".py") and not name.startswith("test_")]
    return sorted((name, os.path.join(ROOT, name)) for name in files)


def imports_the_tools(path):
    return any(name == "crnn_multigpu.cli" or name.startswith("crnn_multigpu.cli.")
               for name in imported_modules(path))


def test_nothing_outside_the_tools_imports_them():
    files = outside_the_tools()
    assert any(name == "tests/tiny_runs.py" for name, _ in files) and len(files) > 100
    importing = [name for name, path in files if imports_the_tools(path)]
    assert not importing, "these import crnn_multigpu.cli, the tools: use the library " \
                          "(ocr.TrainingRun, ...) instead: %s" % ", ".join(importing)


def namespace_reads(path):
    """The lines where the file at ``path`` reads an attribute of a name ``args`` (what
    argparse's Namespace is called wherever it travels)."""
    return sorted(set(node.lineno for node in ast.walk(ast.parse(open(path, encoding="utf-8")
                                                                 .read()))
                      if isinstance(node, ast.Attribute) and
                      isinstance(node.value, ast.Name) and node.value.id == "args"))


def test_argparse_stays_in_the_tools():
    """Below cli/ no module imports argparse nor reads a Namespace: the library takes typed
    settings. (Scripts parse their own command lines in their mains.)"""
    library = [(name, path) for name, path in outside_the_tools()
               if not name.startswith("scripts/")]
    assert any(name == "crnn_multigpu/ocr/training.py" for name, _ in library)
    found = ["%s imports argparse" % name for name, path in library
             if "argparse" in imported_modules(path)]
    found += ["%s:%s reads args" % (name, ",".join(map(str, lines)))
              for name, path in library for lines in [namespace_reads(path)] if lines]
    assert not found, "argparse travels below cli/: %s" % "; ".join(found)
    assert namespace_reads(os.path.join(PACKAGE, "cli", "train.py")), "the check sees reads"


def test_the_ocr_front_doors_import():
    from crnn_multigpu import ocr
    for name in ocr.__all__:
        assert getattr(ocr, name) is not None, name
