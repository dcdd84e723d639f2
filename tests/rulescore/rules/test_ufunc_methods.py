"""Tests for :mod:`rulescore.rules.ufunc_methods`: ``reduce``, ``accumulate`` and ``outer`` of
every differentiable binary ufunc, against finite differences (``RuleCase``), then as a user
writes them, through zygotepy (second derivatives included)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules.ufunc_methods import BINARY_UFUNCS
from tests.zygotepy.finite_differences import fd

from ._cases import RuleCase, case_id, check_case

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
]


#: ``ufunc.at`` refuses (it writes into its argument): tested by test_at_refuses_and_says_why.
COVERED = [uf.at for uf in BINARY_UFUNCS]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_refused_keywords_name_the_method() -> None:
    x = np.ones(3)
    with pytest.raises(TypeError, match=r"numpy\.multiply\.reduce: where="):
        rc.rrule(np.multiply.reduce, x, where=np.array([True, False, True]))
    with pytest.raises(TypeError, match=r"numpy\.maximum\.accumulate: out="):
        rc.rrule(np.maximum.accumulate, x, out=np.empty(3))


@pytest.mark.parametrize("uf", BINARY_UFUNCS, ids=lambda uf: uf.__name__)
def test_at_refuses_and_says_why(uf: np.ufunc) -> None:
    a, i, b = np.zeros(3), np.array([0, 2, 0]), np.ones(3)
    with pytest.raises(TypeError, match=rf"numpy\.{uf.__name__}\.at\(a, indices, b\) writes into a"):
        rc.rrule(uf.at, a, i, b)
    with pytest.raises(TypeError, match="writes into a"):
        rc.frule((rc.NoTangent(), a, rc.NoTangent(), b), uf.at, a, i, b)


def test_zygotepy_refuses_add_at_and_the_functional_form_works() -> None:
    i = np.array([0, 2, 0])

    def scatter(b: np.ndarray) -> Any:
        a = np.zeros(3)
        np.add.at(a, i, b)
        return np.sum(a * np.arange(1.0, 4.0))

    with pytest.raises(Exception, match=r"numpy\.add\.at"):
        zp.gradient(scatter, np.ones(3))

    def functional(b: np.ndarray) -> Any:
        a = np.zeros(3)
        onehot = (i[:, None] == np.arange(len(a))).astype(float)
        a = a + onehot.T @ b
        return np.sum(a * np.arange(1.0, 4.0))

    np.testing.assert_allclose(zp.gradient(functional, np.ones(3))[0], [1.0, 3.0, 1.0])


def test_maximum_reduce_sends_the_cotangent_to_the_maximum() -> None:
    _, back = rc.rrule(np.maximum.reduce, np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(back(1.0)[1], [0.0, 1.0, 0.0])


def user_methods(x: np.ndarray) -> Any:
    running_max = np.maximum.accumulate(x)
    pairwise = np.subtract.outer(x, x) ** 2
    return np.multiply.reduce(x) + np.sum(running_max * np.arange(5.0)) + np.sum(pairwise) \
        + np.sum(np.multiply.accumulate(x)) + np.hypot.reduce(x)


def test_zygotepy_gradient_and_hessian() -> None:
    x = np.array([0.7, -1.3, 1.9, 0.4, 1.1])
    (g,) = zp.gradient(user_methods, x)
    np.testing.assert_allclose(g, fd(user_methods, x), rtol=1e-5, atol=1e-6)

    def grad_of(v: np.ndarray) -> Any:
        return zp.gradient(lambda u: np.multiply.reduce(u) + np.sum(np.multiply.accumulate(u)), v)[0]

    h = zp.hessian(lambda u: np.multiply.reduce(u) + np.sum(np.multiply.accumulate(u)), x)
    rows = np.array([fd(lambda v, i=i: grad_of(v)[i], x) for i in range(5)])
    np.testing.assert_allclose(h, rows, rtol=1e-4, atol=1e-5)
