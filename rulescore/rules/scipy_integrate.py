"""Rules for ``scipy.integrate`` (registered when SciPy imports ``scipy.integrate``, see
:mod:`rulescore.rules._optional`): ``trapezoid`` and ``simpson`` in the samples ``y``, the
sample points ``x`` (one-dimensional, or shaped like ``y``) and the spacing ``dx``.

With ``s_i = (y_i + y_{i+1}) / 2`` the trapezoid rule is ``sum_i (x_{i+1} - x_i) s_i``: its
partial in ``y_i`` is half the width of the two neighbouring intervals, in ``x_i`` it is
``s_{i-1} - s_i``. Simpson's rule is ``sum_i w_i(h) y_i``, with weights rational in the interval
widths ``h`` (SciPy's formula, with its correction of the last interval for an even number of
samples): the weights are computed here and differentiated in ``h`` by complex step, which is
exact to rounding for rational functions. A repeated sample point has no derivative (NaN). Both
rules take the positional form ``(y, x, dx, axis)``; ``simpson`` takes ``dx`` and ``axis`` by
keyword only, so that form is declared (:func:`rulescore.declare_parameters`) and an engine
passes a traced ``dx=`` to the rule in its slot.

``odeint``, ``solve_ivp`` and ``quad`` take a user function, which these rules differentiate by
calling back into the AD system that runs them (they ask for its config: ``rc.rrule_via_ad``
in reverse mode, ``rc.frule_via_ad`` in forward mode), in the initial state, the output times
(``t``; ``t_eval`` and the ends of ``t_span``) or end points, and the ``args`` passed on to the
function:

- reverse mode solves the adjoint equations ``a' = -(df/dy)^T a``, ``p' = -(df/dp)^T a``
  backwards from each output time to the one before, with the state restarted from the stored
  solution; forward mode solves the sensitivity equations ``s' = (df/dy) s + (df/dp) pdot``
  with the state. Both use the call's solver and tolerances (``rtol``, ``atol``; ``mxstep``,
  ``hmax``, ``hmin`` for ``odeint``, ``max_step`` for ``solve_ivp``), so the derivative is as
  accurate as the solution: tighten ``rtol``/``atol`` for accurate gradients.
- ``solve_ivp`` without ``t_eval`` reports the solver's own steps, which move with the
  parameters: only the states at the ends of ``t_span`` have a derivative (a cotangent on the
  others raises; their tangents are NaN). ``events=`` and ``dense_output=True`` are refused.
- ``quad`` differentiates under the integral sign (one ``quad`` per parameter, with the call's
  ``epsabs``, ``epsrel``, ``limit``, ``points``); its error estimate is not differentiable and
  ``weight=`` is refused.
- second derivatives: the adjoint, sensitivity and parameter integrals are solved by calling
  the solver again with the parameters in its ``args`` (never captured in a closure), so an
  outer differentiation applies the same rule to them.

Example:
    >>> import numpy as np, rulescore as rc, scipy.integrate as si
    >>> y, back = rc.rrule(si.trapezoid, np.array([1.0, 2.0, 4.0]))
    >>> float(y), back(1.0)[1]
    (4.5, array([0.5, 1. , 0.5]))
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.integrate as si

from rulescore import RulePair
from rulescore._config import HasForwardsMode, HasReverseMode
from rulescore._linear import dense_tangent
from rulescore._parameters import declare_parameters
from rulescore._projection import project
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import bind_arguments, proj
from rulescore.rules._user_functions import Params, UserFunction, check_fields, dense, field
from rulescore.rules.linalg import _entry, _given

_P = inspect.Parameter
#: The positional form of the rules of ``trapezoid`` and ``simpson``: ``simpson`` takes ``dx``
#: and ``axis`` by keyword only; declared (below) so a traced ``dx=`` reaches its slot.
_SAMPLED = inspect.Signature([_P("y", _P.POSITIONAL_OR_KEYWORD)] + [
    _P(name, _P.POSITIONAL_OR_KEYWORD, default=default)
    for name, default in (("x", None), ("dx", 1.0), ("axis", -1))])


class _Sampled(abc.ABC):
    """A ``trapezoid`` or ``simpson`` call in the positional form ``(y, x, dx, axis)``: the
    samples on the last axis, the interval widths ``h`` and the partials shared by both rules
    (the value is ``sum(w(h) * y)`` with weights ``w`` homogeneous of degree one in ``h``)."""

    primal: Any

    def __init__(self, y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        bound = _SAMPLED.bind(y, *args, **kwargs)
        bound.apply_defaults()
        self.x, self.dx, self.axis = (bound.arguments[k] for k in ("x", "dx", "axis"))
        self.value = self.primal(y, x=self.x, dx=self.dx, axis=self.axis)
        self.y = np.moveaxis(np.asarray(y, dtype=float), self.axis, -1)
        if self.x is None:
            self.h = self.dx * np.ones(self.y.shape[-1] - 1)
        else:
            xs = np.asarray(self.x, dtype=float)
            self.h = np.diff(xs if xs.ndim == 1 else np.moveaxis(xs, self.axis, -1), axis=-1)

    @abc.abstractmethod
    def y_partials(self) -> Any:
        """The weights, ``(..., n)``: the partials of the value in the samples."""

    @abc.abstractmethod
    def x_cotangent(self, ybar: Any) -> Any:
        """The cotangent of ``x`` (given) for the cotangent ``ybar`` of the value."""

    @abc.abstractmethod
    def x_tangent(self, xdot: Any) -> Any:
        """The value's tangent along the tangent ``xdot`` of ``x`` (given)."""

    def dx_partial(self, y: Any) -> Any:
        """The partial in ``dx``: the value at unit spacing (the weights are linear in it)."""
        return self.primal(y, dx=1.0, axis=self.axis)

    def cotangents(self, ybar: Any, y: Any, nargs: int) -> tuple[Any, ...]:
        """The pullback's cotangents, for ``y`` and the ``nargs`` arguments given positionally."""
        ybar = np.asarray(ybar, dtype=float)
        ycot = proj(y, np.moveaxis(ybar[..., None] * self.y_partials(), -1, self.axis))
        spaced = self.x is None  # by dx; else by x, and dx is unused
        by_name = {"x": NoTangent() if spaced else self.x_cotangent(ybar),
                   "dx": proj(self.dx, np.sum(ybar * self.dx_partial(y))) if spaced else ZeroTangent(),
                   "axis": NoTangent()}
        return (NoTangent(), ycot, *(by_name[name] for name in ("x", "dx", "axis")[:nargs]))

    def tangent(self, tangents: Any, y: Any, nargs: int) -> Any:
        """The frule's tangent from those of ``y`` and of the ``nargs`` positional arguments."""
        t = np.moveaxis(np.asarray(dense_tangent(y, tangents[1]), dtype=float), self.axis, -1)
        ydot = np.sum(t * self.y_partials(), axis=-1)
        if nargs >= 1 and self.x is not None:
            ydot = ydot + self.x_tangent(dense_tangent(self.x, tangents[2]))
        if nargs >= 2 and self.x is None:
            ydot = ydot + tangents[3] * self.dx_partial(y)
        return proj(self.value, np.broadcast_to(ydot, np.shape(self.value)))


class _Trapezoid(_Sampled):
    """A ``trapezoid`` call: the weights are half the widths of the neighbouring intervals."""

    primal = staticmethod(si.trapezoid)

    def y_partials(self) -> Any:
        w = np.broadcast_to(self.h, (*self.y.shape[:-1], self.y.shape[-1] - 1)) / 2
        pad = np.zeros((*w.shape[:-1], 1))
        return np.concatenate([w, pad], axis=-1) + np.concatenate([pad, w], axis=-1)

    def x_partials(self) -> Any:
        s = (self.y[..., 1:] + self.y[..., :-1]) / 2
        pad = np.zeros((*s.shape[:-1], 1))
        return np.concatenate([pad, s], axis=-1) - np.concatenate([s, pad], axis=-1)

    def x_cotangent(self, ybar: Any) -> Any:
        xcot = ybar[..., None] * self.x_partials()
        if np.ndim(self.x) == 1:
            xcot = np.sum(np.reshape(xcot, (-1, xcot.shape[-1])), axis=0)
        else:
            xcot = np.moveaxis(xcot, -1, self.axis)
        return proj(self.x, xcot)

    def x_tangent(self, xdot: Any) -> Any:
        t = np.asarray(xdot, dtype=float)
        t = t if t.ndim == 1 else np.moveaxis(t, self.axis, -1)
        return np.sum(t * self.x_partials(), axis=-1)


def _sampled_rrule(kind: type[_Sampled], y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    call = kind(y, args, kwargs)

    def sampled_pullback(ybar: Any) -> Any:
        return call.cotangents(ybar, y, len(args))

    return call.value, sampled_pullback


def _sampled_frule(kind: type[_Sampled], tangents: Any, y: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    call = kind(y, args, kwargs)
    return call.value, call.tangent(tangents, y, len(args))


def trapezoid_rrule(y: Any, *args: Any, **kwargs: Any) -> Any:
    return _sampled_rrule(_Trapezoid, y, args, kwargs)


def trapezoid_frule(tangents: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    return _sampled_frule(_Trapezoid, tangents, y, args, kwargs)


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


class _Simpson(_Sampled):
    """A ``simpson`` call: its weights and their derivatives in the widths."""

    primal = staticmethod(si.simpson)

    def __init__(self, y: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__(y, args, kwargs)
        self.weights = _simpson_weights(self.h)

    def y_partials(self) -> Any:
        return self.weights

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
    return _sampled_rrule(_Simpson, y, args, kwargs)


def simpson_frule(tangents: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    return _sampled_frule(_Simpson, tangents, y, args, kwargs)


declare_parameters(si.simpson, _SAMPLED)


# -- odeint, solve_ivp: adjoint and forward sensitivities --------------------------------------

class _Flow:
    """An initial value problem as solved: the dynamics ``f(t, y)`` (the user's function through
    the AD system), the initial time and state, the output times and states, and ``integrate``,
    which solves an augmented system ``z' = rhs(t, z, *args)`` from one time to others with the
    solver and tolerances of the call (``integrate(rhs, z0, t0, times, args) -> (len(times), m)``)."""

    def __init__(self, f: UserFunction, tfirst: bool, t0: Any, y0: Any, times: Any, ys: Any,
                 integrate: Callable[[Any, Any, Any, Any, tuple[Any, ...]], Any]) -> None:
        self.f, self.tfirst, self.t0, self.y0 = f, tfirst, t0, np.ravel(np.asarray(y0, dtype=float))
        self.times, self.ys, self.integrate = times, ys, integrate
        self.n = self.y0.size

    def _at(self, t: Any) -> dict[str, tuple[Any, ...]]:
        return {"before": (t,)} if self.tfirst else {"after": (t,)}

    def rate(self, t: Any, y: Any) -> Any:
        return self.f.value(y, **self._at(t))

    def adjoint(self, g: Any) -> tuple[Any, Any, Any, Any]:
        """``(y0bar, paramsbar, timesbar, t0bar)`` for the cotangent ``g`` of the output states:
        the adjoint ODE ``a' = -(df/dy)^T a``, ``p' = -(df/dp)^T a`` solved backwards from each
        output time to the one before, along with the state (restarted from the stored one).
        The parameters reach the adjoint dynamics through the solver's ``args``, so a second
        derivative differentiates this solve with the solver's rule."""
        n = self.n
        a, pbar = np.zeros(n), np.zeros(self.f.params.size)
        tbars = []

        def augmented(t: Any, z: Any, *args: Any) -> Any:
            rate, ybar, parbar, _ = self.f.vjp(z[:n], z[n:2 * n], args=args, **self._at(t))
            return np.concatenate([rate, -ybar, -parbar])

        for k in range(len(self.times) - 1, -1, -1):
            tbars.append(g[k] @ self.rate(self.times[k], self.ys[k]))
            a = a + g[k]
            t_prev = self.times[k - 1] if k else self.t0
            if t_prev != self.times[k]:
                z = self.integrate(augmented, np.concatenate([self.ys[k], a, pbar]), self.times[k],
                                   np.reshape(t_prev, 1), self.f.params.args)[-1]
                a, pbar = z[n:2 * n], z[2 * n:]
        return a, pbar, np.stack(tbars[::-1]), -(a @ self.rate(self.t0, self.y0))

    def tangent(self, y0dot: Any, pdot: Any, timesdot: Any, t0dot: float) -> Any:
        """The tangent of the output states: the variational equation ``s' = (df/dy) s +
        (df/dp) pdot`` solved forwards with the state, plus the motion of the output times."""
        n = self.n

        def augmented(t: Any, z: Any, pdot: Any, *args: Any) -> Any:
            rate, sdot = self.f.jvp(z[:n], z[n:], pdot, args=args, **self._at(t))
            return np.concatenate([rate, sdot])

        s0 = np.ravel(y0dot) - self.rate(self.t0, self.y0) * t0dot
        s = self.integrate(augmented, np.concatenate([self.y0, s0]), self.t0, self.times,
                           (pdot, *self.f.params.args))[:, n:]
        rates = np.stack([self.rate(t, y) for t, y in zip(self.times, self.ys, strict=True)])
        return s + rates * np.asarray(timesdot)[:, None]


def _time_cotangent(t: Any, tbar: Any) -> Any:
    return proj(t, np.reshape(tbar, np.shape(t))) if np.asarray(t).dtype.kind == "f" else NoTangent()


def _time_tangent(tdot: Any, t: Any) -> Any:
    return np.ravel(dense(tdot, t))


_ODEINT_TOLERANCES = ("rtol", "atol", "mxstep", "hmax", "hmin")


class _Odeint:
    """An ``odeint`` call: its options, its result and its flow."""

    def __init__(self, config: Any, func: Any, y0: Any, t: Any, rest: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        options = bind_arguments(si.odeint, (func, y0, t, *rest), kwargs)
        self.params = Params(options["args"])
        self.full = bool(options["full_output"])
        self.out = si.odeint(func, y0, t, *rest, **kwargs)
        tolerances = {k: options[k] for k in _ODEINT_TOLERANCES}

        def integrate(rhs: Any, z0: Any, start: Any, times: Any, args: tuple[Any, ...]) -> Any:
            return si.odeint(rhs, z0, np.concatenate([np.reshape(start, 1), times]), args,
                             tfirst=True, **tolerances)[1:]

        ys = self.out[0] if self.full else self.out
        f = UserFunction(config, func, np.ravel(np.asarray(y0, dtype=float)), self.params)
        self.flow = _Flow(f, bool(options["tfirst"]), np.ravel(t)[0], y0, np.ravel(t), ys, integrate)


def odeint_rrule(config: Any, func: Any, y0: Any, t: Any, *rest: Any, **kwargs: Any) -> Any:
    call = _Odeint(config, func, y0, t, rest, kwargs)

    def odeint_pullback(ybar: Any) -> Any:
        if call.full and _given(_entry(ybar, 1)):
            raise NotImplementedError("the rule for scipy.integrate.odeint differentiates the "
                                      "solution, not the solver's report (full_output's dict)")
        g = dense(_entry(ybar, 0), call.out[0]) if call.full else ybar
        y0bar, pbar, tbar, t0bar = call.flow.adjoint(g)
        tbar = np.concatenate([tbar[:1] + t0bar, tbar[1:]])
        argsbar = (call.params.cotangent(pbar),) if rest else ()
        return (NoTangent(), NoTangent(), proj(y0, np.reshape(y0bar, np.shape(y0))),
                _time_cotangent(t, tbar), *argsbar, *(NoTangent() for _ in rest[1:]))

    return call.out, odeint_pullback


def odeint_frule(config: Any, tangents: Any, func: Any, y0: Any, t: Any, *rest: Any, **kwargs: Any) -> Any:
    call = _Odeint(config, func, y0, t, rest, kwargs)
    y0dot = dense(tangents[2], np.ravel(np.asarray(y0, dtype=float)))
    tdot = _time_tangent(tangents[3], np.ravel(t))
    pdot = call.params.flat_tangent(tangents[4]) if rest else np.zeros(call.params.size)
    ydot = call.flow.tangent(y0dot, pdot, tdot, tdot[0])
    if call.full:
        return call.out, tangent_type(tuple)(project(call.out[0], ydot), NoTangent())
    return call.out, project(call.out, ydot)


_IVP_NAMES = ("fun", "t_span", "y0", "method", "t_eval", "dense_output", "events", "vectorized", "args")
_IVP_TOLERANCES = ("rtol", "atol", "max_step")


class _SolveIvp:
    """A ``solve_ivp`` call: its options, its result and its flow."""

    def __init__(self, config: Any, fun: Any, t_span: Any, y0: Any, rest: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        options = bind_arguments(si.solve_ivp, (fun, t_span, y0, *rest), kwargs)
        if options["events"] is not None:
            raise NotImplementedError("the rule for scipy.integrate.solve_ivp does not differentiate "
                                      "event times: solve without events= (or up to the event time)")
        if options["dense_output"]:  # the interpolant would carry no derivative: refuse, not zero
            raise NotImplementedError("the rule for scipy.integrate.solve_ivp does not differentiate "
                                      "the dense output (sol.sol): pass t_eval= for the times you use")
        self.params = Params(options["args"])
        self.sol = si.solve_ivp(fun, t_span, y0, *rest, **kwargs)
        extra = options["options"]
        tolerances = {k: extra[k] for k in _IVP_TOLERANCES if k in extra}
        method = options["method"]

        def integrate(rhs: Any, z0: Any, start: Any, times: Any, args: tuple[Any, ...]) -> Any:
            sol = si.solve_ivp(rhs, (start, times[-1]), z0, method=method, t_eval=times, args=args,
                               **tolerances)
            if not sol.success:
                raise RuntimeError(f"scipy.integrate.solve_ivp's rule: the sensitivity equations "
                                   f"failed to solve ({sol.message}); loosen or tighten rtol/atol")
            return sol.y.T

        self.t_eval, self.t_span = options["t_eval"], t_span
        f = UserFunction(config, fun, np.ravel(np.asarray(y0, dtype=float)), self.params)
        if self.t_eval is None:  # the solver's own steps: only the ends (of t_span) are differentiated
            times, states = np.stack([t_span[0], t_span[1]]), self.sol.y.T[np.array([0, -1])]
        else:
            times, states = np.ravel(self.t_eval), self.sol.y.T
        self.flow = _Flow(f, True, t_span[0], y0, times, states, integrate)

    def cotangents(self, ybar: Any, t_span: Any, y0: Any, rest: tuple[Any, ...]) -> tuple[Any, ...]:
        check_fields("integrate.solve_ivp", self.sol, ybar, ("y",))
        g = field(ybar, "y", self.sol.y).T
        if self.t_eval is None:
            if np.any(g[1:-1]):
                raise NotImplementedError(
                    "the rule for scipy.integrate.solve_ivp: without t_eval the solution is reported "
                    "at the solver's own steps, which move with the parameters; only the states at "
                    "the ends of t_span have a derivative. Pass t_eval= for the times you use")
            g = g[np.array([0, -1])]
        y0bar, pbar, tbar, t0bar = self.flow.adjoint(g)
        span = t0bar * np.array([1.0, 0.0])
        if self.t_eval is None:  # the output times are the ends of t_span
            span = span + tbar
        by_name = {"t_eval": _time_cotangent(self.t_eval, tbar), "args": self.params.cotangent(pbar)}
        rest_cts = [by_name.get(name, NoTangent()) for name in _IVP_NAMES[3:3 + len(rest)]]
        return (NoTangent(), NoTangent(), _time_cotangent(t_span, span),
                proj(y0, np.reshape(y0bar, np.shape(y0))), *rest_cts)

    def tangent(self, tangents: Any) -> Any:
        by_name = dict(zip(_IVP_NAMES, tangents[1:], strict=False))
        y0dot = dense(by_name["y0"], self.flow.y0)
        spandot = _time_tangent(by_name["t_span"], self.t_span)
        if self.t_eval is None:  # the output times are the ends of t_span
            timesdot = spandot
        else:
            timesdot = _time_tangent(by_name.get("t_eval", ZeroTangent()), self.sol.t)
        pdot = self.params.flat_tangent(by_name.get("args", ZeroTangent()))
        ydot = self.flow.tangent(y0dot, pdot, timesdot, spandot[0])
        if self.t_eval is None:  # the solver's own steps move with the parameters: no derivative
            steps = np.full((len(self.sol.t) - 2, self.flow.n), np.nan)
            ydot = np.concatenate([ydot[:1], steps, ydot[1:]])
        return tangent_type(type(self.sol))({"y": project(self.sol.y, ydot.T)})


def solve_ivp_rrule(config: Any, fun: Any, t_span: Any, y0: Any, *rest: Any, **kwargs: Any) -> Any:
    call = _SolveIvp(config, fun, t_span, y0, rest, kwargs)

    def solve_ivp_pullback(ybar: Any) -> Any:
        return call.cotangents(ybar, t_span, y0, rest)

    return call.sol, solve_ivp_pullback


def solve_ivp_frule(config: Any, tangents: Any, fun: Any, t_span: Any, y0: Any, *rest: Any,
                    **kwargs: Any) -> Any:
    call = _SolveIvp(config, fun, t_span, y0, rest, kwargs)
    return call.sol, call.tangent(tangents)


# -- quad: differentiating under the integral sign ------------------------------------------------

class _Quad:
    """A ``quad`` call: its result, the integrand through the AD system and the end points.

    The derivatives are integrals again (of the integrand's partials, with the parameters passed
    through ``quad``'s ``args``), so a second derivative differentiates them with this rule."""

    def __init__(self, config: Any, func: Any, a: Any, b: Any, rest: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        options = bind_arguments(si.quad, (func, a, b, *rest), kwargs)
        if options["weight"] is not None or options["complex_func"]:
            raise NotImplementedError("the rule for scipy.integrate.quad differentiates plain real "
                                      "integrals: write the weight into the integrand (no weight=, "
                                      "no complex_func=)")
        self.out = si.quad(func, a, b, *rest, **kwargs)
        self.params = Params(options["args"])
        self.f = UserFunction(config, func, 0.0, self.params)
        self.a, self.b = a, b
        self.accuracy = {"epsabs": options["epsabs"], "epsrel": options["epsrel"],
                         "limit": options["limit"], "points": options["points"]}

    def end(self, x: Any, scale: Any) -> Any:
        """The integrand at an end point times ``scale`` (zero at an infinite end)."""
        return scale * self.f.value(np.reshape(x, 1))[0] if np.isfinite(x) else 0.0

    def integral(self, integrand: Any, args: tuple[Any, ...]) -> Any:
        return si.quad(integrand, self.a, self.b, args, **self.accuracy)[0]

    def params_cotangent(self) -> Any:
        """The partials of the integral in the parameters (flat): one integral each."""
        def partial(x: Any, k: int, *args: Any) -> Any:
            return self.f.vjp(np.reshape(x, 1), np.ones(1), args=args)[2][k]
        parts = [self.integral(partial, (k, *self.params.args)) for k in range(self.params.size)]
        return np.stack(parts) if parts else np.zeros(0)

    def params_tangent(self, pdot: Any) -> Any:
        def partial(x: Any, pdot: Any, *args: Any) -> Any:
            return self.f.jvp(np.reshape(x, 1), np.zeros(1), pdot, args=args)[1][0]
        return self.integral(partial, (pdot, *self.params.args))


def _end_cotangent(x: Any, ct: Any) -> Any:
    """An end point's cotangent; an infinite end does not move (``NoTangent()``)."""
    return NoTangent() if not np.isfinite(x) else proj(x, ct)


def quad_rrule(config: Any, func: Any, a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
    call = _Quad(config, func, a, b, rest, kwargs)

    def quad_pullback(ybar: Any) -> Any:
        if any(_given(_entry(ybar, i)) for i in range(1, len(call.out))):
            raise NotImplementedError("the rule for scipy.integrate.quad differentiates the integral "
                                      "(the first output), not the error estimate or report")
        vbar = _entry(ybar, 0)  # not a zero: the others are refused above
        argsbar = (call.params.cotangent(vbar * call.params_cotangent()),) if rest else ()
        return (NoTangent(), NoTangent(), _end_cotangent(a, call.end(call.a, -vbar)),
                _end_cotangent(b, call.end(call.b, vbar)), *argsbar, *(NoTangent() for _ in rest[1:]))

    return call.out, quad_pullback


def quad_frule(config: Any, tangents: Any, func: Any, a: Any, b: Any, *rest: Any, **kwargs: Any) -> Any:
    call = _Quad(config, func, a, b, rest, kwargs)
    vdot = call.end(call.b, tangents[3]) - call.end(call.a, tangents[2])
    if rest:
        vdot = vdot + call.params_tangent(call.params.flat_tangent(tangents[4]))
    return call.out, tangent_type(tuple)(proj(call.out[0], vdot), *(ZeroTangent() for _ in call.out[1:]))


RULES: tuple[RulePair, ...] = (
    RulePair(si.trapezoid, trapezoid_rrule, trapezoid_frule, wrt=(0, 1, 2)),
    RulePair(si.simpson, simpson_rrule, simpson_frule, wrt=(0, 1, 2)),
    RulePair(si.odeint, odeint_rrule, config=HasReverseMode),
    RulePair(si.odeint, frule=odeint_frule, config=HasForwardsMode, wrt=(1, 2, 3)),  # y0, t, args
    RulePair(si.solve_ivp, solve_ivp_rrule, config=HasReverseMode),
    # t_span, y0, t_eval, args
    RulePair(si.solve_ivp, frule=solve_ivp_frule, config=HasForwardsMode, wrt=(1, 2, 4, 8)),
    RulePair(si.quad, quad_rrule, config=HasReverseMode),
    RulePair(si.quad, frule=quad_frule, config=HasForwardsMode, wrt=(1, 2, 3)),  # a, b, args
)
