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
import math
import operator
import types
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._batched import Batched, batched_index
from rulescore._linear import dense_tangent
from rulescore._projection import project, unbroadcast
from rulescore._structural import structural
from rulescore._structure import fields_of
from rulescore._tangent import Tangent, tangent_type
from rulescore._zeros import NO_TANGENT_TYPES, AbstractZero, NoTangent, ZeroTangent
from rulescore.rules._common import is_complex

_NT, _ZT = NoTangent(), ZeroTangent()  # singletons: no traced constructor call at a nested level

# -- the scatter primitive -----------------------------------------------------------------------


def _override(value: Any) -> Any:
    """``value`` if it overrides NumPy functions (a tracer), else ``None``."""
    method = getattr(type(value), "__array_function__", None)
    if method is None or method is np.ndarray.__array_function__:
        return None
    return value


def _plain_index(index: Any) -> Any:
    """The index with lists turned into arrays (NumPy reads them as integer/boolean arrays; an
    empty list as an empty integer array, not the float array ``np.asarray([])`` makes)."""
    if isinstance(index, list):
        return _list_index(index)
    if isinstance(index, tuple):
        return tuple(_list_index(i) if isinstance(i, list) else i for i in index)
    return index


def _list_index(index: list[Any]) -> Any:
    return np.asarray(index) if index else np.zeros(0, np.intp)


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
    if type(ybar) is Batched:  # every direction's scatter at once, into a stack
        index = _plain_index(index)
        rank = np.broadcast_to(False, shape)[index].ndim  # what ybar broadcasts to
        data = ybar.data.reshape((ybar.directions,) + (1,) * (rank - ybar.ndim) + ybar.shape)
        return Batched(unindex(data, batched_index(index), (ybar.directions, *shape), dtype))
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


def unindex_transpose(zbar: Any, ybar: Any, *args: Any, **kwargs: Any) -> Any:
    """``unindex`` is linear in ``ybar``; its transpose is a gather: ``zbar[index]``."""
    return zbar[_bind_unindex(args, kwargs)]


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
    if len(arrays) == len(parts) and all(a.ndim == 1 and a.shape == arrays[0].shape for a in arrays) \
            and arrays[0].size > 1 and bool(np.all(arrays[0][1:] > arrays[0][:-1])):
        return False  # one position per entry of a strictly increasing index (np.diag_indices, ranges)
    broadcast = [a.ravel() for a in np.broadcast_arrays(*arrays)]
    if broadcast[0].size < 2:
        return False
    lows = [int(a.min()) for a in broadcast]  # one key per position (a sort, not unique(axis=0))
    dims = [int(a.max()) - low + 1 for a, low in zip(broadcast, lows, strict=True)]
    if math.prod(dims) >= np.iinfo(np.intp).max:
        flat = np.stack(broadcast, axis=-1)
        return len(np.unique(flat, axis=0)) < len(flat)
    keys = np.sort(np.ravel_multi_index(tuple(a - low for a, low in zip(broadcast, lows, strict=True)), dims))
    return bool(np.any(keys[1:] == keys[:-1]))


def setindex_rrule(x: Any, index: Any, value: Any) -> Any:
    y = setindex(x, index, value)

    def setindex_pullback(ybar: Any) -> Any:
        vbar = ybar[_plain_index(index)]
        shape = np.shape(value)
        if np.shape(vbar) != shape:  # the value was broadcast into the selection: sum it back
            vbar = np.sum(vbar) if not shape else unbroadcast(vbar, shape)
        return NoTangent(), project(x, setindex(ybar, index, 0.0)), NoTangent(), project(value, vbar)

    return y, setindex_pullback


def setindex_frule(tangents: Any, x: Any, index: Any, value: Any) -> Any:
    y = setindex(x, index, value)
    return y, project(y, setindex(dense_tangent(x, tangents[1]), index, dense_tangent(value, tangents[3])))


# -- getitem -----------------------------------------------------------------------------------


def _cotangent_dtype(x: Any) -> Any:
    dt = x.dtype
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def array_getitem_transpose(ybar: Any, x: Any, index: Any) -> Any:
    """``x[index]`` is linear in ``x``; its transpose is the scatter-add :func:`unindex`."""
    return unindex(ybar, index, tuple(x.shape), _cotangent_dtype(x))


def _entries(t: Any, n: int) -> list[Any]:
    """The ``n`` per-position entries of a tangent of a tuple, list or NamedTuple."""
    if isinstance(t, Tangent):
        entries = list(t.backing) if isinstance(t.backing, tuple) else list(t)
    elif isinstance(t, (tuple, list)) or (isinstance(t, np.ndarray) and t.ndim == 1):
        entries = list(t)
    else:
        raise TypeError(f"a {type(t).__name__} is not a tangent of a sequence of length {n}")
    if len(entries) != n:
        raise ValueError(f"a tangent with {len(entries)} entries for a sequence of length {n}")
    return entries


@structural
def _tangent_class(x: Any) -> Any:
    """``Tangent[type(x)]``, from the type alone: one call for an outer level to trace."""
    return tangent_type(type(x))


@structural
def _zero_entries(n: int) -> tuple[ZeroTangent, ...]:
    """``n`` zero entries, from the length alone: one call for an outer level to trace (``[_ZT] *
    n``, a product of a list, is the dispatcher's search for a rule at a nested level)."""
    return (_ZT,) * n


def _sequence_tangent(x: Any, entries: list[Any]) -> Any:
    """The tangent of the tuple, list or NamedTuple ``x`` with one entry per position (a
    NamedTuple's tangent takes them by position too, as its fields in order)."""
    return _tangent_class(x)(*entries)


def sequence_getitem_rrule(x: Any, index: Any) -> Any:
    y = x[index]
    n = len(x)
    # an int index (x[index] checked its range) normalized as range(n)[index] would
    positions = (index + n if index < 0 else index) if type(index) is int else range(n)[index]

    def getitem_pullback(ybar: Any) -> Any:
        entries: list[Any] = [*_zero_entries(n)]
        if isinstance(positions, range):
            for p, e in zip(positions, _entries(ybar, len(positions)), strict=True):
                entries[p] = project(x[p], e)
        else:
            entries[positions] = project(y, ybar)
        return _NT, _sequence_tangent(x, entries), _NT

    return y, getitem_pullback


def sequence_getitem_frule(tangents: Any, x: Any, index: Any) -> Any:
    y = x[index]
    entries = _entries(tangents[1], len(x))
    positions = range(len(x))[index]
    if isinstance(positions, range):
        return y, tangent_type(type(y))(*(entries[p] for p in positions))
    return y, entries[positions]


def _dict_entry(t: Any, key: Any) -> Any:
    if isinstance(t, Tangent):
        return dict(t.items()).get(key, ZeroTangent())
    return t.get(key, ZeroTangent())


def dict_getitem_rrule(x: Any, key: Any) -> Any:
    y = x[key]

    def getitem_pullback(ybar: Any) -> Any:
        return NoTangent(), tangent_type(type(x))({key: project(y, ybar)}), NoTangent()

    return y, getitem_pullback


def dict_getitem_frule(tangents: Any, x: Any, key: Any) -> Any:
    return x[key], _dict_entry(tangents[1], key)


#: Primal types whose items carry no tangent.
NONDIFF_GETITEM: tuple[type, ...] = (str, bytes, range)


# -- getattr -----------------------------------------------------------------------------------


#: The attributes of arrays and numbers that have derivatives (all linear in the array).
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})


def _attribute_cotangent(x: Any, name: str, ybar: Any) -> Any:
    """The cotangent of ``x`` for ``getattr(x, name)``, ``name`` in ``ARRAY_ATTRIBUTES``."""
    if name == "T":
        return project(x, np.transpose(ybar))
    if name == "mT":
        return project(x, np.swapaxes(ybar, -1, -2))
    if name == "real":
        return project(x, ybar)
    return project(x, 1j * ybar) if is_complex(x) else ZeroTangent()


def _attribute_tangent(x: Any, name: str, xdot: Any) -> Any:
    """The tangent of ``getattr(x, name)``, ``name`` in ``ARRAY_ATTRIBUTES``."""
    if name == "T":
        return np.transpose(xdot)
    if name == "mT":
        return np.swapaxes(xdot, -1, -2)
    if name == "real":
        return np.real(xdot)
    return np.imag(xdot) if is_complex(x) else ZeroTangent()

#: Array attributes that carry no derivative.
NONDIFF_ATTRIBUTES = frozenset({
    "shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides", "flags", "base", "ctypes",
    "data", "device", "__array_interface__", "__array_struct__", "__array_priority__",
})

_NUMERIC = (np.ndarray, np.generic, int, float, complex)

def _read(x: Any, name: str, default: tuple[Any, ...]) -> tuple[Any, bool]:
    """``(getattr(x, name, *default), whether the default was used)``. No sentinel default: an
    engine differentiating this function would hand back the sentinel wrapped, and ``is`` fails."""
    if default:
        try:
            return getattr(x, name), False
        except AttributeError:
            return default[0], True
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
        rest: tuple[Any, ...] = (ZeroTangent(),) * len(default)
        if kind in ("none", "constant"):
            xbar: Any = NoTangent() if kind == "none" else ZeroTangent()
            return (NoTangent(), xbar, NoTangent(), *rest)
        if kind == "default":
            return NoTangent(), ZeroTangent(), NoTangent(), project(default[0], ybar)
        if kind == "table":
            xbar = _attribute_cotangent(x, name, ybar)
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
    xdot = tangents[1]
    if isinstance(xdot, AbstractZero) or kind == "constant":  # x's tangent may be zero (the default's not)
        return y, ZeroTangent()
    if kind == "table":
        return y, _attribute_tangent(x, name, xdot)
    if kind == "self":
        return y, xdot
    if kind == "field":
        if isinstance(xdot, Tangent):
            return y, dict(xdot.items()).get(name, ZeroTangent())
        if isinstance(xdot, dict):
            return y, xdot.get(name, ZeroTangent())
        return y, getattr(xdot, name)  # a primal-typed tangent (legacy adjoints)
    raise _no_derivative(x, name)


RULES: tuple[RulePair, ...] = (
    RulePair(unindex, transpose=unindex_transpose),
    RulePair(setindex, setindex_rrule, setindex_frule),
    RulePair(operator.getitem, types=((np.ndarray, np.generic),), transpose=array_getitem_transpose),
    RulePair(operator.getitem, sequence_getitem_rrule, sequence_getitem_frule, ((tuple, list),)),
    RulePair(operator.getitem, dict_getitem_rrule, dict_getitem_frule, (dict,)),
    RulePair(operator.getitem, types=(NONDIFF_GETITEM,), kind="non_differentiable"),
    RulePair(getattr, getattr_rrule, getattr_frule),
)

__all__ = ["ARRAY_ATTRIBUTES", "NONDIFF_ATTRIBUTES", "NONDIFF_GETITEM", "RULES", "setindex", "unindex"]
