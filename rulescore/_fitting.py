"""Fast projections for rules: a cotangent onto an argument (:func:`proj`), a tangent onto an
output (:func:`fit`), and what a pullback keeps of an argument it only projects onto
(:func:`stand_in`). They live in the core because :func:`rulescore.partials_rules` uses them;
the rule library imports them from :mod:`rulescore.rules._common`.

Python floats stay Python floats and arrays that already fit are returned as they are: these
run on every operator of an engine's hot path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore._projection import project, unbroadcast
from rulescore._tangent import Tangent, tangent_type
from rulescore._zeros import AbstractZero, ZeroTangent

_ZT = ZeroTangent()
_NDARRAY = np.ndarray  # (a global: one load)


def proj(x: Any, dx: Any) -> Any:
    """``rc.project(x, dx)``, also summing ``dx`` when a scalar ``x`` was broadcast to an array.

    Example:
        >>> import numpy as np
        >>> proj(1.0, np.ones(3)), proj(np.zeros(2, np.float32), np.ones((3, 2))).dtype
        (3.0, dtype('float32'))
    """
    tx, tdx = type(x), type(dx)
    if tx is _NDARRAY:  # (first: an array operand, the commonest)
        if tdx is _NDARRAY and dx.dtype == x.dtype and x.dtype.kind in "fc":
            if dx.shape == x.shape:
                return dx  # already fits (what project returns): no call on every array operand
            if x.ndim:
                return unbroadcast(dx, x.shape)  # a broadcast bias summed back (project's own step)
        out = project(x, dx)
        if x.ndim == 0 and isinstance(out, np.generic):  # unbroadcast to () gives a NumPy scalar
            out = np.asarray(out)
        return out
    elif tx is float:
        if tdx is float:
            return dx
        if tdx is np.float64:  # what NumPy functions of a Python float return
            return float(dx)
        if tdx is _NDARRAY and dx.dtype.kind == "f":  # a float broadcast to an array: summed
            return float(np.sum(dx))
    elif tx is np.float64:  # what NumPy functions of a Python float return, as a primal
        if tdx is np.float64:
            return dx
        if tdx is float:
            return np.float64(dx)
    elif (tx is list or tx is tuple) and isinstance(dx, np.ndarray):  # a list given to NumPy
        shape = np.shape(x)
        return _nested(x, unbroadcast(dx, shape) if dx.shape != shape else dx)
    if isinstance(dx, AbstractZero):
        return dx
    if getattr(dx, "ndim", 0) != 0 and not isinstance(x, (np.ndarray, list, tuple)):
        dx = np.sum(dx)
    return project(x, dx)


def _nested(x: Any, dx: Any) -> Any:
    """The structural cotangent of a (nested) list or tuple of numbers from an array."""
    if type(x) is list or type(x) is tuple:
        return tangent_type(type(x))(*(_nested(v, d) for v, d in zip(x, dx, strict=True)))
    return proj(x, dx)


def fit(y: Any, ydot: Any) -> Any:
    """Put a forward tangent into the tangent space of the output ``y`` (broadcast, dtype);
    a zero stays a zero.

    Example:
        >>> import numpy as np
        >>> fit(np.zeros((2, 2)), 1.0)
        array([[1., 1.],
               [1., 1.]])
    """
    ty = type(y)
    if ty is float:
        tdot = type(ydot)
        if tdot is float:
            return ydot
        if tdot is np.float64:
            return float(ydot)
    if ydot is None or isinstance(ydot, AbstractZero):
        return _ZT
    if ty is np.ndarray:
        if type(ydot) is np.ndarray and ydot.shape == y.shape and ydot.dtype == y.dtype:
            return ydot
        if getattr(ydot, "shape", ()) != y.shape:
            ydot = ydot + np.zeros(y.shape, dtype=y.dtype)
        return project(y, ydot)
    if getattr(ydot, "ndim", 0) != 0 and not isinstance(y, np.ndarray):
        ydot = np.sum(ydot)
    return project(y, ydot)


_ZERO_BYTES = bytes(64)
#: Stand-ins are read-only and carry nothing but a shape and a dtype: one per (shape, dtype) is
#: shared (a bounded cache; it is emptied when full).
_STAND_INS: dict[tuple[Any, ...], np.ndarray] = {}
_MAX_STAND_INS = 512


def stand_in(x: Any) -> Any:
    """What a pullback keeps of an argument it only projects onto.

    An array becomes a read-only array of the same shape and dtype over 64 zero bytes (every
    stride 0), so the argument itself can be freed before the backward pass; anything else is
    kept as it is.

    Example:
        >>> import numpy as np
        >>> s = stand_in(np.ones((1000, 1000)))
        >>> s.shape, s.dtype, s.strides, len(s.base)
        ((1000, 1000), dtype('float64'), (0, 0), 64)
    """
    if type(x) is np.ndarray:
        key = (x.shape, x.dtype)
        standin = _STAND_INS.get(key)
        if standin is not None:
            return standin
        if x.dtype.itemsize <= 64 and x.dtype.kind in "fciub":
            if len(_STAND_INS) >= _MAX_STAND_INS:
                _STAND_INS.clear()
            standin = _STAND_INS[key] = np.ndarray(x.shape, x.dtype, _ZERO_BYTES, 0, (0,) * x.ndim)
            return standin
    return x


def as_arrays(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Lists and tuples given to a NumPy function become arrays (for computing partials).

    Example:
        >>> as_arrays(([1.0, 2.0], 3.0))
        (array([1., 2.]), 3.0)
    """
    for a in args:
        if type(a) is list or type(a) is tuple:
            return tuple(np.asarray(v) if type(v) is list or type(v) is tuple else v for v in args)
    return args


def as_array_tangent(t: Any) -> Any:
    """The tangent of a (nested) list or tuple given to NumPy, as an array (zeros as 0.0).

    Example:
        >>> import rulescore as rc
        >>> as_array_tangent(rc.Tangent[tuple](1.0, rc.ZeroTangent()))
        array([1., 0.])
    """
    if isinstance(t, Tangent) and isinstance(t.backing, tuple):
        return np.asarray([as_array_tangent(v) for v in t.backing])
    if type(t) is list or type(t) is tuple:
        return np.asarray([as_array_tangent(v) for v in t])
    if t is None or isinstance(t, AbstractZero):
        return 0.0
    return t
