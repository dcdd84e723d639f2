"""rulescore.testing._finite_differences: accuracy, structures, marked arguments."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct

# ---------------------------------------------------------------------------------------------
# finite differences


@pytest.mark.parametrize(
    ("g", "x", "dg"),
    [
        (np.exp, 0.3, np.exp),
        (np.log, 0.02, lambda x: 1 / x),              # the first steps leave the domain
        (np.tan, 1.5, lambda x: 1 / np.cos(x) ** 2),  # near a pole
        (np.sqrt, 1e-3, lambda x: 0.5 / np.sqrt(x)),
        (lambda x: x ** 7, 2.5, lambda x: 7 * x ** 6),
        (lambda x: math.log(x), 0.01, lambda x: 1 / x),  # raises ValueError outside the domain
    ],
    ids=["exp", "log-near-0", "tan-near-pole", "sqrt-near-0", "x7", "math.log"],
)
def test_finite_differences_are_accurate(g: Any, x: float, dg: Any) -> None:
    d, err = rct.FiniteDifferences().derivative(lambda t: np.array([g(x + t)]), scale=abs(x))
    assert abs(d[0] - dg(x)) <= 1e-8 * abs(dg(x)), (d[0], dg(x))
    assert err <= 1e-6 * abs(dg(x))


def test_finite_differences_report_a_function_that_is_nowhere_finite() -> None:
    with pytest.raises(rct.FiniteDifferenceError, match="not finite"):
        rct.FiniteDifferences().derivative(lambda t: np.array([np.nan]))


@dataclasses.dataclass
class Particle:
    pos: np.ndarray
    mass: float
    name: str


class Pair(NamedTuple):
    a: Any
    b: Any


def energy(p: Particle, extra: dict[str, Any], pair: Pair) -> Any:
    return 0.5 * p.mass * np.sum(p.pos ** 2) + extra["k"] * pair.a * pair.b.real + np.abs(pair.b) ** 2


def test_fd_vjp_over_structures() -> None:
    p = Particle(np.array([1.0, -2.0]), 3.0, "e")
    extra = {"k": 0.5, "label": "x"}
    pair = Pair(2.0, 1.0 + 2.0j)
    pbar, ebar, pairbar = rct.fd_vjp(energy, (p, extra, pair), 1.0)
    assert isinstance(pbar, rc.Tangent[Particle]) and pbar.name == rc.NoTangent()
    np.testing.assert_allclose(pbar.pos, p.mass * p.pos, rtol=1e-9)
    assert pbar.mass == pytest.approx(0.5 * 5.0, rel=1e-9)
    assert isinstance(ebar, rc.Tangent[dict]) and ebar["label"] == rc.NoTangent()
    assert ebar["k"] == pytest.approx(2.0, rel=1e-9)
    assert isinstance(pairbar, rc.Tangent[Pair])
    assert pairbar.a == pytest.approx(0.5, rel=1e-9)
    # gradient convention for a real function of complex b: df/dRe + i df/dIm
    assert pairbar.b == pytest.approx(complex(0.5 * 2.0 + 2.0, 2 * 2.0), rel=1e-9)


def test_fd_jvp_over_structures_and_complex() -> None:
    z = np.array([0.5 + 1.0j, -1.0 + 0.25j])
    zdot = np.array([1.0 - 0.5j, 0.3j])
    np.testing.assert_allclose(rct.fd_jvp(np.exp, (z,), (zdot,)), np.exp(z) * zdot, rtol=1e-9)
    out = rct.fd_jvp(lambda t: (t[0] * t[1], {"s": t[0]}), ((2.0, 3.0),), (rc.Tangent[tuple](1.0, 0.0),))
    assert isinstance(out, rc.Tangent[tuple])
    assert out[0] == pytest.approx(3.0) and out[1]["s"] == pytest.approx(1.0)


def test_fd_skips_marked_arguments() -> None:
    xbar, nbar = rct.fd_vjp(lambda x, n: x[n] * 2.0, (np.ones(3), rct.no_tangent(1)), 1.0)
    np.testing.assert_allclose(xbar, [0.0, 2.0, 0.0], atol=1e-9)
    assert nbar == rc.NoTangent()
