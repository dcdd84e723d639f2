"""Rules for the methods of NumPy's differentiable binary ufuncs: ``reduce``, ``accumulate`` and
``outer`` (``np.multiply.reduce(x)``, ``np.maximum.accumulate(x)``, ``np.subtract.outer(a, b)``).

They are built from the ufunc's own rules (:mod:`rulescore.rules.ufuncs`), so every binary ufunc
with a rule gets them and they follow its conventions (ties of ``maximum`` split evenly between
the two arguments of each step, ``power``'s edges, complex numbers):

- ``reduce`` and ``accumulate`` fold the rule along the axis: ``acc = f(acc, x[k])``. The
  result is NumPy's own (``np.add.reduce`` sums pairwise); the pullback runs the fold's
  pullbacks backwards. ``axis`` (an int, a tuple or ``None``), ``keepdims`` and ``initial`` are
  supported; ``out=``, ``where=`` and ``dtype=`` are refused with a ``TypeError`` naming the
  method. ``np.add.reduce`` keeps its own rule (:mod:`rulescore.rules.reductions`).
- ``outer`` is the ufunc applied to ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``.

``ufunc.at`` writes into its first argument and returns ``None``, which no rule can express:
its rules refuse with a ``TypeError`` that names the method and shows the functional form (for
``np.add.at(a, i, b)`` on a vector: ``a = a + (i[:, None] == np.arange(len(a))).T @ b``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._registry import frule, rrule
from rulescore._rule_pair import RulePair
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent
from rulescore.rules.ufuncs import RULES as UFUNC_RULES

__all__ = ["BINARY_UFUNCS", "RULES"]

_NT = NoTangent()
_ZT = ZeroTangent()
_NOVALUE: Any = getattr(np, "_NoValue", object())
_REDUCE_PARAMS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_ACCUMULATE_PARAMS = ("axis", "dtype", "out")

#: The binary ufuncs with a differentiable rule (their methods get rules here).
BINARY_UFUNCS: tuple[np.ufunc, ...] = tuple(
    p.primal for p in UFUNC_RULES
    if isinstance(p.primal, np.ufunc) and p.primal.nin == 2 and p.primal.nout == 1 and p.kind == "rule"
)


def _bind(method: str, uf: np.ufunc, params: tuple[str, ...], args: tuple[Any, ...],
          kwargs: dict[str, Any], axis_default: Any) -> dict[str, Any]:
    name = f"numpy.{uf.__name__}.{method}"
    if len(args) > len(params):
        raise TypeError(f"{name}() takes at most {len(params) + 1} positional arguments")
    p = dict(zip(params, args, strict=False))
    p.update(kwargs)
    for key, why in (("out", "it writes into an existing array"), ("dtype", "cast the input instead")):
        if p.get(key) is not None:
            raise TypeError(f"{name}: {key}= is not supported under differentiation ({why})")
    if p.get("where", True) is not True:
        raise TypeError(f"{name}: where= is not supported under differentiation; select with np.where")
    p.setdefault("axis", axis_default)
    return p


def _front(x: Any, axis: Any) -> tuple[Any, list[int]]:
    """``x`` with the reduced axes moved to the front and merged into one; the reduced axes."""
    nd = np.ndim(x)
    axes = list(range(nd)) if axis is None else [int(a) % nd for a in np.atleast_1d(axis)]
    moved = np.moveaxis(x, axes, list(range(len(axes))))
    rest = np.shape(moved)[len(axes):]
    return np.reshape(moved, (-1, *rest)), axes


def _fold(uf: np.ufunc, xm: Any, initial: Any) -> tuple[list[Any], list[Any]]:
    """The running values and the pullbacks of ``acc = uf(acc, xm[k])``."""
    accs, backs = [], []
    start = 0
    acc = initial
    if initial is _NOVALUE:
        acc, start = xm[0], 1
    for k in range(start, np.shape(xm)[0]):
        acc, back = rrule(uf, acc, xm[k])
        accs.append(acc)
        backs.append(back)
    return accs, backs


def _unfold(backs: list[Any], gbar: list[Any], n: int, with_initial: bool) -> list[Any]:
    """Cotangents of the entries ``xm[k]`` given those of the running values ``gbar[k]``
    (``gbar`` of length ``n``; entries that are ``None`` are zero)."""
    bars: list[Any] = [_ZT] * n
    g: Any = _ZT
    offset = 0 if with_initial else 1
    for k in range(n - 1, -1, -1):
        if gbar[k] is not None:
            g = gbar[k] if isinstance(g, AbstractZero) else g + gbar[k]
        if k < offset:
            bars[k] = g
            continue
        if isinstance(g, AbstractZero):
            continue
        _, g, bars[k] = backs[k - offset](g)
    return bars


def _assemble(x: Any, bars: list[Any], axes: list[int], xm_shape: tuple[int, ...]) -> Any:
    dense = [np.zeros(xm_shape[1:]) if isinstance(b, AbstractZero) else b for b in bars]
    stacked = np.stack(dense) if dense else np.zeros(xm_shape)
    moved_shape = tuple(np.shape(x)[a] for a in axes) + xm_shape[1:]
    front = np.reshape(stacked, moved_shape)
    return project(x, np.moveaxis(front, list(range(len(axes))), axes))


def _reduce_rules(uf: np.ufunc) -> RulePair:
    method = uf.reduce

    def reduce_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        y = method(x, *args, **kwargs)
        p = _bind("reduce", uf, _REDUCE_PARAMS, args, kwargs, 0)
        xm, axes = _front(x, p["axis"])
        initial = p.get("initial", _NOVALUE)
        n = np.shape(xm)[0]
        if n == 0:
            return y, lambda ybar: (_NT, project(x, np.zeros(np.shape(x))), *((_NT,) * len(args)))
        _, backs = _fold(uf, xm, initial)
        rest_shape = np.shape(xm)[1:]

        def reduce_pullback(ybar: Any) -> Any:
            gbar: list[Any] = [None] * n
            gbar[-1] = np.reshape(ybar, rest_shape)
            bars = _unfold(backs, gbar, n, initial is not _NOVALUE)
            return (_NT, _assemble(x, bars, axes, np.shape(xm)), *((_NT,) * len(args)))

        reduce_pullback.__name__ = reduce_pullback.__qualname__ = f"{uf.__name__}_reduce_pullback"
        return y, reduce_pullback

    def reduce_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        y = method(x, *args, **kwargs)
        p = _bind("reduce", uf, _REDUCE_PARAMS, args, kwargs, 0)
        xdot = tangents[1]
        xm, _ = _front(x, p["axis"])
        if isinstance(xdot, AbstractZero) or np.shape(xm)[0] == 0:
            return y, _ZT
        dm, _ = _front(dense_tangent(x, xdot), p["axis"])
        initial = p.get("initial", _NOVALUE)
        acc, dot, start = (xm[0], dm[0], 1) if initial is _NOVALUE else (initial, _ZT, 0)
        for k in range(start, np.shape(xm)[0]):
            acc, dot = frule((_NT, dot, dm[k]), uf, acc, xm[k])
        if isinstance(dot, AbstractZero):
            return y, _ZT
        return y, project(y, np.reshape(dot, np.shape(y)))

    reduce_rrule.__name__ = reduce_rrule.__qualname__ = f"{uf.__name__}_reduce_rrule"
    reduce_frule.__name__ = reduce_frule.__qualname__ = f"{uf.__name__}_reduce_frule"
    return RulePair(method, reduce_rrule, reduce_frule)


def _accumulate_rules(uf: np.ufunc) -> RulePair:
    method = uf.accumulate

    def accumulate_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        y = method(x, *args, **kwargs)
        p = _bind("accumulate", uf, _ACCUMULATE_PARAMS, args, kwargs, 0)
        axis = int(p["axis"]) % max(np.ndim(x), 1)
        xm = np.moveaxis(x, axis, 0)
        n = np.shape(xm)[0]
        _, backs = _fold(uf, xm, _NOVALUE) if n else ([], [])

        def accumulate_pullback(ybar: Any) -> Any:
            gm = np.moveaxis(ybar, axis, 0)
            bars = _unfold(backs, [gm[k] for k in range(n)], n, False)
            return (_NT, _assemble(x, bars, [axis], np.shape(xm)), *((_NT,) * len(args)))

        accumulate_pullback.__name__ = accumulate_pullback.__qualname__ = f"{uf.__name__}_accumulate_pullback"
        return y, accumulate_pullback

    def accumulate_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        y = method(x, *args, **kwargs)
        p = _bind("accumulate", uf, _ACCUMULATE_PARAMS, args, kwargs, 0)
        xdot = tangents[1]
        axis = int(p["axis"]) % max(np.ndim(x), 1)
        xm = np.moveaxis(x, axis, 0)
        if isinstance(xdot, AbstractZero) or np.shape(xm)[0] == 0:
            return y, _ZT
        dm = np.moveaxis(dense_tangent(x, xdot), axis, 0)
        acc, dot = xm[0], dm[0]
        dots = [dot]
        for k in range(1, np.shape(xm)[0]):
            acc, dot = frule((_NT, dot, dm[k]), uf, acc, xm[k])
            dots.append(dense_tangent(acc, dot))
        return y, project(y, np.moveaxis(np.stack(dots), 0, axis))

    accumulate_rrule.__name__ = accumulate_rrule.__qualname__ = f"{uf.__name__}_accumulate_rrule"
    accumulate_frule.__name__ = accumulate_frule.__qualname__ = f"{uf.__name__}_accumulate_frule"
    return RulePair(method, accumulate_rrule, accumulate_frule)


def _outer_rules(uf: np.ufunc) -> RulePair:
    method = uf.outer

    def _column(a: Any, b: Any) -> Any:
        return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))

    def outer_rrule(a: Any, b: Any, **kwargs: Any) -> Any:
        y, back = rrule(uf, _column(a, b), b, **kwargs)

        def outer_pullback(ybar: Any) -> Any:
            _, abar, bbar = back(ybar)
            return _NT, project(a, np.reshape(dense_tangent(_column(a, b), abar), np.shape(a))), bbar

        outer_pullback.__name__ = outer_pullback.__qualname__ = f"{uf.__name__}_outer_pullback"
        return y, outer_pullback

    def outer_frule(tangents: Any, a: Any, b: Any, **kwargs: Any) -> Any:
        adot = tangents[1]
        if not isinstance(adot, AbstractZero):
            adot = _column(dense_tangent(a, adot), b)
        return frule((_NT, adot, tangents[2]), uf, _column(a, b), b, **kwargs)

    outer_rrule.__name__ = outer_rrule.__qualname__ = f"{uf.__name__}_outer_rrule"
    outer_frule.__name__ = outer_frule.__qualname__ = f"{uf.__name__}_outer_frule"
    return RulePair(method, outer_rrule, outer_frule)


def _at_rules(uf: np.ufunc) -> RulePair:
    method = uf.at
    name = f"numpy.{uf.__name__}.at"

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"{name}(a, indices, b) writes into a, which cannot be differentiated (the engine does not "
            "see the write): compute a new array instead; for np.add.at on a vector, "
            "onehot = (indices[:, None] == np.arange(len(a))); a = a + onehot.T @ b")

    def at_rrule(*args: Any, **kwargs: Any) -> Any:
        return refuse()

    def at_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        return refuse()

    at_rrule.__name__ = at_rrule.__qualname__ = f"{uf.__name__}_at_rrule"
    at_frule.__name__ = at_frule.__qualname__ = f"{uf.__name__}_at_frule"
    return RulePair(method, at_rrule, at_frule)


#: ``reduce``/``accumulate`` need a ufunc whose output can be its first input: not ``ldexp``
#: (float, int) -> float; ``add.reduce`` has its own rule.
_FOLDABLE = tuple(uf for uf in BINARY_UFUNCS if uf is not np.ldexp)

RULES: tuple[RulePair, ...] = (
    *(_reduce_rules(uf) for uf in _FOLDABLE if uf is not np.add),
    *(_accumulate_rules(uf) for uf in _FOLDABLE),
    *(_outer_rules(uf) for uf in BINARY_UFUNCS),
    *(_at_rules(uf) for uf in BINARY_UFUNCS),
)
