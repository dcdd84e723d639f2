"""Tests for :mod:`rulescore.rules.shape`: one ``RuleCase`` per registered callable (most have
several: float32, complex128, 0-d and empty shapes, keyword forms), plus plain tests of the
conventions that finite differences cannot pin down (sort ties, clip at its bounds, einsum
subscript forms, ``np.array`` of scalars giving ``Tangent[list]``, zero entries of list
cotangents, second-order friendliness of ``take_adjoint``).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules import shape as shape_rules
from rulescore.rules.shape import take_adjoint

from ._cases import RuleCase, case_id, check_case

F32, C128 = np.float32, np.complex128
N = int(os.environ.get("SHAPE_RULE_EXAMPLES", "5"))  # max_examples per case: keep the module fast


def A(shape: Any = None, dtype: Any = np.float64, **kw: Any) -> Any:
    return S.arrays(shape=shape, dtype=dtype, **kw)


def distinct(shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    """Arrays of distinct values 1 apart (no ties: sort is smooth there)."""
    n = int(np.prod(shape))
    return st.permutations(list(range(n))).map(
        lambda p: ((np.array(p, dtype=np.float64) - (n - 1) / 2) * 0.8).reshape(shape).astype(dtype))


def away_from(bounds: tuple[float, ...], shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    """Arrays whose entries sit at least 0.6 away from every bound (clip is smooth there)."""
    centres = np.array([-2.0, 0.0, 2.0])

    def build(noise: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        base = np.resize(centres, noise.shape)
        x = base + noise
        assert all(np.all(np.abs(x - b) >= 0.6) for b in bounds)
        return x.astype(dtype)

    return A(shape, min_value=-0.4, max_value=0.4).map(build)


def near(value: float, shape: Any = None) -> Any:
    """Arrays close to ``value`` (for array bounds of clip)."""
    return A(shape, min_value=-0.2, max_value=0.2).map(lambda e: e + value)


def floats_list(min_size: int = 1, max_size: int = 4) -> Any:
    return st.lists(S.scalars(), min_size=min_size, max_size=max_size)


def arrays_list(shape: tuple[int, ...], n: int = 3, dtype: Any = np.float64) -> Any:
    return st.lists(A(shape, dtype), min_size=1, max_size=n)


MASK = np.array([[True, False, True], [False, False, True]])
NDA = np.ndarray

CASES: list[RuleCase] = [
    # -- reshaping ------------------------------------------------------------------------------
    RuleCase(np.reshape, (A((2, 3)), (3, 2)), nondiff=(1,)),
    RuleCase(np.reshape, (A((2, 3), F32), (-1,)), nondiff=(1,), name="float32"),
    RuleCase(np.reshape, (A((4,), C128), (2, 2)), nondiff=(1,), name="complex"),
    RuleCase(np.reshape, (A(()), (1, 1)), nondiff=(1,), name="0d"),
    RuleCase(np.reshape, (A((0, 3)), (3, 0)), nondiff=(1,), name="empty"),
    RuleCase(np.reshape, (A((2, 3)), (3, 2)), {"order": "F"}, nondiff=(1,), name="order_F"),
    RuleCase(np.reshape, (floats_list(4, 4), (2, 2)), nondiff=(1,), name="list"),
    RuleCase(NDA.reshape, (A((2, 3)), 3, 2), nondiff=(1, 2), name="varargs"),
    RuleCase(NDA.reshape, (A((2, 3), F32), (6,)), nondiff=(1,), name="tuple"),
    RuleCase(NDA.reshape, (A((2, 3), C128), -1), {"order": "F"}, nondiff=(1,), name="order_F"),
    RuleCase(np.ravel, (A((2, 3)),)),
    RuleCase(np.ravel, (A((2, 3), F32), "F"), nondiff=(1,), name="order_F"),
    RuleCase(NDA.ravel, (A((2, 2), C128),)),
    RuleCase(NDA.flatten, (A((3, 2)),)),
    RuleCase(NDA.flatten, (A(()),), name="0d"),
    RuleCase(np.squeeze, (A((1, 3, 1)),)),
    RuleCase(np.squeeze, (A((1, 3, 1), F32),), {"axis": 0}, name="axis"),
    RuleCase(NDA.squeeze, (A((2, 1)), 1), nondiff=(1,)),
    RuleCase(np.expand_dims, (A((2, 3)), 1), nondiff=(1,)),
    RuleCase(np.expand_dims, (A(()), (0, 1)), nondiff=(1,), name="0d"),
    RuleCase(np.transpose, (A((2, 3, 4)),)),
    RuleCase(np.transpose, (A((2, 3, 4), C128), (2, 0, 1)), nondiff=(1,), name="axes"),
    RuleCase(NDA.transpose, (A((2, 3)),), name="none"),
    RuleCase(NDA.transpose, (A((2, 3, 4)), 1, 2, 0), nondiff=(1, 2, 3), name="varargs"),
    RuleCase(NDA.transpose, (A((2, 3, 4), F32), (2, 0, -2)), nondiff=(1,), name="tuple"),
    RuleCase(np.swapaxes, (A((2, 3, 4)), 0, 2), nondiff=(1, 2)),
    RuleCase(NDA.swapaxes, (A((2, 3), F32), 0, 1), nondiff=(1, 2)),
    RuleCase(np.moveaxis, (A((2, 3, 4)), 0, -1), nondiff=(1, 2)),
    RuleCase(np.moveaxis, (A((2, 3, 4)), (0, 1), (2, 0)), nondiff=(1, 2), name="several"),
    RuleCase(np.broadcast_to, (A((3,)), (2, 3)), nondiff=(1,)),
    RuleCase(np.broadcast_to, (A((2, 1), F32), (4, 2, 3)), nondiff=(1,), name="float32"),
    RuleCase(np.broadcast_to, (A(()), (2,)), nondiff=(1,), name="0d"),
    RuleCase(np.broadcast_to, (S.scalars(), (2,)), nondiff=(1,), name="float"),
    RuleCase(np.atleast_1d, (A(()),)),
    RuleCase(np.atleast_1d, (A(()), A((2,)), S.scalars()), name="several"),
    RuleCase(np.atleast_2d, (A((3,), C128),)),
    RuleCase(np.atleast_3d, (A((2, 3)), A((2,))), name="several"),
    RuleCase(np.copy, (A((2, 2), C128),)),
    RuleCase(NDA.copy, (A((2, 2), F32),)),
    RuleCase(np.ascontiguousarray, (A((2, 3)),)),
    # -- reordering -----------------------------------------------------------------------------
    RuleCase(np.flip, (A((2, 3)),)),
    RuleCase(np.flip, (A((2, 3), F32), 1), nondiff=(1,), name="axis"),
    RuleCase(np.fliplr, (A((2, 3)),)),
    RuleCase(np.flipud, (A((2, 3), C128),)),
    RuleCase(np.rot90, (A((2, 3)),)),
    RuleCase(np.rot90, (A((2, 3, 2)), 3, (1, 2)), nondiff=(1, 2), name="axes"),
    RuleCase(np.roll, (A((5,)), 2), nondiff=(1,)),
    RuleCase(np.roll, (A((2, 3), C128), (1, -1), (0, 1)), nondiff=(1, 2), name="axes"),
    RuleCase(np.roll, (A((2, 3)), 4), name="flat", nondiff=(1,)),
    RuleCase(np.roll, (A((2, 3)), np.array([1, 2]), 1), name="array-shift", nondiff=(1, 2)),
    RuleCase(np.sort, (distinct((5,)),)),
    RuleCase(np.sort, (distinct((3, 3)), 0), nondiff=(1,), name="axis0"),
    RuleCase(np.sort, (distinct((2, 3), F32),), {"axis": None}, name="flat"),
    RuleCase(np.sort, (A((0,)),), name="empty"),
    # -- joining and splitting ------------------------------------------------------------------
    RuleCase(np.concatenate, (arrays_list((2,)),)),
    RuleCase(np.concatenate, (st.tuples(A((2, 1)), A((2, 3))), 1), nondiff=(1,), name="axis1"),
    RuleCase(np.concatenate, (st.lists(A((2, 2), F32), min_size=2, max_size=2),), {"axis": None},
             name="flat"),
    RuleCase(np.concatenate, (st.tuples(A((2,), C128), A((0,), C128)),), name="complex-empty"),
    RuleCase(np.concatenate, (A((2, 3)),), name="ndarray"),
    RuleCase(np.stack, (arrays_list((2, 3)),)),
    RuleCase(np.stack, (st.tuples(A((2,)), A((2,))), -1), nondiff=(1,), name="axis"),
    RuleCase(np.stack, (st.lists(S.scalars(), min_size=1, max_size=3),), name="floats"),
    RuleCase(np.hstack, (st.tuples(A((2,)), A((3,))),)),
    RuleCase(np.hstack, (st.tuples(A((2, 1), F32), A((2, 2), F32)),), name="2d"),
    RuleCase(np.hstack, (st.lists(S.scalars(), min_size=2, max_size=2),), name="floats"),
    RuleCase(np.vstack, (st.tuples(A((3,)), A((2, 3))),)),
    RuleCase(np.dstack, (st.tuples(A((2, 2)), A((2, 2, 1))),)),
    RuleCase(np.column_stack, (st.tuples(A((3,)), A((3, 2))),)),
    RuleCase(np.append, (A((2,)), A((3,)))),
    RuleCase(np.append, (A((2, 2)), A((1, 2)), 0), nondiff=(2,), name="axis"),
    RuleCase(np.append, (A((2, 2), F32), S.scalars()), name="flat"),
    RuleCase(np.split, (A((6,)), 3), nondiff=(1,)),
    RuleCase(np.split, (A((4, 3)), [1, 3]), nondiff=(1,), name="indices"),
    RuleCase(np.split, (A((3, 4), C128), 2, 1), nondiff=(1, 2), name="axis"),
    RuleCase(np.array_split, (A((5,)), 3), nondiff=(1,)),
    RuleCase(np.hsplit, (A((2, 4)), 2), nondiff=(1,)),
    RuleCase(np.vsplit, (A((4, 2)), [1]), nondiff=(1,)),
    RuleCase(np.dsplit, (A((2, 1, 4)), 2), nondiff=(1,)),
    RuleCase(np.unstack, (A((3, 2)),)),
    RuleCase(np.unstack, (A((3, 2), F32),), {"axis": 1}, name="axis"),
    # -- repeating and padding ------------------------------------------------------------------
    RuleCase(np.tile, (A((2,)), 3), nondiff=(1,)),
    RuleCase(np.tile, (A((2, 3), F32), (2, 1, 2)), nondiff=(1,), name="reps"),
    RuleCase(np.tile, (A(()), 2), nondiff=(1,), name="0d"),
    RuleCase(np.repeat, (A((3,)), 2), nondiff=(1,)),
    RuleCase(np.repeat, (A((2, 3), C128), [1, 0, 2], 1), nondiff=(1, 2), name="counts"),
    RuleCase(np.repeat, (A((2, 2)), 3), name="flat", nondiff=(1,)),
    RuleCase(NDA.repeat, (A((2, 2), F32), 2, 0), nondiff=(1, 2)),
    RuleCase(np.block, (st.tuples(A((2, 2)), A((2, 1)), A((1, 3))).map(lambda t: [[t[0], t[1]], [t[2]]]),),
             name="2x2"),
    RuleCase(np.block, (st.tuples(A((2,)), A(())).map(list),), name="1d-with-scalar"),
    RuleCase(np.block, (st.tuples(A((1, 2, 2)), A((1, 2, 1)), A((1, 2, 3))).map(
        lambda t: [[[t[0], t[1]]], [[t[2]]]]),), name="3d"),
    RuleCase(np.block, (st.tuples(A((2, 2), C128), A((2, 2), C128)).map(list),), name="complex"),
    RuleCase(np.generic.reshape, (S.scalars().map(np.float64), 1, 1), nondiff=(1, 2), name="scalar"),
    RuleCase(np.generic.reshape, (S.scalars().map(np.float32), (1,)), nondiff=(1,), name="float32"),
    RuleCase(np.generic.flatten, (S.scalars().map(np.float64),), name="scalar"),
    RuleCase(np.generic.transpose, (S.scalars().map(np.complex128),), name="complex"),
    RuleCase(np.pad, (A((2, 3)), 1), nondiff=(1,)),
    RuleCase(np.pad, (A((2, 3), F32), ((1, 0), (0, 2))), {"constant_values": 5.0}, nondiff=(1,),
             name="constant"),
    RuleCase(np.pad, (A((3,), C128), 2, "edge"), nondiff=(1,), name="edge"),
    RuleCase(np.pad, (A((2, 3)), (1, 2), "reflect"), nondiff=(1,), name="reflect"),
    RuleCase(np.pad, (A((2, 3)), 2, "wrap"), nondiff=(1,), name="wrap"),
    RuleCase(np.pad, (A((3,)), 2, "symmetric"), nondiff=(1,), name="symmetric"),
    RuleCase(np.pad, (A((2, 2)), {1: (1, 2)}), nondiff=(1,), name="dict"),
    RuleCase(np.pad, (A((2, 2)), {0: 1}, "edge"), nondiff=(1,), name="dict-edge"),
    # -- selecting ------------------------------------------------------------------------------
    RuleCase(np.where, (MASK, A((2, 3)), A((2, 3)))),
    RuleCase(np.where, (MASK, A((3,), F32), S.scalars()), name="broadcast"),
    RuleCase(np.where, (MASK, A((2, 1), C128), A((2, 3), C128)), name="complex"),
    RuleCase(np.where, (MASK,), name="nonzero"),
    RuleCase(np.clip, (away_from((-1.0, 1.0), (2, 3)), -1.0, 1.0)),
    RuleCase(np.clip, (away_from((-1.0, 1.0), (2, 3)), near(-1.0, (3,)), near(1.0, (2, 1))),
             name="array-bounds"),
    RuleCase(np.clip, (away_from((-1.0,), (4,), F32), -1.0, None), name="lower-only"),
    RuleCase(np.clip, (away_from((1.0,), (4,)),), {"max": 1.0}, name="kw-bound"),
    RuleCase(NDA.clip, (away_from((-1.0, 1.0), (3, 2)), near(-1.0, ()), 1.0)),
    RuleCase(np.take, (A((5,)), np.array([0, 2, 2, -1]))),
    RuleCase(np.take, (A((3, 4), C128), [1, 0, 1], 1), name="axis"),
    RuleCase(np.take, (A((3, 4)), 2, 0), name="scalar-index"),
    RuleCase(np.take, (A((4,), F32), np.array([[5, -7], [1, 1]])), {"mode": "clip"}, name="clip"),
    RuleCase(np.take, (A((4,)), np.array([5, -7])), {"mode": "wrap"}, name="wrap"),
    RuleCase(NDA.take, (A((2, 3)), np.array([[0, 4], [5, 5]]))),
    RuleCase(take_adjoint, (A((4,)), np.array([0, 2, 2, -1]), (3,))),
    RuleCase(take_adjoint, (A((2, 3), F32), np.array([1, 1, 0]), (2, 2), 1), name="axis"),
    RuleCase(np.diag, (A((3,)),)),
    RuleCase(np.diag, (A((3,), C128), 1), nondiff=(1,), name="offset"),
    RuleCase(np.diag, (A((3, 4)),), name="matrix"),
    RuleCase(np.diag, (A((4, 3), F32), -1), nondiff=(1,), name="matrix-offset"),
    # a square matrix's diagonal: the pullback builds the embedding with np.diag
    RuleCase(np.diag, (A((3, 3)),), name="square"),
    RuleCase(np.diag, (A((4, 4), F32), 2), nondiff=(1,), name="square-offset"),
    RuleCase(np.diag, (A((3, 3)), -1), nondiff=(1,), name="square-negative-offset"),
    RuleCase(np.diagflat, (A((2, 2)),)),
    RuleCase(np.diagflat, (A((3,)), -1), nondiff=(1,), name="offset"),
    RuleCase(np.diagonal, (A((3, 4)),)),
    RuleCase(np.diagonal, (A((3, 4), C128), 1), nondiff=(1,), name="offset"),
    RuleCase(np.diagonal, (A((2, 3, 4)), -1, 2, 0), nondiff=(1, 2, 3), name="axes"),
    RuleCase(np.diagonal, (A((2, 2)), 3), nondiff=(1,), name="empty"),
    RuleCase(NDA.diagonal, (A((3, 3), F32),)),
    RuleCase(np.trace, (A((3, 3)),)),
    RuleCase(np.trace, (A((2, 3, 4), C128), 1, 1, 2), nondiff=(1, 2, 3), name="axes"),
    RuleCase(NDA.trace, (A((2, 3), F32), -1), nondiff=(1,)),
    RuleCase(np.triu, (A((3, 4)),)),
    RuleCase(np.triu, (A((2, 3, 3), F32), -1), nondiff=(1,), name="batched"),
    RuleCase(np.triu, (A((3,)),), name="vector"),
    RuleCase(np.tril, (A((3, 4), C128), 1), nondiff=(1,)),
    RuleCase(np.tril, (A((3,)),), name="vector"),
    # -- products and contractions --------------------------------------------------------------
    RuleCase(np.dot, (A((3,)), A((3,)))),
    RuleCase(np.dot, (A((2, 3)), A((3, 4))), name="matrix"),
    RuleCase(np.dot, (A((2, 2, 3), C128), A((3,), C128)), name="complex-3d-1d"),
    RuleCase(np.dot, (A((2, 3), F32), A((2, 3, 2), F32)), name="float32-nd"),
    RuleCase(np.dot, (A(()), A((2, 3))), name="scalar"),
    RuleCase(NDA.dot, (A((2, 3)), A((3,)))),
    RuleCase(np.inner, (A((3,)), A((3,)))),
    RuleCase(np.inner, (A((2, 3), C128), A((4, 2, 3), C128)), name="complex-nd"),
    RuleCase(np.inner, (S.scalars(), A((2,))), name="scalar"),
    RuleCase(np.outer, (A((2,)), A((3,)))),
    RuleCase(np.outer, (A((2, 2), C128), A((3,), C128)), name="complex"),
    RuleCase(np.vdot, (A((3,), C128), A((3,), C128))),
    RuleCase(np.vdot, (A((2, 2)), A((4,))), name="real"),
    RuleCase(np.vdot, (A((2,)), A((2,), C128)), name="mixed"),
    RuleCase(np.tensordot, (A((2, 3, 4)), A((3, 4, 2)))),
    RuleCase(np.tensordot, (A((2, 3), C128), A((3, 4), C128), 1), nondiff=(2,), name="complex-1"),
    RuleCase(np.tensordot, (A((2, 3, 4)), A((3, 2, 5)), ([1, 0], [0, 1])), nondiff=(2,), name="pairs"),
    RuleCase(np.tensordot, (A((2,), F32), A((3,), F32), 0), nondiff=(2,), name="outer"),
    RuleCase(np.kron, (A((2,)), A((3,)))),
    RuleCase(np.kron, (A((2, 2), C128), A((3,), C128)), name="complex-nd"),
    RuleCase(np.cross, (A((3,)), A((3,)))),
    RuleCase(np.cross, (A((2, 3)), A((3,))), name="broadcast"),
    RuleCase(np.cross, (A((3, 2), C128), A((3, 2), C128)), {"axisa": 0, "axisb": 0, "axisc": 0},
             name="axes"),
    # -- conjugation and conversions ------------------------------------------------------------
    RuleCase(NDA.conj, (A((2, 3), C128),)),
    RuleCase(NDA.conjugate, (A((3,)),)),
    RuleCase(np.array, (floats_list(),)),
    RuleCase(np.array, (st.tuples(S.scalars(), S.scalars(dtype=complex)),), name="tuple-complex"),
    RuleCase(np.array, (arrays_list((2,)),), name="arrays"),
    RuleCase(np.array, (st.lists(floats_list(2, 2), min_size=1, max_size=3),), name="nested"),
    RuleCase(np.array, (A((2, 3)),), name="ndarray"),
    RuleCase(np.array, (floats_list(), np.float32), nondiff=(1,), name="float32", rtol=1e-3, atol=1e-5),
    RuleCase(np.array, (A((2,)),), {"ndmin": 3}, name="ndmin"),
    RuleCase(np.asarray, (floats_list(),)),
    RuleCase(np.asarray, (A((2,), F32),), name="ndarray"),
    RuleCase(np.asanyarray, (st.tuples(A((2,)), A((2,))),)),
    RuleCase(NDA.astype, (A((2, 3)), np.float32), nondiff=(1,)),
    RuleCase(NDA.astype, (A((3,), F32), np.complex128), nondiff=(1,), name="complex"),
    RuleCase(NDA.astype, (A((3,)), np.int64), nondiff=(0, 1), name="int"),
    RuleCase(np.astype, (A((2,), F32), np.float64), nondiff=(1,)),
    RuleCase(np.astype, (A((2,), C128), np.complex64), nondiff=(1,), name="complex64"),
]

#: Non-differentiable callables: every input must get ``NoTangent()``.
_NONDIFF_CASES: list[tuple[Any, tuple[Any, ...], dict[str, Any]]] = [
    (np.shape, (A((2, 3)),), {}), (np.ndim, (A(),), {}), (np.size, (A(),), {}),
    (np.argmax, (A((4,)),), {}), (np.argmin, (A((2, 3)), 1), {}), (np.argsort, (A((4,)),), {}),
    (np.argpartition, (A((4,)), 1), {}), (NDA.argpartition, (A((2, 3)), 1), {}),
    (np.nonzero, (A((3,)),), {}), (np.argwhere, (A((2, 2)),), {}), (np.flatnonzero, (A((3,)),), {}),
    (np.searchsorted, (np.array([0.0, 1.0, 2.0]), S.scalars()), {}), (np.lexsort, (A((2, 3)),), {}),
    (np.unravel_index, (4, (2, 3)), {}), (np.ravel_multi_index, (([0, 1], [1, 2]), (2, 3)), {}),
    (np.zeros_like, (A((2,)),), {}), (np.ones_like, (A((2,), F32),), {}), (np.empty_like, (A((0,)),), {}),
    (np.zeros, ((2, 3),), {}), (np.ones, (3,), {}),
    (np.empty, ((0,),), {}), (np.eye, (3,), {}),
    (np.identity, (2,), {}), (np.tri, (3,), {}),
    (np.indices, ((2, 3),), {}),
    (np.isclose, (A((2,)), A((2,))), {}), (np.allclose, (A((2,)), A((2,))), {}),
    (np.array_equal, (A((2,)), A((2,))), {}), (np.array_equiv, (A((2,)), A((1,))), {}),
    (np.result_type, (np.float32, 1.0), {}), (np.can_cast, (np.float32, np.float64), {}),
    (np.promote_types, (np.float32, np.int64), {}), (np.min_scalar_type, (10,), {}),
    (np.common_type, (A((2,), F32),), {}), (np.issubdtype, (np.float32, np.floating), {}),
    (np.iscomplexobj, (A((2,), C128),), {}), (np.isrealobj, (A((2,)),), {}),
    (np.isscalar, (S.scalars(),), {}), (np.broadcast_shapes, ((2, 1), (3,)), {}),
    (np.broadcast, (A((2, 1)), A((3,))), {}),
    (NDA.argmax, (A((3,)),), {}), (NDA.argmin, (A((3,)),), {}), (NDA.argsort, (A((3,)),), {}),
    (NDA.nonzero, (A((3,)),), {}),
]

#: Random generators, called so that the result is deterministic (an empty sample, or a
#: degenerate distribution), since the harness compares the rule's output with a second call.
_RANDOM_CASES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "beta": ((1.0, 2.0), {"size": 0}), "binomial": ((3, 1.0), {}), "chisquare": ((2.0,), {"size": 0}),
    "choice": (([5.0],), {}), "dirichlet": (([1.0, 2.0],), {"size": 0}),
    "exponential": ((1.0,), {"size": 0}), "gamma": ((2.0,), {"size": 0}), "geometric": ((1.0,), {}),
    "gumbel": ((0.0, 1.0), {"size": 0}), "laplace": ((0.0, 1.0), {"size": 0}),
    "logistic": ((0.0, 1.0), {"size": 0}), "lognormal": ((0.0, 1.0), {"size": 0}),
    "multinomial": ((3, [1.0, 0.0]), {}), "multivariate_normal": (([0.0], [[1.0]]), {"size": 0}),
    "normal": ((S.scalars(), 0.0), {}), "permutation": ((1,), {}), "poisson": ((0.0,), {}),
    "rand": ((0,), {}), "randint": ((1, 2), {"size": 3}), "randn": ((0,), {}), "random": ((0,), {}),
    "random_sample": ((0,), {}), "rayleigh": ((1.0,), {"size": 0}), "seed": ((0,), {}),
    "shuffle": ((np.array([1.0]),), {}), "standard_cauchy": ((0,), {}),
    "standard_exponential": ((0,), {}), "standard_gamma": ((1.0,), {"size": 0}),
    "standard_normal": ((0,), {}), "standard_t": ((2.0,), {"size": 0}),
    "triangular": ((0.0, 0.5, 1.0), {"size": 0}), "uniform": ((S.scalars(), S.scalars()), {"size": 0}),
    "vonmises": ((0.0, 1.0), {"size": 0}), "wald": ((1.0, 1.0), {"size": 0}),
    "weibull": ((1.0,), {"size": 0}), "default_rng": ((0,), {}),
}

CASES += [RuleCase(f, args, kw, nondiff=tuple(range(len(args)))) for f, args, kw in _NONDIFF_CASES]
CASES += [
    RuleCase(getattr(np.random, name), args, kw, name=name, nondiff=tuple(range(len(args))))
    for name, (args, kw) in _RANDOM_CASES.items() if hasattr(np.random, name)
]
CASES += [
    RuleCase(np.full, ((2, 3), S.scalars()), nondiff=(0,), name="scalar-fill"),
    RuleCase(np.full, ((2, 3), S.arrays(shape=(3,))), nondiff=(0,), name="row-fill"),
    RuleCase(np.full_like, (S.arrays(shape=(2, 2)), S.scalars()), name="fill-like"),
    RuleCase(np.linspace, (S.scalars(), S.scalars(), 5), nondiff=(2,), name="scalars"),
    RuleCase(np.linspace, (S.scalars(), S.scalars(), 4), {"endpoint": False}, nondiff=(2,),
             name="no-endpoint"),
    RuleCase(np.arange, (S.scalars(0.1, 0.2), 4.55, S.scalars(0.6, 0.62)), nondiff=(1,),
             name="start-stop-step", max_examples=3),
    RuleCase(np.arange, (5,), nondiff=(0,), name="int-stop"),
]
CASES += [RuleCase(t, (S.scalars(),), name=t.__name__, rtol=1e-2 if t is np.float16 else None,
                   atol=1e-2 if t is np.float16 else None) for t in (np.float16, np.float32, np.float64)]
CASES += [RuleCase(t, (S.scalars(dtype=complex),), name=t.__name__, rtol=1e-4 if t is np.complex64 else None)
          for t in (np.complex64, np.complex128)]
CASES += [RuleCase(t, (3,), name=t.__name__, nondiff=(0,)) for t in shape_rules.INTEGER_TYPES]
CASES = [c if c.max_examples is not None else RuleCase(
    c.f, c.args, c.kwargs, c.name, c.rtol, c.atol, c.frule, c.nondiff, N) for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_registered_callable_has_a_case() -> None:
    covered = [c.f for c in CASES]
    missing = [f for f in (*(pair.primal for pair in shape_rules.RULES), *shape_rules.NON_DIFFERENTIABLE)
               if not any(f is g or f == g for g in covered)]
    assert not missing


# -- conventions that finite differences cannot check --------------------------------------------


def _grads(f: Any, *args: Any, ybar: Any = None, **kwargs: Any) -> tuple[Any, ...]:
    y, back = rc.rrule(f, *args, **kwargs)
    return back(np.ones_like(y) if ybar is None else ybar)[1:]


@pytest.mark.parametrize(("subscripts", "shapes"), [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iji->ij", [(2, 3, 2)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->i", [(2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("...i,...i->...", [(2, 3, 4), (3, 4)]),
    ("i...->...", [(2, 3, 1)]),
    ("ij,ij->ij", [(1, 3), (4, 3)]),
    ("ijk,jl,kl", [(2, 3, 2), (3, 2), (2, 2)]),
    ("a,Ab->bA", [(2,), (3, 4)]),
])
def test_einsum_against_a_dense_jacobian(subscripts: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(1)
    ops = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    y = np.einsum(subscripts, *ops)
    ybar = rng.standard_normal(np.shape(y)) + 1j * rng.standard_normal(np.shape(y))
    cts = _grads(np.einsum, subscripts, *ops, ybar=ybar)
    assert cts[0] == rc.NoTangent()
    for i, op in enumerate(ops):
        # einsum is holomorphic in each operand: xbar = J^H ybar with J = dy/dx_i
        jac = np.zeros((np.size(y), op.size), dtype=complex)
        for k in range(op.size):
            e = np.zeros(op.size)
            e[k] = 1.0
            args = list(ops)
            args[i] = e.reshape(op.shape)
            jac[:, k] = np.ravel(np.einsum(subscripts, *args))
        expected = (jac.conj().T @ np.ravel(ybar)).reshape(op.shape)
        np.testing.assert_allclose(cts[1 + i], expected, rtol=1e-12, atol=1e-12)


def test_sort_with_ties_sends_each_gradient_to_one_entry() -> None:
    x = np.array([2.0, 1.0, 2.0, 1.0, 3.0])
    ybar = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    (xbar,) = _grads(np.sort, x, ybar=ybar)
    # the sorted output is [1, 1, 2, 2, 3]; ties keep their order (a stable permutation)
    np.testing.assert_array_equal(xbar, [30.0, 10.0, 40.0, 20.0, 50.0])
    assert sorted(xbar) == sorted(ybar)
    _, xdot = rc.frule((None, np.arange(5.0)), np.sort, x)
    np.testing.assert_array_equal(xdot, [1.0, 3.0, 0.0, 2.0, 4.0])


def test_sort_gradient_along_axis_is_the_inverse_permutation() -> None:
    x = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    ybar = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    (xbar,) = _grads(np.sort, x, ybar=ybar)
    np.testing.assert_array_equal(xbar, [[3.0, 1.0, 2.0], [5.0, 4.0, 6.0]])
    (xbar0,) = _grads(np.sort, x, 0, ybar=ybar)[:1]
    np.testing.assert_array_equal(xbar0, [[4.0, 5.0, 3.0], [1.0, 2.0, 6.0]])


def test_clip_gradients_at_and_beyond_the_bounds() -> None:
    x = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    xbar, lobar, hibar = _grads(np.clip, x, -1.0, 1.0)
    np.testing.assert_array_equal(xbar, [0.0, 1.0, 1.0, 1.0, 0.0])  # at a bound: to x (as clamp)
    assert lobar == 1.0 and hibar == 1.0
    lo, hi = np.array([-3.0, -1.0, 0.5, 0.0, 0.0]), np.array(1.5)
    xbar, lobar, hibar = _grads(np.clip, x, lo, hi)
    np.testing.assert_array_equal(xbar, [1.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(lobar, [0.0, 0.0, 1.0, 0.0, 0.0])
    assert hibar.shape == () and hibar == 1.0
    x32 = x.astype(np.float32)
    xbar, lobar, _ = _grads(np.clip, x32, np.float32(-1.0), None)
    assert xbar.dtype == np.float32 and isinstance(lobar, np.float32)
    assert _grads(np.clip, x32, np.float32(-1.0), None)[2] == rc.NoTangent()
    _, xdot = rc.frule((None, np.ones(5), np.full(5, 10.0), 100.0), np.clip, x, np.full(5, -1.0), 1.0)
    np.testing.assert_array_equal(xdot, [10.0, 1.0, 1.0, 1.0, 100.0])


def test_np_array_of_scalars_gives_a_tangent_list() -> None:
    cts = _grads(np.array, [1.0, 2.0, 3.0], ybar=np.array([4.0, 5.0, 6.0]))
    assert cts == (rc.Tangent[list](4.0, 5.0, 6.0),)
    assert all(type(v) is float for v in cts[0].backing)
    (ct,) = _grads(np.array, (np.float32(1.0), 2.0), ybar=np.array([1.5, 2.5]))
    assert isinstance(ct, rc.Tangent[tuple]) and type(ct[0]) is np.float32 and ct[1] == 2.5
    (ct,) = _grads(np.array, [np.zeros(2), np.ones(2)], ybar=np.arange(4.0).reshape(2, 2))
    assert isinstance(ct, rc.Tangent[list])
    np.testing.assert_array_equal(ct[1], [2.0, 3.0])
    (ct,) = _grads(np.asarray, [[1.0, 2.0], [3.0, 4.0]])
    assert ct == rc.Tangent[list](rc.Tangent[list](1.0, 1.0), rc.Tangent[list](1.0, 1.0))
    (ct,) = _grads(np.array, [1.0, 2j])
    assert ct == rc.Tangent[list](1.0, 1 + 0j) and type(ct[0]) is float
    _, ydot = rc.frule((None, rc.Tangent[list](1.0, rc.ZeroTangent())), np.array, [1.0, 2.0])
    np.testing.assert_array_equal(ydot, [1.0, 0.0])


def test_split_cotangent_may_have_zero_entries() -> None:
    x = np.arange(6.0, dtype=np.float32)
    ys, back = rc.rrule(np.split, x, 3)
    _, xbar, sections = back(rc.Tangent[list](rc.ZeroTangent(), np.ones(2, np.float32), None))
    np.testing.assert_array_equal(xbar, [0, 0, 1, 1, 0, 0])
    assert xbar.dtype == np.float32 and sections == rc.NoTangent()
    _, xbar, _ = back([None, rc.Thunk(lambda: np.ones(2, np.float32)), np.full(2, 2, np.float32)])
    np.testing.assert_array_equal(xbar, [0, 0, 1, 1, 2, 2])
    assert back(rc.ZeroTangent())[1] == rc.ZeroTangent()


def test_concatenate_cotangent_is_a_tangent_list_with_dtypes_kept() -> None:
    xs = [np.ones(2, np.float32), np.ones((1,)), 3 * np.ones(0, np.complex128)]
    y, back = rc.rrule(np.concatenate, xs)
    _, ct = back(np.array([1.0, 2.0, 3.0]) + 0j)
    assert isinstance(ct, rc.Tangent[list])
    assert [np.asarray(v).dtype for v in ct.backing] == [np.float32, np.float64, np.complex128]
    np.testing.assert_array_equal(ct[1], [3.0])


def test_vdot_conjugates_its_first_argument() -> None:
    a, b = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j])
    abar, bbar = _grads(np.vdot, a, b, ybar=1.0 + 0j)
    np.testing.assert_allclose(abar, b)  # d/d conj(a): the gradient of Re(vdot) wrt a is b
    np.testing.assert_allclose(bbar, a)
    abar, bbar = _grads(np.dot, a, b, ybar=1.0 + 0j)
    np.testing.assert_allclose(abar, np.conj(b))
    np.testing.assert_allclose(bbar, np.conj(a))


def test_astype_to_int_has_no_tangent_and_float32_is_kept() -> None:
    x = np.array([1.5, 2.5])
    assert _grads(np.ndarray.astype, x, np.int64) == (rc.NoTangent(), rc.NoTangent())
    assert rc.frule((None, np.ones(2), None), np.ndarray.astype, x, np.int32)[1] == rc.NoTangent()
    (xbar, _) = _grads(np.ndarray.astype, x.astype(np.float32), np.float64, ybar=np.ones(2))
    assert xbar.dtype == np.float32
    (xbar, _) = _grads(np.ndarray.astype, x, np.complex128, ybar=np.array([1 + 1j, 2j]))
    np.testing.assert_array_equal(xbar, [1.0, 0.0])
    z = np.array([1 + 2j, 3 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        (zbar, _) = _grads(np.astype, z, np.float64, ybar=np.array([2.0, 3.0]))
        _, ydot = rc.frule((None, np.array([1j, 1.0]), None), np.astype, z, np.float64)
    np.testing.assert_array_equal(zbar, [2.0, 3.0])
    assert zbar.dtype == np.complex128
    np.testing.assert_array_equal(ydot, [0.0, 1.0])


def test_pullbacks_are_named_after_their_function() -> None:
    x = np.ones((2, 3))
    assert rc.rrule(np.reshape, x, (3, 2))[1].__name__ == "reshape_pullback"
    assert rc.rrule(np.concatenate, [x, x])[1].__name__ == "concatenate_pullback"
    assert rc.rrule(np.einsum, "ij->", x)[1].__name__ == "einsum_pullback"
    assert rc.rrule(x.transpose)[1].__name__ == "bound_method_pullback"
    assert rc.rrule(np.ndarray.transpose, x)[1].__name__ == "transpose_pullback"


def test_bound_methods_dispatch_to_the_descriptor_rules() -> None:
    x = np.arange(6.0).reshape(2, 3)
    y, back = rc.rrule(x.reshape, 3, 2)
    assert y.shape == (3, 2)
    xbar, *rest = back(np.ones((3, 2)))
    assert xbar.shape == (2, 3) and rest == [rc.NoTangent(), rc.NoTangent()]


def test_take_adjoint_and_take_are_each_others_pullbacks() -> None:
    idx = np.array([0, 2, 2, 1])
    z, back = rc.rrule(take_adjoint, np.array([1.0, 2.0, 3.0, 4.0]), idx, (3,))
    np.testing.assert_array_equal(z, [1.0, 4.0, 5.0])
    _, ybar, *_ = back(np.array([10.0, 20.0, 30.0]))
    np.testing.assert_array_equal(ybar, [10.0, 30.0, 30.0, 20.0])
    y, back = rc.rrule(np.take, np.array([1.0, 2.0, 3.0]), idx)
    _, xbar, _ = back(np.ones(4))
    np.testing.assert_array_equal(xbar, [1.0, 1.0, 2.0])


def test_zero_cotangents_short_circuit() -> None:
    x = np.ones((2, 3), np.float32)
    for f, args in [(np.reshape, (x, (6,))), (np.einsum, ("ij->j", x)), (np.clip, (x, 0.0, 1.0)),
                    (np.where, (MASK, x, x)), (np.concatenate, ([x, x],)), (np.dot, (x, x.T))]:
        _, back = rc.rrule(f, *args)
        cts = back(rc.ZeroTangent())
        assert all(rc.is_zero(c) for c in cts)


def test_pad_modes_without_a_derivative_say_so() -> None:
    x = np.arange(4.0)
    y, back = rc.rrule(np.pad, x, 1, "maximum")
    np.testing.assert_array_equal(y, np.pad(x, 1, "maximum"))
    with pytest.raises(NotImplementedError, match="maximum"):
        back(np.ones(6))
    with pytest.raises(NotImplementedError, match="odd"):
        rc.frule((None, np.ones(4), None, None), np.pad, x, 1, "reflect", reflect_type="odd")


def kernel_blocks(theta: np.ndarray) -> Any:
    """A bordered kernel matrix of traced blocks and constants, as np.block is used."""
    k = np.exp(-np.subtract.outer(np.arange(3.0), np.arange(3.0)) ** 2 * theta[0])
    border = np.sin(theta[1] * np.arange(3.0))[:, None]
    m = np.block([[k, border], [border.T, np.array([[theta[1] ** 2 + 2.0]])]])
    return np.linalg.slogdet(m)[1] + np.sum(np.block([theta, 1.0, theta ** 2]) ** 3)


def test_block_of_traced_arrays_in_both_modes_and_second_order() -> None:
    import zygotepy as zp
    from tests.zygotepy.finite_differences import fd

    theta = np.array([0.4, 0.9])
    want = fd(kernel_blocks, theta)
    np.testing.assert_allclose(zp.gradient(kernel_blocks, theta)[0], want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(zp.jvp(kernel_blocks, (theta,), (np.array([1.0, -2.0]),))[1],
                               want @ np.array([1.0, -2.0]), rtol=1e-6)
    rows = np.array([fd(lambda v, i=i: zp.gradient(kernel_blocks, v)[0][i], theta) for i in range(2)])
    np.testing.assert_allclose(zp.hessian(kernel_blocks, theta), rows, rtol=1e-5, atol=1e-6)


SCALAR_METHODS = {
    "reshape": lambda s: s.reshape(1, 1).sum() * 2.0,
    "reshape-tuple": lambda s: np.sum(s.reshape((1, 1, 1)) ** 2),
    "flatten": lambda s: s.flatten()[0] ** 3,
    "transpose": lambda s: s.transpose() * s.T,
    "ravel-squeeze": lambda s: s.ravel()[0] * s.squeeze(),
    "tolist-item": lambda s: s.tolist() * s.item(),
    "sum-mean-copy": lambda s: s.sum() + s.mean() * s.copy(),
    "repeat-clip": lambda s: np.sum(s.repeat(3) * np.arange(3.0)) + s.clip(-10.0, 10.0),
}


@pytest.mark.parametrize("name", sorted(SCALAR_METHODS))
def test_methods_of_a_traced_numpy_scalar(name: str) -> None:
    """A reduction gives an ``np.float64``; its methods take the ndarray methods' arguments
    (``s.reshape(1, 1)`` is not ``np.reshape(s, 1, 1)``)."""
    import zygotepy as zp
    from tests.zygotepy.finite_differences import fd

    weights = np.array([0.5, -1.0, 2.0])

    def f(t: float) -> Any:
        return SCALAR_METHODS[name](np.sum(weights * t ** 2))

    want = fd(f, 0.7)
    np.testing.assert_allclose(zp.gradient(f, 0.7)[0], want, rtol=1e-6)
    np.testing.assert_allclose(zp.jvp(f, (0.7,), (1.0,))[1], want, rtol=1e-6)


PAD_VALUE_SHAPES = {
    "scalar": lambda t: t[0],
    "before-after": lambda t: np.array([t[0], t[1] ** 2]),
    "per-axis": lambda t: np.array([[t[0], t[1]], [t[1] * t[0], 2.0]]),
    "one-per-axis": lambda t: np.array([[t[0]], [t[1]]]),
    "one-element": lambda t: np.array([t[1] * 3.0]),
}


@pytest.mark.parametrize("spelling", sorted(PAD_VALUE_SHAPES))
def test_pad_with_traced_constant_values_in_both_modes(spelling: str) -> None:
    """``np.pad(x, ..., constant_values=traced)``: the values' cotangent is the output's summed
    over the region each fills (corners belong to the last axis), for every spelling NumPy takes."""
    import zygotepy as zp
    from tests.zygotepy.finite_differences import fd

    base = np.arange(1.0, 7.0).reshape(2, 3)
    weights = np.cos(np.arange(7.0 * 6.0)).reshape(7, 6)

    def padded(t: np.ndarray) -> Any:
        values = PAD_VALUE_SHAPES[spelling](t)
        return np.sum(np.pad(base * t[1], ((2, 3), (1, 2)), constant_values=values) * weights) + np.sum(
            np.pad(t, 1, "constant", constant_values=values if np.size(values) == 1 else 0.5) ** 2)

    theta = np.array([0.7, -1.2])
    want = fd(padded, theta)
    np.testing.assert_allclose(zp.gradient(padded, theta)[0], want, rtol=1e-7, atol=1e-9)
    direction = np.array([0.3, 1.1])
    np.testing.assert_allclose(zp.jvp(padded, (theta,), (direction,))[1], want @ direction, rtol=1e-7)
    rows = np.array([fd(lambda v, i=i: zp.gradient(padded, v)[0][i], theta) for i in range(2)])
    np.testing.assert_allclose(zp.hessian(padded, theta), rows, rtol=1e-5, atol=1e-6)
