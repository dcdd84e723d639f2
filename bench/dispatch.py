"""Rule dispatch cost with few vs many rules registered.

Measures ``table.lookup(f, args)`` (what an AD engine calls per call site) and the full
``table(f, x)`` (lookup + running the rrule) for one function ``target``, in two scenarios:

* distinct callables: besides ``target``'s rule, N-1 rules on N-1 distinct throwaway functions;
* typed rules on one callable: ``target`` itself has N rules, each typed on a distinct class,
  one of which (``float``) matches the call.

Each scenario is built twice, with N = 10 and N = 100,000 (``--rules``), in fresh
``rulescore.RuleTable("rrule")`` registries (``rc.rrule`` is one such table; fresh ones keep the
counts exact), and timed side by side. Steady-state lookups must not depend on N: the script
prints the ratio and, with ``--check``, exits 1 if a ratio exceeds ``--max-ratio`` (1.10).

Run: ``python bench/dispatch.py`` (needs only numpy and this repository).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import rulescore as rc  # noqa: E402


def target(x: float) -> float:
    return 2.0 * x


def target_rrule(x: float) -> Any:
    def target_pullback(ybar: Any) -> Any:
        return rc.NoTangent(), 2.0 * ybar

    return target(x), target_pullback


def _throwaway(i: int) -> Callable[[Any], Any]:
    def g(x: Any) -> Any:
        return x

    g.__name__ = g.__qualname__ = f"throwaway_{i}"
    return g


def _unused_rrule(x: Any) -> Any:
    return x, lambda ybar: (rc.NoTangent(), ybar)


def build_distinct(n: int) -> rc.RuleTable:
    """``target``'s rule plus n-1 rules on n-1 other functions."""
    table = rc.RuleTable("rrule")
    for i in range(n - 1):
        table.register(_throwaway(i))(_unused_rrule)
    table.register(target)(target_rrule)
    return table


def build_typed(n: int) -> rc.RuleTable:
    """n rules on ``target`` itself: n-1 typed on throwaway classes, one on float."""
    table = rc.RuleTable("rrule")
    for i in range(n - 1):
        table.register(target, type(f"Class{i}", (), {}))(_unused_rrule)
    table.register(target, float)(target_rrule)
    return table


def per_call_ns(stmt: Callable[[], Any], number: int) -> float:
    # CPU time of this process: other processes on a busy machine do not count against us
    return timeit.Timer(stmt, timer=time.process_time).timeit(number) / number * 1e9


def measure(tables: dict[int, rc.RuleTable], number: int, repeat: int) -> dict[tuple[str, int], float]:
    """Best-of-``repeat`` time per call (ns), small and large tables interleaved."""
    args = (3.0,)
    best: dict[tuple[str, int], float] = {}
    for table in tables.values():  # warm the dispatch caches, check the rule is found
        assert table.lookup(target, args) is not None and table(target, 3.0)[0] == 6.0
    stmts = {}
    for n, table in tables.items():
        stmts[("lookup(f, args)", n)] = lambda lookup=table.lookup: lookup(target, args)
        stmts[("rrule(f, x)", n)] = lambda table=table: table(target, 3.0)
    for _ in range(repeat):  # many short interleaved samples: the minimum resists noise
        for key, stmt in stmts.items():
            best[key] = min(best.get(key, float("inf")), per_call_ns(stmt, number))
    return best


def cold_lookup_us(table: rc.RuleTable, repeat: int) -> float:
    """First lookup after a registration (which clears ``target``'s dispatch cache)."""
    best = float("inf")
    for _ in range(repeat):
        table.register(target, float)(target_rrule)
        start = time.perf_counter()
        table.lookup(target, (3.0,))
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", type=int, default=100_000, help="the large rule count")
    parser.add_argument("--few", type=int, default=10, help="the small rule count")
    parser.add_argument("--number", type=int, default=20_000, help="calls per timing")
    parser.add_argument("--repeat", type=int, default=60, help="timings per case (best is kept)")
    parser.add_argument("--max-ratio", type=float, default=1.10)
    parser.add_argument("--check", action="store_true", help="exit 1 if lookups are not flat")
    opts = parser.parse_args()

    print(f"rulescore dispatch benchmark: {platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, NumPy {np.__version__}")
    print(f"best of {opts.repeat} x {opts.number:,} calls (process CPU time); checking mode off\n")
    sizes = (opts.few, opts.rules)
    scenarios = {"distinct callables": build_distinct, "typed rules on one callable": build_typed}
    rows = []
    worst = 0.0
    with rc.checking(False):
        for name, build in scenarios.items():
            tables = {}
            for n in sizes:
                start = time.perf_counter()
                tables[n] = build(n)
                print(f"  built '{name}' with {n:,} rules in {time.perf_counter() - start:.2f} s")
            best = measure(tables, opts.number, opts.repeat)
            for op in ("lookup(f, args)", "rrule(f, x)"):
                small, large = best[(op, sizes[0])], best[(op, sizes[1])]
                worst = max(worst, large / small)
                rows.append((name, op, f"{small:.0f} ns", f"{large:.0f} ns", f"{large / small:.2f}"))
            if name.startswith("typed"):
                cold = [cold_lookup_us(tables[n], opts.repeat) for n in sizes]
                rows.append((name, "first lookup after register", f"{cold[0]:.1f} us", f"{cold[1]:.1f} us",
                             f"{cold[1] / cold[0]:.2f}"))

    header = ("scenario", "operation", f"{sizes[0]:,} rules", f"{sizes[1]:,} rules", "ratio")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print()
    for i, row in enumerate([header, *rows]):
        cells = zip(row, widths, strict=True)
        print("  ".join(str(c).ljust(w) if j < 2 else str(c).rjust(w) for j, (c, w) in enumerate(cells)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    flat = worst <= opts.max_ratio
    print(f"\nworst ratio of the cached lookups and calls: {worst:.2f}, "
          f"{'flat' if flat else 'NOT flat'} (limit {opts.max_ratio:.2f})")
    return 0 if flat or not opts.check else 1


if __name__ == "__main__":
    sys.exit(main())
