"""The engine's lean paths (taken outside rulescore's checking mode: the tape of numbers, a nested
sweep calling rules' pullbacks directly, thunks read when routed, tuple entries of a rule's
result, one array's partials rule) give the numbers and types of the general paths (the checking
mode runs every rule through its checks), on programs none of them was tuned on."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

import rulescore as rc
import zygotepy as zp

RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 5))
S = A @ A.T + 5 * np.eye(5)
C = RNG.standard_normal(5)
V = RNG.standard_normal(5)
X = RNG.standard_normal(5)
W = RNG.standard_normal((4, 3))
Z = RNG.standard_normal((6, 4))
Y = np.array([0, 2, 1, 1, 0, 2])


def hvp(f, x, v):
    """Reverse over reverse: the gradient of <gradient, v>."""
    return zp.gradient(lambda u: np.sum(zp.gradient(f, u)[0] * v), x)[0]


def softmax_nll(w):
    logits = Z @ w
    return np.sum(sp.logsumexp(logits, axis=1)) - np.sum(logits[np.arange(6), Y])


def slogdet_entries(x):
    m = S + np.outer(x, x)
    sign, logdet = np.linalg.slogdet(m)
    return logdet * sign + np.linalg.slogdet(m).logabsdet + np.linalg.slogdet(m)[1]


def vector_products(x):
    return x @ S @ x + C @ (A @ x) + np.sum((x @ A) * C)


def constant_factor(x):
    return np.sum(np.tanh(x) * C) + np.sum(C * np.sin(x) * x)


def softplus(x):
    return np.sum(np.logaddexp(0.0, A @ x)) - np.sum(np.exp(-x) / 3.0)


def eigh_sum(x):
    w, _ = np.linalg.eigh(S + np.diag(x))
    return np.sum(w ** 3)


def scalar_mix(x):
    y = np.sin(x) * x + math.exp(x) - x ** 3
    z = math.cos(y) - np.float64(0.25) * y
    return z - (y - z) * (x - 0.5)


def transposes(x):
    m = np.reshape(x[:4], (2, 2))
    return np.sum((m.T @ m) ** 2) + np.sum(np.transpose(m) * m) - x[4] * np.trace(m.T)


def params_dict(p):
    h = np.tanh(Z @ p["w"] + p["b"])
    return np.sum((h - 0.5) ** 2) / 6 + 0.1 * np.sum(p["w"] ** 2)


def float32_network(x):
    h = np.tanh(W.astype(np.float32) @ x + np.float32(0.5))
    return np.sum(h * h)


def sub_of_scalars(x):
    return zp.gradient(lambda y: (math.sin(y) - math.cos(y)) ** 2 - (y - x) * y, x)[0]


CASES = {
    "softmax HVP (logsumexp axis=1)": lambda: hvp(softmax_nll, W, np.ones_like(W)),
    "slogdet tuple entries, HVP": lambda: hvp(slogdet_entries, X, V),
    "vector products, HVP": lambda: hvp(vector_products, X, V),
    "constant factors, HVP": lambda: hvp(constant_factor, X, V),
    "softplus, jacobian(reverse) of gradient":
        lambda: zp.jacobian(lambda x: zp.gradient(softplus, x)[0], X, mode="reverse")[0],
    "eigh's eigenvalues, hessian_reverse": lambda: zp.hessian_reverse(eigh_sum, X),
    "scalar mix of floats and float64, derivatives 1-3": lambda: [
        zp.gradient(scalar_mix, 0.3)[0],
        zp.gradient(lambda x: zp.gradient(scalar_mix, x)[0], 0.3)[0],
        zp.gradient(lambda x: zp.gradient(lambda y: zp.gradient(scalar_mix, y)[0], x)[0], 0.3)[0]],
    "transposes and reshape, hessian": lambda: zp.hessian(transposes, X),
    "dict of parameters with a broadcast bias, gradient and HVP": lambda: [
        zp.gradient(params_dict, {"w": W, "b": np.ones(3)})[0],
        hvp(lambda w: params_dict({"w": w, "b": np.ones(3)}), W, np.ones_like(W))],
    "float32 network, gradient": lambda: zp.gradient(float32_network, np.ones(3, np.float32))[0],
    "difference of scalars, nested": lambda: zp.gradient(sub_of_scalars, 0.8)[0],
}


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.parametrize("name", list(CASES))
def test_lean_paths_give_the_general_paths_numbers(name):
    with rc.checking(True):
        checked = _leaves(CASES[name]())
    with rc.checking(False):
        lean = _leaves(CASES[name]())
    assert len(lean) == len(checked)
    for a, b in zip(lean, checked, strict=True):
        assert type(a) is type(b)
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, x", [(softmax_nll, W), (vector_products, X), (softplus, X),
                                  (slogdet_entries, X), (eigh_sum, X)])
def test_lean_second_derivatives_match_differences_of_gradients(f, x):
    """The HVP outside checking mode against a central difference of the gradient along v."""
    v = np.ones_like(x) / np.sqrt(x.size)
    h = 1e-5
    with rc.checking(False):
        got = hvp(f, x, v)
        fd = (zp.gradient(f, x + h * v)[0] - zp.gradient(f, x - h * v)[0]) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)
