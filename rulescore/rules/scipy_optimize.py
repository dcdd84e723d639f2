"""Rules for ``scipy.optimize`` (registered when SciPy imports ``scipy.optimize``, see
:mod:`rulescore.rules._optional`): the solutions of ``root_scalar``, ``brentq`` (and ``brenth``,
``ridder``, ``bisect``, ``toms748``), ``root``, ``fixed_point`` and ``minimize`` in the
parameters passed through ``args``, by the implicit function theorem.

The solution ``x`` satisfies ``r(x, p) = 0`` for a residual of the user's function: ``f`` itself
for a root, ``x - f(x, p)`` for a fixed point, the gradient of ``f`` in ``x`` for an unconstrained
minimum. So ``dx = -(dr/dx)^-1 (dr/dp) dp``: the pullback solves ``(dr/dx)^T u = -xbar`` and
returns ``(dr/dp)^T u``. The products with ``dr/dx`` and ``dr/dp`` come from the AD system that
runs the rule (``rc.rrule_via_ad`` / ``rc.frule_via_ad``; the rules ask for a config), so the
user's function is differentiated as any other; ``dr/dx`` is formed densely (``n`` products for
``n`` unknowns). For ``minimize`` without a ``jac`` callable that needs second derivatives of
``f`` (nested AD). The derivative is that of the exact solution: it is as accurate as the
solver's result (tighten ``xtol``/``tol`` for more). Where the theorem does not apply the
rules refuse: a singular ``dr/dx`` (a double root, a degenerate minimum) raises, and so does
``minimize`` with constraints or with a bound active at the solution. Brackets and starting
points get a zero cotangent (the solution does not move with them). The pullbacks and frules
are plain NumPy on the products the AD system gives, so a second derivative differentiates
them again (and the solver's call inside the rule with this same rule).

``OptimizeResult`` (and ``OdeResult``) fields read as attributes (``sol.x``) are differentiable:
a ``getattr`` rule for them is registered here.

Example:
    >>> import scipy.optimize as so, rulescore as rc
    >>> rc.rrule.has_rules(so.brentq), rc.frule.has_rules(so.minimize)
    (True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.optimize as so

from rulescore import RulePair
from rulescore._config import HasForwardsMode, HasReverseMode, frule_via_ad, rrule_via_ad
from rulescore._projection import project
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import bind_arguments, proj
from rulescore.rules._user_functions import Params, UserFunction, check_fields, dense, field
from rulescore.rules.indexing import _dict_entry
from rulescore.rules.linalg import _entry

# -- residuals ---------------------------------------------------------------------------------


class _Residual:
    """``r(x, p)`` built from the user's function ``f`` (``kind``: ``"root"`` ``r = f``,
    ``"fixed_point"`` ``r = x - f``), with its products on flat vectors."""

    def __init__(self, user: UserFunction, kind: str = "root") -> None:
        self.user, self.kind = user, kind

    def vjp(self, x: Any, u: Any) -> tuple[Any, Any]:
        _, xbar, pbar, _ = self.user.vjp(x, u)
        return (u - xbar, -pbar) if self.kind == "fixed_point" else (xbar, pbar)

    def jvp(self, x: Any, xdot: Any, pdot: Any) -> Any:
        _, rdot = self.user.jvp(x, xdot, pdot)
        return xdot - rdot if self.kind == "fixed_point" else rdot


class _Slopes:
    """The gradient of ``f`` in ``x`` as a residual for forward mode: ``r_k`` is the slope of
    ``f`` along the unit vector ``e_k``, itself a forward derivative (forward over forward)."""

    def __init__(self, config: Any, f: Any, x: Any, params: Params) -> None:
        self.parts = [UserFunction(config, _slope(config, f, e, len(params.args)), x, params)
                      for e in np.eye(np.size(x))]

    def jvp(self, x: Any, xdot: Any, pdot: Any) -> Any:
        return np.concatenate([part.jvp(x, xdot, pdot)[1] for part in self.parts])


def _slope(config: Any, f: Any, e: Any, nargs: int) -> Any:
    def slope(x: Any, *args: Any) -> Any:
        direction = np.reshape(e, np.shape(x)) if np.ndim(x) else float(e[0])
        zeros = tuple(ZeroTangent() for _ in range(nargs))
        return frule_via_ad(config, (NoTangent(), direction, *zeros), f, x, *args)[1]
    return slope


def _gradient(config: Any, f: Any) -> Any:
    """``x, *args -> df/dx`` by the config's reverse mode (differentiated again by it)."""
    def gradient(x: Any, *args: Any) -> Any:
        _, back = rrule_via_ad(config, f, x, *args)
        return back(1.0)[1]
    return gradient


def _first(f: Any) -> Any:
    """The first output of ``f`` (the value, when ``f`` also returns derivatives)."""
    def value(x: Any, *args: Any) -> Any:
        return f(x, *args)[0]
    return value


def _second(f: Any) -> Any:
    def derivative(x: Any, *args: Any) -> Any:
        return f(x, *args)[1]
    return derivative


def _solve(name: str, jac: Any, rhs: Any) -> Any:
    if not np.all(np.isfinite(jac)) or np.linalg.cond(jac) > 1e14:
        raise np.linalg.LinAlgError(
            f"the rule for scipy.optimize.{name}: the derivative of the equations in the unknowns "
            "is singular at the solution (a double root or a degenerate optimum), so the solution "
            "has no derivative in the parameters")
    return np.linalg.solve(jac, rhs)


def _implicit_cotangent(name: str, residual: _Residual, x: Any, xbar: Any) -> Any:
    """The flat cotangent of the parameters from that of the solution ``x`` (flat)."""
    n = x.size
    jac = np.stack([residual.vjp(x, e)[0] for e in np.eye(n)]) if n else np.zeros((0, 0))  # dr/dx
    u = _solve(name, jac.T, -xbar)
    return residual.vjp(x, u)[1]


def _implicit_tangent(name: str, residual: Any, x: Any, pdot: Any) -> Any:
    """The flat tangent of the solution ``x`` (flat) along the flat parameter tangent."""
    zero_p = np.zeros_like(pdot)
    jac = np.stack([residual.jvp(x, e, zero_p) for e in np.eye(x.size)], axis=1)
    return _solve(name, jac, -residual.jvp(x, np.zeros(x.size), pdot))


def _flat(x: Any) -> Any:
    return np.ravel(np.asarray(x, dtype=float))


def _unflat(v: Any, like: Any) -> Any:
    return proj(like, np.reshape(v, np.shape(like)) if np.ndim(like) else float(v[0]))


# -- brentq and the other bracketing root finders ------------------------------------------------

_BRACKETING = (so.brentq, so.brenth, so.ridder, so.bisect, so.toms748)


def _bracket_call(config: Any, solver: Any, f: Any, a: Any, b: Any, rest: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Any, bool, Any, Any]:
    options = bind_arguments(solver, (f, a, b, *rest), kwargs)
    out = solver(f, a, b, *rest, **kwargs)
    full = bool(options.get("full_output", False))
    root = out[0] if full else out
    params = Params(options["args"])
    return out, full, root, _Residual(UserFunction(config, f, float(root), params))


def _full_output_root(name: str, out: Any, ybar: Any) -> Any:
    """The cotangent of the root from ``(root, RootResults)``: both hold it."""
    report = _entry(ybar, 1)
    check_fields(f"optimize.{name}", out[1], report, ("root",))
    return dense(_entry(ybar, 0), out[0]) + field(report, "root", out[0])


def _bracketing_rules(solver: Any) -> tuple[Any, Any]:
    """The rrule and frule of a bracketing root finder ``solver(f, a, b, args=(), ...)``."""
    def bracketing_rrule(config: Any, f: Any, a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
        out, full, root, residual = _bracket_call(config, solver, f, a, b, rest, kwargs)

        def bracketing_pullback(ybar: Any) -> Any:
            xbar = _full_output_root(solver.__name__, out, ybar) if full else ybar
            params = residual.user.params
            pbar = _implicit_cotangent(solver.__name__, residual, np.reshape(root, 1), np.reshape(xbar, 1))
            argsbar = (params.cotangent(pbar),) if rest else ()
            return (NoTangent(), NoTangent(), ZeroTangent(), ZeroTangent(), *argsbar,
                    *(NoTangent() for _ in rest[1:]))

        return out, bracketing_pullback

    def bracketing_frule(config: Any, tangents: Any, f: Any, a: Any, b: Any, *rest: Any,
                         **kwargs: Any) -> Any:
        out, full, root, residual = _bracket_call(config, solver, f, a, b, rest, kwargs)
        pdot = residual.user.params.flat_tangent(tangents[4] if rest else ZeroTangent())
        xdot = proj(root, _implicit_tangent(solver.__name__, residual, np.reshape(root, 1), pdot)[0])
        if full:
            return out, tangent_type(tuple)(xdot, tangent_type(type(out[1]))(root=xdot))
        return out, xdot

    return bracketing_rrule, bracketing_frule


# -- root_scalar -----------------------------------------------------------------------------------

def _root_scalar_call(config: Any, f: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    options = bind_arguments(so.root_scalar, (f, *rest), kwargs)
    out = so.root_scalar(f, *rest, **kwargs)
    fn = _first(f) if options["fprime"] is True or options["fprime2"] is True else f
    return out, _Residual(UserFunction(config, fn, float(out.root), Params(options["args"])))


def root_scalar_rrule(config: Any, f: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _root_scalar_call(config, f, rest, kwargs)

    def root_scalar_pullback(ybar: Any) -> Any:
        check_fields("optimize.root_scalar", out, ybar, ("root",))
        xbar, params = field(ybar, "root", out.root), residual.user.params
        pbar = _implicit_cotangent("root_scalar", residual, np.reshape(out.root, 1), np.reshape(xbar, 1))
        argsbar = (params.cotangent(pbar),) if rest else ()
        return (NoTangent(), NoTangent(), *argsbar, *(NoTangent() for _ in rest[1:]))

    return out, root_scalar_pullback


def root_scalar_frule(config: Any, tangents: Any, f: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _root_scalar_call(config, f, rest, kwargs)
    pdot = residual.user.params.flat_tangent(tangents[2] if rest else ZeroTangent())
    xdot = _implicit_tangent("root_scalar", residual, np.reshape(out.root, 1), pdot)[0]
    return out, tangent_type(type(out))(root=xdot)


# -- root, fixed_point -----------------------------------------------------------------------------

def _root_call(config: Any, fun: Any, x0: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> tuple[Any, Any]:
    options = bind_arguments(so.root, (fun, x0, *rest), kwargs)
    out = so.root(fun, x0, *rest, **kwargs)
    fn = _first(fun) if options["jac"] is True else fun
    return out, _Residual(UserFunction(config, fn, out.x, Params(options["args"])))


def root_rrule(config: Any, fun: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _root_call(config, fun, x0, rest, kwargs)

    def root_pullback(ybar: Any) -> Any:
        check_fields("optimize.root", out, ybar, ("x",), ("fun",))
        xbar, params = field(ybar, "x", out.x), residual.user.params
        pbar = _implicit_cotangent("root", residual, _flat(out.x), np.ravel(xbar))
        argsbar = (params.cotangent(pbar),) if rest else ()
        return (NoTangent(), NoTangent(), ZeroTangent(), *argsbar, *(NoTangent() for _ in rest[1:]))

    return out, root_pullback


def root_frule(config: Any, tangents: Any, fun: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _root_call(config, fun, x0, rest, kwargs)
    pdot = residual.user.params.flat_tangent(tangents[3] if rest else ZeroTangent())
    xdot = _implicit_tangent("root", residual, _flat(out.x), pdot)
    return out, tangent_type(type(out))({"x": project(out.x, np.reshape(xdot, np.shape(out.x)))})


def _fixed_point_call(config: Any, func: Any, x0: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> tuple[Any, Any]:
    options = bind_arguments(so.fixed_point, (func, x0, *rest), kwargs)
    out = so.fixed_point(func, x0, *rest, **kwargs)
    like = out if np.ndim(out) else float(out)
    return out, _Residual(UserFunction(config, func, like, Params(options["args"])), "fixed_point")


def fixed_point_rrule(config: Any, func: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _fixed_point_call(config, func, x0, rest, kwargs)

    def fixed_point_pullback(ybar: Any) -> Any:
        pbar = _implicit_cotangent("fixed_point", residual, _flat(out), _flat(ybar))
        argsbar = (residual.user.params.cotangent(pbar),) if rest else ()
        return (NoTangent(), NoTangent(), ZeroTangent(), *argsbar, *(NoTangent() for _ in rest[1:]))

    return out, fixed_point_pullback


def fixed_point_frule(config: Any, tangents: Any, func: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, residual = _fixed_point_call(config, func, x0, rest, kwargs)
    pdot = residual.user.params.flat_tangent(tangents[3] if rest else ZeroTangent())
    return out, _unflat(_implicit_tangent("fixed_point", residual, _flat(out), pdot), out)


# -- minimize ----------------------------------------------------------------------------------------

def _minimize_call(fun: Any, x0: Any, rest: tuple[Any, ...], kwargs: dict[str, Any]
                   ) -> tuple[Any, dict[str, Any]]:
    options = bind_arguments(so.minimize, (fun, x0, *rest), kwargs)
    if options["constraints"]:
        raise NotImplementedError("the rule for scipy.optimize.minimize differentiates unconstrained "
                                  "minima only: the solution with constraints needs their multipliers")
    out = so.minimize(fun, x0, *rest, **kwargs)
    if options["bounds"] is not None and _active(options["bounds"], _flat(out.x)):
        raise NotImplementedError("the rule for scipy.optimize.minimize: a bound is active at the "
                                  "solution, where the implicit function theorem on the gradient "
                                  "does not hold; differentiate without that bound")
    return out, options


def _active(bounds: Any, x: Any) -> bool:
    """Whether ``x`` sits on one of ``minimize``'s bounds (a ``Bounds`` or ``(min, max)`` pairs)."""
    if isinstance(bounds, so.Bounds):
        lb, ub = bounds.lb, bounds.ub
    else:
        lb, ub = (np.array(side, dtype=float) for side in zip(*bounds, strict=True))  # None: nan
    near = 1e-7 * np.maximum(1.0, np.abs(x))
    return bool(np.any(np.abs(x - lb) <= near) or np.any(np.abs(x - ub) <= near))


def _objective(fun: Any, options: dict[str, Any]) -> Any:
    """The scalar objective (``fun`` returns ``(f, g)`` when ``jac=True``)."""
    return _first(fun) if options["jac"] is True else fun


def _gradient_function(config: Any, fun: Any, options: dict[str, Any]) -> Any:
    """The gradient the minimum zeroes: the user's ``jac`` (or ``fun``'s second output), else AD."""
    jac = options["jac"]
    if jac is True:
        return _second(fun)
    if callable(jac):
        return jac
    return _gradient(config, fun)


def minimize_rrule(config: Any, fun: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, options = _minimize_call(fun, x0, rest, kwargs)
    params = Params(options["args"])
    x = _flat(out.x)
    residual = _Residual(UserFunction(config, _gradient_function(config, fun, options), out.x, params))

    def minimize_pullback(ybar: Any) -> Any:
        check_fields("optimize.minimize", out, ybar, ("x", "fun"), ("jac",))
        # the optimal value: f's own partials (its x partial is ~0 but kept), then the minimiser
        objective = UserFunction(config, _objective(fun, options), out.x, params)
        _, fx, fp, _ = objective.vjp(x, field(ybar, "fun", out.fun))
        pbar = fp + _implicit_cotangent("minimize", residual, x, np.ravel(field(ybar, "x", out.x)) + fx)
        argsbar = (params.cotangent(pbar),) if rest else ()
        return (NoTangent(), NoTangent(), ZeroTangent(), *argsbar, *(NoTangent() for _ in rest[1:]))

    return out, minimize_pullback


def minimize_frule(config: Any, tangents: Any, fun: Any, x0: Any, *rest: Any, **kwargs: Any) -> Any:
    out, options = _minimize_call(fun, x0, rest, kwargs)
    params = Params(options["args"])
    pdot = params.flat_tangent(tangents[3] if rest else ZeroTangent())
    objective = _objective(fun, options)
    jac = options["jac"]
    residual: Any = (_Residual(UserFunction(config, _gradient_function(config, fun, options), out.x, params))
                     if jac is True or callable(jac) else _Slopes(config, objective, out.x, params))
    x = _flat(out.x)
    xdot = _implicit_tangent("minimize", residual, x, pdot)
    _, fundot = UserFunction(config, objective, out.x, params).jvp(x, xdot, pdot)
    fundot = fundot[0] if np.ndim(out.fun) == 0 else fundot
    return out, tangent_type(type(out))({"x": project(out.x, np.reshape(xdot, np.shape(out.x))),
                                         "fun": proj(out.fun, fundot)})


# -- attributes of result objects ------------------------------------------------------------------

def result_getattr_rrule(x: Any, name: Any, *default: Any) -> Any:
    y = getattr(x, name, *default)
    differentiable = name in x and np.asarray(x[name]).dtype.kind == "f"

    def result_getattr_pullback(ybar: Any) -> Any:
        xbar = tangent_type(type(x))({name: project(y, ybar)}) if differentiable else ZeroTangent()
        return (NoTangent(), xbar, NoTangent(), *(ZeroTangent() for _ in default))

    return y, result_getattr_pullback


def result_getattr_frule(tangents: Any, x: Any, name: Any, *default: Any) -> Any:
    y = getattr(x, name, *default)
    return y, _dict_entry(tangents[1], name) if name in x else ZeroTangent()


#: The rrule and frule of each bracketing root finder.
_BRACKETING_RULES = {solver: _bracketing_rules(solver) for solver in _BRACKETING}

# the rules ask for the engine's config; the solutions move with args only (at position 3 of the
# bracketing solvers, 1 of root_scalar, 2 of the others)
RULES: tuple[RulePair, ...] = (
    *(RulePair(solver, reverse, config=HasReverseMode) for solver, (reverse, _) in _BRACKETING_RULES.items()),
    *(RulePair(solver, frule=forward, config=HasForwardsMode, wrt=(3,))
      for solver, (_, forward) in _BRACKETING_RULES.items()),
    RulePair(so.root_scalar, root_scalar_rrule, config=HasReverseMode),
    RulePair(so.root_scalar, frule=root_scalar_frule, config=HasForwardsMode, wrt=(1,)),
    RulePair(so.root, root_rrule, config=HasReverseMode),
    RulePair(so.root, frule=root_frule, config=HasForwardsMode, wrt=(2,)),
    RulePair(so.fixed_point, fixed_point_rrule, config=HasReverseMode),
    RulePair(so.fixed_point, frule=fixed_point_frule, config=HasForwardsMode, wrt=(2,)),
    RulePair(so.minimize, minimize_rrule, config=HasReverseMode),
    RulePair(so.minimize, frule=minimize_frule, config=HasForwardsMode, wrt=(2,)),
    RulePair(getattr, result_getattr_rrule, result_getattr_frule, (so.OptimizeResult,), wrt=(0,)),
)
