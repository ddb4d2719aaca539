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
