"""Rules for ``scipy.integrate`` (rulescore/rules/scipy_integrate.py): ``trapezoid`` in ``y``,
``x`` and ``dx`` against finite differences, through zygotepy and against JAX."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

si = pytest.importorskip("scipy.integrate")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 4
Y = S.arrays(shape=(3, 5))
POINTS = S.arrays(shape=(5,)).map(np.sort)
GRID = S.arrays(shape=(3, 5)).map(lambda a: np.sort(a, axis=1))
# Simpson's weights are rational in the widths: distinct points (SciPy guards zero widths)
APART = S.arrays(shape=(5,), min_value=0.2).map(np.cumsum)
APART_GRID = S.arrays(shape=(3, 5), min_value=0.2).map(lambda a: np.cumsum(a, axis=1))

CASES = [
    RuleCase(si.trapezoid, (Y,), max_examples=N),
    RuleCase(si.trapezoid, (Y, POINTS), name="x", max_examples=N),
    RuleCase(si.trapezoid, (Y, GRID), name="x-like-y", max_examples=N),
    RuleCase(si.trapezoid, (Y, None, S.scalars(0.1, 2.0)), name="dx", max_examples=N),
    RuleCase(si.trapezoid, (Y.map(np.transpose), POINTS), {"axis": 0}, name="axis", max_examples=N),
    RuleCase(si.trapezoid, (Y,), {"dx": 0.25}, name="keyword-dx", max_examples=N),
    RuleCase(si.simpson, (Y,), max_examples=N),
    RuleCase(si.simpson, (Y, APART), name="x-odd", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(2, 6)), S.arrays(shape=(6,), min_value=0.2).map(np.cumsum)),
             name="x-even", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(2,)), S.arrays(shape=(2,))), name="two-samples", max_examples=N),
    RuleCase(si.simpson, (Y, APART_GRID), name="x-like-y", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(4, 3)),), {"dx": 0.3, "axis": 0}, name="dx-axis", max_examples=N),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def decay_fit(theta: np.ndarray) -> Any:
    """The area under a fitted decay on an uneven grid, and its second moment."""
    t = np.array([0.0, 0.3, 0.7, 1.5, 2.0]) * np.exp(theta[1])
    curve = np.exp(-theta[0] * t)
    return si.trapezoid(curve, t) + si.trapezoid(curve * t ** 2, dx=0.1)


def simpson_moments(theta: np.ndarray) -> Any:
    """Moments of a decay on an uneven grid whose points move with the parameters."""
    t = np.array([0.0, 0.3, 0.7, 1.5, 2.0, 2.2]) * np.exp(theta[1])
    curve = np.exp(-theta[0] * t)
    return si.simpson(curve, t) + si.simpson(curve * t, dx=0.1) + si.simpson(curve[:5] * t[:5] ** 2, t[:5])


def test_simpson_gradient_matches_finite_differences() -> None:
    theta = np.array([0.8, 0.1])
    (g,) = zp.gradient(simpson_moments, theta)
    np.testing.assert_allclose(g, fd(simpson_moments, theta), rtol=1e-6, atol=1e-8)


def test_zygotepy_gradient_matches_finite_differences() -> None:
    theta = np.array([0.8, 0.1])
    (g,) = zp.gradient(decay_fit, theta)
    np.testing.assert_allclose(g, fd(decay_fit, theta), rtol=1e-6, atol=1e-8)


def test_gradient_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsi = pytest.importorskip("jax.scipy.integrate")
    y = np.sin(np.arange(10.0)).reshape(2, 5)
    x = np.array([0.0, 0.4, 0.5, 1.2, 2.0])
    _, back = rc.rrule(si.trapezoid, y, x)
    w = np.array([1.0, -2.0])
    theirs = jax.grad(lambda y, x: (jsi.trapezoid(y, x) * w).sum(), argnums=(0, 1))(y, x)
    for ours, t in zip(back(w)[1:], theirs, strict=True):
        np.testing.assert_allclose(ours, np.asarray(t), rtol=1e-10)
