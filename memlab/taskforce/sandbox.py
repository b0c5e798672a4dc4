"""A Python expression evaluated in a separate, limited process (the Taskforce ``python`` tool).

Layers, each of which alone stops a different escape:

1. the expression is parsed first: statements, imports and any name or attribute starting
   with ``_`` (the way out of an ``eval`` sandbox, ``().__class__.__base__``) are refused;
2. it runs in a fresh interpreter (``python -I -S``: no site packages, no environment, no
   user folder) in an empty temporary folder, with builtins cut down to pure functions and
   ``math``;
3. the child has resource limits: CPU seconds, address space, no file it may write to, no new
   processes; the parent kills it at the wall-clock ``time_limit_s``. The CPU limit is a
   backstop one second above it; whichever stops the child, the caller gets ``TimeoutError``.

Only the ``repr`` of the value comes back (at most ``MAX_OUTPUT_CHARS``).
"""

from __future__ import annotations

import ast
import math
import signal
import subprocess
import sys
import tempfile

MAX_EXPRESSION_CHARS = 2000
MAX_OUTPUT_CHARS = 4000
MEMORY_BYTES = 512 * 1024 * 1024

CHILD = r"""
import json, math, resource, sys
cpu, memory = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
names = ("abs all any bool chr dict divmod enumerate filter float format frozenset hex int "
         "len list map max min oct ord pow range repr reversed round set sorted str sum tuple "
         "zip True False None").split()
import builtins
safe = {n: getattr(builtins, n) for n in names}
source = sys.stdin.read()
try:
    value = eval(compile(source, "<expression>", "eval"), {"__builtins__": safe, "math": math})
    print(json.dumps({"ok": repr(value)}))
except BaseException as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def check_expression(expression: str) -> None:
    """Refuse what the sandbox must never see (see the module docstring, layer 1).

    Raises:
        ValueError: too long, not one expression, or it names something private.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not one Python expression: {exc.msg}") from None
    for node in ast.walk(tree):
        name = getattr(node, "attr", None) or getattr(node, "id", None) or ""
        if isinstance(node, ast.Attribute | ast.Name) and name.startswith("_"):
            raise ValueError(f"names starting with '_' are not allowed: {name!r}")


CPU_LIMIT_SIGNALS = (-signal.SIGXCPU, -signal.SIGKILL)  # soft, then hard RLIMIT_CPU


def run_python_expression(expression: str, *, time_limit_s: float = 5.0,
                          cpu_limit_s: int | None = None) -> str:
    """The ``repr`` of ``expression``'s value, computed in a limited child process.

    Raises:
        ValueError: refused before running, or the expression raised (its error).
        TimeoutError: no result within ``time_limit_s`` wall-clock seconds, or the child used
            its ``cpu_limit_s`` CPU seconds (default: one more than ``time_limit_s``, rounded up).

    Example:
        >>> run_python_expression("sorted({3, 1, 2})")
        '[1, 2, 3]'
    """
    import json

    check_expression(expression)
    cpu = cpu_limit_s or max(1, math.ceil(time_limit_s) + 1)
    command = [sys.executable, "-I", "-S", "-c", CHILD, str(cpu), str(MEMORY_BYTES)]
    with tempfile.TemporaryDirectory(prefix="memlab-python-") as folder:
        try:
            done = subprocess.run(command, input=expression, capture_output=True, text=True,
                                  timeout=time_limit_s, cwd=folder, env={})
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"no result within {time_limit_s:g} s (time limit)") from None
    if done.returncode in CPU_LIMIT_SIGNALS and not done.stdout.strip():
        raise TimeoutError(f"no result within {cpu} CPU seconds (time limit)")
    try:
        reply = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        reason = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise ValueError(f"the expression stopped the sandbox: {reason[0]}") from None
    if "error" in reply:
        raise ValueError(reply["error"])
    return reply["ok"][:MAX_OUTPUT_CHARS]
