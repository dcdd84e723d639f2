"""The engine's modules form layers: each imports only modules below it, lazy imports included."""

import ast
from pathlib import Path

import zygotepy

PACKAGE = Path(zygotepy.__file__).parent
#: Bottom to top; a module may import only modules listed before it.
LAYERS = ["_errors", "_caches", "_trace", "_views", "_adjoint_table", "_transform", "_dispatch", "_runtime",
          "_backward", "_edge", "_reverse", "_forward", "_api", "_adjoint", "_lib", "_explain"]


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


def _functions_applying_rules() -> dict[str, set[str]]:
    """Per engine module, the functions whose body calls a rule's implementation
    (``rule.impl(...)``, ``table.run(...)``, ``table.apply_rrule(...)``) or hands it to a call."""
    found: dict[str, set[str]] = {}
    for module in LAYERS:
        tree = ast.parse((PACKAGE / f"{module}.py").read_text())
        scopes = [(f"{c.name}.{f.name}", f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                  for f in c.body if isinstance(f, ast.FunctionDef)]
        methods = {id(f) for _, f in scopes}
        scopes += [(f.name, f) for f in ast.walk(tree)
                   if isinstance(f, ast.FunctionDef) and id(f) not in methods]
        for name, fn in scopes:
            for node in ast.walk(fn):
                call = node.func if isinstance(node, ast.Call) else None
                # (a handling entry's impl is the engine's own handler, not a rule; a context's run
                # is contextvars')
                applies = isinstance(call, ast.Attribute) and call.attr in (
                    "impl", "run", "apply_rrule", "apply_frule") and not (
                    isinstance(call.value, ast.Name) and call.value.id == "entry") and not (
                    isinstance(call.value, ast.Call) and ast.unparse(call.value).startswith("contextvars"))
                passed = isinstance(node, ast.Call) and any(
                    isinstance(a, ast.Attribute) and a.attr in ("impl", "run") for a in node.args)
                if applies or passed:
                    found.setdefault(module, set()).add(name)
    return found


def test_each_trace_kind_applies_a_rule_in_one_place():
    """Reverse mode applies every rule (rrule, non-differentiable, legacy adjoint) in
    ``ReverseTrace.process_rule`` and forward mode in ``ForwardTrace.process_rule`` (with the
    two ways it pushes tangents, batched or per direction); the dispatcher and the fast paths
    only classify calls."""
    assert _functions_applying_rules() == {
        "_reverse": {"ReverseTrace.process_rule"},
        "_forward": {"ForwardTrace.process_rule", "_push_batched", "_run_frule"},
    }


def _engine_trees() -> dict[str, ast.Module]:
    return {m: ast.parse((PACKAGE / f"{m}.py").read_text()) for m in LAYERS}


def test_a_class_defines_its_own_methods():
    """No engine module installs behaviour on a class from outside its body (``setattr(Box, ...)``,
    ``Box.__call__ = ...``): a reader finds what a traced value does in the ``Box`` class."""
    installed = []
    for module, tree in _engine_trees().items():
        classes = {c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                    and isinstance(node.args[0], ast.Name) and node.args[0].id[:1].isupper()):
                installed.append(f"{module}: {ast.unparse(node)}")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id[:1].isupper() and target.value.id not in classes):
                        installed.append(f"{module}: {ast.unparse(node)}")
    assert installed == []


def test_no_function_takes_the_dispatcher_as_a_parameter():
    """Modules below the dispatcher reach it through the innermost trace (``_trace.dispatch``),
    not through a ``call`` argument their callers hand in to dodge an import."""
    taking = [f"{module}.{fn.name}" for module, tree in _engine_trees().items() for fn in ast.walk(tree)
              if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              and any(a.arg == "call" for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs))]
    assert taking == []


def test_a_box_behaves_through_its_class_body():
    """Every behaviour of a traced value is a method of ``Box`` itself (operators, NumPy's
    protocols, attributes, calls), and works on a box of a nested differentiation."""
    import numpy as np

    import zygotepy as zp
    from zygotepy._trace import Box

    for name in ("__add__", "__rmatmul__", "__neg__", "__array_ufunc__", "__array_function__", "__getattr__",
                 "__call__", "__hash__", "__deepcopy__", "__float__"):
        assert name in vars(Box), name

    def f(x):
        y = zp.gradient(lambda z: np.sum(np.sin(z) * z.T @ z), x)[0]  # operators, ufunc, attribute
        return np.sum(y * y)

    x = np.array([0.3, -0.7])
    (g,) = zp.gradient(f, x)
    eps = 1e-6
    fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(2)]
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-7)
