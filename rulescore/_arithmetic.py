"""All tangent arithmetic, in one place: ``add``, ``sub``, ``scale``, ``conj``, ``is_zero``,
``add_to_primal``, and the operators of the tangent types, which this module installs.

Tangents are: ``None`` (means zero), the two zeros, numbers, NumPy arrays, thunks, structural
``Tangent`` objects, and (from legacy custom adjoints) instances of the primal's own type.
``add`` is what every accumulator uses: zeros are its identity, and a primal-typed cotangent
uses that type's own ``+``. The tangent types' modules never import this one (ChainRulesCore's
``tangent_arithmetic.jl`` layering); ``import rulescore`` imports it, so the operators are
always there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._abstract_tangent import AbstractTangent
from rulescore._not_implemented import NotImplementedTangent
from rulescore._structure import fields_of, is_namedtuple_type, rebuild
from rulescore._tangent import Tangent, _map_backing
from rulescore._thunks import Thunk, unthunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent


def is_zero(x: Any) -> bool:
    """True for ``None``, ``ZeroTangent()`` and ``NoTangent()`` (not for numeric zeros).

    Example:
        >>> import rulescore as rc
        >>> rc.is_zero(None), rc.is_zero(rc.NoTangent()), rc.is_zero(0.0)
        (True, True, False)
    """
    return x is None or isinstance(x, AbstractZero)


def _zero_sum(a: Any, b: Any) -> AbstractZero:
    # NoTangent only survives if both sides say "no tangent space".
    if isinstance(a, NoTangent) and (b is None or isinstance(b, NoTangent)):
        return NoTangent()
    if isinstance(b, NoTangent) and a is None:
        return NoTangent()
    return ZeroTangent()


def add(a: Any, b: Any) -> Any:
    """Sum of two tangents of the same primal; zeros (and ``None``) are the identity.

    Example:
        >>> import rulescore as rc
        >>> rc.add(None, 2.0), rc.add(rc.Tangent[tuple](1.0, None), rc.Tangent[tuple](1.0, 2.0))
        (2.0, Tangent[tuple](2.0, 2.0))
    """
    if a is None or isinstance(a, AbstractZero):
        if b is None or isinstance(b, AbstractZero):
            return _zero_sum(a, b)
        return b
    if b is None or isinstance(b, AbstractZero):
        return a
    if isinstance(a, Thunk):
        a = a.unthunk()
    if isinstance(b, Thunk):
        b = b.unthunk()
    if isinstance(a, NotImplementedTangent) or isinstance(b, NotImplementedTangent):
        (a if isinstance(a, NotImplementedTangent) else b).refuse()
    if isinstance(a, Tangent) or isinstance(b, Tangent):
        return _add_structural(a, b)
    if type(a) in (tuple, list) and type(b) in (tuple, list):
        return type(a)(add(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict:
        return {k: add(a.get(k), b.get(k)) for k in {**a, **b}}  # keeps a's key order
    return a + b


def _add_structural(a: Any, b: Any) -> Any:
    if not isinstance(a, Tangent):  # primal (or primal-typed cotangent) + Tangent
        return add_to_primal(a, b)
    if not isinstance(b, Tangent):
        return add_to_primal(b, a)
    if type(a) is not type(b):  # one Tangent class per primal type
        raise TypeError(f"cannot add {type(a).__name__} and {type(b).__name__}")
    x, y = a.backing, b.backing
    if isinstance(x, tuple):
        if len(x) != len(y):
            raise ValueError(f"cannot add {type(a).__name__} of lengths {len(x)} and {len(y)}")
        return type(a)._from_backing(tuple(add(u, v) for u, v in zip(x, y, strict=True)))
    return type(a)._from_backing({k: add(x.get(k), y.get(k)) for k in {**x, **y}})


def add_to_primal(primal: Any, tangent: Any) -> Any:
    """``primal + tangent`` for a structural tangent: a new primal, each field moved.

    Example:
        >>> import rulescore as rc
        >>> rc.add_to_primal((1.0, 2.0), rc.Tangent[tuple](0.5, None))
        (1.5, 2.0)
    """
    if is_zero(tangent):
        return primal
    if not isinstance(tangent, Tangent):
        return add(primal, tangent)  # element-wise for plain tuples/lists/dicts, not concatenation
    if isinstance(primal, (tuple, list)) and not is_namedtuple_type(type(primal)):
        updates: dict[Any, Any] = {
            i: add_to_primal(primal[i], t) for i, t in tangent.items() if not is_zero(t)
        }
    elif isinstance(primal, dict):
        updates = {k: add_to_primal(primal[k], t) for k, t in tangent.items() if not is_zero(t)}
    else:
        fields = fields_of(primal)
        unknown = [k for k, t in tangent.items() if k not in fields and not is_zero(t)]
        if unknown:
            raise AttributeError(f"{type(primal).__name__} has no field(s) {unknown}")
        updates = {k: add_to_primal(fields[k], t) for k, t in tangent.items() if not is_zero(t)}
    return rebuild(primal, updates)


def sub(a: Any, b: Any) -> Any:
    """``a - b`` for tangents.

    Example:
        >>> import rulescore as rc
        >>> rc.sub(None, 2.0)
        -2.0
    """
    return add(a, scale(b, -1))


def scale(t: Any, s: Any, left: bool = False) -> Any:
    """A tangent times a scalar (field-wise for structural tangents); zeros stay zero.

    Example:
        >>> import rulescore as rc
        >>> rc.scale(rc.Tangent[tuple](1.0, 2.0), 3.0)
        Tangent[tuple](3.0, 6.0)
    """
    if is_zero(t):
        return ZeroTangent() if t is None else t
    if is_zero(s):
        return ZeroTangent()
    t, s = unthunk(t), unthunk(s)
    if isinstance(t, Tangent):
        return type(t)._from_backing(_map_backing(lambda v: scale(v, s, left), t.backing))
    return s * t if left else t * s


def conj(t: Any) -> Any:
    """Complex conjugate of a tangent; identity on zeros and real values (Python numbers, real
    arrays and anything with a real ``dtype``, traced values included: no copy is made).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> rc.conj(1 + 2j), rc.conj(None), rc.conj(np.array([1j])), rc.conj(2.0)
        ((1-2j), ZeroTangent(), array([-0.-1.j]), 2.0)
    """
    tt = type(t)
    if tt is float or tt is int or tt is np.float64:
        return t
    if tt is np.ndarray:
        return np.conj(t) if t.dtype.kind == "c" else t
    if t is None or isinstance(t, AbstractZero):
        return ZeroTangent() if t is None else t
    t = unthunk(t)
    if isinstance(t, Tangent):
        return t.conjugate()
    dt = getattr(t, "dtype", None)
    if dt is not None:
        return np.conj(t) if dt.kind == "c" else t
    if tt is complex:  # the method's rule (an engine tracing this body sees a traced complex so)
        return t.conjugate()
    conjugate = getattr(t, "conjugate", None)
    return t if conjugate is None else conjugate()


# -- the operators of the tangent types ------------------------------------------------------


def _reflected_add(b: Any, a: Any) -> Any:
    return add(a, b)


def _reflected_sub(b: Any, a: Any) -> Any:
    return sub(a, b)


def _scale_on_left(t: Any, s: Any) -> Any:
    return scale(t, s, left=True)


def _zero_absorbs(z: AbstractZero, other: Any = None) -> AbstractZero:
    """A zero times, over or matrix-times anything, negated or conjugated: the zero itself."""
    return z


def _thunk_truediv(t: Thunk, other: Any) -> Any:
    return t.unthunk() / unthunk(other)


def _thunk_rtruediv(t: Thunk, other: Any) -> Any:
    return unthunk(other) / t.unthunk()


def _thunk_matmul(t: Thunk, other: Any) -> Any:
    return t.unthunk() @ unthunk(other)


def _thunk_rmatmul(t: Thunk, other: Any) -> Any:
    return unthunk(other) @ t.unthunk()


def _thunk_neg(t: Thunk) -> Any:
    return -t.unthunk()


def _divide_fields(t: Tangent[Any], s: Any) -> Any:
    return scale(t, 1 / s)


def _negate_fields(t: Tangent[Any]) -> Any:
    return scale(t, -1)


def _conjugate_fields(t: Tangent[Any]) -> Any:
    return type(t)._from_backing(_map_backing(conj, t.backing))


_OPERATORS: dict[type, dict[str, Callable[..., Any]]] = {
    AbstractTangent: {"__add__": add, "__radd__": _reflected_add, "__sub__": sub, "__rsub__": _reflected_sub},
    AbstractZero: {name: _zero_absorbs for name in ("__mul__", "__rmul__", "__truediv__", "__matmul__",
                                                    "__rmatmul__", "__neg__", "__pos__", "conjugate")},
    # times a zero is zero, without evaluating the thunk
    Thunk: {"__mul__": scale, "__rmul__": _scale_on_left, "__truediv__": _thunk_truediv,
            "__rtruediv__": _thunk_rtruediv, "__matmul__": _thunk_matmul, "__rmatmul__": _thunk_rmatmul,
            "__neg__": _thunk_neg, "conjugate": conj},
    Tangent: {"__mul__": scale, "__rmul__": _scale_on_left, "__truediv__": _divide_fields,
              "__neg__": _negate_fields, "conjugate": _conjugate_fields},
    # a derivative that is not implemented: every use raises
    NotImplementedTangent: {name: NotImplementedTangent.refuse for name in (
        "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
        "__matmul__", "__rmatmul__", "__neg__", "__pos__", "conjugate")},
}
for _cls, _methods in _OPERATORS.items():
    for _name, _fn in _methods.items():
        setattr(_cls, _name, _fn)
