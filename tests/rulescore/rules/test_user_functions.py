"""Solvers' parameters in any tree: ``args=`` holding lists of tuples (a network's layers), dicts
and dataclasses reach the user's function and get their gradients, in reverse and forward mode
(rulescore/rules/_user_functions.py's ``Params``), checked against finite differences."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("scipy")
from scipy.integrate import odeint, quad, solve_ivp  # noqa: E402
from scipy.optimize import brentq, fixed_point, minimize, root  # noqa: E402

import rulescore as rc  # noqa: E402
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


def _rhs_def(a):
    def rhs(y, t):
        return -a[0] * y + a[1]

    return np.sum(odeint(rhs, np.ones(2), T)[-1])


def _captured_dict(a):
    p = {"k": a[0], "c": [a[1]]}
    return quad(lambda x: np.exp(-p["k"] * x) * p["c"][0], 0.0, 1.0)[0]


def _captured_matrix(a):
    W = np.array([[-a[0], a[1]], [0.0, -a[0]]])
    return np.sum(odeint(lambda y, t: W @ y, np.ones(2), T)[-1])


def _keyword_callback(a):
    return np.sum(odeint(func=lambda y, t: -a[0] * y, y0=np.ones(1), t=T)[-1])


def _captured_and_explicit(a):
    return brentq(lambda x, s: x ** 3 - a[0] * s, 0.0, 3.0, args=(a[1],))


def _solve_ivp_args(a):
    return solve_ivp(lambda t, y, k: -a[0] * k * y, (0.0, 1.0), np.ones(1), args=(a[1],),
                     rtol=1e-10, atol=1e-12).y[0, -1]


def _root(a):
    return np.sum(root(lambda x: x ** 3 + x - a, np.ones(2), tol=1e-12).x)


def _fixed_point(a):
    return np.sum(fixed_point(lambda x: np.cos(a * x), np.ones(2), xtol=1e-12))


def _minimize(a):
    return np.sum(minimize(lambda x: np.sum((x - a) ** 2 * (1 + a[0])), np.zeros(2), tol=1e-12,
                           method="BFGS").x)


def _traced_argument_too(a):
    return np.sum(odeint(lambda y, t: -a[0] * y, a[1:], T)[-1])


CAPTURING = {
    "odeint, a nested def": _rhs_def,
    "quad, a captured dict": _captured_dict,
    "odeint, a matrix built in the loss": _captured_matrix,
    "odeint, callback by keyword": _keyword_callback,
    "brentq, captured and explicit args": _captured_and_explicit,
    "solve_ivp, captured and explicit args": _solve_ivp_args,
    "root": _root,
    "fixed_point": _fixed_point,
    "minimize (the minimizer is a: gradient [1, 1]; finite differences see the optimizer's tolerance)":
        _minimize,
    "odeint, a traced argument too": _traced_argument_too,
}


@pytest.mark.parametrize("case", CAPTURING)
def test_a_callback_capturing_traced_values_passes_them_through_args(case):
    """JAX's closure_convert: the captured values go to the solver's rule through its args=, in
    reverse and forward mode, whatever else the call passes."""
    f = CAPTURING[case]
    a0 = np.array([0.7, 0.4])
    reference = np.ones(2) if f is _minimize else fd(f, a0, 1e-6)
    (g,) = zp.gradient(f, a0)
    np.testing.assert_allclose(g, reference, rtol=1e-4, atol=1e-6)
    direction = np.array([1.0, -0.5])
    _, tangent = zp.jvp(f, (a0,), (direction,))
    assert tangent == pytest.approx(np.sum(reference * direction), rel=1e-4, abs=1e-6)


def test_a_capturing_callback_of_a_function_without_args_is_refused_naming_the_value():
    @rc.rrule.register(_integrate_twice, config=rc.HasReverseMode)
    def _integrate_twice_rrule(config, f, x):
        return _integrate_twice(f, x), lambda ybar: (rc.NoTangent(), rc.NoTangent(), ybar)

    with pytest.raises(zp.UntraceableError, match=r"captures the traced value 'a' in its closure.*no args="):
        zp.gradient(lambda a: _integrate_twice(lambda x: a * x, 1.0), 0.7)


def _integrate_twice(f, x):
    return f(f(x))
