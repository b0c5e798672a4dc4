"""Tools the Taskforce ReAct agent can call (seed 004), all offline and side-effect bounded.

A :class:`Tool` takes a dict of arguments and returns an :class:`ExecutionResult`; it never
raises for a bad call (the error is the observation the agent learns from). ``TOOLS`` maps a
name to a tool class; a :class:`Toolbox` holds the instances one session may use. Each tool's
``action`` says which seed Action it is: a ``tool_call`` (calculator, python, file_read,
file_write, search_documents, text_search), ``ask_user`` or ``complete`` (finish).
"""

from __future__ import annotations

import ast
import math
import operator
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlab.errors import ConfigError
from memlab.models.retrieval import RetrievedChunk
from memlab.models.taskforce import ActionType, ExecutionResult
from memlab.registry import Registry
from memlab.taskforce.sandbox import run_python_expression


class Tool(ABC):
    """One action the agent can take.

    Attributes:
        name: the action name the LLM writes.
        description: one line the planner and the ReAct prompt show the LLM.
        parameters: argument name -> short description.
        max_chars: argument name -> the longest value the model may write (schema maxLength).
        action: the seed Action type a call of this tool is.
        idempotent: running it twice with the same arguments leaves the same state (a call
            interrupted by a crash may be replayed on resume).
    """

    name: str = "tool"
    description: str = ""
    parameters: dict[str, str] = {}
    max_chars: dict[str, int] = {}
    action: ActionType = ActionType.TOOL_CALL
    idempotent: bool = True

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
    description = ("evaluate an arithmetic expression written with the mission's numbers "
                   "(+ - * / ** and sqrt, log, round...); p percent of x is x * p / 100; "
                   "no ranges or lists (python has those)")
    parameters = {"expression": "the arithmetic expression"}
    max_chars = {"expression": 200}

    def _run(self, expression: str) -> float | int:
        return safe_eval(str(expression))


class PythonTool(Tool):
    """A Python expression evaluated in a separate, limited process (:mod:`.sandbox`)."""

    name = "python"
    description = ("evaluate one Python expression (no imports, no files): sums over ranges, "
                   "lists, strings, sorted, len, comprehensions")
    parameters = {"expression": "the Python expression"}
    max_chars = {"expression": 300}

    def __init__(self, time_limit_s: float = 5.0):
        self.time_limit_s = time_limit_s

    def _run(self, expression: str) -> str:
        return run_python_expression(str(expression), time_limit_s=self.time_limit_s)


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
LISTED_FILES = 20


class FileReadTool(_SandboxTool):
    name = "file_read"
    description = ("read a file of the workspace folder by the file name the mission gives "
                   "(not for searching the documents)")
    parameters = {"path": "file path relative to the workspace"}
    max_chars = {"path": 120}

    def _run(self, path: str) -> str:
        target = self.resolve(path)
        if not target.is_file():  # name the files there are: small models guess paths
            present = sorted(str(f.relative_to(self.sandbox)) for f in self.sandbox.rglob("*")
                             if f.is_file())[:LISTED_FILES]
            raise FileNotFoundError(f"no file {path!r} in the workspace; its files: "
                                    + (", ".join(present) or "none"))
        return target.read_text(encoding="utf-8")[:MAX_FILE_CHARS]


class FileWriteTool(_SandboxTool):
    name = "file_write"
    description = ("write (overwrite) a text file in the workspace folder, with text the "
                   "mission gives or an earlier step's result (a file read before it)")
    parameters = {"path": "file path relative to the workspace", "content": "the text to write"}
    max_chars = {"path": 120, "content": 1000}

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
    max_chars = {"query": 120}
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


Retrieve = Callable[[str], list[RetrievedChunk]]
AskUser = Callable[[str], str]
SEARCH_HIT_CHARS = 400


class DocumentSearchTool(Tool):
    """Search over documents ingested into document QA (seed 001), by meaning; no web."""

    name = "search_documents"
    description = ("search the ingested documents: the passages that answer a question (for "
                   "questions about what the documents say)")
    parameters = {"query": "what to look for, as a question or keywords"}
    max_chars = {"query": 200}

    def __init__(self, retrieve: Retrieve, k: int = 3):
        self.retrieve, self.k = retrieve, k

    def _run(self, query: str) -> list[str]:
        if not str(query).strip():
            raise ValueError("query must not be empty")
        return [f"[{c.source_document}{_page(c)}, similarity {c.similarity_score:.2f}] "
                f"{c.content[:SEARCH_HIT_CHARS]}" for c in self.retrieve(str(query))[: self.k]]


def _page(chunk: RetrievedChunk) -> str:
    return f" p.{chunk.page_number}" if chunk.page_number is not None else ""


class AskUserTool(Tool):
    """Ask the user a question (seed action ``ask_user``); the answer is the observation."""

    name = "ask_user"
    description = "ask the user a question when the mission leaves something undecided"
    parameters = {"question": "the question"}
    max_chars = {"question": 200}
    action = ActionType.ASK_USER
    idempotent = False  # a person answers: never replayed without asking again

    def __init__(self, ask: AskUser | None = None):
        self.ask = ask

    def _run(self, question: str) -> str:
        if self.ask is None:
            raise RuntimeError("no user is available; decide without asking")
        return self.ask(str(question))


class FinishTool(Tool):
    """End the current step with its result (seed action ``complete``)."""

    name = "finish"
    description = ("the current step is done: give its result itself (the number or the "
                   "text, as the results show it; not a description of it)")
    parameters = {"answer": "the step's result itself"}
    max_chars = {"answer": 300}
    action = ActionType.COMPLETE

    def _run(self, answer: str) -> str:
        return str(answer)


TOOLS: Registry[Tool] = Registry("tool")
TOOLS.register("calculator", CalculatorTool, "arithmetic by AST walk, no eval")
TOOLS.register("python", PythonTool, "a Python expression in a limited subprocess")
TOOLS.register("file_read", FileReadTool, "read a file inside the workspace")
TOOLS.register("file_write", FileWriteTool, "write a file inside the workspace")
TOOLS.register("text_search", TextSearchTool, "find lines in the workspace's text files")
TOOLS.register("search_documents", DocumentSearchTool, "search documents ingested by docqa")
TOOLS.register("ask_user", AskUserTool, "ask the user (seed action ask_user)")
TOOLS.register("finish", FinishTool, "finish the current step (seed action complete)")


class Toolbox:
    """The tools one session may use, by name."""

    def __init__(self, tools: list[Tool]):
        self.tools = {tool.name: tool for tool in tools}

    @classmethod
    def default(cls, workspace: str | Path, *, retrieve: Retrieve | None = None,
                ask: AskUser | None = None) -> Toolbox:
        """Calculator, python, file read/write in ``workspace``, a search (over documents
        ingested by docqa when ``retrieve`` is given, else over the workspace's text files),
        ask_user and finish."""
        search = DocumentSearchTool(retrieve) if retrieve else TextSearchTool(workspace)
        return cls([CalculatorTool(), PythonTool(), FileReadTool(workspace),
                    FileWriteTool(workspace), search, AskUserTool(ask), FinishTool()])

    def get(self, name: str) -> Tool:
        if name not in self.tools:
            raise ConfigError(f"action: unknown tool {name!r}; known: {sorted(self.tools)}")
        return self.tools[name]

    def names(self, *actions: ActionType) -> list[str]:
        """Tool names in the order the tools were given (the order prompts show them); only
        those of the given seed ``actions`` when any are given."""
        return [n for n, t in self.tools.items() if not actions or t.action in actions]

    def describe(self, exclude: tuple[str, ...] | list[str] = ()) -> str:
        return "\n".join(self.tools[n].describe() for n in self.names() if n not in exclude)
