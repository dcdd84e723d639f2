"""Shared table format for the rule-family test modules (``test_<family>.py``).

Each family module defines ``CASES: list[RuleCase]`` and one parametrized test::

    CASES = [RuleCase(np.sin, (S.arrays(dtype=np.float64),)), ...]

    @pytest.mark.parametrize("case", CASES, ids=case_id)
    def test_rule(case):
        check_case(case)

``test_coverage.py`` collects every family's ``CASES`` and fails for library callables that
have rules but no case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import rulescore.testing as rct
from rulescore.rules.ufunc_methods import reduce_is_a_fold

__all__ = ["RuleCase", "broken_reduce", "case_id", "check_case"]


@dataclass(frozen=True)
class RuleCase:
    """One row of a family's test table: a callable and strategies (or values) for its arguments.

    ``args``: per positional argument, a hypothesis strategy or a plain value (used as it is).
    ``kwargs``: plain keyword arguments for ``f``. ``nondiff``: positional indices that are not
    perturbed and must get ``NoTangent()``. ``frule=False`` skips the frule and the frule/rrule
    consistency check. ``rtol``/``atol`` override the dtype-aware defaults, ``max_examples``
    the hypothesis profile's.
    """

    f: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    rtol: float | None = None
    atol: float | None = None
    frule: bool = True
    nondiff: tuple[int, ...] = ()
    max_examples: int | None = None


def _callable_name(f: Any) -> str:
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    module = getattr(f, "__module__", None) or ""
    if module in ("", "builtins", "_operator") or module.startswith("tests."):
        return name
    return f"{module.split('.')[0]}.{name}"


def case_id(case: RuleCase) -> str:
    """A readable pytest id: ``numpy.sin`` or ``numpy.sum-axis``."""
    return _callable_name(case.f) + (f"-{case.name}" if case.name else "")


def check_case(case: RuleCase) -> None:
    """Run ``rct.test_rrule`` (and ``rct.test_frule`` and ``rct.test_frule_rrule`` unless
    ``case.frule`` is false) on arguments drawn by hypothesis from ``case.args``."""
    rct.check_rule(case.f, case.args, case.kwargs, nondiff=case.nondiff, frule=case.frule,
                   rtol=case.rtol, atol=case.atol, max_examples=case.max_examples)


def broken_reduce(case: RuleCase) -> bool:
    """Whether ``case`` is a ufunc's ``reduce`` that NumPy computes wrongly on this machine
    (:func:`rulescore.rules.ufunc_methods.reduce_is_a_fold`): its rules refuse it by name."""
    uf = getattr(case.f, "__self__", None)
    is_reduce = isinstance(uf, np.ufunc) and getattr(case.f, "__name__", "") in ("reduce", "reduceat")
    return is_reduce and not reduce_is_a_fold(uf)
