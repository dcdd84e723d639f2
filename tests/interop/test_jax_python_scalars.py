"""A Python number differentiated by ``jax.grad`` (a weakly typed tracer) reaches the native tier's
primitive with its cotangent kept: the gradient with respect to it is the reference's, not zero."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402
from tests.interop.test_torch_saved_pullback import scaled_sin  # noqa: E402

X = jnp.asarray([0.3, -0.5, 1.2])


@pytest.mark.parametrize(("f", "ref"), [
    (np.multiply, jnp.multiply), (np.add, jnp.add), (np.hypot, jnp.hypot), (np.arctan2, jnp.arctan2),
    (np.power, jnp.power), (scaled_sin, lambda x, a: a * jnp.sin(x)),
], ids=["multiply", "add", "hypot", "arctan2", "power", "user scaled_sin"])
@pytest.mark.parametrize("transform", [lambda g: g, jax.jit], ids=["eager", "jit"])
def test_gradient_with_respect_to_a_python_float(f, ref, transform) -> None:
    g = rjax.wrap(f)
    got = transform(jax.grad(lambda a: jnp.sum(g(jnp.abs(X) + 0.5, a))))(2.0)
    want = jax.grad(lambda a: jnp.sum(ref(jnp.abs(X) + 0.5, a)))(2.0)
    assert float(want) != 0.0
    np.testing.assert_allclose(got, want, rtol=1e-12)
    both = transform(jax.grad(lambda x, a: jnp.sum(g(x, a) ** 2), argnums=(0, 1)))(jnp.abs(X) + 0.5, 1.5)
    want_both = jax.grad(lambda x, a: jnp.sum(ref(x, a) ** 2), argnums=(0, 1))(jnp.abs(X) + 0.5, 1.5)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12), both, want_both)
