"""What the rules of SciPy's solvers (``odeint``, ``solve_ivp``, ``quad``, ``scipy.optimize``)
need of the user's function: its vector-Jacobian and Jacobian-vector products, from the AD
system running the rule (``rc.rrule_via_ad`` / ``rc.frule_via_ad`` through its
:class:`~rulescore.RuleConfig`), on flat float vectors the solvers can integrate or solve with.

The extra arguments a solver passes on (its ``args`` tuple) are split into the differentiable
ones (real floats and float arrays, lists of floats) and the others (integers, strings,
callables, ``None``), which get ``NoTangent()``.

Second derivatives run a solver rule's pullback (or frule) under the AD system again. So the
products here take the parameters as arguments (``args=``), and the rules pass them to the
solvers they call for adjoint and sensitivity problems through ``args`` as well, never in a
closure: the outer level then differentiates that solve with the same rule, parameters
included.

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
from rulescore._linear import dense_tangent
from rulescore._projection import ProjectTo
from rulescore._tangent import Tangent, tangent_type
from rulescore._tree import tree_flatten, tree_map
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.linalg import _entry, _given

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
    """A cotangent or tangent from an AD system (which may give a zero, or a tangent of a list
    entry by entry) as a float array shaped like ``like``."""
    return np.reshape(np.asarray(dense_tangent(like, ct), dtype=float), np.shape(like))


class Params:
    """The differentiable entries of a solver's ``args``, as one flat float vector.

    An entry is differentiable as a whole (a float, a float array, a list of floats), or holds
    differentiable leaves in a tree (tuples, lists, dicts, dataclasses, NamedTuples: ``args=([(W,
    b), ...],)`` for a network's layers); the flat vector runs over those, in order.

    Example:
        >>> import numpy as np
        >>> p = Params(([(np.ones(2), 3)], {"s": 0.5}))
        >>> p.size
        3
        >>> p.cotangent(np.array([1.0, 2.0, 3.0]))[1]
        Tangent[dict]({'s': 3.0})
    """

    def __init__(self, args: Any) -> None:
        self.is_tuple = isinstance(args, tuple)
        if not self.is_tuple:  # one argument, or none (solve_ivp's default args=None)
            args = tuple(a for a in (args,) if a is not None)
        self.args: tuple[Any, ...] = args
        #: per differentiable slot: (argument position, leaf position or None for the whole argument)
        self.slots: list[tuple[int, int | None]] = []
        self.trees: dict[int, tuple[list[Any], Any]] = {}
        for i, a in enumerate(self.args):
            if _differentiable(a):
                self.slots.append((i, None))
            elif isinstance(a, (tuple, list, dict)) or hasattr(a, "__dataclass_fields__"):
                leaves, unflatten = tree_flatten(a)
                found = [j for j, leaf in enumerate(leaves) if _differentiable(leaf)]
                if found:
                    self.trees[i] = (leaves, unflatten)
                    self.slots += [(i, j) for j in found]
        self.where = tuple(sorted({i for i, _ in self.slots}))
        # plain stand-ins for the differentiable entries (those may be traced by an outer level,
        # and the products run inside solvers, where such a level is not active)
        self.likes = [_plain_like(self._value(slot)) for slot in self.slots]
        sizes = [int(np.size(like)) for like in self.likes]
        self.bounds = np.cumsum([0, *sizes])
        self.size = int(self.bounds[-1])

    def _value(self, slot: tuple[int, int | None]) -> Any:
        i, j = slot
        return self.args[i] if j is None else self.trees[i][0][j]

    def pieces(self, flat: Any) -> list[Any]:
        return [flat[self.bounds[k]:self.bounds[k + 1]] for k in range(len(self.slots))]

    def _per_argument(self, flat: Any, whole: Any, zero: Any) -> list[Any]:
        """Per argument, its part of ``flat`` (``whole(value, plain stand-in, piece)`` per
        differentiable slot), in the argument's own structure, ``zero`` where nothing is
        differentiable."""
        parts: list[Any] = [zero] * len(self.args)
        leaves_of = {i: [zero] * len(leaves) for i, (leaves, _) in self.trees.items()}
        for (i, j), like, piece in zip(self.slots, self.likes, self.pieces(flat), strict=True):
            value = whole(self._value((i, j)), like, piece)
            if j is None:
                parts[i] = value
            else:
                leaves_of[i][j] = value
        for i, leaves in leaves_of.items():
            parts[i] = ProjectTo(self.args[i])(self.trees[i][1](leaves))
        return parts

    def cotangent(self, flat: Any) -> Any:
        """The cotangent of ``args`` (as the solver was given it) from a flat vector."""
        def whole(a: Any, like: Any, piece: Any) -> Any:
            return proj(a, np.reshape(piece, np.shape(a)))

        parts = self._per_argument(flat, whole, NoTangent())
        if not self.is_tuple:
            return parts[0] if parts else NoTangent()
        return TupleTangent(*parts)

    def flat(self, cts: tuple[Any, ...]) -> Any:
        """One flat vector from per-argument cotangents (or tangents) of ``args``."""
        out = []
        for (i, j), like in zip(self.slots, self.likes, strict=True):
            ct = cts[i] if j is None else tree_flatten(tree_map(lambda _, c: c, self.args[i], cts[i]))[0][j]
            out.append(np.ravel(dense(ct, like)))
        return np.concatenate([*out, np.zeros(0)])

    def flat_tangent(self, argsdot: Any) -> Any:
        """The flat vector of a tangent of ``args`` (a zero, a tuple or a structural tangent)."""
        if not self.is_tuple:
            return self.flat((argsdot,))
        return self.flat(tuple(_entry(argsdot, i) for i in range(len(self.args))))

    def tangents(self, flat: Any) -> tuple[Any, ...]:
        """Per-argument tangents of ``args`` from a flat vector (``NoTangent()`` for the others)."""
        def whole(a: Any, like: Any, piece: Any) -> Any:
            return np.reshape(piece, np.shape(like)) if np.ndim(like) else piece[0]

        return tuple(self._per_argument(flat, whole, NoTangent()))


def _plain_like(a: Any) -> Any:
    """Zeros in the form of a differentiable argument: an array, or nested lists for a list."""
    zeros = np.zeros(np.shape(a))
    return zeros.tolist() if isinstance(a, (list, tuple)) else zeros


class UserFunction:
    """``f(*before, x, *after, *args)``: the user's function of a flat float vector ``x`` (and of
    the flat parameter vector), differentiated by the AD system behind ``config``.

    ``before``/``after`` are the fixed arguments around ``x`` (a solver's time ``t``, for one);
    ``args`` replaces the parameters' values (a solver calling back with its own ``args``).
    """

    def __init__(self, config: RuleConfig, f: Any, like: Any, params: Params) -> None:
        self.config, self.f, self.shape, self.params = config, f, np.shape(like), params

    def _call_args(self, x: Any, before: tuple[Any, ...], after: tuple[Any, ...],
                   args: tuple[Any, ...] | None) -> tuple[Any, ...]:
        xs = np.reshape(x, self.shape) if self.shape else np.ravel(x)[0]
        return (*before, xs, *after, *(self.params.args if args is None else args))

    def value(self, x: Any, before: tuple[Any, ...] = (), after: tuple[Any, ...] = (),
              args: tuple[Any, ...] | None = None) -> Any:
        return np.ravel(np.asarray(self.f(*self._call_args(x, before, after, args)), dtype=float))

    def vjp(self, x: Any, ybar: Any, before: tuple[Any, ...] = (), after: tuple[Any, ...] = (),
            args: tuple[Any, ...] | None = None) -> tuple[Any, Any, Any, tuple[Any, ...]]:
        """``(f, xbar, paramsbar, fixedbars)``: the value (flat), the cotangents of ``x`` and of the
        parameters (flat), and those of the fixed arguments as the AD system gave them."""
        primals = self._call_args(x, before, after, args)
        y, back = rrule_via_ad(self.config, self.f, *primals)
        cts = back(_like_output(y, ybar))[1:]
        k = len(before)
        return (np.ravel(np.asarray(y, dtype=float)), np.ravel(dense(cts[k], primals[k])),
                self.params.flat(cts[k + 1 + len(after):]), (*cts[:k], *cts[k + 1:k + 1 + len(after)]))

    def jvp(self, x: Any, xdot: Any, pdot: Any, before: tuple[Any, ...] = (),
            after: tuple[Any, ...] = (), args: tuple[Any, ...] | None = None) -> tuple[Any, Any]:
        """``(f, fdot)`` (flat) along ``xdot`` and the flat parameter tangent ``pdot``."""
        primals = self._call_args(x, before, after, args)
        xs = primals[len(before)]
        tangents = (NoTangent(), *(ZeroTangent() for _ in before),
                    np.reshape(xdot, np.shape(xs)) if np.ndim(xs) else np.ravel(xdot)[0],
                    *(ZeroTangent() for _ in after), *self.params.tangents(pdot))
        y, ydot = frule_via_ad(self.config, tangents, self.f, *primals)
        return np.ravel(np.asarray(y, dtype=float)), np.ravel(dense(ydot, y))


def field(t: Any, name: str, like: Any) -> Any:
    """Entry ``name`` of a cotangent of a SciPy result object (``OptimizeResult``, ``OdeResult``,
    ``RootResults``) as a float array shaped like ``like`` (zeros where the entry is unused)."""
    return dense(_entry(t, 0, name), like)


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
        if name in differentiated or name in stationary or not _given(ct):
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
        return np.ravel(ybar)[0]
    return np.reshape(ybar, np.shape(y))
