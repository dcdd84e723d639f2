"""Child process of workload 5: rule dispatch through the global registry with N extra rules.

``python bench/_dispatch_child.py 10,100000`` registers, in ``rulescore.rrule`` itself (the
registry zygotepy uses), one rule on ``target`` plus rules on throwaway functions up to N = 10
extra rules, times ``rulescore.rrule.lookup(target, (x,))``, ``rulescore.rrule(target, x)`` and
``zp.gradient`` of a function calling ``target``, then registers more up to N = 100,000 and times
again, and prints one JSON line. Both counts are timed in the same process, so their ratio is
not blurred by process-to-process differences on a shared machine.
"""

from __future__ import annotations

import json
import os
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import pin  # noqa: E402

pin()

import rulescore as rc  # noqa: E402
import zygotepy as zp  # noqa: E402


def target(x: float) -> float:
    return 2.0 * x


@rc.rrule.register(target)
def _target_rrule(x: float) -> object:
    return target(x), lambda ybar: (rc.NoTangent(), 2.0 * ybar)


def uses_target(x: float) -> float:
    return target(x) * x


def _throwaway(i: int):  # noqa: ANN202
    def g(x: object) -> object:
        return x

    g.__name__ = g.__qualname__ = f"throwaway_{i}"
    return g


def _unused_rrule(x: object) -> object:
    return x, lambda ybar: (rc.NoTangent(), ybar)


def best_ns(stmt, number: int, repeat: int) -> float:  # noqa: ANN001
    """Best of ``repeat`` timings of ``number`` calls, in process CPU time (load elsewhere does not count)."""
    timer = timeit.Timer(stmt, timer=time.process_time)
    return min(timer.repeat(repeat, number)) / number * 1e9


def measure(repeat: int) -> dict[str, float]:
    args = (3.0,)
    lookup = rc.rrule.lookup
    assert lookup(target, args) is not None
    assert zp.gradient(uses_target, 3.0) == (12.0,)
    return {
        "rules": len(getattr(rc.rrule, "_by_callable", ())),
        "lookup_ns": best_ns(lambda: lookup(target, args), 20_000, repeat),
        "rrule_ns": best_ns(lambda: rc.rrule(target, 3.0), 20_000, repeat),
        "gradient_ns": best_ns(lambda: zp.gradient(uses_target, 3.0), 500, repeat),
    }


def main() -> None:
    counts = [int(n) for n in sys.argv[1].split(",")]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    out = {"library": len(getattr(rc.rrule, "_by_callable", ())) - 1}  # minus target's own rule
    keep, registered = [], 1  # target's rule counts as one of the N
    for n in counts:  # the same process, growing: the ratios are paired, free of process-to-process noise
        for i in range(registered, n):
            g = _throwaway(i)
            keep.append(g)
            rc.rrule.register(g)(_unused_rrule)
        registered = max(registered, n)
        out[str(n)] = measure(repeat)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
