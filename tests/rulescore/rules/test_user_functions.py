"""Solvers' parameters in any tree: ``args=`` holding lists of tuples (a network's layers), dicts
and dataclasses reach the user's function and get their gradients, in reverse and forward mode
(rulescore/rules/_user_functions.py's ``Params``), checked against finite differences."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("scipy")
from scipy.integrate import odeint, quad, solve_ivp  # noqa: E402
from scipy.optimize import brentq  # noqa: E402

import zygotepy as zp  # noqa: E402
from rulescore.rules._user_functions import Params  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

T = np.linspace(0.0, 1.0, 5)


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray


def _layers(y, t, params):
    for W, b in params:
        y = np.tanh(W @ y + b)
    return y


def _dict(y, t, p):
    return np.tanh(p["W"] @ y + p["b"][0])


def _dataclass(y, t, layer, n):
    return np.tanh(layer.W @ y + layer.b) * n


SOLVES = {
    "odeint, a list of (W, b) tuples": lambda W: np.sum(
        odeint(_layers, np.ones(2), T, ([(W, np.zeros(2)), (W.T, np.ones(2))],))[-1]),
    "odeint, a dict holding a list": lambda W: np.sum(
        odeint(_dict, np.ones(2), T, ({"W": W, "b": [np.ones(2)]},))[-1]),
    "odeint, a dataclass and an int": lambda W: np.sum(
        odeint(_dataclass, np.ones(2), T, (Layer(W, np.ones(2)), 2))[-1]),
    "solve_ivp, a dict": lambda W: np.sum(solve_ivp(
        lambda t, y, p: -p["k"] * y, (0.0, 1.0), np.ones(2), args=({"k": W[0]},), rtol=1e-10,
        atol=1e-12).y[:, -1]),
    "quad, a dict": lambda W: quad(lambda x, p: np.sin(p["a"][0] * x), 0.0, 1.0, args=({"a": W[0]},))[0],
    "brentq, a nested tuple": lambda W: brentq(lambda x, p: x ** 3 - p[0][0], 0.0, 3.0, args=((W[0], 1),)),
}
W0 = np.array([[0.5, 0.1], [0.2, 0.4]])


@pytest.mark.parametrize("case", SOLVES)
def test_parameters_in_any_tree_get_their_gradients(case):
    f = SOLVES[case]
    reference = fd(f, W0, 1e-5)
    (g,) = zp.gradient(f, W0)
    np.testing.assert_allclose(g, reference, rtol=1e-4, atol=1e-6)
    direction = np.array([[1.0, -0.5], [0.3, 0.2]])
    _, tangent = zp.jvp(f, (W0,), (direction,))
    assert tangent == pytest.approx(np.sum(reference * direction), rel=1e-4, abs=1e-6)


def test_params_flatten_a_tree_and_rebuild_its_cotangent():
    p = Params(([(np.ones(2), 3)], {"s": 0.5}, "name"))
    assert p.size == 3
    ct = p.cotangent(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(ct[0][0][0], [1.0, 2.0])
    assert ct[1]["s"] == 3.0
    np.testing.assert_allclose(p.flat_tangent(ct), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("solve", [
    lambda a: np.sum(odeint(lambda y, t: -a * y, np.ones(1), T)[-1]),
    lambda a: brentq(lambda x: x ** 3 - a, 0.0, 3.0),
    lambda a: quad(lambda x: np.sin(a * x), 0.0, 1.0)[0],
])
def test_a_callback_capturing_a_traced_value_refuses_naming_it_and_args(solve):
    with pytest.raises(zp.UntraceableError, match=r"captures the traced value 'a' in its closure.*args="):
        zp.gradient(solve, 0.7)
