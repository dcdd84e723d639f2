"""Real-world programs, each checked against central finite differences and HIPS autograd."""

from dataclasses import dataclass

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def check(f_np, f_ag, x, rtol=1e-6, atol=1e-8):
    (g,) = zp.gradient(f_np, x)
    np.testing.assert_allclose(g, autograd.grad(f_ag)(x), rtol=rtol, atol=atol)
    np.testing.assert_allclose(g, fd(f_np, x), rtol=1e-4, atol=1e-6)


RNG = np.random.default_rng(42)
X = RNG.normal(size=(16, 4))
LABELS = RNG.integers(0, 3, size=16)
ONE_HOT = np.eye(3)[LABELS]


def make_mlp(np_):
    def loss(w):
        W1, W2 = w[:12].reshape(4, 3), w[12:].reshape(3, 3)
        h = np_.tanh(X @ W1)
        logits = h @ W2
        m = np_.max(logits, axis=1, keepdims=True)
        log_probs = logits - m - np_.log(np_.sum(np_.exp(logits - m), axis=1, keepdims=True))
        return -np_.sum(ONE_HOT * log_probs) / X.shape[0]

    return loss


def test_mlp_softmax_cross_entropy():
    check(make_mlp(np), make_mlp(anp), RNG.normal(size=21))


T = np.linspace(0.0, 1.0, 6)
Y = np.sin(3 * T)


def make_gp(np_):
    def nll(theta):
        ell, sigma = np_.exp(theta[0]), np_.exp(theta[1])
        d = T[:, None] - T[None, :]
        K = np_.exp(-0.5 * d ** 2 / ell ** 2) + (sigma ** 2 + 1e-6) * np.eye(len(T))
        L = np_.linalg.cholesky(K)
        alpha = np_.linalg.solve(K, Y)
        return 0.5 * Y @ alpha + np_.sum(np_.log(np_.diag(L)))

    return nll


def test_gaussian_process_negative_log_likelihood():
    check(make_gp(np), make_gp(anp), np.array([-0.5, -1.0]), rtol=1e-5)


def make_ode(np_):
    def rk4_final_state(params):
        a, b = params[0], params[1]

        def rhs(y):
            return np_.array([y[1], -a * y[0] - b * y[1]])

        y = np_.array([1.0, 0.0])
        h = 0.1
        for _ in range(20):
            k1 = rhs(y)
            k2 = rhs(y + h / 2 * k1)
            k3 = rhs(y + h / 2 * k2)
            k4 = rhs(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y[0] ** 2 + y[1]

    return rk4_final_state


def test_ode_solved_by_rk4_in_a_python_loop():
    check(make_ode(np), make_ode(anp), np.array([2.0, 0.3]))


def make_recursive(np_):
    def tree_sum(x, depth=4):
        if depth == 0:
            return np_.sum(np_.sin(x))
        if depth == 1:
            return np_.sum(x ** 2)
        return tree_sum(x * 0.9, depth - 1) + tree_sum(np_.cos(x), depth - 2)

    return tree_sum


def test_recursive_function():
    check(make_recursive(np), make_recursive(anp), np.array([0.3, -0.7]))


@dataclass
class Linear:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x, np_):
        return np_.tanh(x @ self.W + self.b)


class Model:
    def __init__(self, layers):
        self.layers = layers

    def predict(self, x, np_):
        for layer in self.layers:
            x = layer(x, np_)
        return x


def make_model_loss(np_):
    def loss(w):
        model = Model([Linear(w[:8].reshape(4, 2), w[8:10]), Linear(w[10:12].reshape(2, 1), w[12:13])])
        return np_.mean((model.predict(X, np_) - 0.5) ** 2)

    return loss


def test_class_based_model():
    check(make_model_loss(np), make_model_loss(anp), RNG.normal(size=13))


def test_model_object_as_argument_gets_structural_tangent():
    model = Model([Linear(RNG.normal(size=(4, 2)), np.zeros(2))])
    (g,) = zp.gradient(lambda m: np.sum(m.predict(X, np)), model)
    layer_grad = g.layers[0]
    assert layer_grad.W.shape == (4, 2) and layer_grad.b.shape == (2,)
    eps = 1e-6
    W = model.layers[0].W
    E = np.zeros_like(W)
    E[1, 1] = eps
    plus = np.sum(Model([Linear(W + E, np.zeros(2))]).predict(X, np))
    minus = np.sum(Model([Linear(W - E, np.zeros(2))]).predict(X, np))
    assert layer_grad.W[1, 1] == pytest.approx((plus - minus) / (2 * eps), rel=1e-5)
