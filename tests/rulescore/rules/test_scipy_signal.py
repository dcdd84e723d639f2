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
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in scipy_signal.RULES} <= {id(c.f) for c in CASES}


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
    theirs = jax.grad(lambda a, b: (getattr(jss, name)(a, b, mode=mode) * w).sum(), argnums=(0, 1))(a, b)
    for ours, t in zip(back(w)[1:], theirs, strict=True):
        np.testing.assert_allclose(ours, np.asarray(t), rtol=1e-8, atol=1e-12)
