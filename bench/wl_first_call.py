"""Workload 4, first call: the transform/trace cost of a never-seen 100-line Python function.

For every repeat and system a new function is generated into a temporary module file (see
``fresh_source.py``) and differentiated in a fresh subprocess (``_first_call_child.py``):

* cold: the first gradient the process ever takes (zygotepy: source rewriting of the function,
  first rule lookups, lazy imports; jax jit: tracing and XLA compilation);
* warm: the first gradient of the new function after a gradient of another generated function
  of the same kind (only the new function's own rewrite/trace/compile cost remains);
* steady: the median of the following calls on the same function.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import harness
from _env import BENCH_DIR, child_env
from fresh_source import write_module
from harness import (
    AUTOGRAD,
    HAND,
    JAX_EAGER,
    JAX_JIT,
    SYSTEMS,
    TORCH,
    ZYGOTE,
    Config,
    Row,
    Section,
    Table,
    Target,
    missing_systems,
)

FLAVOUR = {
    HAND: "numpy",
    ZYGOTE: "numpy",
    AUTOGRAD: "autograd",
    TORCH: "torch",
    JAX_EAGER: "jax",
    JAX_JIT: "jax",
}
LINES = 100


def _child(system: str, directory: str, seed: int, warm: bool, steady: int) -> dict[str, float]:
    tag = uuid.uuid4().hex[:10]
    module = write_module(directory, tag, FLAVOUR[system], LINES, seed)
    reference = module if FLAVOUR[system] == "numpy" else write_module(directory, tag, "numpy", LINES, seed)
    cmd = [
        sys.executable,
        os.path.join(BENCH_DIR, "_first_call_child.py"),
        system,
        module,
        reference,
        "--steady",
        str(steady),
        "--timer",
        "cpu" if harness.clock is time.process_time else "wall",
    ]
    if warm:
        cmd += ["--warm", write_module(directory, tag + "w", FLAVOUR[system], LINES, seed + 1000)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "child failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run(cfg: Config) -> Section:
    section = Section(
        "first_call",
        "4. First call on a fresh 100-line function (transform/trace cost)",
        f"A new {LINES}-line function (about 300 NumPy operations on a 16-element array; "
        "`bench/fresh_source.py`) is generated into a temporary module file and imported in "
        "a fresh subprocess; the first gradient call is timed (import of the system and of "
        "the module excluded), then the steady state (median of the next calls). *Cold*: the "
        "process's very first gradient; *warm*: after one gradient of another generated "
        "function, so only the new function's own rewrite/trace/compile cost remains.",
    )
    repeats = 1 if cfg.quick else 5
    steady = 5 if cfg.quick else 15
    systems = [s for s in SYSTEMS if cfg.wants(s)]
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    errors: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="zpbench_") as directory:
        for rep in range(repeats):
            for system in systems:  # interleaved: every system sees the same machine load
                for warm in (False, True):
                    if system in errors:
                        continue
                    try:
                        out = _child(system, directory, seed=rep, warm=warm, steady=steady)
                    except Exception as err:  # noqa: BLE001
                        errors[system] = f"error: {type(err).__name__}: {err}"
                        cfg.problems.append(f"[first call] {system}: {errors[system]}")
                        continue
                    results.setdefault((system, "warm" if warm else "cold"), []).append(out)

    def median(system: str, variant: str, key: str) -> float | None:
        runs = results.get((system, variant), [])
        values = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(values) if values else None

    def check(system: str) -> tuple[str, str]:
        errs = [r["err"] for runs in (results.get((system, v), []) for v in ("cold", "warm")) for r in runs]
        if system in errors:
            return errors[system], ""
        worst = max(errs) if errs else float("inf")
        return (
            ("ok", "reference" if system == HAND else f"{worst:.0e}")
            if worst <= 1e-6
            else (f"wrong: max rel err {worst:.2e}", "")
        )

    missing = missing_systems(cfg)
    for title, variant, key in (
        ("first call, cold process", "cold", "first"),
        ("first call of a new function, engine warm", "warm", "first"),
        ("steady state (same function, later calls)", "cold", "steady"),
    ):
        rows = []
        for system in systems:
            status, chk = check(system)
            values = [r[key] for r in results.get((system, variant), []) if r.get(key) is not None]
            value = median(system, variant, key) if status == "ok" else None
            rows.append(
                Row(
                    system,
                    variant if key == "first" else "steady",
                    value,
                    min(values) if values and value is not None else None,
                    max(values) if values and value is not None else None,
                    status,
                    chk,
                )
            )
        rows += [Row(s, "", None, status="not installed") for s in missing]
        section.tables.append(
            Table(
                f"{title} (median of {repeats} processes)"
                if key == "first"
                else f"{title} (median of {steady} calls, median over {repeats} processes)",
                rows,
            )
        )
    imports = {s: median(s, "cold", "import") for s in systems}
    section.notes.append(
        "Import time of each system's library (not included above): "
        + ", ".join(f"{s} {v * 1e3:.0f} ms" for s, v in imports.items() if v is not None and s != HAND)
        + "."
    )
    cold = section.tables[0].value(ZYGOTE)
    warm = section.tables[1].value(ZYGOTE)
    section.targets.append(
        Target(
            "zygotepy first call under 50 ms",
            "-"
            if cold is None
            else f"cold {cold * 1e3:.0f} ms, warm {warm * 1e3:.0f} ms"
            if warm
            else f"cold {cold * 1e3:.0f} ms",
            None if cold is None else cold < 0.05,
        )
    )
    return section
