"""Rules for ``scipy.stats`` (rulescore/rules/scipy_stats.py): every method of every covered
distribution against finite differences in ``x`` and every float parameter (positional; keyword
parameters as constants), through zygotepy, and against ``jax.scipy.stats``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

st = pytest.importorskip("scipy.stats")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_stats  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 3
LOC = S.scalars(-0.5, 0.5)
SCALE = S.scalars(0.5, 2.0)
METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")

#: distribution -> (x strategy for loc in [-0.5, 0.5], scale in [0.5, 2], shape strategies)
CONTINUOUS: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "norm": (S.arrays(shape=(3,)), ()),
    # off the kink at loc
    "laplace": (S.arrays(shape=(3,), min_value=0.6, max_value=3.0).map(lambda a: a * [1, -1, 1]), ()),
    "logistic": (S.arrays(shape=(3,)), ()),
    "cauchy": (S.arrays(shape=(3,)), ()),
    "expon": (S.arrays(shape=(3,), min_value=0.8, max_value=4.0), ()),
    "t": (S.arrays(shape=(3,)), (S.scalars(1.5, 8.0),)),
    "gamma": (S.arrays(shape=(3,), min_value=0.8, max_value=4.0), (S.scalars(1.5, 4.0),)),
    "lognorm": (S.arrays(shape=(3,), min_value=0.8, max_value=4.0), (S.scalars(0.5, 1.5),)),
    "chi2": (S.arrays(shape=(3,), min_value=0.8, max_value=4.0), (S.scalars(1.5, 5.0),)),
}
#: beta's support is [loc, loc + scale]: loc 0 and scale in [1.5, 2] keep x in (0.1, 0.8) inside
BETA = (S.arrays(shape=(3,), min_value=0.2, max_value=1.2), (S.scalars(1.5, 4.0), S.scalars(1.5, 4.0)))


def case(f: Any, args: tuple[Any, ...], name: str = "", **options: Any) -> RuleCase:
    kwargs = options.pop("kwargs", {})
    return RuleCase(f, args, kwargs, name=name, max_examples=options.pop("max_examples", N), **options)


def _continuous_cases() -> list[RuleCase]:
    out = []
    for name, (x, shapes) in CONTINUOUS.items():
        dist = getattr(st, name)
        for method in METHODS:
            f = getattr(dist, method)
            out.append(case(f, (x, *shapes, LOC, SCALE), f"{name}-loc-scale"))
            out.append(case(f, (x, *shapes), f"{name}-standard"))
        out.append(case(dist.ppf, (S.arrays(shape=(3,), min_value=0.05, max_value=0.95), *shapes, LOC, SCALE),
                        f"{name}-loc-scale"))
    x, shapes = BETA
    for method in METHODS:
        out.append(case(getattr(st.beta, method), (x, *shapes, 0.0, S.scalars(1.5, 2.0)), "beta-loc-scale"))
    out.append(case(st.beta.ppf, (S.arrays(shape=(3,), min_value=0.05, max_value=0.95), *shapes), "beta"))
    return out


K = np.array([0, 2, 5])
CASES = [
    *_continuous_cases(),
    case(st.norm.logpdf, (S.arrays(shape=(3,)),), "keywords", kwargs={"loc": 0.3, "scale": 1.7}),
    case(st.t.cdf, (S.arrays(shape=(3,)),), "keyword-shape", kwargs={"df": 3.0, "loc": 0.3}),
    case(st.norm.logpdf, (0.4, S.arrays(shape=(2, 3)), S.arrays(shape=(3,), min_value=0.5, max_value=2.0)),
         "broadcast-parameters"),
    case(st.poisson.logpmf, (K, S.scalars(0.5, 5.0)), "poisson", nondiff=(0,)),
    case(st.binom.logpmf, (K, 7, S.scalars(0.1, 0.9)), "binom", nondiff=(0, 1)),
    case(st.nbinom.logpmf, (K, S.scalars(1.0, 5.0), S.scalars(0.1, 0.9)), "nbinom", nondiff=(0,)),
    case(st.poisson.pmf, (K, S.scalars(0.5, 5.0)), "poisson", nondiff=(0,)),
    case(st.binom.pmf, (K, 7, S.scalars(0.1, 0.9)), "binom", nondiff=(0, 1)),
    case(st.nbinom.pmf, (K, S.scalars(1.0, 5.0), S.scalars(0.1, 0.9)), "nbinom", nondiff=(0,)),
    case(st.poisson.cdf, (np.array([0.0, 2.5, 5.0]), S.scalars(0.5, 5.0)), "poisson", nondiff=(0,)),
    case(st.multivariate_normal.entropy, (S.arrays(shape=(2,)), S.spd_matrices(2)), "cov"),
    case(st.multivariate_normal.entropy, (S.arrays(shape=(3,)), S.scalars(0.5, 2.0)), "isotropic"),
    case(st.multivariate_normal.logpdf, (S.arrays(shape=(4, 2)), S.arrays(shape=(2,)), S.spd_matrices(2)),
         "cov"),
    case(st.multivariate_normal.logpdf, (S.arrays(shape=(3,)), S.arrays(shape=(3,)),
                                         S.arrays(shape=(3,), min_value=0.5, max_value=2.0)), "diagonal"),
    case(st.multivariate_normal.logpdf, (S.arrays(shape=(2,)), S.arrays(shape=(2,)), S.scalars(0.5, 2.0)),
         "isotropic"),
    case(st.multivariate_normal.logpdf, (S.arrays(shape=(4,)),), "defaults-one-dimensional"),
    case(st.multivariate_normal.logpdf, (S.arrays(shape=(4,)), 0.3, S.scalars(0.5, 2.0)), "one-dimensional"),
    case(st.multivariate_normal.pdf, (S.arrays(shape=(4, 2), min_value=-1, max_value=1), S.arrays(shape=(2,)),
                                      S.spd_matrices(2)), "cov"),
]

#: the functions the rules are registered on (the cases call them as bound methods)
COVERED = [p.primal for p in scipy_stats.RULES]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_registered_signature_has_a_case() -> None:
    tested = {(c.f.__func__, type(c.f.__self__)) for c in CASES}
    tested.add((type(st.dirichlet).logpdf, type(st.dirichlet)))  # test_dirichlet_* below
    tested.add((type(st.dirichlet).pdf, type(st.dirichlet)))  # test_dirichlet_pdf_* below
    registered = {(p.primal, p.types[0]) for p in scipy_stats.RULES}
    assert registered <= tested, registered - tested


def test_errors_and_explanations_name_the_distribution_method() -> None:
    assert "scipy.stats.norm.logpdf" in rc.rrule.explain(st.norm.logpdf, 0.5)


def test_other_distributions_are_not_claimed() -> None:
    assert rc.rrule(st.weibull_min.logpdf, 1.0, 2.0) is None


def test_cdf_shape_derivative_uses_the_cdf_itself() -> None:
    df, x, h = 3.5, 0.7, 1e-5
    _, back = rc.rrule(st.t.cdf, x, df)
    expected = (st.t.cdf(x, df + h) - st.t.cdf(x, df - h)) / (2 * h)
    assert back(1.0)[2] == pytest.approx(expected, rel=1e-7)  # (self, x, df)


def test_logcdf_gradient_is_finite_far_in_the_left_tail() -> None:
    _, back = rc.rrule(st.norm.logcdf, -40.0)
    assert back(1.0)[1] == pytest.approx(40.0, rel=1e-2)


# -- dirichlet: x lives on the simplex, so it is checked along directions that stay on it -----

def test_dirichlet_logpdf_in_alpha_and_along_the_simplex() -> None:
    x = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])  # three components, two points
    alpha, h = np.array([1.5, 2.0, 3.0]), 1e-6
    y, back = rc.rrule(st.dirichlet.logpdf, x, alpha)
    ybar = np.array([1.0, -0.5])
    _, xbar, abar = back(ybar)
    for i in range(3):
        e = np.zeros(3)
        e[i] = h
        fd = ybar @ (st.dirichlet.logpdf(x, alpha + e) - st.dirichlet.logpdf(x, alpha - e)) / (2 * h)
        assert abar[i] == pytest.approx(fd, rel=1e-6)
    v = np.array([[0.1, -0.2], [-0.3, 0.1], [0.2, 0.1]])  # columns sum to zero
    fd = ybar @ (st.dirichlet.logpdf(x + h * v, alpha) - st.dirichlet.logpdf(x - h * v, alpha)) / (2 * h)
    assert np.sum(xbar * v) == pytest.approx(fd, rel=1e-6)
    adot = 0.1 * alpha
    _, ydot = rc.frule((None, v, adot), st.dirichlet.logpdf, x, alpha)
    fd = (st.dirichlet.logpdf(x + h * v, alpha + h * adot)
          - st.dirichlet.logpdf(x - h * v, alpha - h * adot)) / (2 * h)
    np.testing.assert_allclose(ydot, fd, rtol=1e-6)


def test_dirichlet_pdf_is_the_exponential_of_logpdf() -> None:
    x, alpha, h = np.array([0.2, 0.3, 0.5]), np.array([1.5, 2.0, 3.0]), 1e-6
    y, back = rc.rrule(st.dirichlet.pdf, x, alpha)
    _, xbar, abar = back(1.0)
    e = np.array([0.0, h, 0.0])
    fd_alpha = (st.dirichlet.pdf(x, alpha + e) - st.dirichlet.pdf(x, alpha - e)) / (2 * h)
    assert abar[1] == pytest.approx(fd_alpha, rel=1e-6)
    v = np.array([0.1, -0.3, 0.2])  # stays on the simplex
    fd = (st.dirichlet.pdf(x + h * v, alpha) - st.dirichlet.pdf(x - h * v, alpha)) / (2 * h)
    assert np.sum(xbar * v) == pytest.approx(fd, rel=1e-6)
    _, ydot = rc.frule((None, v, np.zeros(3)), st.dirichlet.pdf, x, alpha)
    assert ydot == pytest.approx(fd, rel=1e-6)


# -- through zygotepy ------------------------------------------------------------------------

DATA = np.array([0.3, 1.2, 2.5, 0.9])


def student_t_regression(theta: np.ndarray) -> Any:
    """A robust fit: location, log-scale and log-degrees-of-freedom of a Student t."""
    loc, log_scale, log_df = theta
    return -np.sum(st.t.logpdf(DATA, np.exp(log_df), loc, np.exp(log_scale)))


def probit_and_tails(theta: np.ndarray) -> Any:
    mu, s = theta[0], np.exp(theta[1])
    return (np.sum(st.norm.logcdf(DATA, mu, s)) + np.sum(st.gamma.logsf(DATA, 2.0 + s, 0.0, 1.5))
            + st.beta.ppf(0.3, 2.0 + s, 3.0) + np.sum(st.logistic.cdf(DATA, mu)))


def gaussian_likelihood(theta: np.ndarray) -> Any:
    """A 2-D Gaussian with a Cholesky-parameterised covariance."""
    L = np.array([[np.exp(theta[0]), 0.0], [theta[1], np.exp(theta[2])]])
    cov = L @ L.T
    points = np.array([[0.5, -0.2], [1.0, 0.3], [-0.4, 0.8]])
    return np.sum(st.multivariate_normal.logpdf(points, theta[3:5], cov))


def count_model(theta: np.ndarray) -> Any:
    k = np.array([0, 3, 1, 4])
    return (np.sum(st.poisson.logpmf(k, np.exp(theta[0])))
            + np.sum(st.nbinom.logpmf(k, np.exp(theta[1]), 0.4))
            + np.sum(st.binom.logpmf(k, 6, 1 / (1 + np.exp(-theta[2])))))


@pytest.mark.parametrize("f, x", [
    (student_t_regression, np.array([0.4, 0.1, 1.0])),
    (probit_and_tails, np.array([0.2, -0.3])),
    (gaussian_likelihood, np.array([0.1, 0.3, -0.2, 0.4, 0.2])),
    (count_model, np.array([0.5, 0.8, -0.1])),
], ids=lambda v: getattr(v, "__name__", ""))
def test_zygotepy_gradient_matches_finite_differences(f: Any, x: np.ndarray) -> None:
    (g,) = zp.gradient(f, x)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-6, atol=1e-8)


# -- against JAX -----------------------------------------------------------------------------

JAX_CASES = [
    ("norm", "logpdf", (0.3, 1.7)), ("norm", "cdf", (0.3, 1.7)), ("norm", "logcdf", (0.3, 1.7)),
    ("norm", "sf", (0.3, 1.7)), ("norm", "ppf", (0.3, 1.7)),
    ("t", "logpdf", (3.5, 0.3, 1.7)), ("gamma", "logpdf", (2.5, 0.0, 1.3)), ("gamma", "cdf", (2.5, 0.0, 1.3)),
    ("beta", "logpdf", (2.0, 3.0, 0.0, 4.0)), ("expon", "logpdf", (0.0, 1.3)),
    ("laplace", "logpdf", (0.3, 1.7)),
    ("logistic", "logpdf", (0.3, 1.7)), ("logistic", "cdf", (0.3, 1.7)), ("cauchy", "logpdf", (0.3, 1.7)),
]


@pytest.mark.parametrize("name, method, params", JAX_CASES, ids=lambda v: str(v))
def test_gradient_matches_jax(name: str, method: str, params: tuple[float, ...]) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jst = pytest.importorskip("jax.scipy.stats")
    jdist = getattr(jst, name, None)
    if jdist is None or not hasattr(jdist, method):
        pytest.skip(f"jax.scipy.stats.{name} has no {method}")
    x = 0.35 if method == "ppf" else 1.1
    _, back = rc.rrule(getattr(getattr(st, name), method), x, *params)
    ours = back(1.0)[1:]
    theirs = jax.jit(jax.grad(getattr(jdist, method), argnums=tuple(range(1 + len(params)))))(x, *params)
    np.testing.assert_allclose(np.array(ours, dtype=float), np.array(theirs, dtype=float), rtol=1e-6)


def test_multivariate_normal_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jst = pytest.importorskip("jax.scipy.stats")
    x = np.array([[0.5, -0.2], [1.0, 0.3]])
    mean = np.array([0.1, -0.1])
    cov = np.array([[1.5, 0.4], [0.4, 0.8]])
    _, back = rc.rrule(st.multivariate_normal.logpdf, x, mean, cov)
    xbar, mbar, covbar = back(np.ones(2))[1:]

    def total(x: Any, mean: Any, cov: Any) -> Any:
        return jst.multivariate_normal.logpdf(x, mean, cov).sum()

    ex, em, ec = jax.jit(jax.grad(total, argnums=(0, 1, 2)))(x, mean, cov)
    np.testing.assert_allclose(xbar, ex, rtol=1e-8)
    np.testing.assert_allclose(mbar, em, rtol=1e-8)
    # SciPy reads cov's lower triangle, JAX need not: they agree on symmetric perturbations
    ec = np.asarray(ec)
    np.testing.assert_allclose((covbar + covbar.T) / 2, (ec + ec.T) / 2, rtol=1e-8)
