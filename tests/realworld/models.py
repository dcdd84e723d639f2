"""The unmodified library code the realworld tests differentiate: scikit-learn's Gaussian-process
kernels and statsmodels' likelihoods, each with the library's own analytic derivative (shared by
the tests and ``tools/realworld_table.py``, which times them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Case:
    """A function of parameters written by the library, the point, and the library's derivatives
    as functions of the parameters (``hessian`` ``None``: the library has none, or a wrong one:
    see ``note``)."""

    name: str
    f: Callable[[np.ndarray], Any]
    theta: np.ndarray
    gradient: Callable[[np.ndarray], np.ndarray]
    hessian: Callable[[np.ndarray], np.ndarray] | None = None
    note: str = ""


def _points(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return x, np.sin(x[:, 0]) + 0.1 * rng.normal(size=n)


def stock_kernels() -> dict[str, tuple[Any, int]]:
    """scikit-learn's kernels (and sums, products, powers of them), each with the number of input
    dimensions it is used with (ExpSineSquared is positive definite on a line only)."""
    from sklearn.gaussian_process import kernels as K

    return {
        "RBF": (K.RBF(length_scale=[1.0, 2.0]), 2),
        "Matern-0.5": (K.Matern(nu=0.5), 2),
        "Matern-1.5": (K.Matern(length_scale=0.8, nu=1.5), 2),
        "Matern-2.5": (K.Matern(length_scale=[1.0, 0.5], nu=2.5), 2),
        "Matern-inf": (K.Matern(nu=np.inf), 2),
        "RationalQuadratic": (K.RationalQuadratic(length_scale=1.2, alpha=0.7), 2),
        "ExpSineSquared": (K.ExpSineSquared(length_scale=1.0, periodicity=3.0), 1),
        "DotProduct": (K.DotProduct(sigma_0=0.5), 2),
        "Constant*RBF+White": (K.ConstantKernel(1.5) * K.RBF(0.9) + K.WhiteKernel(0.1), 2),
        "RBF*DotProduct": (K.RBF(1.3) * K.DotProduct(0.2), 2),
        "Constant+Matern": (K.ConstantKernel(0.5) + K.Matern(1.1, nu=1.5), 2),
        "RationalQuadratic**2": (K.Exponentiation(K.RationalQuadratic(), 2.0), 2),
        "WhiteKernel": (K.WhiteKernel(0.3) + K.RBF(), 2),
        "ConstantKernel": (K.ConstantKernel(2.0) * K.DotProduct() + K.ConstantKernel(0.3), 2),
    }


def gp_cases(n: int = 25, seed: int = 0) -> list[Case]:
    """Per stock kernel: the kernel matrix (contracted with fixed weights) against
    ``kernel(X, eval_gradient=True)``, and ``log_marginal_likelihood`` against its own gradient."""
    from sklearn.gaussian_process import GaussianProcessRegressor

    out = []
    for name, (kernel, dims) in stock_kernels().items():
        x, y = _points(n, dims, seed)
        gp = GaussianProcessRegressor(kernel=kernel, optimizer=None, alpha=1e-2).fit(x, y)
        fitted = gp.kernel_
        weights = np.random.default_rng(seed + 1).normal(size=(n, n))

        def kernel_matrix(theta: np.ndarray, fitted: Any = fitted, x: np.ndarray = x,
                          weights: np.ndarray = weights) -> Any:
            return np.sum(weights * fitted.clone_with_theta(theta)(x))

        def kernel_gradient(theta: np.ndarray, fitted: Any = fitted, x: np.ndarray = x,
                            weights: np.ndarray = weights) -> Any:
            return np.einsum("ij,ijk->k", weights, fitted.clone_with_theta(theta)(x, eval_gradient=True)[1])

        def likelihood(theta: np.ndarray, gp: Any = gp) -> Any:
            return gp.log_marginal_likelihood(theta, clone_kernel=True)

        def likelihood_gradient(theta: np.ndarray, gp: Any = gp) -> Any:
            return gp.log_marginal_likelihood(theta, eval_gradient=True, clone_kernel=True)[1]

        out.append(Case(f"{name} kernel", kernel_matrix, fitted.theta, kernel_gradient))
        out.append(Case(f"{name} log_marginal_likelihood", likelihood, fitted.theta, likelihood_gradient))
    return out


def _regression_data(n: int = 80, seed: int = 0) -> dict[str, Any]:
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    x = sm.add_constant(rng.normal(size=(n, 2)))
    eta = x @ np.array([0.3, -0.5, 0.8])
    return {"x": x, "eta": eta, "binary": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float),
            "counts": rng.poisson(np.exp(0.5 * eta)).astype(float), "classes": rng.integers(0, 3, size=n),
            "normal": eta + rng.normal(size=n), "positive": np.exp(0.4 * eta) * rng.gamma(4.0, 0.25, size=n)}


def statsmodels_cases(seed: int = 0) -> list[Case]:
    """statsmodels' discrete models and GLM families: ``loglike`` against ``score`` and
    ``hessian`` (GLMs at a fixed scale: with ``scale=None`` the log-likelihood estimates the
    scale from the parameters, which ``score`` holds fixed; 1 for the families without a
    dispersion, whose ``loglike`` ignores the scale while ``score`` divides by it)."""
    import statsmodels.api as sm

    d = _regression_data(seed=seed)
    x, fam, links = d["x"], sm.families, sm.families.links
    discrete = {
        "Logit": sm.Logit(d["binary"], x), "Probit": sm.Probit(d["binary"], x),
        "Poisson": sm.Poisson(d["counts"], x), "NegativeBinomial": sm.NegativeBinomial(d["counts"], x),
        "MNLogit": sm.MNLogit(d["classes"], x),
    }
    glms = {
        "GLM Binomial": sm.GLM(d["binary"], x, family=fam.Binomial()),
        "GLM Binomial probit": sm.GLM(d["binary"], x, family=fam.Binomial(links.Probit())),
        "GLM Poisson": sm.GLM(d["counts"], x, family=fam.Poisson()),
        "GLM Gaussian": sm.GLM(d["normal"], x, family=fam.Gaussian()),
        "GLM Gamma log": sm.GLM(d["positive"], x, family=fam.Gamma(links.Log())),
        "GLM InverseGaussian log": sm.GLM(d["positive"], x, family=fam.InverseGaussian(links.Log())),
        "GLM NegativeBinomial": sm.GLM(d["counts"], x, family=fam.NegativeBinomial(alpha=0.7)),
        "GLM Tweedie": sm.GLM(d["counts"], x, family=fam.Tweedie(var_power=1.5)),
    }
    out = []
    for name, model in discrete.items():
        k = x.shape[1] * (2 if name == "MNLogit" else 1) + (name == "NegativeBinomial")
        theta = 0.1 * np.arange(1.0, k + 1) / k
        if name == "NegativeBinomial":
            theta[-1] = 0.5  # alpha
        note = ("statsmodels' NegativeBinomial.hessian disagrees with finite differences of its own "
                "score: the Hessian is checked against those" if name == "NegativeBinomial" else "")
        out.append(Case(name, model.loglike, theta, model.score, None if note else model.hessian, note))
    for name, model in glms.items():
        theta = np.array([0.2, -0.1, 0.15])
        dispersed = ("GLM Gaussian", "GLM Gamma log", "GLM InverseGaussian log", "GLM Tweedie")
        scale = 1.3 if name in dispersed else 1.0

        def loglike(p: np.ndarray, model: Any = model, scale: float = scale) -> Any:
            return model.loglike(p, scale=scale)

        out.append(Case(name, loglike, theta, lambda t, m=model, s=scale: m.score(t, scale=s),
                        lambda t, m=model, s=scale: m.hessian(t, scale=s)))
    ols = sm.OLS(d["normal"], x)
    note = ("statsmodels' OLS.hessian is not the derivative of its score (a factor 2 and the concentrated "
            "scale): the Hessian is checked against finite differences of the score")
    out.append(Case("OLS", ols.loglike, np.array([0.2, -0.4, 0.7]), ols.score, None, note))
    return out
