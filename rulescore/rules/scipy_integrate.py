"""Rules for ``scipy.integrate`` (registered when SciPy imports ``scipy.integrate``, see
:mod:`rulescore.rules._optional`): ``trapezoid`` and ``simpson`` in the samples ``y``, the
sample points ``x`` (one-dimensional, or shaped like ``y``) and the spacing ``dx``.

With ``s_i = (y_i + y_{i+1}) / 2`` the trapezoid rule is ``sum_i (x_{i+1} - x_i) s_i``: its
partial in ``y_i`` is half the width of the two neighbouring intervals, in ``x_i`` it is
``s_{i-1} - s_i``. Simpson's rule is ``sum_i w_i(h) y_i``, with weights rational in the interval
widths ``h`` (SciPy's formula, with its correction of the last interval for an even number of
samples): the weights are computed here and differentiated in ``h`` by complex step, which is
exact to rounding for rational functions.

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

from rulescore._rule_pair import RulePair
from rulescore._zeros import AbstractZero, NoTangent
from rulescore.rules._common import bind_arguments, proj

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
    ydot: Any = 0.0
    if not isinstance(tangents[1], AbstractZero):
        t = np.moveaxis(np.asarray(tangents[1], dtype=float), call.axis, -1)
        ydot = ydot + np.sum(t * call.y_partials(), axis=-1)
    if len(args) >= 1 and call.x is not None and not isinstance(tangents[2], AbstractZero):
        t = np.asarray(tangents[2], dtype=float)
        t = t if t.ndim == 1 else np.moveaxis(t, call.axis, -1)
        ydot = ydot + np.sum(t * call.x_partials(), axis=-1)
    if len(args) >= 2 and call.x is None and not isinstance(tangents[3], AbstractZero):
        ydot = ydot + tangents[3] * call.value / call.dx
    return call.value, proj(call.value, np.broadcast_to(ydot, np.shape(call.value)))


# -- simpson ---------------------------------------------------------------------------------

def _simpson_weights(h: Any) -> Any:
    """The weights of SciPy's Simpson rule for interval widths ``h`` (``(..., n - 1)``, real or
    complex): ``simpson(y, x) == sum(weights * y)``, written with arithmetic only."""
    n = h.shape[-1] + 1
    w = np.zeros((*h.shape[:-1], n), dtype=h.dtype)
    if n == 2:
        w[..., :] = h / 2
        return w
    with np.errstate(divide="ignore", invalid="ignore"):  # a repeated point: no derivative (nan)
        return _simpson_pairs(h, w)


def _simpson_pairs(h: Any, w: Any) -> Any:
    n = w.shape[-1]
    pairs = (n - 1) // 2 if n % 2 else (n - 2) // 2
    h0, h1 = h[..., 0:2 * pairs:2], h[..., 1:2 * pairs:2]
    hsum = h0 + h1
    w[..., 0:2 * pairs:2] += hsum / 6 * (2 - h1 / h0)
    w[..., 1:2 * pairs:2] += hsum ** 3 / (6 * h0 * h1)
    w[..., 2:2 * pairs + 1:2] += hsum / 6 * (2 - h0 / h1)
    if n % 2 == 0:  # Cartwright's correction for the last interval
        a, b = h[..., -2], h[..., -1]
        w[..., -1] += (2 * b ** 2 + 3 * a * b) / (6 * (a + b))
        w[..., -2] += (b ** 2 + 3 * a * b) / (6 * a)
        w[..., -3] -= b ** 3 / (6 * a * (a + b))
    return w


def _simpson_weights_dot(h: Any, hdot: Any) -> Any:
    """The derivative of the weights in ``h`` along ``hdot`` (complex step: exact to rounding)."""
    step = 1e-20 * max(float(np.max(np.abs(h), initial=0.0)), 1e-300)
    return np.imag(_simpson_weights(h + 1j * step * hdot)) / step


class _Simpson:
    """A ``simpson`` call: samples and widths on the last axis, the weights and their derivatives."""

    def __init__(self, y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        options = bind_arguments(si.simpson, (y, *args), kwargs)
        self.x, self.dx, self.axis = options["x"], options["dx"], options["axis"]
        self.value = si.simpson(y, *args, **kwargs)
        self.y = np.moveaxis(np.asarray(y, dtype=float), self.axis, -1)
        n = self.y.shape[-1]
        if self.x is None:
            self.h = np.full(n - 1, float(self.dx))
        else:
            xs = np.asarray(self.x, dtype=float)
            self.h = np.diff(xs if xs.ndim == 1 else np.moveaxis(xs, self.axis, -1), axis=-1)
        self.weights = _simpson_weights(self.h)

    def y_cotangent(self, ybar: Any, y: Any) -> Any:
        return proj(y, np.moveaxis(ybar[..., None] * self.weights, -1, self.axis))

    def x_cotangent(self, ybar: Any) -> Any:
        m = self.h.shape[-1]
        eye = np.broadcast_to(np.eye(m), (*self.h.shape[:-1], m, m))
        jac = _simpson_weights_dot(np.broadcast_to(self.h[..., None, :], eye.shape), eye)  # (.., j, k)
        coefficients = ybar[..., None] * self.y  # the result's partials in the weights
        if self.h.ndim == 1:  # one set of weights for every integral: sum over them
            coefficients = np.sum(np.reshape(coefficients, (-1, m + 1)), axis=0)
        hbar = np.einsum("...jk,...k->...j", jac, coefficients)
        pad = np.zeros((*hbar.shape[:-1], 1))
        xbar = np.concatenate([pad, hbar], axis=-1) - np.concatenate([hbar, pad], axis=-1)
        return proj(self.x, xbar if self.h.ndim == 1 else np.moveaxis(xbar, -1, self.axis))

    def x_tangent(self, xdot: Any) -> Any:
        t = np.asarray(xdot, dtype=float)
        hdot = np.diff(t if t.ndim == 1 else np.moveaxis(t, self.axis, -1), axis=-1)
        return np.sum(self.y * _simpson_weights_dot(self.h, hdot), axis=-1)


def simpson_rrule(y: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Simpson(y, args, kwargs)

    def simpson_pullback(ybar: Any) -> Any:
        ybar = np.asarray(ybar, dtype=float)
        rest = (call.x_cotangent(ybar),) if args and args[0] is not None else tuple(NoTangent() for _ in args)
        return NoTangent(), call.y_cotangent(ybar, y), *rest

    return call.value, simpson_pullback


def simpson_frule(tangents: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Simpson(y, args, kwargs)
    ydot: Any = 0.0
    if not isinstance(tangents[1], AbstractZero):
        t = np.moveaxis(np.asarray(tangents[1], dtype=float), call.axis, -1)
        ydot = ydot + np.sum(t * call.weights, axis=-1)
    if args and args[0] is not None and not isinstance(tangents[2], AbstractZero):
        ydot = ydot + call.x_tangent(tangents[2])
    return call.value, proj(call.value, np.broadcast_to(ydot, np.shape(call.value)))


RULES: tuple[RulePair, ...] = (
    RulePair(si.trapezoid, trapezoid_rrule, trapezoid_frule),
    RulePair(si.simpson, simpson_rrule, simpson_frule),
)
