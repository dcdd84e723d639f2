"""rulescore.interop.torch under ``torch.compile``: a wrapped function, native or host tier, is one
custom operator (``rulescore::call``), so ``fullgraph=True`` compiles with no graph break and the
gradients are the rules'. The ``aot_eager`` backend runs AOT autograd (the custom operator's fake
implementation and its autograd formula) without a C compiler; inductor needs one and minutes."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")

import rulescore as rc  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402
from tests.interop.test_torch_saved_pullback import CASES, scaled_sin, sin_cos, softplus  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402


def logistic(x):
    """A NumPy function with a NumPy rule: the host tier."""
    return 1 / (1 + np.exp(-x))


rc.scalar_rule(logistic, lambda x, result: result * (1 - result))


def logistic_pair(x, y):
    """Two NumPy outputs of two arguments (host tier)."""
    return np.tanh(x) * y, np.exp(-x * y)


@rc.rrule.register(logistic_pair)
def logistic_pair_rrule(x, y):
    t, e = np.tanh(x), np.exp(-x * y)

    def logistic_pair_pullback(ybar):
        a, b = ybar
        return rc.NoTangent(), a * (1 - t ** 2) * y - b * e * y, a * t - b * e * x

    return (t * y, e), logistic_pair_pullback


COMPILED_CASES = {
    "np.sin (native, library rule)": (np.sin, 1, lambda y: (y * y).sum(), "native"),
    "softplus (native)": (softplus, 1, CASES["softplus"][2], "native"),
    "scaled_sin (native, two arguments)": (scaled_sin, 2, CASES["scaled_sin"][2], "native"),
    "sin_cos (native, two outputs)": (sin_cos, 1, CASES["sin_cos"][2], "native"),
    "logistic (host)": (logistic, 1, lambda y: (y * y).sum(), "host"),
    "logistic_pair (host, two outputs)": (logistic_pair, 2, lambda y: (y[0] * y[1]).sum(), "host"),
}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", sorted(COMPILED_CASES))
def test_fullgraph_compiles_and_the_gradient_is_the_rules(name) -> None:
    f, n_args, loss, tier = COMPILED_CASES[name]
    g = rtorch.wrap(f)
    xs = [np.random.default_rng(k).uniform(0.3, 1.2, 4) for k in range(n_args)]

    def objective(*ts):
        return loss(g(*ts))

    explained = torch._dynamo.explain(objective)(*(torch.tensor(x) for x in xs))
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    torch._dynamo.reset()
    compiled = torch.compile(objective, fullgraph=True, backend="aot_eager")
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    value = compiled(*ts)
    grads = torch.autograd.grad(value, ts)
    assert g.explain(*ts).split(": ")[1] == f"the {tier} tier"
    np.testing.assert_allclose(float(value), float(objective(*(torch.tensor(x) for x in xs))), rtol=1e-12)
    for k, grad in enumerate(grads):
        def partial(v, k=k):
            return float(objective(*(torch.tensor(v if j == k else xs[j]) for j in range(n_args))))
        np.testing.assert_allclose(grad.numpy(), fd(partial, xs[k]), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [np.sin, logistic], ids=["native", "host"])
def test_a_compiled_function_follows_new_shapes_and_dtypes(f) -> None:
    g = rtorch.wrap(f)
    compiled = torch.compile(lambda x: g(x).sum(), fullgraph=True, backend="aot_eager")
    for n, dtype in [(3, torch.float64), (5, torch.float64), (7, torch.float64), (4, torch.float32)]:
        x = torch.linspace(0.1, 1.0, n, dtype=dtype, requires_grad=True)
        (grad,) = torch.autograd.grad(compiled(x), x)
        eager_x = x.detach().clone().requires_grad_()
        g(eager_x).sum().backward()
        assert grad.dtype == dtype
        torch.testing.assert_close(grad, eager_x.grad)


@pytest.mark.exhaustive  # (15 s of compiling: with --exhaustive)
def test_a_call_with_containers_breaks_the_graph_and_stays_right() -> None:
    def weighted(params, x):
        xp = rc.array_namespace(x)
        return params["w"] * xp.sin(x)

    @rc.rrule.register(weighted)
    def weighted_rrule(params, x):
        xp = rc.array_namespace(x)
        s = xp.sin(x)
        return params["w"] * s, lambda ybar: (rc.NoTangent(), {"w": ybar * s}, ybar * params["w"] * xp.cos(x))

    g = rtorch.wrap(weighted)
    w = torch.tensor([2.0, 3.0], requires_grad=True)
    x = torch.tensor([0.4, 0.9], requires_grad=True)
    compiled = torch.compile(lambda w, x: g({"w": w}, x).sum(), backend="aot_eager")
    dw, dx = torch.autograd.grad(compiled(w, x), (w, x))
    np.testing.assert_allclose(dw.numpy(), np.sin([0.4, 0.9]))
    np.testing.assert_allclose(dx.numpy(), np.array([2.0, 3.0]) * np.cos([0.4, 0.9]))
