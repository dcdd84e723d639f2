"""Rules for the ``operator`` module (rulescore/rules/operators.py): the table of cases checked
against finite differences, plus targeted tests (pow edges, broadcasting, sequences, zeros)."""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules import operators
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 5  # hypothesis examples per case


def case(f: Any, args: tuple[Any, ...], name: str = "", **options: Any) -> RuleCase:
    return RuleCase(f, args, name=name, max_examples=options.pop("max_examples", N), **options)


def _push(a: Any, gap: float) -> Any:
    mag = np.abs(a)
    pushed = np.where(mag == 0, gap, a + gap * (a / np.where(mag == 0, 1, mag)))
    if isinstance(a, np.ndarray):
        return pushed.astype(a.dtype)
    return type(a)(pushed[()])


def away0(s: st.SearchStrategy[Any], gap: float = 0.3) -> st.SearchStrategy[Any]:
    """Values (real or complex) at least ``gap`` away from zero (abs and division are smooth)."""
    return s.map(lambda a: _push(a, gap))


def positive(shape: Any = None, dtype: Any = np.float64) -> st.SearchStrategy[np.ndarray]:
    return S.arrays(shape=shape, dtype=dtype, min_value=0.5, max_value=3.0)


F = S.scalars()
C = S.scalars(dtype=complex)
F32S = S.scalars(dtype=np.float32)
A = S.arrays(max_dims=2)
A34 = S.arrays(shape=(3, 4))
A31 = S.arrays(shape=(3, 1))
A4 = S.arrays(shape=(4,))
A0 = S.arrays(shape=())
E03 = S.arrays(shape=(0, 3))
A3 = S.arrays(shape=(3,))
F32 = S.arrays(shape=(3, 4), dtype=np.float32)
C34 = S.arrays(shape=(3, 4), dtype=np.complex128)
C4 = S.arrays(shape=(4,), dtype=np.complex128)


def arith_cases(f: Any, second: Any = None) -> list[RuleCase]:
    """Shapes and dtypes for a binary arithmetic operator; ``second`` maps a strategy of the second
    argument (e.g. to keep divisors away from zero)."""
    g = second or (lambda s: s)
    return [
        case(f, (F, g(F)), "float"),
        case(f, (C, g(C)), "complex"),
        case(f, (F32S, g(F32S)), "float32-scalar"),
        case(f, (A34, g(A34)), "same-shape"),
        case(f, (A31, g(A4)), "broadcast"),
        case(f, (F, g(A34)), "float-array"),
        case(f, (A34, g(F)), "array-float"),
        case(f, (A0, g(A3)), "0d-array"),
        case(f, (E03, g(A3)), "empty"),
        case(f, (F32, g(S.arrays(shape=(4,), dtype=np.float32))), "float32"),
        case(f, (C34, g(A4)), "complex-real"),
        case(f, (C34, g(C4)), "complex"),
        case(f, (3, g(A3)), "int-array"),
    ]


NONDIFF = [
    case(f, args, max_examples=2)
    for f, args in [
        (operator.floordiv, (F, away0(F))), (operator.lt, (F, F)), (operator.le, (A3, A3)),
        (operator.eq, (F, F)), (operator.ne, (A3, F)), (operator.gt, (F, F)), (operator.ge, (F, F)),
        (operator.not_, (F,)), (operator.truth, (F,)), (operator.is_, (F, F)),
        (operator.is_not, (F, None)), (operator.contains, ([1.0, 2.0], F)), (operator.and_, (6, 3)),
        (operator.or_, (6, 3)), (operator.xor, (6, 3)), (operator.invert, (6,)),
        (operator.lshift, (6, 2)), (operator.rshift, (6, 1)), (operator.index, (4,)),
        (operator.countOf, ([1.0, 2.0, 1.0], 1.0)), (operator.indexOf, ([1.0, 2.0], 2.0)),
    ]
]

CASES = [
    *arith_cases(operator.add),
    case(operator.add, ([1.0, 2.0], [3.0]), "list-concat", max_examples=1),
    case(operator.add, (st.tuples(F, A3), st.tuples(F)), "tuple-concat", max_examples=3),
    case(operator.concat, (st.lists(F, min_size=1, max_size=3), st.lists(F, max_size=2)), "lists"),
    *arith_cases(operator.sub),
    *arith_cases(operator.mul),
    case(operator.mul, (st.lists(F, min_size=1, max_size=3), 3), "list-repeat"),
    case(operator.mul, (2, st.tuples(F, A3)), "int-tuple-repeat"),
    *arith_cases(operator.truediv, away0),
    case(operator.mod, (S.scalars(2.3, 2.6), S.scalars(0.97, 1.0)), "float"),
    case(operator.mod, (S.arrays(shape=(3, 1), min_value=2.3, max_value=2.6),
                        S.arrays(shape=(4,), min_value=0.97, max_value=1.0)), "broadcast"),
    case(operator.mod, (S.arrays(shape=(3,), min_value=-0.9, max_value=-0.1), 1.0), "negative"),
    case(operator.mod, (S.arrays(shape=(3,), dtype=np.float32, min_value=2.25, max_value=2.5),
                        np.float32(0.98)), "float32"),
    case(operator.pow, (S.scalars(0.5, 3.0), F), "float"),
    case(operator.pow, (F, 3), "int-exponent"),
    case(operator.pow, (S.scalars(0.5, 3.0), 2.0), "integral-float-exponent"),  # negative bases: plain test
    case(operator.pow, (S.scalars(0.5, 3.0, complex), C), "complex"),
    case(operator.pow, (positive((3, 1)), A4), "broadcast"),
    case(operator.pow, (positive((3, 4)), 2), "array-int-exponent"),  # negative bases: plain tests
    case(operator.pow, (positive((3, 4)), np.array([1, 2, 3, 0])), "int-array-exponent"),
    case(operator.pow, (positive((3, 4), np.float32), S.arrays(shape=(4,), dtype=np.float32)), "float32"),
    case(operator.pow, (2.0, A34), "float-base"),
    case(operator.pow, (positive(()), A3), "0d"),
    case(operator.pow, (S.arrays(shape=(3,), dtype=np.complex128), 3), "complex-int-exponent"),
    *[case(f, (x,), name) for f in (operator.neg, operator.pos)
      for x, name in [(F, "float"), (C, "complex"), (A, "array"), (F32, "float32"), (C34, "complex-array"),
                      (E03, "empty")]],
    case(operator.abs, (away0(F),), "float"),
    case(operator.abs, (away0(A),), "array"),
    case(operator.abs, (away0(F32),), "float32"),
    case(operator.abs, (away0(C),), "complex"),
    case(operator.abs, (away0(C34),), "complex-array"),
    case(operator.abs, (-2,), "int"),
    case(operator.matmul, (A34, S.arrays(shape=(4, 2))), "2d-2d"),
    case(operator.matmul, (A4, A4), "1d-1d"),
    case(operator.matmul, (A4, S.arrays(shape=(4, 3))), "1d-2d"),
    case(operator.matmul, (A34, A4), "2d-1d"),
    case(operator.matmul, (S.arrays(shape=(2, 3, 4)), S.arrays(shape=(4, 5))), "batched"),
    case(operator.matmul, (S.arrays(shape=(2, 1, 3, 4)), S.arrays(shape=(3, 4, 2))), "batch-broadcast"),
    case(operator.matmul, (A4, S.arrays(shape=(2, 4, 3))), "1d-batched"),
    case(operator.matmul, (S.arrays(shape=(2, 3, 4)), A4), "batched-1d"),
    case(operator.matmul, (C34, S.arrays(shape=(4, 2), dtype=np.complex128)), "complex"),
    case(operator.matmul, (C4, C4), "complex-1d"),
    case(operator.matmul, (F32, S.arrays(shape=(4,), dtype=np.float32)), "float32"),
    case(operator.matmul, (S.arrays(shape=(0, 4)), S.arrays(shape=(4, 2))), "empty"),
    *NONDIFF,
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def _pullback(f: Any, *args: Any, ybar: Any = 1.0) -> tuple[Any, ...]:
    """The cotangents of ``f(*args)``, unthunked (a rule may defer one nobody may read)."""
    y, back = rc.rrule(f, *args)
    return tuple(rc.unthunk(c) for c in back(ybar))


def test_pow_negative_base_integer_exponent_has_no_nan() -> None:
    """An integer exponent gets a float cotangent (ChainRules projects integers onto the reals);
    for a negative base it is ``z * log(-x)``, the derivative of the real part of ``x ** p``."""
    _, dx, dp = _pullback(operator.pow, -2.0, 3)
    assert dx == 12.0 and type(dp) is float and dp == pytest.approx(-8.0 * np.log(2.0))
    _, dx, dp = _pullback(operator.pow, -2.0, 2.0)  # integer-valued float exponent
    assert dx == -4.0 and dp == pytest.approx(4.0 * np.log(2.0))
    x = np.array([-2.0, 0.0, 1.5])
    _, dx, dp = _pullback(operator.pow, x, 2.0, ybar=np.ones(3))  # x == 0 contributes 0 to dp
    assert np.array_equal(dx, 2 * x) and dp == pytest.approx(4.0 * np.log(2.0) + 1.5 ** 2 * np.log(1.5))
    _, dx, dp = _pullback(operator.pow, x, np.full(3, 2.0), ybar=np.ones(3))
    np.testing.assert_allclose(dp, [4.0 * np.log(2.0), 0.0, 1.5 ** 2 * np.log(1.5)])
    _, dx, dp = _pullback(operator.pow, x, np.array([3, 2, 2]), ybar=np.ones(3))
    assert np.all(np.isfinite(dx)) and dp.dtype == np.float64
    np.testing.assert_allclose(dp, [-8.0 * np.log(2.0), 0.0, 1.5 ** 2 * np.log(1.5)])
    _, dx, dp = _pullback(np.power, x, 2, ybar=np.ones(3))
    assert np.array_equal(dx, 2 * x) and type(dp) is float


@pytest.mark.parametrize("f", [operator.pow, np.power, math.pow, builtins.pow, np.float_power])
@pytest.mark.parametrize("x, p", [(2.0, 3), (-1.5, 2), (0.5, np.int64(-2)), (3.0, 0)])
def test_pow_integer_exponent_gets_the_float_derivative_of_every_pow(f: Any, x: float, p: Any) -> None:
    """Every spelling of pow gives an integer exponent the same float cotangent, ``z * log|x|``,
    which finite differences along a real exponent agree with (real part for a negative base)."""
    _, dx, dp = _pullback(f, x, p)
    assert isinstance(dp, float) and not isinstance(dp, bool)
    step = 1e-6
    fd = (complex(x) ** (float(p) + step) - complex(x) ** (float(p) - step)).real / (2 * step)
    assert dp == pytest.approx(fd, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f", [operator.pow, np.power])
def test_pow_boolean_exponent_has_no_tangent(f: Any) -> None:
    assert isinstance(_pullback(f, 2.0, True)[2], rc.NoTangent)
    assert isinstance(_pullback(f, np.ones(2), np.array([True, False]), ybar=np.ones(2))[2], rc.NoTangent)


@pytest.mark.parametrize("p, expected", [(1.0, 1.0), (2.0, 0.0), (0.0, 0.0), (0.5, np.inf), (3, 0.0)])
def test_pow_derivative_at_zero_is_its_limit(p: Any, expected: float) -> None:
    assert _pullback(operator.pow, 0.0, p)[1] == expected
    got = _pullback(operator.pow, np.zeros(2), p, ybar=np.ones(2))[1]
    assert np.array_equal(got, [expected, expected])
    assert rc.frule((None, 1.0, 0.0), operator.pow, 0.0, p)[1] == expected


def test_broadcasting_sums_back_and_keeps_float32() -> None:
    x, y = np.ones((3, 1), np.float32), np.ones(4, np.float32)
    _, dx, dy = _pullback(operator.mul, x, y, ybar=np.ones((3, 4), np.float32))
    assert dx.shape == (3, 1) and dx.dtype == np.float32 and np.all(dx == 4)
    assert dy.shape == (4,) and dy.dtype == np.float32 and np.all(dy == 3)
    _, dx, dy = _pullback(operator.add, 2.0, np.ones((2, 3)), ybar=np.ones((2, 3)))
    assert dx == 6.0 and isinstance(dx, float)


def test_python_floats_stay_python_floats() -> None:
    for f in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
        _, dx, dy = _pullback(f, 1.5, 2.5)
        assert type(dx) is float and type(dy) is float, f
    y, ydot = rc.frule((None, 1.0, 1.0), operator.mul, 1.5, 2.5)
    assert type(ydot) is float and ydot == 4.0


def test_zero_cotangents_give_zeros_early() -> None:
    for zero in (None, rc.ZeroTangent(), rc.NoTangent()):
        assert _pullback(operator.mul, np.ones(2), np.ones(2), ybar=zero)[1:] == (rc.ZeroTangent(),) * 2
    assert rc.frule((None, None, rc.ZeroTangent()), operator.add, 1.0, 2.0)[1] == rc.ZeroTangent()


def test_complex_mul_conjugates() -> None:
    _, dx, dy = _pullback(operator.mul, 1 + 2j, 3 - 1j, ybar=1.0 + 0j)
    assert dx == 3 + 1j and dy == 1 - 2j
    _, dx, dy = _pullback(operator.mul, 2.0, 1j)  # a real argument gets the real part
    assert dx == 0.0 and dy == 2.0


def test_abs_zero_and_complex() -> None:
    assert _pullback(operator.abs, 0.0)[1] == 0.0
    assert _pullback(operator.abs, 3 + 4j)[1] == pytest.approx(0.6 + 0.8j)
    assert np.array_equal(_pullback(operator.abs, np.array([0j, 1j]), ybar=np.ones(2))[1], [0, 1j])


def test_sequences() -> None:
    y, back = rc.rrule(operator.add, [1.0, 2.0], [3.0])
    assert y == [1.0, 2.0, 3.0]
    assert back(rc.Tangent[list](1.0, 2.0, 3.0)) == (rc.NoTangent(), rc.Tangent[list](1.0, 2.0),
                                                     rc.Tangent[list](3.0))
    y, back = rc.rrule(operator.mul, (1.0, 2.0), 2)
    assert back(rc.Tangent[tuple](1.0, 2.0, 3.0, 4.0)) == (rc.NoTangent(), rc.Tangent[tuple](4.0, 6.0),
                                                           rc.NoTangent())
    assert rc.rrule(operator.add, "a", "b")[1]("x") == (rc.NoTangent(),) * 3


def test_string_formatting_is_not_differentiated() -> None:
    y, back = rc.rrule(operator.mod, "%.1f", 2.0)
    assert y == "2.0" and all(rc.is_zero(c) for c in back(1.0))


def test_pullbacks_are_named() -> None:
    for f in (operator.add, operator.mul, operator.pow, operator.matmul):
        args = (np.ones((2, 2)), np.ones((2, 2)))
        assert rc.rrule(f, *args)[1].__name__ == f"{f.__name__}_pullback"


def test_helpers() -> None:
    assert operators.proj(1.0, np.ones(3)) == 3.0
    assert operators.fit(np.zeros(2), 1.0).shape == (2,)
    assert operators.is_int_like(np.arange(2)) and not operators.is_int_like(2.0)


def test_adding_two_arrays_projects_each_cotangent_onto_its_own_operand() -> None:
    """Two arrays (a layer's bias): each operand's cotangent is summed back over the axes it was
    broadcast along and of its own dtype; the pullback keeps stand-ins, not the operands."""
    import weakref

    x, y = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    ybar = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with rc.checking(False):  # (checking mode keeps the arguments, to check the rule with)
        z, back = rc.rrule(operator.add, x, y)
    seen = weakref.ref(x)
    del x
    assert seen() is None and z.dtype == np.float64
    _, dx, dy = back(ybar)
    assert dx.dtype == np.float32 and dx.shape == (2, 3) and dy.shape == (3,)
    np.testing.assert_array_equal(dx, ybar.astype(np.float32))
    np.testing.assert_array_equal(dy, [5.0, 7.0, 9.0])
    with pytest.raises(rc.ProjectionError):
        back(np.ones((2, 4)))
    assert _pullback(operator.add, [1.0], [2.0, 3.0], ybar=rc.Tangent[list](4.0, 5.0, 6.0))[1:] == (
        rc.Tangent[list](4.0), rc.Tangent[list](5.0, 6.0))
