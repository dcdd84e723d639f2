"""Rules for NumPy's shape and structure functions: reshaping, joining, splitting, padding,
selecting, products (``vdot``, ``kron``, ``cross``; ``dot``, ``tensordot``, ``einsum`` and the other
contractions are in :mod:`.contractions`), ``np.array`` of nested lists,
``astype`` and the matching ``ndarray`` methods, plus a table of non-differentiable helpers.

Every entry has an rrule and an frule. Nearly every function here is linear (or multilinear) in
its array arguments, so most are declared with their transpose (``RulePair(f, transpose=...)``):
the frule applies the function itself to the tangent and the pullback is the transposed map, written with
differentiable NumPy calls: the pullback of ``reshape`` is a ``reshape``, of ``transpose`` the
inverse ``transpose``, of ``concatenate`` an ``np.split``, of ``pad`` a slice, of a product
another product. Scatters are either mask products
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

import inspect
import itertools
import math
from functools import partial
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._abstract_tangent import AbstractTangent
from rulescore._linear import dense_tangent
from rulescore._namespace import constant_like, foreign_namespace
from rulescore._parameters import declare_parameters
from rulescore._projection import project, unbroadcast
from rulescore._tangent import Tangent
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import mask as masked
from rulescore.rules._common import normalize_axes, product_tangent

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
    the array is cut into entries with ``np.unstack`` (a differentiable rule of this module);
    a tangent value (a ``Tangent``, a zero) is ``rc.project``'s already."""
    if type(x) in (list, tuple) and not isinstance(dx, AbstractTangent):
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


def _pack(xs: Any, pieces: list[Any]) -> Any:
    """The cotangent of a sequence argument from one cotangent per entry."""
    if isinstance(xs, np.ndarray):
        return project(xs, np.stack(pieces) if pieces else np.zeros(xs.shape, _tangent_dtype(xs)))
    return _project(xs, list(pieces))


def _order(order: Any, x: Any) -> Any:
    if order in ("C", "F"):
        return order
    return "F" if isinstance(x, np.ndarray) and np.isfortran(x) else "C"


# ----------------------------------------------------------------------------------------------
# transposes of functions linear in one array (``transpose(ybar, x, *args, **kwargs)``)
# ----------------------------------------------------------------------------------------------
def reshape_transpose(ybar: Any, x: Any, shape: Any = None, order: Any = "C", **kw: Any) -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def method_reshape_transpose(ybar: Any, x: Any, *shape: Any, order: Any = "C", **kw: Any) -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def ravel_transpose(ybar: Any, x: Any, order: Any = "C") -> Any:
    return np.reshape(ybar, _shape(x), order=_order(order, x))


def same_shape_transpose(ybar: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """For maps that only add or drop unit axes, or copy: reshape back."""
    return np.reshape(ybar, _shape(x))


def _inverse_transpose(ybar: Any, x: Any, axes: Any) -> Any:
    if axes is None:
        return np.transpose(ybar)
    perm = [_axis(a, np.ndim(x)) for a in axes]
    return np.transpose(ybar, tuple(int(i) for i in np.argsort(perm)))


def transpose_transpose(ybar: Any, x: Any, axes: Any = None) -> Any:
    if axes is None:
        return np.transpose(ybar)  # (x.T, np.transpose(x): one traced call less at a nested level)
    return _inverse_transpose(ybar, x, axes)


def method_transpose_transpose(ybar: Any, x: Any, *axes: Any) -> Any:
    if not axes or axes == (None,):
        return _inverse_transpose(ybar, x, None)
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        return _inverse_transpose(ybar, x, axes[0])
    return _inverse_transpose(ybar, x, axes)


def swapaxes_transpose(ybar: Any, x: Any, axis1: int, axis2: int) -> Any:
    return np.swapaxes(ybar, axis1, axis2)


def moveaxis_transpose(ybar: Any, x: Any, source: Any, destination: Any) -> Any:
    return np.moveaxis(ybar, destination, source)


def broadcast_to_transpose(ybar: Any, x: Any, shape: Any, subok: bool = False) -> Any:
    return _sum_to(ybar, _shape(x))


def flip_transpose(ybar: Any, x: Any, axis: Any = None) -> Any:
    return np.flip(ybar, axis)


def fliplr_transpose(ybar: Any, x: Any) -> Any:
    return np.fliplr(ybar)


def flipud_transpose(ybar: Any, x: Any) -> Any:
    return np.flipud(ybar)


def rot90_transpose(ybar: Any, x: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    return np.rot90(ybar, -k, axes)


def roll_transpose(ybar: Any, x: Any, shift: Any, axis: Any = None) -> Any:
    back = -shift if isinstance(shift, (int, np.integer)) else -np.asarray(shift)
    return np.roll(ybar, back, axis)


def tile_transpose(ybar: Any, x: Any, reps: Any) -> Any:
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    shape = _shape(x)
    d = max(len(shape), len(reps))
    shape = (1,) * (d - len(shape)) + shape
    reps = (1,) * (d - len(reps)) + reps
    interleaved = tuple(v for pair in zip(reps, shape, strict=True) for v in pair)
    summed = np.sum(np.reshape(ybar, interleaved), axis=tuple(range(0, 2 * d, 2)))
    return np.reshape(summed, _shape(x))


def repeat_transpose(ybar: Any, x: Any, repeats: Any, axis: Any = None) -> Any:
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


def pad_transpose(ybar: Any, x: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
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


def take_transpose(ybar: Any, x: Any, indices: Any, axis: Any = None, out: Any = None,
               mode: str = "raise") -> Any:
    shape = _shape(x)
    n = math.prod(shape[a] for a in normalize_axes(axis, len(shape)))
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


def diagonal_transpose(ybar: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    shape = _shape(x)
    if len(shape) == 2 and _axis(axis1, 2) == 0 and _axis(axis2, 2) == 1 and np.ndim(ybar) == 1 \
            and shape[0] == shape[1] == _shape(ybar)[0] + abs(offset):
        return np.diag(ybar, offset)  # a square matrix's diagonal: np.diag builds the embedding
    return _diagonal_embed(ybar, shape, offset, axis1, axis2, full=False)


def trace_transpose(ybar: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1,
                dtype: Any = None, out: Any = None) -> Any:
    if type(x) is np.ndarray or (xp := foreign_namespace((x,))) is None:
        return _diagonal_embed(ybar, _shape(x), offset, axis1, axis2, full=True)
    moved = _trace_moved(len(x.shape), axis1, axis2)  # the native tier: ybar times an identity
    eye = constant_like(xp, np.eye(x.shape[moved[-2]], x.shape[moved[-1]], k=offset), ybar)
    back = [moved.index(i) for i in range(len(moved))]
    return xp.permute_dims(ybar[..., None, None] * xp.astype(eye, ybar.dtype), back)


def _trace_moved(nd: int, axis1: int, axis2: int) -> list[int]:
    """The axes of an ``nd``-dimensional array with ``axis1`` and ``axis2`` moved last."""
    a1, a2 = _axis(axis1, nd), _axis(axis2, nd)
    return [i for i in range(nd) if i not in (a1, a2)] + [a1, a2]


def trace_native(xp: Any, x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
                 out: Any = None) -> Any:
    """``np.trace`` in the array namespace ``xp`` (the native tier): the array API's trace of
    the last two axes, after moving ``axis1`` and ``axis2`` there.

    Example:
        >>> import numpy as np
        >>> trace_native(np, np.arange(8.0).reshape(2, 2, 2), axis1=0, axis2=2)
        array([5., 9.])
    """
    if dtype is not None or out is not None:
        raise TypeError(f"numpy.trace: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes "
                        "offset, axis1 and axis2 only: call it on NumPy arrays for dtype= or out=")
    return xp.linalg.trace(xp.permute_dims(x, _trace_moved(len(x.shape), axis1, axis2)), offset=offset)


def diag_transpose(ybar: Any, x: Any, k: int = 0) -> Any:
    if np.ndim(x) == 1:
        return np.diagonal(ybar, k)
    shape = _shape(x)
    if np.ndim(ybar) == 1 and shape[0] == shape[1] == _shape(ybar)[0] + abs(k):
        return np.diag(ybar, k)  # the diagonal of a square matrix: np.diag builds the embedding
    return _diagonal_embed(ybar, _shape(x), k, 0, 1, full=False)


def diagflat_transpose(ybar: Any, x: Any, k: int = 0) -> Any:
    return np.reshape(np.diagonal(ybar, k), _shape(x))


def triu_transpose(ybar: Any, x: Any, k: int = 0) -> Any:
    return _sum_to(np.triu(ybar, k), _shape(x))


def tril_transpose(ybar: Any, x: Any, k: int = 0) -> Any:
    return _sum_to(np.tril(ybar, k), _shape(x))


def conj_transpose(ybar: Any, x: Any) -> Any:
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


def _sort_params(axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    return axis, kind, stable


def sort_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """The pullback scatters ``ybar`` back through the inverse of the sorting permutation."""
    y = np.sort(x, *args, **kwargs)
    axis, kind, stable = _sort_params(*args, **kwargs)

    def sort_pullback(ybar: Any) -> Any:
        perm = _sort_permutation(x, axis, kind, stable)
        inverse = np.argsort(perm, axis=-1 if axis is None else axis)
        if axis is None:
            xbar = np.reshape(np.take(ybar, inverse), _shape(x))
        else:
            xbar = _gather_along(ybar, inverse, _axis(axis, np.ndim(x)))
        return (_NO, project(x, xbar), *_nots(len(args)))

    return y, sort_pullback


def sort_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.sort(x, *args, **kwargs)
    xdot = tangents[1]
    axis, kind, stable = _sort_params(*args, **kwargs)
    perm = _sort_permutation(x, axis, kind, stable)
    if axis is None:
        return y, project(y, np.take(xdot, perm))
    return y, project(y, _gather_along(xdot, perm, _axis(axis, np.ndim(x))))


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


def take_adjoint_transpose(zbar: Any, ybar: Any, indices: Any, shape: Any, axis: Any = None) -> Any:
    """``take_adjoint`` is linear in ``ybar``; its transpose is ``np.take``."""
    return np.take(zbar, np.asarray(indices, dtype=np.intp), axis=axis)


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


def _join_cotangent(ybar: Any, seq: Any, promoted: list[tuple[int, ...]], axis: int) -> Any:
    """The cotangent of the sequence ``seq`` joined along ``axis``: ``ybar`` cut into pieces."""
    return _pack(seq, _split_to(ybar, list(seq), promoted, axis))


def join_transpose(f: Any, layout: Any) -> Any:
    """The transpose of the joining function ``f`` (``np.concatenate``, ``np.stack``, ...) for
    ``RulePair(f, transpose=...)``, from ``layout(seq, *args, **kwargs)``: the shapes the
    inputs are promoted to and the axis they are joined along."""

    def joined_transpose(ybar: Any, seq: Any, *args: Any, **kwargs: Any) -> Any:
        return _join_cotangent(ybar, seq, *layout(list(seq), *args, **kwargs))

    joined_transpose.__name__ = joined_transpose.__qualname__ = f"{f.__name__}_transpose"
    return joined_transpose


#: How each joining function lays its inputs out.
_JOINS = {
    np.concatenate: _concatenate_layout,
    np.stack: _stack_layout,
    np.hstack: _hstack_layout,
    np.vstack: _vstack_layout,
    np.dstack: _dstack_layout,
    np.column_stack: _column_stack_layout,
}


def _append_axis(axis: Any = None) -> Any:
    return axis


def append_rrule(arr: Any, values: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.append(arr, values, *args, **kwargs)
    axis = _append_axis(*args, **kwargs)
    xs = [arr, values]
    promoted = [(math.prod(np.shape(x)),) for x in xs] if axis is None else [np.shape(x) for x in xs]

    def append_pullback(ybar: Any) -> Any:
        a, v = _split_to(ybar, xs, promoted, 0 if axis is None else int(axis))
        return (_NO, _project(arr, a), _project(values, v), *_nots(len(args)))

    return y, append_pullback


def append_frule(tangents: Any, arr: Any, values: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.append`` is linear in both arrays jointly."""
    y = np.append(arr, values, *args, **kwargs)
    ydot = np.append(dense_tangent(arr, tangents[1]), dense_tangent(values, tangents[2]), *args, **kwargs)
    return y, project(y, ydot)


def _split_axis(fname: str, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    if fname in ("split", "array_split"):
        def params(indices_or_sections: Any, axis: int = 0) -> int:
            return axis

        return params(*args, **kwargs)
    if fname == "hsplit":
        return 1 if np.ndim(x) > 1 else 0
    return {"vsplit": 0, "dsplit": 2}[fname]


def _dense_pieces(ybar: Any, zeros: Any) -> list[Any]:
    """The entries of the cotangent of a list output, each zero entry the matching dense zero."""
    entries = list(ybar.backing) if isinstance(ybar, Tangent) else list(ybar)
    if len(entries) != len(zeros):
        raise ValueError(f"cotangent with {len(entries)} entries for an output of {len(zeros)} arrays")
    return [dense_tangent(z, e) for z, e in zip(zeros, entries, strict=True)]


def split_transpose(f: Any) -> Any:
    """The transpose of ``np.split``-like ``f`` (for ``RulePair(f, transpose=...)``): the
    cotangents of the pieces joined back along the axis they were cut on."""

    def pieces_transpose(ybar: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        zeros = _zeros_like_tangent(x)
        pieces = _dense_pieces(ybar, f(zeros, *args, **kwargs))
        if f is np.unstack:
            return np.stack(pieces, axis=kwargs.get("axis", 0)) if pieces else zeros
        return np.concatenate(pieces, axis=_split_axis(f.__name__, x, args, kwargs))

    pieces_transpose.__name__ = pieces_transpose.__qualname__ = f"{f.__name__}_transpose"
    return pieces_transpose


def _atleast_cotangents(arys: tuple[Any, ...], ybar: Any) -> tuple[Any, ...]:
    """The cotangents of ``np.atleast_nd(*arys)``: each entry reshaped back to its input."""
    cts = [ybar] if len(arys) == 1 else (ybar.backing if isinstance(ybar, Tangent) else ybar)
    return (_NO, *(_project(x, np.reshape(dense_tangent(x, c), np.shape(x)))
                   for x, c in zip(arys, cts, strict=True)))


def atleast_rules(f: Any) -> tuple[Any, Any]:
    """The rules of ``np.atleast_1d``, ``_2d`` or ``_3d``: reshapes, one per argument.

    Example:
        >>> import numpy as np
        >>> atleast_rules(np.atleast_2d)[0](1.0)[1](np.ones((1, 1)))
        (NoTangent(), 1.0)
    """

    def atleast_rrule(*arys: Any) -> Any:
        def atleast_pullback(ybar: Any) -> Any:
            return _atleast_cotangents(arys, ybar)

        return f(*arys), atleast_pullback

    def atleast_frule(tangents: Any, *arys: Any) -> Any:
        y = f(*arys)
        dense = (dense_tangent(x, t) for x, t in zip(arys, tangents[1:], strict=True))
        return y, _project(y, f(*dense))

    atleast_rrule.__name__ = atleast_rrule.__qualname__ = f"{f.__name__}_rrule"
    atleast_frule.__name__ = atleast_frule.__qualname__ = f"{f.__name__}_frule"
    return atleast_rrule, atleast_frule


# ----------------------------------------------------------------------------------------------
# element selection: where, clip
# ----------------------------------------------------------------------------------------------
def where_rrule(condition: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.where(condition, *args, **kwargs)
    if len(args) != 2:  # np.where(condition) is np.nonzero
        def nonzero_pullback(ybar: Any) -> Any:
            return _nots(1 + 1 + len(args))

        return y, nonzero_pullback
    x, z = args

    def where_pullback(ybar: Any) -> Any:
        xbar = _sum_to(np.where(condition, ybar, 0), np.shape(x))
        zbar = _sum_to(np.where(condition, 0, ybar), np.shape(z))
        return (_NO, _NO, _project(x, xbar), _project(z, zbar))

    return y, where_pullback


def where_frule(tangents: Any, condition: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.where(condition, *args, **kwargs)
    if len(args) != 2:
        return y, NoTangent()
    x, z = args
    ydot = np.where(condition, dense_tangent(x, tangents[2]), dense_tangent(z, tangents[3]))
    return y, _project(y, np.broadcast_to(ydot, np.shape(y)))


#: The positional form of ``np.clip``'s rules: NumPy's own order, its keyword-only aliases
#: ``min``/``max`` (NumPy 2.1) declared positional so a traced ``min=lo`` gets its cotangent
#: (:func:`rulescore.declare_parameters`). ``ndarray.clip(min, max, out)`` shares the first three.
_CLIP_FORM = inspect.Signature([inspect.Parameter("a", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
    inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    for name, default in (("a_min", _NOVALUE), ("a_max", _NOVALUE), ("out", None), ("min", _NOVALUE),
                          ("max", _NOVALUE))])
declare_parameters(np.clip, _CLIP_FORM)
#: the bound each slot of the form holds (``None``: ``out``)
_CLIP_SLOTS = ("lo", "hi", None, "lo", "hi")


def _clip(a: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.clip`` called in the rules' positional form (the aliases passed back by name)."""
    aliases = {name: v for name, v in zip(("min", "max"), args[3:], strict=False) if v is not _NOVALUE}
    clip: Any = np.clip  # NumPy's overloads cannot type a call spelled from a form
    return clip(a, *args[:3], **aliases, **kwargs)


def _clip_bounds(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The lower and upper bound (``None``: none), from the form's slots or the keywords."""
    found = {"lo": _NOVALUE, "hi": _NOVALUE}
    for slot, v in zip(_CLIP_SLOTS, args, strict=False):
        if slot is not None and v is not _NOVALUE:
            found[slot] = v
    for slot, names in (("lo", ("a_min", "min")), ("hi", ("a_max", "max"))):
        for name in names:
            if found[slot] is _NOVALUE:
                found[slot] = kwargs.get(name, _NOVALUE)
    lo, hi = (None if v is _NOVALUE else v for v in (found["lo"], found["hi"]))
    return lo, hi


def _clip_masks(a: Any, lo: Any, hi: Any) -> tuple[Any, Any, Any]:
    """Where the result is ``a``, the lower bound and the upper bound (``clip = min(max(a, lo), hi)``;
    at a bound the gradient goes to ``a``, as in ChainRules' ``clamp``)."""
    above_lo = np.asarray(True) if lo is None else np.logical_not(np.less(a, lo))
    t = a if lo is None else np.where(above_lo, a, lo)
    below_hi = np.asarray(True) if hi is None else np.logical_not(np.greater(t, hi))
    return (np.logical_and(above_lo, below_hi), np.logical_and(np.logical_not(above_lo), below_hi),
            np.logical_not(below_hi))


def clip_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    y = _clip(a, args, kwargs)
    lo, hi = _clip_bounds(args, kwargs)
    on_a, on_lo, on_hi = _clip_masks(a, lo, hi)
    on = {"lo": on_lo, "hi": on_hi}

    def clip_pullback(ybar: Any) -> Any:
        abar = _project(a, _sum_to(np.where(on_a, ybar, 0), np.shape(a)))
        bounds = []
        for v, slot in zip(args, _CLIP_SLOTS, strict=False):
            if v is None or v is _NOVALUE or slot is None:
                bounds.append(_NO)
            else:
                bounds.append(_project(v, _sum_to(np.where(on[slot], ybar, 0), np.shape(v))))
        return (_NO, abar, *bounds)

    return y, clip_pullback


def clip_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    y = _clip(a, args, kwargs)
    lo, hi = _clip_bounds(args, kwargs)
    on_a, on_lo, on_hi = _clip_masks(a, lo, hi)
    on = {"lo": on_lo, "hi": on_hi}
    ydot: Any = masked(on_a, tangents[1])  # a's or a bound's tangent may be zero
    for t, slot in zip(tangents[2:], _CLIP_SLOTS, strict=False):
        if slot is not None:
            ydot = ydot + masked(on[slot], t)
    return y, _project(y, np.broadcast_to(ydot, np.shape(y)))


# ----------------------------------------------------------------------------------------------
# products: kron, cross (the contractions, vdot and einsum included: rules/contractions.py)
# ----------------------------------------------------------------------------------------------
def _kron_cotangents(ybar: Any, a: Any, b: Any) -> tuple[Any, Any]:
    sa, sb = np.shape(a), np.shape(b)
    d = max(len(sa), len(sb))
    pa, pb = (1,) * (d - len(sa)) + sa, (1,) * (d - len(sb)) + sb
    interleaved = tuple(v for pair in zip(pa, pb, strict=True) for v in pair)
    yr = np.reshape(ybar, interleaved)
    even, odd = list(range(0, 2 * d, 2)), list(range(1, 2 * d, 2))
    abar = np.tensordot(yr, _conj(np.reshape(b, pb)), axes=(odd, list(range(d))))
    bbar = np.tensordot(_conj(np.reshape(a, pa)), yr, axes=(list(range(d)), even))
    return np.reshape(abar, sa), np.reshape(bbar, sb)


def _cross_cotangents(ybar: Any, a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
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


def kron_rrule(a: Any, b: Any) -> Any:
    y = np.kron(a, b)

    def kron_pullback(ybar: Any) -> Any:
        abar, bbar = _kron_cotangents(ybar, a, b)
        return (_NO, _project(a, abar), _project(b, bbar))

    return y, kron_pullback


def kron_frule(tangents: Any, a: Any, b: Any) -> Any:
    y = np.kron(a, b)
    return y, product_tangent(np.kron, y, (a, b), tangents, (0, 1))


def cross_rrule(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.cross(a, b, *args, **kwargs)

    def cross_pullback(ybar: Any) -> Any:
        abar, bbar = _cross_cotangents(ybar, a, b, *args, **kwargs)
        return (_NO, _project(a, abar), _project(b, bbar), *_nots(len(args)))

    return y, cross_pullback


def cross_frule(tangents: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.cross(a, b, *args, **kwargs)
    return y, product_tangent(partial(np.cross, **kwargs), y, (a, b, *args), tangents, (0, 1))


# ----------------------------------------------------------------------------------------------
# conversions: np.array / np.asarray of nested lists, astype
# ----------------------------------------------------------------------------------------------


def array_transpose(ybar: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """Reshaped back, and cut into entries for a (nested) list or tuple ``x``."""
    return _project(x, np.reshape(ybar, np.shape(x)))


def _new_array(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.array(x, ...)``, owning its memory when it copied: with ``ndmin`` NumPy returns a view
    of the copy it made, and an engine following in-place writes (``X -= avg`` in ``np.cov``)
    must see that memory as the result's own, not as an array it never saw being made."""
    y = np.array(x, *args, **kwargs)
    if isinstance(y, np.ndarray) and y.base is not None and not (
            isinstance(x, np.ndarray) and np.shares_memory(y, x)):
        return y.copy()
    return y


def array_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    def array_pullback(ybar: Any) -> Any:
        return (NoTangent(), array_transpose(ybar, x, *args, **kwargs), *(NoTangent() for _ in args))

    return _new_array(x, *args, **kwargs), array_pullback


def _array_frule(f: Any, tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """The frule of ``np.array``-like ``f``: the tangent converted like the primal."""
    y = f(x, *args, **kwargs)
    t = tangents[1]
    if not isinstance(y, np.ndarray) or y.dtype.kind not in "fciu":
        return y, NoTangent()
    if isinstance(x, np.ndarray) and x.shape == y.shape:
        return y, _project(y, t)  # an array in, the same shape out: only the dtype may change
    dense = dense_tangent(x, t)
    ndmin = kwargs.get("ndmin", 0)
    ydot = np.array(dense, dtype=_tangent_dtype(y), ndmin=ndmin)
    return y, _project(y, np.reshape(ydot, y.shape))


def array_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    return _array_frule(_new_array, tangents, x, *args, **kwargs)


def asarray_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    return _array_frule(np.asarray, tangents, x, *args, **kwargs)


def asanyarray_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    return _array_frule(np.asanyarray, tangents, x, *args, **kwargs)


def _astype_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> np.dtype[Any]:
    target: np.dtype[Any] = np.dtype(args[0] if args else kwargs["dtype"])
    return target


def _astype_cotangents(x: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ybar: Any) -> tuple[Any, ...]:
    if _astype_target(args, kwargs).kind not in "fc":  # to ints or bools: no tangent
        return (_NO, _NO, *_nots(len(args)))
    return (_NO, _project(x, ybar), *_nots(len(args)))


def _astype_frule(f: Any, t: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    y = f(x, *args, **kwargs)
    if _astype_target(args, kwargs).kind not in "fc":
        return y, NoTangent()
    if y.dtype.kind == "f" and np.iscomplexobj(t):
        t = np.real(t)
    return y, _project(y, t)


def astype_rules(f: Any) -> tuple[Any, Any]:
    """The rules of ``np.astype`` or ``ndarray.astype``: the identity on the values, no tangent
    for a cast to integers or bools.

    Example:
        >>> import numpy as np
        >>> astype_rules(np.astype)[0](np.ones(2), np.float32)[1](np.ones(2, np.float32))[1]
        array([1., 1.])
    """

    def astype_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        def astype_pullback(ybar: Any) -> Any:
            return _astype_cotangents(x, args, kwargs, ybar)

        return f(x, *args, **kwargs), astype_pullback

    def astype_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        return _astype_frule(f, tangents[1], x, args, kwargs)

    return astype_rrule, astype_frule


def _block_leaves(arrays: Any) -> list[Any]:
    """The blocks of ``np.block``'s nested lists, in order."""
    return [leaf for entry in arrays for leaf in _block_leaves(entry)] if type(arrays) is list else [arrays]


def _block_like(arrays: Any, leaves: Any) -> Any:
    """``arrays``' nesting with its blocks replaced, in order, by those ``leaves`` yields."""
    return [_block_like(entry, leaves) for entry in arrays] if type(arrays) is list else next(leaves)


def _block_sources(arrays: Any) -> list[Any]:
    """For each block of ``np.block(arrays)``: the flat positions of the result its entries fill
    (found by blocking the entries' own numbers)."""
    leaves = _block_leaves(arrays)
    sizes = [math.prod(np.shape(leaf)) for leaf in leaves]
    starts = list(itertools.accumulate([0, *sizes]))
    numbered = (np.reshape(np.arange(start, start + size), np.shape(leaf))
                for leaf, start, size in zip(leaves, starts, sizes, strict=False))
    origin = np.reshape(np.block(_block_like(arrays, numbered)), -1)
    position = np.empty(origin.size, dtype=np.intp)
    position[origin] = np.arange(origin.size)
    return [np.reshape(position[start:start + size], np.shape(leaf))
            for leaf, start, size in zip(leaves, starts, sizes, strict=False)]


def block_rrule(arrays: Any) -> Any:
    """``np.block``: each block's cotangent is the part of the result's it fills."""
    y = np.block(arrays)
    sources = _block_sources(arrays)

    def block_pullback(ybar: Any) -> Any:
        flat = np.reshape(ybar, -1)
        return _NO, _project(arrays, _block_like(arrays, (flat[source] for source in sources)))

    return y, block_pullback


def block_frule(tangents: Any, arrays: Any) -> Any:
    """``np.block`` is linear: the blocks' tangents, blocked."""
    y = np.block(arrays)
    return y, _project(y, np.block(dense_tangent(arrays, tangents[1])))


#: The positional form of ``np.pad``'s rules: ``constant_values`` (collected by NumPy's
#: ``**kwargs``) declared positional, so a traced ``constant_values=c`` gets its cotangent
#: (:func:`rulescore.declare_parameters`); the other options stay keywords.
_PAD_FORM = inspect.Signature([
    inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    for name, default in (("array", inspect.Parameter.empty), ("pad_width", inspect.Parameter.empty),
                          ("mode", "constant"), ("constant_values", _NOVALUE))])
declare_parameters(np.pad, _PAD_FORM)
#: ``np.pad``'s rules as a function linear in the array (the rules below add ``constant_values``).
#: ``np.pad`` in ``x`` alone (linear): what :func:`pad_rrule` adds the constant values' cotangent to.
_PAD_LINEAR = RulePair(np.pad, transpose=pad_transpose)


def _pad_keywords(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``np.pad``'s arguments after the array, from the rules' form back to NumPy's call."""
    if len(args) < 3:
        return args, kwargs
    return args[:2], {**kwargs, "constant_values": args[2]}


def _pad_mode(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return args[1] if len(args) > 1 else kwargs.get("mode", "constant")


def _pad_values_cotangent(ybar: Any, x: Any, pad_width: Any, values: Any) -> Any:
    """The cotangent of ``constant_values``: ``ybar`` summed over the region each of the
    ``(ndim, 2)`` values NumPy broadcasts them to fills (a corner belongs to the last axis padded,
    as NumPy fills axis after axis), then summed back to the values' shape."""
    nd = max(np.ndim(x), 1)
    zeros = np.zeros(np.shape(x))
    pairs = np.zeros((nd, 2))
    for i, j in itertools.product(range(nd), range(2)):
        unit = np.zeros((nd, 2))
        unit[i, j] = 1.0
        pairs[i, j] = np.sum(ybar * np.pad(zeros, pad_width, constant_values=unit))
    shape = np.shape(values)
    if math.prod(shape) == 1:
        return np.reshape(np.sum(pairs), shape)
    if math.prod(shape) == 2 and shape != (2, 1):  # NumPy's reading: (before, after) for every axis
        return np.reshape(np.sum(pairs, axis=0), shape)
    return _sum_to(pairs, shape)


def pad_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.pad``: linear in ``x`` (:func:`pad_transpose`) and, in ``constant`` mode, in a
    ``constant_values`` given in the rules' form (its cotangent: :func:`_pad_values_cotangent`)."""
    call_args, call_kwargs = _pad_keywords(args, kwargs)
    linear_rrule = _PAD_LINEAR.rules()[0]
    assert linear_rrule is not None
    y, linear_pullback = linear_rrule(x, *call_args, **call_kwargs)
    if len(args) < 3:
        return y, linear_pullback

    def pad_pullback(ybar: Any) -> Any:
        _, xbar, *rest = linear_pullback(ybar)
        values = args[2]
        constant = _pad_mode(args, kwargs) == "constant"
        vbar = _project(values, _pad_values_cotangent(ybar, x, args[0], values)) if constant else _NO
        return (_NO, xbar, *rest, vbar)

    return y, pad_pullback


def pad_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    """``np.pad`` is affine in ``x``: the tangent is padded with zeros (or by the same gather),
    in ``constant`` mode with the tangent of ``constant_values`` (given in the rules' form)."""
    values_dot = tangents[4] if len(args) >= 3 else ZeroTangent()
    args, kwargs = _pad_keywords(args, kwargs)
    y = np.pad(x, *args, **kwargs)
    t = tangents[1]
    mode = _pad_mode(args, kwargs)
    if mode not in ("constant", "empty", *_GATHER_PAD_MODES) or kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(f"no derivative for np.pad(mode={mode!r}, {kwargs})")
    kw = dict(kwargs)
    if mode == "constant":
        kw["constant_values"] = dense_tangent(kwargs.get("constant_values", 0.0), values_dot)
    elif mode == "empty":
        args, kw["mode"], kw["constant_values"] = args[:1], "constant", 0
    return y, _project(y, np.pad(dense_tangent(x, t), *args, **kw))


# ----------------------------------------------------------------------------------------------
# the tables
# ----------------------------------------------------------------------------------------------

#: Callables with no derivative: shapes, indices, comparisons, constructors (random numbers:
#: :mod:`rulescore.rules.random`).
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    np.shape, np.ndim, np.size, np.argmax, np.argmin, np.argsort, np.argpartition, np.nonzero, np.argwhere,
    np.flatnonzero, np.searchsorted, np.lexsort, np.unravel_index, np.ravel_multi_index,
    np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones, np.empty,
    np.eye, np.identity, np.tri, np.indices,
    np.isclose, np.allclose, np.array_equal, np.array_equiv,
    np.result_type, np.can_cast, np.promote_types, np.min_scalar_type, np.common_type,
    np.issubdtype, np.iscomplexobj, np.isrealobj, np.isscalar, np.broadcast_shapes, np.broadcast,
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.argpartition, np.ndarray.nonzero,
)


# -- constructors whose values depend on an argument: full, full_like, linspace, arange -----------


def _filled(args: tuple[Any, ...], kwargs: dict[str, Any], position: int) -> Any:
    return args[position] if len(args) > position else kwargs["fill_value"]


def _fill_cotangents(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], ybar: Any) -> tuple[Any, ...]:
    """``np.full(shape, v)`` / ``np.full_like(a, v)``: every entry is ``v``, so ``vbar = sum(ybar)``."""
    value = _filled(args, kwargs, 1)
    vbar = np.sum(ybar) if np.ndim(value) == 0 else unbroadcast(ybar, np.shape(value))
    # full's shape has no tangent space; full_like's array is differentiable, its values unused
    first = ZeroTangent() if f is np.full_like else _NO
    return (_NO, first, *((project(value, vbar) if i == 1 else _NO) for i in range(1, len(args))))


def _fill_frule(f: Any, vdot: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(y, ydot)``; ``vdot`` (the fill value's tangent) is passed on its own, not inside a
    tuple, so that an outer level of an AD engine traces this helper."""
    y = f(*args, **kwargs)
    return y, project(y, np.broadcast_to(vdot, np.shape(y)) + np.zeros_like(y))


def fill_rules(f: Any) -> tuple[Any, Any]:
    """The rules of ``np.full(shape, v)`` or ``np.full_like(a, v)``: linear in the fill value
    ``v`` (given positionally: by keyword it has no tangent slot).

    Example:
        >>> import numpy as np
        >>> reverse, forward = fill_rules(np.full)
        >>> reverse(3, 2.0)[1](np.ones(3)), forward((None, None, 1.0), 2, 5.0)
        ((NoTangent(), NoTangent(), 3.0), (array([5., 5.]), array([1., 1.])))
    """

    # the pullback is defined in the rule, not by a helper: a pullback made by a helper called
    # with traced arguments would be traced by an outer level (forward over reverse)
    def fill_rrule(*args: Any, **kwargs: Any) -> Any:
        def fill_pullback(ybar: Any) -> Any:
            return _fill_cotangents(f, args, kwargs, ybar)

        return f(*args, **kwargs), fill_pullback

    def fill_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        return _fill_frule(f, tangents[2], args, kwargs)

    fill_rrule.__name__ = fill_rrule.__qualname__ = f"{f.__name__}_rrule"
    fill_frule.__name__ = fill_frule.__qualname__ = f"{f.__name__}_frule"
    return fill_rrule, fill_frule


def linspace_rrule(start: Any, stop: Any, *rest: Any, **kwargs: Any) -> Any:
    """``start + (stop - start) * t`` for fixed fractions ``t``: linear in both endpoints."""
    if kwargs.get("retstep") or (len(rest) > 2 and rest[2]):
        raise TypeError("numpy.linspace: retstep=True is not supported under differentiation")
    y = np.linspace(start, stop, *rest, **kwargs)
    t = _linspace_fractions(rest, kwargs)

    def linspace_pullback(ybar: Any) -> Any:
        tt = np.reshape(t, (-1,) + (1,) * (np.ndim(ybar) - 1))
        sbar, ebar = np.sum(ybar * (1 - tt), axis=0), np.sum(ybar * tt, axis=0)
        return (NoTangent(), project(start, sbar if np.ndim(start) else np.sum(sbar)),
                project(stop, ebar if np.ndim(stop) else np.sum(ebar)), *(NoTangent() for _ in rest))

    return y, linspace_pullback


def _linspace_fractions(rest: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The fractions ``t`` of ``linspace(start, stop, *rest, **kwargs)`` (num and endpoint
    positional or by keyword)."""
    num = rest[0] if rest else kwargs.get("num", 50)
    endpoint = rest[1] if len(rest) > 1 else kwargs.get("endpoint", True)
    return np.linspace(0.0, 1.0, num, endpoint=endpoint)


def linspace_frule(tangents: Any, start: Any, stop: Any, *rest: Any, **kwargs: Any) -> Any:
    y = np.linspace(start, stop, *rest, **kwargs)
    t = np.reshape(_linspace_fractions(rest, kwargs), (-1,) + (1,) * (np.ndim(y) - 1))
    s, e = dense_tangent(start, tangents[1]), dense_tangent(stop, tangents[2])
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
        out: list[Any] = [NoTangent()] * (1 + len(args))
        if y.dtype.kind not in "fc":
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
    hdot = tangents[3] if len(args) > 2 else ZeroTangent()
    return y, project(y, tangents[1] + hdot * np.arange(len(y)) + np.zeros_like(y))  # either may be zero


#: NumPy scalar types called as constructors (``np.float64(x)``): the derivative is 1 (projected).
SCALAR_TYPES: tuple[Any, ...] = (np.float16, np.float32, np.float64, np.complex64, np.complex128)
#: Integer and bool scalar constructors carry no derivative.
INTEGER_TYPES: tuple[Any, ...] = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
                                  np.uint64, np.bool_)


def _unit_partial(x: Any) -> float:
    return 1.0


RULES: tuple[RulePair, ...] = (
    *(RulePair(t, partials=_unit_partial) for t in SCALAR_TYPES),
    # the functions linear in their first argument, each with its transpose
    # reshaping: the transpose is the inverse reshape / transpose
    RulePair(np.reshape, transpose=reshape_transpose),
    RulePair(np.ndarray.reshape, transpose=method_reshape_transpose),
    RulePair(np.ravel, transpose=ravel_transpose),
    RulePair(np.ndarray.ravel, transpose=ravel_transpose),
    RulePair(np.ndarray.flatten, transpose=ravel_transpose),
    # a NumPy scalar's methods whose NumPy function takes other arguments (np.reshape(a, shape)
    # for x.reshape(1, 1)) or does not exist (flatten)
    RulePair(np.generic.reshape, transpose=method_reshape_transpose),
    RulePair(np.generic.flatten, transpose=ravel_transpose),
    RulePair(np.generic.transpose, transpose=method_transpose_transpose),
    RulePair(np.squeeze, transpose=same_shape_transpose),
    RulePair(np.ndarray.squeeze, transpose=same_shape_transpose),
    RulePair(np.expand_dims, transpose=same_shape_transpose),
    RulePair(np.transpose, transpose=transpose_transpose),
    RulePair(np.ndarray.transpose, transpose=method_transpose_transpose),
    RulePair(np.swapaxes, transpose=swapaxes_transpose),
    RulePair(np.ndarray.swapaxes, transpose=swapaxes_transpose),
    RulePair(np.moveaxis, transpose=moveaxis_transpose),
    RulePair(np.broadcast_to, transpose=broadcast_to_transpose),
    RulePair(np.copy, transpose=same_shape_transpose),
    RulePair(np.ndarray.copy, transpose=same_shape_transpose),
    RulePair(np.ascontiguousarray, transpose=same_shape_transpose),
    # reordering
    RulePair(np.flip, transpose=flip_transpose),
    RulePair(np.fliplr, transpose=fliplr_transpose),
    RulePair(np.flipud, transpose=flipud_transpose),
    RulePair(np.rot90, transpose=rot90_transpose),
    RulePair(np.roll, transpose=roll_transpose),
    # repeating
    RulePair(np.tile, transpose=tile_transpose),
    RulePair(np.repeat, transpose=repeat_transpose),
    RulePair(np.ndarray.repeat, transpose=repeat_transpose),
    # selecting
    RulePair(np.take, transpose=take_transpose),
    RulePair(np.ndarray.take, transpose=take_transpose),
    RulePair(take_adjoint, transpose=take_adjoint_transpose),
    RulePair(np.diag, transpose=diag_transpose),
    RulePair(np.diagflat, transpose=diagflat_transpose),
    RulePair(np.diagonal, transpose=diagonal_transpose),
    RulePair(np.ndarray.diagonal, transpose=diagonal_transpose),
    RulePair(np.triu, transpose=triu_transpose),
    RulePair(np.tril, transpose=tril_transpose),
    # conjugation and conversions
    RulePair(np.ndarray.conj, transpose=conj_transpose),
    RulePair(np.ndarray.conjugate, transpose=conj_transpose),
    RulePair(np.trace, transpose=trace_transpose, native=trace_native),
    RulePair(np.ndarray.trace, transpose=trace_transpose, native=trace_native),
    *(RulePair(f, *atleast_rules(f)) for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d)),
    RulePair(np.sort, sort_rrule, sort_frule, wrt=(0,)),
    # joining and splitting
    *(RulePair(f, transpose=join_transpose(f, layout)) for f, layout in _JOINS.items()),
    RulePair(np.append, append_rrule, append_frule),
    RulePair(np.block, block_rrule, block_frule),
    *(RulePair(f, transpose=split_transpose(f))
      for f in (np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit, np.unstack)),
    # pad is affine: its frule pads the tangent with zeros (or the constant values' tangent)
    RulePair(np.pad, pad_rrule, pad_frule, wrt=(0, 3)),
    RulePair(np.where, where_rrule, where_frule),
    RulePair(np.clip, clip_rrule, clip_frule, wrt=(0, 1, 2, 4, 5)),
    RulePair(np.ndarray.clip, clip_rrule, clip_frule, wrt=(0, 1, 2)),
    # products (dot, inner, outer, tensordot, matmul and vecdot are in contractions.py)
    RulePair(np.kron, kron_rrule, kron_frule, wrt=(0, 1)),
    RulePair(np.cross, cross_rrule, cross_frule, wrt=(0, 1)),
    RulePair(np.array, array_rrule, array_frule, wrt=(0,)),
    # the rrule from the transpose, the frule its own (it keeps a list's dtype)
    RulePair(np.asarray, transpose=array_transpose, frule=asarray_frule, wrt=(0,)),
    RulePair(np.asanyarray, transpose=array_transpose, frule=asanyarray_frule, wrt=(0,)),
    RulePair(np.ndarray.astype, *astype_rules(np.ndarray.astype), wrt=(0,)),
    RulePair(np.astype, *astype_rules(np.astype), wrt=(0,)),
    # constructors whose values depend on an argument, and scalar types
    RulePair(np.full, *fill_rules(np.full), wrt=(1,)),
    RulePair(np.full_like, *fill_rules(np.full_like), wrt=(1,)),
    RulePair(np.linspace, linspace_rrule, linspace_frule),
    RulePair(np.arange, arange_rrule, arange_frule, wrt=(0, 2)),
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE + INTEGER_TYPES),
)
