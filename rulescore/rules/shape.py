"""Rules for NumPy's shape and structure functions: reshaping, joining, splitting, padding,
selecting, contractions (``dot``, ``tensordot``, ``einsum``...), ``np.array`` of nested lists,
``astype`` and the matching ``ndarray`` methods, plus a table of non-differentiable helpers.

Every entry has an rrule and an frule. Nearly every function here is linear (or multilinear) in
its array arguments, so the frule applies the function itself to the tangents and the pullback
is the transposed map, written with differentiable NumPy calls: the pullback of ``reshape`` is a
``reshape``, of ``transpose`` the inverse ``transpose``, of ``concatenate`` an ``np.split``, of
``pad`` a slice, of a contraction another contraction. Scatters are either mask products
(``triu``, ``diagonal``, ``trace``, ``where``, ``clip``) or :func:`take_adjoint`, a primitive of
this module whose own pullback is ``np.take``, so every pullback differentiates again.

Arguments that are shapes, axes, indices, orders or dtypes get ``NoTangent()``. Cotangents of
list and tuple arguments (``np.concatenate([a, b])``, ``np.array([x, y])``) are
``Tangent[list]`` / ``Tangent[tuple]`` with one entry per element; the cotangent of a list
output (``np.split``) may have zero entries.

Example:
    >>> import numpy as np, rulescore as rc
    >>> y, back = rc.rrule(np.concatenate, [np.ones(2), np.ones(1)])
    >>> back(np.array([1.0, 2.0, 3.0]))
    (NoTangent(), Tangent[list](array([1., 2.]), array([3.])))
    >>> rc.frule((None, np.ones((2, 3)), None, None), np.ndarray.reshape, np.zeros((2, 3)), 3, 2)[1].shape
    (3, 2)
    >>> rc.rrule(np.einsum, "ij,j->i", np.ones((2, 3)), np.arange(3.0))[1](np.ones(2))[2]
    array([[0., 1., 2.],
           [0., 1., 2.]])
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._arithmetic import is_zero
from rulescore._helpers import non_differentiable, scalar_rule
from rulescore._projection import project, unbroadcast
from rulescore._registry import frule, rrule
from rulescore._tangent import Tangent
from rulescore._thunks import unthunk
from rulescore._zeros import NoTangent, ZeroTangent

__all__ = ["NON_DIFFERENTIABLE", "RULES", "take_adjoint"]

_NO = NoTangent()
_NOVALUE: Any = getattr(np, "_NoValue", None)


# ----------------------------------------------------------------------------------------------
# small helpers (all pullback arithmetic below goes through np.* calls and operators)
# ----------------------------------------------------------------------------------------------
def _nots(n: int) -> tuple[Any, ...]:
    return (_NO,) * n


def _project(x: Any, dx: Any) -> Any:
    """``rc.project``, also for (nested) lists and tuples given one array for all their entries:
    the array is cut into entries with ``np.unstack`` (a differentiable rule of this module)."""
    if type(x) in (list, tuple) and not is_zero(unthunk(dx)) and not isinstance(dx, Tangent):
        dx = unthunk(dx)
        entries = list(dx) if isinstance(dx, (list, tuple)) else (list(np.unstack(dx)) if x else [])
        return project(x, [_project(v, e) for v, e in zip(x, entries, strict=True)])
    return project(x, dx)


def _shape(x: Any) -> tuple[int, ...]:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def _tangent_dtype(x: Any) -> np.dtype[Any]:
    """The dtype of the tangent space of the primal ``x`` (ints and bools get float64)."""
    dt = x.dtype if isinstance(x, (np.ndarray, np.generic)) else np.asarray(x).dtype
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _conj(x: Any) -> Any:
    """Complex conjugate that skips real values (arrays, NumPy scalars and Python numbers)."""
    if isinstance(x, (int, float)):
        return x
    dt = getattr(x, "dtype", None)
    if dt is not None and dt.kind != "c":
        return x
    return np.conj(x)


def _axis(axis: int, ndim: int) -> int:
    return int(axis) % ndim if ndim else 0


def _sum_to(dx: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``dx`` down to ``shape`` (the inverse of broadcasting), with differentiable calls."""
    dshape = _shape(dx)
    if dshape == shape:
        return dx
    extra = len(dshape) - len(shape)
    axes = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and dshape[extra + i] != 1
    )
    out = np.sum(dx, axis=axes) if axes else dx
    return np.reshape(out, shape)


def _zeros_like_tangent(x: Any) -> Any:
    """A dense zero in the tangent space of ``x`` (nested lists and tuples entry by entry)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_zeros_like_tangent(v) for v in x)
    return np.zeros(np.shape(x), dtype=_tangent_dtype(x))


def _entries(t: Any, n: int) -> list[Any]:
    """The ``n`` per-entry tangents of a tangent for a list or tuple (zeros stay zeros)."""
    t = unthunk(t)
    if is_zero(t):
        return [ZeroTangent()] * n
    entries = list(t.backing) if isinstance(t, Tangent) else list(t)
    if len(entries) != n:
        raise ValueError(f"tangent with {len(entries)} entries for a sequence of length {n}")
    return [unthunk(e) for e in entries]


def _dense(x: Any, t: Any) -> Any:
    """The tangent ``t`` of ``x`` with every zero replaced by dense zeros (for frules)."""
    t = unthunk(t)
    if is_zero(t):
        return _zeros_like_tangent(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_dense(v, e) for v, e in zip(x, _entries(t, len(x)), strict=True))
    if isinstance(x, np.ndarray) and isinstance(t, (np.generic, int, float, complex)):
        return np.asarray(t, dtype=_tangent_dtype(x))
    return t


def _dense_cotangents(ybar: Any, ys: Any) -> list[Any]:
    """Per-entry cotangents of a list/tuple output ``ys``, zeros made dense."""
    return [
        _zeros_like_tangent(y) if is_zero(e) else e
        for y, e in zip(ys, _entries(ybar, len(ys)), strict=True)
    ]


def _pack(xs: Any, pieces: list[Any]) -> Any:
    """The cotangent of a sequence argument from one cotangent per entry."""
    if isinstance(xs, np.ndarray):
        return project(xs, np.stack(pieces) if pieces else np.zeros(xs.shape, _tangent_dtype(xs)))
    return _project(xs, list(pieces))


def _order(order: Any, x: Any) -> Any:
    if order in ("C", "F"):
        return order
    return "F" if isinstance(x, np.ndarray) and np.isfortran(x) else "C"


def _tangent_of_output(y: Any, ydot: Any) -> Any:
    return ydot if is_zero(ydot) else _project(y, ydot)


# ----------------------------------------------------------------------------------------------
# rule builders
# ----------------------------------------------------------------------------------------------
Backward = Callable[..., Any]


def _first_arg(backward: Backward) -> Any:
    """Rule maker for ``f(x, *static)`` where only ``x`` is differentiable.

    ``backward(ybar, x, y, *args, **kwargs)`` returns the (unprojected) cotangent of ``x``; every
    other positional argument gets ``NoTangent()``.
    """

    def make(f: Any, name: str) -> Callable[..., Any]:
        def first_arg_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
            y = f(x, *args, **kwargs)

            def pullback(ybar: Any) -> Any:
                ybar = unthunk(ybar)
                if is_zero(ybar):
                    return (_NO, ZeroTangent(), *_nots(len(args)))
                return (_NO, _project(x, backward(ybar, x, y, *args, **kwargs)), *_nots(len(args)))

            pullback.__name__ = pullback.__qualname__ = f"{name}_pullback"
            return y, pullback

        return first_arg_rrule

    return make


def _linear_frule(*positions: int) -> Any:
    """Frule maker for ``f`` jointly linear in the arguments at ``positions``: ``f(tangents)``."""

    def make(f: Any, name: str) -> Callable[..., Any]:
        def linear_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
            y = f(*args, **kwargs)
            present = [p for p in positions if p < len(args)]
            if all(is_zero(unthunk(tangents[1 + p])) for p in present):
                return y, ZeroTangent()
            targs = list(args)
            for p in present:
                targs[p] = _dense(args[p], tangents[1 + p])
            return y, _tangent_of_output(y, f(*targs, **kwargs))

        return linear_frule

    return make


def _multilinear_frule(positions: Callable[[tuple[Any, ...]], list[int]]) -> Any:
    """Frule maker for ``f`` linear in each argument at ``positions(args)`` separately (a product):
    ``ydot = sum_i f(..., xdot_i, ...)``."""

    def make(f: Any, name: str) -> Callable[..., Any]:
        def multilinear_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
            y = f(*args, **kwargs)
            ydot: Any = ZeroTangent()
            for p in positions(args):
                t = unthunk(tangents[1 + p])
                if is_zero(t):
                    continue
                targs = list(args)
                targs[p] = _dense(args[p], t)
                term = f(*targs, **kwargs)
                ydot = term if is_zero(ydot) else ydot + term
            return y, _tangent_of_output(y, ydot)

        return multilinear_frule

    return make


def _custom(impl: Callable[..., Any]) -> Any:
    """Frule maker for an implementation written as ``impl(f, tangents, *args, **kwargs)``."""

    def make(f: Any, name: str) -> Callable[..., Any]:
        def custom_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
            return impl(f, tangents, *args, **kwargs)

        return custom_frule

    return make


def _custom_rrule(impl: Callable[..., Any]) -> Any:
    """Rrule maker for ``impl(f, *args, **kwargs) -> (y, pullback)``; names the pullback."""

    def make(f: Any, name: str) -> Callable[..., Any]:
        def custom_rrule(*args: Any, **kwargs: Any) -> Any:
            y, pullback = impl(f, *args, **kwargs)
            return y, _named(pullback, name)

        return custom_rrule

    return make


def _named(pullback: Callable[..., Any], name: str) -> Callable[..., Any]:
    pullback.__name__ = pullback.__qualname__ = f"{name}_pullback"
    return pullback


def _first_two(args: tuple[Any, ...]) -> list[int]:
    return [p for p in (0, 1) if p < len(args)]


# ----------------------------------------------------------------------------------------------
# backward maps of functions of one array (``backward(ybar, x, y, *args, **kwargs)``)
# ----------------------------------------------------------------------------------------------
def _reshape_back(ybar: Any, x: Any, y: Any, shape: Any = None, order: Any = "C", **kw: Any) -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def _method_reshape_back(ybar: Any, x: Any, y: Any, *shape: Any, order: Any = "C", **kw: Any) -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def _ravel_back(ybar: Any, x: Any, y: Any, order: Any = "C") -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def _same_shape_back(ybar: Any, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    """For maps that only add or drop unit axes, or copy: reshape back."""
    return np.reshape(ybar, _shape(x))


def _inverse_transpose(ybar: Any, x: Any, axes: Any) -> Any:
    if axes is None:
        return np.transpose(ybar)
    perm = [_axis(a, np.ndim(x)) for a in axes]
    return np.transpose(ybar, tuple(int(i) for i in np.argsort(perm)))


def _transpose_back(ybar: Any, x: Any, y: Any, axes: Any = None) -> Any:
    return _inverse_transpose(ybar, x, axes)


def _method_transpose_back(ybar: Any, x: Any, y: Any, *axes: Any) -> Any:
    if not axes or axes == (None,):
        return _inverse_transpose(ybar, x, None)
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        return _inverse_transpose(ybar, x, axes[0])
    return _inverse_transpose(ybar, x, axes)


def _swapaxes_back(ybar: Any, x: Any, y: Any, axis1: int, axis2: int) -> Any:
    return np.swapaxes(ybar, axis1, axis2)


def _moveaxis_back(ybar: Any, x: Any, y: Any, source: Any, destination: Any) -> Any:
    return np.moveaxis(ybar, destination, source)


def _broadcast_to_back(ybar: Any, x: Any, y: Any, shape: Any, subok: bool = False) -> Any:
    return _sum_to(ybar, _shape(x))


def _flip_back(ybar: Any, x: Any, y: Any, axis: Any = None) -> Any:
    return np.flip(ybar, axis)


def _fliplr_back(ybar: Any, x: Any, y: Any) -> Any:
    return np.fliplr(ybar)


def _flipud_back(ybar: Any, x: Any, y: Any) -> Any:
    return np.flipud(ybar)


def _rot90_back(ybar: Any, x: Any, y: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    return np.rot90(ybar, -k, axes)


def _roll_back(ybar: Any, x: Any, y: Any, shift: Any, axis: Any = None) -> Any:
    back = -shift if isinstance(shift, (int, np.integer)) else -np.asarray(shift)
    return np.roll(ybar, back, axis)


def _tile_back(ybar: Any, x: Any, y: Any, reps: Any) -> Any:
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shape = _shape(x)
    d = max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    interleaved = tuple(v for pair in zip(reps, shape, strict=True) for v in pair)
    summed = np.sum(np.reshape(ybar, interleaved), axis=tuple(range(0, 2 * d, 2)))
    return np.reshape(summed, _shape(x))


def _repeat_back(ybar: Any, x: Any, y: Any, repeats: Any, axis: Any = None) -> Any:
    shape = _shape(x)
    target: tuple[int, ...]
    if axis is None:
        n, ax, target = math.prod(shape), 0, (math.prod(shape),)
    else:
        ax = _axis(axis, len(shape))
        n, target = shape[ax], shape
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.ravel(repeats)[0])
        split = target[:ax] + (n, r) + target[ax + 1:]
        return np.reshape(np.sum(np.reshape(ybar, split), axis=ax + 1), shape)
    index = np.repeat(np.arange(n), repeats)
    return np.reshape(take_adjoint(ybar, index, target, ax), shape)


def _pad_widths(pad_width: Any, ndim: int) -> np.ndarray[Any, Any]:
    if isinstance(pad_width, dict):  # {axis: width or (before, after)}, other axes unpadded
        widths = np.zeros((ndim, 2), dtype=np.intp)
        for axis, w in pad_width.items():
            widths[_axis(axis, ndim)] = np.broadcast_to(np.asarray(w, dtype=np.intp), (2,))
        return widths
    return np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (ndim, 2))


_GATHER_PAD_MODES = ("edge", "wrap", "reflect", "symmetric")


def _pad_back(ybar: Any, x: Any, y: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    shape = _shape(x)
    if mode in ("constant", "empty"):
        widths = _pad_widths(pad_width, len(shape))
        index = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(widths, shape, strict=True))
        return ybar[index] if index else ybar
    if mode in _GATHER_PAD_MODES and kwargs.get("reflect_type", "even") == "even":
        size = math.prod(shape)
        source = np.pad(np.reshape(np.arange(size), shape), pad_width, mode=mode)
        return np.reshape(take_adjoint(ybar, source, (size,), None), shape)
    raise NotImplementedError(f"no derivative for np.pad(mode={mode!r}, {kwargs}); supported: "
                              f"constant, empty, {', '.join(_GATHER_PAD_MODES)} (reflect_type='even')")


def _effective_indices(indices: Any, n: int, mode: str) -> np.ndarray[Any, Any]:
    index = np.asarray(indices, dtype=np.intp)
    if n == 0:
        return index
    if mode == "clip":
        return np.clip(index, 0, n - 1)
    return index % n


def _take_back(ybar: Any, x: Any, y: Any, indices: Any, axis: Any = None, out: Any = None,
               mode: str = "raise") -> Any:
    shape = _shape(x)
    n = math.prod(shape) if axis is None else shape[_axis(axis, len(shape))]
    index = _effective_indices(indices, n, mode)
    return take_adjoint(ybar, index, shape, axis)


def _diagonal_embed(ybar: Any, shape: tuple[int, ...], offset: int, axis1: int, axis2: int,
                    full: bool) -> Any:
    """Adjoint of ``np.diagonal`` (``full=False``) or of ``np.trace`` (``full=True``) by masks."""
    ndim = len(shape)
    a1, a2 = _axis(axis1, ndim), _axis(axis2, ndim)
    m, n = shape[a1], shape[a2]
    mask = np.eye(m, n, k=offset, dtype=bool)
    if full:
        spread = np.expand_dims(ybar, (-2, -1))
    else:
        length = _shape(ybar)[-1]
        lead = [(0, 0)] * (np.ndim(ybar) - 1)
        if offset >= 0:
            spread = np.expand_dims(np.pad(ybar, lead + [(0, m - length)]), -1)
        else:
            spread = np.expand_dims(np.pad(ybar, lead + [(0, n - length)]), -2)
    return np.moveaxis(mask * spread, (-2, -1), (a1, a2))


def _diagonal_back(ybar: Any, x: Any, y: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    return _diagonal_embed(ybar, _shape(x), offset, axis1, axis2, full=False)


def _trace_back(ybar: Any, x: Any, y: Any, offset: int = 0, axis1: int = 0, axis2: int = 1,
                dtype: Any = None, out: Any = None) -> Any:
    return _diagonal_embed(ybar, _shape(x), offset, axis1, axis2, full=True)


def _diag_back(ybar: Any, x: Any, y: Any, k: int = 0) -> Any:
    if np.ndim(x) == 1:
        return np.diagonal(ybar, k)
    return _diagonal_embed(ybar, _shape(x), k, 0, 1, full=False)


def _diagflat_back(ybar: Any, x: Any, y: Any, k: int = 0) -> Any:
    return np.reshape(np.diagonal(ybar, k), _shape(x))


def _triu_back(ybar: Any, x: Any, y: Any, k: int = 0) -> Any:
    return _sum_to(np.triu(ybar, k), _shape(x))


def _tril_back(ybar: Any, x: Any, y: Any, k: int = 0) -> Any:
    return _sum_to(np.tril(ybar, k), _shape(x))


def _conj_back(ybar: Any, x: Any, y: Any) -> Any:
    return _conj(ybar)


def _gather_along(v: Any, perm: np.ndarray[Any, Any], axis: int) -> Any:
    """``np.take_along_axis(v, perm, axis)`` written with ``np.take`` (a rule of this module)."""
    vm = np.moveaxis(v, axis, -1)
    pm = np.moveaxis(perm, axis, -1)
    n = pm.shape[-1]
    if pm.size == 0:
        return v
    rows = np.reshape(np.arange(pm.size // n, dtype=np.intp), pm.shape[:-1] + (1,)) * n
    return np.moveaxis(np.take(vm, rows + pm), -1, axis)


def _sort_permutation(x: Any, axis: Any, kind: Any, stable: Any) -> np.ndarray[Any, Any]:
    return np.argsort(x, axis=axis, kind=kind, stable=stable)


def _sort_back(ybar: Any, x: Any, y: Any, axis: Any = -1, kind: Any = None, order: Any = None, *,
               stable: Any = None) -> Any:
    perm = _sort_permutation(x, axis, kind, stable)
    inverse = np.argsort(perm, axis=-1 if axis is None else axis)
    if axis is None:
        return np.reshape(np.take(ybar, inverse), _shape(x))
    return _gather_along(ybar, inverse, _axis(axis, np.ndim(x)))


def _sort_frule(f: Any, tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(x, *args, **kwargs)
    xdot = unthunk(tangents[1])
    if is_zero(xdot):
        return y, ZeroTangent()

    def params(axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
        return axis, kind, stable

    axis, kind, stable = params(*args, **kwargs)
    perm = _sort_permutation(x, axis, kind, stable)
    if axis is None:
        return y, _tangent_of_output(y, np.take(xdot, perm))
    return y, _tangent_of_output(y, _gather_along(xdot, perm, _axis(axis, np.ndim(x))))


# ----------------------------------------------------------------------------------------------
# take_adjoint: the scatter primitive (adjoint of np.take), with its own rules
# ----------------------------------------------------------------------------------------------
def take_adjoint(ybar: Any, indices: Any, shape: Any, axis: Any = None) -> np.ndarray[Any, Any]:
    """The adjoint of ``np.take(x, indices, axis)`` for ``x`` of ``shape``: a scatter-add.

    Returns an array of ``shape`` whose entries (along ``axis``, or of the flattened array when
    ``axis`` is ``None``) at ``indices`` accumulate ``ybar``. Indices in ``[-n, n)`` are allowed.
    It is a primitive with its own rules (its pullback is ``np.take``), so pullbacks that scatter
    differentiate again.

    Example:
        >>> import numpy as np
        >>> take_adjoint(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 0]), (3,))
        array([4., 0., 2.])
    """
    ybar = np.asarray(ybar)
    shape = tuple(int(s) for s in shape)
    dtype = ybar.dtype if ybar.dtype.kind in "fc" else np.dtype(np.float64)
    index = np.asarray(indices, dtype=np.intp)
    if axis is None:
        size = int(np.prod(shape, dtype=np.int64))
        flat = np.zeros(size, dtype=dtype)
        if size:
            np.add.at(flat, index.ravel() % size, np.broadcast_to(ybar, index.shape).ravel())
        return flat.reshape(shape)
    ax = _axis(axis, len(shape))
    n = shape[ax]
    rest = shape[:ax] + shape[ax + 1:]
    moved = np.moveaxis(np.reshape(ybar, shape[:ax] + (index.size,) + shape[ax + 1:]), ax, 0)
    out = np.zeros((n, *rest), dtype=dtype)
    if n:
        np.add.at(out, index.ravel() % n, moved)
    return np.moveaxis(out, 0, ax)


def _take_adjoint_rrule(f: Any, ybar: Any, indices: Any, shape: Any, *rest: Any, **kwargs: Any) -> Any:
    y = f(ybar, indices, shape, *rest, **kwargs)
    axis = rest[0] if rest else kwargs.get("axis")
    index = np.asarray(indices, dtype=np.intp)

    def take_adjoint_pullback(zbar: Any) -> Any:
        zbar = unthunk(zbar)
        if is_zero(zbar):
            return (_NO, ZeroTangent(), _NO, _NO, *_nots(len(rest)))
        return (_NO, _project(ybar, np.take(zbar, index, axis=axis)), _NO, _NO, *_nots(len(rest)))

    return y, take_adjoint_pullback


# ----------------------------------------------------------------------------------------------
# joining (a sequence argument) and splitting (a sequence output)
# ----------------------------------------------------------------------------------------------
def _split_to(ybar: Any, xs: list[Any], shapes: list[tuple[int, ...]], axis: int) -> list[Any]:
    """Cut ``ybar`` along ``axis`` into pieces as wide as inputs of the promoted ``shapes``, each
    reshaped back to the shape of the matching original input."""
    sizes = [s[axis] for s in shapes]
    bounds = list(itertools.accumulate(sizes))[:-1]
    pieces = np.split(ybar, bounds, axis=axis)
    return [
        piece if _shape(piece) == np.shape(x) else np.reshape(piece, np.shape(x))
        for piece, x in zip(pieces, xs, strict=True)
    ]


def _at_least(shape: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """The shape ``np.atleast_<ndim>d`` gives an array of ``shape``."""
    if len(shape) >= ndim:
        return shape
    if ndim == 3:
        return {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}[len(shape)]
    return (1,) * (ndim - len(shape)) + shape


def _concatenate_layout(xs: list[Any], axis: Any = 0, *rest: Any, **kwargs: Any) -> Any:
    if axis is None:
        return [(math.prod(np.shape(x)),) for x in xs], 0
    return [np.shape(x) for x in xs], int(axis)


def _stack_layout(xs: list[Any], axis: Any = 0, *rest: Any, **kwargs: Any) -> Any:
    shapes = [np.shape(x) for x in xs]
    ax = _axis(axis, len(shapes[0]) + 1) if shapes else 0
    return [s[:ax] + (1,) + s[ax:] for s in shapes], ax


def _hstack_layout(xs: list[Any], *rest: Any, **kwargs: Any) -> Any:
    shapes = [_at_least(np.shape(x), 1) for x in xs]
    return shapes, 0 if shapes and len(shapes[0]) == 1 else 1


def _vstack_layout(xs: list[Any], *rest: Any, **kwargs: Any) -> Any:
    return [_at_least(np.shape(x), 2) for x in xs], 0


def _dstack_layout(xs: list[Any], *rest: Any, **kwargs: Any) -> Any:
    return [_at_least(np.shape(x), 3) for x in xs], 2


def _column_stack_layout(xs: list[Any], *rest: Any, **kwargs: Any) -> Any:
    shapes = [np.shape(x) for x in xs]
    return [s if len(s) >= 2 else (math.prod(s), 1) for s in shapes], 1


def _join(layout: Callable[..., Any]) -> Any:
    """Rule maker for ``f(seq, *static)`` that joins the entries of ``seq`` along one axis."""

    def impl(f: Any, seq: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(seq, *args, **kwargs)
        xs = list(seq)
        promoted, axis = layout(xs, *args, **kwargs)

        def join_pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if is_zero(ybar):
                return (_NO, ZeroTangent(), *_nots(len(args)))
            return (_NO, _pack(seq, _split_to(ybar, xs, promoted, axis)), *_nots(len(args)))

        return y, join_pullback

    return _custom_rrule(impl)


def _append_rrule(f: Any, arr: Any, values: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(arr, values, *args, **kwargs)

    def params(axis: Any = None) -> Any:
        return axis

    axis = params(*args, **kwargs)
    xs = [arr, values]
    promoted = [(math.prod(np.shape(x)),) for x in xs] if axis is None else [np.shape(x) for x in xs]

    def append_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return (_NO, ZeroTangent(), ZeroTangent(), *_nots(len(args)))
        a, v = _split_to(ybar, xs, promoted, 0 if axis is None else int(axis))
        return (_NO, _project(arr, a), _project(values, v), *_nots(len(args)))

    return y, append_pullback


def _split_axis(fname: str, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if fname in ("split", "array_split"):
        def params(indices_or_sections: Any, axis: int = 0) -> int:
            return axis

        return params(*args, **kwargs)
    if fname == "hsplit":
        return 1 if np.ndim(x) > 1 else 0
    return {"vsplit": 0, "dsplit": 2}[fname]


def _splitter(fname: str) -> Any:
    """Rule maker for the ``np.split`` family: the pullback concatenates the (dense) pieces."""

    def impl(f: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        ys = f(x, *args, **kwargs)
        axis = _split_axis(fname, x, args, kwargs)

        def split_pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if is_zero(ybar):
                return (_NO, ZeroTangent(), *_nots(len(args)))
            pieces = _dense_cotangents(ybar, ys)
            return (_NO, _project(x, np.concatenate(pieces, axis=axis)), *_nots(len(args)))

        return ys, split_pullback

    return _custom_rrule(impl)


def _unstack_rrule(f: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    ys = f(x, *args, **kwargs)
    axis = kwargs.get("axis", 0)

    def unstack_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return (_NO, ZeroTangent(), *_nots(len(args)))
        pieces = _dense_cotangents(ybar, ys)
        if not pieces:
            return (_NO, _project(x, np.zeros(np.shape(x), _tangent_dtype(x))), *_nots(len(args)))
        return (_NO, _project(x, np.stack(pieces, axis=axis)), *_nots(len(args)))

    return ys, unstack_pullback


def _atleast_rrule(f: Any, *arys: Any) -> Any:
    y = f(*arys)

    def atleast_pullback(ybar: Any) -> Any:
        if len(arys) == 1:
            ybar = unthunk(ybar)
            cts = [ybar]
        else:
            cts = _entries(ybar, len(arys))
        return (_NO, *(ZeroTangent() if is_zero(c) else _project(x, np.reshape(c, np.shape(x)))
                       for x, c in zip(arys, cts, strict=True)))

    return y, atleast_pullback


# ----------------------------------------------------------------------------------------------
# element selection: where, clip
# ----------------------------------------------------------------------------------------------
def _where_rrule(f: Any, condition: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(condition, *args, **kwargs)
    if len(args) != 2:  # np.where(condition) is np.nonzero
        return y, _named(lambda ybar: _nots(1 + 1 + len(args)), "where")
    x, z = args

    def where_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return (_NO, _NO, ZeroTangent(), ZeroTangent())
        xbar = _sum_to(np.where(condition, ybar, 0), np.shape(x))
        zbar = _sum_to(np.where(condition, 0, ybar), np.shape(z))
        return (_NO, _NO, _project(x, xbar), _project(z, zbar))

    return y, where_pullback


def _where_frule(f: Any, tangents: Any, condition: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(condition, *args, **kwargs)
    if len(args) != 2:
        return y, NoTangent()
    xdot, zdot = unthunk(tangents[2]), unthunk(tangents[3])
    if is_zero(xdot) and is_zero(zdot):
        return y, ZeroTangent()
    ydot = np.where(condition, 0 if is_zero(xdot) else xdot, 0 if is_zero(zdot) else zdot)
    return y, _project(y, np.broadcast_to(ydot, np.shape(y)))


def _clip_bounds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    unset = _NOVALUE

    def get(i: int, *names: str) -> Any:
        if len(args) > i:
            return args[i]
        for name in names:
            v = kwargs.get(name, unset)
            if v is not unset:
                return v
        return None

    lo, hi = get(0, "a_min", "min"), get(1, "a_max", "max")
    return (None if lo is unset else lo), (None if hi is unset else hi)


def _clip_masks(a: Any, lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    """Where the result is ``a``, the lower bound and the upper bound (``clip = min(max(a, lo), hi)``;
    at a bound the gradient goes to ``a``, as in ChainRules' ``clamp``)."""
    above_lo = np.asarray(True) if lo is None else np.logical_not(np.less(a, lo))
    t = a if lo is None else np.where(above_lo, a, lo)
    below_hi = np.asarray(True) if hi is None else np.logical_not(np.greater(t, hi))
    return (np.logical_and(above_lo, below_hi), np.logical_and(np.logical_not(above_lo), below_hi),
            np.logical_not(below_hi))


def _clip_rrule(f: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(a, *args, **kwargs)
    lo, hi = _clip_bounds(args, kwargs)
    on_a, on_lo, on_hi = _clip_masks(a, lo, hi)

    def clip_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return (_NO, ZeroTangent(), *(_NO if v is None else ZeroTangent() for v in args))
        abar = _project(a, _sum_to(np.where(on_a, ybar, 0), np.shape(a)))
        bounds = []
        for v, mask in zip(args, (on_lo, on_hi, None), strict=False):
            if v is None or mask is None:
                bounds.append(_NO)
            else:
                bounds.append(_project(v, _sum_to(np.where(mask, ybar, 0), np.shape(v))))
        return (_NO, abar, *bounds)

    return y, clip_pullback


def _clip_frule(f: Any, tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(a, *args, **kwargs)
    lo, hi = _clip_bounds(args, kwargs)
    masks = _clip_masks(a, lo, hi)
    ydot: Any = ZeroTangent()
    for t, mask in zip(tangents[1:4], masks, strict=False):
        t = unthunk(t)
        if is_zero(t):
            continue
        term = np.where(mask, t, 0)
        ydot = term if is_zero(ydot) else ydot + term
    if is_zero(ydot):
        return y, ydot
    return y, _project(y, np.broadcast_to(ydot, np.shape(y)))


# ----------------------------------------------------------------------------------------------
# contractions: dot, inner, outer, vdot, tensordot, kron, cross, einsum
# ----------------------------------------------------------------------------------------------
def _tensordot_axes(axes: Any, nda: int, ndb: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(nda - n, nda)), list(range(n))
    ax_a, ax_b = axes
    ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
    ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    return [_axis(i, nda) for i in ax_a], [_axis(i, ndb) for i in ax_b]


def _contract_back(ybar: Any, a: Any, b: Any, ax_a: list[int], ax_b: list[int]) -> tuple[Any, Any]:
    """Cotangents of ``a`` and ``b`` for ``y = np.tensordot(a, b, (ax_a, ax_b))`` (holomorphic)."""
    nda, ndb = np.ndim(a), np.ndim(b)
    free_a = [i for i in range(nda) if i not in ax_a]
    free_b = [i for i in range(ndb) if i not in ax_b]
    nfa = len(free_a)
    # abar: contract ybar's b-part with conj(b)'s free axes -> axes free_a + (b's contracted, sorted)
    ga = np.tensordot(ybar, _conj(b), axes=(list(range(nfa, nfa + len(free_b))), free_b))
    sorted_b = sorted(ax_b)
    pos_a = [free_a.index(p) if p in free_a else nfa + sorted_b.index(ax_b[ax_a.index(p)])
             for p in range(nda)]
    abar = np.transpose(ga, pos_a) if pos_a != list(range(nda)) else ga
    # bbar: contract conj(a)'s free axes with ybar's a-part -> axes (a's contracted, sorted) + free_b
    gb = np.tensordot(_conj(a), ybar, axes=(free_a, list(range(nfa))))
    sorted_a = sorted(ax_a)
    ncb = len(ax_b)
    pos_b = [ncb + free_b.index(q) if q in free_b else sorted_a.index(ax_a[ax_b.index(q)])
             for q in range(ndb)]
    bbar = np.transpose(gb, pos_b) if pos_b != list(range(ndb)) else gb
    return abar, bbar


def _bilinear(backward: Callable[[Any, Any, Any], tuple[Any, Any]]) -> Any:
    """Rule maker for ``f(a, b, *static)`` bilinear in ``a`` and ``b``."""

    def impl(f: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(a, b, *args, **kwargs)

        def bilinear_pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            if is_zero(ybar):
                return (_NO, ZeroTangent(), ZeroTangent(), *_nots(len(args)))
            abar, bbar = backward(ybar, a, b, *args, **kwargs)
            return (_NO, _project(a, abar), _project(b, bbar), *_nots(len(args)))

        return y, bilinear_pullback

    return _custom_rrule(impl)


def _scalar_product_back(ybar: Any, a: Any, b: Any) -> tuple[Any, Any]:
    return _sum_to(ybar * _conj(b), np.shape(a)), _sum_to(ybar * _conj(a), np.shape(b))


def _dot_back(ybar: Any, a: Any, b: Any, out: Any = None) -> tuple[Any, Any]:
    nda, ndb = np.ndim(a), np.ndim(b)
    if nda == 0 or ndb == 0:
        return _scalar_product_back(ybar, a, b)
    return _contract_back(ybar, a, b, [nda - 1], [0 if ndb == 1 else ndb - 2])


def _inner_back(ybar: Any, a: Any, b: Any) -> tuple[Any, Any]:
    nda, ndb = np.ndim(a), np.ndim(b)
    if nda == 0 or ndb == 0:
        return _scalar_product_back(ybar, a, b)
    return _contract_back(ybar, a, b, [nda - 1], [ndb - 1])


def _tensordot_back(ybar: Any, a: Any, b: Any, axes: Any = 2) -> tuple[Any, Any]:
    ax_a, ax_b = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    return _contract_back(ybar, a, b, ax_a, ax_b)


def _outer_back(ybar: Any, a: Any, b: Any, out: Any = None) -> tuple[Any, Any]:
    abar = np.tensordot(ybar, _conj(np.ravel(b)), axes=([1], [0]))
    bbar = np.tensordot(_conj(np.ravel(a)), ybar, axes=([0], [0]))
    return np.reshape(abar, np.shape(a)), np.reshape(bbar, np.shape(b))


def _vdot_back(ybar: Any, a: Any, b: Any) -> tuple[Any, Any]:
    # y = sum(conj(a) * b): a enters anti-holomorphically, so abar = conj(ybar) * b.
    abar = np.reshape(_conj(ybar) * np.ravel(b), np.shape(a))
    bbar = np.reshape(ybar * np.ravel(a), np.shape(b))
    return abar, bbar


def _kron_back(ybar: Any, a: Any, b: Any) -> tuple[Any, Any]:
    sa, sb = np.shape(a), np.shape(b)
    d = max(len(sa), len(sb))
    pa, pb = (1,) * (d - len(sa)) + sa, (1,) * (d - len(sb)) + sb
    interleaved = tuple(v for pair in zip(pa, pb, strict=True) for v in pair)
    yr = np.reshape(ybar, interleaved)
    even, odd = list(range(0, 2 * d, 2)), list(range(1, 2 * d, 2))
    abar = np.tensordot(yr, _conj(np.reshape(b, pb)), axes=(odd, list(range(d))))
    bbar = np.tensordot(_conj(np.reshape(a, pa)), yr, axes=(list(range(d)), even))
    return np.reshape(abar, sa), np.reshape(bbar, sb)


def _cross_back(ybar: Any, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
                axis: Any = None) -> tuple[Any, Any]:
    if axis is not None:
        axisa = axisb = axisc = axis
    am, bm = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1)
    na, nb = _shape(am)[-1], _shape(bm)[-1]

    def to3(v: Any, n: int) -> Any:
        return v if n == 3 else np.pad(v, [(0, 0)] * (np.ndim(v) - 1) + [(0, 1)])

    if na == 2 and nb == 2:
        y3 = np.pad(np.expand_dims(ybar, -1), [(0, 0)] * np.ndim(ybar) + [(2, 0)])
    else:
        y3 = np.moveaxis(ybar, axisc, -1)
    abar = np.cross(_conj(to3(bm, nb)), y3)
    bbar = np.cross(y3, _conj(to3(am, na)))
    if na == 2:
        abar = np.split(abar, [2], axis=-1)[0]
    if nb == 2:
        bbar = np.split(bbar, [2], axis=-1)[0]
    abar = np.moveaxis(_sum_to(abar, _shape(am)), -1, axisa)
    bbar = np.moveaxis(_sum_to(bbar, _shape(bm)), -1, axisb)
    return abar, bbar


_LABELS = string.ascii_uppercase + string.ascii_lowercase  # sorted like numpy's integer labels


def _sublist_to_str(sub: Any) -> str:
    return "".join("..." if s is Ellipsis else _LABELS[int(s)] for s in sub)


def _einsum_spec(args: tuple[Any, ...]) -> tuple[list[str], str, list[int]]:
    """``(inputs, output, operand positions)`` of an einsum call, with every '...' spelled out as
    explicit labels and the implicit output made explicit."""
    if isinstance(args[0], str):
        subscripts = args[0].replace(" ", "")
        positions = list(range(1, len(args)))
    else:
        n_ops = len(args) // 2
        positions = [2 * i for i in range(n_ops)]
        subscripts = ",".join(_sublist_to_str(args[2 * i + 1]) for i in range(n_ops))
        if len(args) % 2:
            subscripts += "->" + _sublist_to_str(args[-1])
    ins, arrow, out = subscripts.partition("->")
    inputs = ins.split(",")
    if len(inputs) != len(positions):
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"got {len(positions)}")
    if not arrow:
        letters = [c for s in inputs for c in s.replace("...", "")]
        out = ("..." if any("..." in s for s in inputs) else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    used = set(subscripts)
    free = [c for c in _LABELS if c not in used]
    ndims = [np.ndim(args[p]) for p in positions]
    ell = [nd - (len(s) - 3) for s, nd in zip(inputs, ndims, strict=True) if "..." in s]
    n_ell = max(ell, default=0)
    ell_labels = "".join(free[:n_ell])
    inputs = [
        s.replace("...", ell_labels[n_ell - (nd - (len(s) - 3)):]) if "..." in s else s
        for s, nd in zip(inputs, ndims, strict=True)
    ]
    return inputs, out.replace("...", ell_labels), positions


def _einsum_operand_back(ybar: Any, i: int, inputs: list[str], out: str, ops: list[Any],
                         optimize: Any) -> Any:
    """Cotangent of operand ``i`` of ``einsum(inputs -> out)``: contract ``ybar`` with the other
    (conjugated) operands, then restore summed, broadcast and repeated labels of operand ``i``."""
    sub, x = inputs[i], ops[i]
    xshape = _shape(x)
    sizes: dict[str, int] = {}
    for s, op in zip(inputs, ops, strict=True):
        for c, n in zip(s, _shape(op), strict=True):
            sizes[c] = max(sizes.get(c, 1), n)
    elsewhere = set(out).union(*(set(s) for j, s in enumerate(inputs) if j != i))
    first: dict[str, int] = {}
    for p, c in enumerate(sub):
        first.setdefault(c, p)
    unique = list(first)
    kept = [c for c in unique if c in elsewhere and not (xshape[first[c]] == 1 and sizes[c] != 1)]
    others = [j for j in range(len(ops)) if j != i]
    spec = ",".join([out] + [inputs[j] for j in others]) + "->" + "".join(kept)
    g = np.einsum(spec, ybar, *(_conj(ops[j]) for j in others), optimize=optimize)
    missing = [k for k, c in enumerate(unique) if c not in kept]
    if missing:
        g = np.broadcast_to(np.expand_dims(g, missing), tuple(xshape[first[c]] for c in unique))
    if len(unique) < len(sub):  # repeated labels (a diagonal): embed with a mask
        dups = [p for p, c in enumerate(sub) if first[c] != p]
        g = np.expand_dims(g, dups)
        mask = np.ones(xshape, dtype=bool)
        grids = np.indices(xshape, sparse=True)
        for p in dups:
            mask = mask & (grids[p] == grids[first[sub[p]]])
        g = mask * g
    return g


def _einsum_rrule(f: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(*args, **kwargs)
    inputs, out, positions = _einsum_spec(args)
    ops = [args[p] for p in positions]
    optimize = kwargs.get("optimize", False)

    def einsum_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        cts: list[Any] = [_NO] * len(args)
        for i, p in enumerate(positions):
            if is_zero(ybar):
                cts[p] = ZeroTangent()
            else:
                cts[p] = _project(ops[i], _einsum_operand_back(ybar, i, inputs, out, ops, optimize))
        return (_NO, *cts)

    return y, einsum_pullback


def _einsum_positions(args: tuple[Any, ...]) -> list[int]:
    if isinstance(args[0], str):
        return list(range(1, len(args)))
    return [2 * i for i in range(len(args) // 2)]


# ----------------------------------------------------------------------------------------------
# conversions: np.array / np.asarray of nested lists, astype
# ----------------------------------------------------------------------------------------------
def _array_back(ybar: Any, x: Any, y: Any, *args: Any, **kwargs: Any) -> Any:
    return np.reshape(ybar, np.shape(x))


def _array_frule(f: Any, tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(x, *args, **kwargs)
    t = unthunk(tangents[1])
    if is_zero(t) or not isinstance(y, np.ndarray) or y.dtype.kind not in "fciu":
        return y, ZeroTangent() if is_zero(t) else NoTangent()
    if isinstance(x, np.ndarray) and x.shape == y.shape:
        return y, _project(y, t)  # an array in, the same shape out: only the dtype may change
    dense = _dense(x, t)
    ndmin = kwargs.get("ndmin", 0)
    ydot = np.array(dense, dtype=_tangent_dtype(y), ndmin=ndmin)
    return y, _project(y, np.reshape(ydot, y.shape))


def _astype_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> np.dtype[Any]:
    target: np.dtype[Any] = np.dtype(args[0] if args else kwargs["dtype"])
    return target


def _astype_rrule(f: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(x, *args, **kwargs)
    differentiable = _astype_target(args, kwargs).kind in "fc"

    def astype_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if not differentiable:
            return (_NO, _NO, *_nots(len(args)))
        if is_zero(ybar):
            return (_NO, ZeroTangent(), *_nots(len(args)))
        return (_NO, _project(x, ybar), *_nots(len(args)))

    return y, astype_pullback


def _astype_frule(f: Any, tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(x, *args, **kwargs)
    if _astype_target(args, kwargs).kind not in "fc":
        return y, NoTangent()
    t = unthunk(tangents[1])
    if is_zero(t):
        return y, ZeroTangent()
    if y.dtype.kind == "f" and np.iscomplexobj(t):
        t = np.real(t)
    return y, _project(y, t)


def _pad_frule(f: Any, tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = f(x, *args, **kwargs)
    t = unthunk(tangents[1])
    if is_zero(t):
        return y, ZeroTangent()
    mode = args[1] if len(args) > 1 else kwargs.get("mode", "constant")
    if mode not in ("constant", "empty", *_GATHER_PAD_MODES) or kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(f"no derivative for np.pad(mode={mode!r}, {kwargs})")
    kw = dict(kwargs)
    if mode == "constant":
        kw["constant_values"] = 0
    elif mode == "empty":
        args, kw["mode"], kw["constant_values"] = args[:1], "constant", 0
    return y, _project(y, f(_dense(x, t), *args, **kw))


# ----------------------------------------------------------------------------------------------
# the tables
# ----------------------------------------------------------------------------------------------
_X = _linear_frule(0)
_AB = _multilinear_frule(_first_two)

#: ``callable: (name, rrule maker, frule maker)``; a maker takes ``(f, name)`` and returns the
#: implementation to register (``_first_arg(backward)`` for functions of one array).
RULES: dict[Any, tuple[str, Any, Any]] = {
    # reshaping: the pullback is the inverse reshape / transpose
    np.reshape: ("reshape", _first_arg(_reshape_back), _X),
    np.ndarray.reshape: ("reshape", _first_arg(_method_reshape_back), _X),
    np.ravel: ("ravel", _first_arg(_ravel_back), _X),
    np.ndarray.ravel: ("ravel", _first_arg(_ravel_back), _X),
    np.ndarray.flatten: ("flatten", _first_arg(_ravel_back), _X),
    np.squeeze: ("squeeze", _first_arg(_same_shape_back), _X),
    np.ndarray.squeeze: ("squeeze", _first_arg(_same_shape_back), _X),
    np.expand_dims: ("expand_dims", _first_arg(_same_shape_back), _X),
    np.transpose: ("transpose", _first_arg(_transpose_back), _X),
    np.ndarray.transpose: ("transpose", _first_arg(_method_transpose_back), _X),
    np.swapaxes: ("swapaxes", _first_arg(_swapaxes_back), _X),
    np.ndarray.swapaxes: ("swapaxes", _first_arg(_swapaxes_back), _X),
    np.moveaxis: ("moveaxis", _first_arg(_moveaxis_back), _X),
    np.broadcast_to: ("broadcast_to", _first_arg(_broadcast_to_back), _X),
    np.atleast_1d: ("atleast_1d", _custom_rrule(_atleast_rrule), _linear_frule(*range(64))),
    np.atleast_2d: ("atleast_2d", _custom_rrule(_atleast_rrule), _linear_frule(*range(64))),
    np.atleast_3d: ("atleast_3d", _custom_rrule(_atleast_rrule), _linear_frule(*range(64))),
    np.copy: ("copy", _first_arg(_same_shape_back), _X),
    np.ndarray.copy: ("copy", _first_arg(_same_shape_back), _X),
    np.ascontiguousarray: ("ascontiguousarray", _first_arg(_same_shape_back), _X),
    # reordering
    np.flip: ("flip", _first_arg(_flip_back), _X),
    np.fliplr: ("fliplr", _first_arg(_fliplr_back), _X),
    np.flipud: ("flipud", _first_arg(_flipud_back), _X),
    np.rot90: ("rot90", _first_arg(_rot90_back), _X),
    np.roll: ("roll", _first_arg(_roll_back), _X),
    np.sort: ("sort", _first_arg(_sort_back), _custom(_sort_frule)),
    # joining and splitting
    np.concatenate: ("concatenate", _join(_concatenate_layout), _X),
    np.stack: ("stack", _join(_stack_layout), _X),
    np.hstack: ("hstack", _join(_hstack_layout), _X),
    np.vstack: ("vstack", _join(_vstack_layout), _X),
    np.dstack: ("dstack", _join(_dstack_layout), _X),
    np.column_stack: ("column_stack", _join(_column_stack_layout), _X),
    np.append: ("append", _custom_rrule(_append_rrule), _linear_frule(0, 1)),
    np.split: ("split", _splitter("split"), _X),
    np.array_split: ("array_split", _splitter("array_split"), _X),
    np.hsplit: ("hsplit", _splitter("hsplit"), _X),
    np.vsplit: ("vsplit", _splitter("vsplit"), _X),
    np.dsplit: ("dsplit", _splitter("dsplit"), _X),
    np.unstack: ("unstack", _custom_rrule(_unstack_rrule), _X),
    # repeating and padding
    np.tile: ("tile", _first_arg(_tile_back), _X),
    np.repeat: ("repeat", _first_arg(_repeat_back), _X),
    np.ndarray.repeat: ("repeat", _first_arg(_repeat_back), _X),
    np.pad: ("pad", _first_arg(_pad_back), _custom(_pad_frule)),
    # selecting
    np.where: ("where", _custom_rrule(_where_rrule), _custom(_where_frule)),
    np.clip: ("clip", _custom_rrule(_clip_rrule), _custom(_clip_frule)),
    np.ndarray.clip: ("clip", _custom_rrule(_clip_rrule), _custom(_clip_frule)),
    np.take: ("take", _first_arg(_take_back), _X),
    np.ndarray.take: ("take", _first_arg(_take_back), _X),
    take_adjoint: ("take_adjoint", _custom_rrule(_take_adjoint_rrule), _X),
    np.diag: ("diag", _first_arg(_diag_back), _X),
    np.diagflat: ("diagflat", _first_arg(_diagflat_back), _X),
    np.diagonal: ("diagonal", _first_arg(_diagonal_back), _X),
    np.ndarray.diagonal: ("diagonal", _first_arg(_diagonal_back), _X),
    np.trace: ("trace", _first_arg(_trace_back), _X),
    np.ndarray.trace: ("trace", _first_arg(_trace_back), _X),
    np.triu: ("triu", _first_arg(_triu_back), _X),
    np.tril: ("tril", _first_arg(_tril_back), _X),
    # products and contractions
    np.dot: ("dot", _bilinear(_dot_back), _AB),
    np.ndarray.dot: ("dot", _bilinear(_dot_back), _AB),
    np.inner: ("inner", _bilinear(_inner_back), _AB),
    np.outer: ("outer", _bilinear(_outer_back), _AB),
    np.vdot: ("vdot", _bilinear(_vdot_back), _AB),
    np.tensordot: ("tensordot", _bilinear(_tensordot_back), _AB),
    np.kron: ("kron", _bilinear(_kron_back), _AB),
    np.cross: ("cross", _bilinear(_cross_back), _AB),
    np.einsum: ("einsum", _custom_rrule(_einsum_rrule), _multilinear_frule(_einsum_positions)),
    # conjugation and conversions
    np.ndarray.conj: ("conj", _first_arg(_conj_back), _X),
    np.ndarray.conjugate: ("conjugate", _first_arg(_conj_back), _X),
    np.array: ("array", _first_arg(_array_back), _custom(_array_frule)),
    np.asarray: ("asarray", _first_arg(_array_back), _custom(_array_frule)),
    np.asanyarray: ("asanyarray", _first_arg(_array_back), _custom(_array_frule)),
    np.ndarray.astype: ("astype", _custom_rrule(_astype_rrule), _custom(_astype_frule)),
    np.astype: ("astype", _custom_rrule(_astype_rrule), _custom(_astype_frule)),
}


#: Callables with no derivative: shapes, indices, comparisons, constructors (random numbers:
#: :mod:`rulescore.rules.random`).
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    np.shape, np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.nonzero, np.argwhere,
    np.flatnonzero, np.searchsorted, np.lexsort, np.unravel_index, np.ravel_multi_index,
    np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones, np.empty,
    np.eye, np.identity, np.tri, np.logspace, np.geomspace, np.indices,
    np.isclose, np.allclose, np.array_equal, np.array_equiv,
    np.result_type, np.can_cast, np.promote_types, np.min_scalar_type, np.common_type,
    np.issubdtype, np.iscomplexobj, np.isrealobj, np.isscalar, np.broadcast_shapes,
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.nonzero,
)


# -- constructors whose values depend on an argument: full, full_like, linspace, arange -----------


def _filled(args: tuple[Any, ...], kwargs: dict[str, Any], position: int) -> Any:
    return args[position] if len(args) > position else kwargs["fill_value"]


def _fill_rules(f: Any, position: int) -> tuple[Any, Any]:
    """``np.full(shape, v)`` / ``np.full_like(a, v)``: every entry is ``v``, so ``vbar = sum(ybar)``."""

    def fill_rrule(*args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)
        value = _filled(args, kwargs, position)

        def fill_pullback(ybar: Any) -> Any:
            ybar = unthunk(ybar)
            # full's shape has no tangent space; full_like's array is differentiable, values unused
            first = ZeroTangent() if f is np.full_like else NoTangent()
            if is_zero(ybar):
                return (NoTangent(), first, *(ZeroTangent() for _ in args[1:]))
            vbar = np.sum(ybar) if np.ndim(value) == 0 else unbroadcast(ybar, np.shape(value))
            return (NoTangent(), first, *((project(value, vbar) if i == position else NoTangent())
                                         for i in range(1, len(args))))

        return y, fill_pullback

    def fill_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)
        vdot = unthunk(tangents[1 + position]) if len(args) > position else ZeroTangent()
        if is_zero(vdot):
            return y, ZeroTangent()
        return y, project(y, np.broadcast_to(vdot, np.shape(y)) + np.zeros_like(y))

    return fill_rrule, fill_frule


def linspace_rrule(start: Any, stop: Any, num: int = 50, **kwargs: Any) -> Any:
    """``start + (stop - start) * t`` for fixed fractions ``t``: linear in both endpoints."""
    if kwargs.get("retstep"):
        raise TypeError("numpy.linspace: retstep=True is not supported under differentiation")
    y = np.linspace(start, stop, num, **kwargs)
    t = np.linspace(0.0, 1.0, num, endpoint=kwargs.get("endpoint", True))

    def linspace_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        if is_zero(ybar):
            return NoTangent(), ZeroTangent(), ZeroTangent(), NoTangent()
        tt = np.reshape(t, (-1,) + (1,) * (np.ndim(ybar) - 1))
        sbar, ebar = np.sum(ybar * (1 - tt), axis=0), np.sum(ybar * tt, axis=0)
        return (NoTangent(), project(start, sbar if np.ndim(start) else np.sum(sbar)),
                project(stop, ebar if np.ndim(stop) else np.sum(ebar)), NoTangent())

    return y, linspace_pullback


def linspace_frule(tangents: Any, start: Any, stop: Any, num: int = 50, **kwargs: Any) -> Any:
    y = np.linspace(start, stop, num, **kwargs)
    sdot, edot = unthunk(tangents[1]), unthunk(tangents[2])
    if is_zero(sdot) and is_zero(edot):
        return y, ZeroTangent()
    t = np.reshape(np.linspace(0.0, 1.0, num, endpoint=kwargs.get("endpoint", True)),
                   (-1,) + (1,) * (np.ndim(y) - 1))
    s = 0.0 if is_zero(sdot) else sdot
    e = 0.0 if is_zero(edot) else edot
    return y, project(y, s * (1 - t) + e * t + np.zeros_like(y))


def _arange_parts(args: tuple[Any, ...]) -> tuple[Any, Any]:
    """(start, step) of ``np.arange(*args)``: the values are ``start + k * step``."""
    if len(args) == 1:
        return 0, 1
    return args[0], (args[2] if len(args) > 2 else 1)


def arange_rrule(*args: Any, **kwargs: Any) -> Any:
    y = np.arange(*args, **kwargs)
    k = np.arange(len(y))

    def arange_pullback(ybar: Any) -> Any:
        ybar = unthunk(ybar)
        out: list[Any] = [NoTangent()] * (1 + len(args))
        if is_zero(ybar) or y.dtype.kind not in "fc":
            return tuple(out)
        if len(args) == 1:
            out[1] = ZeroTangent()  # stop alone only sets the length
            return tuple(out)
        out[1] = project(args[0], np.sum(ybar))  # stop (out[2]) only sets the length: NoTangent
        if len(args) > 2:
            out[3] = project(args[2], np.sum(ybar * k))
        return tuple(out)

    return y, arange_pullback


def arange_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.arange(*args, **kwargs)
    if y.dtype.kind not in "fc" or len(args) == 1:
        return y, ZeroTangent() if y.dtype.kind in "fc" else NoTangent()
    sdot = unthunk(tangents[1])
    hdot = unthunk(tangents[3]) if len(args) > 2 else ZeroTangent()
    if is_zero(sdot) and is_zero(hdot):
        return y, ZeroTangent()
    k = np.arange(len(y))
    return y, project(y, (0.0 if is_zero(sdot) else sdot) + (0.0 if is_zero(hdot) else hdot) * k)


#: ``{constructor: (rrule, frule)}`` for constructors whose values depend on an argument.
CONSTRUCTORS: dict[Any, tuple[Any, Any]] = {
    np.full: _fill_rules(np.full, 1),
    np.full_like: _fill_rules(np.full_like, 1),
    np.linspace: (linspace_rrule, linspace_frule),
    np.arange: (arange_rrule, arange_frule),
}


#: NumPy scalar types called as constructors (``np.float64(x)``): the derivative is 1 (projected).
SCALAR_TYPES: tuple[Any, ...] = (np.float16, np.float32, np.float64, np.complex64, np.complex128)
#: Integer and bool scalar constructors carry no derivative.
INTEGER_TYPES: tuple[Any, ...] = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                  np.uint64, np.bool_)


def _register() -> None:
    for f, (name, make_rrule, make_frule) in RULES.items():
        r = make_rrule(f, name)
        r.__name__ = r.__qualname__ = f"{name}_rrule"
        fr = make_frule(f, name)
        fr.__name__ = fr.__qualname__ = f"{name}_frule"
        rrule.register(f)(r)
        frule.register(f)(fr)
    for f in NON_DIFFERENTIABLE + INTEGER_TYPES:
        non_differentiable(f)
    for t in SCALAR_TYPES:
        scalar_rule(t, lambda x: 1.0)
    for f, (r, fr) in CONSTRUCTORS.items():
        rrule.register(f)(r)
        frule.register(f)(fr)


_register()
