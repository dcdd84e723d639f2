"""Two checkouts of the engine timed side by side: is this one at least as fast as that one?

A workload's ratio to its hand-written gradient moves with the machine (another CPU, another
load), so "at least as fast as before" is measured against the earlier commit itself, on the
same machine at the same time: each round starts one fresh process per checkout, in turn, and
each process reports the median of interleaved samples of the hand-written gradient and
zygotepy's (process CPU time, one BLAS thread, the allocator pinned as in ``run.py``)::

    git worktree add /tmp/base <commit>
    python bench/ab.py --source /tmp/base --source . --only mlp,big --rounds 2

Workloads (the same functions and data as ``run.py``'s): ``mlp`` (workload 2, with the bare
tape ``floor``), ``big`` (workload 3), ``scalar`` (workload 1's ``math.sin`` and ``np.sin``
chains) and ``nested_tanh`` (workload 8's derivatives 1-4 of ``tanh``, against HIPS autograd's
``elementwise_grad`` when it is installed). The workload code is this checkout's ``bench/``;
only ``zygotepy`` and ``rulescore`` come from each ``--source``. On a shared VM a process may
run slower from start to end (every row of it, up to 2x): read the ratios within a row of the
output, and take several rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _env import child_env


def _cases(workload: str) -> dict[str, Callable[[], Any]]:
    """The callables of one workload, by row name; the first is the reference."""
    import zygotepy as zp

    if workload == "mlp":
        import wl_mlp as m

        params, X, Y = m.make_data()
        return {"hand": lambda: m.loss_grad(params, X, Y), "floor": lambda: m.minimal_tape_grad(params, X, Y),
                "zygotepy": lambda: zp.gradient(m.loss, params, X, Y, argnums=0)[0]}
    if workload == "big":
        import wl_big as b

        A, C = b.make_data(1024)
        return {"hand": lambda: b.f_grad(A, C), "zygotepy": lambda: zp.gradient(b.f, A, C, argnums=0)[0]}
    if workload == "scalar":
        import wl_scalar as s

        return {"hand": lambda: s.chain_grad(0.7), "zygotepy math.sin": lambda: zp.gradient(s.chain, 0.7)[0],
                "zygotepy np.sin": lambda: zp.gradient(s.np_chain, 0.7)[0]}
    if workload == "nested_tanh":
        import wl_nested as n

        cases: dict[str, Callable[[], Any]] = {"hand": lambda: n.tanh_derivatives_hand(n.X_TANH)}
        try:
            import autograd
            import autograd.numpy as anp
        except ImportError:
            pass
        else:
            def elementwise(x: Any) -> list[Any]:
                out, f = [], anp.tanh
                for _ in range(n.ORDERS):
                    f = autograd.elementwise_grad(f)
                    out.append(f(x))
                return out

            cases["autograd"] = lambda: elementwise(n.X_TANH)
        cases["zygotepy"] = lambda: n.tanh_derivatives_zp(n.X_TANH)
        return cases
    raise SystemExit(f"unknown workload {workload!r} (mlp, big, scalar, nested_tanh)")


def child(source: str, workload: str, samples: int, min_time: float) -> None:
    """One process: this checkout's engine, medians of interleaved samples (``harness.measure``
    on process CPU time), as JSON on stdout."""
    from _env import pin

    pin()  # before NumPy; it puts this checkout on sys.path, so the measured one goes in front
    sys.path.insert(0, source)
    import harness  # noqa: I001  (after the path is set: the order is the point)
    import zygotepy

    if not os.path.abspath(zygotepy.__file__).startswith(source):
        raise SystemExit(f"zygotepy came from {zygotepy.__file__}, not {source}")
    harness.clock = time.process_time
    stats = harness.measure(_cases(workload), samples, min_time)
    print(json.dumps({k: st.median for k, st in stats.items()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", required=True, help="a checkout (give two or more)")
    parser.add_argument("--only", default="mlp,big,scalar,nested_tanh")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per checkout and workload")
    parser.add_argument("--samples", type=int, default=7, help="interleaved samples per process")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per sample")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        child(os.path.abspath(opts.child[0]), opts.child[1], opts.samples, opts.min_time)
        return
    sources = [os.path.abspath(s) for s in opts.source]
    print("| workload | checkout | round | " + "time per call, ratio to the first row |")
    print("|---|---|---:|---|")
    for workload in opts.only.split(","):
        for r in range(opts.rounds):
            for src in sources:
                out = subprocess.run(
                    [sys.executable, __file__, "--source", src, "--child", src, workload,
                     "--samples", str(opts.samples), "--min-time", str(opts.min_time)],
                    capture_output=True, text=True, check=True, env=child_env()).stdout
                medians = json.loads(out.strip().splitlines()[-1])
                ref = next(iter(medians.values()))
                cells = ", ".join(f"{k} {v * 1e6:.0f} µs ({v / ref:.3f}x)" for k, v in medians.items())
                print(f"| {workload} | {src} | {r + 1} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
