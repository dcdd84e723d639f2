"""softclip's rules, checked with rulescore.testing and used from every AD system installed."""

from __future__ import annotations

import numpy as np
import pytest
from softclip import softclip

import rulescore.testing as rct

X = np.array([-2.0, -0.3, 0.4, 3.0])
C = 1.5


def d2softclip(x, c):
    t = np.tanh(x / c)
    return -2 * t * (1 - t * t) / c


def test_rules_against_finite_differences_in_every_ad_system() -> None:
    rct.test_rrule(softclip, X, C, engines="all")  # zygotepy, JAX, PyTorch, autograd: 1st and 2nd order
    rct.test_frule(softclip, X, C)


def test_rules_on_hypothesis_examples(rule_tester) -> None:
    from hypothesis import strategies as st

    from rulescore.testing import strategies as S

    rule_tester.given(softclip, S.arrays(shape=(3,)), st.floats(0.5, 3.0))


def test_zygotepy() -> None:
    zp = pytest.importorskip("zygotepy")
    (gx,) = zp.gradient(lambda x: np.sum(softclip(x, C) ** 2), X)
    np.testing.assert_allclose(gx, 2 * softclip(X, C) * (1 - np.tanh(X / C) ** 2))


def test_jax_jit_vmap_grad_of_grad() -> None:
    jax = pytest.importorskip("jax")
    import rulescore.interop.jax as rjax

    g = rjax.wrap(softclip)
    x = jax.numpy.asarray(X)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: g(x, C).sum()))(x), 1 - np.tanh(X / C) ** 2)
    np.testing.assert_allclose(jax.vmap(jax.grad(lambda x: g(x, C)))(x), 1 - np.tanh(X / C) ** 2)
    np.testing.assert_allclose(jax.vmap(jax.grad(jax.grad(lambda x: g(x, C))))(x), d2softclip(X, C))
    host = rjax.wrap(softclip, native=False)   # the same rules through a host callback
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(jax.grad(lambda x: host(x, C)))))(x),
                               d2softclip(X, C))


def test_pytorch_backward_and_hessian() -> None:
    torch = pytest.importorskip("torch")
    import rulescore.interop.torch as rtorch

    g = rtorch.wrap(softclip)
    x = torch.tensor(X, requires_grad=True)
    g(x, C).sum().backward()
    np.testing.assert_allclose(x.grad, 1 - np.tanh(X / C) ** 2)
    h = torch.func.hessian(lambda x: g(x, C).sum())(torch.tensor(X))
    np.testing.assert_allclose(h, np.diag(d2softclip(X, C)))


def test_autograd() -> None:
    autograd = pytest.importorskip("autograd")
    import rulescore.interop.autograd as rag

    g = rag.wrap(softclip)
    np.testing.assert_allclose(autograd.elementwise_grad(lambda x: g(x, C))(X), 1 - np.tanh(X / C) ** 2)
    np.testing.assert_allclose(autograd.grad(autograd.grad(lambda x: g(x, C)))(0.4), d2softclip(0.4, C))
