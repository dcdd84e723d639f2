"""Rules for ``scipy.interpolate`` (rulescore/rules/scipy_interpolate.py): splines of traced values
as people write them (``CubicSpline(x, y)(xs)`` with every ``bc_type``, ``.derivative()``,
``interp1d``, ``make_interp_spline``, ``np.interp``, Pchip, Akima), differentiated by zygotepy in
the values, the evaluation points and the breakpoints, in reverse and forward mode and to second
order, against finite differences; and the refusals of what the rules do not cover."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

si = pytest.importorskip("scipy.interpolate")

import rulescore as rc  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_interpolate  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

X = np.array([0.0, 0.4, 1.1, 1.5, 2.2, 2.6, 3.0])
Y = np.sin(X) + 0.3 * X
# inside, on a breakpoint, at the right end, extrapolated on both sides
POINTS = np.array([0.3, 1.1, 1.9, 2.95, -0.4, 3.5])
INSIDE = POINTS[:4]
WEIGHTS = np.linspace(1.0, 2.0, len(POINTS))


def _periodic(y: Any) -> Any:
    return np.concatenate([y[:-1], y[:1]])


def _undefined_as_zero(v: Any) -> Any:
    return np.where(np.isnan(v), 0.0, v)


# (name, f, point): each f a scalar function of one array, through unmodified SciPy code
#: The rule table's cases (rulescore.testing, the interop exporters): none, the rules take SciPy's
#: spline objects; they are tested through zygotepy below (COVERED).
CASES: list[Any] = []
COVERED = (si.PPoly.__call__, si.BSpline.__call__, si.BSpline.derivative, si.make_interp_spline)

SPLINES: list[tuple[str, Callable[[Any], Any], np.ndarray]] = [
    ("CubicSpline in y", lambda y: np.sum(WEIGHTS * si.CubicSpline(X, y)(POINTS) ** 2), Y),
    ("CubicSpline in the points", lambda q: np.sum(np.sin(si.CubicSpline(X, Y)(q))), POINTS),
    ("CubicSpline in the breakpoints", lambda x: np.sum(si.CubicSpline(x, Y)(INSIDE) ** 2), X),
    ("bc natural", lambda y: np.sum(WEIGHTS * si.CubicSpline(X, y, bc_type="natural")(POINTS) ** 2), Y),
    ("bc clamped", lambda y: np.sum(WEIGHTS * si.CubicSpline(X, y, bc_type="clamped")(POINTS) ** 2), Y),
    ("bc periodic", lambda y: np.sum(si.CubicSpline(X, _periodic(y), bc_type="periodic")(POINTS) ** 2), Y),
    ("bc derivative values",
     lambda y: np.sum(si.CubicSpline(X, y, bc_type=((1, 0.5), (2, -1.0)))(POINTS) ** 2), Y),
    ("periodic extrapolation",
     lambda y: np.sum(si.CubicSpline(X, y, extrapolate="periodic")(2 * POINTS) ** 2), Y),
    ("periodic extrapolation in the breakpoints",
     lambda x: np.sum(si.CubicSpline(x, Y, extrapolate="periodic")(np.array([3.7, -0.5, 7.1])) ** 2), X),
    ("no extrapolation",
     lambda y: np.sum(_undefined_as_zero(si.CubicSpline(X, y, extrapolate=False)(POINTS)) ** 2), Y),
    (".derivative()", lambda y: np.sum(WEIGHTS * si.CubicSpline(X, y).derivative()(POINTS) ** 2), Y),
    ("nu=2", lambda y: np.sum(si.CubicSpline(X, y)(POINTS, 2) ** 2), Y),
    ("nu=1 in the points", lambda q: np.sum(si.CubicSpline(X, Y)(q, 1) ** 2), POINTS),
    ("values in columns", lambda y: np.sum(si.CubicSpline(X, np.stack([y, y ** 2], 1))(POINTS) ** 2), Y),
    ("axis=1",
     lambda y: np.sum(si.CubicSpline(X, np.stack([y, np.cos(y)]), axis=1)(POINTS[:, None]) ** 2), Y),
    ("Pchip", lambda y: np.sum(si.PchipInterpolator(X, y)(POINTS) ** 2), Y),
    ("Akima", lambda y: np.sum(si.Akima1DInterpolator(X, y)(INSIDE) ** 2), Y),
    ("interp1d cubic", lambda y: np.sum(si.interp1d(X, y, kind="cubic")(INSIDE) ** 2), Y),
    ("interp1d quadratic in the points",
     lambda q: np.sum(si.interp1d(X, Y, kind="quadratic")(q) ** 2), INSIDE),
    ("interp1d linear", lambda y: np.sum(si.interp1d(X, y)(INSIDE) ** 2), Y),
    ("make_interp_spline", lambda y: np.sum(WEIGHTS * si.make_interp_spline(X, y)(POINTS) ** 2), Y),
    ("make_interp_spline in the points", lambda q: np.sum(np.cos(si.make_interp_spline(X, Y)(q))), POINTS),
    ("make_interp_spline natural",
     lambda y: np.sum(si.make_interp_spline(X, y, bc_type="natural")(POINTS) ** 2), Y),
    ("make_interp_spline k=5", lambda y: np.sum(si.make_interp_spline(X, y, k=5)(INSIDE) ** 2), Y),
    ("make_interp_spline nu=1", lambda y: np.sum(si.make_interp_spline(X, y)(POINTS, nu=1) ** 2), Y),
    ("make_interp_spline .derivative()",
     lambda y: np.sum(si.make_interp_spline(X, y).derivative()(POINTS) ** 2), Y),
    ("BSpline(t, c, k).derivative(2)",
     lambda c: np.sum(si.BSpline(si.make_interp_spline(X, Y).t, c, 3).derivative(2)(INSIDE) ** 2), Y),
    ("np.interp", lambda y: np.sum(np.interp(POINTS, X, y) ** 2), Y),
    ("np.interp in the points", lambda q: np.sum(np.interp(q, X, Y) ** 2), INSIDE + 0.02),  # off the kinks
]


@pytest.mark.parametrize(("name", "f", "point"), SPLINES, ids=[c[0] for c in SPLINES])
def test_reverse_mode(name: str, f: Callable[[Any], Any], point: np.ndarray) -> None:
    (g,) = zp.gradient(f, point)
    np.testing.assert_allclose(g, fd(f, point), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "f", "point"), SPLINES, ids=[c[0] for c in SPLINES])
def test_forward_mode(name: str, f: Callable[[Any], Any], point: np.ndarray) -> None:
    direction = np.linspace(1.0, -0.5, len(point))
    y, ydot = zp.jvp(f, (point,), (direction,))
    assert np.isclose(y, f(point))
    np.testing.assert_allclose(ydot, fd(f, point) @ direction, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "f", "point"), [SPLINES[i] for i in (0, 1, 2, 10, 20, 21)],
                         ids=[SPLINES[i][0] for i in (0, 1, 2, 10, 20, 21)])
def test_second_order(name: str, f: Callable[[Any], Any], point: np.ndarray) -> None:
    def gradient(p: np.ndarray) -> Any:
        return zp.gradient(f, p)[0]

    by_differences = np.stack([(gradient(point + h) - gradient(point - h)) / 2e-5
                               for h in 1e-5 * np.eye(len(point))])
    np.testing.assert_allclose(zp.hessian(f, point), by_differences, rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(values=st.lists(st.floats(-3.0, 3.0), min_size=7, max_size=7),
       where=st.lists(st.floats(-0.5, 3.5), min_size=1, max_size=5),
       bc=st.sampled_from(["not-a-knot", "natural", "clamped"]))
def test_cubic_spline_of_any_values_is_exact(values: list[float], where: list[float], bc: str) -> None:
    """The value is linear in y: the gradient is exact for any data and points (no points on
    breakpoints, where the derivative in the points jumps)."""
    points = np.array(where) + 1e-3 * np.isin(np.round(where, 6), X)
    weights = np.cos(points)

    def f(y: Any) -> Any:
        return np.sum(weights * si.CubicSpline(X, y, bc_type=bc)(points))

    (g,) = zp.gradient(f, np.array(values))
    np.testing.assert_allclose(g, fd(f, np.array(values)), rtol=1e-6, atol=1e-8)
    (gp,) = zp.gradient(lambda q: np.sum(si.CubicSpline(X, np.array(values), bc_type=bc)(q)), points)
    np.testing.assert_allclose(gp, si.CubicSpline(X, np.array(values), bc_type=bc)(points, 1), rtol=1e-12)


def test_rules_through_rulescore_alone() -> None:
    """The rules themselves (no engine): the pullback of a spline's coefficients is the basis."""
    spline = si.CubicSpline(X, Y)
    y, back = rc.rrule(si.PPoly.__call__, spline, INSIDE)
    np.testing.assert_allclose(y, spline(INSIDE))
    ybar = np.array([1.0, -2.0, 0.5, 3.0])
    cbar = back(ybar)[1]
    bumped = spline.c + 1e-7 * np.asarray(dict(cbar.items())["_c"])
    moved = si.PPoly(bumped, spline.x)(INSIDE)
    assert np.isclose(ybar @ (moved - y) / 1e-7, np.sum(np.asarray(dict(cbar.items())["_c"]) ** 2), rtol=1e-5)
    bspline = si.make_interp_spline(X, Y)
    y, back = rc.rrule(si.BSpline.__call__, bspline, INSIDE)
    cbar_b = np.asarray(dict(back(ybar)[1].items())["_c"])
    moved = si.BSpline(bspline.t, bspline.c + 1e-7 * cbar_b, bspline.k)(INSIDE)
    assert np.isclose(ybar @ (moved - y) / 1e-7, np.sum(cbar_b ** 2), rtol=1e-5)


def test_every_rule_of_the_family_is_exercised() -> None:
    assert {p.primal for p in scipy_interpolate.RULES} == set(COVERED)


def test_make_interp_spline_refuses_the_derivative_in_x() -> None:
    """Not implemented, never zero: using it (adding it to another path's gradient, reading it
    as an array) raises, naming the fix."""
    with pytest.raises(NotImplementedError, match=r"make_interp_spline in the data points x.*CubicSpline"):
        zp.gradient(lambda x: np.sum(si.make_interp_spline(x, Y)(INSIDE)) + np.sum(x ** 2), X)
    (g,) = zp.gradient(lambda x: np.sum(si.make_interp_spline(x, Y)(INSIDE)), X)
    with pytest.raises(NotImplementedError, match=r"make_interp_spline in the data points x"):
        np.asarray(g)


def test_antiderivatives_are_refused_by_name() -> None:
    with pytest.raises(NotImplementedError, match=r"CubicSpline.*antiderivative"):
        zp.gradient(lambda y: np.sum(si.CubicSpline(X, y)(INSIDE, -1)), Y)


def test_a_spline_the_user_keeps_evaluates_as_before() -> None:
    """The spline built inside the differentiated function, returned with the loss, is SciPy's."""
    def f(y: Any) -> Any:
        spline = si.CubicSpline(X, y)
        return np.sum(spline(INSIDE)), spline

    (g,), spline = zp.gradient(f, Y, has_aux=True)
    np.testing.assert_allclose(spline(INSIDE), si.CubicSpline(X, Y)(INSIDE))
    np.testing.assert_allclose(g, fd(lambda y: f(y)[0], Y), rtol=1e-6)
