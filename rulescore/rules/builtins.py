"""Rules for Python's builtin functions.

Tables:

- :data:`RULES`: ``{builtin: (rrule, frule)}`` for ``abs``, ``float``, ``complex``, ``sum``,
  ``min``, ``max``, ``pow`` and ``divmod``;
- :data:`NON_DIFFERENTIABLE`: ``int``, ``round``, ``len``, ``isinstance``, ``type``, ``str``,
  ``bool``, ``range``, ``any``, ``all``, ... (``sorted`` is structural, so it is not here).

Conventions:

- ``sum(xs, start)``: every entry of ``xs`` gets the output's cotangent (a ``Tangent[list]`` or
  ``Tangent[tuple]`` for a list or tuple, an array for an array; an iterable that cannot hold a
  tangent, such as a generator, gets ``NoTangent()``).
- ``min`` / ``max``: the chosen element (the first extreme one, as Python picks it, also with
  ``key=``) gets the cotangent; the others get zeros (``ZeroTangent()`` entries of the
  ``Tangent[list]`` / ``Tangent[tuple]`` for the one-iterable form).
- ``pow(x, p)`` is ``x ** p`` (see :mod:`rulescore.rules.operators`); ``pow(x, p, mod)`` works on
  integers and has no derivative.
- ``divmod(x, y)``: the quotient carries no derivative; the remainder is ``x % y``.
- ``complex(re, im)``: ``re`` gets ``ybar`` and ``im`` gets ``-1j * ybar``, each projected (so a
  real ``im`` gets ``imag(ybar)``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._arithmetic import is_zero
from rulescore._helpers import non_differentiable
from rulescore._projection import project
from rulescore._registry import frule, rrule
from rulescore._tangent import tangent_type
from rulescore._thunks import unthunk
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.operators import (
    TupleTangent,
    abs_frule,
    abs_rrule,
    add_dots,
    ct,
    entries,
    fit,
    pow_frule,
    pow_rrule,
    proj,
    spread,
    sum_dots,
)

_NT = NoTangent()
_ZT = ZeroTangent()


def float_rrule(x: Any) -> Any:
    y = float(x)

    def float_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        if isinstance(x, np.ndarray):
            return _NT, fit(x, ybar)
        return _NT, proj(x, ybar)

    return y, float_pullback


def float_frule(tangents: Any, x: Any) -> Any:
    y = float(x)
    return y, fit(y, ct(tangents[1]))


def complex_rrule(*args: Any, **kwargs: Any) -> Any:
    y = complex(*args, **kwargs)

    def complex_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return (_NT, *(_ZT for _ in args))
        bars = [proj(args[0], ybar)] if args else []
        if len(args) > 1:
            bars.append(proj(args[1], -1j * ybar))
        return (_NT, *bars)

    return y, complex_pullback


def complex_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    y = complex(*args, **kwargs)
    dots = [ct(t) for t in tangents[1:]]
    ydot = dots[0] if dots else None
    if len(dots) > 1 and dots[1] is not None:
        ydot = add_dots(ydot, 1j * dots[1])
    return y, fit(y, ydot)


def sum_rrule(xs: Any, *start: Any, **kwargs: Any) -> Any:
    items = xs if isinstance(xs, (list, tuple, np.ndarray)) else list(xs)  # iterate once
    y = builtins.sum(items, *start, **kwargs)

    def sum_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return (_NT, _ZT, *(_ZT for _ in start))
        return (_NT, spread(xs, ybar), *(proj(s, ybar) for s in start))

    return y, sum_pullback


def sum_frule(tangents: Any, xs: Any, *start: Any, **kwargs: Any) -> Any:
    y = builtins.sum(xs, *start, **kwargs)
    ydot = sum_dots(xs, tangents[1]) if isinstance(xs, (list, tuple, np.ndarray)) else None
    if start:
        ydot = add_dots(ydot, ct(tangents[2]))
    return y, fit(y, ydot)


def _choose(args: tuple[Any, ...], kwargs: dict[str, Any], larger: bool) -> tuple[Any, Any, int]:
    """``(items, y, index)`` for ``max``/``min``: index ``-1`` when the default was returned."""
    items = args[0] if len(args) == 1 else args
    if len(args) == 1 and not isinstance(items, (list, tuple, np.ndarray)):
        items = list(items)
    key = kwargs.get("key")
    best = -1
    best_key: Any = None
    for i, v in enumerate(items):
        k = v if key is None else key(v)
        if best < 0 or (k > best_key if larger else k < best_key):
            best, best_key = i, k
    if best < 0:
        if "default" in kwargs:
            return items, kwargs["default"], -1
        (builtins.max if larger else builtins.min)(items)  # raises the usual ValueError
    return items, items[best], best


def _extremum_rules(larger: bool) -> tuple[Callable[..., Any], Callable[..., Any]]:
    name = "max" if larger else "min"

    def extremum_rrule(*args: Any, **kwargs: Any) -> Any:
        items, y, idx = _choose(args, kwargs, larger)

        def extremum_pullback(ybar: Any) -> Any:
            ybar = ct(ybar)
            if ybar is None or idx < 0:
                return (_NT, *(_ZT for _ in args))
            if len(args) > 1:
                return (_NT, *(proj(a, ybar) if i == idx else _ZT for i, a in enumerate(args)))
            xs = args[0]
            if type(xs) is list or type(xs) is tuple:
                bar: Any = tangent_type(type(xs))(
                    *(proj(v, ybar) if i == idx else _ZT for i, v in enumerate(xs)))
            elif isinstance(xs, np.ndarray):
                hit = np.arange(xs.shape[0]).reshape((-1,) + (1,) * (xs.ndim - 1)) == idx
                bar = project(xs, np.where(hit, ybar, 0))
            elif isinstance(xs, (list, tuple)):
                bar = project(xs, [proj(v, ybar) if i == idx else _ZT for i, v in enumerate(xs)])
            else:
                bar = _NT
            return _NT, bar

        extremum_pullback.__name__ = extremum_pullback.__qualname__ = f"{name}_pullback"
        return y, extremum_pullback

    def extremum_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        items, y, idx = _choose(args, kwargs, larger)
        if idx < 0:
            return y, _ZT
        if len(args) > 1:
            return y, fit(y, ct(tangents[1 + idx]))
        xs, xsdot = args[0], ct(tangents[1])
        if xsdot is None or not isinstance(xs, (list, tuple, np.ndarray)):
            return y, _ZT
        dot = xsdot[idx] if isinstance(xs, np.ndarray) else entries(xsdot, len(xs))[idx]
        return y, fit(y, dot)

    extremum_rrule.__name__ = extremum_rrule.__qualname__ = f"{name}_rrule"
    extremum_frule.__name__ = extremum_frule.__qualname__ = f"{name}_frule"
    return extremum_rrule, extremum_frule


max_rrule, max_frule = _extremum_rules(True)
min_rrule, min_frule = _extremum_rules(False)


def builtin_pow_rrule(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and kwargs.get("mod") is None and not ({"base", "exp"} & kwargs.keys()):
        return pow_rrule(*args)
    y = builtins.pow(*args, **kwargs)

    def pow_pullback(ybar: Any) -> Any:
        return (_NT, *(_NT for _ in args))

    return y, pow_pullback


def builtin_pow_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    if len(args) == 2 and kwargs.get("mod") is None and not ({"base", "exp"} & kwargs.keys()):
        return pow_frule(tangents, *args)
    return builtins.pow(*args, **kwargs), _NT


def divmod_rrule(x: Any, y: Any) -> Any:
    q, r = out = divmod(x, y)

    def divmod_pullback(ybar: Any) -> Any:
        rbar = entries(ybar, 2)[1]
        if rbar is None:
            return _NT, _ZT, _ZT
        return _NT, proj(x, rbar), proj(y, -rbar * q)

    return out, divmod_pullback


def divmod_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    q, r = out = divmod(x, y)
    xdot, ydot = ct(xdot), ct(ydot)
    rdot = add_dots(xdot, None if ydot is None else -q * ydot)
    if rdot is None:
        return out, _ZT
    return out, TupleTangent(_ZT, fit(r, rdot))


def conjugate_rrule(x: Any) -> Any:
    """``x.conjugate()`` on a Python number: the cotangent is conjugated back (not holomorphic)."""
    y = x.conjugate()

    def conjugate_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return _NT, _ZT
        return _NT, project(x, np.conj(ybar))

    return y, conjugate_pullback


def conjugate_frule(tangents: Any, x: Any) -> Any:
    xdot = unthunk(tangents[1])
    return x.conjugate(), _ZT if is_zero(xdot) else project(x, np.conj(xdot))


#: ``{builtin: (rrule, frule)}``.
RULES: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {
    builtins.abs: (abs_rrule, abs_frule),
    builtins.float: (float_rrule, float_frule),
    builtins.complex: (complex_rrule, complex_frule),
    builtins.sum: (sum_rrule, sum_frule),
    builtins.max: (max_rrule, max_frule),
    builtins.min: (min_rrule, min_frule),
    builtins.pow: (builtin_pow_rrule, builtin_pow_frule),
    builtins.divmod: (divmod_rrule, divmod_frule),
    float.conjugate: (conjugate_rrule, conjugate_frule),
    complex.conjugate: (conjugate_rrule, conjugate_frule),
}

#: Builtins whose results carry no derivative.
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    builtins.int, builtins.round, builtins.len, builtins.isinstance, builtins.issubclass,
    builtins.type, builtins.id, builtins.hash, builtins.print, builtins.repr, builtins.str,
    builtins.bool, builtins.range, builtins.callable, builtins.hasattr, builtins.ord,
    builtins.chr, builtins.format, builtins.any, builtins.all, builtins.bin, builtins.hex,
    builtins.oct, builtins.ascii,
)

#: ``sum``/``min``/``max`` rules see inside lists, tuples, arrays and numbers; other iterables
#: (generators, user containers) are iterated by Python, so an engine sees each element.
REDUCTION_TYPES: dict[Any, tuple[type, ...]] = {
    builtins.sum: (list, tuple, np.ndarray),
    builtins.max: (list, tuple, np.ndarray, int, float, complex, np.generic),
    builtins.min: (list, tuple, np.ndarray, int, float, complex, np.generic),
}

for _f, (_r, _fr) in RULES.items():
    _types = (REDUCTION_TYPES[_f],) if _f in REDUCTION_TYPES else ()
    rrule.register(_f, *_types)(_r)
    frule.register(_f, *_types)(_fr)
for _f in NON_DIFFERENTIABLE:
    non_differentiable(_f)
