"""Workload 9, scaling: gradient time and peak memory per operation against the length of the chain.

``y = sin(y) * x + 0.1`` for 1e3/3 to 1e6/3 steps (three recorded operations per step), on a
Python float (``math.sin``) and on a vector of 8 (``np.sin``, summed at the end), zygotepy
only. Time per operation should not grow with the tape (no quadratic bookkeeping, no collector
scanning the tape); peak memory per operation (tracemalloc, a separate call) is what one node
of the tape costs.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import tracemalloc
from typing import Any

import harness
import numpy as np
from harness import ZYGOTE, Config, Grid, Section, Stats, Target, measure, mismatch, threads_note

OPS = (1_000, 10_000, 100_000, 1_000_000)
X_ARRAY = np.linspace(0.1, 0.8, 8)


def scalar_chain(x: float, steps: int) -> float:
    y = x
    for _ in range(steps):
        y = math.sin(y) * x + 0.1
    return y


def array_chain(x: np.ndarray, steps: int) -> Any:
    y = x
    for _ in range(steps):
        y = np.sin(y) * x + 0.1
    return np.sum(y)


def chain_grad(x: Any, steps: int) -> Any:
    """Hand-written reverse sweep of either chain (element-wise for the vector)."""
    ys, y = [x], x
    for _ in range(steps):
        y = np.sin(y) * x + 0.1
        ys.append(y)
    gy, gx = np.ones_like(x), np.zeros_like(x)
    for i in range(steps, 0, -1):
        gx = gx + gy * np.sin(ys[i - 1])
        gy = gy * x * np.cos(ys[i - 1])
    return gx + gy


def _peak(fn: Any) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


#: Timing rounds for the long chains (one call per round): 1e6 operations cost tens of seconds
#: per gradient, so its one round is the call that checks the answer.
LONG_ROUNDS = {100_000: 3, 1_000_000: 1}


def _timed(fn: Any) -> tuple[Any, float, float]:
    """``(result, seconds by the harness clock, CPU time / wall time)`` of one call."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    start = harness.clock()
    out = fn()
    seconds = harness.clock() - start
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return out, seconds, cpu / wall if wall > 0 else 1.0


def run(cfg: Config) -> Section:
    section = Section(
        "scaling",
        "9. Scaling with the number of operations",
        "`y = sin(y) * x + 0.1` repeated to 1e3 ... 1e6 recorded operations (three per step), "
        "zygotepy's gradient with respect to x: on a Python float (`math.sin`) and on a vector of "
        "8 (`np.sin`, summed). Time per operation: the median of interleaved rounds for up to 1e4 "
        "operations, of 3 single calls at 1e5, one call at 1e6 (the call whose answer is "
        "checked); peak memory per operation is tracemalloc's peak over one further call.",
    )
    if not cfg.wants(ZYGOTE):
        return section
    import zygotepy as zp

    ops = OPS[:3] if cfg.quick else OPS
    cases = {}
    for n in ops:
        steps = n // 3
        cases[("float", n)] = lambda steps=steps: zp.gradient(scalar_chain, 0.7, steps=steps)
        cases[("vector of 8", n)] = lambda steps=steps: zp.gradient(array_chain, X_ARRAY, steps=steps)
    long_samples: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for (kind, n), fn in list(cases.items()):  # no benchmark times a wrong answer
        x = 0.7 if kind == "float" else X_ARRAY
        out, seconds, ratio = _timed(fn)
        problem, _ = mismatch(out[0], chain_grad(x, n // 3), rtol=1e-9)
        if problem is not None:
            cfg.problems.append(f"[scaling] {kind}, {n} operations: {problem}")
            del cases[(kind, n)]
        elif n in LONG_ROUNDS:
            long_samples[(kind, n)] = [(seconds, ratio)]
    short = {k: fn for k, fn in cases.items() if k[1] not in LONG_ROUNDS}
    stats = measure({str(k): fn for k, fn in short.items()}, cfg.repeat, cfg.min_time)
    for n, rounds in LONG_ROUNDS.items():  # interleaved: one call of each kind per round
        for _ in range(rounds - 1):
            for key in [k for k in long_samples if k[1] == n]:
                long_samples[key].append(_timed(cases[key])[1:])
    for key, samples in long_samples.items():
        times = [t for t, _ in samples]
        stats[str(key)] = Stats(statistics.median(times), min(times), max(times), len(times), 1,
                                statistics.median(r for _, r in samples))
    rows, per_op = [], {}
    for (kind, n), fn in cases.items():
        st = stats[str((kind, n))]
        peak = _peak(fn)
        per_op[(kind, n)] = st.median / n
        rows.append([kind, f"{n:,}", f"{st.median * 1e9 / n:.0f} ns", f"{peak / n:.0f} B",
                     f"{st.median:.3g} s", str(st.samples), threads_note(st)])
    section.tables.append(Grid("gradient cost per recorded operation",
                               ["argument", "operations", "time / op", "peak memory / op",
                                "gradient time", "samples", "note"], rows))
    for kind in ("float", "vector of 8"):
        first, last = per_op.get((kind, ops[0])), per_op.get((kind, ops[-1]))
        if first and last:
            section.targets.append(Target(
                f"{kind}: time per operation at {ops[-1]:,} ops within 1.3x of that at {ops[0]:,}",
                f"{last / first:.2f}x", last / first <= 1.3))
    return section
