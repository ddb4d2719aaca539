"""The README's API examples run as printed."""
import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks():
    blocks = re.findall(r"```python\n(.*?)```", open(README).read(), re.S)
    assert blocks, "README has no python example"
    return blocks


def test_readme_api_example_runs(capsys):
    exec(compile(python_blocks()[0], "README.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out.startswith("loss ")


def test_readme_function_style_example_runs(capsys):
    blocks = [b for b in python_blocks() if "MultiGpuModel.from_function(" in b]
    assert len(blocks) == 1, "README should show the function style once"
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_function_style"})
    out = capsys.readouterr().out
    assert re.match(r"loss \d+\.\d+, accuracy (0\.9[5-9]\d|1\.000)$", out.strip()), out
