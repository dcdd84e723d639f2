"""NumPy functions of an array's shape or memory alone (rulescore/rules/numpy_index_helpers.py):
no derivative, and inside a differentiated function they are not differentiated through their
source (scikit-learn's ``K[np.diag_indices_from(K)] += alpha``, SciPy's ``shares_memory``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rulescore.testing.strategies as S
import zygotepy as zp
from rulescore.rules import numpy_index_helpers
from tests.rulescore.rules._cases import RuleCase, case_id, check_case
from tests.zygotepy.finite_differences import fd

SQUARE = S.arrays(shape=(3, 3))

CASES = [
    RuleCase(np.diag_indices_from, (SQUARE,), max_examples=2),
    RuleCase(np.tril_indices_from, (SQUARE,), max_examples=2),
    RuleCase(np.triu_indices_from, (SQUARE, 1), nondiff=(1,), name="k=1", max_examples=2),
    RuleCase(np.shares_memory, (SQUARE, SQUARE), max_examples=2),
    RuleCase(np.may_share_memory, (SQUARE, SQUARE), max_examples=2),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in numpy_index_helpers.RULES} <= {id(c.f) for c in CASES}


def test_jitter_and_triangles_of_a_traced_matrix() -> None:
    def f(a: Any) -> Any:
        k = a @ a.T
        k[np.diag_indices_from(k)] += 0.5
        assert not np.shares_memory(k, a)
        return np.sum(np.log(k[np.tril_indices_from(k)] ** 2)) + np.sum(k[np.triu_indices_from(k, 1)])

    a = np.arange(1.0, 10.0).reshape(3, 3) / 4
    np.testing.assert_allclose(zp.gradient(f, a)[0], fd(f, a), rtol=1e-6)
    direction = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    np.testing.assert_allclose(zp.jvp(f, (a,), (direction,))[1], np.sum(fd(f, a) * direction), rtol=1e-6)
