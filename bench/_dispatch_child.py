"""Child process of workload 5: rule dispatch through the global registry with N extra rules.

``python bench/_dispatch_child.py 10,100000`` registers, in ``rulescore.rrule`` itself (the
registry zygotepy uses), one rule on ``target`` plus rules on throwaway functions up to N = 10
extra rules, times ``rulescore.rrule.lookup(target, (x,))``, ``rulescore.rrule(target, x)`` and
``zp.gradient`` of a function calling ``target``, then registers more up to N = 100,000, and prints
one JSON line. Both counts are timed in the same process, alternately: the registry's table is
swapped between a snapshot at N = 10 and the full one between rounds (same ``RuleTable``, same
lookup code), so neither process-to-process differences nor a burst of load elsewhere on a shared
machine blur the ratio. The best of the rounds is kept for each count.
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


def one_ns(stmt, number: int) -> float:  # noqa: ANN001
    """One timing of ``number`` calls, in process CPU time (load elsewhere does not count)."""
    return timeit.Timer(stmt, timer=time.process_time).timeit(number) / number * 1e9


STATEMENTS = {
    "lookup_ns": (lambda: rc.rrule.lookup(target, (3.0,)), 20_000),
    "rrule_ns": (lambda: rc.rrule(target, 3.0), 20_000),
    "gradient_ns": (lambda: zp.gradient(uses_target, 3.0), 500),
}


def main() -> None:
    counts = [int(n) for n in sys.argv[1].split(",")]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    registry = getattr(rc.rrule, "_by_callable", None)
    out: dict[str, object] = {"library": len(registry or ()) - 1}  # minus target's own rule
    keep, registered, snapshots = [], 1, {}  # target's rule counts as one of the N
    for n in counts:
        for i in range(registered, n):
            g = _throwaway(i)
            keep.append(g)
            rc.rrule.register(g)(_unused_rrule)
        registered = max(registered, n)
        assert rc.rrule.lookup(target, (3.0,)) is not None and zp.gradient(uses_target, 3.0) == (12.0,)
        snapshots[n] = dict(registry) if isinstance(registry, dict) else None
    interleave = all(v is not None for v in snapshots.values())
    best: dict[int, dict[str, float]] = {n: {} for n in counts}
    if interleave:
        # Swap the registry's table between rounds (the same RuleTable, the same code path), so
        # the counts are timed alternately and a burst of load elsewhere hits both alike.
        for _ in range(repeat):
            for n in counts:
                rc.rrule._by_callable = snapshots[n]  # type: ignore[attr-defined]
                for key, (stmt, number) in STATEMENTS.items():
                    best[n][key] = min(best[n].get(key, float("inf")), one_ns(stmt, number))
        rc.rrule._by_callable = registry  # type: ignore[attr-defined]
    else:  # a registry without that table: time the counts one after the other, as registered
        raise SystemExit("rulescore.rrule has no _by_callable table to interleave; update _dispatch_child.py")
    for n in counts:
        out[str(n)] = {"rules": len(snapshots[n] or ()), **best[n]}
    out["interleaved"] = interleave
    print(json.dumps(out))


if __name__ == "__main__":
    main()
