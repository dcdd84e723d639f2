"""The modules of ``rulescore/`` and ``zygotepy/`` import each other without cycles.

Every import counts, function-level (lazy) ones included: a lazy import hides a cycle from
Python but not from a reader, who then cannot follow the modules bottom-up. Imports under
``if TYPE_CHECKING:`` are left out (they never run). A module importing one of its own parent
packages is not counted either: that package's ``__init__`` has run before the module anyway.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: ``{module: {imported module: line of the first such import}}``
Graph = dict[str, dict[str, int]]


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``packages`` under ``root``."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, at any depth, except in ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.orelse:
                yield from _imports_in(stmt)
            continue
        yield from _imports_in(child)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: `from . import x` in package p.q means p.q.x
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph(found: dict[str, Path]) -> Graph:
    graph: Graph = {m: {} for m in found}
    for module, path in found.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package):
                while target and target not in found:  # `from m import name`: the module m
                    target = target.rpartition(".")[0]
                if target and target != module and not module.startswith(target + "."):
                    graph[module].setdefault(target, node.lineno)
    return graph


def _reachable(graph: Graph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return seen


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles: each set of two or more modules that all reach each other, sorted."""
    reach = {m: _reachable(graph, m) for m in graph}
    out: list[list[str]] = []
    placed: set[str] = set()
    for m in sorted(graph):
        if m not in placed and m in reach[m]:
            component = sorted(n for n in reach[m] if m in reach[n])
            placed.update(component)
            out.append(component)
    return out


def describe(graph: Graph, found: dict[str, Path], component: list[str], root: Path = ROOT) -> str:
    edges = [f"    {m} ({found[m].relative_to(root)}:{line}) imports {t}"
             for m in component for t, line in sorted(graph[m].items()) if t in component]
    return "import cycle among " + ", ".join(component) + ":\n" + "\n".join(edges)


def _cycles_in(package: str) -> str:
    found = modules(ROOT, ("rulescore", "zygotepy"))
    graph = import_graph(found)
    return "\n".join(describe(graph, found, c) for c in cycles(graph)
                     if any(m.split(".")[0] == package for m in c))


def test_rulescore_has_no_import_cycle() -> None:
    problems = _cycles_in("rulescore")
    assert not problems, problems


def test_zygotepy_has_no_import_cycle() -> None:
    problems = _cycles_in("zygotepy")
    assert not problems, problems


def test_the_graph_sees_lazy_and_relative_imports_and_skips_type_checking(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg import a\n")
    (pkg / "a.py").write_text("from . import b\nfrom pkg.c import thing\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import g\n    return g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nimport pkg\n"
                              "if TYPE_CHECKING:\n    from pkg import a\nelse:\n    import os\n")
    found = modules(tmp_path, ("pkg",))
    graph = import_graph(found)
    assert graph["pkg.b"] == {"pkg.a": 2} and "pkg.a" not in graph["pkg.c"]
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    message = describe(graph, found, ["pkg.a", "pkg.b"], tmp_path)
    assert "pkg.b (pkg/b.py:2) imports pkg.a" in message and "pkg.a (pkg/a.py:1) imports pkg.b" in message
