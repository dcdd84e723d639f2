"""Trace state: the stack of active traces, levels, the collector, the recursion limit, boxes, the tape."""

import gc
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest

import zygotepy as zp
from zygotepy._reverse import ReverseTrace
from zygotepy._trace import LEVELS, YOUNG_THRESHOLD, Box, new_trace


def test_traces_nest_by_level_and_the_stack_is_restored():
    assert LEVELS.get() == ()
    with new_trace(ReverseTrace) as outer:
        with new_trace(ReverseTrace) as inner:
            assert (outer.level, inner.level) == (0, 1)
            assert LEVELS.get() == (outer, inner) and inner.outer == (outer,)
        assert LEVELS.get() == (outer,)
    assert LEVELS.get() == ()


def test_the_stack_is_restored_when_the_function_raises():
    def boom(x):
        raise RuntimeError("user error")

    try:
        zp.gradient(boom, 1.0)
    except RuntimeError:
        pass
    assert LEVELS.get() == ()


def test_the_collector_stays_on_and_the_recursion_limit_is_the_users_while_tracing():
    limit, thresholds = sys.getrecursionlimit(), gc.get_threshold()
    seen = []
    zp.gradient(lambda x: seen.append((gc.isenabled(), sys.getrecursionlimit(), gc.get_threshold()))
                or x * 2.0, 1.0)
    assert seen == [(True, limit, (YOUNG_THRESHOLD, *thresholds[1:]))]
    assert gc.get_threshold() == thresholds


def test_a_collector_the_user_set_is_kept_and_given_back():
    thresholds = gc.get_threshold()
    try:
        for mine in [(0, 10, 10), (500_000, 3, 4), (700, 20, 20)]:
            gc.set_threshold(*mine)
            seen = []
            zp.gradient(lambda x: seen.append(gc.get_threshold()) or x * 2.0, 1.0)
            assert seen[0][0] in (0, max(mine[0], YOUNG_THRESHOLD)) and seen[0][1:] == mine[1:]
            assert gc.get_threshold() == mine
    finally:
        gc.set_threshold(*thresholds)


def test_each_thread_has_its_own_stack():
    seen = {}

    def worker():
        seen["levels"] = LEVELS.get()

    with new_trace(ReverseTrace):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen["levels"] == ()


def test_a_box_reports_its_primals_class_and_records_by_index():
    with new_trace(ReverseTrace) as trace:
        b = trace.box(np.ones(2))
        c = trace.box(np.zeros(2), lambda ct: (None, ct), ((0, b),), 1)
    assert type(b) is Box and isinstance(b, np.ndarray) and b.__class__ is np.ndarray
    assert (b._zp_index, c._zp_index) == (0, 1)
    assert trace.tape[0] is None and trace.tape[1][1:] == (1, 0, 0)  # indices, never boxes


def test_a_finished_trace_is_freed_by_reference_counting_alone():
    gc.disable()
    try:
        with new_trace(ReverseTrace) as trace:
            b = trace.box(1.5)
            y = trace.box(math.sin(1.5), lambda ct: (None, ct * math.cos(1.5)), ((0, b),), 1)
        alive = weakref.ref(trace)
        del trace, b, y
        assert alive() is None  # no cycle: freed without the collector
    finally:
        gc.enable()


def test_implicit_parameters_get_one_input_box_each():
    W = np.ones(2)
    with new_trace(ReverseTrace, {id(W): W}) as trace:
        assert trace.param_box(W) is trace.param_box(W)
        assert trace.with_params and trace.fast_path is None


# -- an interrupt at any moment leaves nothing behind ------------------------------------------------
def _interrupted_after(delay, run):
    """Run ``run()`` with Ctrl-C (SIGALRM raising ``KeyboardInterrupt``) arriving after ``delay``
    seconds; whether it arrived before ``run`` ended."""
    def ctrl_c(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    try:
        signal.setitimer(signal.ITIMER_REAL, delay)
        try:
            run()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except KeyboardInterrupt:
        return True
    finally:
        signal.signal(signal.SIGALRM, previous)
    return False


def _writes_back():
    """A clean gradient after the interrupts: right, and its in-place write reaches the array."""
    buffer = np.zeros(2)

    def f(x):
        buffer[...] = x
        return np.sum(x * x)

    (g,) = zp.gradient(f, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(g, [2.0, 4.0])
    np.testing.assert_array_equal(buffer, [1.0, 2.0])


_W = np.ones(3)
ENTRY_POINTS = {
    "gradient": lambda: zp.gradient(lambda x: np.sum(np.sin(x)), np.ones(2)),
    "jacobian_forward": lambda: zp.jacobian(np.sin, np.ones(2), mode="forward"),
    "jacobian_reverse": lambda: zp.jacobian(np.sin, np.ones(2), mode="reverse"),
    "hessian": lambda: zp.hessian(lambda x: np.sum(x ** 3), np.ones(2)),
    "jvp": lambda: zp.jvp(np.sin, (np.ones(2),), (np.ones(2),)),
    "checkpointed": lambda: zp.gradient(lambda x: zp.checkpointed(lambda h: np.sum(np.tanh(h)), x),
                                        np.ones(2)),
    "nested": lambda: zp.gradient(lambda x: zp.gradient(lambda y: y * y * x, x)[0], 1.5),
    "params": lambda: zp.gradient(lambda: np.sum(_W * _W), zp.params(_W)),
}


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_an_interrupt_at_any_moment_leaves_the_state_as_it_was(entry):
    run = ENTRY_POINTS[entry]
    state = (LEVELS.get(), gc.isenabled(), gc.get_threshold(), sys.getrecursionlimit())
    took = []
    for _ in range(6):
        start = time.perf_counter()
        run()
        took.append(time.perf_counter() - start)
    took = min(took)  # (after a warm-up: the first call rewrites and caches)
    rng = np.random.default_rng(0)
    interrupted = 0
    for _ in range(300):
        interrupted += _interrupted_after(float(rng.uniform(1e-6, took)), run)
        assert (LEVELS.get(), gc.isenabled(), gc.get_threshold(), sys.getrecursionlimit()) == state
    assert interrupted > 30
    _writes_back()


def test_other_threads_cyclic_garbage_is_collected_while_a_thread_differentiates():
    inside, release = threading.Event(), threading.Event()

    def f(x):
        inside.set()
        release.wait(10)
        return x * 2.0

    worker = threading.Thread(target=zp.gradient, args=(f, 1.0))
    worker.start()
    try:
        assert inside.wait(10)

        class Node:
            pass

        first = Node()
        first.self = first
        alive = weakref.ref(first)
        del first
        for _ in range(3 * YOUNG_THRESHOLD):  # cycles, left to the automatic collection
            n = Node()
            n.self = n
        assert alive() is None
    finally:
        release.set()
        worker.join()


def test_deep_recursion_raises_recursion_error_rather_than_overflowing_the_stack(tmp_path):
    program = textwrap.dedent("""
        import sys, zygotepy as zp
        sys.setrecursionlimit(30000)
        def down(x, n):
            return x if n == 0 else down(x * 1.0, n - 1)
        try:
            print(zp.gradient(lambda x: down(x, 25000), 1.0))
        except RecursionError:
            print("RecursionError")
        print(zp.gradient(lambda x: down(x, 50), 2.0), sys.getrecursionlimit())
    """)
    script = tmp_path / "deep.py"  # a file: its functions have source, so the engine rewrites them
    script.write_text(program)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-2000:]
    first, second = out.stdout.splitlines()
    assert first in ("RecursionError", "(1.0,)")
    assert second == "(1.0,) 30000"
