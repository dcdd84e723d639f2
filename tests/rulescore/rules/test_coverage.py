"""Every rule in the library has a test case, and every rrule has an frule (and vice versa).

Collects ``CASES`` from every ``test_*.py`` module next to this file (a family's module,
``test_<family>.py``, must define it; other modules may). A family module may
also list, in ``COVERED``, callables it tests some other way. The set of library callables was
recorded by ``conftest.py`` when it was imported, before test modules registered rules of their
own. Core callables that belong to no family are tested here (``CORE_CASES``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rulescore as rc
from rulescore.rules import FAMILIES
from rulescore.testing import strategies as S

from ._cases import RuleCase, case_id, check_case
from .conftest import LIBRARY_FRULES, LIBRARY_RRULES

_HERE = Path(__file__).parent
FAMILY_MODULES = sorted(p.stem for p in _HERE.glob("test_*.py") if p.stem != Path(__file__).stem)

#: Callables registered by the rulescore core rather than by a family module.
CORE_CASES = [
    RuleCase(rc.ignore_derivatives, (S.arrays(),), name="array"),
    RuleCase(rc.ignore_derivatives, (S.scalars(),), name="float"),
]


@pytest.mark.parametrize("case", CORE_CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def _qualified(f: Any) -> str:
    if isinstance(f, np.ufunc):
        return f"numpy.{f.__name__}"
    module = getattr(f, "__module__", None) or getattr(getattr(f, "__objclass__", None), "__module__", "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return f"{module}.{name}" if module and module != "builtins" else name


def _collect() -> tuple[list[Any], list[str]]:
    covered: list[Any] = [c.f for c in CORE_CASES]
    problems = []
    for name in FAMILY_MODULES:
        module = importlib.import_module(f"{__package__}.{name}")
        cases = getattr(module, "CASES", None)
        if cases is None:
            if name.removeprefix("test_") in FAMILIES:
                problems.append(f"{name}.py (tests of the {name[5:]} family) defines no CASES")
            continue
        bad = [c for c in cases if not isinstance(c, RuleCase)]
        if bad:
            problems.append(f"{name}.py: CASES holds {len(bad)} entries that are not RuleCase: {bad[:3]!r}")
        covered.extend(c.f for c in cases if isinstance(c, RuleCase))
        covered.extend(getattr(module, "COVERED", ()))
    return covered, problems


def _is_in(f: Any, pool: list[Any] | tuple[Any, ...]) -> bool:
    return any(f is g or _equal(f, g) for g in pool)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an uncomparable callable is a different callable
        return False


def test_family_modules_define_cases() -> None:
    _, problems = _collect()
    assert not problems, "\n".join(problems)


def missing_cases(rrules: Sequence[Any], frules: Sequence[Any], covered: Sequence[Any]) -> list[str]:
    """Names of the callables with an rrule or an frule that no case covers."""
    library = list(rrules) + [f for f in frules if not _is_in(f, rrules)]
    return sorted({_qualified(f) for f in library if not _is_in(f, covered)})


def unpaired_rules(rrules: Sequence[Any], frules: Sequence[Any]) -> list[str]:
    """One line per callable with an rrule but no frule, or the reverse."""
    only_r = sorted({_qualified(f) for f in rrules if not _is_in(f, frules)})
    only_f = sorted({_qualified(f) for f in frules if not _is_in(f, rrules)})
    return [f"rrule but no frule: {f}" for f in only_r] + [f"frule but no rrule: {f}" for f in only_f]


def test_every_library_rule_has_a_case() -> None:
    covered, _ = _collect()
    missing = missing_cases(LIBRARY_RRULES, LIBRARY_FRULES, covered)
    assert not missing, (f"{len(missing)} library callables have rules but no RuleCase in any of "
                         f"{[m + '.py' for m in FAMILY_MODULES]}:\n  " + "\n  ".join(missing))


def test_every_rrule_has_an_frule() -> None:
    lines = unpaired_rules(LIBRARY_RRULES, LIBRARY_FRULES)
    assert not lines, "\n".join(lines)


def test_the_checks_find_gaps() -> None:
    import math

    assert missing_cases([math.sin, np.cos], [math.sin, np.tan], [math.sin]) == ["numpy.cos", "numpy.tan"]
    assert unpaired_rules([math.sin, np.cos], [math.sin, np.tan]) == [
        "rrule but no frule: numpy.cos", "frule but no rrule: numpy.tan"]


def test_the_snapshot_saw_the_library() -> None:
    """The conftest snapshot must hold the library's rules (a check that it is not empty)."""
    import math

    assert _is_in(math.sin, LIBRARY_RRULES) and _is_in(math.sin, LIBRARY_FRULES)
