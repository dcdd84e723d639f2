"""Rules for ``scipy.signal`` (rulescore/rules/scipy_signal.py): convolutions in every mode and
shape order against finite differences, through zygotepy and against ``jax.scipy.signal``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

ss = pytest.importorskip("scipy.signal")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_signal  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 3
LONG, SHORT = S.arrays(shape=(6,)), S.arrays(shape=(3,))
IMAGE, KERNEL = S.arrays(shape=(4, 5)), S.arrays(shape=(2, 3))


def _cases() -> list[RuleCase]:
    out = []
    for f in (ss.convolve, ss.correlate, ss.fftconvolve):
        for mode in ("full", "same", "valid"):
            out.append(RuleCase(f, (LONG, SHORT), {"mode": mode}, name=f"{mode}", max_examples=N))
            out.append(RuleCase(f, (SHORT, LONG), {"mode": mode}, name=f"{mode}-short-first", max_examples=N))
            out.append(RuleCase(f, (IMAGE, KERNEL), {"mode": mode}, name=f"{mode}-2d", max_examples=N))
        out.append(RuleCase(f, (LONG, SHORT, "same"), name="positional-mode", nondiff=(2,), max_examples=N))
    tall = S.arrays(shape=(5, 2))
    for f in (ss.convolve2d, ss.correlate2d):
        for mode in ("full", "same", "valid"):
            out.append(RuleCase(f, (IMAGE, KERNEL), {"mode": mode}, name=mode, max_examples=N))
            out.append(RuleCase(f, (KERNEL, IMAGE), {"mode": mode}, name=f"{mode}-kernel-first",
                                max_examples=N))
            out.append(RuleCase(f, (tall, KERNEL.map(lambda k: k[:, :2])), {"mode": mode},
                                name=f"{mode}-tall", max_examples=N))
        out.append(RuleCase(f, (IMAGE, KERNEL, "same", "fill", 0), name="positional", nondiff=(2, 3, 4),
                            max_examples=N))
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in scipy_signal.RULES} <= {id(c.f) for c in CASES}


def blurred_energy(theta: np.ndarray) -> Any:
    """An image filtered by convolve2d and correlate2d with a kernel built from parameters."""
    image = np.outer(np.sin(np.arange(6.0) * theta[0]), np.cos(np.arange(5.0)))
    kernel = np.exp(-np.array([[1.0, 0.5, 1.0], [0.5, 0.0, 0.5]]) / theta[1] ** 2)
    smooth = ss.convolve2d(image, kernel, mode="same")
    edges = ss.correlate2d(smooth, kernel[::-1], "valid")
    return np.sum(smooth ** 2) + np.sum(np.tanh(edges)) + np.sum(ss.correlate2d(kernel, image, "same") ** 2)


def test_convolve2d_through_zygotepy_both_modes_and_second_order() -> None:
    theta = np.array([0.7, 1.3])
    want = fd(blurred_energy, theta)
    np.testing.assert_allclose(zp.gradient(blurred_energy, theta)[0], want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(zp.jvp(blurred_energy, (theta,), (np.array([1.0, 0.5]),))[1],
                               want @ np.array([1.0, 0.5]), rtol=1e-6)
    rows = np.array([fd(lambda v, i=i: zp.gradient(blurred_energy, v)[0][i], theta) for i in range(2)])
    np.testing.assert_allclose(zp.hessian(blurred_energy, theta), rows, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", [{"boundary": "wrap"}, {"boundary": "symm"}, {"fillvalue": 1.0}])
def test_convolve2d_other_boundaries_are_refused_by_name(options: dict[str, Any]) -> None:
    with pytest.raises(NotImplementedError, match=r"scipy\.signal\.convolve2d covers boundary='fill'"):
        rc.rrule(ss.convolve2d, np.ones((3, 3)), np.ones((2, 2)), **options)


def test_batched_fftconvolve_is_refused() -> None:
    with pytest.raises(TypeError, match="axes="):
        rc.rrule(ss.fftconvolve, np.ones((2, 4)), np.ones((2, 2)), axes=1)


def smoothing_loss(w: np.ndarray) -> Any:
    signal = np.sin(np.linspace(0.0, 3.0, 12))
    smooth = ss.convolve(signal, w, mode="same")
    echo = ss.correlate(smooth, w, mode="valid")
    return np.sum((smooth - signal) ** 2) + np.sum(ss.fftconvolve(echo, w) ** 2)


def test_zygotepy_gradient_matches_finite_differences() -> None:
    w = np.array([0.2, 0.5, 0.3])
    (g,) = zp.gradient(smoothing_loss, w)
    np.testing.assert_allclose(g, fd(smoothing_loss, w), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_gradient_matches_jax(name: str, mode: str) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jss = pytest.importorskip("jax.scipy.signal")
    a, b = np.sin(np.arange(7.0)), np.array([0.3, -1.0, 0.5])
    y, back = rc.rrule(getattr(ss, name), a, b, mode=mode)
    w = np.cos(np.arange(np.size(y)))
    theirs = jax.jit(jax.grad(lambda a, b: (getattr(jss, name)(a, b, mode=mode) * w).sum(),
                              argnums=(0, 1)))(a, b)
    for ours, t in zip(back(w)[1:], theirs, strict=True):
        np.testing.assert_allclose(ours, np.asarray(t), rtol=1e-8, atol=1e-12)
