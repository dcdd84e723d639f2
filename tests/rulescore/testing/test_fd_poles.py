"""Finite differences next to a pole: an estimate whose first steps straddle the pole is detected
(halving the step changes it), the differences restart from smaller steps, and where no start
agrees the tester reports an unreliable estimate instead of blaming the rule."""

from __future__ import annotations

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import FiniteDifferences


def log1mexp(x):
    """``log(1 - e^{-x})``: its derivative ``1/expm1(x)`` has a pole at 0."""
    return np.log(-np.expm1(-x))


rc.scalar_rule(log1mexp, lambda x: 1 / np.expm1(x))


def inv_expm1(x):
    return 1 / np.expm1(x)


rc.scalar_rule(inv_expm1, lambda x: -np.exp(x) / np.expm1(x) ** 2)


def shifted_reciprocal(x):
    """A pole at 1: finite on both sides, so no step ever fails to evaluate."""
    return 1 / (x - 1.0)


rc.scalar_rule(shifted_reciprocal, lambda x: -1 / (x - 1.0) ** 2)


def cot(x):
    return np.cos(x) / np.sin(x)


rc.scalar_rule(cot, lambda x: -1 / np.sin(x) ** 2)


@pytest.mark.parametrize(("g", "x", "dg"), [
    (inv_expm1, 1e-3, lambda x: -np.exp(x) / np.expm1(x) ** 2),
    (inv_expm1, -2e-3, lambda x: -np.exp(x) / np.expm1(x) ** 2),
    (shifted_reciprocal, 1.004, lambda x: -1 / (x - 1.0) ** 2),
    (shifted_reciprocal, 0.99, lambda x: -1 / (x - 1.0) ** 2),
    (cot, 3e-3, lambda x: -1 / np.sin(x) ** 2),
    (cot, np.pi - 5e-3, lambda x: -1 / np.sin(x) ** 2),
])
def test_derivatives_next_to_a_pole(g, x, dg) -> None:
    d, _ = FiniteDifferences().derivative(lambda t: np.array([g(x + t)]))
    np.testing.assert_allclose(d[0], dg(x), rtol=1e-5)


@pytest.mark.parametrize(("f", "x"), [(log1mexp, 1e-3), (log1mexp, np.array([1e-3, 0.5])), (inv_expm1, 2e-3),
                                      (shifted_reciprocal, 1.004), (cot, np.array([3e-3, 1.0]))])
def test_correct_rules_next_to_a_pole_pass(f, x) -> None:
    rct.test_rrule(f, x)
    rct.test_frule(f, x)


def test_correct_rules_next_to_a_pole_pass_under_an_engine_at_second_order() -> None:
    pytest.importorskip("zygotepy")
    rct.test_rrule(log1mexp, 1e-3, engines=("zygotepy",))  # differentiates 1/expm1 next to its pole


def test_an_unrecoverable_estimate_is_reported_as_unreliable() -> None:
    one_start = FiniteDifferences(retries=1)
    with pytest.raises(AssertionError, match="unreliable") as info:
        rct.test_rrule(inv_expm1, 1e-3, fd=one_start)
    assert "disagrees with finite differences" not in str(info.value)
    with pytest.raises(AssertionError, match="unreliable"):
        rct.test_frule(shifted_reciprocal, 1.0005, fd=one_start)


def test_smooth_functions_keep_their_accuracy() -> None:
    fd = FiniteDifferences()
    for g, dg in [(lambda t: t ** 2 + t ** 3, 0.0), (lambda t: np.sin(50 * t), 50.0), (np.exp, 1.0)]:
        d, err = fd.derivative(lambda t, g=g: np.array([g(t)]))
        assert abs(d[0] - dg) <= 1e-8 * max(1.0, abs(dg)) and err < 1e-6
