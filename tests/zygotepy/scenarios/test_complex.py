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
    np.testing.assert_allclose(zp.hessian(f, x), jax.jit(jax.hessian(lambda v: f(v, jnp)))(x), atol=1e-10)


# -- case 4: jacobian of a complex function does not depend on the mode --------------------------
SMALL = np.array([1.0 + 2.0j])
LARGE = np.array([1.0 + 2.0j, -0.5 + 0.3j, 2.0 - 1.0j, 0.1 + 0.7j])
MODES = ["forward", "reverse", "auto"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("z", [SMALL, LARGE], ids=["small", "large"])
@pytest.mark.parametrize("name", ["square", "exp"])
def test_holomorphic_jacobian_is_the_complex_derivative(name, z, mode):
    f, fj = {"square": (lambda z: z ** 2, lambda z: z ** 2), "exp": (np.exp, jnp.exp)}[name]
    (J,) = zp.jacobian(f, z, mode=mode)
    np.testing.assert_allclose(J, jax.jit(jax.jacfwd(fj, holomorphic=True))(z), rtol=1e-12)
    np.testing.assert_allclose(J, jax.jit(jax.jacrev(fj, holomorphic=True))(z), rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_scalar_complex_function_agrees_across_modes(mode):
    assert zp.jacobian(lambda z: z ** 2, 1.0 + 2.0j, mode=mode) == (2.0 + 4.0j,)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("z", [SMALL, LARGE], ids=["small", "large"])
def test_real_output_of_complex_input_is_the_gradient(z, mode):
    """|z|^2 is not holomorphic: its row is ChainRules' gradient 2z, the conjugate of jax.grad's."""
    (J,) = zp.jacobian(lambda z: np.abs(z) ** 2, z, mode=mode)
    np.testing.assert_allclose(J, np.diag(2 * z))
    for k in range(len(z)):
        np.testing.assert_allclose(J[k], np.conj(jax.grad(lambda z: jnp.abs(z[k]) ** 2)(z)))
        np.testing.assert_allclose(J[k], zp.gradient(lambda z: np.abs(z[k]) ** 2, z)[0])


@pytest.mark.parametrize("mode", MODES)
def test_complex_output_of_real_input_is_the_derivative(mode):
    t = np.array([0.5, 1.0, -2.0])
    (J,) = zp.jacobian(lambda t: np.exp(1j * t), t, mode=mode)
    np.testing.assert_allclose(J, np.diag(1j * np.exp(1j * t)))
    np.testing.assert_allclose(J, jax.jit(jax.jacfwd(lambda t: jnp.exp(1j * t)))(t))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("z", [SMALL, LARGE], ids=["small", "large"])
def test_non_holomorphic_complex_output_is_refused_in_every_mode(z, mode):
    def mirror(z):
        return np.conj(z) * 2.0

    with pytest.raises(ValueError, match="mirror is not holomorphic.*real and imaginary parts"):
        zp.jacobian(mirror, z, mode=mode)
    # the fix the message names: real and imaginary parts as real arguments
    Jx, Jy = zp.jacobian(lambda x, y: mirror(x + 1j * y), z.real, z.imag, mode=mode)
    np.testing.assert_allclose(Jx, 2 * np.eye(len(z)))
    np.testing.assert_allclose(Jy, -2j * np.eye(len(z)))
