"""The coverage table of the rule library, generated from the registry (``docs/rules.md``).

Regenerate the page with::

    python -m rulescore.rules._table > docs/rules.md

Every callable with an rrule or an frule gets one row per registered signature: its dotted
name, whether the signature has an rrule and an frule, the argument types it dispatches on and
its kind (``rule``, ``non_differentiable`` or ``opt_out``). Rows are grouped by family, the
module of :mod:`rulescore.rules` that registered them. The family is found from the module's
tables (its public module-level dicts and tuples, e.g. ``RULES``, ``PARTIALS``,
``NON_DIFFERENTIABLE``) and, for callables registered outside a table, from the file of the
rule implementations (``Rule.origin``). Optional rules (``scipy.special.logsumexp``, registered
when ``scipy.special`` is imported) are included when SciPy is installed. The output is sorted,
so it only changes when the registry does.

Example:
    >>> from rulescore.rules._table import rules_table
    >>> text = rules_table()
    >>> "## math" in text and "| math.sin | yes | yes | any | rule |" in text
    True
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._checks import callable_name
from rulescore.rules import FAMILIES
from rulescore.rules._optional import OPTIONAL_FAMILIES

__all__ = ["COMMAND", "display_name", "family_of", "rules_table"]

#: The command that regenerates ``docs/rules.md``.
COMMAND = "python -m rulescore.rules._table > docs/rules.md"

#: Optional modules whose import registers more rules (the table includes them if installed).
OPTIONAL_MODULES = (*OPTIONAL_FAMILIES, "numpy.random")

#: Every family: those registered at import, then those of optional dependencies (once each: a
#: family may serve two modules).
ALL_FAMILIES = tuple(dict.fromkeys((*FAMILIES, *OPTIONAL_FAMILIES.values())))

CORE = "core"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(rc.__file__))
_RULES_DIR = os.path.join(_PACKAGE_DIR, "rules")

_DESCRIPTIONS = {
    "operators": "Python operators (`operator` module; the same rules serve `a + b`, `a @ b`, ...).",
    "math": "The `math` module.",
    "builtins": "Python builtins.",
    "ufuncs": "NumPy ufuncs.",
    "contractions": "Products that contract axes (`matmul`, `dot`, `tensordot`, `einsum`, ...) "
                    "under all their aliases (`a @ b`, `np.linalg.matmul`, ...).",
    "reductions": "Reductions and scans (`sum`, `prod`, `var`, `max`, `cumsum`, ...), "
                  "NumPy functions and `ndarray` methods.",
    "shape": "Shape, structure, contraction and conversion functions, constructors and other "
             "non-differentiable helpers.",
    "indexing": "Indexing (`operator.getitem`, `getattr`) and its scatter primitives.",
    "linalg": "`numpy.linalg`.",
    "fft": "`numpy.fft`.",
    "numeric": "NumPy's numerical routines: `diff`, `gradient`, `convolve`, `correlate`, `interp`, "
               "`vectorize`, `select`, `partition`, `take_along_axis`, `ptp`, `sinc`, `nan_to_num`, "
               "`np.r_`/`np.c_`, `x.item()`/`x.tolist()`, rounding.",
    "ufunc_methods": "The methods of differentiable binary ufuncs: `reduce`, `accumulate`, `reduceat`, "
                     "`outer`.",
    "scipy_special": "`scipy.special` (registered when SciPy imports it).",
    "scipy_stats": "`scipy.stats` distributions: methods of `rv_continuous`/`rv_discrete` and the "
                   "multivariate generators, one signature per distribution class (registered when "
                   "SciPy imports `scipy.stats`).",
    "scipy_linalg": "`scipy.linalg`, real matrices (registered when SciPy imports it).",
    "scipy_signal": "`scipy.signal` convolutions, real arrays (registered when SciPy imports it).",
    "scipy_spatial": "`scipy.spatial.distance`: `pdist`/`cdist` (sqeuclidean, euclidean, cityblock) and "
                     "`squareform` (registered when SciPy imports it).",
    "scipy_interpolate": "`scipy.interpolate`: evaluating `PPoly` (`CubicSpline`, Akima, Pchip) and "
                         "`BSpline` splines, and `make_interp_spline` (registered when SciPy imports it).",
    "numpy_index_helpers": "NumPy functions of an array's shape or memory alone (`diag_indices_from`, "
                           "`shares_memory`, ...): no derivative.",
    "numpy_polynomial": "Constructing `numpy.polynomial`'s series from traced coefficients (registered "
                        "when `numpy.polynomial` is imported).",
    "stdlib_text": "Text from values (`json.dumps`, the logging calls): no derivative (registered "
                   "when `json` and `logging` are imported).",
    "stdlib_statistics": "The standard library's `statistics`: `mean`, `median`, `variance`, `pvariance`, "
                         "`stdev`, `pstdev` (registered when it is imported).",
    "scipy_integrate": "`scipy.integrate`: quadrature of samples (`trapezoid`, `simpson`); `odeint`, "
                       "`solve_ivp` and `quad`, whose rules ask for the AD system's config to "
                       "differentiate the user's function (adjoint and forward sensitivities, "
                       "differentiation under the integral; registered when SciPy imports it).",
    "scipy_optimize": "`scipy.optimize` solutions in the parameters passed through `args`, by the "
                      "implicit function theorem (the rules ask for the AD system's config), and "
                      "attributes of `OptimizeResult` (registered when SciPy imports it).",
    "random": "`numpy.random`'s samplers, non-differentiable (registered when `numpy.random` is "
              "first imported).",
    CORE: "Registered by the rulescore core rather than by a family module.",
}


def _safe_hash(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _table_entries(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return value.keys()
    if isinstance(value, (tuple, list, set, frozenset)):
        return [x.primal if isinstance(x, rc.RulePair) else x for x in value]  # RULES: by primal
    return ()


def _family_tables() -> dict[str, list[Any]]:
    """Per family, the entries of its public module-level tables (dict keys, tuple elements)."""
    out: dict[str, list[Any]] = {}
    for family in ALL_FAMILIES:
        if family not in FAMILIES and f"rulescore.rules.{family}" not in sys.modules:
            continue  # an optional family whose dependency was not imported
        try:
            module = importlib.import_module(f"rulescore.rules.{family}")
        except ModuleNotFoundError:  # a family not written yet
            continue
        entries: list[Any] = []
        for name, value in sorted(vars(module).items()):
            if name.startswith("_"):
                continue
            entries.extend(x for x in _table_entries(value) if _safe_hash(x))
        out[family] = entries
    return out


def _contains(entries: list[Any], f: Any) -> bool:
    return any(x is f for x in entries)


def _rules_of(f: Any) -> list[rc.Rule]:
    # not rules_for: a bound method without rules of its own must not show its function's rules
    return [r for table in (rc.rrule, rc.frule) if table.has_rules(f) for r in table.rules_for(f)]


def _origin_family(origin: str) -> str | None:
    path = os.path.abspath(origin.rsplit(":", 1)[0])
    if os.path.dirname(path) == _RULES_DIR:
        stem = os.path.splitext(os.path.basename(path))[0]
        return stem if stem in ALL_FAMILIES else None
    return None


def family_of(f: Any, tables: dict[str, list[Any]] | None = None) -> str:
    """The family module that registered the rules of ``f`` (``"core"`` for the rulescore core).

    A callable listed in the public tables of one family belongs to it; listed in several, to
    the one that also holds the rule implementations, else the first in import order. A callable
    in no table belongs to the family whose module defines its rule implementations.

    Example:
        >>> import math, operator, numpy as np, rulescore as rc
        >>> from rulescore.rules._table import family_of
        >>> [family_of(g) for g in (math.sin, operator.getitem, np.linalg.inv, rc.ignore_derivatives)]
        ['math', 'indexing', 'linalg', 'core']
    """
    tables = _family_tables() if tables is None else tables
    by_origin = [fam for fam in ALL_FAMILIES if fam in {_origin_family(r.origin) for r in _rules_of(f)}]
    listed = [fam for fam in ALL_FAMILIES if _contains(tables.get(fam, []), f)]
    if len(listed) > 1:
        both = [fam for fam in listed if fam in by_origin]
        return (both or listed)[0]
    if listed:
        return listed[0]
    if by_origin:
        return by_origin[0]
    return CORE


def display_name(f: Any) -> str:
    """``callable_name``, except that a bound method of a ufunc is named after it
    (``numpy.add.reduce`` rather than ``ufunc.reduce``) and ``_operator`` is ``operator``."""
    owner = getattr(f, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"{callable_name(owner)}.{getattr(f, '__name__', '?')}"
    name = callable_name(f)
    return "operator." + name[len("_operator."):] if name.startswith("_operator.") else name


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return str(getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or t)


def _signature(rule: rc.Rule) -> str:
    parts = [_type_name(t) for t in rule.types]
    text = "any" if not parts else f"({', '.join(parts)}, ...)"
    if rule.config is not None:
        text += f"; config: {_type_name(rule.config)}"
    return text


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(f: Any) -> list[tuple[str, str, str, str, str]]:
    """One row per signature: ``(name, rrule, frule, types, kind)``."""
    signatures: dict[str, dict[str, rc.Rule]] = {}
    for table in (rc.rrule, rc.frule):
        if not table.has_rules(f):
            continue
        for rule in table.rules_for(f):
            signatures.setdefault(_signature(rule), {})[table.name] = rule
    rows = []
    name = _cell(display_name(f))
    for sig, by_table in signatures.items():
        kinds = sorted({r.kind for r in by_table.values()})
        if len(kinds) == 1:
            kind = kinds[0]
        else:
            kind = ", ".join(f"{t}: {r.kind}" for t, r in sorted(by_table.items()))
        has = ["yes" if t in by_table else "no" for t in ("rrule", "frule")]
        rows.append((name, has[0], has[1], _cell(sig), kind))
    return sorted(rows)


def _import_optional() -> None:
    for module in OPTIONAL_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:  # not installed: its rules are not registered
            pass


def rules_table() -> str:
    """The Markdown coverage table of every registered rule, one section per family.

    Only rules registered by rulescore itself are listed (rules that other packages or tests
    registered in this process are left out), so the table is the same in any process.
    """
    _import_optional()
    tables = _family_tables()
    callables: list[Any] = []
    for f in [*rc.rrule.callables(), *rc.frule.callables()]:
        if any(f is g for g in callables):
            continue
        origins = [r.origin for r in _rules_of(f)]
        if any(os.path.abspath(o.rsplit(":", 1)[0]).startswith(_PACKAGE_DIR + os.sep) for o in origins):
            callables.append(f)

    sections: dict[str, list[tuple[str, str, str, str, str]]] = {}
    for f in callables:
        sections.setdefault(family_of(f, tables), []).extend(_rows(f))
    order = [fam for fam in (*ALL_FAMILIES, CORE) if fam in sections]

    def count(rows: list[tuple[str, str, str, str, str]], kind: str | None = None) -> int:
        return len({r[0] for r in rows if kind is None or r[4] == kind})

    lines = [
        "# Rule coverage",
        "",
        f"<!-- Generated by `{COMMAND}` from the rule registry; do not edit by hand. -->",
        "",
        "Generated from the rulescore registry (`rc.rrule.callables()`, `rc.frule.callables()`) by",
        f"`{COMMAND}`; `tests/rulescore/rules/test_rules_table.py` fails when this page is out of date.",
        "",
        "One row per registered signature: the callable's dotted name, whether that signature has an",
        "rrule and an frule, the argument types it dispatches on (`any` matches every call, `(T, ...)`",
        "calls whose first argument is a `T`; see [writing rules](writing-rules.md#dispatch)) and the",
        "kind: `rule` (a derivative), `non_differentiable` (every input gets `NoTangent()`) or",
        "`opt_out` (no rule: the AD system recurses). Rules of optional dependencies",
        f"({', '.join(f'`{m}`' for m in OPTIONAL_MODULES)}) are listed when those are installed.",
        "",
        "| family | callables | with derivative rules | non-differentiable |",
        "|---|---:|---:|---:|",
    ]
    for fam in order:
        rows = sections[fam]
        lines.append(f"| [{fam}](#{fam}) | {count(rows)} | {count(rows, 'rule')} "
                     f"| {count(rows, 'non_differentiable')} |")
    every = [r for fam in order for r in sections[fam]]
    lines.append(f"| **total** | {count(every)} | {count(every, 'rule')} "
                 f"| {count(every, 'non_differentiable')} |")
    for fam in order:
        source = "" if fam == CORE else f" (`rulescore/rules/{fam}.py`)"
        lines += ["", f"## {fam}", "", f"{_DESCRIPTIONS.get(fam, '')}{source}", "",
                  "| callable | rrule | frule | argument types | kind |", "|---|---|---|---|---|"]
        lines += [f"| {' | '.join(row)} |" for row in sorted(sections[fam])]
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(rules_table())


if __name__ == "__main__":
    main()
