"""Rules for products that contract axes (rulescore/rules/contractions.py): every alias checked
against finite differences, and each rule of the family's table checked directly (the rule a
call reaches is the table's, whichever family registered last)."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct
import rulescore.testing.strategies as S
from rulescore._contract import keep_rrule_contract, plain_tangents
from rulescore.rules import contractions

from ._cases import RuleCase, case_id, check_case

F32, C128 = np.float32, np.complex128
LA = np.linalg


def A(shape: Any = None, dtype: Any = np.float64) -> Any:
    return S.arrays(shape=shape, dtype=dtype)


CASES: list[RuleCase] = [
    RuleCase(np.dot, (A((3,)), A((3,)))),
    RuleCase(np.dot, (A((2, 3)), A((3, 4))), name="matrix"),
    RuleCase(np.dot, (A((2, 2, 3), C128), A((3,), C128)), name="complex-3d-1d"),
    RuleCase(np.dot, (A((2, 3), F32), A((2, 3, 2), F32)), name="float32-nd"),
    RuleCase(np.dot, (A(()), A((2, 3))), name="scalar"),
    RuleCase(np.ndarray.dot, (A((2, 3)), A((3,)))),
    RuleCase(np.inner, (A((3,)), A((3,)))),
    RuleCase(np.inner, (A((2, 3), C128), A((4, 2, 3), C128)), name="complex-nd"),
    RuleCase(np.inner, (S.scalars(), A((2,))), name="scalar"),
    RuleCase(np.outer, (A((2,)), A((3,)))),
    RuleCase(np.outer, (A((2, 2), C128), A((3,), C128)), name="complex"),
    RuleCase(LA.outer, (A((2,)), A((3,)))),
    RuleCase(LA.outer, (A((2,), C128), A((3,), C128)), name="complex"),
    RuleCase(np.vdot, (A((3,), C128), A((3,), C128))),
    RuleCase(np.vdot, (A((2, 2)), A((4,))), name="real"),
    RuleCase(np.vdot, (A((2,)), A((2,), C128)), name="mixed"),
    RuleCase(np.tensordot, (A((2, 3, 4)), A((3, 4, 2)))),
    RuleCase(np.tensordot, (A((2, 3), C128), A((3, 4), C128), 1), nondiff=(2,), name="complex-1"),
    RuleCase(np.tensordot, (A((2, 3, 4)), A((3, 2, 5)), ([1, 0], [0, 1])), nondiff=(2,), name="pairs"),
    RuleCase(np.tensordot, (A((2,), F32), A((3,), F32), 0), nondiff=(2,), name="outer"),
    RuleCase(LA.tensordot, (A((2, 3, 4)), A((4, 2))), {"axes": ([2, 0], [0, 1])}, name="pairs"),
    RuleCase(LA.matmul, (A((2, 3, 4)), A((4, 2)))),
    RuleCase(LA.matmul, (A((4,)), A((2, 4, 3))), name="vector-matrix"),
    RuleCase(LA.matmul, (A((2, 3), C128), A((3, 4))), name="complex"),
    RuleCase(LA.vecdot, (A((2, 3)), A((3,)))),
    RuleCase(LA.vecdot, (A((2, 3), C128), A((3,), C128)), name="complex"),
    RuleCase(LA.vecdot, (A((3, 4)), A((3, 1))), {"axis": 0}, name="axis"),
    RuleCase(np.einsum, ("ij,jk->ik", A((2, 3)), A((3, 4))), nondiff=(0,)),
    RuleCase(np.einsum, ("ii->i", A((3, 3), C128)), nondiff=(0,), name="diagonal"),
    RuleCase(np.einsum, ("ii", A((3, 3))), nondiff=(0,), name="trace"),
    RuleCase(np.einsum, ("ij->", A((2, 3), F32)), nondiff=(0,), name="sum"),
    RuleCase(np.einsum, ("ba,ac", A((2, 3)), A((3, 4))), nondiff=(0,), name="implicit"),
    RuleCase(np.einsum, ("...ij,...jk", A((5, 1, 2, 3)), A((4, 3, 2))), nondiff=(0,), name="ellipsis"),
    RuleCase(np.einsum, ("i...,i...->...", A((2, 3)), A((2, 1))), nondiff=(0,), name="broadcast"),
    RuleCase(np.einsum, ("ij,jk,kl->il", A((2, 3)), A((3, 2)), A((2, 2))), nondiff=(0,), name="three"),
    RuleCase(np.einsum, ("iij,j->ij", A((2, 2, 3), C128), A((3,), C128)), nondiff=(0,),
             name="complex-repeated"),
    RuleCase(np.einsum, (A((2, 3)), [0, 1], A((3,)), [1], [0]), nondiff=(1, 3, 4), name="sublists"),
]
#: Aliases tested in other modules (operator.matmul in test_operators.py, the generalised ufuncs
#: np.matmul/np.vecdot/np.matvec/np.vecmat in test_ufuncs.py) get a few cases here too, so the
#: direct check below sees every row of the table.
DIRECT_ONLY = [
    RuleCase(operator.matmul, (A((3, 4)), A((4, 2))), name="2d-2d"),
    RuleCase(operator.matmul, (A((4,)), A((2, 4, 3))), name="1d-batched"),
    RuleCase(np.matmul, (A((2, 1, 3, 4)), A((3, 4, 2))), name="batch-broadcast"),
    RuleCase(np.matmul, ([[1.0, 2.0]], A((2, 3))), name="list"),
]
if isinstance(getattr(np, "vecdot", None), np.ufunc):
    DIRECT_ONLY.append(RuleCase(np.vecdot, (A((3, 4), C128), A((4,), C128)), name="complex"))
if isinstance(getattr(np, "matvec", None), np.ufunc):
    DIRECT_ONLY += [RuleCase(np.matvec, (A((3, 4), C128), A((4,), C128)), name="complex"),
                    RuleCase(np.vecmat, (A((3,), C128), A((3, 4), C128)), name="complex")]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def _pair(f: Any) -> rc.RulePair:
    (pair,) = [p for p in contractions.RULES if p.primal is f]
    return pair


@pytest.mark.parametrize("case", CASES + DIRECT_ONLY, ids=case_id)
def test_table_rule(case: RuleCase) -> None:
    pair = _pair(case.f)
    assert pair.rrule is not None and pair.frule is not None

    def table_rrule(f: Any, *args: Any, **kwargs: Any) -> Any:
        return keep_rrule_contract(pair, f, len(args), pair.rrule(*args, **kwargs))  # type: ignore[misc]

    def table_frule(tangents: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        plain = plain_tangents(tangents, pair.wrt)
        if plain is None:
            return f(*args, **kwargs), rc.ZeroTangent()
        return pair.frule(plain, *args, **kwargs)  # type: ignore[misc]

    rct.check_rule(case.f, case.args, case.kwargs, nondiff=case.nondiff, rtol=case.rtol,
                   atol=case.atol, rrule_f=table_rrule, frule_f=table_frule)


def test_every_alias_is_in_the_table() -> None:
    aliases = [operator.matmul, np.matmul, LA.matmul, np.dot, np.ndarray.dot, np.inner, np.outer,
               LA.outer, np.vdot, np.tensordot, LA.tensordot, LA.vecdot, np.einsum]
    assert all(len([p for p in contractions.RULES if p.primal is f]) == 1 for f in aliases)


def test_matmul_pullback_multiplies_by_the_transpose_for_real_matrices() -> None:
    x, w = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    _, back = _pair(np.matmul).rrule(x, w)  # type: ignore[misc]
    _, xbar, wbar = back(np.ones((2, 4)))
    np.testing.assert_allclose(rc.unthunk(xbar), np.ones((2, 4)) @ w.T)
    np.testing.assert_allclose(rc.unthunk(wbar), x.T @ np.ones((2, 4)))


def test_tensordot_axes_parser() -> None:
    assert contractions.tensordot_axes(2, 3, 3) == ([1, 2], [0, 1])
    assert contractions.tensordot_axes(([-1], [0]), 2, 2) == ([1], [0])


def test_gufunc_keywords_are_refused_with_the_ufunc_name() -> None:
    with pytest.raises(TypeError, match="numpy.matmul: out= is not supported"):
        rc.rrule(np.matmul, np.ones((2, 2)), np.ones((2, 2)), out=np.empty((2, 2)))
