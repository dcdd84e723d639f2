"""Rules for ``scipy.optimize`` (rulescore/rules/scipy_optimize.py): solutions differentiated by
the implicit function theorem in the parameters passed through ``args``, checked against finite
differences with the user's function differentiated by zygotepy (the rules ask for the engine's
config), and from zygotepy as a user writes it. JAX has no derivative of these solvers to
compare with."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

so = pytest.importorskip("scipy.optimize")

import rulescore as rc  # noqa: E402
import rulescore.testing as rct  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from tests.rulescore.rules.engine_rules import EXAMPLES, check_engine_rule, engine_frule, engine_rrule  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

CASES: list[Any] = []  # every rule here asks for the engine's config: tested below
COVERED = [so.brentq, so.brenth, so.ridder, so.bisect, so.toms748, so.root_scalar, so.root,
           so.fixed_point, so.minimize]
nt = rct.no_tangent
TOL = {"rtol": 1e-5, "atol": 1e-7}
RESULT = so.OptimizeResult


def cubic(x: Any, c: Any, d: Any) -> Any:
    """Increasing for c > 0: one root, in [-3, 3] for |d| <= 2."""
    return x ** 3 + c * x - d


PARAMS = st.tuples(S.scalars(0.5, 2.0), S.scalars(-2.0, 2.0))


@pytest.mark.parametrize("solver", [so.brentq, so.brenth, so.ridder, so.bisect, so.toms748])
def test_bracketing_root_finders(solver: Any) -> None:
    check_engine_rule(solver, (nt(cubic), -3.0, 3.0, PARAMS), {"xtol": 1e-14})


def test_brentq_full_output() -> None:
    check_engine_rule(so.brentq, (nt(cubic), -3.0, 3.0, PARAMS), {"xtol": 1e-14, "full_output": True},
                      frule=False)


def shrink(x: Any, p: Any) -> Any:
    return np.cos(p[0] * x) * p[1]


def test_fixed_point() -> None:
    p = st.tuples(S.arrays(shape=(2,), min_value=0.2, max_value=0.9))
    check_engine_rule(so.fixed_point, (nt(shrink), np.array([0.5, 0.4]), p), {"xtol": 1e-13})


def equations(x: Any, a: Any) -> Any:
    return np.array([x[0] + 0.5 * np.sin(x[1]) - a[0], x[1] ** 3 + x[1] - a[1] * x[0]])


def objective(x: Any, a: Any, b: Any) -> Any:
    return np.sum((x - a) ** 2 * b) + np.sum(x ** 4)


def objective_gradient(x: Any, a: Any, b: Any) -> Any:
    return 2 * (x - a) * b + 4 * x ** 3


def objective_and_gradient(x: Any, a: Any, b: Any) -> Any:
    return objective(x, a, b), objective_gradient(x, a, b)


@settings(max_examples=EXAMPLES, deadline=None)
@given(a=S.arrays(shape=(2,), min_value=-1.0, max_value=1.0), b=S.scalars(0.5, 2.0))
def test_root_and_minimize_rrules(a: Any, b: float) -> None:
    x_only = rc.Tangent[RESULT]({"x": np.array([1.0, -0.5])})
    with_value = rc.Tangent[RESULT]({"x": np.array([1.0, -0.5]), "fun": 0.3})
    rct.test_rrule(so.root, nt(equations), np.zeros(2), (a,), output_tangent=x_only, rrule_f=engine_rrule,
                   fkwargs={"tol": 1e-13}, **TOL)
    # without jac: Nelder-Mead, whose solution is accurate enough for finite differences (BFGS's
    # own finite-difference gradient is not: see test_hyperparameter_gradient_through_minimize)
    for options in ({"jac": objective_gradient}, {"jac": True},
                    {"method": "Nelder-Mead", "options": {"xatol": 1e-12, "fatol": 1e-15, "maxiter": 10000}}):
        f = objective_and_gradient if options.get("jac") is True else objective
        rct.test_rrule(so.minimize, nt(f), np.zeros(2), (a, b), output_tangent=with_value,
                       rrule_f=engine_rrule, fkwargs={"tol": 1e-12, **options}, **TOL)
    rct.test_rrule(so.root_scalar, nt(cubic), (b, a[0]), output_tangent=rc.Tangent[so.RootResults](root=0.7),
                   rrule_f=engine_rrule, fkwargs={"bracket": (-3.0, 3.0), "xtol": 1e-14}, **TOL)


def solutions(p: np.ndarray) -> Any:
    """Every solver's solution as a user writes it (parameters through args, positionally)."""
    a = p[:2]
    root = so.root(equations, np.zeros(2), (a,), tol=1e-13).x
    best = so.minimize(objective, np.zeros(2), (a, p[2]), tol=1e-12)
    with_gradient = so.minimize(objective_and_gradient, np.zeros(2), (a, p[2]), jac=True, tol=1e-12)
    scalar = so.root_scalar(cubic, (p[2], p[0]), bracket=(-3.0, 3.0), xtol=1e-14).root
    fixed = so.fixed_point(shrink, np.array([0.5, 0.4]), (np.array([0.5, p[2] / 3]),), xtol=1e-13)
    return np.concatenate([root, best.x, [best.fun, scalar, with_gradient.fun], fixed ** 2])


P = np.array([0.3, -0.6, 1.2])


# minimize without jac is as accurate as SciPy's own finite-difference gradient (~1e-8): steps
# of 1e-4 keep the finite differences' noise below the tolerance
H = 1e-4


def test_zygotepy_gradient_and_jvp_match_finite_differences() -> None:
    w = np.cos(np.arange(solutions(P).size))
    (g,) = zp.gradient(lambda p: solutions(p) @ w, P)
    np.testing.assert_allclose(g, fd(lambda p: solutions(p) @ w, P, H), rtol=1e-5, atol=1e-7)
    direction, h = np.array([1.0, -2.0, 0.5]), H
    expected = (solutions(P + h * direction) - solutions(P - h * direction)) / (2 * h)
    np.testing.assert_allclose(zp.jvp(solutions, (P,), (direction,))[1], expected, rtol=1e-5, atol=1e-7)


def ridge_data() -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((20, 3)), rng.standard_normal(20), rng.standard_normal((10, 3)),
            rng.standard_normal(10))


def ridge_fit(log_lam: np.ndarray) -> Any:
    """Hyperparameter gradient: validation loss of a ridge fit found by minimize."""
    x, y, xv, yv = ridge_data()

    def penalised(w: Any, lam: Any) -> Any:
        return np.sum((x @ w - y) ** 2) + np.sum(lam * w ** 2)

    w = so.minimize(penalised, np.zeros(3), (np.exp(log_lam),), method="BFGS", tol=1e-12).x
    return np.sum((xv @ w - yv) ** 2)


def ridge_closed_form(log_lam: np.ndarray) -> Any:
    x, y, xv, yv = ridge_data()
    w = np.linalg.solve(x.T @ x + np.diag(np.exp(log_lam)), x.T @ y)
    return np.sum((xv @ w - yv) ** 2)


def test_hyperparameter_gradient_through_minimize() -> None:
    # BFGS stops at ~1e-8 ("precision loss"): finite differences of its solution are noise at
    # 1e-2; the closed-form solution's are not
    log_lam = np.array([0.1, -0.3, 0.5])
    (g,) = zp.gradient(ridge_fit, log_lam)
    np.testing.assert_allclose(g, fd(ridge_closed_form, log_lam), rtol=1e-5, atol=1e-7)


def test_refusals_name_the_solver_and_the_fix() -> None:
    with pytest.raises(NotImplementedError, match="unconstrained"):
        engine_rrule(so.minimize, objective, np.zeros(2), (np.ones(2), 1.0),
                     constraints=[{"type": "eq", "fun": lambda x: x[0]}])
    with pytest.raises(NotImplementedError, match="bound is active"):
        engine_rrule(so.minimize, objective, np.zeros(2), (np.ones(2), 1.0),
                     bounds=[(0.0, 0.1), (None, None)])
    _, back = engine_rrule(so.root, equations, np.zeros(2), (np.ones(2),))
    with pytest.raises(NotImplementedError, match="'fjac'"):
        back(rc.Tangent[RESULT]({"fjac": np.ones((2, 2))}))
    xbar = back(rc.Tangent[RESULT]({"x": np.ones(2), "fjac": rc.ZeroTangent()}))  # a zero field is no use
    np.testing.assert_allclose(xbar[3][0], back(rc.Tangent[RESULT]({"x": np.ones(2)}))[3][0])
    _, back = engine_rrule(so.root, lambda x, p: x ** 2 - p, np.array([0.0]), (np.array([0.0]),))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        back(rc.Tangent[RESULT]({"x": np.ones(1)}))


def test_frules_exist_only_for_forward_engines() -> None:
    assert rc.rrule(so.brentq, cubic, -3.0, 3.0, (1.0, 0.0)) is None  # no config: no rule
    y, ydot = engine_frule((None, None, rc.ZeroTangent(), rc.ZeroTangent(), rc.Tangent[tuple](1.0, 0.0)),
                           so.brentq, cubic, -3.0, 3.0, (1.0, 0.0))
    assert y == pytest.approx(0.0) and ydot == pytest.approx(0.0, abs=1e-12)  # d root/dc = -x/f' = 0
