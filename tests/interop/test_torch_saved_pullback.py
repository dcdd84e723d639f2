"""rulescore.interop.torch's native tier keeps the forward pass's pullback for ``backward``: the rrule
runs once per first-order gradient, the gradient matches finite differences, double backward and
``torch.func`` (which run the rrule again so PyTorch differentiates it) stay right, and an input or
output modified in place before ``backward`` is refused as PyTorch refuses it for saved tensors."""

from __future__ import annotations

import collections
import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
from torch import func  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

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
        return rc.NoTangent(), rc.project(x, ybar * a * c), rc.project(a, ybar * s)  # a may be broadcast

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


def cube_via_output(x):
    return x * x * x


@rc.rrule.register(cube_via_output)
def cube_via_output_rrule(x):
    RRULE_CALLS["cube_via_output"] += 1
    y = cube_via_output(x)

    def cube_via_output_pullback(ybar):
        return rc.NoTangent(), 3 * ybar * y / x  # reads the output: 3 x^2

    return y, cube_via_output_pullback


# (function, number of tensor arguments, scalar loss of its outputs, second derivative of the loss)
CASES = {
    "softplus": (softplus, 1, lambda y: (y ** 2).sum()),
    "scaled_sin": (scaled_sin, 2, lambda y: (y ** 2).sum()),
    "sin_cos": (sin_cos, 1, lambda y: (y[0] * y[1]).sum()),
    "cube_via_output": (cube_via_output, 1, lambda y: y.sum()),
}


def _loss_np(name, *xs):
    f, _, loss = CASES[name]
    return float(loss(rtorch.wrap(f)(*(torch.tensor(x) for x in xs))))


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(sorted(CASES)), n=st.integers(1, 6), seed=st.integers(0, 2 ** 16))
def test_first_order_runs_the_rrule_once_and_matches_finite_differences(name, n, seed) -> None:
    f, n_args, loss = CASES[name]
    xs = [np.random.default_rng(seed + k).uniform(0.5, 1.5, n) for k in range(n_args)]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    g = rtorch.wrap(f)
    g(*ts)  # the first call at these shapes also finds the op (its rule tried on meta tensors)
    before = RRULE_CALLS[name]
    y = g(*ts)
    assert RRULE_CALLS[name] - before == 1  # the forward pass is the rrule's
    loss(y).backward()
    assert RRULE_CALLS[name] - before == 1  # backward used the pullback the forward pass kept
    for k, t in enumerate(ts):
        def partial(v, k=k):
            return _loss_np(name, *(v if j == k else xs[j] for j in range(n_args)))
        np.testing.assert_allclose(t.grad.numpy(), fd(partial, xs[k]), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_runs_the_rrule_again_and_is_right(name) -> None:
    f, n_args, loss = CASES[name]
    xs = [np.random.default_rng(k).uniform(0.5, 1.5, 4) for k in range(n_args)]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    g = rtorch.wrap(f)
    grads = torch.autograd.grad(loss(g(*ts)), ts, create_graph=True)
    (hvp,) = torch.autograd.grad(grads[0].sum(), ts[0])  # d/dx0 of sum(d loss / d x0)

    def first_grad_sum(v):
        vs = [torch.tensor(v if k == 0 else xs[k], requires_grad=True) for k in range(n_args)]
        (g0,) = torch.autograd.grad(loss(rtorch.wrap(f)(*vs)), vs[0])
        return float(g0.sum())

    np.testing.assert_allclose(hvp.numpy(), fd(first_grad_sum, xs[0]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_func_grad_and_hessian_agree_with_autograd(name) -> None:
    f, n_args, loss = CASES[name]
    xs = [torch.tensor(np.random.default_rng(k).uniform(0.5, 1.5, 3)) for k in range(n_args)]
    g = rtorch.wrap(f)

    def scalar(x0):
        return loss(g(x0, *xs[1:]))

    x0 = xs[0].clone().requires_grad_()
    (want,) = torch.autograd.grad(scalar(x0), x0, create_graph=True)
    np.testing.assert_allclose(func.grad(scalar)(xs[0]).numpy(), want.detach().numpy(), rtol=1e-12)
    rows = [torch.autograd.grad(want[i], x0, retain_graph=True)[0] for i in range(3)]
    np.testing.assert_allclose(func.jacrev(func.grad(scalar))(xs[0]).numpy(), torch.stack(rows).numpy(),
                               rtol=1e-10, atol=1e-12)


def test_backward_twice_with_retain_graph_gives_the_same_gradient() -> None:
    x = torch.tensor([0.2, 0.7], requires_grad=True)
    y = rtorch.wrap(softplus)(x).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy())


@pytest.mark.parametrize("modify", ["input", "output"])
@pytest.mark.parametrize("name", ["softplus", "cube_via_output", "scaled_sin"])
def test_modifying_a_saved_tensor_in_place_is_refused(name, modify) -> None:
    """The kept pullback would read the new values: PyTorch's saved-tensor check refuses instead."""
    f, n_args, loss = CASES[name]
    leaves = [torch.tensor([0.5, 1.0], requires_grad=True) for _ in range(n_args)]
    xs = [leaf * 1.0 for leaf in leaves]  # non-leaf tensors may be modified in place
    y = rtorch.wrap(f)(*xs)
    with torch.no_grad():
        (xs[0] if modify == "input" else y).mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss(y).backward()


# library rules (generic partials rules that read the input, the output, or both arguments) next to
# the authors' rules above (a residual, the output, several outputs)
LIBRARY = {"np.sin": (np.sin, 1), "np.exp": (np.exp, 1), "np.tanh": (np.tanh, 1),
           "np.multiply": (np.multiply, 2), "np.divide": (np.divide, 2)}
NO_CYCLE_CASES = {**{k: (f, n) for k, (f, n, _) in CASES.items()}, **LIBRARY}


@pytest.mark.parametrize("backward", [True, False], ids=["forward and backward", "forward only"])
@pytest.mark.parametrize("name", sorted(NO_CYCLE_CASES))
def test_a_native_gradient_leaves_no_reference_cycle(name, backward) -> None:
    """The kept pullback may hold the rrule's output; the output PyTorch hands out (whose grad_fn's
    context holds that pullback) must not be that tensor, or every call leaves a cycle of tensors
    and graph for the garbage collector: freed here by reference counts alone, gc off."""
    f, n_args = NO_CYCLE_CASES[name]
    g = rtorch.wrap(f)
    xs = [torch.tensor(np.random.default_rng(k).uniform(0.5, 1.5, 5), requires_grad=True)
          for k in range(n_args)]
    g(*xs)  # finds the op
    assert g.tier == "native"
    gc.collect()
    gc.disable()
    try:
        y = g(*xs)
        leaves = list(y) if isinstance(y, tuple) else [y]
        refs = [weakref.ref(v) for v in leaves]
        if backward:
            sum(v.sum() for v in leaves).backward()
        del y, leaves
        alive = [r() is not None for r in refs]
        assert not any(alive), f"{name}: outputs kept alive after the last reference went: {alive}"
        # (Not "a collection now frees nothing": in a full test worker it also frees other tests'
        # cycles that a cache dropped meanwhile, compiled graphs' fake tensors among them.)
    finally:
        gc.enable()


def test_an_rrule_whose_primal_is_not_the_functions_says_so() -> None:
    def halved(x):
        xp = rc.array_namespace(x)
        return xp.sin(x) / 2

    @rc.rrule.register(halved)
    def halved_rrule(x):
        xp = rc.array_namespace(x)
        return xp.reshape(xp.sin(x), (-1, 1)), lambda ybar: (rc.NoTangent(), ybar)  # wrong shape

    with pytest.raises(ValueError, match="the rrule of .*halved returns outputs"):
        rtorch.wrap(halved)(torch.ones(3))
