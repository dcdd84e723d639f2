"""Scenarios: complex numbers as a user meets them (issue 14, cases 4 and 8), checked against
JAX (when installed) and finite differences."""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


# -- case 8: complex sign is z/|z| --------------------------------------------------------------
def test_gradient_through_complex_sign_matches_finite_differences():
    def f(v):
        z = v[0] + 1j * v[1]
        return np.real(np.sign(z) * np.conj(z + 1.0))

    v = np.array([1.0, 2.0])
    (g,) = zp.gradient(f, v)
    np.testing.assert_allclose(g, fd(f, v), rtol=1e-6)


def test_real_sign_stays_flat():
    assert zp.gradient(lambda x: np.sign(x) * x, 2.0) == (1.0,)
    assert zp.gradient(lambda x: np.sum(np.sign(x)), np.array([-1.0, 2.0])) == (None,)


@pytest.mark.parametrize("ord", [1, 3, np.inf, 0.5])
def test_second_derivative_of_complex_vector_norm(ord):
    def f(v, lib=np):
        return lib.linalg.norm(v[:3] + 1j * v[3:], ord) ** 2

    x = np.array([1.0, -2.0, 0.5, 0.3, 1.2, -0.7])
    np.testing.assert_allclose(zp.hessian(f, x), jax.hessian(lambda v: f(v, jnp))(x), atol=1e-10)
