"""``rc.scalar_rule`` with array-namespace partials gives native rules (JAX eager and jit, PyTorch
with its dtypes), and declares functions of several outputs."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
import rulescore.testing as rct  # noqa: E402

X = np.array([0.3, -0.5, 1.2])


def softplus(x):
    xp = rc.array_namespace(x)
    return xp.log1p(xp.exp(x))


rc.scalar_rule(softplus, lambda x, xp=np: 1 / (1 + xp.exp(-x)))


def gated(x, w):
    """Two arguments, ``w`` broadcast against ``x``; partials read ``result`` too."""
    xp = rc.array_namespace(x, w)
    return x * xp.tanh(w)


rc.scalar_rule(gated, lambda x, w, result, xp=np: (xp.tanh(w), x * (1 - xp.tanh(w) ** 2)))


def softplus_numpy(x):
    return np.log1p(np.exp(x))


def jax_reference(f):
    return {softplus: lambda x: jnp.log1p(jnp.exp(x)), gated: lambda x, w: x * jnp.tanh(w)}[f]


ARGS = [(softplus, (X,)), (gated, (X, np.array(0.7))), (gated, (X.reshape(3, 1), np.array([0.2, -1.0])))]


@pytest.mark.parametrize(("f", "args"), ARGS)
def test_the_rules_on_eager_jax_arrays_keep_shapes(f, args) -> None:
    xs = [jnp.asarray(a) for a in args]
    y, back = rc.rrule(f, *xs)
    grads = back(jnp.ones_like(y))[1:]
    want = jax.jit(jax.grad(lambda *a: jnp.sum(jax_reference(f)(*a)), argnums=tuple(range(len(xs)))))(*xs)
    for g, w, a in zip(grads, want, args, strict=True):
        assert g.shape == np.shape(a)
        np.testing.assert_allclose(g, w, rtol=1e-12)
    ts = [jnp.ones_like(a) for a in xs]
    _, ydot = rc.frule((rc.NoTangent(), *ts), f, *xs)
    np.testing.assert_allclose(ydot, jax.jvp(jax_reference(f), tuple(xs), tuple(ts))[1], rtol=1e-12)


@pytest.mark.parametrize(("f", "args"), ARGS)
def test_the_rules_run_natively_in_jax(f, args) -> None:
    g = rjax.wrap(f, native=True)
    xs = [jnp.asarray(a) for a in args]
    argnums = tuple(range(len(xs)))
    hess = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(g(*a))), argnums=argnums))
    assert "callback" not in hess.lower(*xs).as_text()
    want = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(jax_reference(f)(*a))), argnums=argnums))(*xs)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12), hess(*xs), want)


@pytest.mark.parametrize(("f", "args"), ARGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_rules_run_natively_on_tensors(f, args, dtype) -> None:
    g = rtorch.wrap(f, native=True)
    xs = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in args]
    ref = {softplus: lambda x: torch.nn.functional.softplus(x),
           gated: lambda x, w: x * torch.tanh(w)}[f]
    got = torch.autograd.grad(torch.sin(g(*xs)).sum(), xs)
    want = torch.autograd.grad(torch.sin(ref(*xs)).sum(), xs)
    for a, w in zip(got, want, strict=True):
        assert a.dtype == dtype and a.shape == w.shape
        np.testing.assert_allclose(a, w, rtol=1e-5 if dtype == torch.float32 else 1e-12, atol=1e-6)


def test_numpy_partials_still_give_a_host_rule() -> None:
    rc.scalar_rule(softplus_numpy, lambda x: 1 / (1 + np.exp(-x)))
    g = rjax.wrap(softplus_numpy)
    grad = jax.jit(jax.grad(lambda x: jnp.sum(g(x))))
    np.testing.assert_allclose(grad(jnp.asarray(X)), 1 / (1 + np.exp(-X)))


# -- several outputs -----------------------------------------------------------------------------------


def polar(r, t):
    xp = rc.array_namespace(r, t)
    return r * xp.cos(t), r * xp.sin(t)


rc.scalar_rule(polar, lambda r, t, xp=np: ((xp.cos(t), -r * xp.sin(t)), (xp.sin(t), r * xp.cos(t))),
               outputs=2)


def sincos(x):
    return np.sin(x), np.cos(x)


rc.scalar_rule(sincos, lambda x, result: (result[1], -result[0]), outputs=2)


def moments(x, y):
    """Three outputs of two arguments."""
    return x + y, x * y, x ** 2


rc.scalar_rule(moments, lambda x, y: ((1, 1), (y, x), (2 * x, rc.ZeroTangent())), outputs=3)


@pytest.mark.parametrize(("f", "args"), [(polar, (X + 2, X)), (polar, (1.5, X)), (sincos, (X,)),
                                         (sincos, (0.4,)), (moments, (X, -2 * X)), (moments, (X, 0.5))])
def test_several_outputs_against_finite_differences(f, args) -> None:
    rct.test_rrule(f, *args)
    rct.test_frule(f, *args)


def test_several_outputs_with_one_cotangent_zero() -> None:
    y, back = rc.rrule(polar, 2.0, 0.5)
    _, dr, dt = back(rc.Tangent[tuple](rc.ZeroTangent(), 1.0))
    np.testing.assert_allclose([dr, dt], [np.sin(0.5), 2 * np.cos(0.5)])


def test_several_outputs_natively() -> None:
    r, t = jnp.asarray(X + 2), jnp.asarray(X)
    g = rjax.wrap(polar, native=True)
    got = jax.jit(jax.grad(lambda r, t: jnp.sum(g(r, t)[0] * g(r, t)[1]), argnums=(0, 1)))(r, t)
    want = jax.grad(lambda r, t: jnp.sum(r * jnp.cos(t) * r * jnp.sin(t)), argnums=(0, 1))(r, t)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12), got, want)
    rt, tt = (torch.tensor(v, requires_grad=True) for v in (X + 2, X))
    a, b = rtorch.wrap(polar, native=True)(rt, tt)
    got_t = torch.autograd.grad((a * b).sum(), (rt, tt))
    np.testing.assert_allclose(got_t[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got_t[1], want[1], rtol=1e-12)


def test_several_outputs_errors_name_the_function() -> None:
    def bad(x):
        return x, 2 * x

    rc.scalar_rule(bad, lambda x: (1, 2, 3), outputs=2)
    with pytest.raises(TypeError, match="bad .*outputs=2.* 2 rows"):
        rc.rrule(bad, 1.0)[1](rc.Tangent[tuple](1.0, 1.0))

    def single(x):
        return 2 * x

    rc.scalar_rule(single, lambda x: ((2,), (2,)), outputs=2)
    with pytest.raises(TypeError, match="single was declared with outputs=2"):
        rc.rrule(single, 1.0)
    with pytest.raises(TypeError, match="for functions of one output"):
        rc.scalar_rule(single, lambda x: ((2,), (2,)), outputs=2, errstate=True)
