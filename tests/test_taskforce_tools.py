"""The Taskforce tools: a safe calculator and sandboxed file/search tools."""

from __future__ import annotations

import math

import pytest

from memlab.errors import ConfigError
from memlab.taskforce.tools import TOOLS, CalculatorTool, Toolbox, safe_eval


@pytest.mark.parametrize("expression, expected", [
    ("12 * 3", 36), ("(1 + 2) ** 3 - 4 / 2", 25.0), ("-7 // 2", -4), ("17 % 5", 2),
    ("sqrt(16) + abs(-2)", 6.0), ("round(pi, 3)", 3.142), ("max(1, 5, 3)", 5),
    ("log(e)", 1.0),
])
def test_calculator_evaluates_arithmetic(expression, expected):
    assert safe_eval(expression) == pytest.approx(expected)


@pytest.mark.parametrize("expression", [
    "__import__('os').system('true')", "open('x')", "(1).__class__", "[1, 2]", "x + 1",
    "'a' * 3", "lambda: 1", "2 ** 10000", "sqrt(x=4)",
])
def test_calculator_rejects_anything_but_arithmetic(expression):
    result = CalculatorTool().run({"expression": expression})
    assert not result.success and result.error
    assert result.duration_ms >= 0


def test_calculator_errors_become_failed_results_not_exceptions():
    assert "ZeroDivisionError" in CalculatorTool().run({"expression": "1 / 0"}).error
    assert "missing argument" in CalculatorTool().run({}).error
    assert math.isclose(CalculatorTool().run({"expression": "2 ** 0.5"}).output, 2 ** 0.5)


def test_file_tools_stay_inside_the_sandbox(tmp_path):
    box = Toolbox.default(tmp_path / "sandbox")
    wrote = box.get("file_write").run({"path": "notes/a.md", "content": "Alpha line\nbeta"})
    assert wrote.success
    assert box.get("file_read").run({"path": "notes/a.md"}).output == "Alpha line\nbeta"
    (tmp_path / "secret.txt").write_text("top secret")
    for tool, args in [("file_read", {"path": "../secret.txt"}),
                       ("file_write", {"path": "../../evil.txt", "content": "x"}),
                       ("file_read", {"path": str(tmp_path / "secret.txt")})]:
        result = box.get(tool).run(args)
        assert not result.success and "leaves the sandbox" in result.error
    assert not (tmp_path.parent / "evil.txt").exists()


def test_text_search_finds_lines_case_insensitively(tmp_path):
    box = Toolbox.default(tmp_path)
    (tmp_path / "a.txt").write_text("Robots walk.\nHumanoid robots balance.\n")
    (tmp_path / "b.md").write_text("nothing here\n")
    (tmp_path / "c.py").write_text("robots = 1\n")  # not a text document
    hits = box.get("text_search").run({"query": "ROBOTS"}).output
    assert hits == ["a.txt:1: Robots walk.", "a.txt:2: Humanoid robots balance."]
    assert not box.get("text_search").run({"query": "  "}).success


def test_registry_and_toolbox():
    assert TOOLS.names() == ["calculator", "file_read", "file_write", "text_search"]
    assert isinstance(TOOLS.create("calculator"), CalculatorTool)
    box = Toolbox([CalculatorTool()])
    assert "calculator(expression" in box.describe()
    with pytest.raises(ConfigError, match="unknown tool 'nope'"):
        box.get("nope")


@pytest.mark.parametrize("module", ["memlab.taskforce.tools", "memlab.taskforce.planner"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
