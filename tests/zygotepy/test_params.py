"""Implicit parameters: arrays reached through closures, globals and attributes."""

import numpy as np
import pytest

import zygotepy as zp

W_GLOBAL = np.array([[1.0, 2.0], [3.0, 4.0]])


class Layer:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


def test_closure_global_and_attribute_parameters():
    b = np.array([0.5, -0.5])
    layer = Layer(np.eye(2), np.zeros(2))
    x = np.array([1.0, 2.0])

    def loss():
        return np.sum(layer(W_GLOBAL @ x + b))

    ps = zp.params(W_GLOBAL, b, layer)
    gs = zp.gradient(loss, ps)
    assert set(map(id, gs.keys())) == {id(W_GLOBAL), id(b), id(layer.W), id(layer.b)}
    # check against the explicit gradient
    def explicit(W, bb, LW, Lb):
        return np.sum(np.tanh(LW @ (W @ x + bb) + Lb))

    gW, gb, gLW, gLb = zp.gradient(explicit, W_GLOBAL, b, layer.W, layer.b)
    for p, expected in [(W_GLOBAL, gW), (b, gb), (layer.W, gLW), (layer.b, gLb)]:
        np.testing.assert_allclose(gs[p], expected)


def test_grads_arithmetic_and_optimiser_step():
    W = np.array([1.0, -2.0])
    ps = zp.params(W)
    gs = zp.gradient(lambda: np.sum(W ** 2), ps)
    np.testing.assert_allclose((gs + gs)[W], 4 * W)
    np.testing.assert_allclose((0.5 * gs)[W], W)
    for p in ps:
        p -= 0.25 * gs[p]
    np.testing.assert_allclose(W, [0.5, -1.0])
    assert list(gs.items())[0][0] is W


def test_unused_parameter_is_none_and_unknown_key_errors():
    W, V = np.ones(2), np.ones(3)
    gs = zp.gradient(lambda: W.sum(), zp.params(W, V))
    assert gs[V] is None
    with pytest.raises(KeyError):
        gs[np.ones(2)]


def test_highly_nested_parameter_list():
    theta = [np.array([1.0]), [np.array([2.0]), {"c": np.array([3.0])}]]

    def K():
        a, (b, d) = theta[0], theta[1]
        return np.sum(a * b * d["c"])

    gs = zp.gradient(K, zp.params(theta))
    np.testing.assert_allclose(gs[theta[0]], [6.0])
    np.testing.assert_allclose(gs[theta[1][0]], [3.0])
    np.testing.assert_allclose(gs[theta[1][1]["c"]], [2.0])
