"""Rules for reading parts of values: ``operator.getitem`` and the builtin ``getattr``.

``operator.getitem``:

| primal                   | cotangent of the primal                                            |
|--------------------------|--------------------------------------------------------------------|
| ``ndarray``, NumPy       | ``unindex(ybar, index, x.shape, dtype)``: a scatter-add, so        |
| scalar                   | repeated integer indices accumulate; ints, slices, ``...``,        |
|                          | ``np.newaxis``, boolean masks, integer arrays, tuples mixing them  |
| ``tuple`` / ``list``     | ``Tangent[tuple]`` / ``Tangent[list]``: ``ybar`` at the positions  |
|                          | read (an int or a slice), ``ZeroTangent()`` elsewhere              |
| NamedTuple               | ``Tangent[ThatType](field=ybar)``                                  |
| ``dict``                 | ``Tangent[dict]({key: ybar})``                                     |
| ``str``, ``bytes``,      | non-differentiable                                                 |
| ``range``                |                                                                    |

The index always gets ``NoTangent()``. The scatter :func:`unindex` is itself a differentiable
primitive (its pullback is ``zbar[index]``), so second derivatives go through indexing.

``getattr(x, name[, default])`` (engines read attributes of traced objects this way): the
``ndarray`` attributes ``T``, ``mT``, ``real`` and ``imag`` have derivatives (``ARRAY_ATTRIBUTES``,
also for NumPy and Python scalars); ``shape``, ``dtype`` and the like (``NONDIFF_ATTRIBUTES``) give
``NoTangent``; a bound method ``x.f`` passes its cotangent to ``x`` (the tangent of a bound method
is that of its ``self``); a field of any other object (dataclass, NamedTuple, plain object) gives
``Tangent[type(x)](name=ybar)``; a class-level constant gives ``ZeroTangent()``. A computed
attribute (a ``property``) has no derivative here: its pullback raises when a nonzero cotangent
reaches it. ``name`` gets ``NoTangent``; ``default``, when it was returned, gets ``ybar``.
"""

from __future__ import annotations

import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._arithmetic import is_zero
from rulescore._helpers import non_differentiable
from rulescore._projection import project, unbroadcast
from rulescore._registry import frule, rrule
from rulescore._structure import fields_of, is_namedtuple_type
from rulescore._tangent import Tangent, tangent_type
from rulescore._thunks import unthunk
from rulescore._zeros import NO_TANGENT_TYPES, NoTangent, ZeroTangent

# -- the scatter primitive -----------------------------------------------------------------------


def _override(value: Any) -> Any:
    """``value`` if it overrides NumPy functions (a tracer), else ``None``."""
    method = getattr(type(value), "__array_function__", None)
    if method is None or method is np.ndarray.__array_function__:
        return None
    return value


def _plain_index(index: Any) -> Any:
    """The index with lists turned into arrays (NumPy reads them as integer/boolean arrays)."""
    if isinstance(index, list):
        return np.asarray(index)
    if isinstance(index, tuple):
        return tuple(np.asarray(i) if isinstance(i, list) else i for i in index)
    return index


def _may_repeat(index: Any) -> bool:
    """Whether the index holds an integer array, which may read a position more than once."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, np.ndarray) and p.dtype.kind in "iu" and p.size > 1 for p in parts)


def unindex(ybar: Any, index: Any, shape: tuple[int, ...], dtype: Any) -> Any:
    """Scatter-add ``ybar`` into ``zeros(shape, dtype)`` at ``index``: the adjoint of ``x[index]``.

    Positions read more than once by an integer-array index accumulate. A differentiable
    primitive: its pullback is ``zbar[index]``. A traced ``ybar`` is handed to its
    ``__array_function__``, so engines see this call like any NumPy function.

    Example:
        >>> import numpy as np
        >>> unindex(np.ones(3), np.array([0, 0, 2]), (4,), np.float64)
        array([2., 0., 1., 0.])
    """
    traced = _override(ybar)
    if traced is not None:
        return traced.__array_function__(unindex, (type(traced),), (ybar, index, shape, dtype), {})
    ybar = np.asarray(ybar)
    out = np.zeros(shape, np.result_type(dtype, ybar.dtype))
    index = _plain_index(index)
    if _may_repeat(index):
        np.add.at(out, index, ybar)
    else:
        out[index] = ybar
    return out


def _bind_unindex(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    names = ("index", "shape", "dtype")
    bound = {**dict(zip(names, args, strict=False)), **kwargs}
    return bound["index"]


@rrule.register(unindex)
def unindex_rrule(ybar: Any, *args: Any, **kwargs: Any) -> Any:
    """The pullback of a scatter-add is a gather: ``ybar_bar = zbar[index]``."""
    z = unindex(ybar, *args, **kwargs)
    index = _bind_unindex(args, kwargs)
    rest = (NoTangent(),) * len(args)

    def unindex_pullback(zbar: Any) -> Any:
        zbar = unthunk(zbar)
        if is_zero(zbar):
            return (NoTangent(), ZeroTangent(), *rest)
        return (NoTangent(), project(ybar, zbar[index]), *rest)

    return z, unindex_pullback


@frule.register(unindex)
def unindex_frule(tangents: Any, ybar: Any, *args: Any, **kwargs: Any) -> Any:
    z = unindex(ybar, *args, **kwargs)
    dot = unthunk(tangents[1])
    if is_zero(dot):
        return z, ZeroTangent()
    return z, project(z, unindex(dot, *args, **kwargs))


# -- functional setitem ----------------------------------------------------------------------------


def setindex(x: Any, index: Any, value: Any) -> Any:
    """A copy of ``x`` with ``x[index] = value``: the functional form of an in-place store.

    Engines rewrite ``x[i] = v`` on a traced array to ``x = setindex(x, i, v)``. The original
    array is never modified. An integer-array index must not repeat positions (the pullback
    would credit every write, NumPy keeps only the last).

    Example:
        >>> import numpy as np
        >>> x = np.zeros(3)
        >>> setindex(x, 1, 5.0), x
        (array([0., 5., 0.]), array([0., 0., 0.]))
    """
    x = np.asarray(x)
    out = np.array(x, dtype=np.result_type(x.dtype, np.asarray(value).dtype), copy=True)
    index = _plain_index(index)
    if _repeats(index):
        raise ValueError("setindex: an integer-array index writes some positions more than once; "
                         "NumPy keeps only the last write, which has no well-defined derivative here: "
                         "deduplicate the index first")
    out[index] = value
    return out


def _repeats(index: Any) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if isinstance(p, np.ndarray) and p.dtype.kind in "iu"]
    if not arrays:
        return False
    flat = np.stack([a.ravel() for a in np.broadcast_arrays(*arrays)], axis=-1)
    return len(np.unique(flat, axis=0)) < len(flat)


def _kept_mask(x: Any, index: Any) -> Any:
    return setindex(np.ones(np.shape(x)), index, 0.0)


@rrule.register(setindex)
def setindex_rrule(x: Any, index: Any, value: Any) -> Any:
    y = setindex(x, index, value)

    def setindex_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return NoTangent(), ZeroTangent(), NoTangent(), ZeroTangent()
        vbar = ybar[_plain_index(index)]
        shape = np.shape(value)
        if np.shape(vbar) != shape:  # the value was broadcast into the selection: sum it back
            vbar = np.sum(vbar) if not shape else unbroadcast(vbar, shape)
        return NoTangent(), project(x, ybar * _kept_mask(x, index)), NoTangent(), project(value, vbar)

    return y, setindex_pullback


@frule.register(setindex)
def setindex_frule(tangents: Any, x: Any, index: Any, value: Any) -> Any:
    y = setindex(x, index, value)
    xdot, vdot = unthunk(tangents[1]), unthunk(tangents[3])
    if is_zero(xdot) and is_zero(vdot):
        return y, ZeroTangent()
    base = np.zeros(np.shape(y), y.dtype) if is_zero(xdot) else xdot
    return y, project(y, setindex(base, index, 0.0 if is_zero(vdot) else vdot))


# -- getitem -----------------------------------------------------------------------------------


def _cotangent_dtype(x: Any) -> Any:
    dt = x.dtype
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def array_getitem_rrule(x: Any, index: Any) -> Any:
    y = x[index]
    shape, dtype = tuple(x.shape), _cotangent_dtype(x)

    def getitem_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return NoTangent(), ZeroTangent(), NoTangent()
        return NoTangent(), project(x, unindex(ybar, index, shape, dtype)), NoTangent()

    return y, getitem_pullback


def array_getitem_frule(tangents: Any, x: Any, index: Any) -> Any:
    y = x[index]
    xdot = unthunk(tangents[1])
    if is_zero(xdot):
        return y, ZeroTangent()
    return y, project(y, xdot[index])


def _entries(t: Any, n: int) -> list[Any]:
    """The ``n`` per-position entries of a tangent of a tuple, list or NamedTuple."""
    t = unthunk(t)
    if is_zero(t):
        return [ZeroTangent()] * n
    if isinstance(t, Tangent):
        entries = list(t.backing) if isinstance(t.backing, tuple) else list(t)
    elif isinstance(t, (tuple, list)) or (isinstance(t, np.ndarray) and t.ndim == 1):
        entries = list(t)
    else:
        raise TypeError(f"a {type(t).__name__} is not a tangent of a sequence of length {n}")
    if len(entries) != n:
        raise ValueError(f"a tangent with {len(entries)} entries for a sequence of length {n}")
    return entries


def _sequence_tangent(x: Any, entries: list[Any]) -> Any:
    make = tangent_type(type(x))
    if is_namedtuple_type(type(x)):
        return make(**dict(zip(type(x)._fields, entries, strict=True)))
    return make(*entries)


def sequence_getitem_rrule(x: Any, index: Any) -> Any:
    y = x[index]
    n = len(x)
    positions = range(n)[index]

    def getitem_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return NoTangent(), ZeroTangent(), NoTangent()
        entries: list[Any] = [ZeroTangent()] * n
        if isinstance(positions, range):
            for p, e in zip(positions, _entries(ybar, len(positions)), strict=True):
                entries[p] = project(x[p], e)
        else:
            entries[positions] = project(y, ybar)
        return NoTangent(), _sequence_tangent(x, entries), NoTangent()

    return y, getitem_pullback


def sequence_getitem_frule(tangents: Any, x: Any, index: Any) -> Any:
    y = x[index]
    xdot = unthunk(tangents[1])
    if is_zero(xdot):
        return y, ZeroTangent()
    entries = _entries(xdot, len(x))
    positions = range(len(x))[index]
    if isinstance(positions, range):
        return y, tangent_type(type(y))(*(entries[p] for p in positions))
    return y, entries[positions]


def _dict_entry(t: Any, key: Any) -> Any:
    t = unthunk(t)
    if is_zero(t):
        return ZeroTangent()
    if isinstance(t, Tangent):
        return dict(t.items()).get(key, ZeroTangent())
    return t.get(key, ZeroTangent())


def dict_getitem_rrule(x: Any, key: Any) -> Any:
    y = x[key]

    def getitem_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return NoTangent(), ZeroTangent(), NoTangent()
        return NoTangent(), tangent_type(type(x))({key: project(y, ybar)}), NoTangent()

    return y, getitem_pullback


def dict_getitem_frule(tangents: Any, x: Any, key: Any) -> Any:
    return x[key], _dict_entry(tangents[1], key)


#: ``primal types: (rrule, frule)`` for ``operator.getitem(x, index)``.
GETITEM: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {
    (np.ndarray, np.generic): (array_getitem_rrule, array_getitem_frule),
    (tuple, list): (sequence_getitem_rrule, sequence_getitem_frule),
    dict: (dict_getitem_rrule, dict_getitem_frule),
}

#: Primal types whose items carry no tangent.
NONDIFF_GETITEM: tuple[type, ...] = (str, bytes, range)


# -- getattr -----------------------------------------------------------------------------------


def _is_complex(x: Any) -> bool:
    return isinstance(x, complex) or (hasattr(x, "dtype") and x.dtype.kind == "c")


def _real_grad(x: Any, ybar: Any) -> Any:
    return project(x, ybar)


def _imag_grad(x: Any, ybar: Any) -> Any:
    return project(x, 1j * ybar) if _is_complex(x) else ZeroTangent()


def _imag_push(x: Any, xdot: Any) -> Any:
    return np.imag(xdot) if _is_complex(x) else ZeroTangent()


def _swap_last(v: Any) -> Any:
    return np.swapaxes(v, -1, -2)


#: ``attribute: (pullback (x, ybar) -> xbar, pushforward (x, xdot) -> ydot)`` for arrays and
#: numbers.
ARRAY_ATTRIBUTES: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "T": (lambda x, ybar: project(x, np.transpose(ybar)), lambda x, xdot: np.transpose(xdot)),
    "mT": (lambda x, ybar: project(x, _swap_last(ybar)), lambda x, xdot: _swap_last(xdot)),
    "real": (_real_grad, lambda x, xdot: np.real(xdot)),
    "imag": (_imag_grad, _imag_push),
}

#: Array attributes that carry no derivative.
NONDIFF_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides", "flags", "base", "ctypes",
    "data", "device", "__array_interface__", "__array_struct__", "__array_priority__",
})

_NUMERIC = (np.ndarray, np.generic, int, float, complex)

_MISSING: Any = object()


def _read(x: Any, name: str, default: tuple[Any, ...]) -> tuple[Any, bool]:
    """``(getattr(x, name, *default), whether the default was used)``."""
    if default:
        y = getattr(x, name, _MISSING)
        return (default[0], True) if y is _MISSING else (y, False)
    return getattr(x, name), False


def _kind(x: Any, name: str, y: Any) -> str:
    """How ``getattr(x, name)`` is differentiated: ``none`` (no tangent), ``table`` (an array
    attribute), ``self`` (a bound method: the tangent is x's), ``field``, ``constant`` or
    ``unknown``."""
    if isinstance(x, NO_TANGENT_TYPES):
        return "none"
    if getattr(y, "__self__", None) is x and callable(y):
        return "self"
    if isinstance(x, _NUMERIC):
        if name in ARRAY_ATTRIBUTES:
            return "table"
        return "none" if name in NONDIFF_ATTRIBUTES else "unknown"
    if name in fields_of(x):
        return "field"
    try:
        static = inspect.getattr_static(type(x), name)
    except AttributeError:
        return "unknown"
    if hasattr(type(static), "__get__") and not isinstance(static, (types.FunctionType, staticmethod)):
        return "unknown"  # a property or other computed attribute
    return "constant"


def _no_derivative(x: Any, name: str) -> TypeError:
    return TypeError(
        f"getattr: no derivative for attribute {name!r} of a {type(x).__name__}: it is neither "
        "a field nor a known array attribute (a property is computed; read the fields it uses, "
        "or register a rule for its getter)"
    )


def getattr_rrule(x: Any, name: Any, *default: Any) -> Any:
    y, used_default = _read(x, name, default)
    kind = "default" if used_default else _kind(x, name, y)

    def getattr_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        rest: tuple[Any, ...] = (ZeroTangent(),) * len(default)
        if is_zero(ybar) or kind in ("none", "constant"):
            xbar: Any = NoTangent() if kind == "none" else ZeroTangent()
            return (NoTangent(), xbar, NoTangent(), *rest)
        if kind == "default":
            return NoTangent(), ZeroTangent(), NoTangent(), project(default[0], ybar)
        if kind == "table":
            xbar = ARRAY_ATTRIBUTES[name][0](x, ybar)
        elif kind == "self":
            xbar = ybar
        elif kind == "field":
            xbar = tangent_type(type(x))(**{name: project(y, ybar)})
        else:
            raise _no_derivative(x, name)
        return (NoTangent(), xbar, NoTangent(), *rest)

    return y, getattr_pullback


def getattr_frule(tangents: Any, x: Any, name: Any, *default: Any) -> Any:
    y, used_default = _read(x, name, default)
    if used_default:
        return y, tangents[3]
    kind = _kind(x, name, y)
    if kind == "none":
        return y, NoTangent()
    xdot = unthunk(tangents[1])
    if is_zero(xdot) or kind == "constant":
        return y, ZeroTangent()
    if kind == "table":
        return y, ARRAY_ATTRIBUTES[name][1](x, xdot)
    if kind == "self":
        return y, xdot
    if kind == "field":
        if isinstance(xdot, Tangent):
            return y, dict(xdot.items()).get(name, ZeroTangent())
        if isinstance(xdot, dict):
            return y, xdot.get(name, ZeroTangent())
        return y, getattr(xdot, name)  # a primal-typed tangent (legacy adjoints)
    raise _no_derivative(x, name)


# -- registration ----------------------------------------------------------------------------

for _types, (_rrule, _frule) in GETITEM.items():
    rrule.register(operator.getitem, _types)(_rrule)
    frule.register(operator.getitem, _types)(_frule)
non_differentiable(operator.getitem, NONDIFF_GETITEM)
rrule.register(getattr)(getattr_rrule)
frule.register(getattr)(getattr_frule)

__all__ = ["ARRAY_ATTRIBUTES", "GETITEM", "NONDIFF_ATTRIBUTES", "NONDIFF_GETITEM", "setindex", "unindex"]
