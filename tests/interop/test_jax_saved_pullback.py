"""rulescore.interop.jax's native tier on eager CPU arrays keeps the forward pass's pullback for the
transpose: the rrule runs once per first-order gradient, the gradient matches finite differences,
and what cannot use the kept pullback (``jit``, ``vmap``ped cotangents from ``jacrev``, higher
orders) runs the rrule again and stays right."""

from __future__ import annotations

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from tests.zygotepy.finite_differences import fd

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402

RRULE_CALLS: collections.Counter[str] = collections.Counter()


def softplus(x):
    xp = rc.array_namespace(x)
    return xp.log1p(xp.exp(x))


@rc.rrule.register(softplus)
def softplus_rrule(x):
    RRULE_CALLS["softplus"] += 1
    xp = rc.array_namespace(x)
    slope = 1 / (1 + xp.exp(-x))  # a residual computed in the forward pass

    def softplus_pullback(ybar):
        return rc.NoTangent(), ybar * slope

    return softplus(x), softplus_pullback


def scaled_sin(x, a):
    xp = rc.array_namespace(x, a)
    return a * xp.sin(x)


@rc.rrule.register(scaled_sin)
def scaled_sin_rrule(x, a):
    RRULE_CALLS["scaled_sin"] += 1
    xp = rc.array_namespace(x, a)
    s, c = xp.sin(x), xp.cos(x)

    def scaled_sin_pullback(ybar):
        return rc.NoTangent(), ybar * a * c, ybar * s

    return a * s, scaled_sin_pullback


def sin_cos(x):
    xp = rc.array_namespace(x)
    return xp.sin(x), xp.cos(x)


@rc.rrule.register(sin_cos)
def sin_cos_rrule(x):
    RRULE_CALLS["sin_cos"] += 1
    y = sin_cos(x)

    def sin_cos_pullback(ybar):
        sbar, cbar = ybar
        return rc.NoTangent(), sbar * y[1] - cbar * y[0]

    return y, sin_cos_pullback


# (function, number of array arguments, scalar loss of its outputs)
CASES = {
    "softplus": (softplus, 1, lambda y: jnp.sum(y ** 2)),
    "scaled_sin": (scaled_sin, 2, lambda y: jnp.sum(y ** 2)),
    "sin_cos": (sin_cos, 1, lambda y: jnp.sum(y[0] * y[1])),
    "sin_cos, one output used": (sin_cos, 1, lambda y: jnp.sum(y[1])),  # a symbolic zero cotangent
}


def _loss(name):
    f, _, loss = CASES[name]
    g = rjax.wrap(f)
    return lambda *xs: loss(g(*xs))


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(CASES)), n=st.integers(1, 6), seed=st.integers(0, 2 ** 16))
def test_first_order_runs_the_rrule_once_and_matches_finite_differences(name, n, seed) -> None:
    f, n_args, _ = CASES[name]
    xs = [jnp.asarray(np.random.default_rng(seed + k).uniform(0.5, 1.5, n)) for k in range(n_args)]
    loss = _loss(name)
    grad = jax.grad(loss, argnums=tuple(range(n_args)))
    grad(*xs)  # the first call at these shapes also finds the op (its rule traced abstractly)
    key = f.__name__
    before = RRULE_CALLS[key]
    grads = grad(*xs)
    assert RRULE_CALLS[key] - before == 1  # forward and transpose share one rrule call
    for k in range(n_args):
        def partial(v, k=k):
            return float(loss(*(jnp.asarray(v) if j == k else xs[j] for j in range(n_args))))
        np.testing.assert_allclose(np.asarray(grads[k]), fd(partial, np.asarray(xs[k])), rtol=1e-5, atol=1e-7)


def test_a_vjp_function_called_twice_uses_the_kept_pullback_both_times() -> None:
    g = rjax.wrap(softplus)
    x = jnp.linspace(-1.0, 1.0, 5)
    jax.vjp(g, x)
    before = RRULE_CALLS["softplus"]
    _, back = jax.vjp(g, x)
    (one,), (two,) = back(jnp.ones(5)), back(2 * jnp.ones(5))
    assert RRULE_CALLS["softplus"] - before == 1
    slope = 1 / (1 + np.exp(-np.asarray(x)))
    np.testing.assert_allclose(np.asarray(one), slope, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(two), 2 * slope, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_jacrev_and_hessian_agree_with_the_eager_gradient(name) -> None:
    f, n_args, _ = CASES[name]
    xs = [jnp.asarray(np.random.default_rng(k).uniform(0.5, 1.5, 3)) for k in range(n_args)]
    loss = _loss(name)

    def scalar(x0):
        return loss(x0, *xs[1:])

    eager = jax.grad(scalar)(xs[0])
    np.testing.assert_allclose(np.asarray(jax.jit(jax.grad(scalar))(xs[0])), np.asarray(eager), rtol=1e-12)
    g = rjax.wrap(f)
    rows = jax.jacrev(lambda x0: g(x0, *xs[1:]))(xs[0])  # vmapped cotangents: the rrule runs again
    first = rows[0] if isinstance(rows, tuple) else rows
    assert np.asarray(first).shape == (3, 3)
    hessian = np.asarray(jax.hessian(scalar)(xs[0]))

    def grad_sum(v):
        return float(jnp.sum(jax.grad(scalar)(jnp.asarray(v))))

    np.testing.assert_allclose(hessian.sum(axis=0), fd(grad_sum, np.asarray(xs[0])), rtol=1e-5, atol=1e-6)


def test_an_rrule_whose_primal_is_not_the_functions_says_so() -> None:
    def halved(x):
        xp = rc.array_namespace(x)
        return xp.sin(x) / 2

    @rc.rrule.register(halved)
    def halved_rrule(x):
        xp = rc.array_namespace(x)
        y = xp.sin(x) / 2
        if isinstance(x, np.ndarray):  # wrong on NumPy values only: the abstract trial passes
            y = xp.reshape(y, (-1, 1))
        return y, lambda ybar: (rc.NoTangent(), ybar)

    with pytest.raises(ValueError, match="the rrule of .*halved returns outputs"):
        jax.grad(lambda v: jnp.sum(rjax.wrap(halved)(v)))(jnp.ones(3))
