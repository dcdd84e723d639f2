"""Rules for the ``math`` module: a table of partial derivatives, one line per function.

Partials are written with NumPy and operators so that they differentiate again (second
derivatives through the rules) when an engine traces them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rulescore._helpers import non_differentiable, scalar_rule

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _digamma(x: Any) -> Any:
    """Digamma by recurrence and an asymptotic series (math has none; stays differentiable)."""
    shift = 0.0
    while float(x) < 6.0:
        shift = shift - 1.0 / x
        x = x + 1.0
    inv2 = 1.0 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return shift + np.log(x) - 0.5 / x - series


#: One entry per differentiable function of one argument: ``f: partial(x, result)``.
UNARY_PARTIALS: dict[Any, Any] = {
    math.sin: lambda x, result: np.cos(x),
    math.cos: lambda x, result: -np.sin(x),
    math.tan: lambda x, result: 1 + result * result,
    math.asin: lambda x, result: 1 / np.sqrt(1 - x * x),
    math.acos: lambda x, result: -1 / np.sqrt(1 - x * x),
    math.atan: lambda x, result: 1 / (1 + x * x),
    math.sinh: lambda x, result: np.cosh(x),
    math.cosh: lambda x, result: np.sinh(x),
    math.tanh: lambda x, result: 1 - result * result,
    math.asinh: lambda x, result: 1 / np.sqrt(x * x + 1),
    math.acosh: lambda x, result: 1 / np.sqrt(x * x - 1),
    math.atanh: lambda x, result: 1 / (1 - x * x),
    math.exp: lambda x, result: result,
    math.expm1: lambda x, result: result + 1,
    math.exp2: lambda x, result: result * _LN2,
    math.log1p: lambda x, result: 1 / (1 + x),
    math.log2: lambda x, result: 1 / (x * _LN2),
    math.log10: lambda x, result: 1 / (x * _LN10),
    math.sqrt: lambda x, result: 0.5 / result,
    math.cbrt: lambda x, result: 1 / (3 * result * result),
    math.erf: lambda x, result: _TWO_OVER_SQRT_PI * np.exp(-x * x),
    math.erfc: lambda x, result: -_TWO_OVER_SQRT_PI * np.exp(-x * x),
    math.gamma: lambda x, result: result * _digamma(x),
    math.lgamma: lambda x, result: _digamma(x),
    math.fabs: lambda x, result: np.sign(x) * 1.0,
    math.degrees: lambda x, result: 180.0 / math.pi,
    math.radians: lambda x, result: math.pi / 180.0,
}

#: Functions of two arguments: ``f: (d/da, d/db)``.
BINARY_PARTIALS: dict[Any, Any] = {
    math.atan2: lambda y, x: (x / (x * x + y * y), -y / (x * x + y * y)),
    math.hypot: lambda x, y, result: (x / result, y / result),
    math.pow: lambda x, p, result: (p * x ** (p - 1), result * np.log(x) if x > 0 else 0.0 * x),
    math.copysign: lambda x, y: (np.sign(x) * np.sign(y) if x != 0 else 1.0 * np.sign(y), 0.0),
    math.fmod: lambda x, y: (1.0, -float(np.trunc(x / y))),
}

NON_DIFFERENTIABLE: tuple[Any, ...] = (
    math.floor, math.ceil, math.trunc, math.isfinite, math.isinf, math.isnan, math.isclose,
    math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt, math.frexp,
)


def _log_partials(x: Any, *base: Any) -> Any:
    if not base:
        return 1 / x
    b = base[0]
    lb = np.log(b)
    return 1 / (x * lb), -np.log(x) / (b * lb * lb)


for _f, _d in UNARY_PARTIALS.items():
    scalar_rule(_f, _d)
for _f, _d in BINARY_PARTIALS.items():
    scalar_rule(_f, _d)
scalar_rule(math.log, _log_partials)
for _f in NON_DIFFERENTIABLE:
    non_differentiable(_f)
