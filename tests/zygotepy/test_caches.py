"""Caches keyed on user code do not keep it alive, and an edited, reloaded module is seen."""

import gc
import importlib
import math
import sys
import weakref

import numpy as np
import pytest

import zygotepy as zp
from zygotepy._caches import BoundedCache, WeakBoundedCache


def _make_class():
    class Point:
        def __init__(self, w):
            self.w = w

        def scaled(self, k):
            return self.w * k

        def __add__(self, other):  # refers to its own class: a cycle through the rewritten method
            return Point(self.w + other.w)

    return Point


def _differentiate_with_a_new_class():
    """Differentiate code using a fresh class; return a weak reference to the class."""
    point = _make_class()
    grad = zp.gradient(lambda x: (point(x) + point(x)).scaled(2.0) + point(x).w, 1.5)
    assert grad == (5.0,)
    return weakref.ref(point)


def test_classes_used_in_differentiated_code_are_freed():
    """Every cache the engine keys on classes and functions is weak or bounded: a program that
    makes classes without end does not keep them (1100 exceeds every bound)."""
    first = _differentiate_with_a_new_class()
    for _ in range(1100):
        _differentiate_with_a_new_class()
    gc.collect()
    assert first() is None


def _differentiate_a_closure_over_an_array():
    class Batch(np.ndarray):
        pass

    data = np.ones(3).view(Batch)
    assert zp.gradient(lambda w: (w * data).sum(), 2.0) == (3.0,)
    return weakref.ref(data)


def test_closures_are_freed_with_their_arrays_after_gradient_returns():
    alive = _differentiate_a_closure_over_an_array()
    gc.collect()
    assert alive() is None


def test_bounded_cache_forgets_when_full():
    cache = BoundedCache(3)
    for k in range(7):
        cache.put(k, k * k)
        assert len(cache) <= 3 and cache[k] == k * k


def test_weak_bounded_cache_drops_dead_keys_and_stays_bounded():
    class Key:
        pass

    cache = WeakBoundedCache(3)
    keys = [Key() for _ in range(5)]
    for k in keys:
        cache.put(k, "v")
        assert len(cache) <= 3
    del k, keys
    gc.collect()
    assert len(cache) == 0


def test_an_edited_module_is_differentiated_with_its_new_body_after_reload(tmp_path, monkeypatch):
    path = tmp_path / "edited_model.py"
    path.write_text("import math\n\ndef loss(x):\n    y = math.sin(x) * 2.0\n    return y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_model")
    try:
        assert zp.gradient(module.loss, 0.0) == (2.0,)
        # the same number of lines and the same last line: only the body differs
        path.write_text("import math\n\ndef loss(x):\n    y = math.cos(x) * x + 2.0\n    return y\n")
        importlib.invalidate_caches()
        module = importlib.reload(module)
        x = 0.5
        assert zp.gradient(module.loss, x) == (pytest.approx(-math.sin(x) * x + math.cos(x)),)
    finally:
        sys.modules.pop("edited_model", None)
