"""Rules for the ``math`` module (rulescore/rules/math.py): every function of the module checked
against finite differences on a domain where it is smooth, plus targeted tests (infinite
derivatives at the domain edge, accuracy of expm1, sequences, coverage of ``dir(math)``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules import math as math_rules
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 6  # hypothesis examples per case


def case(f: Any, args: tuple[Any, ...], name: str = "", **options: Any) -> RuleCase:
    return RuleCase(f, args, name=name, max_examples=options.pop("max_examples", N), **options)


def R(lo: float = -3.0, hi: float = 3.0) -> st.SearchStrategy[float]:
    return S.scalars(lo, hi)


def away0(lo: float = 0.3, hi: float = 3.0) -> st.SearchStrategy[float]:
    return st.one_of(S.scalars(lo, hi), S.scalars(-hi, -lo))


F = R()
UNARY = [
    (math.sin, F), (math.cos, F), (math.tan, R(-1.2, 1.2)), (math.asin, R(-0.9, 0.9)),
    (math.acos, R(-0.9, 0.9)), (math.atan, F), (math.sinh, F), (math.cosh, F), (math.tanh, F),
    (math.asinh, F), (math.acosh, R(1.2, 3.0)), (math.atanh, R(-0.9, 0.9)), (math.exp, F),
    (math.expm1, F), (math.log1p, R(-0.8, 3.0)), (math.log2, R(0.1, 3.0)), (math.log10, R(0.1, 3.0)),
    (math.log, R(0.1, 3.0)), (math.sqrt, R(0.1, 3.0)), (math.erf, F), (math.erfc, F),
    (math.gamma, R(0.5, 3.0)), (math.lgamma, R(0.5, 3.0)), (math.fabs, away0()), (math.degrees, F),
    (math.radians, F),
]
if hasattr(math, "exp2"):
    UNARY.append((math.exp2, F))
if hasattr(math, "cbrt"):
    UNARY.append((math.cbrt, away0()))

NONDIFF = [
    case(f, args, max_examples=2)
    for f, args in [
        (math.floor, (F,)), (math.ceil, (F,)), (math.trunc, (F,)), (math.isfinite, (F,)),
        (math.isinf, (F,)), (math.isnan, (F,)), (math.isclose, (F, F)), (math.factorial, (5,)),
        (math.comb, (5, 2)), (math.perm, (5, 2)), (math.gcd, (12, 18)), (math.lcm, (4, 6)),
        (math.isqrt, (17,)), (math.ulp, (F,)),
    ]
]

CASES = [
    *[case(f, (x,)) for f, x in UNARY],
    case(math.sin, (S.scalars(dtype=np.float32),), "float32"),
    case(math.sqrt, (3,), "int"),
    case(math.gamma, (R(-2.7, -2.3),), "negative"),
    case(math.lgamma, (R(-2.7, -2.3),), "negative"),
    case(math.lgamma, (R(6.0, 30.0),), "large"),
    case(math.log, (R(0.1, 3.0), R(1.5, 3.0)), "base"),
    case(math.log, (R(0.1, 3.0), R(0.2, 0.7)), "base-below-1"),
    case(math.atan2, (F, R(0.3, 3.0)), "right-half"),
    case(math.atan2, (R(0.3, 3.0), F), "upper-half"),
    case(math.hypot, (away0(), F), "2-args"),
    case(math.hypot, (F, away0(), F), "3-args"),
    case(math.hypot, (away0(),), "1-arg"),
    case(math.pow, (R(0.5, 3.0), F), "float"),
    case(math.pow, (R(0.5, 3.0), 3), "int-exponent"),  # negative bases: test_pow_conventions
    case(math.copysign, (away0(), away0())),
    case(math.nextafter, (away0(), away0())),
    case(math.fmod, (R(2.3, 2.6), R(0.97, 1.0)), "positive"),
    case(math.fmod, (R(-2.6, -2.3), R(0.97, 1.0)), "negative"),
    case(math.remainder, (R(2.1, 2.3), R(0.97, 1.0))),
    case(math.ldexp, (F, 3), "positive"),
    case(math.ldexp, (F, -2), "negative"),
    case(math.fsum, (st.lists(F, max_size=4),), "list"),
    case(math.fsum, (st.tuples(F, F),), "tuple"),
    case(math.prod, (st.lists(F, min_size=1, max_size=4),), "list"),
    case(math.prod, (st.tuples(F, F, F),), "tuple"),
    case(math.prod, ([2.0, 0.0, 3.0],), "zero", max_examples=1),
    RuleCase(math.prod, (st.lists(F, min_size=1, max_size=3),), {"start": 1.5}, name="start", max_examples=N),
    case(math.prod, (S.arrays(shape=(3,)),), "array"),
    case(math.dist, (st.tuples(R(-3.0, -1.0), R(-3.0, -1.0)), st.tuples(R(1.0, 3.0), F)), "tuples"),
    case(math.dist, (st.lists(R(-3.0, -1.0), min_size=3, max_size=3), [1.0, 2.0, 0.5]), "lists"),
    case(math.dist, (S.arrays(shape=(3,), min_value=-3.0, max_value=-1.0),
                     S.arrays(shape=(3,), min_value=1.0, max_value=3.0)), "arrays"),
    case(math.frexp, (R(1.3, 1.7),), "in-1-2"),
    case(math.frexp, (R(-5.5, -4.5),), "negative"),
    case(math.modf, (R(2.3, 2.7),), "positive"),
    case(math.modf, (R(-1.7, -1.3),), "negative"),
    *NONDIFF,
]
if hasattr(math, "fma"):  # Python 3.13+
    CASES.append(case(math.fma, (F, F, F)))
if hasattr(math, "sumprod"):  # Python 3.12+
    CASES.append(case(math.sumprod, (st.tuples(F, F), st.tuples(F, F))))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def _grad(f: Any, *args: Any) -> tuple[Any, ...]:
    return rc.rrule(f, *args)[1](1.0)[1:]  # type: ignore[no-any-return]


def test_every_function_of_math_is_covered() -> None:
    functions = [getattr(math, n) for n in dir(math) if not n.startswith("_") and callable(getattr(math, n))]
    missing = [f.__name__ for f in functions if not rc.rrule.has_rules(f) or not rc.frule.has_rules(f)]
    assert not missing


@pytest.mark.parametrize("f, x, expected", [
    (math.sqrt, 0.0, math.inf), (math.asin, 1.0, math.inf), (math.asin, -1.0, math.inf),
    (math.acos, 1.0, -math.inf), (math.acosh, 1.0, math.inf),
] + ([(math.cbrt, 0.0, math.inf)] if hasattr(math, "cbrt") else []))
def test_infinite_derivatives_at_the_edge_are_inf_not_nan(f: Any, x: float, expected: float) -> None:
    assert _grad(f, x)[0] == expected
    assert rc.frule((None, 1.0), f, x)[1] == expected


def test_origin_uses_the_zero_subgradient() -> None:
    assert _grad(math.hypot, 0.0, 0.0) == (0.0, 0.0)
    assert _grad(math.atan2, 0.0, 0.0) == (0.0, 0.0)
    assert _grad(math.dist, (1.0, 2.0), (1.0, 2.0)) == (rc.Tangent[tuple](0.0, 0.0),) * 2


def test_expm1_derivative_is_accurate_for_large_negative_x() -> None:
    assert _grad(math.expm1, -30.0)[0] == pytest.approx(math.exp(-30.0), rel=1e-14)
    assert _grad(math.log1p, 1e-20)[0] == 1.0


def test_pow_conventions() -> None:
    assert _grad(math.pow, -2.0, 3) == pytest.approx((12.0, -8.0 * math.log(2.0)))  # an int: a float
    assert _grad(math.pow, -2.0, 2.0) == pytest.approx((-4.0, 4.0 * math.log(2.0)))  # Re of d/dp
    assert _grad(math.pow, 0.0, 2.0) == (0.0, 0.0)


def test_sequences_get_structural_cotangents() -> None:
    assert _grad(math.fsum, [1.0, 2.0]) == (rc.Tangent[list](1.0, 1.0),)
    assert _grad(math.prod, (2.0, 0.0, 3.0)) == (rc.Tangent[tuple](0.0, 6.0, 0.0),)


def test_digamma_matches_scipy() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    for x in (0.3, 1.0, 2.5, 7.9, 40.0, -1.5):
        assert math_rules._digamma(x) == pytest.approx(float(scipy_special.digamma(x)), rel=1e-12)
