"""Rules for ``scipy.spatial.distance`` (rulescore/rules/scipy_spatial.py): ``pdist``/``cdist``
for each metric with rules and ``squareform`` both ways against finite differences, through
zygotepy (reverse, forward, second order) and the refusals of what they do not cover."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

ssd = pytest.importorskip("scipy.spatial.distance")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_spatial  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 4
# points whose coordinates all differ (cityblock and euclidean have kinks where they coincide):
# row k near 0.7 k, the others' rows 0.35 further
SMALL = {"min_value": -0.1, "max_value": 0.1}
POINTS = S.arrays(shape=(4, 3), **SMALL).map(lambda u: u + 0.7 * np.arange(4)[:, None])
OTHERS = S.arrays(shape=(2, 3), **SMALL).map(lambda u: u + 0.7 * np.arange(2)[:, None] + 0.35)
CONDENSED = S.arrays(shape=(6,))


def _cases() -> list[RuleCase]:
    out = []
    for metric in ("sqeuclidean", "euclidean", "cityblock"):
        out.append(RuleCase(ssd.pdist, (POINTS,), {"metric": metric}, name=metric, max_examples=N))
        out.append(RuleCase(ssd.cdist, (POINTS, OTHERS), {"metric": metric}, name=metric, max_examples=N))
    out += [
        RuleCase(ssd.pdist, (POINTS, "sqe"), name="positional-alias", nondiff=(1,), max_examples=N),
        RuleCase(ssd.pdist, (POINTS.map(lambda p: p[:3, :1]),), name="default-one-coordinate",
                 max_examples=N),
        RuleCase(ssd.cdist, (OTHERS, POINTS, "cityblock"), name="positional", nondiff=(2,), max_examples=N),
        RuleCase(ssd.squareform, (CONDENSED,), name="to-matrix", max_examples=N),
        RuleCase(ssd.squareform, (S.arrays(shape=(1,)),), name="one-pair", max_examples=N),
        RuleCase(ssd.squareform, (CONDENSED.map(ssd.squareform),), {"checks": False}, name="to-vector",
                 max_examples=N),
        RuleCase(ssd.squareform, (CONDENSED.map(ssd.squareform), "tovector", False), name="forced",
                 nondiff=(1, 2), max_examples=N),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in scipy_spatial.RULES} <= {id(c.f) for c in CASES}


@pytest.mark.parametrize("metric", ["chebyshev", "cosine", "minkowski"])
def test_other_metrics_are_refused_by_name(metric: str) -> None:
    with pytest.raises(NotImplementedError, match=rf"scipy\.spatial\.distance\.pdist .*not '{metric}'"):
        rc.rrule(ssd.pdist, np.eye(3), metric)
    with pytest.raises(NotImplementedError, match=rf"scipy\.spatial\.distance\.cdist .*not '{metric}'"):
        rc.frule((None, np.eye(3), np.eye(3)), ssd.cdist, np.eye(3), np.eye(3), metric=metric)


def test_weights_and_callable_metrics_are_refused() -> None:
    with pytest.raises(NotImplementedError, match="no out= and no metric options"):
        rc.rrule(ssd.pdist, np.eye(3), "sqeuclidean", w=np.ones(3))
    with pytest.raises(NotImplementedError, match=r"not '.*my_metric'"):
        def my_metric(u: Any, v: Any) -> Any:
            return np.sum(u * v)
        rc.rrule(ssd.pdist, np.eye(3), my_metric)


X = np.array([[0.3, -1.2, 0.5], [1.1, 0.4, -0.7], [-0.6, 0.9, 0.2], [0.8, -0.3, 1.4], [0.0, 0.7, -1.1]])


def rbf_kernel_loss(theta: np.ndarray) -> Any:
    """A squared-exponential kernel as scikit-learn builds it (pdist, squareform, cdist), with
    one length scale per coordinate, then a log-determinant and a quadratic form."""
    scaled = X / np.exp(theta[:3])
    k = np.exp(-0.5 * ssd.squareform(ssd.pdist(scaled, metric="sqeuclidean")))
    cross = np.exp(-ssd.cdist(scaled[:2], scaled, "euclidean")) + ssd.cdist(scaled, X[:1], "cityblock").T
    condensed = ssd.squareform(k, checks=False)
    return np.linalg.slogdet(k + np.eye(5))[1] + np.sum(cross * k[:2]) + np.sum(condensed)


THETA = np.array([0.2, -0.4, 0.1])


def test_gradient_jvp_and_hessian_match_finite_differences() -> None:
    (g,) = zp.gradient(rbf_kernel_loss, THETA)
    want = fd(rbf_kernel_loss, THETA)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    direction = np.array([1.0, -0.5, 2.0])
    _, ydot = zp.jvp(rbf_kernel_loss, (THETA,), (direction,))
    np.testing.assert_allclose(ydot, want @ direction, rtol=1e-6)
    hessian = zp.hessian(rbf_kernel_loss, THETA)
    def first(x: np.ndarray) -> Any:
        return zp.gradient(rbf_kernel_loss, x)[0]
    by_differences = np.stack([(first(THETA + h) - first(THETA - h)) / 2e-5 for h in 1e-5 * np.eye(3)])
    np.testing.assert_allclose(hessian, by_differences, rtol=1e-5, atol=1e-6)


def test_coincident_points_take_the_zero_subgradient() -> None:
    x = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 2.0]])
    _, back = rc.rrule(ssd.pdist, x, "euclidean")
    np.testing.assert_allclose(back(np.array([1.0, 0.0, 0.0]))[1], np.zeros((3, 2)))
    _, back = rc.rrule(ssd.pdist, x, "cityblock")
    np.testing.assert_allclose(back(np.array([0.0, 1.0, 0.0]))[1], [[1.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])


def test_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def jax_loss(x: Any) -> Any:
        d = x[:, None, :] - x[None, :, :]
        sq = jnp.sum(d * d, axis=-1)
        rows, cols = np.triu_indices(5, 1)
        return jnp.sum(jnp.sin(sq[rows, cols])) + jnp.sum(jnp.abs(d).sum(-1)[rows, cols] ** 2)

    def ours(x: Any) -> Any:
        return np.sum(np.sin(ssd.pdist(x, "sqeuclidean"))) + np.sum(ssd.pdist(x, "cityblock") ** 2)

    np.testing.assert_allclose(zp.gradient(ours, X)[0], np.asarray(jax.jit(jax.grad(jax_loss))(X)),
                               rtol=1e-10)
