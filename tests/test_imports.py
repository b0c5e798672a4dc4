"""memlab's modules import one another without a cycle (issue 43, item 6).

The graph is read from the source with ``ast``: an ``import`` anywhere in a module counts, at its
top or inside a function (an import moved into a function hides a cycle from Python, not from
the reader), except under ``if TYPE_CHECKING:``. ``from package import name`` is an edge to the
submodule when ``name`` is one, else to the package. Importing a module also runs its parent
packages' ``__init__``; that is not counted as an edge (every package re-exporting its own
submodules would be a cycle).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memlab

PACKAGE = Path(memlab.__file__).parent


def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_nodes(tree: ast.AST, *, type_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements anywhere in ``tree``; those under ``if TYPE_CHECKING:`` only with
    ``type_only``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not type_only:
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(name: str, path: Path, known: dict[str, Path], *, type_only: bool) -> set[str]:
    """The modules of ``known`` that module ``name`` (at ``path``) imports."""
    targets = []
    for node in import_nodes(ast.parse(path.read_text(encoding="utf-8")), type_only=type_only):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
            continue
        base = node.module or ""
        if node.level:  # relative: from the module's package, one level up per extra dot
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}".rstrip(".")
        targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                    for a in node.names]
    found = set()
    for target in targets:
        while target and target not in known:  # memlab.x.Thing -> memlab.x; outside: ""
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph(package: Path, *, type_only: bool = False) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports."""
    known = modules(package)
    return {name: imported(name, path, known, type_only=type_only)
            for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its first module repeated at the end), or None."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return None
        for nxt in sorted(graph[name]):
            if cycle := visit(nxt, [*path, name]):
                return cycle
        done.add(name)
        return None

    return next((c for name in sorted(graph) if (c := visit(name, []))), None)


def test_memlabs_modules_import_one_another_without_a_cycle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 100 and graph["memlab.cli"]  # the graph was read, not left empty
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_type_only_imports_close_no_cycle_either():
    """An annotation's ``if TYPE_CHECKING:`` import is not run, but a cycle through one still
    ties two modules both ways (the Taskforce session named the agent that runs it, and the
    agent imported the session)."""
    cycle = find_cycle(import_graph(PACKAGE, type_only=True))
    assert cycle is None, "import cycle through a type-only import: " + " -> ".join(cycle)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "pkg"


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    package = write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import run\n",
        "pkg/a.py": "from pkg import sub\n\ndef run():\n    return sub.go()\n",
        "pkg/sub/__init__.py": "from .b import go\n",
        "pkg/sub/b.py": "def go():\n    from ..c import VALUE\n    return VALUE\n",
        "pkg/c.py": "import pkg.a as a\nVALUE = 1\n",
    })
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub"} and graph["pkg.sub"] == {"pkg.sub.b"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub", "pkg.sub.b", "pkg.c", "pkg.a"]


def test_an_import_under_type_checking_is_no_edge_unless_asked(tmp_path):
    package = write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import B\n",
        "pkg/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from pkg.a import A\nelse:\n    from pkg import c\nclass B: ...\n"),
        "pkg/c.py": "",
    })
    graph = import_graph(package)
    assert graph["pkg.b"] == {"pkg.c"} and find_cycle(graph) is None
    assert find_cycle(import_graph(package, type_only=True)) == ["pkg.a", "pkg.b", "pkg.a"]
