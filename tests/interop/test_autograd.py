"""rulescore.interop.autograd: f's rules as HIPS autograd primitives, any order."""

from __future__ import annotations

import numpy as np
import pytest

autograd = pytest.importorskip("autograd", reason="needs autograd (the `autograd` extra)")
import autograd.numpy as anp  # noqa: E402

import rulescore.interop.autograd as rag  # noqa: E402
from tests.interop import _functions as F  # noqa: E402

X = np.array([0.3, -0.5, 1.2])


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
