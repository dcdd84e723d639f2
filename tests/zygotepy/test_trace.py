"""Trace state: the stack of active traces, levels, the collector pause, boxes and the tape."""

import gc
import math
import sys
import threading
import weakref

import numpy as np

import zygotepy as zp
from zygotepy._reverse import ReverseTrace
from zygotepy._trace import LEVELS, Box, new_trace


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


def test_the_collector_and_the_recursion_limit_are_the_users_while_tracing():
    limit, thresholds = sys.getrecursionlimit(), gc.get_threshold()
    seen = []
    zp.gradient(lambda x: seen.append((gc.isenabled(), sys.getrecursionlimit(), gc.get_threshold()))
                or x * 2.0, 1.0)
    assert seen == [(True, limit, thresholds)]


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
        c = trace.record(np.zeros(2), lambda ct: (None, ct), ((0, b._zp_index),), 1)
    assert type(b) is Box and isinstance(b, np.ndarray) and b.__class__ is np.ndarray
    assert (b._zp_index, c._zp_index) == (0, 1)
    assert trace.tape[0] is None and trace.tape[1][1:] == (1, 0, 0)  # indices, never boxes


def test_a_finished_trace_is_freed_by_reference_counting_alone():
    gc.disable()
    try:
        with new_trace(ReverseTrace) as trace:
            b = trace.box(1.5)
            y = trace.record(math.sin(1.5), lambda ct: (None, ct * math.cos(1.5)), ((0, b._zp_index),), 1)
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
