"""What ``rulescore.interop`` costs over each system's own implementation: one gradient call.

For JAX and PyTorch, times the gradient of ``sum(f(x))`` for ``f = np.sin`` wrapped by the
exporter (the library's rule; native tier: its operations are JAX's / PyTorch's own) against the
system's own ``sin``, and, for the host tier, a NumPy function with a NumPy rule (``logistic``,
run through ``jax.pure_callback`` / a host round trip) against the same function written in the
system. JAX is timed eagerly and under ``jax.jit`` (compiled once, before timing); PyTorch
eagerly (``.backward()``). Process CPU time, median of repeats (steadier on a shared machine).

    python bench/interop_overhead.py [--n 1000] [--size 1000]
"""

from __future__ import annotations

import argparse
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


def per_call(fn: Callable[[], Any], n: int, repeats: int = 5) -> float:
    """Median CPU seconds per call of ``fn`` (``n`` calls per repeat, after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        times.append((time.process_time() - t0) / n)
    return statistics.median(times)


def jax_rows(x: np.ndarray, n: int) -> list[tuple[str, float, float]]:
    import jax
    import jax.numpy as jnp

    import rulescore.interop.jax as rjax

    jax.config.update("jax_enable_x64", True)
    xj = jnp.asarray(x)
    rows = []
    for label, wrapped, own in [
        ("np.sin (native tier) vs jnp.sin", rjax.wrap(np.sin), jnp.sin),
        ("logistic (host tier) vs jax.nn.sigmoid", rjax.wrap(logistic), jax.nn.sigmoid),
    ]:
        g_wrapped = jax.grad(lambda v, w=wrapped: jnp.sum(w(v)))
        g_own = jax.grad(lambda v, o=own: jnp.sum(o(v)))
        for mode, transform in (("eager", lambda g: g), ("jit", jax.jit)):
            a, b = transform(g_wrapped), transform(g_own)
            np.testing.assert_allclose(a(xj), b(xj), rtol=1e-12)
            rows.append((f"JAX {mode}: {label}", per_call(lambda a=a: a(xj).block_until_ready(), n),
                         per_call(lambda b=b: b(xj).block_until_ready(), n)))
    return rows


def torch_rows(x: np.ndarray, n: int) -> list[tuple[str, float, float]]:
    import torch

    import rulescore.interop.torch as rtorch

    xt = torch.tensor(x)
    rows = []
    for label, wrapped, own in [
        ("np.sin (native tier) vs torch.sin", rtorch.wrap(np.sin), torch.sin),
        ("logistic (host tier) vs torch.sigmoid", rtorch.wrap(logistic), torch.sigmoid),
    ]:
        def grad(fn: Callable[[Any], Any]) -> Any:
            v = xt.clone().requires_grad_()
            fn(v).sum().backward()
            return v.grad

        np.testing.assert_allclose(grad(wrapped), grad(own), rtol=1e-12)
        rows.append((f"PyTorch eager: {label}", per_call(lambda w=wrapped: grad(w), n),
                     per_call(lambda o=own: grad(o), n)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="gradient calls per repeat")
    parser.add_argument("--size", type=int, default=1000, help="length of x")
    args = parser.parse_args()
    x = np.random.default_rng(0).uniform(-2.0, 2.0, args.size)
    rows = jax_rows(x, args.n) + torch_rows(x, args.n)
    print(f"| gradient of sum(f(x)), x of {args.size} float64 | wrapped | own | ratio |")
    print("|---|---|---|---|")
    for label, wrapped, own in rows:
        print(f"| {label} | {wrapped * 1e6:.1f} µs | {own * 1e6:.1f} µs | {wrapped / own:.2f} |")


if __name__ == "__main__":
    main()
