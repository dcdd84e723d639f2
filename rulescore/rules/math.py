"""Rules for the ``math`` module: tables of partial derivatives, one line per function.

Tables:

- :data:`UNARY_PARTIALS` / :data:`BINARY_PARTIALS` / :data:`VARIADIC_PARTIALS`: ``{f: partials}``
  for element-wise functions (registered with :func:`~rulescore.rules.operators.elementwise_rules`,
  which gives each an rrule and an frule with a pullback named ``<f>_pullback``);
- :data:`RULES`: ``{f: (rrule, frule)}`` for the functions of sequences (``fsum``, ``prod``,
  ``dist``, ``sumprod``) and the two-output ``frexp`` and ``modf``;
- :data:`NON_DIFFERENTIABLE`: integer-valued and predicate functions (``floor``, ``ceil``,
  ``trunc``, ``isfinite``, ``factorial``, ``gcd``, ``nextafter``, ``ulp``, ...).

Partials are written with NumPy and operators so that they differentiate again (second
derivatives through the rules) when an engine traces them. Python floats do not divide by zero
quietly, so where the true derivative is infinite (``sqrt`` and ``cbrt`` at ``0``, ``asin`` and
``acos`` at ``±1``, ``acosh`` at ``1``) it is returned as ``±inf`` explicitly. At the origin
``hypot`` (any number of arguments), ``dist`` and ``atan2`` use the zero subgradient. ``pow``
follows the conventions of :mod:`rulescore.rules.operators` (``d/dp`` is ``NoTangent()`` for an
integer exponent and ``0`` for ``x <= 0``); ``ldexp``'s integer exponent gets ``NoTangent()``;
``copysign(x, y)`` has ``d/dy = ZeroTangent()``; ``fmod`` and ``remainder`` have ``d/dy = -n``
for the integer quotient ``n``; ``frexp`` and ``modf`` differentiate their first output only.
``gamma`` and ``lgamma`` use a digamma computed by recurrence and an asymptotic series.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._helpers import non_differentiable
from rulescore._projection import project
from rulescore._registry import frule, rrule
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.operators import (
    ONE,
    TupleTangent,
    add_dots,
    conj,
    ct,
    elementwise_rules,
    entries,
    fit,
    is_int_like,
    pow_grad_p,
    pow_grad_x,
    proj,
    spread,
    sum_dots,
)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_NT = NoTangent()
_ZT = ZeroTangent()


def _digamma(x: Any) -> Any:
    """Digamma by recurrence and an asymptotic series (math has none; stays differentiable)."""
    shift: Any = 0.0
    while x < 8.0:
        shift = shift - 1.0 / x
        x = x + 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + np.log(x) - 0.5 / x - series


def _recip(d: Any) -> Any:
    """``1 / d`` with IEEE semantics at zero (``±inf``), also for Python floats."""
    if d != 0:
        return 1.0 / d
    return np.copysign(np.inf, d)


def _sign(x: Any) -> Any:
    if x > 0:
        return 1.0
    return -1.0 if x < 0 else 0.0


#: One entry per differentiable function of one argument: ``f: partial(x, result)``.
UNARY_PARTIALS: dict[Any, Callable[..., Any]] = {
    math.sin: lambda x, result: np.cos(x),
    math.cos: lambda x, result: -np.sin(x),
    math.tan: lambda x, result: 1 + result * result,
    math.asin: lambda x, result: _recip(np.sqrt(1 - x * x)),
    math.acos: lambda x, result: -_recip(np.sqrt(1 - x * x)),
    math.atan: lambda x, result: 1 / (1 + x * x),
    math.sinh: lambda x, result: np.cosh(x),
    math.cosh: lambda x, result: np.sinh(x),
    math.tanh: lambda x, result: 1 - result * result,
    math.asinh: lambda x, result: 1 / np.sqrt(x * x + 1),
    math.acosh: lambda x, result: _recip(np.sqrt((x - 1) * (x + 1))),
    math.atanh: lambda x, result: 1 / (1 - x * x),
    math.exp: lambda x, result: result,
    math.expm1: lambda x, result: np.exp(x),  # not result + 1: that cancels for x << 0
    math.log1p: lambda x, result: 1 / (1 + x),
    math.log2: lambda x, result: 1 / (x * _LN2),
    math.log10: lambda x, result: 1 / (x * _LN10),
    math.sqrt: lambda x, result: 0.5 * _recip(result),
    math.erf: lambda x, result: _TWO_OVER_SQRT_PI * np.exp(-x * x),
    math.erfc: lambda x, result: -_TWO_OVER_SQRT_PI * np.exp(-x * x),
    math.gamma: lambda x, result: result * _digamma(x),
    math.lgamma: lambda x, result: _digamma(x),
    math.fabs: lambda x, result: _sign(x),
    math.degrees: lambda x, result: _DEG,
    math.radians: lambda x, result: _RAD,
}
if hasattr(math, "exp2"):  # Python 3.11+
    UNARY_PARTIALS[math.exp2] = lambda x, result: result * _LN2
if hasattr(math, "cbrt"):  # Python 3.11+
    UNARY_PARTIALS[math.cbrt] = lambda x, result: _recip(3 * result * result)


def _atan2_partials(y: Any, x: Any, result: Any) -> Any:
    den = x * x + y * y
    if den == 0:
        return 0.0, 0.0
    return x / den, -y / den


def _pow_partials(x: Any, p: Any, result: Any) -> Any:
    return pow_grad_x(x, p, result), (_NT if is_int_like(p) else pow_grad_p(x, p, result))


def _quotient(x: Any, y: Any, result: Any) -> Any:
    """The integer ``n`` with ``x == n * y + result`` (for ``fmod`` and ``remainder``)."""
    return np.rint((x - result) / y)


def _log_partials(x: Any, *base: Any, result: Any) -> Any:
    if not base:
        return 1 / x
    b = base[0]
    lb = np.log(b)
    return 1 / (x * lb), -np.log(x) / (b * lb * lb)


#: Functions of two arguments: ``f: partials(a, b, result) -> (d/da, d/db)``.
BINARY_PARTIALS: dict[Any, Callable[..., Any]] = {
    math.atan2: _atan2_partials,
    math.pow: _pow_partials,
    math.copysign: lambda x, y, result: (np.copysign(1.0, x) * np.copysign(1.0, y), None),
    math.fmod: lambda x, y, result: (ONE, -_quotient(x, y, result)),
    math.remainder: lambda x, y, result: (ONE, -_quotient(x, y, result)),
    math.ldexp: lambda x, i, result: (np.ldexp(1.0, i), _NT),
    math.log: _log_partials,  # one or two arguments
}


def _hypot_partials(*xs: Any, result: Any) -> Any:
    if result == 0:
        return tuple(0.0 for _ in xs)
    return tuple(x / result for x in xs)


#: Functions of any number of arguments.
VARIADIC_PARTIALS: dict[Any, Callable[..., Any]] = {
    math.hypot: _hypot_partials,
}
if hasattr(math, "fma"):  # Python 3.13+
    VARIADIC_PARTIALS[math.fma] = lambda x, y, z, result: (y, x, ONE)


# -- functions of sequences and with two outputs ----------------------------------------------


def fsum_rrule(xs: Any) -> Any:
    y = math.fsum(xs)

    def fsum_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        return _NT, spread(xs, ybar)

    return y, fsum_pullback


def fsum_frule(tangents: Any, xs: Any) -> Any:
    y = math.fsum(xs)
    return y, fit(y, sum_dots(xs, tangents[1]))


def _prod_partials(items: list[Any], start: Any) -> list[Any]:
    """``start * prod(items[j] for j != i)`` for each ``i``, without division."""
    n = len(items)
    prefix: list[Any] = [start]
    for v in items[:-1]:
        prefix.append(prefix[-1] * v)
    out: list[Any] = [None] * n
    suffix: Any = None
    for i in range(n - 1, -1, -1):
        out[i] = prefix[i] if suffix is None else prefix[i] * suffix
        suffix = items[i] if suffix is None else items[i] * suffix
    return out


def prod_rrule(xs: Any, **kwargs: Any) -> Any:
    items = list(xs)
    y = math.prod(items, **kwargs)

    def prod_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        ds = _prod_partials(items, kwargs.get("start", 1))
        bars = [proj(v, ybar * conj(d)) for v, d in zip(items, ds, strict=True)]
        return _NT, _sequence_cotangent(xs, bars)

    return y, prod_pullback


def prod_frule(tangents: Any, xs: Any, **kwargs: Any) -> Any:
    items = list(xs)
    y = math.prod(items, **kwargs)
    dots = _item_dots(xs, tangents[1], len(items))
    ydot = None
    if any(d is not None for d in dots):
        ds = _prod_partials(items, kwargs.get("start", 1))
        for d, xdot in zip(ds, dots, strict=True):
            if xdot is not None:
                ydot = add_dots(ydot, d * xdot)
    return y, fit(y, ydot)


def _sequence_cotangent(xs: Any, bars: list[Any]) -> Any:
    if type(xs) is list or type(xs) is tuple:
        return tangent_type(type(xs))(*bars)
    if isinstance(xs, np.ndarray):
        return project(xs, np.stack(bars)) if bars else project(xs, np.zeros(xs.shape))
    if isinstance(xs, (list, tuple)):
        return project(xs, bars)
    return _NT


def _item_dots(xs: Any, xsdot: Any, n: int) -> list[Any]:
    xsdot = ct(xsdot)
    if xsdot is None:
        return [None] * n
    if isinstance(xs, np.ndarray):
        return [xsdot[i] for i in range(n)]
    return entries(xsdot, n)


def dist_rrule(p: Any, q: Any) -> Any:
    y = math.dist(p, q)

    def dist_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT, _ZT
        scale = 0.0 if y == 0 else ybar / y
        if isinstance(p, np.ndarray) or isinstance(q, np.ndarray):
            g = (p - q) * scale
            return _NT, proj(p, g), proj(q, -g)
        gs = [(a - b) * scale for a, b in zip(p, q, strict=True)]
        return (_NT, _sequence_cotangent(p, [proj(a, g) for a, g in zip(p, gs, strict=True)]),
                _sequence_cotangent(q, [proj(b, -g) for b, g in zip(q, gs, strict=True)]))

    return y, dist_pullback


def dist_frule(tangents: Any, p: Any, q: Any) -> Any:
    _, pdot, qdot = tangents
    y = math.dist(p, q)
    n = len(p)
    pd, qd = _item_dots(p, pdot, n), _item_dots(q, qdot, n)
    if y == 0:
        return y, _ZT
    ydot = None
    for a, b, da, db in zip(p, q, pd, qd, strict=True):
        ydot = add_dots(ydot, None if da is None else (a - b) * da)
        ydot = add_dots(ydot, None if db is None else (b - a) * db)
    return y, fit(y, None if ydot is None else ydot / y)


def sumprod_rrule(p: Any, q: Any) -> Any:
    y = math.sumprod(p, q)  # type: ignore[attr-defined,unused-ignore]

    def sumprod_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT, _ZT
        return (_NT, _sequence_cotangent(p, [proj(a, ybar * b) for a, b in zip(p, q, strict=True)]),
                _sequence_cotangent(q, [proj(b, ybar * a) for a, b in zip(p, q, strict=True)]))

    return y, sumprod_pullback


def sumprod_frule(tangents: Any, p: Any, q: Any) -> Any:
    _, pdot, qdot = tangents
    y = math.sumprod(p, q)  # type: ignore[attr-defined,unused-ignore]
    n = len(p)
    ydot = None
    for a, b, da, db in zip(p, q, _item_dots(p, pdot, n), _item_dots(q, qdot, n), strict=True):
        ydot = add_dots(ydot, None if da is None else da * b)
        ydot = add_dots(ydot, None if db is None else a * db)
    return y, fit(y, ydot)


def frexp_rrule(x: Any) -> Any:
    y = math.frexp(x)

    def frexp_pullback(ybar: Any) -> Any:
        mbar = entries(ybar, 2)[0]
        if mbar is None:
            return _NT, _ZT
        return _NT, proj(x, mbar * np.ldexp(1.0, -y[1]))

    return y, frexp_pullback


def frexp_frule(tangents: Any, x: Any) -> Any:
    y = math.frexp(x)
    xdot = ct(tangents[1])
    if xdot is None:
        return y, _ZT
    return y, TupleTangent(fit(y[0], xdot * np.ldexp(1.0, -y[1])), _NT)


def modf_rrule(x: Any) -> Any:
    y = math.modf(x)

    def modf_pullback(ybar: Any) -> Any:
        fbar = entries(ybar, 2)[0]
        if fbar is None:
            return _NT, _ZT
        return _NT, proj(x, fbar)

    return y, modf_pullback


def modf_frule(tangents: Any, x: Any) -> Any:
    y = math.modf(x)
    xdot = ct(tangents[1])
    if xdot is None:
        return y, _ZT
    return y, TupleTangent(fit(y[0], xdot), _ZT)


#: Functions of sequences and functions with two outputs: ``f: (rrule, frule)``.
RULES: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {
    math.fsum: (fsum_rrule, fsum_frule),
    math.prod: (prod_rrule, prod_frule),
    math.dist: (dist_rrule, dist_frule),
    math.frexp: (frexp_rrule, frexp_frule),
    math.modf: (modf_rrule, modf_frule),
}
if hasattr(math, "sumprod"):  # Python 3.12+
    RULES[math.sumprod] = (sumprod_rrule, sumprod_frule)

NON_DIFFERENTIABLE: tuple[Any, ...] = (
    math.floor, math.ceil, math.trunc, math.isfinite, math.isinf, math.isnan, math.isclose,
    math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt, math.nextafter,
    math.ulp,
)

for _f, _d in {**UNARY_PARTIALS, **BINARY_PARTIALS, **VARIADIC_PARTIALS}.items():
    elementwise_rules(_f, _d)
for _f, (_r, _fr) in RULES.items():
    rrule.register(_f)(_r)
    frule.register(_f)(_fr)
for _f in NON_DIFFERENTIABLE:
    non_differentiable(_f)
