"""What the rules of SciPy's solvers (``odeint``, ``solve_ivp``, ``quad``, ``scipy.optimize``)
need of the user's function: its vector-Jacobian and Jacobian-vector products, from the AD
system running the rule (``rc.rrule_via_ad`` / ``rc.frule_via_ad`` through its
:class:`~rulescore.RuleConfig`), on flat float vectors the solvers can integrate or solve with.

The extra arguments a solver passes on (its ``args`` tuple) are split into the differentiable
ones (real floats and float arrays, lists of floats) and the others (integers, strings,
callables, ``None``), which get ``NoTangent()``.

Example:
    >>> import numpy as np
    >>> p = Params((np.array([1.0, 2.0]), 3, 0.5))
    >>> p.size, p.cotangent(np.array([10.0, 20.0, 30.0]))
    (3, Tangent[tuple](array([10., 20.]), NoTangent(), 30.0))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore._config import RuleConfig, frule_via_ad, rrule_via_ad
from rulescore._fitting import proj
from rulescore._tangent import Tangent, tangent_type
from rulescore._thunks import unthunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

TupleTangent = tangent_type(tuple)


def _differentiable(a: Any) -> bool:
    if isinstance(a, (bool, np.bool_)) or not isinstance(a, (float, np.floating, np.ndarray, list, tuple)):
        return False
    try:
        kind = np.asarray(a).dtype.kind
    except (TypeError, ValueError):  # a ragged list: not a parameter vector
        return False
    if kind == "c":
        raise TypeError("the rules for SciPy's solvers differentiate real parameters only; "
                        "pass real and imaginary parts as separate real arguments")
    return kind == "f"


def dense(ct: Any, like: Any) -> Any:
    """A cotangent or tangent from an AD system as a float array shaped like ``like`` (zeros
    for a zero, ``None`` or ``NoTangent()``; a tangent of a tuple or list entry by entry)."""
    ct = unthunk(ct)
    if ct is None or isinstance(ct, AbstractZero):
        return np.zeros(np.shape(like))
    if isinstance(ct, Tangent):
        ct = ct.backing
    if isinstance(ct, (tuple, list)):
        likes = like if isinstance(like, (tuple, list)) else list(np.asarray(like))
        parts = [dense(c, x) for c, x in zip(ct, likes, strict=True)]
        return np.reshape(np.array(parts, dtype=float), np.shape(like))
    return np.reshape(np.asarray(ct, dtype=float), np.shape(like))


class Params:
    """The differentiable entries of a solver's ``args``, as one flat float vector."""

    def __init__(self, args: Any) -> None:
        self.is_tuple = isinstance(args, tuple)
        self.args: tuple[Any, ...] = args if self.is_tuple else (() if args is None else (args,))
        self.where = tuple(i for i, a in enumerate(self.args) if _differentiable(a))
        sizes = [int(np.size(self.args[i])) for i in self.where]
        self.bounds = np.cumsum([0, *sizes])
        self.size = int(self.bounds[-1])

    def pieces(self, flat: Any) -> list[Any]:
        return [flat[self.bounds[k]:self.bounds[k + 1]] for k in range(len(self.where))]

    def cotangent(self, flat: Any) -> Any:
        """The cotangent of ``args`` (as the solver was given it) from a flat vector."""
        parts: list[Any] = [NoTangent()] * len(self.args)
        for i, piece in zip(self.where, self.pieces(flat), strict=True):
            parts[i] = proj(self.args[i], np.reshape(piece, np.shape(self.args[i])))
        if not self.is_tuple:
            return parts[0] if parts else NoTangent()
        return TupleTangent(*parts)

    def flat(self, cts: tuple[Any, ...]) -> Any:
        """One flat vector from per-argument cotangents (or tangents) of ``args``."""
        return np.concatenate([np.ravel(dense(cts[i], self.args[i])) for i in self.where] + [np.zeros(0)])

    def flat_tangent(self, argsdot: Any) -> Any:
        """The flat vector of a tangent of ``args`` (a zero, a tuple or a structural tangent)."""
        if isinstance(argsdot, AbstractZero) or argsdot is None:
            return np.zeros(self.size)
        if isinstance(argsdot, Tangent):
            argsdot = argsdot.backing
        return self.flat(tuple(argsdot) if self.is_tuple else (argsdot,))

    def tangents(self, flat: Any) -> tuple[Any, ...]:
        """Per-argument tangents of ``args`` from a flat vector (``NoTangent()`` for the others)."""
        parts: list[Any] = [NoTangent()] * len(self.args)
        for i, piece in zip(self.where, self.pieces(flat), strict=True):
            parts[i] = np.reshape(piece, np.shape(self.args[i])) if np.ndim(self.args[i]) else float(piece[0])
        return tuple(parts)


class UserFunction:
    """``f(*before, x, *after, *args)``: the user's function of a flat float vector ``x`` (and of
    the flat parameter vector), differentiated by the AD system behind ``config``.

    ``before``/``after`` are the fixed arguments around ``x`` (a solver's time ``t``, for one).
    """

    def __init__(self, config: RuleConfig, f: Any, like: Any, params: Params) -> None:
        self.config, self.f, self.like, self.params = config, f, like, params

    def _call_args(self, x: Any, before: tuple[Any, ...], after: tuple[Any, ...]) -> tuple[Any, ...]:
        xs = np.reshape(x, np.shape(self.like)) if np.ndim(self.like) else float(np.ravel(x)[0])
        return (*before, xs, *after, *self.params.args)

    def value(self, x: Any, before: tuple[Any, ...] = (), after: tuple[Any, ...] = ()) -> Any:
        return np.ravel(np.asarray(self.f(*self._call_args(x, before, after)), dtype=float))

    def vjp(self, x: Any, ybar: Any, before: tuple[Any, ...] = (), after: tuple[Any, ...] = ()
            ) -> tuple[Any, Any, Any, tuple[Any, ...]]:
        """``(f, xbar, paramsbar, fixedbars)``: the value (flat), the cotangents of ``x`` and of the
        parameters (flat), and those of the fixed arguments as the AD system gave them."""
        primals = self._call_args(x, before, after)
        y, back = rrule_via_ad(self.config, self.f, *primals)
        cts = back(_like_output(y, ybar))[1:]
        k = len(before)
        return (np.ravel(np.asarray(y, dtype=float)), np.ravel(dense(cts[k], primals[k])),
                self.params.flat(cts[k + 1 + len(after):]), (*cts[:k], *cts[k + 1:k + 1 + len(after)]))

    def jvp(self, x: Any, xdot: Any, pdot: Any, before: tuple[Any, ...] = (),
            after: tuple[Any, ...] = ()) -> tuple[Any, Any]:
        """``(f, fdot)`` (flat) along ``xdot`` and the flat parameter tangent ``pdot``."""
        primals = self._call_args(x, before, after)
        xs = primals[len(before)]
        tangents = (NoTangent(), *(ZeroTangent() for _ in before),
                    np.reshape(xdot, np.shape(xs)) if np.ndim(xs) else float(np.ravel(xdot)[0]),
                    *(ZeroTangent() for _ in after), *self.params.tangents(pdot))
        y, ydot = frule_via_ad(self.config, tangents, self.f, *primals)
        return np.ravel(np.asarray(y, dtype=float)), np.ravel(dense(ydot, y))


def field(t: Any, name: str) -> Any:
    """Entry ``name`` of a cotangent of a SciPy result object (``OptimizeResult``, ``OdeResult``,
    ``RootResults``), or ``None`` for a zero."""
    if isinstance(t, Tangent):
        t = t.backing
    if isinstance(t, dict):
        t = t.get(name)
    elif isinstance(t, tuple):  # not a cotangent of a result object
        return None
    t = unthunk(t)
    return None if t is None or isinstance(t, AbstractZero) else t


def check_fields(solver: str, result: Any, t: Any, differentiated: tuple[str, ...],
                 stationary: tuple[str, ...] = ()) -> None:
    """Refuse a cotangent of a float field of ``result`` the rule does not differentiate (the
    solver's internals: ``fjac``, ``hess_inv``, ``sol``...) rather than treat it as zero.
    ``stationary`` fields are zero at the solution (a root's residual), and so is their
    derivative; integer fields (counts, status) have none."""
    backing = t.backing if isinstance(t, Tangent) else t
    if not isinstance(backing, dict):
        return
    values = result if isinstance(result, dict) else vars(result)
    for name, ct in backing.items():
        if name in differentiated or name in stationary or ct is None or isinstance(ct, AbstractZero):
            continue
        value = values.get(name)
        if isinstance(value, (float, np.floating, np.ndarray)) and np.asarray(value).dtype.kind == "f":
            raise NotImplementedError(
                f"the rule for scipy.{solver} differentiates {', '.join(differentiated)} of the "
                f"result, not its field {name!r} (the solver's own working); use only those")


def _like_output(y: Any, ybar: Any) -> Any:
    """``ybar`` (flat) in the form of the user's output: a float, a list or an array."""
    if isinstance(y, (list, tuple)):
        return type(y)(float(v) for v in np.ravel(ybar))
    if np.ndim(y) == 0:
        return float(np.ravel(ybar)[0])
    return np.reshape(ybar, np.shape(y))
