"""Pullbacks written with ``rc.project`` run on the native tier (JAX eager and jit, PyTorch), sum
broadcast dimensions there, and a native function whose rule breaks says why it is not native."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from rulescore.interop._host import NativeTierWarning  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 3))


def shifted_tanh(x, b):
    """``tanh(x + b)`` with ``b`` broadcast against ``x``: its cotangent must be summed back."""
    xp = rc.array_namespace(x, b)
    return xp.tanh(x + b)


@rc.rrule.register(shifted_tanh)
def shifted_tanh_rrule(x, b):
    y = shifted_tanh(x, b)

    def shifted_tanh_pullback(ybar):
        d = ybar * (1 - y ** 2)
        return rc.NoTangent(), rc.project(x, d), rc.project(b, d)

    return y, shifted_tanh_pullback


def rotated_real(x, theta):
    """``Re(x e^{i theta})``: the pullback's complex cotangents are projected onto real inputs."""
    xp = rc.array_namespace(x, theta)
    return x * xp.cos(theta)


@rc.rrule.register(rotated_real)
def rotated_real_rrule(x, theta):
    xp = rc.array_namespace(x, theta)

    def rotated_real_pullback(ybar):
        phase = xp.cos(theta) + 1j * xp.sin(theta)  # a complex intermediate: project drops Im
        return rc.NoTangent(), rc.project(x, ybar * phase), rc.project(theta, ybar * (1j * x * phase))

    return rotated_real(x, theta), rotated_real_pullback


def two_outputs(x):
    """A dict output whose keys are not sorted (JAX's pytrees sort them)."""
    return {"b": 2 * x, "a": x ** 2}


@rc.rrule.register(two_outputs)
def two_outputs_rrule(x):
    def two_outputs_pullback(ybar):
        return rc.NoTangent(), rc.project(x, 2 * ybar["b"] + 2 * x * ybar["a"])

    return two_outputs(x), two_outputs_pullback


def _reference_jax(name):
    return {"shifted_tanh": lambda x, b: jnp.tanh(x + b),
            "rotated_real": lambda x, t: x * jnp.cos(t)}[name]


CASES = [(shifted_tanh, X, RNG.standard_normal(3)), (shifted_tanh, X, RNG.standard_normal((1, 3))),
         (shifted_tanh, X, np.array(0.4)), (rotated_real, X, np.array(0.7)),
         (rotated_real, X[0], np.array(-1.1))]


@pytest.mark.parametrize(("f", "x", "b"), CASES)
@pytest.mark.parametrize("transform", [lambda h: h, jax.jit], ids=["eager", "jit"])
def test_project_in_a_jax_native_pullback(f, x, b, transform) -> None:
    g = rjax.wrap(f, native=True)  # raises if the native tier is not found
    loss = transform(jax.grad(lambda x, b: jnp.sum(jnp.sin(g(x, b))), argnums=(0, 1)))
    want = jax.grad(lambda x, b: jnp.sum(jnp.sin(_reference_jax(f.__name__)(x, b))), argnums=(0, 1))
    xs, bs = jnp.asarray(x), jnp.asarray(b)
    for got, ref, primal in zip(loss(xs, bs), want(xs, bs), (x, b), strict=True):
        assert got.shape == np.shape(primal)  # broadcast dimensions summed
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    assert "callback" not in jax.jit(loss).lower(xs, bs).as_text()


def _reference_torch(name):
    return {"shifted_tanh": lambda x, b: torch.tanh(x + b),
            "rotated_real": lambda x, t: x * torch.cos(t)}[name]


@pytest.mark.parametrize(("f", "x", "b"), CASES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_project_in_a_torch_native_pullback(f, x, b, dtype) -> None:
    g = rtorch.wrap(f, native=True)
    xs, bs = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in (x, b))
    got = torch.autograd.grad(torch.sin(g(xs, bs)).sum(), (xs, bs))
    want = torch.autograd.grad(torch.sin(_reference_torch(f.__name__)(xs, bs)).sum(), (xs, bs))
    for a, r, primal in zip(got, want, (x, b), strict=True):
        assert tuple(a.shape) == np.shape(primal) and a.dtype == dtype
        np.testing.assert_allclose(a.detach(), r.detach(), rtol=1e-5 if dtype == torch.float32 else 1e-12,
                                   atol=1e-6 if dtype == torch.float32 else 0)


def test_project_onto_library_arrays_directly() -> None:
    assert rc.project(jnp.ones(3), jnp.ones((2, 3))).tolist() == [2.0, 2.0, 2.0]
    assert jax.jit(lambda x: rc.project(x, 2 * x))(jnp.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert rc.project(torch.ones(1, 3), torch.ones(4, 2, 3)).tolist() == [[8.0, 8.0, 8.0]]
    assert rc.project(jnp.ones(2), jnp.ones(2) * 1j).tolist() == [0.0, 0.0]  # real keeps Re only
    assert rc.project(torch.arange(3), torch.ones(3)).dtype == torch.get_default_dtype()
    assert rc.project(torch.ones(3) > 0, torch.ones(3)) == rc.NoTangent()
    with pytest.raises(rc.ProjectionError, match="shape"):
        rc.project(torch.ones(3), torch.ones(4))


@pytest.mark.parametrize("wrap", [rjax.wrap, rtorch.wrap], ids=["jax", "torch"])
def test_a_dict_output_keeps_its_keys_on_the_native_tier(wrap) -> None:
    g = wrap(two_outputs, native=True)
    if wrap is rjax.wrap:
        x = jnp.asarray([1.0, 3.0])
        out = g(x)
        db = jax.grad(lambda x: jnp.sum(g(x)["b"]))(x)
        da = jax.jit(jax.grad(lambda x: jnp.sum(g(x)["a"])))(x)
    else:
        x = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
        out = g(x)
        (db,) = torch.autograd.grad(g(x)["b"].sum(), x)
        (da,) = torch.autograd.grad(g(x)["a"].sum(), x)
    np.testing.assert_allclose(np.asarray(out["b"].tolist()), [2.0, 6.0])
    np.testing.assert_allclose(np.asarray(out["a"].tolist()), [1.0, 9.0])
    np.testing.assert_allclose(np.asarray(db.tolist()), [2.0, 2.0])
    np.testing.assert_allclose(np.asarray(da.tolist()), [2.0, 6.0])


def native_function_host_rule(x):
    xp = rc.array_namespace(x)
    return xp.exp(x)


@rc.rrule.register(native_function_host_rule)
def native_function_host_rule_rrule(x):
    y = np.exp(np.asarray(x))  # NumPy only: this rule cannot run on JAX arrays or tensors

    def native_function_host_rule_pullback(ybar):
        return rc.NoTangent(), ybar * y

    return y, native_function_host_rule_pullback


@pytest.mark.parametrize(("wrap", "x"), [(rjax.wrap, jnp.asarray([0.1, 0.2])),
                                         (rtorch.wrap, torch.tensor([0.1, 0.2], dtype=torch.float64))],
                         ids=["jax", "torch"])
def test_a_native_function_whose_rule_is_not_says_why(wrap, x) -> None:
    with pytest.warns(NativeTierWarning, match="native_function_host_rule runs on .* but its rules do not"):
        y = wrap(native_function_host_rule)(x)  # still right, on the host tier
    np.testing.assert_allclose(np.asarray(y.tolist()), np.exp([0.1, 0.2]))
    with pytest.raises(TypeError, match="the rule of native_function_host_rule does not run") as info:
        wrap(native_function_host_rule, native=True)(x)
    assert info.value.__cause__ is not None and str(info.value.__cause__) in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeTierWarning)  # native=False: the host tier, chosen
        wrap(native_function_host_rule, native=False)(x)


@pytest.mark.parametrize("wrap", [rjax.wrap, rtorch.wrap], ids=["jax", "torch"])
def test_a_numpy_function_takes_the_host_tier_quietly(wrap) -> None:
    def numpy_only(x):
        return np.exp(np.asarray(x))

    rc.scalar_rule(numpy_only, lambda x, result: result)
    x = jnp.asarray([0.1]) if wrap is rjax.wrap else torch.tensor([0.1], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeTierWarning)
        np.testing.assert_allclose(np.asarray(wrap(numpy_only)(x).tolist()), np.exp([0.1]))
