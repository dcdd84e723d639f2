"""Tests for :mod:`rulescore.rules.broadcasting`: ``np.meshgrid`` (every ``indexing``,
``sparse`` and ``copy`` option) and ``np.broadcast_arrays`` against finite differences, then as
a user writes them, through zygotepy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rulescore.testing.strategies as S
from tests.zygotepy.finite_differences import fd

from ._cases import RuleCase, case_id, check_case

zp = pytest.importorskip("zygotepy")

N = 3
OPTIONS = [{}, {"indexing": "ij"}, {"sparse": True}, {"copy": False},
           {"sparse": True, "indexing": "ij", "copy": False}]

CASES = [
    *(RuleCase(np.meshgrid, (S.arrays(shape=(3,)), S.arrays(shape=(2,))), options,
               name="-".join(f"{k}={v}" for k, v in options.items()), max_examples=N) for options in OPTIONS),
    RuleCase(np.meshgrid, (S.arrays(shape=(3,)), S.arrays(shape=(2,)), S.arrays(shape=(2, 2))),
             name="three-inputs-one-2d", max_examples=N),
    RuleCase(np.meshgrid, (S.arrays(shape=(3,)),), name="one-input", max_examples=N),
    RuleCase(np.broadcast_arrays, (S.arrays(shape=(3,)), S.arrays(shape=(2, 1)), S.scalars()),
             max_examples=N),
    RuleCase(np.broadcast_arrays, (S.arrays(shape=(2, 3), dtype=np.float32),), name="one-input",
             max_examples=N),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


@pytest.mark.parametrize("options", OPTIONS, ids=str)
def test_zygotepy_unpacks_a_meshgrid(options: dict[str, Any]) -> None:
    def f(x: np.ndarray, y: np.ndarray) -> Any:
        a, b = np.meshgrid(x, y, **options)
        return np.sum(np.sin(a * b) + a ** 2)

    x, y = np.array([0.3, 1.1, -0.4]), np.array([0.7, -1.2])
    gx, gy = zp.gradient(f, x, y)
    np.testing.assert_allclose(gx, fd(lambda u: f(u, y), x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, fd(lambda u: f(x, u), y), rtol=1e-6, atol=1e-8)


def test_zygotepy_second_order_through_broadcast_arrays() -> None:
    def f(x: np.ndarray) -> Any:
        a, b = np.broadcast_arrays(x, x[:, None])
        return np.sum(a * b ** 2)

    x = np.array([0.3, 1.1, -0.4])
    h = zp.hessian(f, x)
    rows = np.array([fd(lambda v, i=i: zp.gradient(f, v)[0][i], x) for i in range(3)])
    np.testing.assert_allclose(h, rows, rtol=1e-5, atol=1e-6)
