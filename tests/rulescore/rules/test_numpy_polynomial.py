"""Rules for constructing ``numpy.polynomial``'s series from traced coefficients
(rulescore/rules/numpy_polynomial.py): each class against finite differences, and series built,
evaluated and combined through zygotepy in both modes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.polynomial import Chebyshev, Hermite, HermiteE, Laguerre, Legendre, Polynomial

import rulescore.testing.strategies as S
import zygotepy as zp
from rulescore.rules import numpy_polynomial
from tests.rulescore.rules._cases import RuleCase, case_id, check_case
from tests.zygotepy.finite_differences import fd

CASES = [
    *(RuleCase(cls, (S.arrays(shape=(3,)),), max_examples=3) for cls in numpy_polynomial.SERIES),
    RuleCase(Chebyshev, (S.arrays(shape=(2,)), S.arrays(shape=(2,)).map(lambda d: d + np.array([-3.0, 3.0]))),
             name="domain", max_examples=3),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in numpy_polynomial.RULES} <= {id(c.f) for c in CASES}


@pytest.mark.parametrize("cls", [Polynomial, Chebyshev, Legendre, Hermite, HermiteE, Laguerre])
def test_series_from_parameters_through_zygotepy(cls: Any) -> None:
    def f(t: float) -> Any:
        p = cls([1.0, t, t ** 2])
        q = cls([t, 0.5], domain=[-t, 2.0])
        return p(0.7) + (p * p).coef.sum() + (p + 1.0)(0.5) + q(0.3) + np.sum(p.linspace(4)[1])

    want = fd(f, 1.3)
    assert zp.gradient(f, 1.3)[0] == pytest.approx(want, rel=1e-6)
    assert zp.jvp(f, (1.3,), (1.0,))[1] == pytest.approx(want, rel=1e-6)
