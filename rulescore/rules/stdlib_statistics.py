"""Rules for the standard library's ``statistics`` (registered when it is imported, see
:mod:`rulescore.rules._optional`): ``mean``, ``median``, ``variance``, ``pvariance``, ``stdev``
and ``pstdev`` of a list, tuple or array of real numbers, with the given mean (``xbar``, ``mu``)
differentiated too.

``statistics`` computes exactly, with fractions (``float.as_integer_ratio``), which no
derivative can be traced through. The values are ``statistics``' own; the derivatives are those
of the textbook formulas (``variance(data, xbar)`` is ``sum((x - xbar)**2) / (n - 1)``), written
with Python arithmetic on the entries so an outer derivative traces the rules (second order).
``median`` sends the cotangent to the middle entry (to the two middle ones, halved, for an even
count), as a sort does. ``fmean`` needs no rule: it is traced through. A generator or iterator
of traced values cannot be seen by the engine: pass a list.

Example:
    >>> import rulescore as rc, statistics
    >>> y, back = rc.rrule(statistics.pvariance, [1.0, 2.0, 6.0])
    >>> y
    4.666666666666667
    >>> back(1.0)[1]
    Tangent[list](-1.3333333333333333, -0.6666666666666666, 2.0)
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import entries, fit, proj

_NT = NoTangent()


def _entries(data: Any) -> list[Any]:
    """The data as a list, read once (an iterator is consumed here, not again by ``statistics``)."""
    return list(data)


def _per_entry(data: Any, cotangents: list[Any]) -> Any:
    """The cotangent of ``data`` from one cotangent per entry (an array's is an array)."""
    if type(data) is list or type(data) is tuple:
        return tangent_type(type(data))(*(proj(v, c) for v, c in zip(data, cotangents, strict=True)))
    if isinstance(data, np.ndarray):
        return fit(data, np.asarray(cotangents, dtype=float))
    return _NT  # an iterator: it holds no tangent


def _entry_tangents(data: Any, tangent: Any) -> list[Any]:
    if isinstance(data, np.ndarray):
        return list(np.broadcast_to(tangent, np.shape(data))) if not isinstance(tangent, ZeroTangent) else [
            0.0] * len(data)
    return [0.0 if isinstance(t, ZeroTangent) else t for t in entries(tangent, len(data))]


def _centre(xs: list[Any], given: Any) -> Any:
    return sum(xs) / len(xs) if given is None else given


# -- mean, median -------------------------------------------------------------------------------

def mean_rrule(data: Any) -> Any:
    xs = _entries(data)
    y = statistics.mean(xs)

    def mean_pullback(ybar: Any) -> Any:
        return _NT, _per_entry(data, [ybar / len(xs)] * len(xs))

    return y, mean_pullback


def mean_frule(tangents: Any, data: Any) -> Any:
    xs = _entries(data)
    y = statistics.mean(xs)
    return y, proj(y, sum(_entry_tangents(data, tangents[1])) / len(xs))


def _middle(xs: list[Any]) -> list[tuple[int, float]]:
    """The entries ``median`` averages and their weights."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    half = len(xs) // 2
    if len(xs) % 2:
        return [(order[half], 1.0)]
    return [(order[half - 1], 0.5), (order[half], 0.5)]


def median_rrule(data: Any) -> Any:
    xs = _entries(data)
    y = statistics.median(xs)
    middle = _middle(xs)

    def median_pullback(ybar: Any) -> Any:
        cotangents: list[Any] = [0.0 * ybar] * len(xs)
        for i, weight in middle:
            cotangents[i] = weight * ybar
        return _NT, _per_entry(data, cotangents)

    return y, median_pullback


def median_frule(tangents: Any, data: Any) -> Any:
    xs = _entries(data)
    y = statistics.median(xs)
    dots = _entry_tangents(data, tangents[1])
    return y, proj(y, sum(weight * dots[i] for i, weight in _middle(xs)))


# -- variance, pvariance, stdev, pstdev -----------------------------------------------------------

def _spread_rules(f: Callable[..., Any], sample: bool, root: bool) -> tuple[Any, Any]:
    """The rules of ``f(data, centre=None)``: the sum of squared deviations from ``centre`` (the
    mean when not given) over ``n - 1`` (``sample``) or ``n``, its square root if ``root``."""

    def spread_rrule(data: Any, *args: Any) -> Any:
        xs = _entries(data)
        y = f(xs, *args)
        given = args[0] if args else None

        def spread_pullback(ybar: Any) -> Any:
            c = _centre(xs, given)
            scale = (ybar / (2 * y) if root else ybar) * 2 / (len(xs) - sample)
            cotangents = [scale * (x - c) for x in xs]
            rest = () if not args else (_NT if given is None else proj(given, -sum(cotangents)),)
            return (_NT, _per_entry(data, cotangents), *rest)

        return y, spread_pullback

    def spread_frule(tangents: Any, data: Any, *args: Any) -> Any:
        xs = _entries(data)
        y = f(xs, *args)
        given = args[0] if args else None
        c = _centre(xs, given)
        dots = _entry_tangents(data, tangents[1])
        centre_dot = 0.0 if given is None or len(tangents) < 3 or isinstance(tangents[2], ZeroTangent) \
            else tangents[2]
        # with the mean as centre its tangent drops out: the deviations sum to zero
        deviations = sum((x - c) * (d - centre_dot) for x, d in zip(xs, dots, strict=True))
        ydot = 2 * deviations / (len(xs) - sample)
        return y, proj(y, ydot / (2 * y) if root else ydot)

    name = f.__name__
    spread_rrule.__name__ = spread_rrule.__qualname__ = f"{name}_rrule"
    spread_frule.__name__ = spread_frule.__qualname__ = f"{name}_frule"
    return spread_rrule, spread_frule


RULES: tuple[RulePair, ...] = (
    RulePair(statistics.mean, mean_rrule, mean_frule),
    RulePair(statistics.median, median_rrule, median_frule),
    RulePair(statistics.variance, *_spread_rules(statistics.variance, sample=True, root=False)),
    RulePair(statistics.pvariance, *_spread_rules(statistics.pvariance, sample=False, root=False)),
    RulePair(statistics.stdev, *_spread_rules(statistics.stdev, sample=True, root=True)),
    RulePair(statistics.pstdev, *_spread_rules(statistics.pstdev, sample=False, root=True)),
)
