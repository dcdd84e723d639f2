"""rulescore.interop.autograd: f's rules as HIPS autograd primitives, any order."""

from __future__ import annotations

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct

autograd = pytest.importorskip("autograd", reason="needs autograd (the `autograd` extra)")
import autograd.numpy as anp  # noqa: E402

import rulescore.interop.autograd as rag  # noqa: E402
from tests.interop import _functions as F  # noqa: E402

X = np.array([0.3, -0.5, 1.2])


@pytest.mark.exhaustive  # (27 s: CI runs it with --exhaustive locally only, for its time budget)
def test_grad_to_third_order() -> None:
    g = rag.wrap(np.sin)
    np.testing.assert_allclose(autograd.grad(lambda x: anp.sum(g(x)))(X), np.cos(X))
    np.testing.assert_allclose(autograd.elementwise_grad(g)(X), np.cos(X))
    np.testing.assert_allclose(autograd.grad(autograd.grad(g))(0.3), -np.sin(0.3))
    np.testing.assert_allclose(autograd.grad(autograd.grad(autograd.grad(g)))(0.3), -np.cos(0.3))
    np.testing.assert_allclose(autograd.hessian(lambda x: anp.sum(g(x)))(X), np.diag(-np.sin(X)))


def test_jvp_from_the_frule() -> None:
    y, ydot = autograd.make_jvp(rag.wrap(np.sin))(X)(np.full(3, 2.0))
    np.testing.assert_allclose(ydot, 2 * np.cos(X))


def test_structures_and_ints() -> None:
    g = rag.wrap(F.scaled_sum)

    def loss(params, xs):
        out = g(params, xs, 3)
        return anp.sum(out["y"] ** 2) + out["s"]

    def reference(params, xs):
        return anp.sum((3 * params["w"] * xs[0] + params["b"]) ** 2) + anp.sum(xs[1] ** 2)

    params, xs = {"w": 1.5, "b": 0.25}, (X, np.array([1.0, 2.0]))
    got, want = autograd.grad(loss)(params, xs), autograd.grad(reference)(params, xs)
    np.testing.assert_allclose(got["w"], want["w"])
    np.testing.assert_allclose(got["b"], want["b"])
    np.testing.assert_allclose(autograd.grad(loss, 1)(params, xs)[1], 2 * xs[1])


def test_complex_convention_matches_autograd() -> None:
    g = rag.wrap(F.abs2)
    z = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    got = autograd.grad(lambda z: anp.sum(g(z)))(z)
    want = autograd.grad(lambda z: anp.sum(anp.real(z * anp.conj(z))))(z)
    np.testing.assert_allclose(got, want)


# -- containers being differentiated (autograd boxes them as DictBox / SequenceBox) --------------------


def _doubled_nll(P, D):
    """A Gaussian negative log-likelihood whose rule returns twice the true gradient: a result
    equal to the true gradient means autograd traced the body and bypassed the rule."""
    return np.sum((D - P["mu"]) ** 2 * np.exp(-2 * P["log_sigma"]))


def _nll_reference(mu, log_sigma, D):
    return anp.sum((D - mu) ** 2 * anp.exp(-2 * log_sigma))


@rc.rrule.register(_doubled_nll)
def _doubled_nll_rrule(P, D):
    r, s = D - P["mu"], np.exp(-2 * P["log_sigma"])

    def _doubled_nll_pullback(ybar):
        dP = {"mu": 2 * ybar * np.sum(-2 * r * s), "log_sigma": 2 * ybar * np.sum(-2 * r ** 2 * s)}
        return rc.NoTangent(), rc.Tangent[dict](dP), 2 * ybar * 2 * r * s

    return _doubled_nll(P, D), _doubled_nll_pullback


def _as_mapping(P):
    return P if isinstance(P, dict) else {"mu": P[0], "log_sigma": P[1]}


def _true_gradients(P, D):
    m = _as_mapping(P)
    return autograd.grad(_nll_reference, argnum=(0, 1, 2))(m["mu"], m["log_sigma"], D)


def _doubled_container_nll(P, D):
    return _doubled_nll(_as_mapping(P), D)


@rc.rrule.register(_doubled_container_nll)
def _doubled_container_nll_rrule(P, D):
    y, pullback = _doubled_nll_rrule(_as_mapping(P), D)

    def _container_pullback(ybar):
        _, dm, dD = pullback(ybar)
        if isinstance(P, dict):
            return rc.NoTangent(), dm, dD
        return rc.NoTangent(), rc.Tangent[type(P)](dm["mu"], dm["log_sigma"]), dD

    return y, _container_pullback


D_DATA = np.array([1.0, 2.0, -0.5])


@pytest.mark.parametrize("P", [{"mu": 0.3, "log_sigma": -0.2}, (0.3, -0.2), [0.3, -0.2],
                               {"mu": np.array(0.3), "log_sigma": np.array(-0.2)}],
                         ids=["dict", "tuple", "list", "dict-of-arrays"])
@pytest.mark.parametrize("argnum", [0, (0, 1)], ids=["container", "container-and-array"])
def test_a_container_argument_uses_the_rule(P, argnum) -> None:
    g = rag.wrap(_doubled_container_nll)
    dmu, dls, dD = _true_gradients(P, D_DATA)
    got = autograd.grad(g, argnum=argnum)(P, D_DATA)
    dP, got_dD = got if argnum == (0, 1) else (got, None)
    got_m = _as_mapping(dP)
    np.testing.assert_allclose([got_m["mu"], got_m["log_sigma"]], [2 * dmu, 2 * dls])  # the rule's x2 shows
    if got_dD is not None:
        np.testing.assert_allclose(got_dD, 2 * dD)


def test_a_container_nested_in_a_tuple_argument_uses_the_rule() -> None:
    def loss(args):
        P, D = args
        return rag.wrap(_doubled_nll)({"mu": P["mu"], "log_sigma": P["log_sigma"]}, D)

    P = {"mu": -0.4, "log_sigma": 0.1}
    (dP, dD) = autograd.grad(loss)((P, D_DATA))
    dmu, dls, want_dD = _true_gradients(P, D_DATA)
    np.testing.assert_allclose([dP["mu"], dP["log_sigma"]], [2 * dmu, 2 * dls])
    np.testing.assert_allclose(dD, 2 * want_dD)


def _nll(P, D):
    return np.sum((D - P["mu"]) ** 2 * np.exp(-2 * P["log_sigma"]))


@rc.rrule.register(_nll)
def _nll_rrule(P, D):
    r, s = D - P["mu"], np.exp(-2 * P["log_sigma"])

    def _nll_pullback(ybar):
        dP = rc.Tangent[dict]({"mu": ybar * np.sum(-2 * r * s), "log_sigma": ybar * np.sum(-2 * r ** 2 * s)})
        return rc.NoTangent(), dP, ybar * 2 * r * s

    return _nll(P, D), _nll_pullback


@pytest.mark.exhaustive  # 85 s: every engine on a dict argument (CI's time budget)
def test_the_engine_run_checks_a_dict_argument_under_autograd() -> None:
    P = {"mu": 0.3, "log_sigma": -0.2}
    rct.test_rrule(_nll, P, D_DATA, engines=("autograd",))
    with pytest.raises(AssertionError, match="disagrees"):  # the rule, not f's body, is what autograd uses
        rct.check_systems(_doubled_nll, (P, D_DATA), {}, ["autograd"])


# -- complex inputs at second order: the engine run conjugates with autograd's own conj ----------------


def _energy(z):
    return np.sum(np.abs(z) ** 2)


@rc.rrule.register(_energy)
def _energy_rrule(z):
    return _energy(z), lambda ybar: (rc.NoTangent(), 2 * ybar * z)


def _phase_energy(z, w):
    """Real output of a complex and a real argument."""
    return np.sum(np.real(z * np.conj(z)) * w)


@rc.rrule.register(_phase_energy)
def _phase_energy_rrule(z, w):
    def _phase_energy_pullback(ybar):
        return rc.NoTangent(), 2 * ybar * w * z, ybar * np.real(z * np.conj(z))

    return _phase_energy(z, w), _phase_energy_pullback


Z = np.array([1.0 + 2.0j, -0.5 + 0.25j, 0.3 - 1.1j])


@pytest.mark.parametrize(("f", "args"), [(_energy, (Z,)), (_energy, (Z[:1],)),
                                         (_phase_energy, (Z, np.abs(Z))), (np.sin, (Z,)), (np.exp, (Z,)),
                                         (np.abs, (Z,)), (np.conj, (Z,))],
                         ids=["energy", "energy-1", "phase-energy", "sin", "exp", "abs", "conj"])
@pytest.mark.exhaustive  # about 45 s in all (CI's time budget)
def test_complex_rules_at_second_order_under_autograd(f, args) -> None:
    rct.check_systems(f, args, {}, ["autograd"])
