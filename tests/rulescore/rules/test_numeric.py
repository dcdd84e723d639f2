"""Tests for :mod:`rulescore.rules.numeric`: one ``RuleCase`` per registered callable (checked
against finite differences by ``rulescore.testing``), then the conventions finite differences do
not pin down, and each function differentiated by zygotepy as a user writes it."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from tests.zygotepy.finite_differences import fd

from ._cases import RuleCase, case_id, check_case

F32, C128 = np.float32, np.complex128
N = 5


def A(shape: Any = None, dtype: Any = np.float64, **kw: Any) -> Any:
    return S.arrays(shape=shape, dtype=dtype, **kw)


def around(centres: list[float], spread: float = 0.2) -> Any:
    """Arrays within ``spread`` of ``centres`` (kept away from kinks)."""
    return A((len(centres),), min_value=-spread, max_value=spread).map(lambda e: e + np.array(centres))


def distinct(shape: tuple[int, ...]) -> Any:
    """Arrays of distinct values at least 0.8 apart (no ties)."""
    n = int(np.prod(shape))
    return st.permutations(list(range(n))).map(
        lambda p: ((np.array(p, dtype=float) - n / 2) * 0.8).reshape(shape))


KNOTS = [-2.0, -1.0, 0.5, 2.0]
QUERIES = [-2.5, -1.5, -0.3, 1.2, 2.7]  # two outside the knots, three inside, none near a knot

CASES = [
    RuleCase(np.diff, (A((5,)),), max_examples=N),
    RuleCase(np.diff, (A((3, 4)), 2, 0), nondiff=(1, 2), name="n2-axis0", max_examples=N),
    RuleCase(np.diff, (A((4,), C128),), name="complex", max_examples=N),
    RuleCase(np.diff, (A((4,)), 1, -1, S.scalars(), A((2,))), nondiff=(1, 2), name="prepend-append",
             max_examples=N),
    RuleCase(np.diff, (A((2, 3), F32),), {"prepend": 0.0}, name="float32-kwarg", max_examples=N),
    RuleCase(np.ptp, (distinct((5,)),), max_examples=N),
    RuleCase(np.ptp, (distinct((3, 4)), 1), nondiff=(1,), name="axis", max_examples=N),
    RuleCase(np.sinc, (A((4,)),), max_examples=N),
    RuleCase(np.sinc, (np.array([0.0, 1.0, -2.5]),), name="at-zero"),
    RuleCase(np.nan_to_num, (A((4,)),), max_examples=N),
    RuleCase(np.nan_to_num, (A((3,), C128),), name="complex", max_examples=N),
    RuleCase(np.real_if_close, (A((3,)).map(lambda v: v + 0j),), name="real", max_examples=N),
    RuleCase(np.real_if_close, (A((3,), C128, min_value=0.5),), name="complex", max_examples=N),
    RuleCase(np.gradient, (A((5,)),), max_examples=N),
    RuleCase(np.gradient, (A((5,)), S.scalars(0.5, 2.0)), name="spacing", max_examples=N),
    RuleCase(np.gradient, (A((4, 3)),), {"edge_order": 2}, name="2d", max_examples=N),
    RuleCase(np.gradient, (A((4, 3)), S.scalars(0.5, 2.0), S.scalars(0.5, 2.0)), name="2d-spacings",
             max_examples=N),
    RuleCase(np.gradient, (A((5,)), around([0.0, 1.0, 2.0, 3.0, 4.0])), name="coordinates", frule=False,
             max_examples=N),
    RuleCase(np.take_along_axis, (A((3, 4)), np.array([[0, 3], [1, 1], [2, -1]]), 1), nondiff=(1, 2),
             max_examples=N),
    RuleCase(np.take_along_axis, (A((5,)), np.array([4, 0, 0, 2]), None), nondiff=(1, 2), name="flat",
             max_examples=N),
    RuleCase(np.take_along_axis, (A((2, 3), C128), np.array([[1, 0, 1]]), 0), nondiff=(1, 2),
             name="complex-broadcast", max_examples=N),
    RuleCase(np.partition, (distinct((6,)), 2), nondiff=(1,), max_examples=N),
    RuleCase(np.partition, (distinct((3, 4)), 1, 0), nondiff=(1, 2), name="axis0", max_examples=N),
    RuleCase(np.partition, (distinct((2, 3)), 3, None), nondiff=(1, 2), name="flat", max_examples=N),
    RuleCase(np.rollaxis, (A((2, 3, 4)), 2), nondiff=(1,), max_examples=N),
    RuleCase(np.rollaxis, (A((2, 3, 4)), 0, 3), nondiff=(1, 2), name="start", max_examples=N),
    RuleCase(np.select, ([np.array([True, False, False]), np.array([True, True, False])],
                         st.lists(A((3,)), min_size=2, max_size=2), S.scalars()), nondiff=(0,),
             max_examples=N),
    RuleCase(np.select, ([np.array([[True], [False]])], st.tuples(S.scalars())), nondiff=(0,),
             name="broadcast-scalar", max_examples=N),
    RuleCase(operator.getitem, (np.r_, st.tuples(A((2,)), S.scalars(), A((3,)))), nondiff=(0,),
             name="r_", max_examples=N),
    RuleCase(operator.getitem, (np.r_, st.tuples(st.just("1,2"), A((2,)), A((3,)))), nondiff=(0,),
             name="r_-directive", max_examples=N),
    RuleCase(operator.getitem, (np.c_, st.tuples(A((3,)), A((3, 2)))), nondiff=(0,), name="c_",
             max_examples=N),
    RuleCase(operator.getitem, (np.r_, A((3,), C128)), nondiff=(0,), name="r_-single", max_examples=N),
    RuleCase(np.ndarray.item, (A((2, 3)), 4), nondiff=(1,), max_examples=N),
    RuleCase(np.ndarray.item, (A((2, 3)), (1, 2)), nondiff=(1,), name="tuple", max_examples=N),
    RuleCase(np.ndarray.item, (A((1, 1), C128),), name="single", max_examples=N),
    RuleCase(np.generic.item, (S.scalars().map(np.float64),), max_examples=N),
    RuleCase(np.ndarray.tolist, (A((2, 3)),), max_examples=N),
    RuleCase(np.ndarray.tolist, (A(()),), name="0d", max_examples=N),
    RuleCase(np.generic.tolist, (S.scalars().map(np.float64),), name="scalar", max_examples=N),
    RuleCase(np.interp, (around(QUERIES), around(KNOTS, 0.1), A((4,))), max_examples=N),
    RuleCase(np.interp, (around(QUERIES), np.array(KNOTS), A((4,)), S.scalars(), S.scalars()),
             name="left-right", max_examples=N),
    RuleCase(np.interp, (S.scalars(-0.2, 0.2), np.array(KNOTS), A((4,), C128)), name="scalar-complex",
             max_examples=N),
    RuleCase(np.convolve, (A((5,)), A((3,))), max_examples=N),
    RuleCase(np.convolve, (A((2,)), A((4,)), "same"), nondiff=(2,), name="same", max_examples=N),
    RuleCase(np.convolve, (A((5,), C128), A((3,), C128)), {"mode": "valid"}, name="valid-complex",
             max_examples=N),
    RuleCase(np.correlate, (A((5,)), A((3,))), max_examples=N),
    RuleCase(np.correlate, (A((3,), C128), A((4,), C128), "full"), nondiff=(2,), name="full-complex",
             max_examples=N),
    RuleCase(np.correlate, (A((4,)), A((2,)), "same"), nondiff=(2,), name="same", max_examples=N),
    RuleCase(np.round, (A((3,)),), max_examples=N),
    RuleCase(np.around, (A((3,)), 1), nondiff=(1,), max_examples=N),
    RuleCase(np.ndarray.round, (A((3,)),), max_examples=N),
]

#: np.vectorize's rules run the user's function through the engine (rc.rrule_via_ad): tested through
#: zygotepy (test_vectorize_through_zygotepy_in_both_modes).
COVERED = [np.vectorize.__call__]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


# ----------------------------------------------------------------------------------------------
# conventions
# ----------------------------------------------------------------------------------------------


def test_ptp_splits_ties_like_max() -> None:
    _, back = rc.rrule(np.ptp, np.array([1.0, 3.0, 3.0, 0.0]))
    np.testing.assert_allclose(back(1.0)[1], [0.0, 0.5, 0.5, -1.0])


def test_nan_to_num_sends_nothing_to_replaced_entries() -> None:
    x = np.array([1.0, np.nan, np.inf, -2.0])
    _, back = rc.rrule(np.nan_to_num, x)
    np.testing.assert_array_equal(back(np.ones(4))[1], [1.0, 0.0, 0.0, 1.0])


def test_interp_refuses_period() -> None:
    with pytest.raises(NotImplementedError, match="period"):
        rc.rrule(np.interp, 0.5, np.array([0.0, 1.0]), np.array([0.0, 1.0]), period=1.0)


def test_interp_at_a_knot_uses_the_right_slope() -> None:
    _, back = rc.rrule(np.interp, 1.0, np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 5.0]))
    assert back(1.0)[1] == pytest.approx(4.0)


def test_round_is_non_differentiable() -> None:
    _, back = rc.rrule(np.round, np.array([0.4, 1.6]))
    assert back(np.ones(2)) == (rc.NoTangent(), rc.NoTangent())


@given(st.lists(st.floats(-2, 2), min_size=5, max_size=5), st.lists(st.floats(-1, 1), min_size=5, max_size=5),
       st.booleans(), st.sampled_from([1, 2]))
def test_gradient_frule_moves_coordinates_like_finite_differences(values: list[float], direction: list[float],
                                                                  complex_f: bool, edge_order: int) -> None:
    """A coordinate array's tangent (real or complex ``f``) agrees with a central difference."""
    x, hdot = np.array([0.0, 1.0, 2.5, 3.0, 4.5]), np.array(direction)
    f = np.array(values) * (1 + 0.5j if complex_f else 1.0)
    fdot = np.cos(np.arange(5.0))
    _, ydot = rc.frule((rc.NoTangent(), fdot, hdot), np.gradient, f, x, edge_order=edge_order)
    eps = 1e-6
    expected = (np.gradient(f + eps * fdot, x + eps * hdot, edge_order=edge_order)
                - np.gradient(f - eps * fdot, x - eps * hdot, edge_order=edge_order)) / (2 * eps)
    np.testing.assert_allclose(ydot, expected, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------------
# as a user writes it: zygotepy against finite differences
# ----------------------------------------------------------------------------------------------
zp = pytest.importorskip("zygotepy")
RNG = np.random.default_rng(0)
X = RNG.normal(size=5)
M = RNG.normal(size=(3, 4))
W5 = RNG.normal(size=5)


def user_diff(x: np.ndarray) -> Any:
    return np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, n=2) * W5[:3])


def user_ptp(x: np.ndarray) -> Any:
    return np.ptp(x) * np.sum(np.sinc(x) * W5)


def user_gradient(x: np.ndarray) -> Any:
    t = np.array([0.0, 0.5, 1.5, 2.0, 3.5])
    return np.sum(np.gradient(x, t) ** 2) + np.sum(np.gradient(x * x, 0.5) * W5)


def user_select(x: np.ndarray) -> Any:
    return np.sum(np.select([x > 0, x < -0.5], [x ** 2, np.sin(x)], default=1.0) * W5)


def user_concat(x: np.ndarray) -> Any:
    rows = np.r_[x, 1.0, x[:2] ** 2]
    columns = np.c_[x, x ** 3]
    return np.sum(rows * np.arange(8.0)) + np.sum(columns @ np.array([1.0, -2.0]))


def user_interp(x: np.ndarray) -> Any:
    knots = np.linspace(-3.0, 3.0, 7)
    in_queries = np.sum(np.interp(x, knots, knots ** 2))
    return in_queries + np.sum(np.interp(np.array([0.3, -1.2]), np.linspace(-2, 2, 5), x))


def user_convolve(x: np.ndarray) -> Any:
    kernel = np.array([0.25, 0.5, 0.25])
    return np.sum(np.convolve(x, kernel, "same") ** 2) + np.sum(np.correlate(x, x[:3]) ** 2)


def user_sorting(m: np.ndarray) -> Any:
    order = np.argsort(m, axis=1)
    return (np.sum(np.take_along_axis(m, order, axis=1) * np.arange(12.0).reshape(3, 4))
            + np.sum(np.partition(m.ravel(), 3)[:3]) + np.sum(np.rollaxis(m, 1) ** 2 * np.arange(3.0)))


def user_python_values(x: np.ndarray) -> Any:
    y = x ** 2
    return y.item(1) + sum(y.tolist()) + np.nan_to_num(np.real_if_close(x + 0j)).sum()


USER = [(user_diff, X), (user_ptp, X), (user_gradient, X), (user_select, X), (user_concat, X),
        (user_interp, X), (user_convolve, X), (user_sorting, M), (user_python_values, X)]


@pytest.mark.parametrize(("f", "x"), USER, ids=[f.__name__ for f, _ in USER])
def test_zygotepy_matches_finite_differences(f: Any, x: np.ndarray) -> None:
    (g,) = zp.gradient(f, x)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-5, atol=1e-6)


def partitioned(x: np.ndarray) -> Any:
    """np.partition as order statistics are computed with it (the k-th smallest, a trimmed sum)."""
    low = np.partition(x, 2)
    rows = np.partition(x.reshape(2, 3), 1, axis=1)
    return low[2] ** 3 + np.sum(low[:2] ** 2) + np.sum(rows ** 3 * np.arange(6.0).reshape(2, 3)) \
        + np.sum(x[np.argpartition(x, 1)[:1]] ** 2)


def test_partition_to_second_order() -> None:
    """The second derivative traces partition's rule, which calls np.argpartition: an index
    function with no derivative (it was refused inside the outer derivative)."""
    import zygotepy as zp

    x = np.array([0.3, -1.2, 0.8, 2.0, 0.1, -0.7])
    np.testing.assert_allclose(zp.gradient(partitioned, x)[0], fd(partitioned, x), rtol=1e-6, atol=1e-8)
    rows = np.array([fd(lambda v, i=i: zp.gradient(partitioned, v)[0][i], x) for i in range(6)])
    np.testing.assert_allclose(zp.hessian(partitioned, x), rows, rtol=1e-5, atol=1e-6)
    _, slope = zp.jvp(partitioned, (x,), (np.ones(6),))
    np.testing.assert_allclose(slope, fd(partitioned, x).sum(), rtol=1e-6)


def test_vectorize_through_zygotepy_in_both_modes() -> None:
    """np.vectorize of a Python scalar function, with broadcasting, an integer argument, a scalar
    call and a constant the function closes over."""
    import math

    import zygotepy as zp

    scale = np.array([1.5])

    def element(a: float, b: float, k: int) -> float:
        return math.sin(a) * b ** k + scale[0] * a if a > 0 else a * b

    vectorized = np.vectorize(element)

    def f(x: np.ndarray) -> Any:
        grid = vectorized(x[:, None], np.array([0.5, 2.0]) * x[0], 2)
        return np.sum(grid ** 2) + vectorized(x[1], 3.0, 1)

    x = np.array([0.4, -0.3, 1.2])
    want = fd(f, x)
    np.testing.assert_allclose(zp.gradient(f, x)[0], want, rtol=1e-6, atol=1e-8)
    _, slope = zp.jvp(f, (x,), (np.array([1.0, -2.0, 0.5]),))
    np.testing.assert_allclose(slope, want @ np.array([1.0, -2.0, 0.5]), rtol=1e-6)
    # a function closing over a traced value is refused (its pyfunc is run by NumPy), not lost
    with pytest.raises(zp.UntraceableError, match="traced value was (converted|used)"):
        zp.gradient(lambda x, c: np.sum(np.vectorize(lambda a: c * a)(x)), x, 2.0)


def test_vectorize_refuses_signatures_and_several_outputs_by_name() -> None:
    def pair(a: float) -> Any:
        return a, 2 * a

    import zygotepy as zp

    with pytest.raises(NotImplementedError, match=r"numpy\.vectorize\(.*pair\) differentiates one output"):
        zp.gradient(lambda x: np.sum(np.vectorize(pair)(x)[0]), np.ones(2))
    with pytest.raises(NotImplementedError, match="no signature="):
        zp.gradient(lambda x: np.sum(np.vectorize(np.sum, signature="(n)->()")(x)), np.ones((2, 3)))
