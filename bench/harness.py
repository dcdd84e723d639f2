"""Shared machinery of the benchmark runner: peers, timing, verification, tables.

Every workload builds a list of :class:`Case` (one per system and variant), the first being the
hand-written reference. :func:`compare` runs each case once and checks its answer against the
reference (a case that raises or disagrees is reported, never timed), then times the verified
cases interleaved: each round runs every case once, and the median of the rounds is reported,
so a burst of load from another process on the shared machine hits every system alike.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HAND = "hand-written"
ZYGOTE = "zygotepy"
AUTOGRAD = "autograd"
TORCH = "torch eager"
JAX_EAGER = "jax eager"
JAX_JIT = "jax jit"
SYSTEMS = (HAND, ZYGOTE, AUTOGRAD, TORCH, JAX_EAGER, JAX_JIT)
#: Which importable package each system needs.
PACKAGE = {AUTOGRAD: "autograd", TORCH: "torch", JAX_EAGER: "jax", JAX_JIT: "jax"}


# -- configuration and optional peers ------------------------------------------------------------
@dataclass
class Config:
    quick: bool = False
    repeat: int = 9  # timing rounds; the median is reported
    min_time: float = 0.2  # seconds per timing sample (calls are batched up to this)
    systems: tuple[str, ...] = SYSTEMS
    problems: list[str] = field(default_factory=list)  # errors and wrong answers, for the summary

    def wants(self, system: str) -> bool:
        return system in self.systems and peers.available(system)


class Peers:
    """The optional systems, imported on first use and configured for one thread, float64."""

    def __init__(self) -> None:
        self._modules: dict[str, Any] = {}
        self.missing: dict[str, str] = {}

    def _load(self, name: str) -> Any:
        if name in self._modules or name in self.missing:
            return self._modules.get(name)
        try:
            if name == "autograd":
                import autograd
                import autograd.numpy

                mod: Any = autograd
            elif name == "torch":
                import torch

                torch.set_num_threads(1)
                try:
                    torch.set_num_interop_threads(1)
                except RuntimeError:  # already set, or parallel work already started
                    pass
                mod = torch
            elif name == "jax":
                import jax

                jax.config.update("jax_enable_x64", True)
                jax.config.update("jax_platforms", "cpu")
                mod = jax
            else:
                raise ValueError(name)
        except Exception as err:  # ImportError, or a broken install
            self.missing[name] = f"{type(err).__name__}: {err}".splitlines()[0]
            return None
        self._modules[name] = mod
        return mod

    def available(self, system: str) -> bool:
        package = PACKAGE.get(system)
        return package is None or self._load(package) is not None

    @property
    def autograd(self) -> Any:
        return self._load("autograd")

    @property
    def torch(self) -> Any:
        return self._load("torch")

    @property
    def jax(self) -> Any:
        return self._load("jax")

    def versions(self) -> dict[str, str]:
        out = {}
        for name in ("autograd", "torch", "jax"):
            mod = self._load(name)
            if mod is None:
                out[name] = f"not available ({self.missing[name]})"
                continue
            version = getattr(mod, "__version__", None)
            if version is None:
                from importlib.metadata import version as dist_version

                version = dist_version(name)
            out[name] = version
            if name == "jax":
                import jaxlib

                out["jaxlib"] = jaxlib.__version__
        return out


peers = Peers()


# -- verification ---------------------------------------------------------------------------------
def leaves(x: Any) -> list[np.ndarray]:
    """Every array in a (nested) result, as float64 NumPy arrays, in order."""
    if isinstance(x, dict):
        return [a for k in sorted(x) for a in leaves(x[k])]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in leaves(v)]
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    return [np.asarray(x, dtype=np.float64)]


def mismatch(got: Any, ref: Any, rtol: float = 1e-6) -> tuple[str | None, float]:
    """``(problem or None, max relative error)`` of ``got`` against the reference ``ref``."""
    g, r = leaves(got), leaves(ref)
    if len(g) != len(r):
        return f"{len(g)} arrays, expected {len(r)}", math.inf
    worst = 0.0
    for i, (a, b) in enumerate(zip(g, r, strict=True)):
        if a.shape != b.shape:
            return f"array {i} has shape {a.shape}, expected {b.shape}", math.inf
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-300)
        err = float(np.max(np.abs(a - b))) / scale if a.size else 0.0
        if not np.isfinite(err) or err > rtol:
            return f"array {i}: max |got - expected| / max|expected| = {err:.2e} > {rtol:.0e}", err
        worst = max(worst, err)
    return None, worst


# -- timing ------------------------------------------------------------------------------------------
@dataclass
class Stats:
    median: float
    lo: float
    hi: float
    samples: int
    number: int
    cpu_per_wall: float  # median of (process CPU time / wall time): above 1, more than one thread ran


#: The clock: wall time by default; ``run.py --timer cpu`` switches to this process's CPU time
#: (all its threads), which ignores time spent descheduled on a loaded machine.
clock: Callable[[], float] = time.perf_counter
#: A case whose CPU time exceeds its wall time by this factor used more than one thread.
THREADED = 1.15


def _sample(fn: Callable[[], Any], number: int) -> tuple[float, float]:
    """(seconds per call by ``clock``, CPU time / wall time of the sample)."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    start = clock()
    for _ in range(number):
        fn()
    seconds = (clock() - start) / number
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return seconds, cpu / wall if wall > 0 else 1.0


def measure(fns: dict[str, Callable[[], Any]], repeat: int, min_time: float) -> dict[str, Stats]:
    """Median seconds per call of each function, sampled in interleaved rounds."""
    numbers = {}
    for key, fn in fns.items():
        number, t = 1, _sample(fn, 1)[0]
        while t * number < min_time / 2 and number < 1_000_000:
            number = min(1_000_000, max(number * 2, math.ceil(min_time / max(t, 1e-9))))
            t = _sample(fn, number)[0]
        numbers[key] = number
    samples: dict[str, list[tuple[float, float]]] = {key: [] for key in fns}
    for _ in range(repeat):
        for key, fn in fns.items():
            samples[key].append(_sample(fn, numbers[key]))
    out = {}
    for key, v in samples.items():
        times = [t for t, _ in v]
        out[key] = Stats(
            statistics.median(times),
            min(times),
            max(times),
            len(v),
            numbers[key],
            statistics.median(r for _, r in v),
        )
    return out


def threads_note(st: Stats) -> str:
    return f"CPU/wall {st.cpu_per_wall:.2f}: more than one thread ran" if st.cpu_per_wall > THREADED else ""


# -- results --------------------------------------------------------------------------------------------
@dataclass
class Row:
    system: str
    variant: str
    value: float | None  # seconds, or bytes for memory tables
    lo: float | None = None
    hi: float | None = None
    status: str = "ok"  # "ok", "not installed", "error: ...", "wrong: ..."
    check: str = ""  # how the answer was verified
    note: str = ""


@dataclass
class Table:
    title: str
    rows: list[Row]
    unit: str = "s"  # "s" or "bytes"
    reference: str = HAND  # the row (system) ratios are taken against
    footnote: str = ""

    def ref_value(self) -> float | None:
        for row in self.rows:
            if row.system == self.reference and row.value:
                return row.value
        return None

    def ratio(self, system: str, variant: str | None = None) -> float | None:
        ref = self.ref_value()
        for row in self.rows:
            if row.system == system and (variant is None or row.variant == variant):
                return row.value / ref if row.value is not None and ref else None
        return None

    def value(self, system: str, variant: str | None = None) -> float | None:
        for row in self.rows:
            if row.system == system and (variant is None or row.variant == variant):
                return row.value
        return None


@dataclass
class Grid:
    """A free-form table (rows of cells), for results that are not system-versus-reference times."""

    title: str
    header: list[str]
    rows: list[list[str]]
    footnote: str = ""


@dataclass
class Target:
    goal: str
    figure: str
    met: bool | None  # None: could not be assessed


@dataclass
class Section:
    key: str
    title: str
    description: str
    tables: list[Table | Grid] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- running cases ---------------------------------------------------------------------------------------
@dataclass
class Case:
    system: str
    variant: str
    fn: Callable[[], Any]
    note: str = ""


def describe_error(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}".replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


def compare(
    title: str,
    cases: Sequence[Case],
    cfg: Config,
    rtol: float = 1e-6,
    missing: Sequence[str] = (),
    footnote: str = "",
) -> Table:
    """Verify every case against the first (the reference), then time the verified ones."""
    ref_out = cases[0].fn()
    rows: list[Row] = []
    timed: dict[str, Callable[[], Any]] = {}
    for i, case in enumerate(cases):
        row = Row(case.system, case.variant, None, note=case.note)
        try:
            out = case.fn()
        except Exception as err:
            row.status = f"error: {describe_error(err)}"
            cfg.problems.append(
                f"[{title}] {case.system} {case.variant}: {row.status}\n"
                + "".join(traceback.format_exception(err)[-6:])
            )
        else:
            problem, err = mismatch(out, ref_out, rtol)
            if problem is not None:
                row.status = f"wrong: {problem}"
                cfg.problems.append(f"[{title}] {case.system} {case.variant}: {row.status}")
            else:
                row.check = "reference" if i == 0 else f"{err:.0e}"
                timed[str(i)] = case.fn
        rows.append(row)
    stats = measure(timed, cfg.repeat, cfg.min_time)
    for key, st in stats.items():
        row = rows[int(key)]
        row.value, row.lo, row.hi = st.median, st.lo, st.hi
        row.note = "; ".join(n for n in (row.note, threads_note(st)) if n)
    rows += [Row(system, "", None, status="not installed") for system in missing]
    return Table(title, rows, footnote=footnote)


def missing_systems(cfg: Config, systems: Sequence[str] = SYSTEMS) -> list[str]:
    return [s for s in systems if s in cfg.systems and not peers.available(s)]


# -- formatting --------------------------------------------------------------------------------------------
def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-6:
        return f"{s * 1e9:.0f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def fmt_bytes(b: float | None) -> str:
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.3f}x" if r < 10 else f"{r:.1f}x" if r < 100 else f"{r:.0f}x"


def table_cells(table: Table) -> tuple[list[str], list[list[str]]]:
    fmt = fmt_time if table.unit == "s" else fmt_bytes
    what = "median" if table.unit == "s" else "peak"
    header = [
        "system",
        "variant",
        what,
        "min - max" if table.unit == "s" else "",
        f"ratio to {table.reference}",
        "max rel err",
        "note",
    ]
    ref = table.ref_value()
    body = []
    for row in table.rows:
        if row.status != "ok":
            body.append([row.system, row.variant, row.status, "", "", "", row.note])
            continue
        spread = f"{fmt(row.lo)} - {fmt(row.hi)}" if row.lo is not None and table.unit == "s" else ""
        ratio = fmt_ratio(row.value / ref) if ref and row.value is not None else "-"
        body.append([row.system, row.variant, fmt(row.value), spread, ratio, row.check, row.note])
    keep = [i for i in range(len(header)) if header[i] and any(r[i] for r in body) or i < 3]
    return [header[i] for i in keep], [[r[i] for i in keep] for r in body]


def text_table(table: Table | Grid) -> str:
    header, body = (table.header, table.rows) if isinstance(table, Grid) else table_cells(table)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [
        table.title,
        "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
        "  ".join("-" * w for w in widths),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in body]
    if table.footnote:
        lines.append(table.footnote)
    return "\n".join(lines)


def markdown_table(table: Table | Grid) -> str:
    header, body = (table.header, table.rows) if isinstance(table, Grid) else table_cells(table)
    lines = [
        f"**{table.title}**",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 2 or i == len(header) - 1 else "---:" for i in range(len(header))) + "|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
    if table.footnote:
        lines += ["", table.footnote]
    return "\n".join(lines)
