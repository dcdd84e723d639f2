"""Rules for ``scipy.integrate`` (rulescore/rules/scipy_integrate.py): ``trapezoid`` and
``simpson`` in ``y``, ``x`` and ``dx``; ``odeint``, ``solve_ivp`` and ``quad`` in their initial
state, times, end points and ``args`` (with zygotepy as the engine the rules call back into);
against finite differences, through zygotepy and against JAX."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

si = pytest.importorskip("scipy.integrate")

import rulescore as rc  # noqa: E402
import rulescore.testing as rct  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.rulescore.rules.engine_rules import EXAMPLES, check_engine_rule, engine_rrule  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 4
Y = S.arrays(shape=(3, 5))
POINTS = S.arrays(shape=(5,)).map(np.sort)
GRID = S.arrays(shape=(3, 5)).map(lambda a: np.sort(a, axis=1))
# Simpson's weights are rational in the widths: distinct points (SciPy guards zero widths)
APART = S.arrays(shape=(5,), min_value=0.2).map(np.cumsum)
APART_GRID = S.arrays(shape=(3, 5), min_value=0.2).map(lambda a: np.cumsum(a, axis=1))

CASES = [
    RuleCase(si.trapezoid, (Y,), max_examples=N),
    RuleCase(si.trapezoid, (Y, POINTS), name="x", max_examples=N),
    RuleCase(si.trapezoid, (Y, GRID), name="x-like-y", max_examples=N),
    RuleCase(si.trapezoid, (Y, None, S.scalars(0.1, 2.0)), name="dx", max_examples=N),
    RuleCase(si.trapezoid, (Y.map(np.transpose), POINTS), {"axis": 0}, name="axis", max_examples=N),
    RuleCase(si.trapezoid, (Y,), {"dx": 0.25}, name="keyword-dx", max_examples=N),
    RuleCase(si.simpson, (Y,), max_examples=N),
    RuleCase(si.simpson, (Y, APART), name="x-odd", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(2, 6)), S.arrays(shape=(6,), min_value=0.2).map(np.cumsum)),
             name="x-even", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(2,)), S.arrays(shape=(2,))), name="two-samples", max_examples=N),
    RuleCase(si.simpson, (Y, APART_GRID), name="x-like-y", max_examples=N),
    RuleCase(si.simpson, (S.arrays(shape=(4, 3)),), {"dx": 0.3, "axis": 0}, name="dx-axis", max_examples=N),
]


#: rules that ask for the engine's config (they differentiate the user's function): tested below
COVERED = [si.odeint, si.solve_ivp, si.quad]
OdeResult = type(si.solve_ivp(lambda t, y: -y, (0.0, 1.0), [1.0]))


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def decay_fit(theta: np.ndarray) -> Any:
    """The area under a fitted decay on an uneven grid, and its second moment."""
    t = np.array([0.0, 0.3, 0.7, 1.5, 2.0]) * np.exp(theta[1])
    curve = np.exp(-theta[0] * t)
    return si.trapezoid(curve, t) + si.trapezoid(curve * t ** 2, dx=0.1)


def simpson_moments(theta: np.ndarray) -> Any:
    """Moments of a decay on an uneven grid whose points move with the parameters."""
    t = np.array([0.0, 0.3, 0.7, 1.5, 2.0, 2.2]) * np.exp(theta[1])
    curve = np.exp(-theta[0] * t)
    return si.simpson(curve, t) + si.simpson(curve * t, dx=0.1) + si.simpson(curve[:5] * t[:5] ** 2, t[:5])


def test_simpson_gradient_matches_finite_differences() -> None:
    theta = np.array([0.8, 0.1])
    (g,) = zp.gradient(simpson_moments, theta)
    np.testing.assert_allclose(g, fd(simpson_moments, theta), rtol=1e-6, atol=1e-8)


def test_zygotepy_gradient_matches_finite_differences() -> None:
    theta = np.array([0.8, 0.1])
    (g,) = zp.gradient(decay_fit, theta)
    np.testing.assert_allclose(g, fd(decay_fit, theta), rtol=1e-6, atol=1e-8)


def test_gradient_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsi = pytest.importorskip("jax.scipy.integrate")
    y = np.sin(np.arange(10.0)).reshape(2, 5)
    x = np.array([0.0, 0.4, 0.5, 1.2, 2.0])
    _, back = rc.rrule(si.trapezoid, y, x)
    w = np.array([1.0, -2.0])
    theirs = jax.jit(jax.grad(lambda y, x: (jsi.trapezoid(y, x) * w).sum(), argnums=(0, 1)))(y, x)
    for ours, t in zip(back(w)[1:], theirs, strict=True):
        np.testing.assert_allclose(ours, np.asarray(t), rtol=1e-10)


# -- odeint, solve_ivp, quad: rules that differentiate the user's function through the engine ----

def lotka_volterra(y: Any, t: float, theta: Any) -> Any:
    """Predator and prey, with a seasonal forcing (explicit time dependence)."""
    return np.array([theta[0] * y[0] - theta[1] * y[0] * y[1],
                     -theta[2] * y[1] + theta[1] * y[0] * y[1] + 0.1 * np.sin(t)])


def decay_first(t: float, y: Any, k: float, c: float) -> Any:
    return [-k * y[0] + c, k * y[0] - 0.5 * y[1]]  # a list, as odeint users often return


ODE_TOL = {"rtol": 1e-10, "atol": 1e-10}
THETA = S.arrays(shape=(3,), min_value=0.3, max_value=1.2)
STATE = S.arrays(shape=(2,), min_value=0.3, max_value=1.5)
TIMES = S.arrays(shape=(4,), min_value=0.1, max_value=0.6).map(lambda d: np.cumsum(d) - d[0])


def test_odeint_rules() -> None:
    check_engine_rule(si.odeint, (rct.no_tangent(lotka_volterra), STATE, TIMES, THETA.map(lambda a: (a,))),
                      ODE_TOL)


def test_odeint_rules_tfirst_list_dynamics_scalar_args() -> None:
    args = st.tuples(S.scalars(0.3, 1.5), S.scalars(-1.0, 1.0))
    check_engine_rule(si.odeint, (rct.no_tangent(decay_first), STATE, TIMES, args),
                      {"tfirst": True, **ODE_TOL})


def test_solve_ivp_rrule() -> None:
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(y0=STATE, t_eval=TIMES, theta=THETA)
    def check(y0: Any, t_eval: Any, theta: Any) -> None:
        ybar = rc.Tangent[OdeResult]({"y": np.cos(np.arange(8.0)).reshape(2, 4)})
        t_span = (float(t_eval[0]) - 0.1, float(t_eval[-1]) + 0.1)
        rct.test_rrule(si.solve_ivp, rct.no_tangent(lambda_first), t_span, y0, "RK45", t_eval, False, None,
                       False, (theta,), output_tangent=ybar, rrule_f=engine_rrule, rtol=1e-5, atol=1e-7,
                       fkwargs=ODE_TOL)

    check()


def lambda_first(t: float, y: Any, theta: Any) -> Any:
    return lotka_volterra(y, t, theta)


def integrand(x: float, k: float, c: float) -> Any:
    return np.exp(-k * x ** 2) * np.cos(c * x)


def test_quad_rrule() -> None:
    @settings(max_examples=EXAMPLES, deadline=None)
    @given(a=S.scalars(-1.0, 0.0), b=S.scalars(0.5, 2.0), k=S.scalars(0.5, 2.0), c=S.scalars(-1.0, 1.0))
    def check(a: float, b: float, k: float, c: float) -> None:
        ybar = rc.Tangent[tuple](0.8, rc.ZeroTangent())
        accuracy = {"epsabs": 1e-13, "epsrel": 1e-13}
        for upper in (b, np.inf):
            end = upper if np.isfinite(upper) else rct.no_tangent(upper)  # an infinite end does not move
            rct.test_rrule(si.quad, rct.no_tangent(integrand), a, end, (k, c), output_tangent=ybar,
                           rrule_f=engine_rrule, rtol=1e-6, atol=1e-8, fkwargs=accuracy)

    check()


DATA = np.array([[1.0, 0.0], [0.72, 0.24], [0.52, 0.37], [0.28, 0.41]])
T_DATA = np.array([0.0, 0.5, 1.0, 2.0])


def ode_fit_loss(theta: np.ndarray) -> Any:
    """An ODE-parameter fit as users write it: squared error of odeint's solution against data."""
    ys = si.odeint(decay_first, np.array([1.0, 0.0]), T_DATA, (theta[0], theta[1]), tfirst=True, **ODE_TOL)
    return np.sum((ys - DATA) ** 2)


def ivp_and_quad(p: np.ndarray) -> Any:
    """solve_ivp at chosen times with a moving end, and an integral with a moving end."""
    sol = si.solve_ivp(lambda_first, (0.0, p[3]), p[:2], "RK45", np.array([0.5, 1.0]) * p[3], False, None,
                       False, (np.array([1.0, p[2], 0.8]),), **ODE_TOL)
    area = si.quad(integrand, 0.0, p[3], (p[2], p[0]), epsabs=1e-13, epsrel=1e-13)[0]
    return np.sum(sol.y ** 2) + area


def test_ode_fit_gradient_and_jvp_through_zygotepy() -> None:
    theta = np.array([0.8, 0.1])
    (g,) = zp.gradient(ode_fit_loss, theta)
    np.testing.assert_allclose(g, fd(ode_fit_loss, theta), rtol=1e-5, atol=1e-8)
    _, slope = zp.jvp(ode_fit_loss, (theta,), (np.array([1.0, -1.0]),))
    np.testing.assert_allclose(slope, fd(ode_fit_loss, theta) @ [1.0, -1.0], rtol=1e-5, atol=1e-8)


def test_solve_ivp_and_quad_through_zygotepy() -> None:
    p = np.array([1.0, 0.5, 0.4, 1.5])
    (g,) = zp.gradient(ivp_and_quad, p)
    np.testing.assert_allclose(g, fd(ivp_and_quad, p), rtol=1e-5, atol=1e-8)
    direction = np.array([0.5, -1.0, 2.0, 0.3])
    np.testing.assert_allclose(zp.jvp(ivp_and_quad, (p,), (direction,))[1], fd(ivp_and_quad, p) @ direction,
                               rtol=1e-5, atol=1e-8)


def test_odeint_gradient_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jode = pytest.importorskip("jax.experimental.ode")
    y0, theta = np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.8])
    w = np.cos(np.arange(8.0)).reshape(4, 2)
    _, back = engine_rrule(si.odeint, lotka_volterra, y0, T_DATA, (theta,), **ODE_TOL)
    ours = back(w)
    def total(y0: Any, t: Any, th: Any) -> Any:
        return (jode.odeint(lotka_volterra_jax, y0, t, th, rtol=1e-10, atol=1e-10) * w).sum()

    theirs = jax.jit(jax.grad(total, argnums=(0, 1, 2)))(y0, T_DATA, theta)
    for o, t in zip((ours[2], ours[3], ours[4][0]), theirs, strict=True):
        np.testing.assert_allclose(o, np.asarray(t), rtol=1e-6, atol=1e-8)


def lotka_volterra_jax(y: Any, t: Any, theta: Any) -> Any:
    import jax.numpy as jnp

    return jnp.stack([theta[0] * y[0] - theta[1] * y[0] * y[1],
                      -theta[2] * y[1] + theta[1] * y[0] * y[1] + 0.1 * jnp.sin(t)])


def test_solve_ivp_refuses_what_has_no_derivative() -> None:
    sol, back = engine_rrule(si.solve_ivp, lambda_first, (0.0, 1.0), np.ones(2), "RK45", None, False, None,
                             False, (np.ones(3),))
    ybar = np.zeros_like(sol.y)
    ybar[:, 1] = 1.0
    with pytest.raises(NotImplementedError, match="Pass t_eval"):
        back(rc.Tangent[OdeResult]({"y": ybar}))
    with pytest.raises(NotImplementedError, match="dense output"):
        engine_rrule(si.solve_ivp, lambda_first, (0.0, 1.0), np.ones(2), "RK45", None, True, None, False,
                     (np.ones(3),))
    with pytest.raises(NotImplementedError, match="event times"):
        engine_rrule(si.solve_ivp, lambda_first, (0.0, 1.0), np.ones(2), events=lambda t, y, th: y[0])
    with pytest.raises(NotImplementedError, match="weight"):
        engine_rrule(si.quad, integrand, 0.0, 1.0, (1.0, 1.0), weight="cos", wvar=2.0)


# -- keyword arguments: simpson's dx is keyword-only, declared positional for its rules ----------

SAMPLES = np.array([1.0, 2.0, 4.0, 3.0, 5.0, 4.5])
KEYWORDS = {
    "simpson(y, dx=)": lambda p: si.simpson(SAMPLES * p[0], dx=p[1]),
    "simpson(y, x=)": lambda p: si.simpson(SAMPLES, x=np.cumsum(np.full(6, p[1])) * p[0]),
    "simpson(y, dx=, axis=)": lambda p: np.sum(si.simpson(np.outer(SAMPLES, p), dx=p[1] ** 2, axis=0)),
    "trapezoid(y, dx=)": lambda p: si.trapezoid(SAMPLES * p[0], dx=p[1]),
    "trapezoid(y, x=)": lambda p: si.trapezoid(SAMPLES, x=np.cumsum(np.full(6, p[1])) * p[0]),
}


@pytest.mark.parametrize("name", sorted(KEYWORDS))
def test_traced_spacing_keywords_differentiate(name: str) -> None:
    f, p = KEYWORDS[name], np.array([0.7, 0.3])
    (g,) = zp.gradient(f, p)
    np.testing.assert_allclose(g, fd(f, p), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(zp.jvp(f, (p,), (np.array([1.0, -2.0]),))[1], fd(f, p) @ [1.0, -2.0],
                               rtol=1e-6, atol=1e-9)


def test_simpson_rules_take_the_declared_positional_form() -> None:
    """``(y, x, dx, axis)``: the pullback gives ``dx``'s cotangent in its slot (zero when ``x``
    is given, which SciPy then uses instead), and the frule reads its tangent there."""
    assert list(rc.parameters_of(si.simpson).parameters) == ["y", "x", "dx", "axis"]
    y, back = rc.rrule(si.simpson, SAMPLES, None, 0.3)
    assert y == si.simpson(SAMPLES, dx=0.3)
    dxbar = back(2.0)[3]
    np.testing.assert_allclose(dxbar, 2.0 * fd(lambda d: si.simpson(SAMPLES, dx=d), 0.3), rtol=1e-8)
    tangents = (rc.NoTangent(), rc.ZeroTangent(), rc.NoTangent(), 1.0)
    _, ydot = rc.frule(tangents, si.simpson, SAMPLES, None, 0.3)
    np.testing.assert_allclose(ydot, dxbar / 2.0, rtol=1e-12)
    x = np.cumsum(np.full(6, 0.25))
    assert isinstance(rc.rrule(si.simpson, SAMPLES, x, 0.3)[1](1.0)[3], rc.ZeroTangent)
