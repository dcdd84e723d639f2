"""Workload 3, BLAS-bound: ``sum(tanh(A @ C) @ C)`` with 1024x1024 float64 matrices, d/dA.

Each 1024^3 product is ~2.1 GFLOP, so per-operation overhead is invisible and the figure
measures how many products (and temporaries) each system spends. Hand-written: 3 products
(``A @ C`` and ``T @ C`` for the value, ``dZ @ C.T`` for the gradient; ``ones @ C.T`` is a
broadcast of ``C``'s row sums).
"""

from __future__ import annotations

from typing import Any

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
    Target,
    compare,
    missing_systems,
    peers,
)


def make_data(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal((n, n)) / np.sqrt(n)


def f(A: Any, C: Any) -> Any:
    return np.sum(np.tanh(A @ C) @ C)


def f_grad(A: np.ndarray, C: np.ndarray) -> np.ndarray:
    T = np.tanh(A @ C)
    _value = np.sum(T @ C)  # noqa: F841  (computed, as every AD system does)
    dT = C.sum(axis=1)  # d sum(T @ C) / dT = ones @ C.T: every row is C's row sums
    dZ = (1.0 - T * T) * dT
    return dZ @ C.T


def _cases(cfg: Config, n: int) -> list[Case]:
    A, C = make_data(n)
    cases = [Case(HAND, "NumPy, 3 matmuls", lambda: f_grad(A, C))]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        cases.append(Case(ZYGOTE, "zp.gradient(argnums=0)", lambda: zp.gradient(f, A, C, argnums=0)[0]))
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        ag_grad = autograd.grad(lambda A, C: anp.sum(anp.tanh(A @ C) @ C))
        cases.append(Case(AUTOGRAD, "autograd.grad", lambda: ag_grad(A, C)))
    if cfg.wants(TORCH):
        torch = peers.torch
        tC = torch.from_numpy(C)
        tA = torch.from_numpy(A.copy()).requires_grad_()

        def torch_grad() -> Any:
            value = torch.sum(torch.tanh(tA @ tC) @ tC)
            return torch.autograd.grad(value, tA)[0]

        cases.append(Case(TORCH, "torch.autograd.grad", torch_grad))
    if cfg.wants(JAX_EAGER):
        jax = peers.jax
        import jax.numpy as jnp

        jA, jC = jnp.asarray(A), jnp.asarray(C)
        jgrad = jax.grad(lambda A, C: jnp.sum(jnp.tanh(A @ C) @ C))
        cases.append(Case(JAX_EAGER, "jax.grad", lambda: jgrad(jA, jC).block_until_ready()))
        if cfg.wants(JAX_JIT):
            jitted = jax.jit(jgrad)
            cases.append(
                Case(
                    JAX_JIT,
                    "jax.jit(jax.grad)",
                    lambda: jitted(jA, jC).block_until_ready(),
                    note="compiled once, before timing",
                )
            )
    return cases


def run(cfg: Config, n: int = 1024) -> Section:
    section = Section(
        "big",
        "3. Big matrices (BLAS-bound)",
        f"`sum(tanh(A @ C) @ C)` with {n}x{n} float64 A and C, gradient with respect to A. "
        "The hand-written gradient spends 3 matrix products (two for the value, one for the "
        "gradient).",
    )
    table = compare(
        f"sum(tanh(A @ C) @ C), {n}x{n}, d/dA", _cases(cfg, n), cfg, rtol=1e-9, missing=missing_systems(cfg)
    )
    section.tables.append(table)
    ratio = table.ratio(ZYGOTE)
    section.targets.append(
        Target(
            f"zygotepy within 1.05x of hand-written NumPy (big, n={n})",
            "-" if ratio is None else f"{ratio:.2f}x",
            None if ratio is None else ratio <= 1.05,
        )
    )
    return section
