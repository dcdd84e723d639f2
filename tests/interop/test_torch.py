"""rulescore.interop.torch: f's rules as PyTorch derivatives (autograd and torch.func)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
from torch import func  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from tests.interop import _functions as F  # noqa: E402

X = np.array([0.3, -0.5, 1.2])


def tensor(values, **kw):
    return torch.tensor(values, dtype=kw.pop("dtype", torch.float64), **kw)


def test_backward_and_double_backward() -> None:
    g = rtorch.wrap(np.sin)
    x = tensor(X, requires_grad=True)
    g(x).sum().backward()
    np.testing.assert_allclose(x.grad, np.cos(X))
    (dx,) = torch.autograd.grad(g(x).sum(), x, create_graph=True)
    (ddx,) = torch.autograd.grad(dx.sum(), x)
    np.testing.assert_allclose(ddx, -np.sin(X))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_and_device_are_kept(dtype) -> None:
    g = rtorch.wrap(np.sin)
    x = tensor(X, dtype=dtype, requires_grad=True)
    y = g(x)
    y.sum().backward()
    assert y.dtype == dtype and x.grad.dtype == dtype and y.device == x.device


def test_torch_func_transforms() -> None:
    g = rtorch.wrap(np.sin)
    x = tensor(X)
    np.testing.assert_allclose(func.grad(lambda x: g(x).sum())(x), np.cos(X))
    y, back = func.vjp(g, x)
    np.testing.assert_allclose(back(torch.ones(3, dtype=torch.float64))[0], np.cos(X))
    np.testing.assert_allclose(func.jacrev(g)(x), np.diag(np.cos(X)))
    np.testing.assert_allclose(func.jacfwd(g)(x), np.diag(np.cos(X)))
    np.testing.assert_allclose(func.hessian(lambda x: g(x).sum())(x), np.diag(-np.sin(X)))
    xs = tensor(np.stack([X, 2 * X]))
    np.testing.assert_allclose(func.vmap(g)(xs), np.sin(xs.numpy()))
    np.testing.assert_allclose(func.vmap(func.grad(lambda x: g(x).sum()))(xs), np.cos(xs.numpy()))
    np.testing.assert_allclose(func.jvp(g, (x,), (torch.ones(3, dtype=torch.float64),))[1], np.cos(X))


def test_structures_ints_and_none_gradients() -> None:
    g = rtorch.wrap(F.scaled_sum)
    w, b = tensor(1.5, requires_grad=True), tensor(0.25, requires_grad=True)
    a, c = tensor(X, requires_grad=True), tensor([1.0, 2.0], requires_grad=True)
    out = g({"w": w, "b": b}, (a, c), 3)
    (torch.sum(out["y"] ** 2) + out["s"]).backward()
    w2, b2, a2, c2 = (t.detach().clone().requires_grad_() for t in (w, b, a, c))
    ref = 3 * w2 * a2 + b2
    (torch.sum(ref ** 2) + torch.sum(c2 ** 2)).backward()
    for got, want in ((w, w2), (b, b2), (a, a2), (c, c2)):
        np.testing.assert_allclose(got.grad, want.grad)
    x = tensor(X, requires_grad=True)
    (xbar,) = torch.autograd.grad(rtorch.wrap(np.multiply)(x, torch.arange(3)).sum(), x)  # an int tensor
    np.testing.assert_allclose(xbar, np.arange(3))


def test_complex_convention_matches_torch() -> None:
    g = rtorch.wrap(F.abs2)
    z = torch.tensor([1.0 + 2.0j, -0.5 + 0.25j], dtype=torch.complex128, requires_grad=True)
    g(z).sum().backward()
    z2 = z.detach().clone().requires_grad_()
    torch.real(z2 * torch.conj(z2)).sum().backward()
    np.testing.assert_allclose(z.grad, z2.grad)


def test_native_tier_on_tensors() -> None:
    g = rtorch.wrap(F.softsign, native=True)
    x = tensor(X)
    np.testing.assert_allclose(func.grad(lambda x: g(x).sum())(x), 1 / (1 + np.abs(X)) ** 2)
    np.testing.assert_allclose(func.hessian(lambda x: g(x).sum())(x), np.diag(F.softsign_d2(X)))
    np.testing.assert_allclose(func.jacfwd(g)(x), np.diag(1 / (1 + np.abs(X)) ** 2))
    with pytest.raises(TypeError, match="native=True"):
        rtorch.wrap(F.logistic, native=True)(x)


@pytest.mark.parametrize(("f", "ref"), [(np.sin, torch.sin), (np.tanh, torch.tanh), (np.arctan, torch.atan)])
def test_library_ufuncs_run_on_tensors(f, ref) -> None:
    g = rtorch.wrap(f, native=True)
    x = tensor(X)
    want = func.hessian(lambda x: ref(x).sum())(x)
    np.testing.assert_allclose(func.hessian(lambda x: g(x).sum())(x), want, rtol=1e-12)
    np.testing.assert_allclose(func.vmap(func.grad(lambda x: g(x).sum()))(x[:, None]),
                               func.vmap(func.grad(lambda x: ref(x).sum()))(x[:, None]), rtol=1e-12)
    y = x.clone().requires_grad_()
    (dy,) = torch.autograd.grad(g(y).sum(), y, create_graph=True)
    (d2,) = torch.autograd.grad(dy.sum(), y)
    np.testing.assert_allclose(d2, want.diagonal(), rtol=1e-12)


def test_library_binary_ufunc_on_tensors_sums_broadcast_cotangents() -> None:
    g = rtorch.wrap(np.maximum, native=True)
    x, y = tensor(X).requires_grad_(), torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
    g(x, y).sum().backward()
    np.testing.assert_allclose(x.grad, X > 0)
    np.testing.assert_allclose(y.grad, np.sum(X < 0))


@pytest.mark.parametrize("f", [np.sin, F.softsign])
def test_forward_over_forward_raises_instead_of_returning_zeros(f) -> None:
    g = rtorch.wrap(f)
    with pytest.raises(NotImplementedError, match="forward over forward"):
        func.jacfwd(func.jacfwd(g))(tensor(X))


@pytest.mark.parametrize(("f", "kwargs", "ref"), [
    (np.sum, {"axis": 1}, lambda v, axis: v.sum(dim=axis)), (np.mean, {}, torch.mean),
    (np.var, {"axis": 0, "ddof": 1}, lambda v, axis, ddof: torch.var(v, dim=axis, correction=ddof)),
    (np.max, {"axis": 1, "keepdims": True},
     lambda v, axis, keepdims: torch.amax(v, dim=axis, keepdim=keepdims)),
    (np.matmul, {}, torch.matmul)], ids=lambda v: getattr(v, "__name__", ""))
def test_library_reductions_and_matmul_on_tensors(f, kwargs, ref) -> None:
    x = tensor(np.random.default_rng(0).standard_normal((3, 4)))
    args = (x, x.T) if f is np.matmul else (x,)
    g = rtorch.wrap(f, native=True)
    got = func.hessian(lambda *a: torch.sin(g(*a, **kwargs)).sum())(*args)
    np.testing.assert_allclose(got, func.hessian(lambda *a: torch.sin(ref(*a, **kwargs)).sum())(*args),
                               rtol=1e-10, atol=1e-12)


# -- out_shape: the host tier where example values fail (torch.func.vmap has no values) ---------------


def picky_sqrt(x):
    """Fails at the example values (ones, random normals) the host tier would try under vmap."""
    if np.any(np.asarray(x) < 5):
        raise ValueError("picky_sqrt needs x >= 5")
    return np.sqrt(x - 5)


rc.scalar_rule(picky_sqrt, lambda x, result: 0.5 / result)


def picky_stats(x):
    if np.any(np.asarray(x) < 5):
        raise ValueError("picky_stats needs x >= 5")
    return {"mean": np.mean(x), "root": np.sqrt(x - 5)}


@rc.rrule.register(picky_stats)
def picky_stats_rrule(x):
    out = picky_stats(x)

    def picky_stats_pullback(out_bar):
        dmean = out_bar["mean"] / x.size
        droot = out_bar["root"] * 0.5 / out["root"]
        return rc.NoTangent(), dmean + droot

    return out, picky_stats_pullback


XS = np.array([[6.0, 7.0, 9.0], [14.0, 5.5, 30.0]])


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("out_shape", [lambda x: x,
                                       lambda x: torch.empty(x.shape, dtype=x.dtype, device="meta")],
                         ids=["the-argument", "a-meta-tensor"])
def test_out_shape_makes_vmap_of_a_host_function_work(out_shape, dtype) -> None:
    x = tensor(XS, dtype=dtype)
    with pytest.raises(TypeError, match=r"out_shape=\.\.\."):
        func.vmap(rtorch.wrap(picky_sqrt))(x)
    g = rtorch.wrap(picky_sqrt, out_shape=out_shape)
    y = func.vmap(g)(x)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, np.sqrt(XS - 5), rtol=1e-6)
    grads = func.vmap(func.grad(lambda v: g(v).sum()))(x)
    np.testing.assert_allclose(grads, 0.5 / np.sqrt(XS - 5), rtol=1e-6)


def test_out_shape_for_a_dict_output_as_a_fixed_spec() -> None:
    spec = {"mean": np.empty((), np.float64), "root": torch.empty(3, dtype=torch.float64, device="meta")}
    g = rtorch.wrap(picky_stats, out_shape=spec)
    x = tensor(XS)
    out = func.vmap(g)(x)
    np.testing.assert_allclose(out["mean"], XS.mean(axis=1))
    grads = func.vmap(func.grad(lambda v: g(v)["mean"] + g(v)["root"].sum()))(x)
    np.testing.assert_allclose(grads, 1 / 3 + 0.5 / np.sqrt(XS - 5))


def test_a_wrong_out_shape_is_an_error_not_a_reshape() -> None:
    g = rtorch.wrap(picky_sqrt, out_shape=lambda x: torch.empty((2,), dtype=x.dtype, device="meta"))
    with pytest.raises(ValueError, match="picky_sqrt returned outputs of"):
        func.vmap(g)(tensor(XS))


@pytest.mark.parametrize("f, derivative", [(np.sin, np.cos), (F.softsign, None), (F.logistic, None)])
def test_forward_mode_outside_torch_func(f, derivative) -> None:
    """``torch.autograd.forward_ad`` is no ``torch.func`` transform: a call there takes the plain
    path (a ``forward(ctx, ...)`` Function), whose ``jvp`` reads the inputs its forward saved."""
    import torch.autograd.forward_ad as fwAD

    g = rtorch.wrap(f)
    x = tensor(X)
    g(x)  # the plain path's op, kept for the dual call below
    (want,) = torch.autograd.functional.jvp(g, x, torch.ones_like(x))[1:]
    with fwAD.dual_level():
        y = g(fwAD.make_dual(x, torch.ones_like(x)))
        tangent = fwAD.unpack_dual(y).tangent
    np.testing.assert_allclose(tangent, want if derivative is None else derivative(X), rtol=1e-12)


def test_plain_and_torch_func_paths_agree_to_second_order() -> None:
    """The plain path (``.backward``, ``create_graph=True``) and ``torch.func``'s transforms run
    the op through two Function classes: the same first and second derivatives."""
    g = rtorch.wrap(F.softsign)
    x = tensor(X, requires_grad=True)
    (dx,) = torch.autograd.grad(g(x).sum(), x, create_graph=True)
    (ddx,) = torch.autograd.grad(dx.sum(), x)
    first = func.grad(lambda v: g(v).sum())
    np.testing.assert_allclose(dx.detach(), first(x.detach()), rtol=1e-12)
    np.testing.assert_allclose(ddx, func.grad(lambda v: first(v).sum())(x.detach()), rtol=1e-12)
    assert g(x).grad_fn is not None and rtorch._PlainCall.__name__ in type(g(x).grad_fn).__name__
