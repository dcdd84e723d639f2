"""One way to write a rule: every family of the library is a literal table of ``rc.RulePair``
entries that name their rule functions directly, registered by the one loop; no rule is reached
by a name string, no family registers any other way, and every registered rule is an entry of
some family's table."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rulescore as rc
from rulescore.rules import FAMILIES
from rulescore.rules._optional import OPTIONAL_FAMILIES

ROOT = Path(__file__).resolve().parents[3]
RULES_DIR = ROOT / "rulescore" / "rules"

#: Every family module: the core families and those of optional modules (SciPy, the stdlib).
ALL_FAMILIES = sorted({*FAMILIES, *OPTIONAL_FAMILIES.values()})

#: The modules that run the one registration loop (and hook families onto imports).
REGISTRATION_LOOP = {"__init__.py", "_optional.py", "_on_import.py"}

#: Calls that register, or build rules, another way than an entry in the family's table.
REGISTERING = {
    "family_rules", "register_rules", "register_kind", "register", "opt_out", "declare", "scalar_rule",
    "non_differentiable", "deflinear", "partials_rules", "linear_rules", "non_differentiable_rules",
    "when_imported", "watch",
}
#: ... and, in a family, reading its own namespace (how rules were found by their names).
OTHER_IDIOMS = {*REGISTERING, "globals", "vars"}

#: A name a rule function has (``dot_rrule``), as a string (``test_rrule`` is the tester's).
RULE_NAME = re.compile(r"^(?!test_)\w*_(rrule|frule)$")


def _source(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _is_entries(node: ast.AST) -> bool:
    """Whether ``node`` is written as entries: ``RulePair(...)`` calls, directly or in a tuple,
    a starred generator or conditional of them, or ``tuple(<generator of them>)``."""
    if isinstance(node, ast.Call):
        name = _called_name(node)
        if name == "RulePair":
            return True
        return name == "tuple" and len(node.args) == 1 and _is_entries(node.args[0])
    if isinstance(node, ast.Starred):
        return _is_entries(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_is_entries(e) for e in node.elts)
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return _is_entries(node.elt)
    if isinstance(node, ast.IfExp):
        return _is_entries(node.body) and _is_entries(node.orelse)
    return False


def _rules_assignment(tree: ast.Module) -> ast.expr | None:
    for stmt in tree.body:
        targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else getattr(stmt, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "RULES" for t in targets):
            return stmt.value  # type: ignore[attr-defined, no-any-return]
    return None


def _idioms(tree: ast.Module, idioms: set[str] = OTHER_IDIOMS) -> list[str]:
    return sorted({f"{name}() at line {node.lineno}" for node in ast.walk(tree)
                   if isinstance(node, ast.Call) and (name := _called_name(node)) in idioms})


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_every_family_is_one_literal_table_of_entries(family: str) -> None:
    tree = _source(RULES_DIR / f"{family}.py")
    value = _rules_assignment(tree)
    assert value is not None, f"rulescore/rules/{family}.py has no RULES table"
    assert _is_entries(value), (f"rulescore/rules/{family}.py: RULES must be written as rc.RulePair(...) "
                                f"entries (in a tuple, a starred generator or a conditional of them)")


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_no_family_registers_by_another_idiom(family: str) -> None:
    found = _idioms(_source(RULES_DIR / f"{family}.py"))
    assert found == [], f"rulescore/rules/{family}.py registers outside its RULES table: {found}"


def test_only_the_registration_loop_registers() -> None:
    """The helper modules of the rule library register nothing either; the loop in
    ``rulescore/rules/__init__.py`` (with ``_optional.py`` for optional modules) is the one."""
    helpers = [p for p in RULES_DIR.glob("_*.py") if p.name not in REGISTRATION_LOOP]
    found = {p.name: _idioms(_source(p), REGISTERING) for p in helpers}
    assert {name: calls for name, calls in found.items() if calls} == {}


def test_families_use_only_the_public_api_to_declare_rules() -> None:
    """A third-party author has ``rc.RulePair``; the library's families import it from there too."""
    private = {}
    for family in ALL_FAMILIES:
        tree = _source(RULES_DIR / f"{family}.py")
        bad = [f"line {node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module in ("rulescore._rule_pair", "rulescore._registry")]
        if bad:
            private[family] = bad
    assert private == {}


def _rule_name_strings(tree: ast.Module) -> list[str]:
    """String literals (and f-strings) that spell a rule function's name, other than the names
    rule factories give their closures (``f.__name__ = f"{name}_rrule"``)."""
    naming: set[int] = set()  # the names given, and the parts of every f-string (checked whole)
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Attribute) and t.attr in ("__name__", "__qualname__") for t in targets):
            naming.add(id(node.value))  # type: ignore[attr-defined]
        if isinstance(node, ast.JoinedStr):
            naming.update(id(part) for part in node.values)
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            naming.update(id(part) for part in ast.walk(node.value))  # type: ignore[attr-defined]
    found = []
    for node in ast.walk(tree):
        if id(node) in naming:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and RULE_NAME.match(node.value):
            found.append(f"{node.value!r} at line {node.lineno}")
        elif isinstance(node, ast.JoinedStr) and node.values and \
                isinstance(last := node.values[-1], ast.Constant) and RULE_NAME.match(str(last.value)):
            found.append(f"an f-string at line {node.lineno}")
    return found


def test_no_rule_is_reached_by_a_name_string() -> None:
    found = {}
    for path in sorted([*(ROOT / "rulescore").rglob("*.py"), *(ROOT / "zygotepy").rglob("*.py")]):
        hits = _rule_name_strings(_source(path))
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert found == {}


def test_the_name_string_check_finds_a_lookup() -> None:
    tree = ast.parse('rule = namespace[f"{stem}_rrule"]\nother = getattr(module, "dot_frule")\n'
                     'def g(): pass\ng.__name__ = f"{stem}_rrule"\n')
    assert _rule_name_strings(tree) == ["an f-string at line 1", "'dot_frule' at line 2"]


def test_the_idiom_check_finds_other_registrations() -> None:
    tree = ast.parse("rc.scalar_rule(f, d)\n@rc.rrule.register(g)\ndef h(x): ...\n"
                     "RULES = family_rules(globals(), (f,))\n")
    assert _idioms(tree) == ["family_rules() at line 4", "globals() at line 4", "register() at line 2",
                             "scalar_rule() at line 1"]
    assert not _is_entries(_rules_assignment(tree))  # type: ignore[arg-type]
    assert _is_entries(ast.parse("(RulePair(f), *(RulePair(g) for g in G), *((RulePair(h),) if c else ()))",
                                 mode="eval").body)


_REGISTRY_PROBE = """
import importlib, json, sys
import rulescore as rc
from rulescore.rules import FAMILIES
from rulescore.rules._optional import OPTIONAL_FAMILIES
for module in (*OPTIONAL_FAMILIES, "numpy.fft", "numpy.random"):
    try:
        importlib.import_module(module)
    except ImportError:
        pass
callables = [*rc.rrule.callables(), *rc.frule.callables()]  # imports the lazy families too
listed = {}
for family in sorted({*FAMILIES, *OPTIONAL_FAMILIES.values()}):
    name = f"rulescore.rules.{family}"
    if name in sys.modules:
        for pair in sys.modules[name].RULES:
            listed.setdefault(pair.primal, []).append(
                (family, pair.reverse, pair.forward, pair.primal))
unlisted = sorted(repr(f) for f in callables if f not in listed)  # by equality: np.add.reduce
unregistered = sorted(f"{family}: {f!r}" for entries in listed.values()
                      for family, reverse, forward, f in entries
                      if (reverse and not rc.rrule.has_rules(f)) or (forward and not rc.frule.has_rules(f)))
print(json.dumps({"unlisted": unlisted, "unregistered": unregistered,
                  "callables": len(set(callables))}))
"""


def test_every_registered_rule_is_an_entry_of_a_family_table() -> None:
    """In a fresh process (only rulescore's own rules), every callable with a rule is the
    primal of an entry of some family's ``RULES``, and every entry is registered."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _REGISTRY_PROBE], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["unlisted"] == [], "rules registered outside every family table"
    assert found["unregistered"] == []
    assert found["callables"] > 500


def test_the_decorators_build_the_same_entry() -> None:
    """``@rc.rrule.register``, ``rc.scalar_rule``, ``rc.non_differentiable`` and ``opt_out``
    register what the entry ``rc.RulePair`` declares, with the same kinds and origins."""
    def by_decorator(x: float) -> float:
        return 3 * x

    def by_entry(x: float) -> float:
        return 3 * x

    def triple_rrule(x: float) -> tuple[float, object]:
        return 3 * x, lambda ybar: (rc.NoTangent(), 3 * ybar)

    rc.rrule.register(by_decorator, float)(triple_rrule)
    rc.register_rules(rc.RulePair(by_entry, triple_rrule, types=(float,)))
    [a], [b] = rc.rrule.rules_for(by_decorator), rc.rrule.rules_for(by_entry)
    assert (a.impl, a.types, a.kind, a.origin) == (b.impl, b.types, b.kind, b.origin)
    assert not rc.frule.has_rules(by_decorator) and not rc.frule.has_rules(by_entry)


def test_the_index_of_lazy_families_is_up_to_date() -> None:
    from rulescore.rules._table import INDEX_COMMAND, index_source

    current = (RULES_DIR / "_index.py").read_text()
    assert current == index_source(), f"rulescore/rules/_index.py is out of date: run {INDEX_COMMAND}"


_LAZY_PROBE = """
import json, sys
import numpy as np
import rulescore as rc
from rulescore.rules import LAZY
before = sorted(f for f in LAZY if f"rulescore.rules.{f}" in sys.modules)
known = rc.rrule.has_rules(np.linalg.inv) and np.linalg.inv in rc.frule.primals
still = "rulescore.rules.linalg" not in sys.modules

def mine(x):
    return 2 * x
rc.rrule.register(np.linalg.det)(lambda a: (np.linalg.det(a), lambda ybar: (rc.NoTangent(), mine(ybar))))
y, back = rc.rrule(np.linalg.inv, np.eye(2) * 2.0)
loaded = "rulescore.rules.linalg" in sys.modules
det_rule = rc.rrule.rules_for(np.linalg.det)[-1].impl.__name__
explained = rc.frule.explain(np.kron, np.eye(2), np.eye(2))
print(json.dumps({"before": before, "known": known, "still": still, "loaded": loaded, "det": det_rule,
                  "grad": back(np.eye(2))[1].tolist(), "explained": explained}))
"""


def test_lazy_families_load_on_the_first_lookup() -> None:
    """``import rulescore`` imports none of the lazy families; the registry knows their callables
    all the same, imports a family on a first lookup, and a rule registered before that stays
    (the family's entries take the place its placeholder held, before the user's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", _LAZY_PROBE], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["before"] == [] and found["known"] and found["still"] and found["loaded"]
    assert found["det"] == "<lambda>"  # the user's rule, registered after the library's
    assert found["grad"] == [[-0.25, 0.0], [0.0, -0.25]]  # d tr(inv(A)) = -inv(A)^T inv(A)^T
    assert "picks <frule(numpy.kron" in found["explained"]
