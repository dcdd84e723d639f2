"""Unmodified scikit-learn: every stock Gaussian-process kernel (and sums, products and powers
of kernels, with WhiteKernel and ConstantKernel), differentiated by zygotepy through the
library's own code and compared with scikit-learn's analytic gradients (``eval_gradient=True``),
in reverse and forward mode. Skipped when scikit-learn is not installed (extra ``realworld``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytestmark = pytest.mark.realworld  # .ci/run runs these in one step with the exhaustive checks

import zygotepy as zp  # noqa: E402
from tests.realworld.models import Case, gp_cases  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

CASES = gp_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradient_matches_scikit_learn(case: Case) -> None:
    (g,) = zp.gradient(case.f, case.theta)
    np.testing.assert_allclose(g, case.gradient(case.theta), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("case", CASES[1::4], ids=lambda c: c.name)
def test_forward_mode_matches_scikit_learn(case: Case) -> None:
    direction = np.linspace(1.0, -0.5, len(case.theta))
    _, ydot = zp.jvp(case.f, (case.theta,), (direction,))
    np.testing.assert_allclose(ydot, case.gradient(case.theta) @ direction, rtol=1e-7, atol=1e-9)


def test_prediction_gradient_in_the_inputs_and_second_order() -> None:
    """The posterior mean at new points (``kernel(X_new, X_train)``: cdist) differentiated in the
    new points, and the Hessian of the log marginal likelihood in the hyperparameters."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as K

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(15, 2)), rng.normal(size=15)
    gp = GaussianProcessRegressor(K.ConstantKernel() * K.Matern(nu=2.5) + K.WhiteKernel(0.1), optimizer=None)
    gp.fit(x, y)
    new = rng.normal(size=(4, 2))

    def mean_at(points: np.ndarray) -> Any:
        return np.sum(gp.predict(points) ** 2)

    np.testing.assert_allclose(zp.gradient(mean_at, new)[0], fd(mean_at, new), rtol=1e-6, atol=1e-8)

    def likelihood(theta: np.ndarray) -> Any:
        return gp.log_marginal_likelihood(theta, clone_kernel=True)

    theta = gp.kernel_.theta

    def library_gradient(t: np.ndarray) -> Any:
        return gp.log_marginal_likelihood(t, eval_gradient=True, clone_kernel=True)[1]

    by_differences = np.stack([(library_gradient(theta + h) - library_gradient(theta - h)) / 2e-6
                               for h in 1e-6 * np.eye(len(theta))])
    np.testing.assert_allclose(zp.hessian(likelihood, theta), by_differences, rtol=1e-5, atol=1e-6)
