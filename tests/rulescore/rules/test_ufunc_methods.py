"""Tests for :mod:`rulescore.rules.ufunc_methods`: ``reduce``, ``accumulate`` and ``outer`` of
every differentiable binary ufunc and the functional form of ``at`` (repeated indices
included), against finite differences (``RuleCase``), then as a user writes them, through
zygotepy (second derivatives included; ``np.add.at``/``np.multiply.at`` against JAX's
``.at[].add``/``.multiply``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules.ufunc_methods import BINARY_UFUNCS, reduce_is_a_fold, ufunc_at
from tests.zygotepy.finite_differences import fd

from ._cases import RuleCase, broken_reduce, case_id, check_case

zp = pytest.importorskip("zygotepy")

N = 3
#: Ufuncs with kinks where two arguments are equal: drawn with distinct entries.
TIES = (np.maximum, np.minimum, np.fmax, np.fmin)
#: Ufuncs with jumps where one argument divides the other.
MODULO = (np.fmod, np.remainder)


def spaced(shape: tuple[int, ...], start: float, step: float) -> Any:
    """Distinct entries ``start + step * k`` in a random order."""
    n = int(np.prod(shape))
    return st.permutations(list(range(n))).map(
        lambda p: (start + step * np.array(p, dtype=float)).reshape(shape))


def values(uf: np.ufunc, shape: tuple[int, ...]) -> Any:
    """Entries in [0.5, 2] (every ufunc is smooth there), away from the kinks of max/min and the
    jumps of fmod/remainder."""
    if uf in TIES:
        return spaced(shape, 0.5, 0.1)
    if uf in MODULO:  # distinct, in [1.05, 1.9): no ratio of two entries (or of 1.5) is an integer
        return spaced(shape, 1.05, 0.07)
    return S.arrays(shape=shape, min_value=0.5, max_value=2.0)


#: An index visiting position 0 three times and position 2 twice (NumPy's ``at`` is unbuffered).
REPEATED = np.array([0, 2, 0, 3, 2, 0])


def _at_case(uf: np.ufunc) -> RuleCase:
    """``ufunc_at(uf, a, REPEATED, b)`` with ``a`` and ``b`` apart from each other (no ties)."""
    if uf is np.ldexp:
        return RuleCase(ufunc_at, (uf, values(uf, (4,)), REPEATED, np.array([1, -1, 2, 0, 1, 1])),
                        nondiff=(0, 2, 3), name=uf.__name__, max_examples=N)
    b = spaced((6,), 0.55, 0.1) if uf in TIES else (spaced((6,), 1.085, 0.07) if uf in MODULO
                                                    else values(uf, (6,)))
    return RuleCase(ufunc_at, (uf, values(uf, (4,)), REPEATED, b), nondiff=(0, 2), name=uf.__name__,
                    max_examples=N)


def _cases(uf: np.ufunc) -> list[RuleCase]:
    out = []
    if uf is not np.ldexp:
        if uf is not np.add:
            out += [
                RuleCase(uf.reduce, (values(uf, (3, 2)),), name=uf.__name__, max_examples=N),
                RuleCase(uf.reduce, (values(uf, (2, 3)), 1), {"keepdims": True}, nondiff=(1,),
                         name=f"{uf.__name__}-axis1-keepdims", max_examples=N),
                RuleCase(uf.reduce, (values(uf, (4,)),), {"axis": None, "initial": 1.5},
                         name=f"{uf.__name__}-initial", max_examples=N),
            ]
        out += [
            RuleCase(uf.reduceat, (values(uf, (6,)), [0, 3, 1, 4]), nondiff=(1,), name=uf.__name__,
                     max_examples=N),
            RuleCase(uf.reduceat, (values(uf, (2, 4)), np.array([0, 2])), {"axis": 1}, nondiff=(1,),
                     name=f"{uf.__name__}-axis1", max_examples=N),
            RuleCase(uf.accumulate, (values(uf, (4,)),), name=uf.__name__, max_examples=N),
            RuleCase(uf.accumulate, (values(uf, (2, 3)), 1), nondiff=(1,), name=f"{uf.__name__}-axis1",
                     max_examples=N),
        ]
    second = np.array([1, -2, 0]) if uf is np.ldexp else values(uf, (3,))
    out.append(RuleCase(uf.outer, (values(uf, (2,)), second), nondiff=(1,) if uf is np.ldexp else (),
                        name=uf.__name__, max_examples=N))
    return out


CASES = [c for uf in BINARY_UFUNCS for c in _cases(uf)] + [
    RuleCase(np.multiply.reduce, (S.arrays(shape=(2, 3, 2)),), {"axis": (0, 2)}, name="multiply-axes",
             max_examples=N),
    RuleCase(np.multiply.reduce, (S.arrays(shape=(0, 2)),), name="multiply-empty", max_examples=N),
    RuleCase(np.multiply.accumulate, (S.arrays(shape=(3,), dtype=np.complex128),), name="multiply-complex",
             max_examples=N),
    RuleCase(np.subtract.outer, (S.arrays(shape=(2, 2), dtype=np.float32),
                                 S.arrays(shape=(3,), dtype=np.float32)),
             name="subtract-float32", max_examples=N),
    *(_at_case(uf) for uf in BINARY_UFUNCS if uf is not np.nextafter),
    *(RuleCase(ufunc_at, (uf, values(uf, (4,)), REPEATED), nondiff=(0, 2), name=uf.__name__,
               max_examples=N) for uf in (np.sin, np.exp, np.square, np.negative)),
    RuleCase(ufunc_at, (np.multiply, S.arrays(shape=(2, 3)), (np.array([1, 0, 1]), np.array([2, 2, 2])),
                        S.arrays(shape=(3,))), nondiff=(0, 2), name="multiply-2d", max_examples=N),
    RuleCase(ufunc_at, (np.add, S.arrays(shape=(2, 3)), ([0, 0],), S.scalars()), nondiff=(0, 2),
             name="add-rows-broadcast-scalar", max_examples=N),
    RuleCase(ufunc_at, (np.add, S.arrays(shape=(3,), dtype=np.complex128), [1, 1],
                        S.arrays(shape=(2,), dtype=np.complex128)), nondiff=(0, 2), name="add-complex",
             max_examples=N),
]


#: ``np.nextafter.at`` differentiates as ``nextafter`` does (its rule), but finite differences
#: of a function with steps of one ulp say nothing: checked through its rule's own case.
COVERED = [ufunc_at]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    if broken_reduce(case):  # refused, naming the method: no derivative matches NumPy's answer
        x = np.linspace(0.5, 2.0, 6).reshape(2, 3)
        indices = ([0, 1],) if case.f.__name__ == "reduceat" else ()
        with pytest.raises(ArithmeticError, match=rf"numpy\.{case.f.__self__.__name__}\.reduce: NumPy"):
            rc.rrule(case.f, x, *indices)
        with pytest.raises(ArithmeticError, match="no derivative matches"):
            rc.frule((None, np.ones_like(x), None)[:2 + len(indices)], case.f, x, *indices)
        return
    check_case(case)


def test_the_reduce_probe_says_where_numpy_is_wrong() -> None:
    """``reduce_is_a_fold``'s verdict from its one probe holds for other values and lengths:
    NumPy's ``reduce`` along the rows of a random matrix and of a longer vector against the fold,
    for every binary ufunc (so the refusal above happens where NumPy is wrong). Which of NumPy's
    loops runs depends on the layout (a C matrix reduced along axis 0 takes an element-wise
    loop, which is right), so a broken ufunc's ``reduce`` is refused whatever the axis."""
    m = np.random.default_rng(3).uniform(0.5, 2.0, (3, 7))
    for uf in BINARY_UFUNCS:
        if uf is np.ldexp:
            continue
        rows = np.array([functools.reduce(uf, r) for r in m])
        assert np.allclose(uf.reduce(m, axis=1), rows, rtol=1e-12) is reduce_is_a_fold(uf), uf
        v = np.concatenate([m[0], m[1]])
        assert bool(np.isclose(uf.reduce(v), functools.reduce(uf, v), rtol=1e-12)) is reduce_is_a_fold(uf), uf
    assert reduce_is_a_fold(np.multiply) and reduce_is_a_fold(np.subtract)


def test_refused_keywords_name_the_method() -> None:
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"numpy\.multiply\.reduce: where="):
        rc.rrule(np.multiply.reduce, x, where=np.array([True, False, True]))
    with pytest.raises(TypeError, match=r"numpy\.maximum\.accumulate: out="):
        rc.rrule(np.maximum.accumulate, x, out=np.empty(3))


def scatter(uf: np.ufunc, index: Any) -> Any:
    """A user's function writing with ``uf.at`` into a buffer made inside it and into a view of
    its argument."""

    def f(a: np.ndarray, b: np.ndarray) -> Any:
        out = np.ones(len(a)) * 1.5
        uf.at(out, index, b)
        a = a * 1.0
        uf.at(a[1:], index, b * 0.5)
        return np.sum(np.sin(out) * np.arange(1.0, len(a) + 1)) + np.sum(a * a)

    return f


@pytest.mark.parametrize("uf", [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum,
                                np.power, np.hypot], ids=lambda uf: uf.__name__)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_zygotepy_differentiates_at_with_repeated_indices(uf: np.ufunc, data: Any) -> None:
    index = np.array(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=7)))
    a = data.draw(spaced((5,), 0.5, 0.1))
    b = data.draw(spaced((len(index),), 0.55, 0.1 / len(index)))
    f = scatter(uf, index)
    ga, gb = zp.gradient(f, a, b)
    np.testing.assert_allclose(ga, fd(lambda v: f(v, b), a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb, fd(lambda v: f(a, v), b), rtol=1e-5, atol=1e-6)


#: JAX differentiates ``.at[].multiply`` only for unique indices; ``.add`` for any.
@pytest.mark.parametrize(("uf", "method", "index"), [(np.add, "add", [0, 2, 0, 3, 0]),
                                                     (np.multiply, "multiply", [3, 0, 2])])
def test_add_and_multiply_at_agree_with_jax(uf: np.ufunc, method: str, index: list[int]) -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    a, b = np.array([0.7, 1.3, 0.9, 1.1]), np.array([1.2, 0.8, 1.4, 0.6, 1.1])[:len(index)]

    def mine(a: np.ndarray, b: np.ndarray) -> Any:
        out = a * 1.0
        uf.at(out, index, b)
        return np.sum(np.sin(out) * np.arange(1.0, 5.0))

    def theirs(a: Any, b: Any) -> Any:
        unique = len(set(index)) == len(index)
        return jnp.sum(jnp.sin(getattr(a.at[np.array(index)], method)(b, unique_indices=unique))
                       * jnp.arange(1.0, 5.0))

    with jax.enable_x64(True):
        want = jax.jit(jax.grad(theirs, argnums=(0, 1)))(jnp.asarray(a), jnp.asarray(b))
    got = zp.gradient(mine, a, b)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12)


def test_at_second_order_forward_over_reverse() -> None:
    index = np.array([1, 1, 0])

    def f(x: np.ndarray) -> Any:
        out = np.zeros(3)
        np.add.at(out, index, x ** 2)
        np.multiply.at(out, index, x)
        return np.sum(out ** 2)

    x = np.array([0.8, 1.2, 0.5])
    h = zp.hessian(f, x)
    rows = np.array([fd(lambda v, i=i: zp.gradient(f, v)[0][i], x) for i in range(3)])
    np.testing.assert_allclose(h, rows, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(zp.gradient(f, x)[0], fd(f, x), rtol=1e-5)


def test_at_of_a_ufunc_without_a_rule_is_refused_by_name() -> None:
    def f(x: np.ndarray) -> Any:
        out = np.zeros(3)
        np.heaviside.at(out, [0, 1], x)
        return np.sum(out)

    with pytest.raises(Exception, match=r"numpy\.heaviside\.at"):
        zp.gradient(f, np.ones(2))


def test_maximum_reduce_sends_the_cotangent_to_the_maximum() -> None:
    _, back = rc.rrule(np.maximum.reduce, np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 1.0, 0.0])


def user_methods(x: np.ndarray) -> Any:
    running_max = np.maximum.accumulate(x)
    pairwise = np.subtract.outer(x, x) ** 2
    return np.multiply.reduce(x) + np.sum(running_max * np.arange(5.0)) + np.sum(pairwise) \
        + np.sum(np.multiply.accumulate(x)) + np.hypot.reduce(x)


def segment_sums(x: np.ndarray) -> Any:
    """Per-segment statistics with reduceat, as grouped-data code writes them."""
    starts = np.array([0, 2, 3])
    counts = np.diff(np.append(starts, len(x)))
    means = np.add.reduceat(x, starts) / counts
    return (np.sum(means ** 2) + np.sum(np.multiply.reduceat(x, [0, 3]))
            + np.sum(np.maximum.reduceat(x, [1, 0]))
            + np.sum(np.add.reduceat(np.outer(x, x), [0, 1, 4], axis=1) ** 2))


def test_reduceat_through_zygotepy_both_modes_and_second_order() -> None:
    x = np.array([0.7, -1.3, 1.9, 0.4, 1.1])
    want = fd(segment_sums, x)
    np.testing.assert_allclose(zp.gradient(segment_sums, x)[0], want, rtol=1e-6, atol=1e-8)
    direction = np.array([1.0, 0.5, -0.3, 2.0, -1.0])
    np.testing.assert_allclose(zp.jvp(segment_sums, (x,), (direction,))[1], want @ direction, rtol=1e-6)
    rows = np.array([fd(lambda v, i=i: zp.gradient(segment_sums, v)[0][i], x) for i in range(5)])
    np.testing.assert_allclose(zp.hessian(segment_sums, x), rows, rtol=1e-4, atol=1e-5)


def test_reduceat_refuses_out_and_dtype_by_name() -> None:
    with pytest.raises(TypeError, match=r"numpy\.add\.reduceat: out="):
        rc.rrule(np.add.reduceat, np.ones(3), [0, 1], out=np.empty(2))


def test_zygotepy_gradient_and_hessian() -> None:
    x = np.array([0.7, -1.3, 1.9, 0.4, 1.1])
    (g,) = zp.gradient(user_methods, x)
    np.testing.assert_allclose(g, fd(user_methods, x), rtol=1e-5, atol=1e-6)

    def grad_of(v: np.ndarray) -> Any:
        return zp.gradient(lambda u: np.multiply.reduce(u) + np.sum(np.multiply.accumulate(u)), v)[0]

    h = zp.hessian(lambda u: np.multiply.reduce(u) + np.sum(np.multiply.accumulate(u)), x)
    rows = np.array([fd(lambda v, i=i: grad_of(v)[i], x) for i in range(5)])
    np.testing.assert_allclose(h, rows, rtol=1e-4, atol=1e-5)
