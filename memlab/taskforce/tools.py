"""Tools the Taskforce ReAct agent can call (seed 004), all offline and side-effect bounded.

A :class:`Tool` takes a dict of arguments and returns an :class:`ExecutionResult`; it never
raises for a bad call (the error is the observation the agent learns from). ``TOOLS`` maps a
name to a tool class; a :class:`Toolbox` holds the instances one session may use.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.models.taskforce import ExecutionResult
from memlab.registry import Registry


class Tool(ABC):
    """One action the agent can take.

    Attributes:
        name: the action name the LLM writes.
        description: one line the planner and the ReAct prompt show the LLM.
        parameters: argument name -> short description.
    """

    name: str = "tool"
    description: str = ""
    parameters: dict[str, str] = {}

    def run(self, arguments: dict[str, Any]) -> ExecutionResult:
        """Execute with ``arguments``; failures become ``success=False`` with the error text."""
        start = time.perf_counter()
        try:
            missing = [p for p in self.parameters if p not in arguments]
            if missing:
                raise ValueError(f"{self.name}: missing argument(s) {missing}")
            output = self._run(**{k: arguments[k] for k in self.parameters})
            return ExecutionResult(success=True, output=output,
                                   duration_ms=(time.perf_counter() - start) * 1000)
        except Exception as exc:  # noqa: BLE001 - a tool error is an observation, not a crash
            return ExecutionResult(success=False, error=f"{type(exc).__name__}: {exc}",
                                   duration_ms=(time.perf_counter() - start) * 1000)

    @abstractmethod
    def _run(self, **arguments: Any) -> Any:
        """Do the work; may raise."""

    def describe(self) -> str:
        args = ", ".join(f"{k}: {v}" for k, v in self.parameters.items())
        return f"{self.name}({args}) - {self.description}"


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sqrt": math.sqrt, "abs": abs, "round": round, "min": min, "max": max,
              "log": math.log, "exp": math.exp, "sin": math.sin, "cos": math.cos,
              "tan": math.tan, "floor": math.floor, "ceil": math.ceil}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1000
MAX_EXPRESSION_CHARS = 500


def safe_eval(expression: str) -> float | int:
    """Evaluate arithmetic by walking its AST: numbers, + - * / // % **, a few math functions.

    Example:
        >>> safe_eval("2 * (3 + 4) ** 2 - sqrt(16)")
        94.0
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    return _eval(ast.parse(expression.strip(), mode="eval").body)


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right} too large (limit {MAX_EXPONENT})")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCTIONS and not node.keywords):
        return _FUNCTIONS[node.func.id](*[_eval(a) for a in node.args])
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:60]}")


class CalculatorTool(Tool):
    name = "calculator"
    description = "evaluate an arithmetic expression, e.g. '(12 + 30) * 2' or 'sqrt(2)'"
    parameters = {"expression": "the arithmetic expression"}

    def _run(self, expression: str) -> float | int:
        return safe_eval(str(expression))


class _SandboxTool(Tool):
    """Base of the file tools: every path is resolved inside ``sandbox`` and may not leave it."""

    def __init__(self, sandbox: str | Path):
        self.sandbox = Path(sandbox).resolve()
        self.sandbox.mkdir(parents=True, exist_ok=True)

    def resolve(self, relative: str) -> Path:
        path = (self.sandbox / str(relative)).resolve()
        if not path.is_relative_to(self.sandbox):
            raise PermissionError(f"path {relative!r} leaves the sandbox")
        return path


MAX_FILE_CHARS = 100_000


class FileReadTool(_SandboxTool):
    name = "file_read"
    description = "read a text file from the sandbox folder"
    parameters = {"path": "file path relative to the sandbox"}

    def _run(self, path: str) -> str:
        return self.resolve(path).read_text(encoding="utf-8")[:MAX_FILE_CHARS]


class FileWriteTool(_SandboxTool):
    name = "file_write"
    description = "write (overwrite) a text file in the sandbox folder"
    parameters = {"path": "file path relative to the sandbox", "content": "the text to write"}

    def _run(self, path: str, content: str) -> str:
        if len(content) > MAX_FILE_CHARS:
            raise ValueError(f"content longer than {MAX_FILE_CHARS} characters")
        target = self.resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"


class TextSearchTool(_SandboxTool):
    name = "text_search"
    description = "find lines containing a phrase (case-insensitive) in .txt/.md files"
    parameters = {"query": "the phrase to look for"}
    max_hits = 20

    def _run(self, query: str) -> list[str]:
        needle = str(query).lower().strip()
        if not needle:
            raise ValueError("query must not be empty")
        hits = []
        for file in sorted(self.sandbox.rglob("*")):
            if file.suffix not in (".txt", ".md") or not file.is_file():
                continue
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                if needle in line.lower():
                    hits.append(f"{file.relative_to(self.sandbox)}:{number}: {line.strip()}")
                    if len(hits) >= self.max_hits:
                        return hits
        return hits


TOOLS: Registry[Tool] = Registry("tool")
TOOLS.register("calculator", CalculatorTool)
TOOLS.register("file_read", FileReadTool)
TOOLS.register("file_write", FileWriteTool)
TOOLS.register("text_search", TextSearchTool)


class Toolbox:
    """The tools one session may use, by name."""

    def __init__(self, tools: list[Tool]):
        self.tools = {tool.name: tool for tool in tools}

    @classmethod
    def default(cls, sandbox: str | Path) -> Toolbox:
        """Calculator plus the sandboxed file and search tools."""
        return cls([CalculatorTool(), FileReadTool(sandbox), FileWriteTool(sandbox),
                    TextSearchTool(sandbox)])

    def get(self, name: str) -> Tool:
        if name not in self.tools:
            raise ConfigError(f"action: unknown tool {name!r}; known: {sorted(self.tools)}")
        return self.tools[name]

    def names(self) -> list[str]:
        return sorted(self.tools)

    def describe(self) -> str:
        return "\n".join(self.tools[n].describe() for n in self.names())
