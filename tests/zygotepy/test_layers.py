"""The engine's modules form layers: each imports only modules below it, lazy imports included."""

import ast
from pathlib import Path

import zygotepy

PACKAGE = Path(zygotepy.__file__).parent
#: Bottom to top; a module may import only modules listed before it.
LAYERS = ["_errors", "_caches", "_trace", "_views", "_adjoint_table", "_transform", "_dispatch", "_runtime",
          "_box", "_backward", "_edge", "_reverse", "_forward", "_api", "_adjoint", "_lib", "_explain"]


def _imports(module: str) -> set[str]:
    """The zygotepy modules ``module`` imports anywhere in its source (function bodies too)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "zygotepy":
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zygotepy."):
            found.add(node.module.split(".")[1])  # type: ignore[union-attr]
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("zygotepy.")}
    return found


def test_every_engine_module_has_a_layer():
    modules = {p.stem for p in PACKAGE.glob("_*.py") if p.stem != "__init__"}
    assert modules == set(LAYERS)


def test_each_module_imports_only_modules_below_it():
    upward = {m: sorted(i for i in _imports(m) if LAYERS.index(i) >= LAYERS.index(m))
              for m in LAYERS}
    assert {m: ups for m, ups in upward.items() if ups} == {}


def test_the_rewriter_and_the_runtime_agree_on_the_helpers():
    from zygotepy._runtime import HELPERS
    from zygotepy._transform import HELPER_NAMES

    assert set(HELPERS) == set(HELPER_NAMES)
