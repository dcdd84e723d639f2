"""rulescore.testing._testers on correct rules of many kinds (broken ones: test_mutants.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S

# ---------------------------------------------------------------------------------------------
# the checks on correct rules of many kinds


def test_scalar_real_and_complex() -> None:
    rct.test_scalar(math.sin, 0.5)
    rct.test_scalar(math.exp, -1.25)


def csquare(z: Any) -> Any:
    return z * z


rc.scalar_rule(csquare, lambda z: 2 * z)


def test_scalar_complex_holomorphic() -> None:
    rct.test_scalar(csquare, 0.5 - 1.5j)
    rct.test_scalar(csquare, 0.75)


def test_non_differentiable_rules_need_notangent_only() -> None:
    rct.test_rrule(math.floor, 2.0)  # even at a jump: declared non-differentiable, no FD
    rct.test_frule(math.floor, 2.0)


def power(x: Any, n: int) -> Any:
    return x ** n


@rc.rrule.register(power)
def _power_rrule(x: Any, n: int) -> Any:
    def power_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        if rc.is_zero(ybar):
            return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
        return (rc.NoTangent(), rc.project(x, ybar * n * x ** (n - 1)),
                rc.project(n, np.sum(ybar * x ** n * np.log(x))))

    return x ** n, power_pullback


def test_an_integer_with_a_real_cotangent_is_checked_as_a_real() -> None:
    rct.test_rrule(power, np.array([0.5, 2.0]), 3)
    rct.test_rrule(power, 1.5, 2)


def bad_power(x: Any, n: int) -> Any:
    return x ** n


@rc.rrule.register(bad_power)
def _bad_power_rrule(x: Any, n: int) -> Any:
    def bad_power_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        return rc.NoTangent(), rc.project(x, ybar * n * x ** (n - 1)), rc.project(n, 0.0 * ybar)

    return x ** n, bad_power_pullback


def test_an_integer_with_a_wrong_real_cotangent_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"argument 2 \(int\) disagrees"):
        rct.test_rrule(bad_power, 1.5, 2)


class Meter:
    def __init__(self, scale: np.ndarray) -> None:
        self.scale = scale

    def read(self, x: Any) -> Any:
        return self.scale * x


@rc.rrule.register(Meter.read)
def _read_rrule(m: Meter, x: Any) -> Any:
    def read_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        if rc.is_zero(ybar):
            return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
        mbar = rc.Tangent[Meter](scale=rc.project(m.scale, ybar * x))
        return rc.NoTangent(), mbar, rc.project(x, ybar * m.scale)

    return m.read(x), read_pullback


def test_bound_methods_are_checked_with_self_as_the_function() -> None:
    m = Meter(np.array([1.0, 2.0]))
    rct.test_rrule(m.read, np.array([0.5, 0.25]))


def test_function_keywords_that_collide_go_in_fkwargs() -> None:
    def f(x: Any, *, rtol: float) -> Any:
        return np.sin(x) * rtol

    @rc.rrule.register(f)
    def _(x: Any, *, rtol: float) -> Any:
        def f_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            return rc.NoTangent(), rc.project(x, ybar * np.cos(x) * rtol)

        return f(x, rtol=rtol), f_pullback

    rct.test_rrule(f, np.array([0.1, 0.2]), fkwargs={"rtol": 2.0})


def test_float32_rules_get_float32_tolerances() -> None:
    # float32 rules are only float32-accurate; finite differences run in float64
    x = np.linspace(-3, 3, 7).astype(np.float32)
    rct.test_rrule(csquare, x)
    rct.test_frule(csquare, x)
    rct.test_rrule(csquare, np.float32(1.5))


def test_rule_tester_fixture(rule_tester: rct.RuleTester) -> None:
    rule_tester.both(csquare, np.array([0.5, -1.0]))
    rule_tester.given(csquare, S.arrays(dtype=np.complex128), max_examples=5)
    assert rc.checks_enabled()
