"""The Taskforce tools: a safe calculator and sandboxed file/search tools."""

from __future__ import annotations

import math

import pytest

from memlab.errors import ConfigError
from memlab.models.retrieval import RetrievedChunk
from memlab.taskforce.sandbox import run_python_expression
from memlab.taskforce.tools import (
    TOOLS,
    AskUserTool,
    CalculatorTool,
    DocumentSearchTool,
    FinishTool,
    PythonTool,
    Toolbox,
    safe_eval,
)


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


def test_reading_a_missing_file_names_the_files_there_are(tmp_path):
    # small models guess paths ("path/to/document.txt") and retried them until the step limit
    box = Toolbox.default(tmp_path / "sandbox")
    assert "its files: none" in box.get("file_read").run({"path": "path/to/doc.txt"}).error
    box.get("file_write").run({"path": "numbers.txt", "content": "1 2"})
    box.get("file_write").run({"path": "notes/motto.txt", "content": "Small steps"})
    result = box.get("file_read").run({"path": "path/to/doc.txt"})
    assert not result.success
    assert "no file 'path/to/doc.txt'" in result.error
    assert "its files: notes/motto.txt, numbers.txt" in result.error
    outside = box.get("file_read").run({"path": "../numbers.txt"})
    assert "leaves the sandbox" in outside.error and "its files" not in outside.error


def test_text_search_finds_lines_case_insensitively(tmp_path):
    box = Toolbox.default(tmp_path)
    (tmp_path / "a.txt").write_text("Robots walk.\nHumanoid robots balance.\n")
    (tmp_path / "b.md").write_text("nothing here\n")
    (tmp_path / "c.py").write_text("robots = 1\n")  # not a text document
    hits = box.get("text_search").run({"query": "ROBOTS"}).output
    assert hits == ["a.txt:1: Robots walk.", "a.txt:2: Humanoid robots balance."]
    assert not box.get("text_search").run({"query": "  "}).success


def test_registry_and_toolbox():
    assert TOOLS.names() == ["calculator", "python", "file_read", "file_write", "text_search",
                             "search_documents", "ask_user", "finish"]
    assert isinstance(TOOLS.create("calculator"), CalculatorTool)
    box = Toolbox([CalculatorTool()])
    assert "calculator(expression" in box.describe()
    with pytest.raises(ConfigError, match="unknown tool 'nope'"):
        box.get("nope")


def test_default_toolbox_has_the_six_tools_and_their_seed_actions(tmp_path):
    box = Toolbox.default(tmp_path, retrieve=lambda q: [])
    assert box.names() == ["calculator", "python", "file_read", "file_write",
                           "search_documents", "ask_user", "finish"]
    assert {n: box.get(n).action.value for n in ("calculator", "ask_user", "finish")} == {
        "calculator": "tool_call", "ask_user": "ask_user", "finish": "complete"}
    assert "text_search" in Toolbox.default(tmp_path).names()  # no documents: workspace search


@pytest.mark.parametrize("expression, expected", [
    ("sorted([3, 1, 2])", "[1, 2, 3]"), ("sum(x * x for x in range(4))", "14"),
    ("'-'.join(['a', 'b'])", "'a-b'"), ("math.floor(2.7)", "2"),
])
def test_python_tool_evaluates_expressions_in_a_subprocess(expression, expected):
    assert PythonTool().run({"expression": expression}).output == expected


@pytest.mark.parametrize("expression, error", [
    ("().__class__.__base__", "names starting with '_'"), ("__import__('os')", "'_'"),
    ("open('x', 'w')", "NameError"), ("import os", "not one Python expression"),
    ("[0] * 10 ** 10", "MemoryError"), ("1 / 0", "ZeroDivisionError"),
])
def test_python_tool_refuses_or_contains_what_it_must(expression, error):
    result = PythonTool().run({"expression": expression})
    assert not result.success and error in result.error


def test_the_cpu_limit_stops_the_child_as_a_time_limit_too():
    # CI: on a fast machine the CPU rlimit killed the child before the wall-clock limit and
    # the tool reported "the expression stopped the sandbox: exit status -9"
    with pytest.raises(TimeoutError, match="1 CPU seconds"):
        run_python_expression("sum(range(10 ** 12))", time_limit_s=60, cpu_limit_s=1)


def test_python_tool_has_a_time_limit():
    result = PythonTool(time_limit_s=1).run({"expression": "sum(range(10 ** 12))"})
    assert not result.success and "TimeoutError" in result.error
    assert result.duration_ms < 5000


def test_search_documents_quotes_source_page_and_similarity():
    chunk = RetrievedChunk(content="An inertial measurement unit sits in the pelvis.",
                           source_document="book.md", page_number=2, similarity_score=0.61)
    asked = []
    tool = DocumentSearchTool(lambda q: asked.append(q) or [chunk])
    out = tool.run({"query": "where is the IMU?"}).output
    assert asked == ["where is the IMU?"]
    assert out == ["[book.md p.2, similarity 0.61] An inertial measurement unit sits in the "
                   "pelvis."]
    assert not tool.run({"query": " "}).success


def test_ask_user_and_finish(tmp_path):
    assert AskUserTool(lambda q: f"answer to {q}").run({"question": "why?"}).output == \
        "answer to why?"
    assert "no user is available" in AskUserTool().run({"question": "why?"}).error
    assert FinishTool().run({"answer": "36"}).output == "36"


@pytest.mark.parametrize("module", ["memlab.taskforce.tools", "memlab.taskforce.planner",
                                    "memlab.taskforce.sandbox"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
