"""Chaos: the engine's state under interrupts, threads, deep recursion and bad rules (issue 27).

A gradient call borrows the interpreter's state. This script attacks it and checks, after every
attack, that the state is exactly what it was (the trace stack, the collector's switch and
thresholds, the recursion limit, the engine's count of running differentiations, the rule
tables' versions and sizes, NumPy's global random state) and, every so often, that the caches
agree with the registry and that the next gradient is right and writes back::

    python bench/chaos.py            # full size: >= 200,000 interrupts, 4 threads x 10,000 gradients
    python bench/chaos.py --small    # a few seconds (tests/zygotepy/test_chaos.py runs this)

1. Interrupt storm: Ctrl-C (SIGALRM raising ``KeyboardInterrupt``) at a random moment of every
   entry point (gradient, withgradient, pullback and its ``back``, jacobian in each mode, hessian,
   hessian_reverse, jvp, pushforward, withjacobian, checkpointed, nested gradient, params with
   gradient, pullback and jacobian), and of the entry points whose function writes into the
   caller's array: afterwards it holds what the caller passed or what one plain call leaves,
   never anything in between ("torn").
2. Threads: 4 threads differentiate while one re-registers a rule (each gradient must use a rule
   at least as new as the one registered before it began; each ``register`` must be in force
   when it returns) and one allocates cyclic garbage (which must be collected automatically: the
   collector stays on); the main thread samples whether the collector is on.
3. Deep recursion: deeper than the recursion limit, in a child process (a ``RecursionError``,
   never a crash), and in this one (the state after the error).
4. Bad rules of every kind: a rule that raises, whose pullback raises, returns too few or too
   many cotangents, a string or bytes, ``None``, a generator, a cotangent of the wrong shape, or
   raises ``KeyboardInterrupt``, on an argument or on another rule's output: each must raise
   (a broken contract naming the rule's primal), and leave the state as it was.

The summary ends with the figures issue 27 asks for: interrupts, leaked states, wrong results,
stale rules. The exit status is 1 if any of them is not 0.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import rulescore as rc  # noqa: E402
import zygotepy as zp  # noqa: E402
from zygotepy import _reverse, _trace  # noqa: E402


# -- the state, and whether it is as it was ---------------------------------------------------------
def snapshot() -> tuple[Any, ...]:
    """Everything a gradient call may touch and must give back."""
    return (_trace.LEVELS.get(), gc.isenabled(), gc.get_threshold(), sys.getrecursionlimit(),
            dict(_trace._RUNNING), rc.rrule.version, rc.frule.version, len(rc.rrule.callables()),
            len(rc.frule.callables()), _random_state())


def _random_state() -> int:
    return hash(np.random.get_state()[1].tobytes())


def inconsistent_caches() -> int:
    """Cache entries that disagree with the registry: a rule table's dispatch caches and the
    engine's plain-callable cache."""
    wrong = 0
    for table in (rc.rrule, rc.frule):
        for entry in list(table._by_callable.values()):
            for key, rule in list(entry.cache.items()):
                if key and isinstance(key[0], tuple):
                    continue  # (argument classes, a config's type): the config itself is not kept
                wrong += entry.select(key, None) is not rule
    for fn, cached in list(_reverse._PLAIN_CALLABLES.items()):
        if type(cached) is tuple and cached[1] == rc.rrule.version and cached[0] == _reverse.ADJOINTS.version:
            wrong += cached[2] is not rc.rrule.sole_rule(fn)
    return wrong


def right_after() -> bool:
    """Clean calls: right, their in-place writes written back (gradient, pullback, jacobian in
    every mode), their gradients the user's own, a value stored on an object plain afterwards."""
    buffer = np.zeros(2)
    holder = _Holder()

    def f(x):
        buffer[...] = x
        holder.kept = x * 1.0
        return np.sum(np.sin(x) * x)

    x = np.array([0.3, 1.1])
    (g,) = zp.gradient(f, x)
    fresh = g.flags.writeable and g.base is None
    ok = bool(np.allclose(g, np.cos(x) * x + np.sin(x)) and np.array_equal(buffer, x) and fresh)
    ok = ok and type(holder.kept) is np.ndarray
    x0 = _X0.copy()
    for name in ("gradient_writes", "pullback_writes", "jacobian_forward_writes", "jacobian_reverse_writes"):
        x = x0.copy()
        got = WRITING_ENTRY_POINTS[name][0](x)
        ok = ok and np.array_equal(x, _AFTER[name])
        if name in ("gradient_writes", "pullback_writes"):
            ok = ok and bool(np.allclose(got[0], _fd(_writes, x0), rtol=1e-5, atol=1e-6))
        else:
            ok = ok and bool(np.allclose(got[0], _fd_jacobian(_writes_vector, x0), rtol=1e-5, atol=1e-6))
    return ok


class _Holder:
    kept: Any = None


def _fd(f: Callable[[Any], Any], x0: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar ``f`` that writes into its argument (each on a copy)."""
    return _fd_jacobian(lambda v: np.asarray(f(v)), x0, h)


def _fd_jacobian(f: Callable[[Any], Any], x0: np.ndarray, h: float = 1e-6) -> np.ndarray:
    cols = []
    for i in range(x0.size):
        up, down = x0.copy(), x0.copy()
        up[i] += h
        down[i] -= h
        cols.append((np.asarray(f(up)) - np.asarray(f(down))) / (2 * h))
    return np.stack(cols, axis=-1)


# -- 1. interrupt storm ---------------------------------------------------------------------------
_W = np.ones(3)


def _pullback_and_back() -> Any:
    y, back = zp.pullback(lambda x: np.sin(x) * x, np.ones(2))
    return back(np.ones(2))


ENTRY_POINTS: dict[str, Callable[[], Any]] = {
    "gradient": lambda: zp.gradient(lambda x: np.sum(np.sin(x) * x), np.ones(2)),
    "withgradient": lambda: zp.withgradient(lambda x: np.sum(np.tanh(x)), np.ones(2)),
    "pullback": _pullback_and_back,
    "jacobian_auto": lambda: zp.jacobian(np.sin, np.ones(2)),
    "jacobian_forward": lambda: zp.jacobian(np.sin, np.ones(2), mode="forward"),
    "jacobian_reverse": lambda: zp.jacobian(np.sin, np.ones(2), mode="reverse"),
    "hessian": lambda: zp.hessian(lambda x: np.sum(x ** 3), np.ones(2)),
    "hessian_reverse": lambda: zp.hessian_reverse(lambda x: np.sum(x ** 3), np.ones(2)),
    "jvp": lambda: zp.jvp(np.sin, (np.ones(2),), (np.ones(2),)),
    "checkpointed": lambda: zp.gradient(lambda x: zp.checkpointed(lambda h: np.sum(np.tanh(h)), x),
                                        np.ones(2)),
    "nested": lambda: zp.gradient(lambda x: zp.gradient(lambda y: y * y * x, x)[0], 1.5),
    "params": lambda: zp.gradient(lambda: np.sum(_W * _W), zp.params(_W)),
    "withjacobian": lambda: zp.withjacobian(np.tanh, np.ones(2)),
    "pushforward": lambda: zp.pushforward(np.sin, np.ones(2))(np.ones(2)),
    "params_pullback": lambda: zp.pullback(lambda: _W * _W, zp.params(_W))[1](np.ones(3)),
    "params_jacobian": lambda: zp.jacobian(lambda: np.tanh(_W), zp.params(_W)),
}


# -- entry points whose function writes into the caller's array: after any interrupt, the array is
# -- as the caller passed it or as one plain call leaves it, never anything in between
_X0 = np.array([0.4, -0.3, 1.2])


def _writes(x: Any) -> Any:
    y = np.sum(np.sin(x) * x)
    x[1:] = x[:2] * 2.0
    x += 1.0
    return y + np.sum(x * x)


def _writes_vector(x: Any) -> Any:
    _writes(x)
    return x * 2.0


def _pullback_then_back(x: Any) -> Any:
    y, back = zp.pullback(_writes, x)
    return back(1.0)


WRITING_ENTRY_POINTS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "gradient_writes": (lambda x: zp.gradient(_writes, x), _writes),
    "pullback_writes": (_pullback_then_back, _writes),
    "jvp_writes": (lambda x: zp.jvp(_writes, (x,), (np.ones(3),)), _writes),
    "jacobian_forward_writes": (lambda x: zp.jacobian(_writes_vector, x, mode="forward", chunk=1),
                                _writes_vector),
    "jacobian_reverse_writes": (lambda x: zp.jacobian(_writes_vector, x, mode="reverse"), _writes_vector),
    "hessian_writes": (lambda x: zp.hessian(_writes, x, chunk=1), _writes),
}


def _numpy_leaves(f: Callable[[Any], Any]) -> np.ndarray:
    x = _X0.copy()
    f(x)
    return x


_AFTER = {name: _numpy_leaves(plain) for name, (_, plain) in WRITING_ENTRY_POINTS.items()}


def _ctrl_c(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def interrupted_after(delay: float, run: Callable[[], Any]) -> bool:
    """Run ``run()`` with Ctrl-C arriving after ``delay`` seconds; whether it arrived in time."""
    try:
        signal.setitimer(signal.ITIMER_REAL, delay)
        try:
            run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _handled_here()  # a timer that fired just before it was stopped raises here, not later
    except KeyboardInterrupt:
        return True
    return False


def _handled_here() -> None:
    """Nothing: Python runs a pending signal's handler at the start of a Python function."""


def storm(interrupts: int, seed: int = 0) -> dict[str, int]:
    """Interrupt the entry points at random moments until ``interrupts`` have landed."""
    rng = np.random.default_rng(seed)
    took = {}
    for name, run in ENTRY_POINTS.items():
        times = []
        for _ in range(5):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        took[name] = min(times)
    for name, (run_on, _) in WRITING_ENTRY_POINTS.items():
        times = []
        for _ in range(5):
            start = time.perf_counter()
            run_on(_X0.copy())
            times.append(time.perf_counter() - start)
        took[name] = min(times)
    names = sorted(took)
    previous = signal.signal(signal.SIGALRM, _ctrl_c)
    before = snapshot()
    counts = {"interrupts": 0, "runs": 0, "leaked": 0, "torn_arrays": 0, "wrong": 0, "stale_caches": 0}
    try:
        while counts["interrupts"] < interrupts:
            name = names[int(rng.integers(len(names)))]
            delay = float(rng.uniform(1e-6, 1.1 * took[name]))
            if name in WRITING_ENTRY_POINTS:
                x = _X0.copy()
                run_on = WRITING_ENTRY_POINTS[name][0]
                counts["interrupts"] += interrupted_after(delay, lambda: run_on(x))
                if not (np.array_equal(x, _X0) or np.array_equal(x, _AFTER[name])):
                    counts["torn_arrays"] += 1
                    print(f"  {name} left the caller's array torn: {x}", file=sys.stderr)
            else:
                counts["interrupts"] += interrupted_after(delay, ENTRY_POINTS[name])
            counts["runs"] += 1
            if snapshot() != before:
                counts["leaked"] += 1
                print(f"  leaked after {name}: {snapshot()} != {before}", file=sys.stderr)
                break  # everything after would be measured on a broken state
            if counts["runs"] % 1000 == 0:
                counts["wrong"] += not right_after()
                counts["stale_caches"] += inconsistent_caches()
    finally:
        signal.signal(signal.SIGALRM, previous)
    counts["wrong"] += not right_after()
    counts["stale_caches"] += inconsistent_caches()
    return counts


# -- 2. threads -------------------------------------------------------------------------------------
def scaled(x: Any) -> Any:
    """``x`` times the factor of the rule in force (the rule is re-registered under load)."""
    return x * 1.0


_REGISTERED = [0]  # the factor of the last rule whose register() has returned


def _register_scaled(k: int) -> None:
    @rc.rrule.register(scaled)
    def _scaled_rrule(x: Any) -> Any:
        return x * 1.0, lambda ybar: (rc.NoTangent(), ybar * float(k))


_register_scaled(0)


def threads(workers: int, gradients: int) -> dict[str, int]:
    """``workers`` threads x ``gradients`` gradients, with a registrar, a garbage maker and the
    main thread sampling the collector."""
    counts = {"gradients": 0, "wrong": 0, "stale_rules": 0, "registrations": 0, "stale_registrations": 0,
              "gc_samples": 0, "gc_off_samples": 0, "garbage_cycles": 0, "garbage_alive": 0}
    lock = threading.Lock()
    done = threading.Event()
    _register_scaled(0)
    _REGISTERED[0] = 0

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        wrong = stale = 0
        for _ in range(gradients):
            x = float(rng.uniform(-2, 2))
            oldest = _REGISTERED[0]
            (g,) = zp.gradient(lambda v: scaled(v) + np.sin(v) * v, x)
            newest = _REGISTERED[0] + 1  # (the registration in flight may be in force before it returns)
            k = g - (np.cos(x) * x + np.sin(x))
            if abs(k - round(k)) > 1e-9 or round(k) > newest:
                wrong += 1
            elif round(k) < oldest:
                stale += 1
        with lock:
            counts["gradients"] += gradients
            counts["wrong"] += wrong
            counts["stale_rules"] += stale

    def registrar() -> None:
        k = 0
        while not done.is_set():
            k += 1
            _register_scaled(k)
            _REGISTERED[0] = k
            counts["registrations"] += 1
            rule = rc.rrule.lookup(scaled, (1.0,))
            counts["stale_registrations"] += rule is None or rule.impl(1.0)[1](1.0)[1] != float(k)

    class Node:
        pass

    def garbage() -> None:
        samples = []
        while not done.is_set():
            for _ in range(1000):
                n = Node()
                n.self = n  # a cycle: only the collector frees it
            samples.append(weakref.ref(n))
            counts["garbage_cycles"] += 1000
            time.sleep(0)
        counts["garbage_alive"] = sum(r() is not None for r in samples[:-200])  # the recent may live

    helpers = [threading.Thread(target=registrar), threading.Thread(target=garbage)]
    pool = [threading.Thread(target=worker, args=(seed,)) for seed in range(workers)]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for t in helpers + pool:
        t.start()
    while any(t.is_alive() for t in pool):
        counts["gc_samples"] += 1
        counts["gc_off_samples"] += not gc.isenabled()
        time.sleep(0.001)
    done.set()
    for t in helpers:
        t.join()
    counts["rss_growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) // 1024
    _register_scaled(0)
    return counts


# -- 3. deep recursion -------------------------------------------------------------------------------
DEEP = """
import sys
sys.path.insert(0, {root!r})
import zygotepy as zp
sys.setrecursionlimit(30000)
def down(x, n):
    return x if n == 0 else down(x * 1.0, n - 1)
try:
    print(zp.gradient(lambda x: down(x, 25000), 1.0)[0])
except RecursionError:
    print("RecursionError")
print(zp.gradient(lambda x: down(x, 50) * x, 2.0)[0], sys.getrecursionlimit())
"""


def deep_recursion() -> dict[str, int]:
    """25,000 levels with the limit at 30,000 in a child (no crash), and past the limit here."""
    counts = {"crashes": 0, "wrong": 0, "leaked": 0}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "deep.py")  # a file: its functions have source to rewrite
        with open(path, "w") as fh:
            fh.write(DEEP.format(root=root))
        out = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=600)
    lines = out.stdout.split()
    counts["crashes"] += out.returncode != 0
    counts["wrong"] += out.returncode == 0 and (lines[0] not in ("RecursionError", "1.0")
                                                or lines[1:] != ["4.0", "30000"])

    def down(x: Any, n: int) -> Any:
        return x if n == 0 else down(x * 1.0, n - 1)

    before = snapshot()
    try:
        zp.gradient(lambda x: down(x, sys.getrecursionlimit() + 10), 1.0)
        counts["wrong"] += 1
    except RecursionError:
        pass
    counts["leaked"] += snapshot() != before
    counts["wrong"] += not right_after()
    return counts


# -- 4. bad rules --------------------------------------------------------------------------------------
def _bad(name: str, forward: Callable[[Any], Any] | None, back: Callable[[Any, Any], Any] | None
         ) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        return x * 2.0

    f.__name__ = f.__qualname__ = f"bad_{name}"

    @rc.rrule.register(f)
    def _rule(x: Any) -> Any:
        if forward is not None:
            return forward(x)
        return x * 2.0, lambda ybar: back(x, ybar)  # type: ignore[misc]

    return f


def _raise(error: BaseException) -> Any:
    raise error


BAD_RULES = {
    "forward_raises": _bad("forward_raises", lambda x: _raise(ValueError("bad forward")), None),
    "forward_returns_none": _bad("forward_returns_none", lambda x: None, None),
    "forward_interrupted": _bad("forward_interrupted", lambda x: _raise(KeyboardInterrupt()), None),
    "pullback_raises": _bad("pullback_raises", None, lambda x, ybar: _raise(ValueError("bad pullback"))),
    "pullback_interrupted": _bad("pullback_interrupted", None, lambda x, ybar: _raise(KeyboardInterrupt())),
    "too_few_cotangents": _bad("too_few_cotangents", None, lambda x, ybar: (rc.NoTangent(),)),
    "string_cotangent": _bad("string_cotangent", None, lambda x, ybar: (rc.NoTangent(), "2.0")),
    "none_instead_of_tuple": _bad("none_instead_of_tuple", None, lambda x, ybar: None),
    "generator_cotangents": _bad("generator_cotangents", None,
                                 lambda x, ybar: (c for c in (rc.NoTangent(), 2.0 * ybar))),
    "wrong_shape": _bad("wrong_shape", None,
                        lambda x, ybar: (rc.NoTangent(), np.ones((3, 3)) * 2.0)),
    "wrong_shape_1d": _bad("wrong_shape_1d", None, lambda x, ybar: (rc.NoTangent(), np.ones(6))),
    "bytes_cotangent": _bad("bytes_cotangent", None, lambda x, ybar: (rc.NoTangent(), b"2.0")),
    "too_many_cotangents": _bad("too_many_cotangents", None,
                                lambda x, ybar: (rc.NoTangent(), 2.0 * ybar, 2.0 * ybar)),
}

#: where a bad rule's argument comes from: the argument itself, or other rules' outputs (a wrong
#: shape there would otherwise be summed or broadcast by their pullbacks)
PLACES: dict[str, Callable[[Callable[[Any], Any]], Callable[[Any], Any]]] = {
    "argument": lambda f: lambda x: np.sum(f(x)),
    "after_sin": lambda f: lambda x: np.sum(f(np.sin(x))),
    "after_product": lambda f: lambda x: np.sum(f(x * 2.0)),
    "next_to_another_use": lambda f: lambda x: np.sum(f(x)) + np.sum(x),
}


def bad_rules(rounds: int) -> dict[str, int]:
    """Each bad rule ``rounds`` times: it must raise, and leave the state as it was."""
    counts = {"calls": 0, "accepted": 0, "unnamed": 0, "leaked": 0, "wrong": 0}
    before = snapshot()
    for _ in range(rounds):
        for (name, f), (place, at) in ((r, p) for r in BAD_RULES.items() for p in PLACES.items()):
            counts["calls"] += 1
            try:
                zp.gradient(at(f), np.ones(3))
                counts["accepted"] += 1
                print(f"  a bad rule was accepted: {name} ({place})", file=sys.stderr)
            except rc.RuleError as refused:  # a broken contract: named, with the rule's primal
                if f"rrule for {f.__module__}.bad_{name}" not in str(refused):  # (checking mode's too)
                    counts["unnamed"] += 1
                    print(f"  a bad rule was refused without its name: {refused}", file=sys.stderr)
            except (Exception, KeyboardInterrupt):
                pass
            counts["leaked"] += snapshot() != before
    counts["wrong"] += not right_after()
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="a few seconds: what the test suite runs")
    opts = parser.parse_args()
    interrupts, workers, gradients, rounds = (2_000, 4, 200, 3) if opts.small else (200_000, 4, 10_000, 100)
    for run in ENTRY_POINTS.values():  # rules registered on first use are registered before the baseline
        run()
    right_after()
    baseline = snapshot()
    start = time.perf_counter()
    report = {
        "storm": storm(interrupts),
        "threads": threads(workers, gradients),
        "deep_recursion": deep_recursion(),
        "bad_rules": bad_rules(rounds),
    }
    for part, counts in report.items():
        print(f"{part}: " + ", ".join(f"{k}={v:,}" for k, v in counts.items()))
    # the threads' registrar re-registered a rule: the tables' versions moved, nothing else may have
    unversioned = [0, 1, 2, 3, 4, 7, 8, 9]
    now = snapshot()
    final_leak = [now[i] for i in unversioned] != [baseline[i] for i in unversioned] \
        or inconsistent_caches() != 0
    if final_leak:
        print(f"  the state at the end differs: {now} != {baseline}; caches: {inconsistent_caches()}",
              file=sys.stderr)
    leaked = report["storm"]["leaked"] + report["deep_recursion"]["leaked"] + report["bad_rules"]["leaked"] \
        + report["threads"]["gc_off_samples"] + final_leak
    wrong = sum(report[p]["wrong"] for p in report) + report["deep_recursion"]["crashes"] \
        + report["bad_rules"]["accepted"] + report["bad_rules"]["unnamed"] + report["storm"]["stale_caches"] \
        + report["storm"]["torn_arrays"]
    stale = report["threads"]["stale_rules"] + report["threads"]["stale_registrations"]
    print(f"issue 27: {report['storm']['interrupts']:,} interrupts, {workers} threads x {gradients:,} "
          f"gradients with {report['threads']['registrations']:,} concurrent registrations: "
          f"{leaked} leaked states, {wrong} wrong results, {stale} stale rules "
          f"({time.perf_counter() - start:.0f} s)")
    return 0 if leaked == wrong == stale == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
