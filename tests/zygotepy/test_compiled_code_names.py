"""Compiled code with no rule (numba's ``@njit``, ``@vectorize``, ``@guvectorize``, a bare ufunc
from another package) is refused naming the Python function it was compiled from, or the module
attribute holding it, and the Python function of the user's that called it: never the ufunc
type's module (``numpy._crps_ensemble_gufunc``) or the wrapper class's ``__call__``."""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

import numpy as np
import pytest

import zygotepy as zp


def _squares(x: Any) -> Any:
    return x * x


class _CompiledStandIn(functools.partial):  # type: ignore[type-arg]
    """A callable with a C ``__call__`` that keeps the Python function it was made from, as
    numba's dispatchers do (their classes live in numba's modules)."""


_CompiledStandIn.__module__ = "numba.core.registry"


def _module_with(name: str, value: Any) -> types.ModuleType:
    module = types.ModuleType("scoring_stand_in")
    setattr(module, name, value)
    sys.modules[module.__name__] = module
    return module


def test_a_compiled_callable_is_named_by_its_python_function() -> None:
    compiled = _CompiledStandIn(np.frompyfunc(_squares, 1, 1))
    compiled.py_func = _squares  # type: ignore[attr-defined]

    def loss(x: Any) -> Any:
        return np.sum(compiled(x))

    with pytest.raises(zp.UntraceableError) as caught:
        zp.gradient(loss, np.ones(3))
    message = str(caught.value)
    assert message.startswith(f"{__name__}._squares (compiled by numba from that Python function)")
    assert "inside test_a_compiled_callable_is_named_by_its_python_function.<locals>.loss" in message
    assert f"@rulescore.rrule.register({__name__}._squares)" in message


def test_a_bare_ufunc_is_named_by_the_module_holding_it() -> None:
    ufunc = np.frompyfunc(_squares, 1, 1)
    module = _module_with(ufunc.__name__, ufunc)
    try:
        def crps(x: Any) -> Any:
            return np.sum(ufunc(x))

        with pytest.raises(zp.UntraceableError) as caught:
            zp.gradient(crps, np.ones(3))
    finally:
        del sys.modules[module.__name__]
    message = str(caught.value)
    assert message.startswith(f"scoring_stand_in.{ufunc.__name__} (a compiled ufunc)")
    assert "inside test_a_bare_ufunc_is_named_by_the_module_holding_it.<locals>.crps" in message
    assert "numpy." not in message.split(" has no rrule")[0]


def test_numba_njit_vectorize_and_guvectorize_are_named_by_the_user_functions() -> None:
    numba = pytest.importorskip("numba")

    @numba.njit
    def jitted(x: Any) -> Any:
        return np.sum(x ** 2)

    @numba.vectorize(["float64(float64)"])
    def square(x: float) -> float:
        return x * x

    @numba.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->()")
    def _crps_ensemble_gufunc(obs: Any, forecasts: Any, out: Any) -> None:
        out[0] = np.sum(np.abs(obs - forecasts))

    module = _module_with("_crps_ensemble_gufunc", _crps_ensemble_gufunc)

    def crps_ensemble(obs: Any, forecasts: Any) -> Any:  # properscoring's public function
        return _crps_ensemble_gufunc(obs, forecasts)

    try:
        for loss, name, caller in [
            (lambda x: jitted(x), f"{__name__}.{jitted.py_func.__qualname__}", "<lambda>"),
            (lambda x: np.sum(square(x)), f"{__name__}.{square.__wrapped__.__qualname__}", "<lambda>"),
            (lambda x: np.sum(crps_ensemble(x, 2 * x)), "scoring_stand_in._crps_ensemble_gufunc",
             "crps_ensemble"),
        ]:
            with pytest.raises(zp.UntraceableError) as caught:
                zp.gradient(loss, np.ones((2, 3)))
            message = str(caught.value)
            assert message.startswith(name), message
            assert f"inside {caller}" in message or f".{caller} (" in message, message
            assert "numpy._crps" not in message and "__call__" not in message
    finally:
        del sys.modules[module.__name__]
