"""Workload 7, Jacobian of R^100 -> R^100 and Hessian of R^100 -> R, forward vs reverse.

``g(x) = tanh(W @ x) * x`` (Jacobian) and ``h(x) = sum(tanh(W @ x))`` (Hessian), W 100x100.
Hand-written: the closed forms ``diag(1 - t^2) W diag(x) + diag(t)`` and
``W.T diag(-2 t (1 - t^2)) W``. zygotepy: ``zp.jacobian(mode="forward")`` (frules, 64 directions
per pass) vs ``mode="reverse"`` (one pullback per output), ``zp.hessian`` (forward-over-reverse)
vs ``zp.hessian_reverse`` (reverse-over-reverse); the peers' equivalents alongside.
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

N = 100


def make_data(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, N)) / np.sqrt(N), rng.standard_normal(N)


def jacobian_hand(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(W @ x)
    J = ((1.0 - t * t) * x)[:, None] * W
    J[np.diag_indices(N)] += t
    return J


def hessian_hand(W: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(W @ x)
    return W.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * W)


def _jacobian_cases(cfg: Config, W: np.ndarray, x: np.ndarray) -> list[Case]:
    cases = [Case(HAND, "closed form", lambda: jacobian_hand(W, x))]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        def g(v: Any) -> Any:
            return np.tanh(W @ v) * v

        for mode, note in (("forward", "zp.jacobian(mode='forward'), chunk 64"),
                           ("reverse", "zp.jacobian(mode='reverse')")):
            cases.append(Case(ZYGOTE, mode, lambda mode=mode: zp.jacobian(g, x, mode=mode)[0], note=note))
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        jac = autograd.jacobian(lambda v: anp.tanh(W @ v) * v)
        cases.append(Case(AUTOGRAD, "reverse", lambda: jac(x), note="autograd.jacobian"))
    if cfg.wants(TORCH):
        torch = peers.torch
        from torch.func import jacfwd, jacrev

        tW, tx = torch.from_numpy(W), torch.from_numpy(x)

        def tg(v: Any) -> Any:
            return torch.tanh(tW @ v) * v

        cases.append(Case(TORCH, "forward", lambda: jacfwd(tg)(tx), note="torch.func.jacfwd (vmap)"))
        cases.append(Case(TORCH, "reverse", lambda: jacrev(tg)(tx), note="torch.func.jacrev (vmap)"))
    if cfg.wants(JAX_EAGER):
        jax = peers.jax
        import jax.numpy as jnp

        jW, jx = jnp.asarray(W), jnp.asarray(x)

        def jg(v: Any) -> Any:
            return jnp.tanh(jW @ v) * v

        for system, wrap in ((JAX_EAGER, lambda fn: fn), (JAX_JIT, jax.jit)):
            if not cfg.wants(system):
                continue
            fwd, rev = wrap(jax.jacfwd(jg)), wrap(jax.jacrev(jg))
            cases.append(
                Case(system, "forward", lambda fwd=fwd: fwd(jx).block_until_ready(), note="jax.jacfwd")
            )
            cases.append(
                Case(system, "reverse", lambda rev=rev: rev(jx).block_until_ready(), note="jax.jacrev")
            )
    return cases


def _hessian_cases(cfg: Config, W: np.ndarray, x: np.ndarray) -> list[Case]:
    cases = [Case(HAND, "closed form", lambda: hessian_hand(W, x))]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        def h(v: Any) -> Any:
            return np.sum(np.tanh(W @ v))

        cases.append(Case(ZYGOTE, "forward-over-reverse", lambda: zp.hessian(h, x), note="zp.hessian"))
        cases.append(
            Case(ZYGOTE, "reverse-over-reverse", lambda: zp.hessian_reverse(h, x), note="zp.hessian_reverse")
        )
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        hess = autograd.hessian(lambda v: anp.sum(anp.tanh(W @ v)))
        cases.append(Case(AUTOGRAD, "reverse-over-reverse", lambda: hess(x), note="autograd.hessian"))
    if cfg.wants(TORCH):
        torch = peers.torch
        from torch.func import hessian, jacrev

        tW, tx = torch.from_numpy(W), torch.from_numpy(x)

        def th(v: Any) -> Any:
            return torch.sum(torch.tanh(tW @ v))

        cases.append(Case(TORCH, "forward-over-reverse", lambda: hessian(th)(tx), note="torch.func.hessian"))
        cases.append(
            Case(
                TORCH,
                "reverse-over-reverse",
                lambda: jacrev(jacrev(th))(tx),
                note="torch.func.jacrev(jacrev)",
            )
        )
    if cfg.wants(JAX_EAGER):
        jax = peers.jax
        import jax.numpy as jnp

        jW, jx = jnp.asarray(W), jnp.asarray(x)

        def jh(v: Any) -> Any:
            return jnp.sum(jnp.tanh(jW @ v))

        for system, wrap in ((JAX_EAGER, lambda fn: fn), (JAX_JIT, jax.jit)):
            if not cfg.wants(system):
                continue
            fwd, rev = wrap(jax.hessian(jh)), wrap(jax.jacrev(jax.jacrev(jh)))
            cases.append(
                Case(
                    system,
                    "forward-over-reverse",
                    lambda fwd=fwd: fwd(jx).block_until_ready(),
                    note="jax.hessian",
                )
            )
            cases.append(
                Case(
                    system,
                    "reverse-over-reverse",
                    lambda rev=rev: rev(jx).block_until_ready(),
                    note="jax.jacrev(jax.jacrev)",
                )
            )
    return cases


def run(cfg: Config) -> Section:
    section = Section(
        "jacobian",
        "7. Jacobian and Hessian, forward vs reverse (n = 100)",
        f"Jacobian of `g(x) = tanh(W @ x) * x` (R^{N} -> R^{N}) and Hessian of "
        f"`h(x) = sum(tanh(W @ x))` (R^{N} -> R), W {N}x{N}, float64.",
    )
    missing = missing_systems(cfg)
    W, x = make_data()
    jac = compare(f"Jacobian, R^{N} -> R^{N}", _jacobian_cases(cfg, W, x), cfg, rtol=1e-9, missing=missing)
    hess = compare(f"Hessian, R^{N} -> R", _hessian_cases(cfg, W, x), cfg, rtol=1e-9, missing=missing)
    section.tables += [jac, hess]
    fwd, rev = hess.value(ZYGOTE, "forward-over-reverse"), hess.value(ZYGOTE, "reverse-over-reverse")
    jf, jr = jac.value(ZYGOTE, "forward"), jac.value(ZYGOTE, "reverse")
    if jf and jr:
        section.notes.append(f"zygotepy Jacobian: forward / reverse time = {jf / jr:.2f}.")
    section.targets.append(
        Target(
            "zp.hessian (forward-over-reverse) beats zp.hessian_reverse (reverse-over-reverse), n=100",
            "-" if not (fwd and rev) else f"forward-over-reverse / reverse-over-reverse = {fwd / rev:.2f}",
            None if not (fwd and rev) else fwd < rev,
        )
    )
    return section
