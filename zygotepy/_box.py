"""The behaviour of :class:`~zygotepy._trace.Box`: every operation routes to the dispatcher.

Installed as a table onto the class (and ``__call__`` onto the box's bound C methods): binary
operators (and their reflections), unary operators, NumPy's ``__array_ufunc__`` and
``__array_function__`` protocols, indexing, iteration and attribute access (methods of the
primal's class are bound to the box, data attributes go through the ``getattr`` rule).
Conversions that would silently drop the gradient outside rewritten code (``__float__``,
``__complex__``, ``__array__``) raise instead.
"""

from __future__ import annotations

import operator
import types
from typing import Any

import numpy as np

from zygotepy import _dispatch, _views
from zygotepy._dispatch import NOT_FAST
from zygotepy._errors import UntraceableError, unseen_code, user_code
from zygotepy._trace import LEVELS, PLAIN_ATTRIBUTES, BoundBoxMethod, Box, opaque_callable, unbox_all

BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "matmul": operator.matmul, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift, "divmod": divmod,
}
COMPARISONS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
               "eq": operator.eq, "ne": operator.ne}
UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert}


# The operators are most of the calls a differentiated program makes: each tries the innermost
# trace's fast path itself (``traced_call``'s first step, inlined: one Python frame less per
# operation) and hands anything else to the dispatcher's general path.
def _binary(op: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        levels = LEVELS.get()
        if not levels:
            return _dispatch.call_from_box(op, self, other)  # raises: the box escaped
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(op, (self, other), top)
            if y is not NOT_FAST:
                return y
        return _dispatch.resolve(levels, op, (self, other), {}, True)

    return method


def _reflected(op: Any) -> Any:
    def method(self: Box, other: Any) -> Any:
        levels = LEVELS.get()
        if not levels:
            return _dispatch.call_from_box(op, other, self)
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(op, (other, self), top)
            if y is not NOT_FAST:
                return y
        return _dispatch.resolve(levels, op, (other, self), {}, True)

    return method


def _unary(op: Any) -> Any:
    def method(self: Box) -> Any:
        levels = LEVELS.get()
        if not levels:
            return _dispatch.call_from_box(op, self)
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(op, (self,), top)
            if y is not NOT_FAST:
                return y
        return _dispatch.resolve(levels, op, (self,), {}, True)

    return method


_op: Any
for _name, _op in BINARY.items():
    setattr(Box, f"__{_name}__", _binary(_op))
    setattr(Box, f"__r{_name}__", _reflected(_op))
for _name, _op in {**COMPARISONS, **UNARY}.items():
    setattr(Box, f"__{_name}__", _binary(_op) if _name in COMPARISONS else _unary(_op))


def _array_ufunc(self: Box, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    fn = ufunc if method == "__call__" else getattr(ufunc, method)
    _refuse_plain_out(fn, kwargs)
    return _dispatch.call_primitive(fn, *inputs, **kwargs)


def _array_function(self: Box, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
    _refuse_plain_out(func, kwargs)
    return _dispatch.call_primitive(func, *args, **kwargs)


def _refuse_plain_out(fn: Any, kwargs: dict[str, Any]) -> None:
    """NumPy hands a box its protocols only from code the engine did not rewrite (rewritten code
    calls through the dispatcher). A write of a traced value into a plain array's memory there
    (``acc += x``, ``out=acc``) cannot be followed: that code reads ``acc`` afterwards as it is."""
    out = kwargs.get("out")
    targets = out if type(out) is tuple else (out,)
    if any(type(t) is np.ndarray for t in targets):
        where, why = unseen_code()
        raise UntraceableError(
            f"{_dispatch.public_name(fn)} writes a traced value into a plain array (out=, or an in-place "
            f"operator such as +=) inside {where}, which runs as it is: {why}. The array's later reads "
            "there would not see the traced value, so the result and its gradient would be wrong. Build "
            "a new array instead (acc = acc + x), or call that code explicitly from the differentiated "
            "function.")


def _getitem(self: Box, index: Any) -> Any:
    return _dispatch.call_from_box(operator.getitem, self, index)


def _setitem(self: Box, index: Any, value: Any) -> None:
    raise UntraceableError(
        f"in-place assignment into a traced value inside {user_code()} is not differentiable "
        "here (the target is not a local name, so it cannot be rebound to the updated array); "
        "assign to a local name first (`y = obj.buf; y[i] = v`) or build a new array, e.g. with "
        "np.where or np.concatenate"
    )


def _iter(self: Box) -> Any:
    value = self._zp_value
    if isinstance(value, dict):
        return iter(value)
    return (_getitem(self, i) for i in range(len(value)))


def _len(self: Box) -> int:
    return len(self._zp_value)


def _bool(self: Box) -> bool:
    return bool(unbox_all(self))


def _index(self: Box) -> int:
    return operator.index(unbox_all(self))


def _int(self: Box) -> int:
    return int(unbox_all(self))


def _refuse(kind: str) -> Any:
    def method(self: Box, *args: Any, **kwargs: Any) -> Any:
        where, why = unseen_code()
        raise UntraceableError(
            f"a traced value was converted to a plain {kind} inside {where}, so its gradient would be "
            f"lost. That code runs as it is: {why}. Register an rrule for the function that does the "
            f"conversion (@rulescore.rrule.register(fn)), or call it on values that are not "
            f"differentiated (zygotepy.dropgrad(x)).")

    return method


def _str(self: Box) -> str:
    return str(unbox_all(self))


def _repr(self: Box) -> str:
    return f"Traced({unbox_all(self)!r}, level={self._zp_trace.level})"


def _format(self: Box, spec: str) -> str:
    return format(unbox_all(self), spec)


def _hash(self: Box) -> int:
    """Integers, strings and bytes keep their value's hash, so traced ones still index tables. Any
    other traced value refuses, as JAX's tracers do: a lookup keyed on it would be decided by its
    value (a hash by identity misses equal keys; a hash by value answers with a constant), and the
    gradient through that choice would be lost."""
    value = unbox_all(self)
    if isinstance(value, (int, np.integer, str, bytes)):
        return hash(value)
    raise TypeError(
        f"a traced {type(value).__name__} is used as a dictionary key or set member inside {user_code()}; "
        "which entry is found would depend on its value, which differentiation cannot follow. Look it "
        "up by its plain value, zygotepy.dropgrad(x) (no gradient flows through the lookup), or "
        "compare values explicitly (x == key)")


_NUMPY_EXPORTS = frozenset({"__array_interface__", "__array_struct__"})
def _getattr(self: Box, name: str) -> Any:
    value = object.__getattribute__(self, "_zp_value")
    if name in _NUMPY_EXPORTS:
        raise AttributeError(name)  # NumPy must reach __array__, which refuses, not read the buffer
    if name in PLAIN_ATTRIBUTES or (name.startswith("__") and name.endswith("__")):
        return getattr(unbox_all(value), name)
    primal = unbox_all(value)
    if name == "flat" and type(primal) is np.ndarray:  # an index map into the array: reads and writes
        return _views.FlatIndexer(self, _dispatch.call)
    if name in getattr(primal, "__dict__", ()):
        if opaque_callable(primal.__dict__[name]):  # a function kept in a field (SciPy's _asarray)
            return primal.__dict__[name]
        kind, attr = _dispatch.attribute_kind(type(primal), name)
        if kind == "cached":  # a cache is a function of the fields: recompute it from them
            return _dispatch.call_from_box(attr, self)
        return _dispatch.call_from_box(getattr, self, name)  # an instance attribute shadows the class's
    kind, attr = _dispatch.attribute_kind(type(primal), name)
    if kind == "method":
        return types.MethodType(attr, self)
    if kind == "cmethod":
        return BoundBoxMethod(attr, self)
    if kind == "property" or kind == "cached":  # run (rewritten) on the box; a cache is not filled
        return _dispatch.call_from_box(attr, self)
    if kind == "hook" and not _dispatch.getattr_has_own_rule(primal, name):
        return _dispatch.call_from_box(attr, self, name)
    if kind == "class":
        return getattr(value, name)
    return _dispatch.call_from_box(getattr, self, name)


def _copy(self: Box, memo: Any = None) -> Any:
    """``copy.copy``/``copy.deepcopy`` of a traced value: an array is copied by ``np.copy`` (its
    gradient flows to the original); a number is immutable and is its own copy."""
    value = unbox_all(self)
    if isinstance(value, np.ndarray):
        return _dispatch.call_from_box(np.copy, self)
    if isinstance(value, (int, float, complex, np.generic)):
        return self
    raise UntraceableError(
        f"copying a traced {type(value).__name__} inside {user_code()} is not differentiable here; "
        "copy its fields one by one, or build a new object from them")


def _call_box(self: Box, *args: Any, **kwargs: Any) -> Any:
    return _dispatch.call_from_box(self, *args, **kwargs)


def _call_bound_method(self: BoundBoxMethod, *args: Any, **kwargs: Any) -> Any:
    return _dispatch.call_from_box(self.__func__, self.__self__, *args, **kwargs)


_METHODS = {
    "__call__": _call_box,
    "__array_ufunc__": _array_ufunc, "__array_function__": _array_function,
    "__getitem__": _getitem, "__setitem__": _setitem, "__iter__": _iter, "__len__": _len,
    "__bool__": _bool, "__index__": _index, "__int__": _int, "__str__": _str, "__repr__": _repr,
    "__format__": _format, "__hash__": _hash, "__getattr__": _getattr,
    "__copy__": _copy, "__deepcopy__": _copy,
    "__float__": _refuse("float"), "__complex__": _refuse("complex"),
    "__array__": _refuse("NumPy array"),
}
for _name, _fn in _METHODS.items():
    setattr(Box, _name, _fn)
Box.__array_priority__ = 1000  # type: ignore[attr-defined]
BoundBoxMethod.__call__ = _call_bound_method  # type: ignore[method-assign]
