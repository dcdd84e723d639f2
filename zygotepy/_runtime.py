"""The runtime of rewritten code: the helpers its call sites call, and the binding of a
Python function to its rewritten version.

:mod:`zygotepy._transform` turns a function's source into code whose calls, operators and
subscripts go through helper names; this module gives those names their values (the
dispatcher's ``call``, functional ``x[i] = v`` updates, implicit-parameter lookups) and makes
the new function share the original's globals, closure cells (matched by name, so
``nonlocal`` writes are shared), defaults and class. Trace kinds hand :func:`python_target` to
the dispatcher, which uses it for every Python function without a rule.
"""

from __future__ import annotations

import importlib.util
import operator
import os
import sys
import types
import weakref
from typing import Any

import numpy as np

from zygotepy import _dispatch
from zygotepy._trace import LEVELS, Box
from zygotepy._transform import OPERATOR_HELPERS, is_generated, rewritten

_SKIP_MODULES = ("numpy", "scipy", "zygotepy")
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    dirs = []
    for name in names:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.abspath(location) + os.sep)
    return tuple(dirs)


#: Library code called as it is (its NumPy calls reach rules through NumPy's own protocols).
_SKIP_DIRS = _package_dirs(_SKIP_MODULES)


def inplace(op: Any, iop: Any, x: Any, v: Any) -> Any:
    """``x op= v``: in place for plain values and containers, functional when traced."""
    if LEVELS.get() and type(x) not in (list, dict, set) and (
        type(x) is Box or type(v) is Box or _dispatch.innermost(LEVELS.get(), (x, v), {}, False)
    ):
        return _dispatch.call(op, x, v)
    return iop(x, v)


def store(container: Any, index: Any, value: Any) -> None:
    """``a.b[i] = v`` and other stores that cannot be rebound: refused if they would hide a gradient."""
    if LEVELS.get() and type(container) is not Box and type(value) is Box and not isinstance(
            container, (list, dict)):
        raise TypeError(
            f"in-place assignment of a traced value into a {type(container).__name__} is not "
            "differentiable; write it functionally (build a new array with np.where/np.concatenate, "
            "or assign to a local name: `y = obj.buf; y[i] = v` is rewritten to a functional update)"
        )
    container[index] = value


def setitem(x: Any, index: Any, value: Any) -> Any:
    """``x[index] = value`` for a local name: in place unless a traced array is involved, then a
    functional update the name is rebound to (refused if another reference could see the old
    array: the caller's argument, an alias, a container holding it)."""
    if LEVELS.get() and type(x) not in (list, dict) and (type(x) is Box or type(value) is Box):
        if sys.getrefcount(x) > _LOCAL_ONLY_REFCOUNT:
            raise TypeError(
                "in-place assignment into an array that is also referenced elsewhere (an argument, "
                "an alias or a container) cannot be differentiated: the other reference would not "
                "see the update. Copy it first (`x = x.copy()`) or build a new array.")
        from rulescore.rules.indexing import setindex

        return _dispatch.call(setindex, x, index, value)
    x[index] = value
    return x


#: References to an array held only by one local name, seen from inside ``setitem``: the
#: caller's local, ``setitem``'s parameter and ``getrefcount``'s own argument.
_LOCAL_ONLY_REFCOUNT = 3


def param(x: Any) -> Any:
    """The box of an implicit parameter, for the array ``x`` read by an attribute (``W.T``) or an
    iteration (``for row in W``) that no call sees; anything else unchanged."""
    if type(x) is np.ndarray:
        levels = LEVELS.get()
        if levels and levels[-1].with_params:
            for trace in reversed(levels):
                if trace.params.get(id(x)) is x:
                    return trace.param_box(x)
    return x


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: reading a list, tuple or dict only moves a reference (no dispatch, unless
    implicit parameters may be inside); anything else goes through the dispatcher."""
    tx = type(x)
    if tx is list or tx is tuple or tx is dict:
        levels = LEVELS.get()
        if not levels or not levels[-1].with_params:
            return x[index]
    return _dispatch.call(operator.getitem, x, index)


#: The values of the rewritten code's helper names (``zygotepy._transform.HELPER_NAMES``).
HELPERS: dict[str, Any] = {"_zp_param": param, "_zp_call": _dispatch.call, "_zp_slice": slice,
                           "_zp_setitem": setitem, "_zp_store": store, "_zp_inplace": inplace,
                           "_zp_getitem": getitem, **OPERATOR_HELPERS}
_BY_FUNCTION = (weakref.WeakKeyDictionary[Any, Any](), weakref.WeakKeyDictionary[Any, Any]())


def transformed(fn: types.FunctionType, params: bool = False) -> Any:
    """The rewritten version of ``fn`` (``fn`` itself when it cannot be rewritten); with
    ``params``, the variant that also sees implicit parameters reached without a call."""
    cache = _BY_FUNCTION[params]
    try:
        return cache[fn]
    except KeyError:
        pass
    code = fn.__code__
    if is_generated(code):
        result: Any = fn
    else:
        new = rewritten(fn, params)
        if new is None:
            result = fn
        else:
            cells = dict(zip(code.co_freevars, fn.__closure__ or (), strict=True))
            closure = tuple(cells[n] if n in cells else types.CellType(HELPERS[n]) for n in new.co_freevars)
            result = types.FunctionType(new, fn.__globals__, fn.__name__, fn.__defaults__, closure)
            result.__kwdefaults__ = fn.__kwdefaults__
            result.__qualname__ = fn.__qualname__
    cache[fn] = result
    return result


def _skipped(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    if code is not None:  # by file, so doctests run in a library's namespace are still user code
        name = code.co_filename
        return name.startswith(_SKIP_DIRS) and not (name.startswith(_ENGINE_DIR) and
                                                     not os.path.basename(name).startswith("_"))
    module = getattr(fn, "__module__", None) or ""
    return module.split(".", 1)[0] in _SKIP_MODULES


def python_target(fn: Any, params: bool = False) -> Any:
    """What to run to differentiate through ``fn``, or ``None`` if it is not Python code."""
    tf = type(fn)
    if tf is types.FunctionType:
        filename = fn.__code__.co_filename
        if filename.startswith(_ENGINE_DIR) and os.path.basename(filename).startswith("_"):
            return fn  # the engine's own API (nested gradient, hooks) manages traces itself
        return None if _skipped(fn) else transformed(fn, params)
    if tf is type:
        init = fn.__dict__.get("__init__") if "__init__" in fn.__dict__ else None
        if (isinstance(init, types.FunctionType) and fn.__new__ is object.__new__ and not _skipped(fn)
                and init.__code__.co_filename[:1] != "<"):
            return _constructor(fn)
        return None
    method = tf.__dict__.get("__call__") or next(
        (k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(method, types.FunctionType) and not _skipped(tf):
        return lambda *args, **kwargs: _dispatch.call(method, fn, *args, **kwargs)
    return None


def _constructor(cls: type) -> Any:
    def construct(*args: Any, **kwargs: Any) -> Any:
        obj = object.__new__(cls)
        _dispatch.call(cls.__init__, obj, *args, **kwargs)
        return obj

    return construct
