"""Scenarios: implicit parameters reached through globals, attributes, iteration, unpacking and
generators."""

import warnings

import numpy as np

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import fd

W = np.array([[1.0, 2.0], [3.0, -1.0]])


B = np.array([0.5, -0.5])


X0 = np.array([1.0, 2.0])


class _Layer:
    def __init__(self):
        self.W, self.b = W, B

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


def test_implicit_params_through_globals_attributes_nested_containers_and_methods():
    layer = _Layer()
    nested = [W, {"b": B}]
    gs = zp.gradient(lambda: np.sum(layer(X0)) + np.sum(nested[0] @ X0 * nested[1]["b"]) + W.sum(),
                     zp.params(layer, nested))

    def loss(w, b):
        return np.sum(np.tanh(w @ X0 + b)) + np.sum(w @ X0 * b) + w.sum()

    want_w = fd(lambda w: loss(w.reshape(2, 2), B), W.ravel()).reshape(2, 2)
    np.testing.assert_allclose(gs[W], want_w, rtol=1e-5)
    np.testing.assert_allclose(gs[B], fd(lambda b: loss(W, b), B), rtol=1e-5)


_WG = np.array([1.0, 2.0])


def test_implicit_param_used_inside_a_generator_function():
    def batches():
        for i in range(2):
            yield np.sum(_WG * i)

    gs = zp.gradient(lambda: sum(batches()), zp.params(_WG))
    np.testing.assert_allclose(gs[_WG], [1.0, 1.0])


def test_rule_called_inside_a_generator_function_is_used_or_warned():
    def sq(v):
        return v * v

    rc.rrule.register(sq)(lambda v: (sq(v), lambda yb: (rc.NoTangent(), yb * 100.0)))

    def gen(x):
        yield sq(x)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (g,) = zp.gradient(lambda x: sum(gen(x)), 1.0)
    assert g == 100.0 or any(issubclass(w.category, zp.ZygoteWarning) for w in caught)


def test_implicit_param_transpose_attribute():
    gs = zp.gradient(lambda: np.sum(W.T @ B), zp.params(W, B))
    np.testing.assert_allclose(gs[W], np.outer(B, np.ones(2)))  # d sum(W.T @ B) / dW[i, j] = B[i]


def test_implicit_param_iteration_and_unpacking():
    gs = zp.gradient(lambda: sum(v ** 2 for v in B), zp.params(B))
    np.testing.assert_allclose(gs[B], 2 * B)

    def unpacked():
        a, c = B
        return a * c

    np.testing.assert_allclose(zp.gradient(unpacked, zp.params(B))[B], B[::-1])
