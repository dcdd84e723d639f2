"""rc.not_implemented (ChainRulesCore's @not_implemented): one argument's derivative declared
missing. Using it raises, never a silent zero; the tester skips that argument and checks the rest."""

from __future__ import annotations

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct

X = np.array([0.3, 0.7, -1.1])


def wave(nu, x):
    """Differentiable in both, but the rule implements d/dx only."""
    return np.sin(nu * x) * x


def _dwave_dx(nu, x):
    return nu * x * np.cos(nu * x) + np.sin(nu * x)


@rc.rrule.register(wave)
def wave_rrule(nu, x):
    def wave_pullback(ybar):
        return rc.NoTangent(), rc.not_implemented("d/dnu of wave"), rc.project(x, ybar * _dwave_dx(nu, x))

    return wave(nu, x), wave_pullback


@rc.frule.register(wave)
def wave_frule(tangents, nu, x):
    _, nudot, xdot = tangents
    if not np.all(nudot == 0):
        return wave(nu, x), rc.not_implemented("d/dnu of wave")
    return wave(nu, x), _dwave_dx(nu, x) * xdot


def wrong_wave(nu, x):
    return np.sin(nu * x) * x


@rc.rrule.register(wrong_wave)
def wrong_wave_rrule(nu, x):
    def wrong_wave_pullback(ybar):
        return rc.NoTangent(), rc.not_implemented("d/dnu"), rc.project(x, ybar * nu * np.cos(nu * x))  # wrong

    return wrong_wave(nu, x), wrong_wave_pullback


@rc.frule.register(wrong_wave)
def wrong_wave_frule(tangents, nu, x):
    _, nudot, xdot = tangents
    if not np.all(nudot == 0):
        return wrong_wave(nu, x), rc.not_implemented("d/dnu")
    return wrong_wave(nu, x), nu * np.cos(nu * x) * xdot  # wrong


@pytest.mark.parametrize("nu", [1.5, np.array(0.4), np.array([1.0, 2.0, 0.5])], ids=["float", "0-d", "array"])
def test_the_tester_skips_a_derivative_declared_not_implemented(nu) -> None:
    rct.test_rrule(wave, nu, X)
    rct.test_frule(wave, nu, X)


def test_the_other_derivatives_are_still_checked() -> None:
    with pytest.raises(AssertionError, match="argument 2.*disagrees with finite differences"):
        rct.test_rrule(wrong_wave, 1.5, X)
    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        rct.test_frule(wrong_wave, 1.5, X)


@pytest.mark.parametrize("use", [
    lambda t: t + 1.0, lambda t: 1.0 + t, lambda t: np.ones(3) + t, lambda t: t * 2.0, lambda t: 2.0 * t,
    lambda t: -t, lambda t: np.asarray(t), lambda t: float(t), lambda t: rc.add(np.ones(3), t),
    lambda t: rc.add(t, rc.Thunk(lambda: 1.0)), lambda t: rc.add(rc.Tangent[tuple](1.0), t),
    lambda t: np.ones(3) @ t, lambda t: t / 2.0,
], ids=["add", "radd", "array-add", "mul", "rmul", "neg", "asarray", "float", "rc.add", "rc.add-thunk",
        "rc.add-structural", "matmul", "div"])
def test_using_it_raises_naming_the_reason_and_the_rule(use) -> None:
    _, back = rc.rrule(wave, 1.5, X)
    t = back(np.ones(3))[1]
    where = r"d/dnu of wave \(.*test_not_implemented.py:\d+ in wave_pullback"
    with pytest.raises(NotImplementedError, match=where):
        use(t)


def test_projection_and_zero_checks_pass_it_through() -> None:
    t = rc.not_implemented("why")
    assert rc.project(X, t) is t and rc.ProjectTo(1.5)(t) is t
    assert not rc.is_zero(t) and rc.unthunk(t) is t


def test_engines_raise_instead_of_a_zero() -> None:
    zp = pytest.importorskip("zygotepy")
    (dx,) = zp.gradient(lambda x: np.sum(wave(1.5, x)), X)  # nu held constant: the rule serves x
    np.testing.assert_allclose(dx, _dwave_dx(1.5, X))
    with pytest.raises(NotImplementedError, match="d/dnu of wave"):
        zp.gradient(lambda nu: np.sum(wave(nu, X)) + nu, 1.5)
    (dnu,) = zp.gradient(lambda nu: np.sum(wave(nu, X)), 1.5)
    assert isinstance(dnu, rc.NotImplementedTangent)  # handed back as is: never a zero
    jax = pytest.importorskip("jax")
    import rulescore.interop.jax as rjax

    g = rjax.wrap(wave)
    with pytest.raises(Exception, match="d/dnu of wave"):
        jax.grad(lambda nu: g(nu, X).sum())(1.5)
