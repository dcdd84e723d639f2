"""Rules for Python's builtin functions.

One table, :data:`RULES`: rules for ``abs``, ``float``, ``complex``, ``sum``, ``min``, ``max``,
``pow``, ``divmod`` and ``x.conjugate()``, and the builtins with no derivative
(:data:`NON_DIFFERENTIABLE`: ``int``, ``round``, ``len``, ``isinstance``, ``type``, ``str``,
``bool``, ``range``, ``any``, ``all``, ...; ``sorted`` is structural, so it is not there).

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
import inspect
import operator
from typing import Any

import numpy as np

from rulescore import RulePair, ignore_derivatives
from rulescore._arithmetic import conj
from rulescore._projection import project
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules import operators
from rulescore.rules._common import (
    divmod_cotangents,
    divmod_tangent,
    entries,
    fit,
    proj,
    spread,
    sum_dots,
)
from rulescore.rules.operators import pow_frule, pow_rrule

_NT = NoTangent()
_ZT = ZeroTangent()


def float_rrule(x: Any) -> Any:
    y = float(x)

    def float_pullback(ybar: Any) -> Any:
        if isinstance(x, np.ndarray):
            return _NT, fit(x, ybar)
        return _NT, proj(x, ybar)

    return y, float_pullback


def float_frule(tangents: Any, x: Any) -> Any:
    y = float(x)
    return y, fit(y, tangents[1])


def complex_rrule(*args: Any, **kwargs: Any) -> Any:
    y = complex(*args, **kwargs)

    def complex_pullback(ybar: Any) -> Any:
        bars = [proj(args[0], ybar)] if args else []
        if len(args) > 1:
            bars.append(proj(args[1], -1j * ybar))
        return (_NT, *bars)

    return y, complex_pullback


def complex_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    y = complex(*args, **kwargs)
    dots = tangents[1:]
    ydot = dots[0] if dots else _ZT
    if len(dots) > 1:
        ydot = ydot + 1j * dots[1]
    return y, fit(y, ydot)


def sum_rrule(xs: Any, *start: Any, **kwargs: Any) -> Any:
    items = xs if isinstance(xs, (list, tuple, np.ndarray)) else list(xs)  # iterate once
    y = builtins.sum(items, *start, **kwargs)

    def sum_pullback(ybar: Any) -> Any:
        return (_NT, spread(xs, ybar), *(proj(s, ybar) for s in start))

    return y, sum_pullback


def sum_frule(tangents: Any, xs: Any, *start: Any, **kwargs: Any) -> Any:
    y = builtins.sum(xs, *start, **kwargs)
    ydot = sum_dots(xs, tangents[1]) if isinstance(xs, (list, tuple, np.ndarray)) else _ZT
    if start:
        ydot = ydot + tangents[2]
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


def _chosen_cotangents(args: tuple[Any, ...], idx: int, ybar: Any) -> Any:
    """The pullback of ``max``/``min``: the chosen element (index ``idx``) gets ``ybar``."""
    if idx < 0:  # the default was returned
        return (_NT, *(_ZT for _ in args))
    if len(args) > 1:
        return (_NT, *(proj(a, ybar) if i == idx else _ZT for i, a in enumerate(args)))
    xs = args[0]
    if type(xs) is list or type(xs) is tuple:
        bar: Any = tangent_type(type(xs))(*(proj(v, ybar) if i == idx else _ZT for i, v in enumerate(xs)))
    elif isinstance(xs, np.ndarray):
        hit = np.arange(xs.shape[0]).reshape((-1,) + (1,) * (xs.ndim - 1)) == idx
        bar = project(xs, np.where(hit, ybar, 0))
    elif isinstance(xs, (list, tuple)):
        bar = project(xs, [proj(v, ybar) if i == idx else _ZT for i, v in enumerate(xs)])
    else:
        bar = _NT
    return _NT, bar


def _chosen_tangent(args: tuple[Any, ...], tangents: Any, y: Any, idx: int) -> Any:
    """The tangent of ``max``/``min``: the chosen element's."""
    if idx < 0:
        return _ZT
    if len(args) > 1:
        return fit(y, tangents[1 + idx])
    xs, xsdot = args[0], tangents[1]
    if not isinstance(xs, (list, tuple, np.ndarray)):
        return _ZT
    dot = xsdot[idx] if type(xsdot) is np.ndarray else entries(xsdot, len(xs))[idx]
    return fit(y, dot)


def choice_rules(f: Any, largest: bool) -> tuple[Any, Any]:
    """The rules of ``max`` (``largest``) or ``min``: the chosen argument (or entry of the
    iterable) gets the whole cotangent, and the tangent is the chosen one's.

    Example:
        >>> reverse, forward = choice_rules(max, True)
        >>> reverse(1.0, 3.0)[1](2.0), forward((None, 1.0, 5.0), 1.0, 3.0)
        ((NoTangent(), ZeroTangent(), 2.0), (3.0, 5.0))
    """

    def choice_rrule(*args: Any, **kwargs: Any) -> Any:
        _, y, idx = _choose(args, kwargs, largest)

        def choice_pullback(ybar: Any) -> Any:
            return _chosen_cotangents(args, idx, ybar)

        choice_pullback.__name__ = choice_pullback.__qualname__ = f"{f.__name__}_pullback"
        return y, choice_pullback

    def choice_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        _, y, idx = _choose(args, kwargs, largest)
        return y, _chosen_tangent(args, tangents, y, idx)

    choice_rrule.__name__ = choice_rrule.__qualname__ = f"{f.__name__}_rrule"
    choice_frule.__name__ = choice_frule.__qualname__ = f"{f.__name__}_frule"
    return choice_rrule, choice_frule


def _is_real_pow(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``pow(x, p)`` (not the modular ``pow(x, p, mod)``, nor keyword arguments)."""
    return len(args) == 2 and kwargs.get("mod") is None and not ({"base", "exp"} & kwargs.keys())


def builtin_pow_rrule(*args: Any, **kwargs: Any) -> Any:
    if _is_real_pow(args, kwargs):
        return pow_rrule(*args)
    y = builtins.pow(*args, **kwargs)

    def modular_pow_pullback(ybar: Any) -> Any:
        return (_NT, *(_NT for _ in args))

    return y, modular_pow_pullback


def builtin_pow_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    if _is_real_pow(args, kwargs):
        return pow_frule(tangents, *args)
    return builtins.pow(*args, **kwargs), _NT


def divmod_rrule(x: Any, y: Any) -> Any:
    out = divmod(x, y)

    def divmod_pullback(outbar: Any) -> Any:
        return divmod_cotangents(x, y, out[0], outbar)

    return out, divmod_pullback


def divmod_frule(tangents: Any, x: Any, y: Any) -> Any:
    out = divmod(x, y)
    return out, divmod_tangent(out, tangents[1], tangents[2])


def conjugate_rrule(x: Any) -> Any:
    """``x.conjugate()`` on a Python number: the cotangent is conjugated back (not holomorphic)."""
    y = x.conjugate()

    def conjugate_pullback(ybar: Any) -> Any:
        return _NT, project(x, conj(ybar))

    return y, conjugate_pullback


def conjugate_frule(tangents: Any, x: Any) -> Any:
    return x.conjugate(), fit(x.conjugate(), conj(tangents[1]))


#: Builtins whose results carry no derivative.
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    builtins.int, builtins.round, builtins.len, builtins.isinstance, builtins.issubclass,
    builtins.type, builtins.id, builtins.hash, builtins.print, builtins.repr, builtins.str,
    builtins.bool, builtins.range, builtins.callable, builtins.hasattr, builtins.ord,
    builtins.chr, builtins.format, builtins.any, builtins.all, builtins.bin, builtins.hex,
    builtins.oct, builtins.ascii, str.format, str.__mod__,
)

#: ``sum``/``min``/``max`` rules see inside lists, tuples, arrays and numbers; other iterables
#: (generators, user containers) are iterated by Python, so an engine sees each element.
_SEQUENCES = (list, tuple, np.ndarray)
_SEQUENCES_AND_NUMBERS = (list, tuple, np.ndarray, int, float, complex, np.generic)
_ARRAYS_AND_NUMBERS = (np.ndarray, np.generic, int, float, complex)

#: The builtins with rules of their own (``float_rrule``, ``float_frule``, ...; ``pow`` adds the
#: modulus in ``builtin_pow_rrule``).
RULES: tuple[RulePair, ...] = (
    RulePair(builtins.float, float_rrule, float_frule),
    RulePair(builtins.complex, complex_rrule, complex_frule),
    RulePair(builtins.pow, builtin_pow_rrule, builtin_pow_frule),
    RulePair(builtins.divmod, divmod_rrule, divmod_frule),
    RulePair(float.conjugate, conjugate_rrule, conjugate_frule),
    RulePair(complex.conjugate, conjugate_rrule, conjugate_frule),
    RulePair(builtins.abs, operators.abs_rrule, operators.abs_frule),
    RulePair(builtins.sum, sum_rrule, sum_frule, (_SEQUENCES,)),
    RulePair(builtins.max, *choice_rules(builtins.max, True), (_SEQUENCES_AND_NUMBERS,)),
    RulePair(builtins.min, *choice_rules(builtins.min, False), (_SEQUENCES_AND_NUMBERS,)),
    # on an array or a number it reads class attributes (libraries probe for dataframe types)
    RulePair(inspect.getattr_static, types=(_ARRAYS_AND_NUMBERS,), kind="non_differentiable"),
    # text from values: "%.3f" % loss (a string's %, not the number's remainder)
    RulePair(operator.mod, types=(str,), kind="non_differentiable"),
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE),
    # rulescore's own: the value passes through, no gradient flows back
    RulePair(ignore_derivatives, kind="non_differentiable"),
)
