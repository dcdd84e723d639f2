"""What ``rulescore.interop`` costs over each system's own implementation: one gradient call.

Times the gradient of ``sum(f(x))``, side by side in one run:

- JAX, eagerly and under ``jax.jit`` (compiled once, before timing): ``np.sin`` wrapped by the
  exporter (the library's rule; native tier: its operations are JAX's own) and ``user_sin`` (a
  rule as an author writes it with ``rc.array_namespace``) against a hand-written
  ``jax.custom_vjp`` of ``sin`` and against ``jnp.sin``; the host tier (``logistic``, a NumPy
  function with a NumPy rule, through ``jax.pure_callback``) against ``jax.nn.sigmoid``.
- PyTorch, eagerly (``.backward()``), at each ``--sizes``: the native tier (``np.sin``,
  ``user_sin``) against a hand-written ``torch.autograd.Function`` in the ``setup_context``
  style (the one ``torch.func`` needs; the older ``forward(ctx, ...)`` style is shown too), and
  the host tier against ``torch.sigmoid``.
- The floor of the PyTorch native tier: the same hand-written Function calling ``np.sin``'s
  registered rrule and the pullback it returned, with no rulescore machinery (what no exporter
  can go below while it runs the library's rule).
- ``torch.compile(fullgraph=True)`` of the native tier (one ``rulescore::call`` operator)
  against the same compiled hand-written Function (``--backend``, ``aot_eager`` by default:
  no C compiler needed).

Process CPU time per call; ``--rounds`` rounds, each timing every row in turn (the pairs are
interleaved, so a change in the machine's load reaches both sides of a ratio), median of the rounds,
and the ratio of the two sides' fastest rounds.

    python bench/interop_overhead.py [--n 200] [--rounds 7] [--sizes 10,100,1000] [--backend aot_eager]
                                     [--threads 1]

On a loaded machine PyTorch's intra-op threads wait for each other (a ``sin`` of 1,000 elements
then costs tens of times its single-thread time, on both sides of a ratio): ``--threads 1``
measures the exporter's own cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import rulescore as rc


def logistic(x: Any) -> Any:
    """A NumPy function with a NumPy rule: the exporters' host tier."""
    return 1 / (1 + np.exp(-x))


rc.scalar_rule(logistic, lambda x, result: result * (1 - result))


def user_sin(x: Any) -> Any:
    """``sin`` as a rule author writes it for every array library (the native tier)."""
    return rc.array_namespace(x).sin(x)


@rc.rrule.register(user_sin)
def user_sin_rrule(x: Any) -> Any:
    xp = rc.array_namespace(x)

    def user_sin_pullback(ybar: Any) -> Any:
        return rc.NoTangent(), ybar * xp.cos(x)

    return xp.sin(x), user_sin_pullback


Row = tuple[str, Callable[[], Any], Callable[[], Any]]  # label, wrapped, reference


def cpu_seconds(fn: Callable[[], Any], n: int) -> float:
    """CPU seconds per call of ``fn`` over ``n`` calls."""
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


def measure(rows: list[Row], n: int, rounds: int) -> list[tuple[str, float, float, float]]:
    """Median per-call time of each side of each row, the rows' timings interleaved per round, and
    the ratio of the two sides' fastest rounds (the machine's load only ever adds time)."""
    for _, a, b in rows:
        a(), b()  # warm-up: caches, compilation
    times: dict[int, tuple[list[float], list[float]]] = {i: ([], []) for i in range(len(rows))}
    for _ in range(rounds):
        for i, (_, a, b) in enumerate(rows):
            times[i][0].append(cpu_seconds(a, n))
            times[i][1].append(cpu_seconds(b, n))
    return [(label, statistics.median(times[i][0]), statistics.median(times[i][1]),
             min(times[i][0]) / min(times[i][1])) for i, (label, _, _) in enumerate(rows)]


def jax_rows(x: np.ndarray) -> list[Row]:
    import jax
    import jax.numpy as jnp

    import rulescore.interop.jax as rjax

    jax.config.update("jax_enable_x64", True)

    @jax.custom_vjp
    def custom_sin(v: Any) -> Any:
        return jnp.sin(v)

    custom_sin.defvjp(lambda v: (jnp.sin(v), v), lambda v, g: (g * jnp.cos(v),))

    xj = jnp.asarray(x)
    rows: list[Row] = []
    for label, wrapped, own in [
        ("np.sin (native) vs custom_vjp", rjax.wrap(np.sin), custom_sin),
        ("user_sin (native) vs custom_vjp", rjax.wrap(user_sin), custom_sin),
        ("np.sin (native) vs jnp.sin", rjax.wrap(np.sin), jnp.sin),
        ("logistic (host) vs jax.nn.sigmoid", rjax.wrap(logistic), jax.nn.sigmoid),
    ]:
        g_wrapped = jax.grad(lambda v, w=wrapped: jnp.sum(w(v)))
        g_own = jax.grad(lambda v, o=own: jnp.sum(o(v)))
        for mode, transform in (("eager", lambda g: g), ("jit", jax.jit)):
            a, b = transform(g_wrapped), transform(g_own)
            np.testing.assert_allclose(a(xj), b(xj), rtol=1e-12)
            rows.append((f"JAX {mode}, {x.size}: {label}", lambda a=a: a(xj).block_until_ready(),
                         lambda b=b: b(xj).block_until_ready()))
    return rows


def torch_functions() -> tuple[Any, Any]:
    """Hand-written ``sin`` as a ``torch.autograd.Function``: the ``setup_context`` style
    (``torch.func`` needs it) and the older ``forward(ctx, ...)`` style."""
    import torch

    class SetupContextSin(torch.autograd.Function):
        @staticmethod
        def forward(v: Any) -> Any:
            return torch.sin(v)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * torch.cos(v)

    class CtxSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, v: Any) -> Any:
            ctx.save_for_backward(v)
            return torch.sin(v)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * torch.cos(v)

    return SetupContextSin.apply, CtxSin.apply


def torch_floor(x: Any) -> Any:
    """The floor of the native tier for ``np.sin``: the same ``setup_context`` Function as the
    hand-written one, its forward calling ``np.sin``'s registered rrule (looked up once, here) and
    its backward the pullback that rrule returned, with no rulescore machinery around them.
    Like the exporter, it hands PyTorch a detached alias of the rrule's output: a pullback that
    holds its output would otherwise form a reference cycle through the output's ``grad_fn``
    (the hand-written Function saves its input with ``save_for_backward``, which PyTorch keeps
    without a cycle, and computes ``cos`` in ``backward``, as the rule's pullback does)."""
    import torch

    rule = rc.rrule.lookup(np.sin, (x,))
    assert rule is not None and rule.impl is not None
    kept: list[Any] = []

    class RuleSin(torch.autograd.Function):
        @staticmethod
        def forward(v: Any) -> Any:
            y, pullback = rule.impl(v)
            kept.append(pullback)
            return y.detach()

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.pullback = kept.pop()
            ctx.save_for_backward(inputs[0], output)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            ctx.saved_tensors  # noqa: B018 (PyTorch's check of in-place changes, as the exporter's)
            return ctx.pullback(g)[1]

    return RuleSin.apply


def torch_rows(sizes: list[int]) -> list[Row]:
    import torch

    import rulescore.interop.torch as rtorch

    setup_context_sin, ctx_sin = torch_functions()
    rows: list[Row] = []
    for size in sizes:
        xt = torch.tensor(np.random.default_rng(0).uniform(-2.0, 2.0, size))

        def grad(fn: Callable[[Any], Any], xt: Any = xt) -> Any:
            v = xt.clone().requires_grad_()
            fn(v).sum().backward()
            return v.grad

        pairs = [
            ("np.sin (native) vs autograd.Function", rtorch.wrap(np.sin), setup_context_sin),
            ("np.sin floor (its rule in an autograd.Function) vs autograd.Function", torch_floor(xt),
             setup_context_sin),
            ("user_sin (native) vs autograd.Function", rtorch.wrap(user_sin), setup_context_sin),
            ("user_sin (native) vs autograd.Function, ctx style", rtorch.wrap(user_sin), ctx_sin),
        ]
        if size == max(sizes):
            pairs.append(("logistic (host) vs torch.sigmoid", rtorch.wrap(logistic), torch.sigmoid))
        for label, wrapped, own in pairs:
            np.testing.assert_allclose(grad(wrapped), grad(own), rtol=1e-12)
            rows.append((f"PyTorch eager, {size}: {label}", lambda w=wrapped, g=grad: g(w),
                         lambda o=own, g=grad: g(o)))
    return rows


def compile_rows(size: int, backend: str) -> list[Row]:
    import torch

    import rulescore.interop.torch as rtorch

    setup_context_sin, _ = torch_functions()
    xt = torch.tensor(np.random.default_rng(0).uniform(-2.0, 2.0, size))
    rows: list[Row] = []
    for label, wrapped in [("np.sin (native)", rtorch.wrap(np.sin)),
                           ("user_sin (native)", rtorch.wrap(user_sin)),
                           ("logistic (host)", rtorch.wrap(logistic))]:
        own = torch.sigmoid if wrapped.__name__ == "logistic" else setup_context_sin
        compiled_wrapped = torch.compile(lambda v, w=wrapped: w(v).sum(), fullgraph=True, backend=backend)
        compiled_own = torch.compile(lambda v, o=own: o(v).sum(), fullgraph=True, backend=backend)

        def grad(fn: Callable[[Any], Any]) -> Any:
            v = xt.clone().requires_grad_()
            return torch.autograd.grad(fn(v), v)[0]

        np.testing.assert_allclose(grad(compiled_wrapped), grad(compiled_own), rtol=1e-12)
        reference = "torch.sigmoid" if own is torch.sigmoid else "autograd.Function"
        rows.append((f"torch.compile({backend}, fullgraph), {size}: {label} vs {reference}",
                     lambda c=compiled_wrapped: grad(c), lambda c=compiled_own: grad(c)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="gradient calls per timing")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median reported)")
    parser.add_argument("--sizes", default="10,100,1000", help="lengths of x for PyTorch")
    parser.add_argument("--size", type=int, default=1000, help="length of x for JAX and torch.compile")
    parser.add_argument("--backend", default="aot_eager", help="torch.compile backend")
    parser.add_argument("--threads", type=int, default=None,
                        help="PyTorch's intra-op threads (default: PyTorch's own choice)")
    args = parser.parse_args()
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    x = np.random.default_rng(0).uniform(-2.0, 2.0, args.size)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = jax_rows(x) + torch_rows(sizes) + compile_rows(args.size, args.backend)
    import torch

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, PyTorch threads: {torch.get_num_threads()}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    results = measure(rows, args.n, args.rounds)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print("| gradient of sum(f(x)), x float64 | wrapped | own | ratio | ratio of minima |")
    print("|---|---|---|---|---|")
    for label, wrapped, own, of_minima in results:
        print(f"| {label} | {wrapped * 1e6:.1f} µs | {own * 1e6:.1f} µs | {wrapped / own:.2f} "
              f"| {of_minima:.2f} |")


if __name__ == "__main__":
    main()
