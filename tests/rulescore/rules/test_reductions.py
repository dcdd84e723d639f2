"""Rules for reductions and scans (rulescore/rules/reductions.py): the table of cases checked
against finite differences, plus targeted tests (ties, zeros in prod, the logsumexp idiom)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.special
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules import reductions
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 5  # hypothesis examples per case: the rules are cheap, the finite differences are not


def case(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, name: str = "",
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N),
                    **options)


def distinct(shape: tuple[int, ...], dtype: Any = np.float64) -> st.SearchStrategy[np.ndarray]:
    """Arrays whose elements are at least 0.5 apart: max/min/std are smooth there."""
    n = int(np.prod(shape))

    def build(perm: list[int], offset: float) -> np.ndarray:
        return (np.reshape(np.array(perm, dtype=np.float64), shape) * 0.5 + offset).astype(dtype)

    return st.builds(build, st.permutations(list(range(n))), st.floats(-2.0, 0.0))


def with_zeros(shape: tuple[int, ...], dtype: Any = np.float64) -> st.SearchStrategy[np.ndarray]:
    """Arrays with one or more exact zeros (prod and cumprod must not divide by them)."""
    n = int(np.prod(shape))

    def put(a: np.ndarray, where: list[int]) -> np.ndarray:
        flat = a.reshape(-1).copy()
        flat[where] = 0
        return flat.reshape(shape)

    return st.builds(put, S.arrays(shape=shape, dtype=dtype),
                     st.lists(st.integers(0, n - 1), min_size=1, max_size=2))


A34 = S.arrays(shape=(3, 4))
A234 = S.arrays(shape=(2, 3, 4))
ANY = S.arrays()
F32 = S.arrays(shape=(3, 4), dtype=np.float32)
C34 = S.arrays(shape=(3, 4), dtype=np.complex128)
MASK = np.array([[True, False, True, True], [False, True, True, False], [True, True, True, True]])

SUM_LIKE_CASES = [
    case(f, (x,), kw, name)
    for f in (np.sum, np.ndarray.sum, np.mean, np.ndarray.mean)
    for x, kw, name in [
        (ANY, {}, "any-shape"),
        (A34, {"axis": 0}, "axis0"),
        (A234, {"axis": -1}, "axis-neg"),
        (A234, {"axis": (0, 2)}, "axis-tuple"),
        (A234, {"axis": (0, -1), "keepdims": True}, "keepdims"),
        (F32, {"axis": 1}, "float32"),
        (C34, {"axis": None, "keepdims": True}, "complex"),
    ]
]

CASES = [
    *SUM_LIKE_CASES,
    case(np.sum, (A34, 1), name="positional-axis"),
    case(np.sum, (S.arrays(shape=()),), name="0d"),
    case(np.sum, (S.arrays(shape=(0, 3)),), {"axis": 0}, "empty"),
    case(np.sum, (A34,), {"axis": 1, "where": MASK}, "where"),
    case(np.sum, (A34,), {"dtype": np.complex128}, "dtype"),
    case(np.sum, (S.arrays(shape=(3,), dtype=np.int64),), {}, "int"),
    case(np.mean, (A34,), {"axis": 1, "where": MASK}, "where"),
    case(np.mean, (S.arrays(shape=(4,), dtype=np.float32),), {"dtype": np.float64}, "dtype"),
    case(np.add.reduce, (A34,), name="default-axis"),
    case(np.add.reduce, (A234,), {"axis": None, "keepdims": True}, "all"),
    case(np.nansum, (A34,), {"axis": 1}),
    case(np.nansum, (np.array([1.5, np.nan, -2.0]),), name="nan"),
    # prod: exact with zeros
    *[case(f, (x,), kw, name)
      for f in (np.prod, np.ndarray.prod)
      for x, kw, name in [
          (ANY, {}, "any-shape"),
          (A234, {"axis": 1}, "axis"),
          (A234, {"axis": (0, -1), "keepdims": True}, "axis-tuple-keepdims"),
          (with_zeros((3, 4)), {"axis": 1}, "zeros"),
          (with_zeros((2, 3)), {}, "zeros-all"),
          (C34, {"axis": 0}, "complex"),
          (S.arrays(shape=(2, 3), dtype=np.float32), {"axis": -1}, "float32"),
      ]],
    case(np.prod, (S.arrays(shape=(0, 2)),), {"axis": 0}, "empty"),
    case(np.prod, (A34,), {"axis": 1, "where": MASK}, "where"),
    case(np.prod, (A34,), {"axis": 0, "initial": 2.0}, "initial"),
    # var, std
    *[case(f, (x, *extra), kw, name)
      for f in (np.var, np.ndarray.var)
      for x, extra, kw, name in [
          (ANY, (), {}, "any-shape"),
          (A234, (), {"axis": (0, 2), "ddof": 1}, "ddof"),
          (A34, (-1, None, None, 1, True), {}, "positional"),
          (C34, (), {"axis": 0}, "complex"),
          (F32, (), {"axis": 1, "keepdims": True}, "float32"),
      ]],
    case(np.var, (A34,), {"axis": 1, "where": MASK, "correction": 1}, "where"),
    *[case(f, (x,), kw, name)
      for f in (np.std, np.ndarray.std)
      for x, kw, name in [
          (distinct((3, 4)), {}, "all"),
          (distinct((2, 3, 4)), {"axis": -1, "ddof": 1}, "axis-ddof"),
          (distinct((2, 3, 4)), {"axis": (0, 1), "keepdims": True}, "keepdims"),
          (distinct((3, 4)).map(lambda a: a + 0.25j * a[::-1]), {"axis": 0}, "complex"),
          (distinct((3, 4), np.float32), {"axis": 1}, "float32"),
      ]],
    # max, min: distinct values (the ties are tested below)
    *[case(f, (x,), kw, name)
      for f in (np.max, np.min, np.amax, np.amin, np.ndarray.max, np.ndarray.min)
      for x, kw, name in [
          (distinct((3, 4)), {}, "all"),
          (distinct((2, 3, 4)), {"axis": -1}, "axis"),
          (distinct((2, 3, 4)), {"axis": (0, 2), "keepdims": True}, "axis-tuple-keepdims"),
      ]],
    case(np.max, (distinct(()),), name="0d"),
    case(np.max, (distinct((3, 4), np.float32),), {"axis": 0}, "float32"),
    case(np.min, (distinct((3, 4)),), {"axis": 1, "where": MASK, "initial": 10.0}, "where"),
    # scans
    *[case(f, (x,), kw, name)
      for f in (np.cumsum, np.ndarray.cumsum, np.cumprod, np.ndarray.cumprod)
      for x, kw, name in [
          (ANY, {}, "flatten"),
          (A234, {"axis": 1}, "axis"),
          (A234, {"axis": -1}, "axis-neg"),
          (C34, {"axis": 0}, "complex"),
          (F32, {"axis": 1}, "float32"),
      ]],
    case(np.cumsum, (A34, 0), name="positional-axis"),
    case(np.cumprod, (with_zeros((3, 4)),), {"axis": 1}, "zeros"),
    case(np.cumprod, (with_zeros((5,)),), {}, "zeros-flat"),
    case(np.cumprod, (A34,), {"axis": 0, "dtype": np.complex128}, "dtype"),
    # scipy.special.logsumexp (optional dependency, installed for the tests)
    case(scipy.special.logsumexp, (ANY,), name="all"),
    case(scipy.special.logsumexp, (A234,), {"axis": (0, 2), "keepdims": True}, "axis-keepdims"),
    case(scipy.special.logsumexp, (A34, 1), name="positional-axis"),
    case(scipy.special.logsumexp, (A34, 0, S.arrays(shape=(3, 4), min_value=0.5)), name="b"),
    case(scipy.special.logsumexp, (A34,), {"axis": 1, "b": np.arange(1.0, 5.0)}, "b-keyword"),
    case(scipy.special.logsumexp, (A34,), {"axis": 1, "b": np.array([1.0, -2.0, 0.5, 1.0]),
                                           "return_sign": True}, "return-sign"),
    case(scipy.special.logsumexp, (C34,), {"axis": 0}, "complex"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_callable_has_a_case() -> None:
    covered = {c.f for c in CASES}
    registered = [*(pair.primal for pair in reductions.RULES), scipy.special.logsumexp]
    assert [f for f in registered if f not in covered] == []


# -- ties ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("f", [np.max, np.amax, np.ndarray.max])
def test_max_ties_split_evenly(f: Any) -> None:
    x = np.array([1.0, 3.0, 3.0, -1.0, 3.0])
    y, back = rc.rrule(f, x)
    assert y == 3.0
    np.testing.assert_array_equal(back(6.0)[1], [0.0, 2.0, 2.0, 0.0, 2.0])
    _, ydot = rc.frule((None, np.array([0.0, 3.0, 6.0, 9.0, 0.0])), f, x)
    assert ydot == pytest.approx(3.0)  # the frule averages the tied tangents


@pytest.mark.parametrize("f", [np.min, np.amin, np.ndarray.min])
def test_min_ties_split_evenly_per_slice(f: Any) -> None:
    x = np.array([[0.0, 0.0, 2.0], [5.0, 1.0, 4.0]])
    _, back = rc.rrule(f, x, axis=1, keepdims=True)
    np.testing.assert_array_equal(back(np.array([[1.0], [1.0]]))[1], [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0]])


def test_max_nan_takes_the_gradient() -> None:
    x = np.array([1.0, np.nan, 3.0])
    _, back = rc.rrule(np.max, x)
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 1.0, 0.0])


def test_max_where_with_initial_only() -> None:
    x = np.array([1.0, 2.0])
    y, back = rc.rrule(np.max, x, initial=5.0, where=np.array([True, True]))
    assert y == 5.0
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 0.0])


# -- prod and cumprod with zeros -------------------------------------------------------------


def test_prod_with_one_zero_is_exact() -> None:
    x = np.array([2.0, 0.0, 3.0, 4.0])
    y, back = rc.rrule(np.prod, x)
    assert y == 0.0
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 24.0, 0.0, 0.0])


def test_prod_with_two_zeros_has_zero_gradient() -> None:
    x = np.array([[2.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    _, back = rc.rrule(np.prod, x, axis=1)
    np.testing.assert_array_equal(back(np.array([1.0, 1.0]))[1], [[0.0, 0.0, 0.0], [6.0, 3.0, 2.0]])


def test_prod_and_cumprod_with_zeros_never_divide() -> None:
    x = np.array([0.0, 2.0, 0.0, 3.0])
    with np.errstate(all="raise"):  # a division by zero would raise FloatingPointError
        _, back = rc.rrule(np.prod, x)
        back(1.0)
        _, back = rc.rrule(np.cumprod, x)
        xbar = back(np.ones(4))[1]
        _, ydot = rc.frule((None, np.ones(4)), np.cumprod, x)
    # d/dx_j of sum_k prod_{i<=k} x_i, worked out by hand
    np.testing.assert_array_equal(xbar, [1.0 + 2.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ydot, [1.0, 2.0, 0.0, 0.0])


def test_cumprod_with_zero_matches_finite_differences() -> None:
    x = np.array([[1.5, 0.0, -2.0, 0.5], [0.0, 1.0, 2.0, 3.0]])
    ybar = np.arange(8.0).reshape(2, 4) - 3
    _, back = rc.rrule(np.cumprod, x, axis=1)
    xbar = back(ybar)[1]
    eps = 1e-6
    expected = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        expected[i] = np.sum(ybar * (np.cumprod(x + e, axis=1) - np.cumprod(x - e, axis=1))) / (2 * eps)
    np.testing.assert_allclose(xbar, expected, atol=1e-8)


def test_std_of_constant_has_zero_gradient() -> None:
    x = np.full((2, 3), 1.5)
    _, back = rc.rrule(np.std, x, axis=1)
    np.testing.assert_array_equal(back(np.ones(2))[1], np.zeros((2, 3)))


# -- the logsumexp idiom ---------------------------------------------------------------------


def _logsumexp_idiom_gradient(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``m + log(sum(exp(x - m)))`` with ``m = x.max(axis, keepdims=True)``, differentiated by
    chaining the rules of max and sum with the element-wise derivatives written out."""
    m, max_back = rc.rrule(np.ndarray.max, x, axis, keepdims=True)
    d = x - m
    e = np.exp(d)
    s, sum_back = rc.rrule(np.sum, e, axis, keepdims=True)
    out = m + np.log(s)
    ybar = np.ones_like(out)
    sbar = ybar / s                       # log
    ebar = sum_back(sbar)[1]              # sum
    dbar = ebar * e                       # exp
    mbar = ybar - np.sum(dbar, axis=axis, keepdims=True)  # m appears in `m + ...` and `x - m`
    xbar = dbar + max_back(mbar)[1]       # x appears in `x - m` and in max
    return out, xbar


@pytest.mark.parametrize("x", [
    np.array([[0.5, -1.0, 2.0], [3.0, 3.0, 1.0]]),        # a tie in the second row
    np.array([[1000.0, 999.0, -1000.0], [5.0, 5.0, 5.0]]),  # large values; all tied
    np.array([[-np.inf, 0.0, 1.0], [2.0, -np.inf, 2.0]]),   # -inf entries
])
def test_logsumexp_idiom_gradient_is_softmax(x: np.ndarray) -> None:
    with np.errstate(over="raise", invalid="raise"):
        out, xbar = _logsumexp_idiom_gradient(x, axis=1)
    softmax = np.exp(x - scipy.special.logsumexp(x, axis=1, keepdims=True))
    np.testing.assert_allclose(out, scipy.special.logsumexp(x, axis=1, keepdims=True))
    np.testing.assert_allclose(xbar, softmax, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(xbar.sum(axis=1), 1.0, rtol=1e-12)


def test_scipy_logsumexp_gradient_is_softmax() -> None:
    x = np.array([[0.5, -1.0, 2.0], [1000.0, 1000.0, -np.inf]])
    y, back = rc.rrule(scipy.special.logsumexp, x, axis=1)
    np.testing.assert_allclose(back(np.ones(2))[1], [np.exp(x[0] - y[0]), [0.5, 0.5, 0.0]], rtol=1e-12)


def test_scipy_rules_register_when_scipy_special_is_imported() -> None:
    """Importing rulescore does not import SciPy; importing scipy.special later registers."""
    code = ("import sys, rulescore as rc; assert 'scipy.special' not in sys.modules; "
            "from scipy.special import logsumexp; assert rc.rrule.has_rules(logsumexp); "
            "assert rc.frule.has_rules(logsumexp); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         cwd=Path(rc.__file__).parent.parent)
    assert out.stdout.strip() == "ok", out.stderr


def test_scipy_logsumexp_all_minus_inf() -> None:
    x = np.full(3, -np.inf)
    y, back = rc.rrule(scipy.special.logsumexp, x)
    assert y == -np.inf
    np.testing.assert_array_equal(back(1.0)[1], np.zeros(3))


# -- protocol details ----------------------------------------------------------------------


def test_out_is_refused() -> None:
    x = np.ones((2, 2))
    with pytest.raises(TypeError, match="out="):
        rc.rrule(np.sum, x, axis=0, out=np.zeros(2))


def test_method_call_uses_the_method_rule() -> None:
    x = np.arange(6.0).reshape(2, 3)
    y, back = rc.rrule(x.sum, 0)  # a bound method dispatches on np.ndarray.sum
    np.testing.assert_array_equal(y, [3.0, 5.0, 7.0])
    assert back(np.ones(3))[0].shape == (2, 3)


def test_pullbacks_are_named() -> None:
    x = np.ones(3)
    for f in (np.sum, np.prod, np.max, np.cumsum, np.var):
        assert rc.rrule(f, x)[1].__name__ == f"{f.__name__}_pullback"


def test_pullback_does_not_mutate_ybar() -> None:
    x = np.ones((2, 3))
    ybar = np.array([1.0, 2.0, 3.0])
    for f in (np.sum, np.mean, np.max, np.prod):
        rc.rrule(f, x, axis=0)[1](ybar)
    np.testing.assert_array_equal(ybar, [1.0, 2.0, 3.0])


LIST_REDUCTIONS = {
    "mean": lambda a, b: np.mean([a, b]),
    "sum-axis0": lambda a, b: np.sum(np.sin(np.sum([a, b], axis=0))),
    "std": lambda a, b: np.std([a, b * 2.0]),
    "var-axis1": lambda a, b: np.sum(np.var([a, b], axis=1)),
    "max": lambda a, b: np.max([a, b + 10.0]),
    "min-axis0": lambda a, b: np.sum(np.min([a, b], axis=0)),
    "prod": lambda a, b: np.prod([a, b]),
    "median": lambda a, b: np.median([a, b * 3.0]),
    "average": lambda a, b: np.average([a, b], axis=0, weights=[0.25, 0.75]).sum(),
    "nested": lambda a, b: np.mean([[a, b], [b, a * a]]),
    "scalars": lambda a, b: np.mean([a[0], b[1], a[2] * b[2]]),
    "tuple": lambda a, b: np.sum((a, b ** 2)),
    "norm": lambda a, b: np.linalg.norm([a, b]),
}


@pytest.mark.parametrize("name", sorted(LIST_REDUCTIONS))
def test_reductions_over_a_python_list_of_traced_arrays(name: str) -> None:
    """``np.mean([a, b])``: the cotangent of the array NumPy makes of the list is cut into the
    list's entries (in reverse mode it was a ProjectionError)."""
    import zygotepy as zp
    from tests.zygotepy.finite_differences import fd

    f = LIST_REDUCTIONS[name]
    a, b = np.array([0.3, -1.2, 0.8]), np.array([1.1, 0.4, -0.5])
    ga, gb = zp.gradient(f, a, b)
    np.testing.assert_allclose(ga, fd(lambda u: f(u, b), a), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, fd(lambda u: f(a, u), b), rtol=1e-6, atol=1e-8)
    da, db = np.array([1.0, -0.5, 0.2]), np.array([0.3, 0.9, -1.0])
    _, ydot = zp.jvp(f, (a, b), (da, db))
    np.testing.assert_allclose(ydot, np.dot(ga, da) + np.dot(gb, db), rtol=1e-6, atol=1e-9)
