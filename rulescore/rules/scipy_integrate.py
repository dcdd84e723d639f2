"""Rules for ``scipy.integrate`` (registered when SciPy imports ``scipy.integrate``, see
:mod:`rulescore.rules._optional`): ``trapezoid`` in the samples ``y``, the sample points ``x``
(one-dimensional, or shaped like ``y``) and the spacing ``dx``.

With ``s_i = (y_i + y_{i+1}) / 2`` the result is ``sum_i (x_{i+1} - x_i) s_i``: its partial in
``y_i`` is half the width of the two neighbouring intervals, in ``x_i`` it is ``s_{i-1} - s_i``.

Example:
    >>> import numpy as np, rulescore as rc, scipy.integrate as si
    >>> y, back = rc.rrule(si.trapezoid, np.array([1.0, 2.0, 4.0]))
    >>> float(y), back(1.0)[1]
    (4.5, array([0.5, 1. , 0.5]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.integrate as si

from rulescore._linear import dense_tangent
from rulescore._rule_pair import RulePair
from rulescore._zeros import NoTangent
from rulescore.rules._common import proj

_NAMES = ("x", "dx", "axis")


class _Trapezoid:
    """A ``trapezoid`` call: the samples and spacing moved to the last axis, and its partials."""

    def __init__(self, y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        options = dict(zip(_NAMES, args, strict=False))
        options.update(kwargs)
        self.x, self.dx, self.axis = options.get("x"), options.get("dx", 1.0), options.get("axis", -1)
        self.value = si.trapezoid(y, *args, **kwargs)
        self.y = np.moveaxis(np.asarray(y, dtype=float), self.axis, -1)
        if self.x is None:
            self.widths = np.full(self.y.shape[-1] - 1, float(self.dx))
        else:
            xs = np.asarray(self.x, dtype=float)
            self.widths = np.diff(xs if xs.ndim == 1 else np.moveaxis(xs, self.axis, -1), axis=-1)

    def y_partials(self) -> Any:
        w = np.broadcast_to(self.widths, (*self.y.shape[:-1], self.y.shape[-1] - 1)) / 2
        pad = np.zeros((*w.shape[:-1], 1))
        return np.concatenate([w, pad], axis=-1) + np.concatenate([pad, w], axis=-1)

    def x_partials(self) -> Any:
        s = (self.y[..., 1:] + self.y[..., :-1]) / 2
        pad = np.zeros((*s.shape[:-1], 1))
        return np.concatenate([pad, s], axis=-1) - np.concatenate([s, pad], axis=-1)

    def cotangents(self, ybar: Any, y: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        ybar = np.asarray(ybar, dtype=float)[..., None]
        ycot = proj(y, np.moveaxis(ybar * self.y_partials(), -1, self.axis))
        rest: list[Any] = [NoTangent() for _ in args]
        if args and self.x is not None:
            xcot = ybar * self.x_partials()
            if np.ndim(self.x) == 1:
                xcot = np.sum(np.reshape(xcot, (-1, xcot.shape[-1])), axis=0)
            else:
                xcot = np.moveaxis(xcot, -1, self.axis)
            rest[0] = proj(self.x, xcot)
        if len(args) >= 2 and self.x is None:
            rest[1] = proj(self.dx, ybar[..., 0] * self.value / self.dx)
        return (NoTangent(), ycot, *rest)


def trapezoid_rrule(y: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Trapezoid(y, args, kwargs)

    def trapezoid_pullback(ybar: Any) -> Any:
        return call.cotangents(ybar, y, args)

    return call.value, trapezoid_pullback


def trapezoid_frule(tangents: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Trapezoid(y, args, kwargs)
    # any one of the tangents may be zero: those of y and x become dense zeros
    t = np.moveaxis(np.asarray(dense_tangent(y, tangents[1]), dtype=float), call.axis, -1)
    ydot = np.sum(t * call.y_partials(), axis=-1)
    if len(args) >= 1 and call.x is not None:
        t = np.asarray(dense_tangent(call.x, tangents[2]), dtype=float)
        t = t if t.ndim == 1 else np.moveaxis(t, call.axis, -1)
        ydot = ydot + np.sum(t * call.x_partials(), axis=-1)
    if len(args) >= 2 and call.x is None:
        ydot = ydot + tangents[3] * call.value / call.dx
    return call.value, proj(call.value, np.broadcast_to(ydot, np.shape(call.value)))


RULES: tuple[RulePair, ...] = (
    RulePair(si.trapezoid, trapezoid_rrule, trapezoid_frule),
)
