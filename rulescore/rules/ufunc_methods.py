"""Rules for the methods of NumPy's differentiable binary ufuncs: ``reduce``, ``accumulate``,
``reduceat`` and ``outer`` (``np.multiply.reduce(x)``, ``np.maximum.accumulate(x)``,
``np.subtract.outer(a, b)``).

They are built from the ufunc's own rules (:mod:`rulescore.rules.ufuncs`), so every binary ufunc
with a rule gets them and they follow its conventions (ties of ``maximum`` split evenly between
the two arguments of each step, ``power``'s edges, complex numbers):

- ``reduce`` and ``accumulate`` fold the rule along the axis: ``acc = f(acc, x[k])``. The
  result is NumPy's own (``np.add.reduce`` sums pairwise); the pullback runs the fold's
  pullbacks backwards. ``axis`` (an int, a tuple or ``None``), ``keepdims`` and ``initial`` are
  supported; ``out=``, ``where=`` and ``dtype=`` are refused with a ``TypeError`` naming the
  method. ``np.add.reduce`` keeps its own rule (:mod:`rulescore.rules.reductions`). Where NumPy's
  own ``reduce`` is not the fold (NumPy 2.4's AVX-512 ``power`` and ``arctan2``), the rules
  raise an ``ArithmeticError`` that says so: no derivative would match what NumPy returns.
- ``reduceat`` is one ``reduce`` per slice (``x[i:j]``, or ``x[i]`` where ``j <= i``), each
  differentiated by that ``reduce``'s rule (``np.add.reduceat`` by ``np.add.reduce``'s).
- ``outer`` is the ufunc applied to ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``.

``ufunc.at`` writes into its first argument and returns ``None``, which no rule can express:
its functional form :func:`ufunc_at` (``ufunc_at(np.add, a, i, b)`` is ``a`` after
``np.add.at(a, i, b)``, ``a`` unchanged) has the rules, for every ufunc with a rule (unary ones
too: ``np.negative.at(a, i)``). NumPy's ``at`` is unbuffered: a position indexed twice is
updated twice, in order. The rules replay that in rounds (the k-th visit of every position in
round k, so no round writes a position twice) with the ufunc's own rules; an engine turns the
in-place call into the functional one (:data:`rulescore.rules.writes.IN_PLACE`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from rulescore import RulePair, frule, rrule
from rulescore._linear import dense_tangent
from rulescore._projection import project, unbroadcast
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.ufuncs import RULES as UFUNC_RULES

__all__ = ["AT_UFUNCS", "BINARY_UFUNCS", "RULES", "reduce_is_a_fold", "ufunc_at"]

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
#: The ufuncs with a differentiable rule and one output, unary or binary: their ``at`` differentiates.
AT_UFUNCS: tuple[np.ufunc, ...] = tuple(
    p.primal for p in UFUNC_RULES
    if isinstance(p.primal, np.ufunc) and p.primal.nin in (1, 2) and p.primal.nout == 1 and p.kind == "rule"
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
    """``x`` with the folded axes moved to the front and merged into one; the folded axes."""
    nd = np.ndim(x)
    axes = list(range(nd)) if axis is None else [int(a) % nd for a in np.atleast_1d(axis)]
    moved = np.moveaxis(x, axes, list(range(len(axes))))
    rest = np.shape(moved)[len(axes):]
    return np.reshape(moved, (-1, *rest)), axes


#: The values ``reduce_is_a_fold`` folds: every binary ufunc with a rule is smooth there.
_PROBE = np.array([0.5, 0.75, 1.25, 1.5, 1.75])


@functools.lru_cache(maxsize=64)  # one entry per binary ufunc
def reduce_is_a_fold(uf: np.ufunc) -> bool:
    """Whether ``uf.reduce`` computes ``acc = uf(acc, x[k])`` along the axis here, as NumPy
    documents. NumPy 2.4's AVX-512 loops of ``power`` and ``arctan2`` do not when called as a
    reduction (``np.power.reduce([a, b, c])`` gives ``a ** c``), so on such a CPU no derivative
    matches what they return. Probed once per ufunc.

    Example:
        >>> import numpy as np
        >>> reduce_is_a_fold(np.multiply)
        True
    """
    return bool(np.isclose(uf.reduce(_PROBE), functools.reduce(uf, _PROBE), rtol=1e-12, atol=0.0))


def _refuse_broken_reduce(uf: np.ufunc) -> None:
    if not reduce_is_a_fold(uf):
        name = f"numpy.{uf.__name__}"
        raise ArithmeticError(
            f"{name}.reduce: NumPy {np.__version__} on this CPU does not compute the fold it documents "
            f"({name}.reduce({_PROBE.tolist()}) gives {float(uf.reduce(_PROBE))!r}, not "
            f"{float(functools.reduce(uf, _PROBE))!r}), so no derivative matches its result; write the "
            f"fold as a loop (acc = {name}(acc, x[k])) or functools.reduce({name}, x)")


def _folding(method: str, uf: np.ufunc, params: tuple[str, ...], x: Any, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any], Any, list[int]]:
    """``uf.<method>(x, ...)``, its bound parameters, ``x`` with the folded axes first
    (:func:`_front`) and those axes: what every rule of ``reduce`` and ``accumulate`` starts from.
    A ``reduce`` NumPy computes wrongly on this machine is refused (:func:`reduce_is_a_fold`)."""
    if method == "reduce":
        _refuse_broken_reduce(uf)
    y = getattr(uf, method)(x, *args, **kwargs)
    p = _bind(method, uf, params, args, kwargs, 0)
    xm, axes = _front(x, p["axis"])
    return y, p, xm, axes


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
    (``gbar`` of length ``n``, zeros where a running value is not an output). The pullbacks
    keep the rule contract: a zero cotangent gives zeros."""
    bars: list[Any] = [_ZT] * n
    g: Any = _ZT
    offset = 0 if with_initial else 1
    for k in range(n - 1, -1, -1):
        g = g + gbar[k]
        if k < offset:
            bars[k] = g
        else:
            _, g, bars[k] = backs[k - offset](g)
    return bars


def _assemble(x: Any, bars: list[Any], axes: list[int], xm: Any) -> Any:
    dense = [dense_tangent(xm[k], b) for k, b in enumerate(bars)]
    stacked = np.stack(dense) if dense else np.zeros(np.shape(xm))
    moved_shape = tuple(np.shape(x)[a] for a in axes) + np.shape(xm)[1:]
    front = np.reshape(stacked, moved_shape)
    return project(x, np.moveaxis(front, list(range(len(axes))), axes))


def _fold_frule(method: str, uf: np.ufunc, params: tuple[str, ...]) -> Any:
    """The frule of ``uf.reduce`` or ``uf.accumulate``: the tangent pushed through the fold with
    ``uf``'s frule; ``reduce`` gives the last running tangent, ``accumulate`` all of them."""

    def fold_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        y, p, xm, axes = _folding(method, uf, params, x, args, kwargs)
        if np.shape(xm)[0] == 0:
            return y, _ZT
        dm, _ = _front(dense_tangent(x, tangents[1]), p["axis"])
        initial = p.get("initial", _NOVALUE)
        acc, dot, start = (xm[0], dm[0], 1) if initial is _NOVALUE else (initial, _ZT, 0)
        dots = [dot] * start
        for k in range(start, np.shape(xm)[0]):
            acc, dot = frule((_NT, dot, dm[k]), uf, acc, xm[k])
            dots.append(dense_tangent(acc, dot))
        ydot = dots[-1] if method == "reduce" else np.moveaxis(np.stack(dots), 0, axes[0])
        return y, project(y, np.reshape(ydot, np.shape(y)))

    fold_frule.__name__ = fold_frule.__qualname__ = f"{uf.__name__}_{method}_frule"
    return fold_frule


def _fold_rrule(method: str, uf: np.ufunc, params: tuple[str, ...]) -> Any:
    """The rrule of ``uf.reduce`` or ``uf.accumulate``: the fold's pullbacks run backwards from
    the cotangent of the last running value (``reduce``) or of every one (``accumulate``)."""

    def fold_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        y, p, xm, axes = _folding(method, uf, params, x, args, kwargs)
        initial = p.get("initial", _NOVALUE)
        n = np.shape(xm)[0]
        _, backs = _fold(uf, xm, initial) if n else ([], [])

        def fold_pullback(ybar: Any) -> Any:
            if method == "reduce":
                gbar: list[Any] = [_ZT] * n
                if n:
                    gbar[-1] = np.reshape(ybar, np.shape(xm)[1:])
            else:
                gm = np.moveaxis(ybar, axes[0], 0)
                gbar = [gm[k] for k in range(n)]
            bars = _unfold(backs, gbar, n, initial is not _NOVALUE)
            return (_NT, _assemble(x, bars, axes, xm), *((_NT,) * len(args)))

        fold_pullback.__name__ = fold_pullback.__qualname__ = f"{uf.__name__}_{method}_pullback"
        return y, fold_pullback

    fold_rrule.__name__ = fold_rrule.__qualname__ = f"{uf.__name__}_{method}_rrule"
    return fold_rrule


def _fold_rules(method: str, uf: np.ufunc) -> tuple[Any, Any]:
    """The rrule and frule of ``uf.reduce`` or ``uf.accumulate`` (``method``)."""
    params = _REDUCE_PARAMS if method == "reduce" else _ACCUMULATE_PARAMS
    return _fold_rrule(method, uf, params), _fold_frule(method, uf, params)


def _outer_rules(uf: np.ufunc) -> tuple[Any, Any]:
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
        adot = _column(dense_tangent(a, tangents[1]), b)
        return frule((_NT, adot, tangents[2]), uf, _column(a, b), b, **kwargs)

    outer_rrule.__name__ = outer_rrule.__qualname__ = f"{uf.__name__}_outer_rrule"
    outer_frule.__name__ = outer_frule.__qualname__ = f"{uf.__name__}_outer_frule"
    return outer_rrule, outer_frule


# -- reduceat ----------------------------------------------------------------------------------------


def _segments(uf: np.ufunc, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, list[slice]]:
    """The axis of ``uf.reduceat(x, indices, axis)`` and the slice of ``x`` each output reduces
    (``x[i:j]`` for ``i < j``, else ``x[i:i + 1]``; the last one to the end)."""
    p = dict(zip(("indices", "axis", "dtype", "out"), args, strict=False))
    p.update(kwargs)
    for key in ("dtype", "out"):
        if p.get(key) is not None:
            raise TypeError(f"numpy.{uf.__name__}.reduceat: {key}= is not supported under differentiation")
    axis = int(p.get("axis", 0)) % max(np.ndim(x), 1)
    n = np.shape(x)[axis]
    starts = [int(i) % n if int(i) < 0 else int(i) for i in np.ravel(p["indices"])]
    ends = [*starts[1:], n]
    return axis, [slice(i, j) if i < j else slice(i, i + 1) for i, j in zip(starts, ends, strict=True)]


def _take(x: Any, axis: int, where: slice) -> Any:
    return x[(slice(None),) * axis + (where,)]


def _placed(part: Any, axis: int, where: slice, shape: tuple[int, ...]) -> Any:
    """``part`` (the cotangent of ``x[where]`` along ``axis``) in a zero array of ``shape``."""
    def zeros(size: int) -> Any:
        return np.zeros(shape[:axis] + (size,) + shape[axis + 1:], dtype=np.result_type(part, float))
    start, stop = where.indices(shape[axis])[:2]
    return np.concatenate([zeros(start), part, zeros(shape[axis] - stop)], axis=axis)


def _reduceat_rules(uf: np.ufunc) -> tuple[Any, Any]:
    """``uf.reduceat``: each output is ``uf.reduce`` of one slice, differentiated by that rule."""

    def reduceat_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        axis, pieces = _segments(uf, x, args, kwargs)
        y = uf.reduceat(x, *args, **kwargs)
        backs = [rrule(uf.reduce, _take(x, axis, where), axis=axis)[1] for where in pieces]

        def reduceat_pullback(ybar: Any) -> Any:
            shape = np.shape(x)
            parts = [_placed(dense_tangent(_take(x, axis, where), back(np.take(ybar, k, axis=axis))[1]),
                             axis, where, shape)
                     for k, (back, where) in enumerate(zip(backs, pieces, strict=True))]
            return (_NT, project(x, functools.reduce(np.add, parts)), *((_NT,) * len(args)))

        reduceat_pullback.__name__ = reduceat_pullback.__qualname__ = f"{uf.__name__}_reduceat_pullback"
        return y, reduceat_pullback

    def reduceat_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        axis, pieces = _segments(uf, x, args, kwargs)
        y = uf.reduceat(x, *args, **kwargs)
        xdot = dense_tangent(x, tangents[1])
        dots = [dense_tangent(piece, frule((_NT, _take(xdot, axis, where)), uf.reduce, piece, axis=axis)[1])
                for where in pieces for piece in (_take(x, axis, where),)]
        return y, project(y, np.stack(dots, axis=axis))

    reduceat_rrule.__name__ = reduceat_rrule.__qualname__ = f"{uf.__name__}_reduceat_rrule"
    reduceat_frule.__name__ = reduceat_frule.__qualname__ = f"{uf.__name__}_reduceat_frule"
    return reduceat_rrule, reduceat_frule


# -- ufunc.at ----------------------------------------------------------------------------------------


def ufunc_at(ufunc: np.ufunc, a: Any, indices: Any, *b: Any) -> np.ndarray:
    """``a`` after ``ufunc.at(a, indices, *b)``, as a new array (``a`` is not changed): the
    functional form of NumPy's unbuffered in-place ``at``, whose rules are here.

    Example:
        >>> import numpy as np
        >>> ufunc_at(np.add, np.zeros(3), [0, 0, 2], np.array([1.0, 2.0, 5.0]))
        array([3., 0., 5.])
    """
    out = np.array(a, copy=True)
    ufunc.at(out, indices, *b)
    return out


class _AtRounds:
    """Where ``ufunc.at(a, indices, *b)`` goes: the flat position of each visit (C order of
    ``a[indices]``), the visits of each round (round k: every position's k-th visit), and each
    of ``b`` broadcast to the visits and flattened."""

    def __init__(self, a: Any, indices: Any, b: tuple[Any, ...]) -> None:
        shape = np.shape(a)
        visits = np.arange(math.prod(shape)).reshape(shape)[_plain_index(indices)]
        self.shape = np.shape(visits)
        flat = self.flat = np.ravel(visits)
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        first = np.ones(flat.size, dtype=bool)
        first[1:] = ranked[1:] != ranked[:-1]
        start = np.maximum.accumulate(np.where(first, np.arange(flat.size), 0)) if flat.size else first
        visit = np.empty(flat.size, dtype=np.intp)
        visit[order] = np.arange(flat.size) - start
        self.rounds = [np.flatnonzero(visit == k) for k in range(int(visit.max(initial=-1)) + 1)]
        self.b = [np.ravel(np.broadcast_to(v, self.shape)) for v in b]


def _plain_index(indices: Any) -> Any:
    """``indices`` as NumPy's ``at`` reads it: a list is an integer array, a tuple one per axis."""
    return np.asarray(indices) if isinstance(indices, list) else indices


def _refuse_at(ufunc: np.ufunc) -> TypeError:
    return TypeError(f"numpy.{ufunc.__name__}.at has no derivative here: numpy.{ufunc.__name__} has "
                     "no rule for these arguments (register one), or compute the update without "
                     "`at` (np.where, indexing)")


def ufunc_at_rrule(ufunc: np.ufunc, a: Any, indices: Any, *b: Any) -> Any:
    y = ufunc_at(ufunc, a, indices, *b)
    at = _AtRounds(a, indices, b)
    current = np.array(a, copy=True).reshape(-1)
    backs = []
    for visits in at.rounds:
        p = at.flat[visits]
        step = rrule(ufunc, current[p], *(v[visits] for v in at.b))
        if step is None:
            raise _refuse_at(ufunc)
        current[p], back = step
        backs.append(back)

    def ufunc_at_pullback(ybar: Any) -> Any:
        g = np.array(ybar, dtype=np.result_type(ybar, np.float64), copy=True).reshape(-1)
        bbars = [np.zeros(at.flat.size, dtype=g.dtype) for _ in b]
        for visits, back in zip(reversed(at.rounds), reversed(backs), strict=True):
            p = at.flat[visits]
            _, abar, *vbars = back(g[p])
            g[p] = dense_tangent(g[p], abar)
            for bbar, vbar in zip(bbars, vbars, strict=True):
                bbar[visits] = dense_tangent(bbar[visits], vbar)
        b_cts = (project(v, unbroadcast(np.reshape(bbar, at.shape), np.shape(v)))
                 if np.result_type(v).kind in "fc" else _NT for v, bbar in zip(b, bbars, strict=True))
        return (_NT, _NT, project(a, np.reshape(g, np.shape(a))), _NT, *b_cts)

    return y, ufunc_at_pullback


def ufunc_at_frule(tangents: Any, ufunc: np.ufunc, a: Any, indices: Any, *b: Any) -> Any:
    y = ufunc_at(ufunc, a, indices, *b)
    at = _AtRounds(a, indices, b)
    current = np.array(a, copy=True).reshape(-1)
    dtype = np.result_type(y, np.float64)
    dot = np.array(dense_tangent(a, tangents[2]), dtype=dtype, copy=True).reshape(-1)
    bdots = [np.ravel(np.broadcast_to(dense_tangent(v, t), at.shape))
             for v, t in zip(b, tangents[4:], strict=True)]
    for visits in at.rounds:
        p = at.flat[visits]
        step = frule((_NT, dot[p], *(d[visits] for d in bdots)), ufunc, current[p],
                     *(v[visits] for v in at.b))
        if step is None:
            raise _refuse_at(ufunc)
        current[p] = step[0]
        dot[p] = dense_tangent(step[0], step[1])
    return y, project(y, np.reshape(dot, np.shape(y)))


#: ``reduce``/``accumulate`` need a ufunc whose output can be its first input: not ``ldexp``
#: (float, int) -> float; ``add.reduce`` has its own rule.
_FOLDABLE = tuple(uf for uf in BINARY_UFUNCS if uf is not np.ldexp)

RULES: tuple[RulePair, ...] = (
    *(RulePair(uf.reduce, *_fold_rules("reduce", uf), wrt=(0,)) for uf in _FOLDABLE if uf is not np.add),
    *(RulePair(uf.accumulate, *_fold_rules("accumulate", uf), wrt=(0,)) for uf in _FOLDABLE),
    *(RulePair(uf.reduceat, *_reduceat_rules(uf), wrt=(0,)) for uf in _FOLDABLE),
    *(RulePair(uf.outer, *_outer_rules(uf), wrt=(0, 1)) for uf in BINARY_UFUNCS),
    RulePair(ufunc_at, ufunc_at_rrule, ufunc_at_frule, wrt=(1, 3)),
)
