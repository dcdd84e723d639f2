"""Workload 6, peak memory of a 32-layer chain with and without ``zp.checkpointed``.

``h = tanh(h @ W_i)`` for 32 layers of width 512 on a batch of 256 (one activation is 1 MiB),
gradient with respect to the input batch (the weights are constants, so weight gradients do
not swamp the activations). The peak is measured with ``tracemalloc`` (NumPy reports its
buffers to it) from just before the gradient call, after a warm-up call. PyTorch and JAX
allocate outside Python's allocator, so tracemalloc cannot see them: they are not measured here.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
from harness import (
    AUTOGRAD,
    HAND,
    JAX_EAGER,
    JAX_JIT,
    TORCH,
    ZYGOTE,
    Config,
    Row,
    Section,
    Table,
    Target,
    describe_error,
    measure,
    mismatch,
    threads_note,
)

LAYERS, WIDTH, BATCH = 32, 512, 256


def make_data(seed: int = 2) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    Ws = [rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) for _ in range(LAYERS)]
    return Ws, rng.standard_normal((BATCH, WIDTH))


def layers(h: Any, Ws: list[np.ndarray]) -> Any:
    for W in Ws:
        h = np.tanh(h @ W)
    return h


def closed_over(ws: list[np.ndarray]) -> Callable[[Any], Any]:
    return lambda h: layers(h, ws)


def halves(h: Any, ws: list[np.ndarray]) -> Any:
    """Recursive checkpointing: each half of the chain checkpointed, down to pairs of layers
    (memory grows with log2(layers), time by one forward pass per level)."""
    import zygotepy as zp

    if len(ws) <= 2:
        return layers(h, ws)
    mid = len(ws) // 2
    h = zp.checkpointed(halves, h, ws[:mid])
    return zp.checkpointed(halves, h, ws[mid:])


def halves_closed_over(ws: list[np.ndarray]) -> Callable[[Any], Any]:
    """:func:`halves` with each half's weights closed over instead of passed."""
    import zygotepy as zp

    if len(ws) <= 2:
        return closed_over(ws)
    first, second = halves_closed_over(ws[: len(ws) // 2]), halves_closed_over(ws[len(ws) // 2 :])
    return lambda h: zp.checkpointed(second, zp.checkpointed(first, h))


def grad_hand(Ws: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    hs = [x]
    for W in Ws:
        hs.append(np.tanh(hs[-1] @ W))
    _value = hs[-1].sum()  # noqa: F841
    g = np.ones_like(x)
    for i in range(LAYERS - 1, -1, -1):
        g = (g * (1.0 - hs[i + 1] * hs[i + 1])) @ Ws[i].T
        hs[i + 1] = None  # type: ignore[call-overload]  # freed as the sweep passes, like a tape
    return g


def peak(fn: Callable[[], Any]) -> tuple[Any, int]:
    """(result, peak bytes allocated during the call)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        top = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return out, top - base


def _cases(cfg: Config, Ws: list[np.ndarray], x: np.ndarray) -> list[tuple[str, str, Callable[[], Any]]]:
    cases: list[tuple[str, str, Callable[[], Any]]] = [
        (HAND, "activations kept, freed on the way back", lambda: grad_hand(Ws, x))
    ]
    if cfg.wants(ZYGOTE):
        import zygotepy as zp

        def plain(x: Any) -> Any:
            return np.sum(layers(x, Ws))

        def checkpointing(k: int, closed: bool) -> Callable[[Any], Any]:
            """Blocks of k layers, each under zp.checkpointed; the weights passed in or closed over."""

            def run_blocks(x: Any) -> Any:
                h = x
                for lo in range(0, LAYERS, k):
                    ws = Ws[lo : lo + k]
                    h = zp.checkpointed(closed_over(ws), h) if closed else zp.checkpointed(layers, h, ws)
                return np.sum(h)

            return run_blocks

        cases.append((ZYGOTE, "no checkpointing", lambda: zp.gradient(plain, x)[0]))
        for k in (1, 4, 8):
            for closed in (False, True):
                fn = checkpointing(k, closed)
                where = "every layer" if k == 1 else f"{LAYERS // k} blocks of {k} layers"
                how = "weights closed over" if closed else "weights as arguments"
                cases.append(
                    (ZYGOTE, f"zp.checkpointed on {where}, {how}", lambda fn=fn: zp.gradient(fn, x)[0])
                )
        nested = halves_closed_over(Ws)
        cases.append((ZYGOTE, "zp.checkpointed on halves, recursively, weights as arguments",
                      lambda: zp.gradient(lambda v: np.sum(halves(v, Ws)), x)[0]))
        cases.append((ZYGOTE, "zp.checkpointed on halves, recursively, weights closed over",
                      lambda: zp.gradient(lambda v: np.sum(nested(v)), x)[0]))
    if cfg.wants(AUTOGRAD):
        import autograd
        import autograd.numpy as anp

        def layers_ag(h: Any, lo: int, hi: int) -> Any:
            for W in Ws[lo:hi]:
                h = anp.tanh(h @ W)
            return h

        cases.append(
            (
                AUTOGRAD,
                "no checkpointing",
                lambda: autograd.grad(lambda v: anp.sum(layers_ag(v, 0, LAYERS)))(x),
            )
        )
        block = autograd.checkpoint(layers_ag)

        def blocks_ag(v: Any) -> Any:
            for lo in range(0, LAYERS, 8):
                v = block(v, lo, lo + 8)
            return anp.sum(v)

        cases.append(
            (
                AUTOGRAD,
                f"autograd.checkpoint on {LAYERS // 8} blocks of 8 layers",
                lambda: autograd.grad(blocks_ag)(x),
            )
        )
    return cases


def run(cfg: Config) -> Section:
    section = Section(
        "memory",
        "6. Peak memory of a 32-layer chain, with and without checkpointing",
        f"`h = tanh(h @ W_i)` for {LAYERS} layers of width {WIDTH}, batch {BATCH} (one activation "
        f"= {BATCH * WIDTH * 8 / 2**20:.0f} MiB), loss `sum(h)`, gradient with respect to the input "
        "batch. Peak bytes allocated during one gradient call (tracemalloc, after a warm-up "
        "call; the weights and the input exist before and are not counted); time of the same call "
        "(median of the repeats).",
    )
    Ws, x = make_data()
    repeats = 2 if cfg.quick else 3  # peak bytes: the largest of these calls
    cases = _cases(cfg, Ws, x)
    ref = cases[0][2]()
    rows, times_rows = [], []
    timed: dict[str, Callable[[], Any]] = {}
    for system, variant, fn in cases:
        try:
            out = fn()  # warm-up (rewriting, caches), and the answer to check
        except Exception as err:
            rows.append(Row(system, variant, None, status=f"error: {describe_error(err)}"))
            cfg.problems.append(f"[memory] {system} {variant}: {describe_error(err)}")
            continue
        problem, err = mismatch(out, ref, 1e-9)
        if problem is not None:
            rows.append(Row(system, variant, None, status=f"wrong: {problem}"))
            cfg.problems.append(f"[memory] {system} {variant}: wrong: {problem}")
            continue
        peaks = [peak(fn)[1] for _ in range(repeats)]
        check = "reference" if system == HAND and not rows else f"{err:.0e}"
        rows.append(Row(system, variant, float(max(peaks)), status="ok", check=check))
        times_rows.append(Row(system, variant, None, check=check))
        timed[str(len(times_rows) - 1)] = fn
    # timed without tracemalloc (which slows every allocation), interleaved like the other workloads
    for key, st in measure(timed, min(cfg.repeat, 5), 0.0).items():
        row = times_rows[int(key)]
        row.value, row.lo, row.hi = st.median, st.lo, st.hi
        row.note = threads_note(st)
    na = [
        Row(s, "", None, status="not measured: allocations invisible to tracemalloc")
        for s in (TORCH, JAX_EAGER, JAX_JIT)
        if s in cfg.systems
    ]
    mem = Table("peak memory during one gradient", rows + na, unit="bytes")
    section.tables += [
        mem,
        Table(f"time of the same gradient call (median of {min(cfg.repeat, 5)} rounds)", times_rows),
    ]
    plain = mem.value(ZYGOTE, "no checkpointing")
    ck = {r.variant: r.value for r in rows if r.system == ZYGOTE and r.variant.startswith("zp.") and r.value}
    for how in ("weights closed over", "weights as arguments"):
        variants = {v: b for v, b in ck.items() if v.endswith(how)}
        goal = f"checkpointing cuts peak memory at least 3x ({how})"
        if not plain or not variants:
            section.targets.append(Target(goal, "-", None))
            continue
        best = min(variants, key=lambda v: variants[v])
        cut = plain / variants[best]
        where = best.removeprefix("zp.checkpointed on ").removesuffix(f", {how}")
        figure = f"{cut:.2f}x at best ({where}: {variants[best] / 2**20:.0f} vs {plain / 2**20:.0f} MiB)"
        section.targets.append(Target(goal, figure, cut >= 3))
    return section
