"""Rules for the ``math`` module: tables of partial derivatives, one line per function.

One table, :data:`RULES`: element-wise functions from their named partials
(``RulePair(f, partials=...)``, each pullback named ``<f>_pullback``), hand-written rules for
the functions of sequences (``fsum``, ``prod``, ``dist``, ``sumprod``) and the two-output
``frexp`` and ``modf``, and the integer-valued and predicate functions (:data:`NON_DIFFERENTIABLE`:
``floor``, ``ceil``, ``trunc``, ``isfinite``, ``factorial``, ``gcd``, ``ulp``, ...).

Partials are written with NumPy and operators so that they differentiate again (second
derivatives through the rules) when an engine traces them. Python floats do not divide by zero
quietly, so where the true derivative is infinite (``sqrt`` and ``cbrt`` at ``0``, ``asin`` and
``acos`` at ``±1``, ``acosh`` at ``1``) it is returned as ``±inf`` explicitly. At the origin
``hypot`` (any number of arguments), ``dist`` and ``atan2`` use the zero subgradient. ``pow``
follows the conventions of :mod:`rulescore.rules.operators` (``d/dp`` is ``z * log(x)``, for an
integer exponent too; ``z * log(-x)`` for ``x < 0``, ``0`` at ``0``); ``ldexp``'s integer
exponent gets ``NoTangent()``;
``copysign(x, y)`` has ``d/dy = ZeroTangent()``; ``fmod`` and ``remainder`` have ``d/dy = -n``
for the integer quotient ``n``; ``frexp`` and ``modf`` differentiate their first output only.
``gamma`` and ``lgamma`` use a digamma computed by recurrence and an asymptotic series.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._projection import project
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules import ufuncs
from rulescore.rules._common import (
    conj,
    entries,
    fit,
    frexp_cotangents,
    frexp_tangent,
    modf_cotangents,
    modf_tangent,
    pow_partials,
    proj,
    spread,
    sum_dots,
)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
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


# -- element-wise functions: named partials, derived rules (RulePair(f, partials=...)) ------------


def asin_partials(x: Any) -> Any:
    return _recip(np.sqrt(1 - x * x))


def acos_partials(x: Any) -> Any:
    return -_recip(np.sqrt(1 - x * x))


def acosh_partials(x: Any) -> Any:
    return _recip(np.sqrt((x - 1) * (x + 1)))


def sqrt_partials(x: Any, result: Any) -> Any:
    return 0.5 * _recip(result)


def erf_partials(x: Any) -> Any:
    return _TWO_OVER_SQRT_PI * np.exp(-x * x)


def erfc_partials(x: Any) -> Any:
    return -_TWO_OVER_SQRT_PI * np.exp(-x * x)


def gamma_partials(x: Any, result: Any) -> Any:
    return result * _digamma(x)


def lgamma_partials(x: Any) -> Any:
    return _digamma(x)


def cbrt_partials(x: Any, result: Any) -> Any:
    return _recip(3 * result * result)


def atan2_partials(y: Any, x: Any) -> Any:
    den = x * x + y * y
    if den == 0:
        return 0.0, 0.0
    return x / den, -y / den


def log_partials(x: Any, *base: Any) -> Any:
    if not base:
        return 1 / x
    b = base[0]
    lb = np.log(b)
    return 1 / (x * lb), -np.log(x) / (b * lb * lb)


def hypot_partials(*xs: Any, result: Any) -> Any:
    if result == 0:
        return tuple(0.0 for _ in xs)
    return tuple(x / result for x in xs)


def fma_partials(x: Any, y: Any, z: Any) -> Any:
    return y, x, 1


# -- functions of sequences and with two outputs ----------------------------------------------


def fsum_rrule(xs: Any) -> Any:
    y = math.fsum(xs)

    def fsum_pullback(ybar: Any) -> Any:
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
    out: list[Any] = [start] * n
    suffix: Any = 1
    for i in range(n - 1, -1, -1):
        out[i] = prefix[i] * suffix if i < n - 1 else prefix[i]
        suffix = items[i] * suffix if i < n - 1 else items[i]
    return out


def prod_rrule(xs: Any, **kwargs: Any) -> Any:
    items = list(xs)
    y = math.prod(items, **kwargs)

    def prod_pullback(ybar: Any) -> Any:
        ds = _prod_partials(items, kwargs.get("start", 1))
        bars = [proj(v, ybar * conj(d)) for v, d in zip(items, ds, strict=True)]
        return _NT, _sequence_cotangent(xs, bars)

    return y, prod_pullback


def prod_frule(tangents: Any, xs: Any, **kwargs: Any) -> Any:
    items = list(xs)
    y = math.prod(items, **kwargs)
    ds = _prod_partials(items, kwargs.get("start", 1))
    ydot: Any = _ZT
    for d, xdot in zip(ds, _item_dots(xs, tangents[1], len(items)), strict=True):
        ydot = ydot + d * xdot
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
    if isinstance(xs, np.ndarray) and type(xsdot) is np.ndarray:
        return [xsdot[i] for i in range(n)]
    return entries(xsdot, n)


def dist_rrule(p: Any, q: Any) -> Any:
    y = math.dist(p, q)

    def dist_pullback(ybar: Any) -> Any:
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
    if y == 0:
        return y, _ZT
    ydot: Any = _ZT
    for a, b, da, db in zip(p, q, _item_dots(p, pdot, n), _item_dots(q, qdot, n), strict=True):
        ydot = ydot + (a - b) * (da - db)
    return y, fit(y, ydot / y)


def sumprod_rrule(p: Any, q: Any) -> Any:
    y = math.sumprod(p, q)  # type: ignore[attr-defined,unused-ignore]

    def sumprod_pullback(ybar: Any) -> Any:
        return (_NT, _sequence_cotangent(p, [proj(a, ybar * b) for a, b in zip(p, q, strict=True)]),
                _sequence_cotangent(q, [proj(b, ybar * a) for a, b in zip(p, q, strict=True)]))

    return y, sumprod_pullback


def sumprod_frule(tangents: Any, p: Any, q: Any) -> Any:
    _, pdot, qdot = tangents
    y = math.sumprod(p, q)  # type: ignore[attr-defined,unused-ignore]
    n = len(p)
    ydot: Any = _ZT
    for a, b, da, db in zip(p, q, _item_dots(p, pdot, n), _item_dots(q, qdot, n), strict=True):
        ydot = ydot + da * b + a * db
    return y, fit(y, ydot)


def frexp_rrule(x: Any) -> Any:
    y = math.frexp(x)

    def frexp_pullback(ybar: Any) -> Any:
        return frexp_cotangents(x, y[1], ybar)

    return y, frexp_pullback


def frexp_frule(tangents: Any, x: Any) -> Any:
    y = math.frexp(x)
    return y, frexp_tangent(y, tangents[1])


def modf_rrule(x: Any) -> Any:
    y = math.modf(x)

    def modf_pullback(ybar: Any) -> Any:
        return modf_cotangents(x, ybar)

    return y, modf_pullback


def modf_frule(tangents: Any, x: Any) -> Any:
    y = math.modf(x)
    return y, modf_tangent(y, tangents[1])


#: Integer-valued and predicate functions: no derivative.
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    math.floor, math.ceil, math.trunc, math.isfinite, math.isinf, math.isnan, math.isclose,
    math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt, math.ulp,
)

#: One entry per callable: element-wise functions from their partial derivatives (those of
#: NumPy's ufuncs where they agree), the others from their rules, then those with no derivative.
RULES: tuple[RulePair, ...] = (
    RulePair(math.sin, partials=ufuncs.sin_partials),
    RulePair(math.cos, partials=ufuncs.cos_partials),
    RulePair(math.tan, partials=ufuncs.tan_partials),
    RulePair(math.asin, partials=asin_partials),
    RulePair(math.acos, partials=acos_partials),
    RulePair(math.atan, partials=ufuncs.arctan_partials),
    RulePair(math.sinh, partials=ufuncs.sinh_partials),
    RulePair(math.cosh, partials=ufuncs.cosh_partials),
    RulePair(math.tanh, partials=ufuncs.tanh_partials),
    RulePair(math.asinh, partials=ufuncs.arcsinh_partials),
    RulePair(math.acosh, partials=acosh_partials),
    RulePair(math.atanh, partials=ufuncs.arctanh_partials),
    RulePair(math.exp, partials=ufuncs.exp_partials),
    RulePair(math.expm1, partials=ufuncs.expm1_partials),
    RulePair(math.log1p, partials=ufuncs.log1p_partials),
    RulePair(math.log2, partials=ufuncs.log2_partials),
    RulePair(math.log10, partials=ufuncs.log10_partials),
    RulePair(math.sqrt, partials=sqrt_partials),
    RulePair(math.erf, partials=erf_partials),
    RulePair(math.erfc, partials=erfc_partials),
    RulePair(math.gamma, partials=gamma_partials),
    RulePair(math.lgamma, partials=lgamma_partials),
    RulePair(math.fabs, partials=ufuncs.sign_partials),
    RulePair(math.degrees, partials=ufuncs.degrees_partials),
    RulePair(math.radians, partials=ufuncs.radians_partials),
    RulePair(math.atan2, partials=atan2_partials),
    RulePair(math.pow, partials=pow_partials),
    RulePair(math.copysign, partials=ufuncs.copysign_partials),
    RulePair(math.nextafter, partials=ufuncs.nextafter_partials),
    RulePair(math.fmod, partials=ufuncs.fmod_partials),
    RulePair(math.remainder, partials=ufuncs.fmod_partials),
    RulePair(math.ldexp, partials=ufuncs.ldexp_partials),
    RulePair(math.log, partials=log_partials),  # one or two arguments
    RulePair(math.hypot, partials=hypot_partials),
    *((RulePair(math.exp2, partials=ufuncs.exp2_partials), RulePair(math.cbrt, partials=cbrt_partials))
      if hasattr(math, "cbrt") else ()),  # Python 3.11
    *((RulePair(math.fma, partials=fma_partials),) if hasattr(math, "fma") else ()),  # Python 3.13
    RulePair(math.fsum, fsum_rrule, fsum_frule),
    RulePair(math.prod, prod_rrule, prod_frule),
    RulePair(math.dist, dist_rrule, dist_frule),
    RulePair(math.frexp, frexp_rrule, frexp_frule),
    RulePair(math.modf, modf_rrule, modf_frule),
    *((RulePair(math.sumprod, sumprod_rrule, sumprod_frule),) if hasattr(math, "sumprod") else ()),  # 3.12
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE),
)
