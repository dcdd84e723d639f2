"""Every library rule with a scalar form (``RulePair(..., scalar=...)``, or the one derived from
``partials=``) agrees with its rrule at real scalars: engines may record the form's numbers
instead of running the rrule (zygotepy does, for Python floats at first order).

Parameterized over the registry: each such callable's own test case (from the family modules'
``CASES``) gives the arguments; an array argument stands for its first element (the functions
with a scalar form are element-wise). ``rct.test_rrule`` then checks the rrule against finite
differences and the scalar form against the rrule.
"""

from __future__ import annotations

import importlib
import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

import rulescore as rc
import rulescore.testing as rct

from ._cases import RuleCase, case_id
from .conftest import LIBRARY_RRULES
from .test_coverage import FAMILY_MODULES


def _cases_by_callable() -> dict[int, RuleCase]:
    found: dict[int, RuleCase] = {}
    for name in FAMILY_MODULES:
        for case in getattr(importlib.import_module(f"{__package__}.{name}"), "CASES", ()):
            if isinstance(case, RuleCase) and not case.kwargs:
                found.setdefault(id(case.f), case)
    return found


def _with_scalar_forms() -> list[Any]:
    out = []
    for f in LIBRARY_RRULES:
        rule = rc.rrule.sole_rule(f)
        complex_type = isinstance(f, type) and issubclass(f, np.complexfloating)  # (no real output)
        if rule is not None and rule.scalar is not None and not complex_type:
            out.append(f)
    return out


_CASES = _cases_by_callable()
_FORMS = _with_scalar_forms()


def _name(f: Any) -> str:
    return case_id(RuleCase(f, ()))


def _scalar(a: Any) -> Any:
    """A real scalar standing for ``a`` (its first element), or ``None``."""
    if isinstance(a, np.ndarray):
        if a.size == 0 or a.dtype.kind not in "fi":
            return None
        return a.flat[0] if a.dtype.kind == "f" else int(a.flat[0])
    return a if type(a) in (float, int, np.float64) else None


def test_the_library_has_scalar_forms() -> None:
    """The forms exist where engines need them: Python's arithmetic and element-wise functions."""
    names = {_name(f) for f in _FORMS}
    assert {"add", "sub", "mul", "truediv", "neg", "numpy.sin", "math.sin", "math.exp"} <= names


@pytest.mark.parametrize("f", _FORMS, ids=_name)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_scalar_form_agrees_with_the_rrule(f: Any, data: Any) -> None:
    case = _CASES.get(id(f))
    assert case is not None, f"{_name(f)} has a scalar form but no test case with positional arguments"
    drawn = [data.draw(a) if isinstance(a, SearchStrategy) else a for a in case.args]
    args = [_scalar(a) for a in drawn]
    assume(all(a is not None for a in args))
    assume(all(np.isfinite(a) for a in args))
    rule = rc.rrule.lookup(f, tuple(args))
    assume(rule is not None and rule.scalar is not None)
    try:
        with np.errstate(all="ignore"):
            y = f(*args)
    except (ArithmeticError, ValueError, TypeError):
        return  # outside the domain at this point (math raises where NumPy warns): the rrule raises too
    if type(y) not in (float, np.float64) or not np.isfinite(y):
        return  # (np.float32(x), a complex result: no numbers node is made, the rrule runs)
    with np.errstate(all="ignore"):
        rct.test_rrule(f, *[a if i not in case.nondiff else rct.no_tangent(a) for i, a in enumerate(args)],
                       rtol=case.rtol, atol=case.atol, check_thunks=False)


def test_a_scalar_form_that_disagrees_is_reported() -> None:
    """The check can fail: a form whose partial is not the rrule's."""
    def twice(x: float) -> float:
        return 2.0 * x

    def twice_rrule(x: float) -> Any:
        return twice(x), lambda ybar: (rc.NoTangent(), 2.0 * ybar)

    rc.register_rules(rc.RulePair(twice, twice_rrule, scalar=lambda x: (2.0 * x, (3.0,))))
    with pytest.raises(AssertionError, match="scalar form's partial 3.0"):
        rct.test_rrule(twice, 0.5)
    assert operator.mul in _FORMS
