"""Workload 5, rule dispatch with 10 vs 100,000 registered rules.

Two parts:

* ``bench/dispatch.py`` (the rulescore dispatch benchmark, also runnable alone) on fresh
  ``rulescore.RuleTable`` registries: cached ``lookup`` and a full ``rrule`` call, with the
  rules on distinct callables and all typed on one callable;
* the global registry zygotepy uses (``rulescore.rrule``), with N extra rules registered in
  fresh subprocesses (``_dispatch_child.py``, both counts timed alternately in each process):
  ``rulescore.rrule.lookup``, ``rulescore.rrule(f, x)`` and a whole ``zp.gradient`` of a
  function that calls the ruled function.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import dispatch
from _env import BENCH_DIR, child_env
from harness import Config, Grid, Section, Target

import rulescore as rc

FEW, MANY = 10, 100_000


def _tables_part(cfg: Config) -> tuple[Grid, float]:
    number, repeat = (10_000, 20) if cfg.quick else (20_000, 40)
    sizes = (FEW, MANY)
    rows, worst = [], 0.0
    with rc.checking(False):
        for name, build in (
            ("distinct callables", dispatch.build_distinct),
            ("typed rules on one callable", dispatch.build_typed),
        ):
            tables = {n: build(n) for n in sizes}
            best = dispatch.measure(tables, number, repeat)
            for op in ("lookup(f, args)", "rrule(f, x)"):
                small, large = best[(op, FEW)], best[(op, MANY)]
                worst = max(worst, large / small)
                rows.append(
                    [f"RuleTable, {name}", op, f"{small:.0f} ns", f"{large:.0f} ns", f"{large / small:.2f}"]
                )
    grid = Grid(
        "fresh RuleTable registries (bench/dispatch.py; best of "
        f"{repeat} x {number:,} calls, process CPU time)",
        ["registry", "operation", f"{FEW:,} rules", f"{MANY:,} rules", "ratio"],
        rows,
    )
    return grid, worst


def _child(repeat: int) -> dict[str, dict[str, float]]:
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCH_DIR, "_dispatch_child.py"), f"{FEW},{MANY}", str(repeat)],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=900,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _global_part(cfg: Config) -> tuple[Grid, float, float]:
    rounds, repeat = (1, 20) if cfg.quick else (5, 40)
    runs = [_child(repeat) for _ in range(rounds)]
    rows, worst_lookup, ratio_gradient = [], 0.0, 0.0
    for key, label in (
        ("lookup_ns", "rulescore.rrule.lookup(target, (x,))"),
        ("rrule_ns", "rulescore.rrule(target, x)"),
        ("gradient_ns", "zp.gradient(lambda x: target(x) * x, x)"),
    ):
        small = statistics.median(r[str(FEW)][key] for r in runs)
        large = statistics.median(r[str(MANY)][key] for r in runs)
        ratio = statistics.median(r[str(MANY)][key] / r[str(FEW)][key] for r in runs)  # paired in-process
        if key == "gradient_ns":
            ratio_gradient = ratio
        else:
            worst_lookup = max(worst_lookup, ratio)
        fmt = (lambda v: f"{v / 1e3:.1f} µs") if key == "gradient_ns" else (lambda v: f"{v:.0f} ns")
        rows.append(["rulescore.rrule (global)", label, fmt(small), fmt(large), f"{ratio:.2f}"])
    first = runs[0]
    grid = Grid(
        f"global registry, library rules + N (best of {repeat} timings, process CPU time; "
        f"median over {rounds} processes)",
        ["registry", "operation", f"+{FEW:,} rules", f"+{MANY:,} rules", "ratio"],
        rows,
        footnote=f"The global registry already holds rules for {int(first['library'])} callables (the "
        f"rule library) before the N extra ones ({int(first[str(FEW)]['rules'])} vs "
        f"{int(first[str(MANY)]['rules'])} callables in all). Both counts are timed in the same "
        "process, alternately (the registry's table swapped between a snapshot at +10 and the full one "
        "between rounds); the ratio is the median of the per-process ratios.",
    )
    return grid, worst_lookup, ratio_gradient


def run(cfg: Config) -> Section:
    section = Section(
        "dispatch",
        "5. Rule dispatch: 10 vs 100,000 registered rules",
        "Steady-state cost of finding a rule (and of a whole gradient using it) must not grow "
        "with the number of registered rules. Ratios are 100,000-rule time / 10-rule time.",
    )
    grid1, worst_tables = _tables_part(cfg)
    grid2, worst_global, gradient_ratio = _global_part(cfg)
    section.tables += [grid1, grid2]
    worst = max(worst_tables, worst_global)
    section.targets.append(
        Target(
            "dispatch flat: 100,000 vs 10 rules within 10% (lookups and rrule calls)",
            f"worst ratio {worst:.2f}",
            worst <= 1.10,
        )
    )
    section.targets.append(
        Target(
            "dispatch flat: full zp.gradient within 10%",
            f"ratio {gradient_ratio:.2f}",
            gradient_ratio <= 1.10,
        )
    )
    return section
