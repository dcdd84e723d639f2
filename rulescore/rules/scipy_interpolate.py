"""Rules for ``scipy.interpolate`` (registered when SciPy imports it, see
:mod:`rulescore.rules._optional`): evaluating a piecewise polynomial (``PPoly``, and so
``CubicSpline``, ``CubicHermiteSpline``, ``Akima1DInterpolator``, ``PchipInterpolator`` and their
``.derivative()``) or a B-spline (``BSpline``, which ``make_interp_spline`` and
``interp1d(kind="cubic")`` build, and its ``.derivative()``), and ``make_interp_spline`` itself.

SciPy evaluates splines in compiled code. A spline's value is linear in its coefficients, so
the rules write the transpose: each evaluation point's cotangent goes to the coefficients of
the interval holding it, weighted by that interval's polynomial basis (``PPoly``) or by the
B-spline basis functions at the point (``BSpline``). In the evaluation points the derivative
is the spline's next derivative; for ``PPoly`` the breakpoints get theirs too (a point's
polynomial is written in its distance to the interval's left breakpoint). The coefficients of
``CubicSpline`` are computed in Python from the data (``solve_banded``, which has rules), so a
spline of traced values is differentiated through its construction and these rules.

``make_interp_spline(x, y, ...)`` solves a banded system whose matrix depends on ``x`` and the
knots only: its coefficients are affine in ``y`` (boundary conditions with derivative values
add a constant), ``c = M y + c0``, with ``M`` found by interpolating the unit vectors. The
derivatives in ``x`` and in given knots ``t`` are not implemented (``rc.not_implemented``: using
them raises, naming the fix). Breakpoints given in decreasing order and negative ``nu``
(antiderivatives) raise ``NotImplementedError``.

Example:
    >>> import numpy as np, rulescore as rc
    >>> from scipy.interpolate import CubicSpline
    >>> spline = CubicSpline([0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 0.0, 1.0])
    >>> y, back = rc.rrule(type(spline).__call__, spline, np.array([0.5, 2.0]))
    >>> y
    array([1., 0.])
    >>> back(np.array([1.0, 0.0]))[2]  # the slope at 0.5
    array([0.83333333, 0.        ])
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.interpolate as si

from rulescore._linear import dense_tangent
from rulescore._not_implemented import not_implemented
from rulescore._projection import project
from rulescore._rule_pair import RulePair
from rulescore._tangent import Tangent, tangent_type
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent
from rulescore.rules._common import bind_arguments, family_rules
from rulescore.rules.indexing import unindex

_scipy_ppoly_call = si.PPoly.__call__
_scipy_bspline_call = si.BSpline.__call__


def _ppoly_call(spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """SciPy's value, as an array of its own (SciPy's is a transposed view for ``axis != 0``: a
    caller writing into it, as ``interp1d`` does, writes into memory no other array shows)."""
    return np.array(_scipy_ppoly_call(spline, x, *args, **kwargs))


def _bspline_call(spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """SciPy's value, as an array of its own (see :func:`_ppoly_call`)."""
    return np.array(_scipy_bspline_call(spline, x, *args, **kwargs))


def _name(spline: Any, public: str) -> str:
    """The field holding a spline's ``public`` attribute (``c``, ``x``, ``t``): SciPy keeps it in
    ``_c`` behind a property (read through ``_asarray``), in older versions in ``c`` itself."""
    return f"_{public}" if hasattr(spline, f"_{public}") else public


def _read(spline: Any, public: str) -> Any:
    """A spline's coefficients, breakpoints or knots, read from the field (the property would
    convert a traced value with ``asarray``)."""
    return getattr(spline, _name(spline, public))


def _points_cotangent(x: Any, xbar: Any) -> Any:
    """The evaluation points' cotangent (none for integer points)."""
    return project(x, xbar) if np.result_type(x).kind in "fc" else NoTangent()


def _field(tangent: Any, name: str) -> Any:
    """The entry ``name`` of an object's tangent (zero when it has none)."""
    if isinstance(tangent, Tangent):
        return dict(tangent.items()).get(name, ZeroTangent())
    return ZeroTangent()


def _options(f: Any, spline: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, Any]:
    """``(nu, extrapolate)`` of a spline evaluation ``f(spline, x, *args, **kwargs)``."""
    options = bind_arguments(f, (spline, None, *args), kwargs)
    nu, extrapolate = int(options.get("nu", 0)), options.get("extrapolate")
    if nu < 0:
        raise NotImplementedError(f"the rules for {type(spline).__name__} evaluate derivatives (nu >= 0), "
                                  f"not antiderivatives (nu={nu}): call .antiderivative() first")
    return nu, spline.extrapolate if extrapolate is None else extrapolate


def _to_rows(values: Any, x_ndim: int, axis: int, trailing: tuple[int, ...]) -> Any:
    """A spline's output (or its cotangent) as ``(points, trailing)`` rows: SciPy's transpose
    of the evaluation axes into ``axis`` undone."""
    if axis != 0:
        order = list(range(np.ndim(values)))
        order = order[x_ndim:x_ndim + axis] + order[:x_ndim] + order[x_ndim + axis:]
        values = np.transpose(values, np.argsort(order))
    return np.reshape(values, (-1, math.prod(trailing)))


def _from_rows(rows: Any, x_shape: tuple[int, ...], axis: int, trailing: tuple[int, ...]) -> Any:
    """The inverse of :func:`_to_rows`: SciPy's output layout."""
    out = np.reshape(rows, x_shape + trailing)
    if axis != 0:
        order = list(range(len(x_shape) + len(trailing)))
        order = order[len(x_shape):len(x_shape) + axis] + order[:len(x_shape)] + order[len(x_shape) + axis:]
        out = np.transpose(out, order)
    return out


# -- PPoly.__call__ (CubicSpline, Akima, Pchip, CubicHermiteSpline) ----------------------------

class _Pieces:
    """Where the points of a ``PPoly`` evaluation fall: each point's interval, its polynomial
    basis (the ``nu``-th derivative of the powers of its distance to the interval's left
    breakpoint), which points are defined (inside, or extrapolated), and for periodic
    extrapolation how many periods each point was moved by."""

    def __init__(self, spline: Any, x: Any, nu: int, extrapolate: Any) -> None:
        breaks = np.asarray(_read(spline, "x"))
        if breaks.size > 1 and breaks[-1] < breaks[0]:
            raise NotImplementedError(f"the rules for {type(spline).__name__} need increasing breakpoints: "
                                      "reverse the data (x[::-1], y[::-1]) before building the spline")
        c = _read(spline, "c")
        self.x_shape, self.trailing = tuple(np.shape(x)), tuple(np.shape(c)[2:])
        self.order, self.intervals = np.shape(c)[0] - 1, np.shape(c)[1]
        points = np.ravel(x)
        self.periods = None
        if extrapolate == "periodic":
            length = breaks[-1] - breaks[0]
            self.periods = np.floor((points - breaks[0]) / length)
            points = points - length * self.periods
            extrapolate = False
        self.interval = np.clip(np.searchsorted(breaks, points, side="right") - 1, 0, self.intervals - 1)
        self.defined = np.ones(np.shape(points), dtype=bool) if extrapolate else (
            (points >= breaks[0]) & (points <= breaks[-1]))
        distance = points - breaks[self.interval]
        powers = self.order - np.arange(self.order + 1)
        falling = np.array([math.perm(int(p), nu) if p >= nu else 0 for p in powers], dtype=float)
        basis = falling * distance[:, None] ** np.maximum(powers - nu, 0)
        self.basis = np.where(self.defined[:, None], basis, 0.0)


def _ppoly_slope_rows(spline: Any, x: Any, nu: int, extrapolate: Any, pieces: _Pieces, axis: int) -> Any:
    """The spline's ``nu + 1``-th derivative at ``x`` as rows (zero where it is not defined)."""
    slope = _ppoly_call(spline, x, nu + 1, extrapolate)
    return np.where(pieces.defined[:, None], _to_rows(slope, len(pieces.x_shape), axis, pieces.trailing), 0.0)


def ppoly_call_rrule(spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    nu, extrapolate = _options(_scipy_ppoly_call, spline, args, kwargs)
    y = _ppoly_call(spline, x, *args, **kwargs)
    pieces = _Pieces(spline, x, nu, extrapolate)
    axis = spline.axis

    def ppoly_call_pullback(ybar: Any) -> Any:
        given = _to_rows(ybar, len(pieces.x_shape), axis, pieces.trailing)
        rows = np.where(pieces.defined[:, None], given, 0.0)
        k1, m, r = pieces.order + 1, pieces.intervals, math.prod(pieces.trailing)
        per_point = pieces.basis[:, :, None] * rows[:, None, :]
        by_interval = unindex(per_point, pieces.interval, (m, k1, r), np.result_type(rows, float))
        cbar = np.transpose(by_interval, (1, 0, 2))
        slope = np.sum(rows * _ppoly_slope_rows(spline, x, nu, extrapolate, pieces, axis), axis=1)
        breaks_bar = -unindex(slope, pieces.interval, (m + 1,), np.result_type(slope, float))
        if pieces.periods is not None:  # the point moved by whole periods of the breakpoints' span
            moved = np.sum(slope * pieces.periods)
            breaks_bar = breaks_bar + moved * (np.arange(m + 1) == 0) - moved * (np.arange(m + 1) == m)
        c, breaks = _read(spline, "c"), _read(spline, "x")
        coefficients = project(c, np.reshape(cbar, np.shape(c)))
        spline_bar = tangent_type(type(spline))(**{_name(spline, "c"): coefficients,
                                                   _name(spline, "x"): project(breaks, breaks_bar)})
        xbar = _points_cotangent(x, np.reshape(slope, pieces.x_shape))
        return NoTangent(), spline_bar, xbar, *(NoTangent() for _ in args)

    return y, ppoly_call_pullback


def ppoly_call_frule(tangents: Any, spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    nu, extrapolate = _options(_scipy_ppoly_call, spline, args, kwargs)
    y = _ppoly_call(spline, x, *args, **kwargs)
    pieces = _Pieces(spline, x, nu, extrapolate)
    axis, k1, r = spline.axis, pieces.order + 1, math.prod(pieces.trailing)
    rows: Any = np.zeros((len(pieces.interval), r))
    cdot, breaks_dot = _field(tangents[1], _name(spline, "c")), _field(tangents[1], _name(spline, "x"))
    xdot = tangents[2] if len(tangents) > 2 else ZeroTangent()
    if not isinstance(cdot, AbstractZero):
        chosen = np.reshape(cdot, (k1, pieces.intervals, r))[:, pieces.interval, :]  # (k1, points, r)
        rows = rows + np.einsum("pk,kpr->pr", pieces.basis, chosen)
    if not (isinstance(breaks_dot, AbstractZero) and isinstance(xdot, AbstractZero)):
        moved: Any = np.zeros(len(pieces.interval))
        if not isinstance(xdot, AbstractZero):
            moved = moved + np.ravel(dense_tangent(x, xdot))
        if not isinstance(breaks_dot, AbstractZero):
            moved = moved - np.asarray(breaks_dot)[pieces.interval]
            if pieces.periods is not None:
                moved = moved + pieces.periods * (breaks_dot[0] - breaks_dot[-1])
        rows = rows + moved[:, None] * _ppoly_slope_rows(spline, x, nu, extrapolate, pieces, axis)
    return y, project(y, _from_rows(rows, pieces.x_shape, axis, pieces.trailing))


# -- BSpline.__call__ (make_interp_spline, interp1d's splines) ---------------------------------

def _bspline_basis(spline: Any, x: Any, nu: int, extrapolate: Any) -> tuple[Any, int]:
    """``(B, n)``: the ``nu``-th derivatives of the spline's ``n`` B-spline basis functions at the
    points of ``x`` raveled, ``(points, n)``: the spline's value is ``B @ c[:n]``."""
    knots = np.asarray(_read(spline, "t"))
    n = len(knots) - spline.k - 1
    unit = si.BSpline.construct_fast(knots, np.eye(n), spline.k, extrapolate=extrapolate)
    return np.reshape(_bspline_call(unit, np.ravel(x), nu), (-1, n)), n


def _knots_not_implemented(spline: Any) -> Any:
    return not_implemented(f"the derivative of {type(spline).__name__} in its knots t: build the spline "
                           "from the data with scipy.interpolate.CubicSpline (differentiable in x and y)")


def bspline_call_rrule(spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    nu, extrapolate = _options(_scipy_bspline_call, spline, args, kwargs)
    y = _bspline_call(spline, x, *args, **kwargs)
    basis, n = _bspline_basis(spline, x, nu, extrapolate)
    c = _read(spline, "c")
    trailing, x_shape, axis = tuple(np.shape(c)[1:]), tuple(np.shape(x)), spline.axis

    def bspline_call_pullback(ybar: Any) -> Any:
        rows = np.nan_to_num(_to_rows(ybar, len(x_shape), axis, trailing))
        cbar = np.transpose(basis) @ rows
        extra = np.shape(c)[0] - n  # coefficients past n are never read
        if extra:
            cbar = np.concatenate([cbar, np.zeros((extra, np.shape(cbar)[1]))])
        slope = _to_rows(_bspline_call(spline, x, nu + 1, extrapolate), len(x_shape), axis, trailing)
        coefficients = project(c, np.reshape(cbar, np.shape(c)))
        spline_bar = tangent_type(type(spline))(**{_name(spline, "c"): coefficients,
                                                   _name(spline, "t"): _knots_not_implemented(spline)})
        xbar = _points_cotangent(x, np.reshape(np.sum(rows * np.nan_to_num(slope), axis=1), x_shape))
        return NoTangent(), spline_bar, xbar, *(NoTangent() for _ in args)

    return y, bspline_call_pullback


def bspline_call_frule(tangents: Any, spline: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    nu, extrapolate = _options(_scipy_bspline_call, spline, args, kwargs)
    y = _bspline_call(spline, x, *args, **kwargs)
    c = _read(spline, "c")
    trailing, x_shape, axis = tuple(np.shape(c)[1:]), tuple(np.shape(x)), spline.axis
    cdot, knots_dot = _field(tangents[1], _name(spline, "c")), _field(tangents[1], _name(spline, "t"))
    xdot = tangents[2] if len(tangents) > 2 else ZeroTangent()
    if not isinstance(knots_dot, AbstractZero):
        _knots_not_implemented(spline).refuse()
    rows: Any = np.zeros((int(np.prod(x_shape)), math.prod(trailing)))
    if not isinstance(cdot, AbstractZero):
        basis, n = _bspline_basis(spline, x, nu, extrapolate)
        rows = rows + basis @ np.reshape(cdot, (np.shape(c)[0], -1))[:n]
    if not isinstance(xdot, AbstractZero):
        slope = _to_rows(_bspline_call(spline, x, nu + 1, extrapolate), len(x_shape), axis, trailing)
        rows = rows + np.ravel(dense_tangent(x, xdot))[:, None] * slope
    return y, project(y, _from_rows(rows, x_shape, axis, trailing))


# -- BSpline.derivative: new coefficients linear in the old ----------------------------------

_scipy_bspline_derivative = si.BSpline.derivative


def _derivative_map(spline: Any, nu: int) -> tuple[Any, int]:
    """``(D, n)``: the derivative spline's coefficients are ``D @ c[:n]`` (found by
    differentiating the spline of each unit coefficient vector)."""
    knots = np.asarray(_read(spline, "t"))
    n = len(knots) - spline.k - 1
    unit = si.BSpline.construct_fast(knots, np.eye(n), spline.k, extrapolate=spline.extrapolate)
    return np.reshape(_read(_scipy_bspline_derivative(unit, nu), "c"), (-1, n)), n


def _derivative_order(spline: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return int(bind_arguments(_scipy_bspline_derivative, (spline, *args), kwargs).get("nu", 1))


def bspline_derivative_rrule(spline: Any, *args: Any, **kwargs: Any) -> Any:
    out = _scipy_bspline_derivative(spline, *args, **kwargs)
    linear, n = _derivative_map(spline, _derivative_order(spline, args, kwargs))
    c = _read(spline, "c")

    def bspline_derivative_pullback(out_bar: Any) -> Any:
        cbar_out, knots_bar = _field(out_bar, _name(out, "c")), _field(out_bar, _name(out, "t"))
        cbar: Any = np.zeros((np.shape(c)[0], math.prod(np.shape(c)[1:])))
        if not isinstance(cbar_out, AbstractZero):
            rows = np.transpose(linear) @ np.reshape(cbar_out, (np.shape(linear)[0], -1))
            cbar = np.concatenate([rows, cbar[n:]])  # coefficients past n are never read
        knots = ZeroTangent() if isinstance(knots_bar, AbstractZero) else _knots_not_implemented(spline)
        coefficients = project(c, np.reshape(cbar, np.shape(c)))
        spline_bar = tangent_type(type(spline))(**{_name(spline, "c"): coefficients,
                                                   _name(spline, "t"): knots})
        return NoTangent(), spline_bar, *(NoTangent() for _ in args)

    return out, bspline_derivative_pullback


def bspline_derivative_frule(tangents: Any, spline: Any, *args: Any, **kwargs: Any) -> Any:
    out = _scipy_bspline_derivative(spline, *args, **kwargs)
    cdot, knots_dot = _field(tangents[1], _name(spline, "c")), _field(tangents[1], _name(spline, "t"))
    if not isinstance(knots_dot, AbstractZero):
        _knots_not_implemented(spline).refuse()
    if isinstance(cdot, AbstractZero):
        return out, ZeroTangent()
    linear, n = _derivative_map(spline, _derivative_order(spline, args, kwargs))
    c = _read(spline, "c")
    rows = linear @ np.reshape(cdot, (np.shape(c)[0], -1))[:n]
    return out, tangent_type(type(out))(**{_name(out, "c"): np.reshape(rows, np.shape(_read(out, "c")))})


# -- make_interp_spline: coefficients affine in y ----------------------------------------------

def _interpolation_map(x: Any, y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, int]:
    """``(M, c0, axis)`` with the spline's coefficients ``c = M y + c0`` (``y``'s ``axis`` first,
    the other axes flattened: ``M`` is ``(coefficients, points)``)."""
    options = bind_arguments(si.make_interp_spline, (x, y, *args), kwargs)
    axis = int(options.get("axis", 0)) % max(np.ndim(y), 1)
    rest = {k: v for k, v in options.items() if k not in ("x", "y", "axis")}
    n = np.shape(y)[axis]
    zero = _read(si.make_interp_spline(x, np.zeros(n), **rest), "c")
    units = _read(si.make_interp_spline(x, np.eye(n), **rest), "c")
    return units - zero[:, None], zero, axis


def make_interp_spline_rrule(x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    spline = si.make_interp_spline(x, y, *args, **kwargs)
    linear, _, axis = _interpolation_map(x, y, args, kwargs)

    def make_interp_spline_pullback(spline_bar: Any) -> Any:
        cbar = _field(spline_bar, _name(spline, "c"))
        if isinstance(cbar, AbstractZero):
            return NoTangent(), not_implemented(_x_reason()), ZeroTangent(), *(NoTangent() for _ in args)
        rows = np.transpose(linear) @ np.reshape(cbar, (np.shape(linear)[0], -1))
        moved = np.moveaxis(np.asarray(y), axis, 0)
        ybar = np.moveaxis(np.reshape(rows, np.shape(moved)), 0, axis)
        return NoTangent(), not_implemented(_x_reason()), project(y, ybar), *(NoTangent() for _ in args)

    return spline, make_interp_spline_pullback


def make_interp_spline_frule(tangents: Any, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    spline = si.make_interp_spline(x, y, *args, **kwargs)
    if not isinstance(tangents[1], AbstractZero):
        not_implemented(_x_reason()).refuse()
    linear, _, axis = _interpolation_map(x, y, args, kwargs)
    ydot = np.moveaxis(np.asarray(dense_tangent(y, tangents[2])), axis, 0)
    cdot = np.reshape(linear @ np.reshape(ydot, (np.shape(ydot)[0], -1)), np.shape(_read(spline, "c")))
    return spline, tangent_type(type(spline))(**{_name(spline, "c"): cdot})


def _x_reason() -> str:
    return ("the derivative of scipy.interpolate.make_interp_spline in the data points x: use "
            "scipy.interpolate.CubicSpline(x, y), differentiable in x and y")


RULES: tuple[RulePair, ...] = family_rules(globals(), (
    (_scipy_ppoly_call, "ppoly_call"), (_scipy_bspline_call, "bspline_call"),
    (_scipy_bspline_derivative, "bspline_derivative"), si.make_interp_spline))

__all__ = ["RULES"]
