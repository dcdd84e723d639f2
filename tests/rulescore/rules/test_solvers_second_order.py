"""Second derivatives through the rules of SciPy's solvers (rulescore/rules/scipy_integrate.py,
scipy_optimize.py): a rule's pullback calls the solver again, with the parameters in ``args``,
so the outer level of a nested differentiation uses the same rule. Each case is checked as
reverse over reverse (a gradient of a gradient), forward over reverse (``zp.hessian``, a jvp of
a gradient) and reverse over forward (a gradient of a jvp), against closed forms and against
finite differences of the first derivative."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

si = pytest.importorskip("scipy.integrate")
so = pytest.importorskip("scipy.optimize")

import zygotepy as zp  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

TIMES = np.array([0.0, 0.4, 1.0])
TOL = {"rtol": 1e-11, "atol": 1e-12}


def decay(y: Any, t: Any, k: Any) -> Any:
    return -k * y


def odeint_end(p: Any) -> Any:
    """``y0 exp(-k t)`` at ``t = 1`` for ``p = (k, y0)``, by ``odeint``."""
    return si.odeint(decay, p[1], TIMES, args=(p[0],), **TOL)[-1, 0]


def solve_ivp_end(p: Any) -> Any:
    sol = si.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.array([p[1]]), t_eval=TIMES, args=(p[0],),
                       **TOL)
    return sol.y[0, -1]


def decay_hessian(k: float, y0: float) -> Any:
    e = np.exp(-k)
    return np.array([[y0 * e, -e], [-e, 0.0]])


def nested_derivatives(f: Any, p: Any) -> dict[str, Any]:
    """The Hessian of ``f`` at ``p`` four ways."""
    def gradient(q: Any) -> Any:
        return zp.gradient(f, q)[0]

    def slope(e: Any) -> Any:
        return lambda q: zp.jvp(f, (q,), (e,))[1]

    jvps = [zp.jvp(gradient, (p,), (e,))[1] for e in np.eye(p.size)]
    return {"hessian": zp.hessian(f, p), "jacobian of the gradient": zp.jacobian(gradient, p)[0],
            "jvps of the gradient": np.stack(jvps, axis=1),
            "gradients of jvps": np.stack([zp.gradient(slope(e), p)[0] for e in np.eye(p.size)])}


@pytest.mark.parametrize("f", [odeint_end, pytest.param(solve_ivp_end, marks=pytest.mark.exhaustive)],
                         ids=["odeint", "solve_ivp"])  # (solve_ivp: 24 s, with --exhaustive)
def test_ode_hessian_in_rate_and_initial_state(f: Any) -> None:
    p = np.array([0.7, 1.3])
    for how, h in nested_derivatives(f, p).items():
        np.testing.assert_allclose(h, decay_hessian(*p), rtol=1e-6, atol=1e-8, err_msg=how)


def test_odeint_grad_of_grad_matches_finite_differences_of_the_gradient() -> None:
    def loss(th: float) -> Any:
        ys = si.odeint(decay, 2.0, TIMES, args=(th,), **TOL)
        return np.sum(ys[:, 0] ** 2)

    def slope(th: float) -> Any:
        return zp.gradient(loss, th)[0]

    (curvature,) = zp.gradient(slope, 0.6)
    np.testing.assert_allclose(curvature, fd(slope, 0.6, h=1e-4), rtol=1e-6)
    exact = sum(16 * t ** 2 * np.exp(-2 * 0.6 * t) for t in TIMES)  # (2 exp(-th t))^2, twice in th
    np.testing.assert_allclose(curvature, exact, rtol=1e-7)


def quad_integral(k: Any) -> Any:
    return si.quad(lambda x, k: np.exp(-k * x), 0.0, 1.0, args=(k,), epsabs=1e-13, epsrel=1e-13)[0]


def test_quad_second_derivative_is_the_integral_of_the_second_partial() -> None:
    k = 0.9
    exact = (2 - np.exp(-k) * (k ** 2 + 2 * k + 2)) / k ** 3  # the integral of x^2 exp(-k x) on [0, 1]
    slope = lambda k: zp.gradient(quad_integral, k)[0]  # noqa: E731
    np.testing.assert_allclose(zp.gradient(slope, k)[0], exact, rtol=1e-9)
    np.testing.assert_allclose(zp.gradient(lambda k: zp.jvp(quad_integral, (k,), (1.0,))[1], k)[0], exact,
                               rtol=1e-9)
    np.testing.assert_allclose(zp.jvp(slope, (k,), (1.0,))[1], exact, rtol=1e-9)
    np.testing.assert_allclose(zp.hessian(quad_integral, k), exact, rtol=1e-9)
    np.testing.assert_allclose(exact, fd(slope, k, h=1e-4), rtol=1e-6)


def test_quad_second_derivative_in_an_end_point_and_a_parameter() -> None:
    def area(p: Any) -> Any:
        return si.quad(lambda x, c: np.sin(c * x), 0.0, p[1], args=(p[0],), epsabs=1e-13, epsrel=1e-13)[0]

    p = np.array([1.3, 0.8])
    c, b = p
    exact = np.array([[_d2_dc2(c, b), b * np.cos(c * b)],
                      [b * np.cos(c * b), c * np.cos(c * b)]])
    for how, h in nested_derivatives(area, p).items():
        np.testing.assert_allclose(h, exact, rtol=1e-7, atol=1e-9, err_msg=how)


def _d2_dc2(c: float, b: float) -> float:
    """d^2/dc^2 of the integral of sin(c x) on [0, b]: minus the integral of x^2 sin(c x)."""
    return -si.quad(lambda x: x ** 2 * np.sin(c * x), 0.0, b, epsabs=1e-14, epsrel=1e-14)[0]


# -- scipy.optimize: the implicit function theorem, differentiated again ------------------------

A = np.array([[3.0, 1.0], [1.0, 2.0]])


def quadratic(x: Any, b: Any) -> Any:
    return 0.5 * x @ A @ x - b @ x


def quadratic_gradient(x: Any, b: Any) -> Any:
    return A @ x - b


@pytest.mark.parametrize("jac", [None, quadratic_gradient, True], ids=["ad", "callable", "with-value"])
def test_minimize_hessian_of_the_optimal_value_is_minus_the_inverse(jac: Any) -> None:
    """``min_x x^T A x / 2 - b^T x = -b^T A^-1 b / 2``: its Hessian in ``b`` is ``-A^-1``, that of
    ``|x*(b)|^2`` is ``2 A^-2``."""
    fun = (lambda x, b: (quadratic(x, b), quadratic_gradient(x, b))) if jac is True else quadratic

    def solve(b: Any) -> Any:
        return so.minimize(fun, np.zeros(2), args=(b,), jac=jac, method="BFGS", tol=1e-12)

    b = np.array([0.5, -1.0])
    inverse = np.linalg.inv(A)
    for how, h in nested_derivatives(lambda b: solve(b).fun, b).items():
        np.testing.assert_allclose(h, -inverse, rtol=1e-6, atol=1e-8, err_msg=how)
    for how, h in nested_derivatives(lambda b: np.sum(solve(b).x ** 2), b).items():
        np.testing.assert_allclose(h, 2 * inverse @ inverse, rtol=1e-6, atol=1e-8, err_msg=how)


def cubic(x: Any, a: Any) -> Any:
    return x ** 3 + x - a


def root_finders() -> dict[str, Any]:
    return {
        "brentq": lambda a: so.brentq(cubic, -3.0, 3.0, args=(a,), xtol=1e-14),
        "root_scalar": lambda a: so.root_scalar(cubic, args=(a,), bracket=(-3.0, 3.0), xtol=1e-14).root,
        "root": lambda a: so.root(lambda x, a: cubic(x, a), np.zeros(1), args=(a,), tol=1e-14).x[0],
        "fixed_point": lambda a: so.fixed_point(lambda x, a: x - cubic(x, a) / 4.0, np.zeros(1), args=(a,),
                                                xtol=1e-14)[0],
    }


@pytest.mark.parametrize("name", list(root_finders()))
def test_root_second_derivative_matches_the_closed_form(name: str) -> None:
    """``x^3 + x = a``: ``x' = 1 / (3x^2 + 1)``, ``x'' = -6x x'^3``."""
    solve = root_finders()[name]
    a = 1.7
    x = solve(a)
    exact = -6 * x / (3 * x ** 2 + 1) ** 3
    slope = lambda a: zp.gradient(solve, a)[0]  # noqa: E731
    np.testing.assert_allclose(zp.gradient(slope, a)[0], exact, rtol=1e-8)
    np.testing.assert_allclose(zp.gradient(lambda a: zp.jvp(solve, (a,), (1.0,))[1], a)[0], exact, rtol=1e-8)
    np.testing.assert_allclose(zp.jvp(slope, (a,), (1.0,))[1], exact, rtol=1e-8)
    np.testing.assert_allclose(zp.hessian(solve, a), exact, rtol=1e-8)
    np.testing.assert_allclose(exact, fd(slope, a, h=1e-4), rtol=1e-6)


def odeint_at(T: Any) -> Any:
    return si.odeint(decay, 1.0, np.stack([0.0, T]), (0.7,), **TOL)[-1, 0]


def solve_ivp_at(T: Any) -> Any:
    """Without ``t_eval``: the state at the end of ``t_span`` (the solver's own steps between)."""
    return si.solve_ivp(lambda t, y, k: -k * y, (0.0, T), np.array([1.0]), args=(0.7,), **TOL).y[0, -1]


def odeint_full_output(k: Any) -> Any:
    ys, _ = si.odeint(decay, 1.0, np.array([0.0, 1.2]), (k,), full_output=True, **TOL)
    return ys[-1, 0]


def gaussian_tail(k: Any) -> Any:
    return si.quad(lambda x, k: np.exp(-k * x * x), 0.0, np.inf, args=(k,))[0]  # sqrt(pi / k) / 2


@pytest.mark.parametrize(("f", "exact"), [
    (odeint_at, 0.49 * np.exp(-0.84)), (solve_ivp_at, 0.49 * np.exp(-0.84)),
    (odeint_full_output, 1.44 * np.exp(-0.84)),
], ids=["odeint-end-time", "solve_ivp-end-of-span", "odeint-full-output"])
def test_second_derivatives_in_times_and_with_full_output(f: Any, exact: float) -> None:
    x = 0.7 if f is odeint_full_output else 1.2
    np.testing.assert_allclose(zp.hessian(f, x), exact, rtol=1e-7)
    np.testing.assert_allclose(zp.gradient(lambda x: zp.gradient(f, x)[0], x)[0], exact, rtol=1e-7)


def test_quad_over_an_infinite_interval_at_second_order() -> None:
    k = 1.3
    np.testing.assert_allclose(zp.hessian(gaussian_tail, k), 3 * np.sqrt(np.pi) / 8 * k ** -2.5, rtol=1e-8)
