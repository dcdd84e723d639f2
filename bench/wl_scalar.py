"""Workload 1, scalar chain: ``y = sin(y) * x + 0.1`` 100 times on Python floats, d/dx.

Per-operation overhead: 300 scalar operations, each a few nanoseconds of real work.
"""

from __future__ import annotations

import math

import numpy as np
from harness import (
    AUTOGRAD,
    HAND,
    JAX_EAGER,
    JAX_JIT,
    TORCH,
    ZYGOTE,
    Case,
    Config,
    Section,
    Table,
    Target,
    compare,
    missing_systems,
    peers,
)

STEPS = 100
X0 = 0.7
NP_VARIANT = "zp.gradient, np.sin"


def chain(x: float) -> float:
    y = x
    for _ in range(STEPS):
        y = math.sin(y) * x + 0.1
    return y


def np_chain(x: float) -> float:
    """The same chain written with ``np.sin`` (what users write when they use ``np`` everywhere):
    NumPy returns ``np.float64`` scalars, which the engine must keep as fast as floats."""
    y = x
    for _ in range(STEPS):
        y = np.sin(y) * x + 0.1
    return y


def chain_grad(x: float) -> float:
    """Hand-written reverse mode: keep the forward values, sweep back once."""
    ys = [x]
    y = x
    for _ in range(STEPS):
        y = math.sin(y) * x + 0.1
        ys.append(y)
    gy, gx = 1.0, 0.0
    for i in range(STEPS, 0, -1):
        yp = ys[i - 1]
        gx += gy * math.sin(yp)
        gy *= x * math.cos(yp)
    return gx + gy  # y0 = x


def _cases(cfg: Config) -> list[Case]:
    cases = [Case(HAND, "math.sin, reverse sweep", lambda: chain_grad(X0))]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        cases.append(Case(ZYGOTE, "zp.gradient, math.sin", lambda: zp.gradient(chain, X0)[0]))
        cases.append(Case(ZYGOTE, NP_VARIANT, lambda: zp.gradient(np_chain, X0)[0]))
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        def chain_ag(x: float) -> float:
            y = x
            for _ in range(STEPS):
                y = anp.sin(y) * x + 0.1
            return y

        ag_grad = autograd.grad(chain_ag)
        cases.append(Case(AUTOGRAD, "autograd.grad, anp.sin", lambda: ag_grad(X0)))
    if cfg.wants(TORCH):
        torch = peers.torch

        def torch_grad() -> float:
            x = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
            y = x
            for _ in range(STEPS):
                y = torch.sin(y) * x + 0.1
            (g,) = torch.autograd.grad(y, x)
            return g.item()

        cases.append(Case(TORCH, "0-d float64 tensor, autograd.grad", torch_grad))
    if cfg.wants(JAX_EAGER):
        jax = peers.jax
        import jax.numpy as jnp

        def chain_jnp(x: float) -> float:
            y = x
            for _ in range(STEPS):
                y = jnp.sin(y) * x + 0.1
            return y

        jgrad = jax.grad(chain_jnp)
        cases.append(Case(JAX_EAGER, "jax.grad", lambda: float(jgrad(X0))))
        if cfg.wants(JAX_JIT):
            jitted = jax.jit(jgrad)
            cases.append(
                Case(
                    JAX_JIT,
                    "jax.jit(jax.grad)",
                    lambda: float(jitted(X0)),
                    note="compiled once, before timing",
                )
            )
    return cases


def run(cfg: Config) -> Section:
    section = Section(
        "scalar",
        "1. Scalar chain (per-op overhead)",
        f"`y = sin(y) * x + 0.1` repeated {STEPS} times on Python floats, gradient with respect "
        "to x at x = 0.7; the result is returned as a Python float by every system. zygotepy runs "
        "it twice: with `math.sin`, and with `np.sin` as users write it when they use `np` "
        "everywhere (NumPy then returns `np.float64` scalars).",
    )
    table = compare("scalar chain, d/dx", _cases(cfg), cfg, rtol=1e-9, missing=missing_systems(cfg))
    section.tables.append(table)
    zp_time, torch_time = table.value(ZYGOTE), table.value(TORCH)
    np_time = table.value(ZYGOTE, NP_VARIANT)
    section.targets += [
        _within(table, None, "zygotepy within 100x of hand-written Python", 100),
        Target(
            "zygotepy faster than torch eager",
            "-"
            if zp_time is None or torch_time is None
            else f"zygotepy / torch = {zp_time / torch_time:.3f}",
            None if zp_time is None or torch_time is None else zp_time < torch_time,
        ),
        _faster_than_autograd(table, zp_time, "zygotepy 5x faster than autograd", 5),
        _within(table, NP_VARIANT, "np.sin chain: zygotepy within 60x of hand-written Python", 60),
        _faster_than_autograd(table, np_time, "np.sin chain: zygotepy 4x faster than autograd", 4),
    ]
    return section


def _within(table: Table, variant: str | None, goal: str, limit: float) -> Target:
    ratio = table.ratio(ZYGOTE, variant)
    return Target(goal, "-" if ratio is None else f"{ratio:.0f}x", None if ratio is None else ratio <= limit)


def _faster_than_autograd(table: Table, zp_time: float | None, goal: str, factor: float) -> Target:
    ag_time = table.value(AUTOGRAD)
    if zp_time is None or ag_time is None:
        return Target(goal, "-", None)
    return Target(goal, f"autograd / zygotepy = {ag_time / zp_time:.2f}", ag_time / zp_time >= factor)
