"""What crosses the JAX and PyTorch boundaries besides arrays: output specs found from the actual
inputs (functions with a domain, boolean masks), Python scalars kept weakly typed, dataclasses
flattened, and the errors where a system cannot follow (issue 15)."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import numpy as np
import pytest

import rulescore as rc

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])  # ones((3, 3)) is singular
MASKS = [np.array([[True, False, True], [False, False, True]]), np.array([[True, True, True], [False] * 3])]


def cholesky_sum_grad() -> np.ndarray:
    _, back = rc.rrule(np.linalg.cholesky, SPD)
    return np.asarray(back(np.ones((3, 3)))[1])


def test_a_function_outside_its_domain_at_ones_gets_its_spec_from_the_inputs() -> None:
    want = cholesky_sum_grad()
    g, h = rjax.wrap(np.linalg.cholesky, native=False), rtorch.wrap(np.linalg.cholesky, native=False)
    np.testing.assert_allclose(jax.grad(lambda a: jnp.sum(g(a)))(jnp.asarray(SPD)), want)
    np.testing.assert_allclose(torch.func.grad(lambda a: h(a).sum())(torch.tensor(SPD)).numpy(), want)
    np.testing.assert_allclose(jax.vjp(g, jnp.asarray(SPD))[1](jnp.ones((3, 3)))[0], want)


def test_under_jit_a_domain_error_asks_for_the_spec() -> None:
    g = rjax.wrap(np.linalg.cholesky, native=False)  # the host tier (cholesky has a native one)
    with pytest.raises(TypeError, match=r"cholesky.*under jax\.jit.*out_shape="):
        jax.jit(lambda a: jnp.sum(g(a)))(jnp.asarray(SPD))
    g(jnp.asarray(SPD))  # a call on values: its spec serves jit for inputs of these shapes
    np.testing.assert_allclose(jax.jit(jax.grad(lambda a: jnp.sum(g(a))))(jnp.asarray(SPD)),
                               cholesky_sum_grad())
    declared = rjax.wrap(np.linalg.cholesky, out_shape=lambda a: a, native=False)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda a: jnp.sum(declared(a))))(jnp.asarray(SPD)),
                               cholesky_sum_grad())


def test_a_boolean_mask_selects_by_its_values_in_eager_jax() -> None:
    g = rjax.wrap(operator.getitem)
    x = np.arange(6.0).reshape(2, 3)
    for mask in MASKS:  # same shape, other values: another output shape
        np.testing.assert_allclose(jax.grad(lambda v, m=mask: jnp.sum(g(v, m) ** 2))(jnp.asarray(x)),
                                   2 * np.where(mask, x, 0.0))


def test_a_boolean_mask_under_jit_raises_naming_the_function() -> None:
    g = rjax.wrap(operator.getitem)
    with pytest.raises(TypeError, match=r"output of getitem depends on its inputs' values.*jax\.jit"):
        jax.jit(g)(jnp.ones((2, 3)), jnp.asarray(MASKS[0]))


def test_a_spec_that_changes_between_calls_raises_not_reshapes() -> None:
    def head(x, n):
        return x[: int(round(float(n)))] * 1.0

    @rc.rrule.register(head)
    def head_rrule(x, n):
        def head_pullback(ybar):
            xbar = np.zeros_like(x)
            xbar[: len(ybar)] = ybar
            return rc.NoTangent(), xbar, rc.ZeroTangent()
        return head(x, n), head_pullback

    g = rjax.wrap(head, out_shape=lambda x, n: jax.ShapeDtypeStruct((2,), x.dtype))  # wrong for n=3
    with pytest.raises(ValueError, match=r"head returned outputs .*float64\[3\].*float64\[2\]"):
        g(jnp.ones(4), 3.0)


def test_python_floats_stay_weakly_typed() -> None:
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    g, h = rjax.wrap(np.clip), rtorch.wrap(np.clip)
    assert g(jnp.asarray(x), 0.0, None).dtype == jnp.float32
    lower = jax.grad(lambda lo: jnp.sum(g(jnp.asarray(x), lo, None)))(0.0)
    assert float(lower) == 1.0  # one element is clipped up to the bound
    assert h(torch.tensor(x), 0.0, None).dtype == torch.float32
    # a 0-d tensor next to a vector promotes weakly in PyTorch, so it does here
    assert h(torch.tensor(x), torch.tensor(0.0, dtype=torch.float64), None).dtype == torch.float32
    assert float(jax.grad(rjax.wrap(complex.conjugate))(1.5)) == 1.0  # needs a number, not an array


@dataclasses.dataclass
class Layer:
    w: Any
    b: Any
    label: str = "layer"


def affine(layer: Layer, x: Any) -> Any:
    return layer.w * x + layer.b


@rc.rrule.register(affine)
def affine_rrule(layer: Layer, x: Any) -> Any:
    def affine_pullback(ybar: Any) -> Any:
        return (rc.NoTangent(), rc.Tangent[Layer](w=np.sum(ybar * x, axis=0), b=np.sum(ybar)),
                ybar * layer.w)
    return affine(layer, x), affine_pullback


def test_dataclass_fields_get_their_gradients() -> None:
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    w, b = np.array([0.5, -1.0]), 0.25
    g, h = rjax.wrap(affine), rtorch.wrap(affine)
    dw, db = jax.grad(lambda w, b: jnp.sum(g(Layer(w, b), x)), argnums=(0, 1))(jnp.asarray(w), jnp.asarray(b))
    np.testing.assert_allclose(dw, x.sum(axis=0))
    assert float(db) == 4.0
    tw, tb = torch.func.grad(lambda w, b: h(Layer(w, b), torch.tensor(x)).sum(), argnums=(0, 1))(
        torch.tensor(w), torch.tensor(b))
    np.testing.assert_allclose(tw.numpy(), x.sum(axis=0))
    assert float(tb) == 4.0


class Box:
    """Not a dataclass: the exporters cannot rebuild it from leaves."""

    def __init__(self, v: Any) -> None:
        self.v = v


def unbox(box: Box) -> Any:
    return box.v * 2.0


@rc.rrule.register(unbox)
def unbox_rrule(box: Box) -> Any:
    return unbox(box), lambda ybar: (rc.NoTangent(), rc.Tangent[Box](v=2.0 * ybar))


@pytest.mark.parametrize("system", ["jax", "torch"])
def test_an_object_the_exporters_cannot_flatten_holding_a_traced_array_raises(system: str) -> None:
    v = np.array([1.0, 2.0])
    with pytest.raises(TypeError, match=r"unbox is a Box holding an array the system differentiates.*lost"):
        if system == "jax":
            jax.grad(lambda v: jnp.sum(rjax.wrap(unbox)(Box(v))))(jnp.asarray(v))
        else:
            torch.func.grad(lambda v: rtorch.wrap(unbox)(Box(v)).sum())(torch.tensor(v))
    # as a constant it is fine: nothing asks for its gradient
    assert float(jax.grad(lambda s: s * jnp.sum(rjax.wrap(unbox)(Box(v))))(1.0)) == 6.0
