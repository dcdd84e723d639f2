"""Unmodified statsmodels: the discrete models (Logit, Probit, Poisson, NegativeBinomial,
MNLogit), GLM families and OLS, ``loglike`` differentiated by zygotepy and compared with the
library's ``score`` and ``hessian``. Where statsmodels' own Hessian is not the derivative of its
score (NegativeBinomial, OLS) the Hessian is checked against finite differences of the score.
Skipped when statsmodels is not installed (extra ``realworld``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("statsmodels")
pytestmark = pytest.mark.realworld  # .ci/run runs these in one step with the exhaustive checks

import zygotepy as zp  # noqa: E402
from tests.realworld.models import Case, statsmodels_cases  # noqa: E402

CASES = statsmodels_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_score_matches_statsmodels(case: Case) -> None:
    (g,) = zp.gradient(case.f, case.theta)
    np.testing.assert_allclose(g, case.gradient(case.theta), rtol=1e-8, atol=1e-9)
    direction = np.linspace(0.5, -1.0, len(case.theta))
    _, slope = zp.jvp(case.f, (case.theta,), (direction,))
    np.testing.assert_allclose(slope, case.gradient(case.theta) @ direction,
                               rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hessian_matches_statsmodels_or_differences_of_its_score(case: Case) -> None:
    hessian = zp.hessian(case.f, case.theta)
    if case.hessian is not None:
        np.testing.assert_allclose(hessian, case.hessian(case.theta), rtol=1e-7, atol=1e-8)
        return
    steps = 1e-6 * np.eye(len(case.theta))
    by_differences = np.stack([(case.gradient(case.theta + h) - case.gradient(case.theta - h)) / 2e-6
                               for h in steps])
    np.testing.assert_allclose(hessian, by_differences, rtol=1e-6, atol=1e-6)
