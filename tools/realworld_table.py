"""Print, per scikit-learn kernel and statsmodels model of ``tests/realworld``, the maximum
relative error of zygotepy's gradient against the library's analytic one and the time of one
zygotepy gradient as a ratio to the library's gradient (best of ``--repeat`` runs each), with
the Gaussian processes fitted on ``--points`` points (issue 28's goal: at most 3x at 200).

Run from the repository root with the realworld extra installed::

    OPENBLAS_NUM_THREADS=1 python tools/realworld_table.py --points 200
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import zygotepy as zp  # noqa: E402
from tests.realworld.models import Case, gp_cases, statsmodels_cases  # noqa: E402

#: The clock of the timings: the process's CPU time by default (the ratio then does not depend on
#: what else the machine runs; set BLAS to one thread), or wall-clock time (``--clock wall``).
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def best_time(run: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.process_time) -> float:
    """The shortest of ``repeat`` times of ``run()`` on ``clock`` (after one warm-up call)."""
    run()
    times = []
    for _ in range(repeat):
        start = clock()
        run()
        times.append(clock() - start)
    return min(times)


def row(case: Case, repeat: int, clock: Callable[[], float] = time.process_time,
        ) -> tuple[str, float, float, float, float]:
    """``(name, max relative error, zygotepy seconds, library seconds, ratio)``."""
    ours = zp.gradient(case.f, case.theta)[0]
    theirs = case.gradient(case.theta)
    error = float(np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-300)))
    t_ours, t_theirs = math.inf, math.inf
    for _ in range(repeat):  # alternated, so both see the same load of the machine
        t_ours = min(t_ours, best_time(lambda: zp.gradient(case.f, case.theta), 1, clock))
        t_theirs = min(t_theirs, best_time(lambda: case.gradient(case.theta), 1, clock))
    return case.name, error, t_ours, t_theirs, t_ours / t_theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=200, help="training points of the GPs")
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per gradient (best kept)")
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="process CPU time or wall time")
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = gp_cases(n=options.points) + statsmodels_cases()
    print(f"| case | max rel. error | zygotepy (ms) | library (ms) | ratio |  GPs: {options.points} points, "
          f"{options.clock} time")
    print("|---|---|---|---|---|")
    for case in cases:
        if options.only in case.name:
            name, error, ours, theirs, ratio = row(case, options.repeat, CLOCKS[options.clock])
            cells = f"{error:.1e} | {1e3 * ours:.2f} | {1e3 * theirs:.2f} | {ratio:.1f}x"
            print(f"| {name} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
