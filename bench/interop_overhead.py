"""What ``rulescore.interop`` costs over each system's own implementation: one gradient call.

Times the gradient of ``sum(f(x))``, side by side in one run:

- JAX, eagerly and under ``jax.jit`` (compiled once, before timing): ``np.sin`` wrapped by the
  exporter (the library's rule; native tier: its operations are JAX's own) and ``user_sin`` (a
  rule as an author writes it with ``rc.array_namespace``) against a hand-written
  ``jax.custom_vjp`` of ``sin`` and against ``jnp.sin``; the host tier (``logistic``, a NumPy
  function with a NumPy rule, through ``jax.pure_callback``) against ``jax.nn.sigmoid``.
- PyTorch, eagerly (``.backward()``), at each ``--sizes``: the native tier (``np.sin``,
  ``user_sin``) against a hand-written ``torch.autograd.Function`` in the ``setup_context``
  style (the one ``torch.func`` needs; the older ``forward(ctx, ...)`` style is shown too), and
  the host tier against ``torch.sigmoid``.
- The floor of the PyTorch native tier: the same hand-written Function calling ``np.sin``'s
  registered rrule and the pullback it returned, with no rulescore machinery (what no exporter
  can go below while it runs the library's rule).
- ``torch.compile(fullgraph=True)`` of the native tier (one ``rulescore::call`` operator)
  against the same compiled hand-written Function (``--backend``, ``aot_eager`` by default:
  no C compiler needed).

Process CPU time per call, every system pinned to one compute thread (``bench/_env.py``: XLA's
Eigen pool and intra-op threads, BLAS; PyTorch's with ``--threads``); ``--rounds`` rounds, each
timing both sides of every row in turn (a change in the machine's load reaches both sides of a
ratio). Per row: the medians of the rounds, the median of the per-round ratios with their
spread (lowest and highest), and the ratio of the two sides' fastest rounds.

    python bench/interop_overhead.py [--n 200] [--rounds 7] [--sizes 10,100,1000] [--backend aot_eager]
                                     [--threads 1] [--only "JAX eager"] [--source DIR]
    python bench/interop_overhead.py --only "JAX eager" --instructions 10 [--source DIR ...]

``--only TEXT`` (repeatable) keeps the rows whose label contains one of the texts.
``--instructions N`` counts instead, with callgrind as ``bench/instructions.py`` does
(load-independent): per row and side, N calls after warm-up ones, collection on only while
``sys.call_tracing`` runs them, in a fresh process per count. ``--source`` measures another
checkout's ``rulescore`` (with this script), e.g. a ``git archive`` of the base commit; several
are counted side by side.

On a loaded machine PyTorch's intra-op threads wait for each other (a ``sin`` of 1,000 elements
then costs tens of times its single-thread time, on both sides of a ratio): ``--threads 1``
measures the exporter's own cost.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import pin  # noqa: E402

pin()  # before NumPy: one compute thread for every system, float64, checking mode off
if os.environ.get("INTEROP_SOURCE"):  # --source: that checkout's rulescore, not this one's
    sys.path.insert(0, os.environ["INTEROP_SOURCE"])

import numpy as np  # noqa: E402

import rulescore as rc  # noqa: E402


def logistic(x: Any) -> Any:
    """A NumPy function with a NumPy rule: the exporters' host tier."""
    return 1 / (1 + np.exp(-x))


rc.scalar_rule(logistic, lambda x, result: result * (1 - result))


def user_sin(x: Any) -> Any:
    """``sin`` as a rule author writes it for every array library (the native tier)."""
    return rc.array_namespace(x).sin(x)


@rc.rrule.register(user_sin)
def user_sin_rrule(x: Any) -> Any:
    xp = rc.array_namespace(x)

    def user_sin_pullback(ybar: Any) -> Any:
        return rc.NoTangent(), ybar * xp.cos(x)

    return xp.sin(x), user_sin_pullback


Row = tuple[str, Callable[[], Any], Callable[[], Any]]  # label, wrapped, reference


def cpu_seconds(fn: Callable[[], Any], n: int) -> float:
    """CPU seconds per call of ``fn`` over ``n`` calls."""
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


class Result:
    """One row's timings: per-call seconds of each side in each round (the rounds interleaved)."""

    def __init__(self, label: str, wrapped: list[float], own: list[float]) -> None:
        self.label, self.wrapped, self.own = label, wrapped, own
        self.ratios = sorted(a / b for a, b in zip(wrapped, own, strict=True))  # per round: same load

    def cells(self) -> str:
        wrapped, own = statistics.median(self.wrapped), statistics.median(self.own)
        ratio = f"{statistics.median(self.ratios):.2f} ({self.ratios[0]:.2f}-{self.ratios[-1]:.2f})"
        of_minima = min(self.wrapped) / min(self.own)
        return f"{wrapped * 1e6:.1f} µs | {own * 1e6:.1f} µs | {ratio} | {of_minima:.2f}"


def measure(rows: list[Row], n: int, rounds: int) -> list[Result]:
    """Each side of each row timed once per round, the rows' timings interleaved."""
    for _, a, b in rows:
        a(), b()  # warm-up: caches, compilation
    times: dict[int, tuple[list[float], list[float]]] = {i: ([], []) for i in range(len(rows))}
    for r in range(rounds):
        for i, (_, a, b) in enumerate(rows):
            first, second = (a, b) if r % 2 == 0 else (b, a)  # neither side always runs first
            t_first, t_second = cpu_seconds(first, n), cpu_seconds(second, n)
            times[i][0].append(t_first if r % 2 == 0 else t_second)
            times[i][1].append(t_second if r % 2 == 0 else t_first)
    return [Result(label, *times[i]) for i, (label, _, _) in enumerate(rows)]


def jax_rows(x: np.ndarray, keep: Callable[[str], bool]) -> list[Row]:
    import jax
    import jax.numpy as jnp

    import rulescore.interop.jax as rjax

    jax.config.update("jax_enable_x64", True)

    @jax.custom_vjp
    def custom_sin(v: Any) -> Any:
        return jnp.sin(v)

    custom_sin.defvjp(lambda v: (jnp.sin(v), v), lambda v, g: (g * jnp.cos(v),))

    xj = jnp.asarray(x)
    rows: list[Row] = []
    for label, wrapped, own in [
        ("np.sin (native) vs custom_vjp", rjax.wrap(np.sin), custom_sin),
        ("user_sin (native) vs custom_vjp", rjax.wrap(user_sin), custom_sin),
        ("np.sin (native) vs jnp.sin", rjax.wrap(np.sin), jnp.sin),
        ("logistic (host) vs jax.nn.sigmoid", rjax.wrap(logistic), jax.nn.sigmoid),
    ]:
        g_wrapped = jax.grad(lambda v, w=wrapped: jnp.sum(w(v)))
        g_own = jax.grad(lambda v, o=own: jnp.sum(o(v)))
        for mode, transform in (("eager", lambda g: g), ("jit", jax.jit)):
            if not keep(f"JAX {mode}, {x.size}: {label}"):
                continue
            a, b = transform(g_wrapped), transform(g_own)
            np.testing.assert_allclose(a(xj), b(xj), rtol=1e-12)
            rows.append((f"JAX {mode}, {x.size}: {label}", lambda a=a: a(xj).block_until_ready(),
                         lambda b=b: b(xj).block_until_ready()))
    return rows


def torch_functions() -> tuple[Any, Any]:
    """Hand-written ``sin`` as a ``torch.autograd.Function``: the ``setup_context`` style
    (``torch.func`` needs it) and the older ``forward(ctx, ...)`` style."""
    import torch

    class SetupContextSin(torch.autograd.Function):
        @staticmethod
        def forward(v: Any) -> Any:
            return torch.sin(v)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * torch.cos(v)

    class CtxSin(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, v: Any) -> Any:
            ctx.save_for_backward(v)
            return torch.sin(v)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (v,) = ctx.saved_tensors
            return g * torch.cos(v)

    return SetupContextSin.apply, CtxSin.apply


def torch_floor(x: Any) -> Any:
    """The floor of the native tier for ``np.sin``: the same ``setup_context`` Function as the
    hand-written one, its forward calling ``np.sin``'s registered rrule (looked up once, here) and
    its backward the pullback that rrule returned, with no rulescore machinery around them.
    Like the exporter, it hands PyTorch a detached alias of the rrule's output: a pullback that
    holds its output would otherwise form a reference cycle through the output's ``grad_fn``
    (the hand-written Function saves its input with ``save_for_backward``, which PyTorch keeps
    without a cycle, and computes ``cos`` in ``backward``, as the rule's pullback does)."""
    import torch

    rule = rc.rrule.lookup(np.sin, (x,))
    assert rule is not None and rule.impl is not None
    kept: list[Any] = []

    class RuleSin(torch.autograd.Function):
        @staticmethod
        def forward(v: Any) -> Any:
            y, pullback = rule.impl(v)
            kept.append(pullback)
            return y.detach()

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.pullback = kept.pop()
            ctx.save_for_backward(inputs[0], output)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            ctx.saved_tensors  # noqa: B018 (PyTorch's check of in-place changes, as the exporter's)
            return ctx.pullback(g)[1]

    return RuleSin.apply


def torch_rows(sizes: list[int], keep: Callable[[str], bool]) -> list[Row]:
    import torch

    import rulescore.interop.torch as rtorch

    setup_context_sin, ctx_sin = torch_functions()
    rows: list[Row] = []
    for size in sizes:
        xt = torch.tensor(np.random.default_rng(0).uniform(-2.0, 2.0, size))

        def grad(fn: Callable[[Any], Any], xt: Any = xt) -> Any:
            v = xt.clone().requires_grad_()
            fn(v).sum().backward()
            return v.grad

        pairs = [
            ("np.sin (native) vs autograd.Function", rtorch.wrap(np.sin), setup_context_sin),
            ("np.sin (native) vs autograd.Function, ctx style", rtorch.wrap(np.sin), ctx_sin),
            ("np.sin floor (its rule in an autograd.Function) vs autograd.Function", torch_floor(xt),
             setup_context_sin),
            ("user_sin (native) vs autograd.Function", rtorch.wrap(user_sin), setup_context_sin),
            ("user_sin (native) vs autograd.Function, ctx style", rtorch.wrap(user_sin), ctx_sin),
        ]
        if size == max(sizes):
            pairs.append(("logistic (host) vs torch.sigmoid", rtorch.wrap(logistic), torch.sigmoid))
        for label, wrapped, own in pairs:
            if not keep(f"PyTorch eager, {size}: {label}"):
                continue
            np.testing.assert_allclose(grad(wrapped), grad(own), rtol=1e-12)
            rows.append((f"PyTorch eager, {size}: {label}", lambda w=wrapped, g=grad: g(w),
                         lambda o=own, g=grad: g(o)))
    return rows


def compile_rows(size: int, backend: str, keep: Callable[[str], bool]) -> list[Row]:
    import torch

    import rulescore.interop.torch as rtorch

    setup_context_sin, _ = torch_functions()
    xt = torch.tensor(np.random.default_rng(0).uniform(-2.0, 2.0, size))
    rows: list[Row] = []
    for label, wrapped in [("np.sin (native)", rtorch.wrap(np.sin)),
                           ("user_sin (native)", rtorch.wrap(user_sin)),
                           ("logistic (host)", rtorch.wrap(logistic))]:
        own = torch.sigmoid if wrapped.__name__ == "logistic" else setup_context_sin
        reference = "torch.sigmoid" if own is torch.sigmoid else "autograd.Function"
        row_label = f"torch.compile({backend}, fullgraph), {size}: {label} vs {reference}"
        if not keep(row_label):
            continue
        compiled_wrapped = torch.compile(lambda v, w=wrapped: w(v).sum(), fullgraph=True, backend=backend)
        compiled_own = torch.compile(lambda v, o=own: o(v).sum(), fullgraph=True, backend=backend)

        def grad(fn: Callable[[Any], Any]) -> Any:
            v = xt.clone().requires_grad_()
            return torch.autograd.grad(fn(v), v)[0]

        np.testing.assert_allclose(grad(compiled_wrapped), grad(compiled_own), rtol=1e-12)
        rows.append((row_label, lambda c=compiled_wrapped: grad(c), lambda c=compiled_own: grad(c)))
    return rows


FAMILIES = ("JAX", "PyTorch", "torch.compile")  # how the rows' labels start


def build_rows(only: list[str], size: int, sizes: list[int], backend: str) -> list[Row]:
    """The rows whose label contains one of ``only`` (all when empty), building only those (a
    system's rows are built only when one of its labels is kept)."""
    def keep(label: str) -> bool:
        return not only or any(o in label for o in only)

    def wanted(family: str) -> bool:  # a part naming no family, such as ``np.sin``, may match any
        return not only or any(family.startswith(o) or o.startswith(family) or
                               not any(f.startswith(o) or o.startswith(f) for f in FAMILIES) for o in only)

    x = np.random.default_rng(0).uniform(-2.0, 2.0, size)
    rows = jax_rows(x, keep) if wanted("JAX") else []
    rows += torch_rows(sizes, keep) if wanted("PyTorch") else []
    rows += compile_rows(size, backend, keep) if wanted("torch.compile") else []
    return rows


#: A fresh process counting one side of one row: warm-up calls, then ``n`` calls collected while
#: ``sys.call_tracing`` runs them (callgrind's ``--toggle-collect`` switch, as bench/instructions.py).
COUNT_PROGRAM = """
import sys
sys.argv = {argv!r}
sys.path.insert(0, {bench!r})
import interop_overhead as bench
options = bench.parse()
rows = bench.build_rows([{label!r}], options.size, options.sizes, options.backend)
call = [row for row in rows if row[0] == {label!r}][0][{side}]
for _ in range({warmup}):
    call()
def measured_calls():
    for _ in range({n}):
        call()
measure, sys.call_tracing = sys.call_tracing, None
measure(measured_calls, ())
"""


def instructions(label: str, side: int, n: int, source: str | None) -> float:
    """Instructions per call of one side (1: wrapped, 2: own) of the row ``label``, by callgrind."""
    from instructions import SWITCH, WARMUP, count

    program = COUNT_PROGRAM.format(argv=sys.argv, bench=os.path.dirname(os.path.abspath(__file__)),
                                   label=label, side=side, warmup=WARMUP, n=n)
    os.environ["INTEROP_SOURCE"] = source or ""
    collected = count(program, "--collect-atstart=no", f"--toggle-collect={SWITCH}")
    if collected == 0:
        raise RuntimeError(f"callgrind collected nothing: {sys.executable}'s libpython has no symbol table")
    return collected / n


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="gradient calls per timing")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median reported)")
    parser.add_argument("--sizes", default="10,100,1000", help="lengths of x for PyTorch")
    parser.add_argument("--size", type=int, default=1000, help="length of x for JAX and torch.compile")
    parser.add_argument("--backend", default="aot_eager", help="torch.compile backend")
    parser.add_argument("--threads", type=int, default=None,
                        help="PyTorch's intra-op threads (default: PyTorch's own choice)")
    parser.add_argument("--only", action="append", default=[],
                        help="run the rows whose label contains this (repeatable)")
    parser.add_argument("--instructions", type=int, default=0, metavar="N",
                        help="count instructions per call (callgrind, N calls) instead of timing")
    parser.add_argument("--source", action="append", help="checkout(s) whose rulescore is measured")
    options = parser.parse_args()
    options.sizes = [int(s) for s in options.sizes.split(",")]
    return options


def main() -> None:
    options = parse()
    sources = [os.path.abspath(s) for s in options.source or []]
    if options.instructions:
        rows = build_rows(options.only, options.size, options.sizes, options.backend)
        columns = sources or ["this checkout"]
        print("| instructions per call | " + " | ".join(f"{c}: wrapped | own | ratio" for c in columns)
              + " |")
        print("|---|" + "---:|---:|---:|" * len(columns))
        for label, _, _ in rows:
            cells = []
            for source in sources or [None]:
                wrapped, own = (instructions(label, side, options.instructions, source) for side in (1, 2))
                cells.append(f"{wrapped / 1e6:.3f} M | {own / 1e6:.3f} M | {wrapped / own:.3f}")
            print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
        return
    if len(sources) > 1:
        raise SystemExit("timings take one --source (run the script once per checkout)")
    if sources and os.environ.get("INTEROP_SOURCE") != sources[0]:  # rulescore is imported: start again
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "INTEROP_SOURCE": sources[0]})
    if options.threads is not None:
        import torch

        torch.set_num_threads(options.threads)
    rows = build_rows(options.only, options.size, options.sizes, options.backend)
    threads = f", PyTorch threads: {sys.modules['torch'].get_num_threads()}" if "torch" in sys.modules else ""
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, rulescore from "
          f"{os.path.dirname(os.path.dirname(os.path.abspath(rc.__file__)))}{threads}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    results = measure(rows, options.n, options.rounds)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"| gradient of sum(f(x)), x float64 | wrapped | own | ratio: median of {options.rounds} rounds "
          "(lowest-highest) | ratio of minima |")
    print("|---|---|---|---|---|")
    for result in results:
        print(f"| {result.label} | {result.cells()} |")


if __name__ == "__main__":
    main()
