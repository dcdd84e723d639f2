"""Workload 2, MLP: 3 dense layers of width 256, batch 64, tanh, squared loss; d/d(all weights).

Framework overhead plus small matrix products (each 64x256 @ 256x256 is ~8 MFLOP).
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

BATCH, WIDTH, LAYERS = 64, 256, 3


def make_data(seed: int = 0) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    params = [
        (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH), 0.1 * rng.standard_normal(WIDTH))
        for _ in range(LAYERS)
    ]
    X = rng.standard_normal((BATCH, WIDTH))
    Y = rng.standard_normal((BATCH, WIDTH))
    return params, X, Y


def loss(params: Any, X: Any, Y: Any) -> Any:
    """The model, written once for NumPy (zygotepy differentiates exactly this function)."""
    h = X
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    out = h @ W + b
    return np.sum((out - Y) ** 2) / BATCH


def loss_grad(params: Any, X: Any, Y: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Hand-written backpropagation (forward values kept, 3 + 5 matrix products)."""
    hs = [X]
    h = X
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
        hs.append(h)
    W, b = params[-1]
    diff = h @ W + b - Y
    _value = np.sum(diff * diff) / BATCH  # noqa: F841  (computed, as every AD system does)
    g = diff * (2.0 / BATCH)
    grads = []
    for i in range(LAYERS - 1, -1, -1):
        if i < LAYERS - 1:
            g = g * (1.0 - hs[i + 1] * hs[i + 1])
        grads.append((hs[i].T @ g, g.sum(axis=0)))
        if i > 0:
            g = g @ params[i][0].T
    return grads[::-1]


def minimal_tape_grad(params: Any, X: Any, Y: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """The floor of any tape-based reverse mode: one node and one pullback closure per operation
    and one reverse sweep, as zygotepy, autograd and torch record, with nothing else (no dispatch,
    no rule lookup, no projection, no checks), written for this model only.

    It is not a system anyone would use: it shows how much of the 1.05x budget recording a tape
    costs by itself, before any generality is paid for.
    """
    tape: list[Any] = []  # per node: None (an input) or (pullback, parent node indices)

    def node(pullback: Any, parents: tuple[int, ...]) -> int:
        tape.append((pullback, parents))
        return len(tape) - 1

    def leaf() -> int:
        tape.append(None)
        return len(tape) - 1

    def matmul(h: np.ndarray, hi: int | None, W: np.ndarray, wi: int) -> tuple[np.ndarray, int]:
        if hi is None:  # the data: no cotangent wanted
            return h @ W, node(lambda g: (h.T @ g,), (wi,))
        return h @ W, node(lambda g: (g @ W.T, h.T @ g), (hi, wi))

    leaves = [(leaf(), leaf()) for _ in params]
    h, hi = X, None
    for (W, b), (wi, bi) in zip(params, leaves, strict=True):
        z, zi = matmul(h, hi, W, wi)
        a = z + b
        ai = node(lambda g: (g, g.sum(axis=0)), (zi, bi))
        if wi == leaves[-1][0]:
            h, hi = a, ai
            break
        h = np.tanh(a)
        hi = node(lambda g, y=h: (g * (1.0 - y * y),), (ai,))
    diff = h - Y
    di = node(lambda g: (g,), (hi,))
    sq = diff * diff
    si = node(lambda g, d=diff: (2.0 * g * d,), (di,))
    total = np.sum(sq)
    ti = node(lambda g, shape=sq.shape: (np.broadcast_to(g, shape),), (si,))
    _value = total / BATCH  # noqa: F841  (computed, as every AD system does)
    out = node(lambda g: (g / BATCH,), (ti,))
    cts: list[Any] = [None] * len(tape)
    cts[out] = 1.0
    for i in range(out, -1, -1):
        entry, ct = tape[i], cts[i]
        if entry is None or ct is None:
            continue
        pullback, parents = entry
        for j, c in zip(parents, pullback(ct), strict=True):
            cts[j] = c if cts[j] is None else cts[j] + c
    return [(cts[wi], cts[bi]) for wi, bi in leaves]


def _cases(cfg: Config) -> list[Case]:
    params, X, Y = make_data()
    cases = [
        Case(HAND, "NumPy backprop", lambda: loss_grad(params, X, Y)),
        Case(HAND, "floor: minimal tape for this model", lambda: minimal_tape_grad(params, X, Y),
             note="one closure per operation, nothing else (see wl_mlp.minimal_tape_grad)"),
    ]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        cases.append(
            Case(ZYGOTE, "zp.gradient(argnums=0)", lambda: zp.gradient(loss, params, X, Y, argnums=0)[0])
        )
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        def loss_ag(params: Any, X: Any, Y: Any) -> Any:
            h = X
            for W, b in params[:-1]:
                h = anp.tanh(h @ W + b)
            W, b = params[-1]
            return anp.sum((h @ W + b - Y) ** 2) / BATCH

        ag_grad = autograd.grad(loss_ag)
        cases.append(Case(AUTOGRAD, "autograd.grad", lambda: ag_grad(params, X, Y)))
    if cfg.wants(TORCH):
        torch = peers.torch
        tparams = [
            (torch.from_numpy(W.copy()).requires_grad_(), torch.from_numpy(b.copy()).requires_grad_())
            for W, b in params
        ]
        flat = [t for pair in tparams for t in pair]
        tX, tY = torch.from_numpy(X), torch.from_numpy(Y)

        def torch_grad() -> Any:
            h = tX
            for W, b in tparams[:-1]:
                h = torch.tanh(h @ W + b)
            W, b = tparams[-1]
            value = torch.sum((h @ W + b - tY) ** 2) / BATCH
            return torch.autograd.grad(value, flat)

        cases.append(Case(TORCH, "torch.autograd.grad", torch_grad))
    if cfg.wants(JAX_EAGER):
        jax = peers.jax
        import jax.numpy as jnp

        jparams = [(jnp.asarray(W), jnp.asarray(b)) for W, b in params]
        jX, jY = jnp.asarray(X), jnp.asarray(Y)

        def loss_jnp(params: Any, X: Any, Y: Any) -> Any:
            h = X
            for W, b in params[:-1]:
                h = jnp.tanh(h @ W + b)
            W, b = params[-1]
            return jnp.sum((h @ W + b - Y) ** 2) / BATCH

        jgrad = jax.grad(loss_jnp)
        cases.append(Case(JAX_EAGER, "jax.grad", lambda: jax.block_until_ready(jgrad(jparams, jX, jY))))
        if cfg.wants(JAX_JIT):
            jitted = jax.jit(jgrad)
            cases.append(
                Case(
                    JAX_JIT,
                    "jax.jit(jax.grad)",
                    lambda: jax.block_until_ready(jitted(jparams, jX, jY)),
                    note="compiled once, before timing",
                )
            )
    return cases


def run(cfg: Config) -> Section:
    section = Section(
        "mlp",
        "2. MLP (overhead plus small BLAS)",
        f"{LAYERS} dense layers {WIDTH}x{WIDTH} with biases, batch {BATCH}, tanh on the hidden "
        "layers, loss `sum((out - Y)**2) / batch`; gradient with respect to every weight and "
        "bias (not the data), float64.",
    )
    table = compare("MLP, d/d(weights, biases)", _cases(cfg), cfg, missing=missing_systems(cfg))
    section.tables.append(table)
    ratio = table.ratio(ZYGOTE)
    floor = table.ratio(HAND, "floor: minimal tape for this model")
    if floor is not None:
        room = (f"has to fit in the {1.05 - floor:.2f}x left under the 1.05x target" if floor < 1.05
                else "comes on top of a floor already above the 1.05x target")
        section.notes.append(
            f"The floor row records a tape and nothing more, for this model only: {floor:.2f}x. "
            f"Whatever a general engine does on top (dispatch, rule lookup, projection, checks) {room}.")
    section.targets.append(
        Target(
            "zygotepy within 1.05x of hand-written NumPy (MLP)",
            "-" if ratio is None else f"{ratio:.2f}x",
            None if ratio is None else ratio <= 1.05,
        )
    )
    return section
