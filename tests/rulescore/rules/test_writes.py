"""Tests for :mod:`rulescore.rules.writes`: the functional forms of ``np.place``,
``np.putmask``, ``np.put``, ``np.copyto`` and ``ndarray.fill`` against finite differences
(``RuleCase``), then the in-place calls as a user (or SciPy) writes them, through zygotepy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore.testing.strategies as S
from rulescore.rules import writes
from rulescore.rules.writes import copyto, fill, fill_diagonal, place, put, putmask
from tests.zygotepy.finite_differences import fd

from ._cases import RuleCase, case_id, check_case

zp = pytest.importorskip("zygotepy")

N = 3
MASK = np.array([[True, False, True], [True, True, False]])

CASES = [
    RuleCase(place, (S.arrays(shape=(2, 3)), MASK, S.arrays(shape=(2,))), nondiff=(1,), name="cyclic",
             max_examples=N),
    RuleCase(place, (S.arrays(shape=(2, 3)), MASK, S.arrays(shape=(4,))), nondiff=(1,), max_examples=N),
    RuleCase(putmask, (S.arrays(shape=(2, 3)), MASK, S.arrays(shape=(4,))), nondiff=(1,), name="cyclic",
             max_examples=N),
    RuleCase(putmask, (S.arrays(shape=(2, 3)), MASK, S.arrays(shape=(2, 3))), nondiff=(1,), max_examples=N),
    RuleCase(put, (S.arrays(shape=(5,)), np.array([4, 0, 4, -1]), S.arrays(shape=(4,))), nondiff=(1,),
             name="repeated-last-wins", max_examples=N),
    RuleCase(put, (S.arrays(shape=(2, 3)), np.array([7, 2]), S.arrays(shape=(2,)), "wrap"), nondiff=(1, 3),
             name="wrap", max_examples=N),
    RuleCase(put, (S.arrays(shape=(3,)), [5, 0], S.scalars(), "clip"), nondiff=(1, 3), name="clip",
             max_examples=N),
    RuleCase(copyto, (S.arrays(shape=(2, 3)), S.arrays(shape=(3,))), {"where": MASK}, name="where-broadcast",
             max_examples=N),
    RuleCase(copyto, (S.arrays(shape=(2, 3)), S.scalars()), name="scalar", max_examples=N),
    RuleCase(copyto, (S.arrays(shape=(3,), dtype=np.complex128), S.arrays(shape=(3,), dtype=np.complex128)),
             {"where": np.array([False, True, True])}, name="complex", max_examples=N),
    RuleCase(fill, (S.arrays(shape=(2, 2)), S.scalars()), max_examples=N),
    RuleCase(fill_diagonal, (S.arrays(shape=(3, 3)), S.scalars()), name="scalar", max_examples=N),
    RuleCase(fill_diagonal, (S.arrays(shape=(3, 3)), S.arrays(shape=(2,))), name="cyclic", max_examples=N),
    RuleCase(fill_diagonal, (S.arrays(shape=(7, 2)), S.arrays(shape=(3,)), True), name="tall-wrap",
             nondiff=(2,), max_examples=N),
    RuleCase(fill_diagonal, (S.arrays(shape=(5, 2)), S.arrays(shape=(2,))), name="tall", max_examples=N),
    RuleCase(fill_diagonal, (S.arrays(shape=(2, 2, 2)), S.scalars()), name="cube", max_examples=N),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_the_forms_leave_their_argument_alone() -> None:
    a = np.zeros(3)
    np.testing.assert_array_equal(put(a, [0, 0], [1.0, 2.0]), [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(a, np.zeros(3))


def in_place_calls(x: np.ndarray, v: np.ndarray) -> Any:
    """Every in-place writer, on a buffer made here, on a view of it and on a copy of x."""
    out = np.empty((2, 3))
    out.fill(0.5)
    np.place(out, MASK, v[:2])
    np.putmask(out[1], np.array([False, True, True]), x * v[0])
    y = x.copy()
    np.put(y, [0, 2, 0], v)
    np.copyto(out[0], y, where=np.array([True, False, True]))
    return np.sum(np.sin(out) * np.arange(1.0, 7.0).reshape(2, 3)) + np.sum(y ** 2)


@settings(max_examples=10, deadline=None)
@given(x=S.arrays(shape=(3,), min_value=-2.0, max_value=2.0), v=S.arrays(shape=(3,), min_value=-2.0,
                                                                              max_value=2.0))
def test_zygotepy_differentiates_the_in_place_calls(x: np.ndarray, v: np.ndarray) -> None:
    gx, gv = zp.gradient(in_place_calls, x, v)
    np.testing.assert_allclose(gx, fd(lambda u: in_place_calls(u, v), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gv, fd(lambda u: in_place_calls(x, u), v), rtol=1e-5, atol=1e-6)


def jittered_kernel(theta: np.ndarray) -> Any:
    """A kernel matrix from nested parameters with its diagonal set by np.fill_diagonal (a
    traced value, then a traced vector repeated, then a constant), as GP code writes it."""
    t = np.array([0.0, 0.3, 0.9, 1.4])
    k = np.exp(theta[0]) * np.exp(-np.subtract.outer(t, t) ** 2 / np.exp(theta[1]))
    np.fill_diagonal(k, np.exp(theta[0]) + theta[2] ** 2)
    tall = np.outer(np.arange(1.0, 6.0), theta[:2])
    np.fill_diagonal(tall, theta[1:], wrap=True)
    cube = np.ones((2, 2, 2)) * theta[0]
    np.fill_diagonal(cube, 3.0)
    return np.linalg.slogdet(k)[1] + np.sum(np.sin(tall)) + np.sum(cube ** 2)


def test_zygotepy_differentiates_fill_diagonal_in_both_modes() -> None:
    theta = np.array([0.3, -0.2, 0.5])
    want = fd(jittered_kernel, theta)
    np.testing.assert_allclose(zp.gradient(jittered_kernel, theta)[0], want, rtol=1e-6, atol=1e-8)
    direction = np.array([0.4, 1.0, -2.0])
    _, slope = zp.jvp(jittered_kernel, (theta,), (direction,))
    np.testing.assert_allclose(slope, want @ direction, rtol=1e-6)
    np.testing.assert_allclose(zp.jacobian(jittered_kernel, theta)[0], want, rtol=1e-6, atol=1e-8)
    rows = np.array([fd(lambda v, i=i: zp.gradient(jittered_kernel, v)[0][i], theta) for i in range(3)])
    np.testing.assert_allclose(zp.hessian(jittered_kernel, theta), rows, rtol=1e-5, atol=1e-6)


def test_fill_diagonal_form_matches_numpy_and_leaves_its_argument_alone() -> None:
    a = np.arange(12.0).reshape(6, 2)
    expected = a.copy()
    np.fill_diagonal(expected, [-1.0, -2.0, -3.0], wrap=True)
    np.testing.assert_array_equal(fill_diagonal(a, [-1.0, -2.0, -3.0], True), expected)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(6, 2))


def test_constant_writes_run_in_place_and_the_argument_is_updated_as_numpy_does() -> None:
    buffer = np.zeros(3)

    def f(x: np.ndarray) -> Any:
        np.copyto(buffer, 2.0)  # nothing traced: NumPy writes it
        np.place(x, np.array([True, False, True]), buffer[:2] * x[1])
        return np.sum(x ** 2)

    x = np.array([1.0, 3.0, 2.0])
    (g,) = zp.gradient(f, x)  # x becomes [2 x1, x1, 2 x1]: the loss is 9 x1 ** 2
    np.testing.assert_allclose(g, [0.0, 54.0, 0.0])
    np.testing.assert_array_equal(buffer, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x, [6.0, 3.0, 6.0])


#: Distributions without rules, their shape parameters and methods that trace through
#: ``rv_continuous``'s masked fills (``ppf`` places its bounds, infinite for most, under a mask
#: that is all False: their zero cotangent must not become ``0 * inf``).
TRACED_STATS = [("uniform", (), "logpdf"), ("uniform", (), "cdf"), ("uniform", (), "ppf"),
                ("weibull_min", (1.7,), "logpdf"), ("weibull_min", (1.7,), "cdf"),
                ("weibull_min", (1.7,), "ppf"), ("halfnorm", (), "ppf"), ("gumbel_r", (), "sf"),
                ("gumbel_r", (), "ppf"), ("pareto", (2.6,), "logpdf"), ("pareto", (2.6,), "ppf"),
                ("rayleigh", (), "cdf"), ("f", (4.5, 6.5), "logpdf")]


@pytest.mark.parametrize(("dist", "shapes", "method"), TRACED_STATS)
def test_scipy_stats_methods_trace_through_the_masked_fills(dist: str, shapes: tuple[float, ...],
                                                             method: str) -> None:
    stats = pytest.importorskip("scipy.stats")
    fn = getattr(getattr(stats, dist), method)
    x = np.array([0.21, 0.47, 0.78]) if method == "ppf" else (
        np.array([1.6, 2.0, 2.9]) if dist == "pareto" else np.array([0.35, 0.6, 1.1]))

    def f(x: np.ndarray, scale: float) -> Any:
        return np.sum(fn(x, *shapes, 0.1, scale))

    gx, gs = zp.gradient(f, x, 1.3)
    np.testing.assert_allclose(gx, fd(lambda u: f(u, 1.3), x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gs, fd(lambda s: f(x, s), 1.3), rtol=1e-5, atol=1e-6)


def ufunc_outs(x: np.ndarray) -> Any:
    """Ufuncs writing into out= (with where=, positionally), as np.nanvar does."""
    arr = x * 1.0
    np.subtract(arr, np.mean(x), out=arr, where=np.array([True, False, True]))
    squares = np.multiply(arr, arr, out=arr)
    buffer = np.zeros(3)
    np.sin(x, buffer)
    return np.sum(squares) + np.sum(buffer * x) + np.nanvar(x) + np.nanstd(x)


def test_ufuncs_writing_into_out_are_functional_updates() -> None:
    x = np.array([0.3, 1.2, -0.7])
    (g,) = zp.gradient(ufunc_outs, x)
    np.testing.assert_allclose(g, fd(ufunc_outs, x), rtol=1e-6, atol=1e-8)
    out = np.zeros(3)
    zp.gradient(lambda v: np.sum(np.add(np.ones(3), 2.0, out=out) * v), x)  # nothing traced: in place
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])


def test_a_traced_value_written_into_an_integer_out_is_refused_by_name() -> None:
    def f(x: np.ndarray) -> Any:
        out = np.zeros(3, dtype=int)
        np.add(x, x, out=out, casting="unsafe")
        return np.sum(out * x)

    with pytest.raises(zp.UntraceableError,
                       match=r"numpy\.add writes a traced value into out= an array of int64"):
        zp.gradient(f, np.ones(3))


def sorted_in_place(x: np.ndarray) -> Any:
    b = x * 1.0
    b.sort()
    c = x * 2.0
    c.partition(1)
    return np.sum(b * np.arange(4.0)) + c[0] + np.sum(np.percentile(x, [20.0, 70.0])) + np.nanquantile(x, 0.6)


def test_sort_and_partition_in_place_and_the_quantiles_built_on_them() -> None:
    x = np.array([0.37, 0.61, 0.83, 0.1])
    (g,) = zp.gradient(sorted_in_place, x)
    np.testing.assert_allclose(g, fd(sorted_in_place, x), rtol=1e-6, atol=1e-8)


def vander_weighted(x: np.ndarray) -> Any:
    return np.sum(np.vander(x) * np.arange(9.0).reshape(3, 3))


def test_writes_through_a_reversed_view_reach_the_array_it_views() -> None:
    # np.vander writes into v[:, ::-1] with multiply.accumulate(out=...)
    x = np.array([0.37, 0.61, 0.83])
    (g,) = zp.gradient(vander_weighted, x)
    np.testing.assert_allclose(g, fd(vander_weighted, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("target", ["whole", "part"])
def test_a_write_the_engine_could_not_place_is_refused_not_lost(target: str) -> None:
    def f(x: np.ndarray) -> Any:
        out = np.zeros((2, 3))
        t = out.T  # a transposed view: no slices of out give it
        out[0] = x
        np.copyto(t if target == "whole" else t[1:], x[0])
        return np.sum(out)

    with pytest.raises(zp.UntraceableError, match="shares memory with another in a way the engine"):
        zp.gradient(f, np.array([0.5, 1.5, 2.5]))


@settings(max_examples=60, deadline=None)
@given(shape=st.one_of(st.tuples(st.integers(0, 7), st.integers(0, 7)),
                       st.integers(1, 4).flatmap(lambda n: st.sampled_from([(n, n, n), (n, n, n, n)]))),
       wrap=st.booleans())
def test_fill_diagonal_writes_the_positions_numpy_writes(shape: tuple[int, ...], wrap: bool) -> None:
    """The flat positions fill_diagonal's rules credit (a stride for matrices, wrap or not) are
    those NumPy writes."""
    written = np.zeros(shape, dtype=bool)
    np.fill_diagonal(written, True, wrap)
    positions, sources = writes._fill_diagonal_slots(np.zeros(shape), 2.0, wrap)
    np.testing.assert_array_equal(positions, np.flatnonzero(written))
    np.testing.assert_array_equal(sources, np.zeros(len(positions), dtype=np.intp))
