"""Rules for NumPy's numerical routines written in Python or C that are not ufuncs, reductions or
shape edits: differences (``diff``, ``gradient``), convolution (``convolve``, ``correlate``),
interpolation (``interp``), selection (``select``, ``partition``, ``take_along_axis``), ``ptp``,
``sinc``, ``nan_to_num``, ``real_if_close``, ``rollaxis``, the index builders ``np.r_[...]`` and
``np.c_[...]``, the array-to-Python conversions ``x.item()``/``x.tolist()``, and the rounding
functions (``round``, ``around``, ``x.round()``: zero derivative almost everywhere).

Conventions:

- Linear functions (``diff``, ``gradient`` in ``f``, ``rollaxis``, ``take_along_axis``, ``r_``,
  ``c_``) pull back with their transpose, written with differentiable NumPy calls (``np.pad``,
  ``np.einsum``, the scatter :func:`~rulescore.rules.shape.take_adjoint`), so second derivatives work.
- ``diff``: ``prepend``/``append`` passed positionally get cotangents (keyword arguments never do).
- ``gradient``: differentiable in ``f``, in scalar spacings (``dy/dh = -y/h``) and in coordinate
  arrays, whose cotangent is exact (a complex step per coordinate: ``np.gradient`` is rational in
  them) but does not differentiate again; the frule refuses a coordinate array's tangent.
- ``interp``: differentiable in ``x``, ``xp`` and ``fp`` (and ``left``/``right`` when passed
  positionally); at a knot, the slope of the interval to the right is used (a one-sided
  derivative). ``period=`` is refused.
- ``partition``: the cotangent goes back through the permutation ``np.argpartition`` gives.
- ``r_``/``c_``: string directives (``np.r_['0,2', ...]``) are supported; the entries' positions
  in the result are found by running the same index expression on labelled arrays.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rulescore import RulePair, frule, rrule
from rulescore._config import HasForwardsMode, HasReverseMode, RuleConfig, frule_via_ad, rrule_via_ad
from rulescore._linear import dense_tangent, product_tangent
from rulescore._projection import project, unbroadcast
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import TupleTangent, bind_arguments, conj, entries, is_complex
from rulescore.rules.shape import take_adjoint

_NT = NoTangent()
_ZT = ZeroTangent()
_AXIS_CONCATENATOR: type = type(np.r_).__mro__[1]  # numpy's AxisConcatenator (r_ and c_)

__all__ = ["NON_DIFFERENTIABLE", "RULES"]


def _nots(n: int) -> tuple[Any, ...]:
    return (_NT,) * n


def _scalar_sum(x: Any, dx: Any) -> Any:
    """Project ``dx`` onto ``x``, summing it first when ``x`` is a scalar (it was broadcast)."""
    if np.ndim(x) == 0 and np.ndim(dx) > 0:
        dx = np.sum(dx)
    return project(x, dx)


# ----------------------------------------------------------------------------------------------
# diff
# ----------------------------------------------------------------------------------------------
def _diff_parts(a: Any, p: dict[str, Any]) -> tuple[list[Any], int]:
    """The pieces ``np.diff`` concatenates (prepend, a, append; absent ones left out) and the axis."""
    nd = np.ndim(a)
    axis = int(p["axis"]) % nd if nd else 0
    pieces: list[Any] = []
    for key in ("prepend", "append"):
        v = p[key]
        if v is np._NoValue:
            pieces.append(None)
            continue
        if np.ndim(v) == 0:
            shape = list(np.shape(a))
            shape[axis] = 1
            v = np.broadcast_to(v, tuple(shape))
        pieces.append(v)
    return [pieces[0], a, pieces[1]], axis


def _diff_transpose(g: Any, n: int, axis: int) -> Any:
    """Transpose of ``n`` differences along ``axis``: each is ``pad(g, before) - pad(g, after)``."""
    nd = np.ndim(g)
    before = [(0, 0)] * nd
    after = [(0, 0)] * nd
    before[axis], after[axis] = (1, 0), (0, 1)
    for _ in range(n):
        g = np.pad(g, before) - np.pad(g, after)
    return g


def diff_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.diff(a, *args, **kwargs)
    p = bind_arguments(np.diff, (a, *args), kwargs)
    (pre, _, app), axis = _diff_parts(a, p)
    n = int(p["n"])

    def diff_pullback(ybar: Any) -> Any:
        full = _diff_transpose(ybar, n, axis)
        sizes = [0 if pre is None else np.shape(pre)[axis], np.shape(a)[axis]]
        bars = np.split(full, np.cumsum(sizes), axis=axis)
        rest: list[Any] = list(_nots(len(args)))
        if len(args) >= 3 and pre is not None:
            rest[2] = _scalar_sum(p["prepend"], bars[0])
        if len(args) >= 4 and app is not None:
            rest[3] = _scalar_sum(p["append"], bars[2])
        return (_NT, project(a, bars[1]), *rest)

    return y, diff_pullback


def diff_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.diff(a, *args, **kwargs)
    p = bind_arguments(np.diff, (a, *args), kwargs)
    (pre, _, app), axis = _diff_parts(a, p)
    ts = list(tangents[1:]) + [_ZT] * (5 - len(tangents))
    pieces = [dense_tangent(a, ts[0])]
    if pre is not None:
        pdot = ts[3] if len(args) >= 3 else _ZT
        pieces.insert(0, np.broadcast_to(dense_tangent(p["prepend"], pdot), np.shape(pre)))
    if app is not None:
        adot = ts[4] if len(args) >= 4 else _ZT
        pieces.append(np.broadcast_to(dense_tangent(p["append"], adot), np.shape(app)))
    full = np.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0]
    return y, project(y, np.diff(full, int(p["n"]), axis))


# ----------------------------------------------------------------------------------------------
# ptp = max - min
# ----------------------------------------------------------------------------------------------
def ptp_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """The rules of ``np.max`` and ``np.min`` (ties split evenly), subtracted."""
    hi, hi_back = rrule(np.max, a, *args, **kwargs)
    lo, lo_back = rrule(np.min, a, *args, **kwargs)

    def ptp_pullback(ybar: Any) -> Any:
        return (_NT, project(a, hi_back(ybar)[1] - lo_back(ybar)[1]), *_nots(len(args)))

    return hi - lo, ptp_pullback


def ptp_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    hi, hi_dot = frule(tangents, np.max, a, *args, **kwargs)
    lo, lo_dot = frule(tangents, np.min, a, *args, **kwargs)
    y = hi - lo
    return y, project(y, hi_dot - lo_dot)


# ----------------------------------------------------------------------------------------------
# sinc, nan_to_num, real_if_close
# ----------------------------------------------------------------------------------------------
def sinc_partials(x: Any, result: Any) -> Any:
    """``(cos(pi x) - sinc(x)) / x``, and 0 at ``x = 0`` (sinc is even)."""
    zero = x == 0
    safe = np.where(zero, 1, x)
    return np.where(zero, 0, (np.cos(np.pi * x) - result) / safe)


def _finite_part(x: Any, t: Any) -> Any:
    """``t`` where ``x`` is finite, 0 where ``nan_to_num`` replaced it (per real/imaginary part)."""
    if is_complex(x):
        re = np.where(np.isfinite(np.real(x)), np.real(t), 0)
        im = np.where(np.isfinite(np.imag(x)), np.imag(t), 0)
        return re + 1j * im
    return np.where(np.isfinite(x), t, 0)


def nan_to_num_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.nan_to_num(x, *args, **kwargs)

    def nan_to_num_pullback(ybar: Any) -> Any:
        return (_NT, project(x, _finite_part(x, ybar)), *_nots(len(args)))

    return y, nan_to_num_pullback


def nan_to_num_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.nan_to_num(x, *args, **kwargs)
    return y, project(y, _finite_part(x, tangents[1]))


def real_if_close_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.real_if_close(a, *args, **kwargs)

    def real_if_close_pullback(ybar: Any) -> Any:
        return (_NT, project(a, ybar), *_nots(len(args)))

    return y, real_if_close_pullback


def real_if_close_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    """The real part of the tangent when the imaginary part was dropped (never the tangent's own
    closeness to real, which ``np.real_if_close`` of the tangent would test)."""
    y = np.real_if_close(a, *args, **kwargs)
    adot = tangents[1]
    return y, project(y, adot if is_complex(y) else np.real(adot))


# ----------------------------------------------------------------------------------------------
# gradient
# ----------------------------------------------------------------------------------------------
def _gradient_axes(f: Any, axis: Any) -> list[int]:
    nd = np.ndim(f)
    if axis is None:
        return list(range(nd))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    return [int(a) % nd for a in axes]


def _gradient_spacings(varargs: tuple[Any, ...], k: int) -> list[Any]:
    if not varargs:
        return [1.0] * k
    if len(varargs) == 1 and k > 1:
        return [varargs[0]] * k
    return list(varargs)


def _gradient_matrix(n: int, h: Any, edge_order: Any, dtype: Any) -> Any:
    """``M`` with ``np.gradient(v, h) == M @ v`` for a vector ``v`` of length ``n``."""
    return np.gradient(np.eye(n, dtype=dtype), h, axis=0, edge_order=edge_order)


def _along(m: Any, v: Any, axis: int) -> Any:
    """``m @ v`` along ``axis`` of ``v``."""
    return np.moveaxis(np.tensordot(m, v, axes=([1], [axis])), 0, axis)


def _coordinate_cotangent(f: Any, ybar: Any, h: Any, axis: int, edge_order: Any) -> Any:
    """The cotangent of a coordinate array: ``sum(ybar * dy/dh_k)`` for each ``k``, each by a
    complex step (``np.gradient`` is a rational function of the coordinates: exact to rounding)."""
    if is_complex(f) or is_complex(ybar):
        raise NotImplementedError("numpy.gradient: the derivative in a coordinate array is not "
                                  "supported for complex f; pass the coordinates as constants")
    h = np.asarray(h, dtype=np.float64)
    fc = np.asarray(f, dtype=np.complex128)  # np.gradient computes in the dtype of f
    step = 1e-30
    out = np.zeros(h.shape)
    for k in range(h.size):
        hk = h.astype(np.complex128)
        hk[k] += 1j * step
        dy = np.imag(np.gradient(fc, hk, axis=axis, edge_order=edge_order)) / step
        out[k] = np.sum(np.asarray(ybar) * dy)
    return out


def _coordinate_derivative(f: Any, h: Any, hdot: Any, axis: int, edge_order: Any) -> Any:
    """The derivative of ``np.gradient(f, h)`` in the coordinate array ``h`` along ``hdot``: one
    complex step (exact to rounding, as in :func:`_coordinate_cotangent`), taken on the real and
    imaginary parts of ``f`` apart (``np.gradient`` is linear in ``f``)."""
    step = 1e-30
    hc = np.asarray(h, dtype=np.float64) + 1j * step * np.asarray(hdot, dtype=np.float64)

    def moved(part: Any) -> Any:
        return np.imag(np.gradient(np.asarray(part, dtype=np.complex128), hc, axis=axis,
                                   edge_order=edge_order)) / step

    return moved(np.real(f)) + 1j * moved(np.imag(f)) if is_complex(f) else moved(f)


def gradient_rrule(f: Any, *varargs: Any, axis: Any = None, edge_order: Any = 1) -> Any:
    """Linear in ``f`` along each axis (``M_axis @ f``, ``M`` built by ``np.gradient`` itself);
    a scalar spacing ``h`` scales the result by ``1/h``; a coordinate array's cotangent comes from
    a complex step per coordinate (the pullback of that part does not differentiate again)."""
    y = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    axes = _gradient_axes(f, axis)
    hs = _gradient_spacings(varargs, len(axes))
    dtype = np.result_type(f, 1.0)
    mats = [_gradient_matrix(np.shape(f)[ax], h, edge_order, dtype) for ax, h in zip(axes, hs, strict=True)]
    ys = list(y) if len(axes) > 1 else [y]

    def gradient_pullback(ybar: Any) -> Any:
        bars = entries(ybar, len(axes)) if len(axes) > 1 else [ybar]
        fbar: Any = 0
        hbars: list[Any] = [0] * len(hs)
        for i, (ax, m, yi, g) in enumerate(zip(axes, mats, ys, bars, strict=True)):
            gi = dense_tangent(yi, g)
            fbar = fbar + _along(np.swapaxes(m, 0, 1), gi, ax)
            if np.ndim(hs[i]) == 0:
                hbars[i] = -np.sum(np.real(conj(yi) * gi)) / hs[i]
            else:
                hbars[i] = _coordinate_cotangent(f, gi, hs[i], ax, edge_order)
        fct = project(f, fbar) if not isinstance(fbar, int) else _ZT
        if not varargs:
            return (_NT, fct)
        if len(varargs) == 1 and len(axes) > 1:
            return (_NT, fct, project(varargs[0], sum(hbars)))
        return (_NT, fct, *(project(h, hb) for h, hb in zip(varargs, hbars, strict=True)))

    return y, gradient_pullback


def gradient_frule(tangents: Any, f: Any, *varargs: Any, axis: Any = None, edge_order: Any = 1) -> Any:
    y = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    axes = _gradient_axes(f, axis)
    hs = _gradient_spacings(varargs, len(axes))
    fdot = dense_tangent(f, tangents[1])
    hdots = [_ZT] * len(hs)
    if len(varargs) == 1 and len(axes) > 1:
        hdots = [tangents[2]] * len(hs)
    elif varargs:
        hdots = list(tangents[2:])
    ys = list(y) if len(axes) > 1 else [y]
    dtype = np.result_type(f, 1.0)
    dots = []
    for ax, h, hdot, yi in zip(axes, hs, hdots, ys, strict=True):
        d = _along(_gradient_matrix(np.shape(f)[ax], h, edge_order, dtype), fdot, ax)
        if np.ndim(h) > 0:
            d = d + _coordinate_derivative(f, h, dense_tangent(h, hdot), ax, edge_order)
        else:
            d = d - yi * (hdot / h)  # a zero hdot subtracts nothing
        dots.append(project(yi, d))
    return y, (TupleTangent(*dots) if len(axes) > 1 else dots[0])


# ----------------------------------------------------------------------------------------------
# partition, take_along_axis, rollaxis, select
# ----------------------------------------------------------------------------------------------
def _flat_positions(shape: tuple[int, ...], indices: Any, axis: int) -> np.ndarray[Any, Any]:
    """Flat positions in an array of ``shape`` that ``take_along_axis(., indices, axis)`` reads."""
    nd = len(shape)
    idx = np.asarray(indices, dtype=np.intp) % max(shape[axis], 1)
    out_shape = np.broadcast_shapes(shape[:axis] + (1,) + shape[axis + 1:], idx.shape)
    grids = [np.reshape(np.arange(n), (1,) * d + (n,) + (1,) * (nd - d - 1)) if d != axis else idx
             for d, n in enumerate(shape)]
    grids = [np.broadcast_to(g, out_shape) for g in grids]
    return np.ravel_multi_index(tuple(grids), shape) if grids else np.zeros((), np.intp)


def take_along_axis_rrule(arr: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.take_along_axis(arr, indices, *args, **kwargs)
    axis = bind_arguments(np.take_along_axis, (arr, indices, *args), kwargs)["axis"]

    def take_along_axis_pullback(ybar: Any) -> Any:
        if axis is None:
            xbar = take_adjoint(ybar, indices, (np.size(arr),))
            xbar = np.reshape(xbar, np.shape(arr))
        else:
            shape = np.shape(arr)
            pos = _flat_positions(shape, indices, int(axis) % len(shape))
            xbar = take_adjoint(ybar, pos, shape)
        return (_NT, project(arr, xbar), _NT, *_nots(len(args)))

    return y, take_along_axis_pullback


def take_along_axis_frule(tangents: Any, arr: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.take_along_axis(arr, indices, *args, **kwargs)
    return y, project(y, np.take_along_axis(dense_tangent(arr, tangents[1]), indices, *args, **kwargs))


def _partition_perm(a: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    p = bind_arguments(np.partition, (a, *args), kwargs)
    perm = np.argpartition(a, p["kth"], axis=p["axis"], kind=p["kind"])
    return perm, p["axis"]


def partition_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """Scatter ``ybar`` back through the permutation ``np.argpartition`` gives; the result is
    gathered through the same permutation (a valid partition), so the two always agree."""
    perm, axis = _partition_perm(a, args, kwargs)
    y = _gather(a, perm, axis)
    shape = np.shape(a)

    def partition_pullback(ybar: Any) -> Any:
        if axis is None:
            xbar = np.reshape(take_adjoint(ybar, perm, (np.size(a),)), shape)
        else:
            xbar = take_adjoint(ybar, _flat_positions(shape, perm, int(axis) % len(shape)), shape)
        return (_NT, project(a, xbar), *_nots(len(args)))

    return y, partition_pullback


def _gather(v: Any, perm: Any, axis: Any) -> Any:
    return np.take(np.ravel(v), perm) if axis is None else np.take_along_axis(v, perm, axis)


def partition_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    perm, axis = _partition_perm(a, args, kwargs)
    y = _gather(a, perm, axis)
    return y, project(y, _gather(dense_tangent(a, tangents[1]), perm, axis))


def rollaxis_transpose(ybar: Any, a: Any, axis: Any, start: Any = 0) -> Any:
    nd = np.ndim(a)
    probe = np.broadcast_to(np.zeros(()), tuple(range(1, nd + 1)))  # axis k has length k + 1
    order = [n - 1 for n in np.rollaxis(probe, axis, start).shape]
    return np.transpose(ybar, np.argsort(order))


def _select_choice(condlist: Any, n: int) -> np.ndarray[Any, Any]:
    """Per element, the index of the choice ``np.select`` took (``n`` for the default)."""
    return np.select([np.asarray(c, dtype=bool) for c in condlist], list(range(n)), default=n)


def select_rrule(condlist: Any, choicelist: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.select(condlist, choicelist, *args, **kwargs)
    which = _select_choice(condlist, len(choicelist))

    def select_pullback(ybar: Any) -> Any:
        bars = [_scalar_sum(c, np.where(which == i, ybar, 0)) for i, c in enumerate(choicelist)]
        rest = [_scalar_sum(args[0], np.where(which == len(choicelist), ybar, 0))] if args else []
        return (_NT, _NT, tangent_type(type(choicelist))(*bars), *rest)

    return y, select_pullback


def select_frule(tangents: Any, condlist: Any, choicelist: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.select(condlist, choicelist, *args, **kwargs)
    dots = dense_tangent(list(choicelist), tangents[2])
    default = [dense_tangent(args[0], tangents[3])] if args else []
    ydot = np.select(condlist, [np.broadcast_to(d, np.shape(y)) for d in dots], *default)
    return y, project(y, ydot)


# ----------------------------------------------------------------------------------------------
# np.r_[...], np.c_[...]: operator.getitem on numpy's AxisConcatenator
# ----------------------------------------------------------------------------------------------
def _is_entry(v: Any) -> bool:
    return isinstance(v, (np.ndarray, np.generic, float, complex)) or (
        isinstance(v, int) and not isinstance(v, bool))


def _entries(key: Any) -> tuple[list[Any], list[int]]:
    items = list(key) if isinstance(key, tuple) else [key]
    return items, [i for i, v in enumerate(items) if _is_entry(v)]


def _concat_with(obj: Any, items: list[Any], replace: dict[int, Any]) -> Any:
    new = [replace.get(i, v) for i, v in enumerate(items)]
    return obj[tuple(new)] if len(new) > 1 else obj[new[0]]


def _placement(obj: Any, items: list[Any], where: list[int]) -> list[tuple[Any, Any]]:
    """For each entry: (mask of its elements in the result, their flat positions in the entry),
    from the same index expression run on entries holding labels ``1..size`` (others zeros)."""
    zeros = {i: np.zeros(np.shape(items[i])) for i in where}
    base = np.asarray(_concat_with(obj, items, zeros))
    out = []
    for i in where:
        labels = np.arange(1.0, np.size(items[i]) + 1).reshape(np.shape(items[i]))
        marked = np.asarray(_concat_with(obj, items, {**zeros, i: labels}))
        hit = marked != base
        out.append((hit, (marked - base)[hit].astype(np.intp) - 1))
    return out


def concatenator_getitem_rrule(obj: Any, key: Any) -> Any:
    """``np.r_[a, b]`` and ``np.c_[a, b]``: each entry's cotangent is gathered from where it
    landed in the result."""
    y = obj[key]
    items, where = _entries(key)
    place = _placement(obj, items, where)

    def concatenator_pullback(ybar: Any) -> Any:
        bars: list[Any] = [_NT] * len(items)
        for i, (hit, pos) in zip(where, place, strict=True):
            v = items[i]
            bars[i] = _scalar_sum(v, np.reshape(take_adjoint(ybar[hit], pos, (np.size(v),)), np.shape(v)))
        key_bar = TupleTangent(*bars) if isinstance(key, tuple) else bars[0]
        return _NT, _NT, key_bar

    return y, concatenator_pullback


def concatenator_getitem_frule(tangents: Any, obj: Any, key: Any) -> Any:
    y = obj[key]
    items, where = _entries(key)
    kdot = tangents[2]
    dots = entries(kdot, len(items)) if isinstance(key, tuple) else [kdot]
    zeros = {i: np.zeros(np.shape(items[i])) for i in where}
    base = _concat_with(obj, items, zeros)
    moved = _concat_with(obj, items, {i: dense_tangent(items[i], dots[i]) for i in where})
    return y, project(y, moved - base)


# ----------------------------------------------------------------------------------------------
# x.item(), x.tolist()
# ----------------------------------------------------------------------------------------------
def item_rrule(x: Any, *args: Any) -> Any:
    y = x.item(*args)

    def item_pullback(ybar: Any) -> Any:
        if not args:
            pos: Any = 0
        elif len(args) == 1 and not isinstance(args[0], tuple):
            pos = int(args[0]) % max(np.size(x), 1)
        else:
            index = args[0] if len(args) == 1 else args
            pos = np.ravel_multi_index(tuple(int(i) % n for i, n in zip(index, np.shape(x), strict=True)),
                                       np.shape(x))
        xbar = np.reshape(take_adjoint(ybar, np.asarray(pos), (np.size(x),)), np.shape(x))
        return (_NT, project(x, xbar), *_nots(len(args)))

    return y, item_pullback


def item_frule(tangents: Any, x: Any, *args: Any) -> Any:
    y = x.item(*args)
    return y, project(y, np.asarray(dense_tangent(x, tangents[1])).item(*args))


def _dense_list(y: Any, t: Any) -> Any:
    """The cotangent of a ``tolist()`` result as nested lists of numbers (zeros where absent)."""
    if isinstance(y, list):
        return [_dense_list(v, e) for v, e in zip(y, entries(t, len(y)), strict=True)]
    return dense_tangent(y, t)


def tolist_rrule(x: Any) -> Any:
    y = x.tolist()

    def tolist_pullback(ybar: Any) -> Any:
        dtype = x.dtype if x.dtype.kind in "fc" else np.float64
        return _NT, project(x, np.reshape(np.array(_dense_list(y, ybar), dtype=dtype), np.shape(x)))

    return y, tolist_pullback


def _as_list_tangent(v: Any) -> Any:
    if isinstance(v, list):
        return tangent_type(list)(*(_as_list_tangent(e) for e in v))
    return v


def tolist_frule(tangents: Any, x: Any) -> Any:
    y = x.tolist()
    return y, _as_list_tangent(np.asarray(dense_tangent(x, tangents[1])).tolist())


# ----------------------------------------------------------------------------------------------
# interp
# ----------------------------------------------------------------------------------------------
class _Interp:
    """One call of ``np.interp``: the interval of each query point and its local slope."""

    def __init__(self, x: Any, xp: Any, fp: Any, left: Any, right: Any, period: Any) -> None:
        if period is not None:
            raise NotImplementedError("numpy.interp: no rule for period= (periodic interpolation); "
                                      "wrap the query points with np.mod first")
        self.y = np.interp(x, xp, fp, left, right)
        xp_, fp_ = np.asarray(xp), np.asarray(fp)
        n = xp_.shape[0]
        x_ = np.asarray(x)
        self.j = np.clip(np.searchsorted(xp_, x_, side="right") - 1, 0, max(n - 2, 0))
        self.below, self.above = x_ < xp_[0], x_ > xp_[-1]
        self.inside = ~(self.below | self.above) & (n > 1)
        if n > 1:
            x0, x1 = xp_[self.j], xp_[self.j + 1]
            width = np.where(x1 == x0, 1.0, x1 - x0)
            self.t = np.where(self.inside, (x_ - x0) / width, 0.0)
            self.slope = np.where(self.inside, (fp_[self.j + 1] - fp_[self.j]) / width, 0.0)
        else:
            self.t = self.slope = np.zeros(np.shape(x_))
        self.n = n


def _interp_fp_weights(c: _Interp, left: Any, right: Any) -> tuple[Any, Any, Any]:
    """Weights of ``fp[j]`` and ``fp[j + 1]`` per query point (the ends when ``left``/``right``
    are ``None``)."""
    w0 = np.where(c.inside, 1 - c.t, 0.0)
    w1 = np.where(c.inside, c.t, 0.0)
    if left is None:
        w0 = np.where(c.below, 1.0, w0)
    if right is None:
        w1 = np.where(c.above & (c.n > 1), 1.0, w1)
        w0 = np.where(c.above & (c.n == 1), 1.0, w0)
    return w0, w1, np.minimum(c.j + 1, c.n - 1)


def interp_rrule(x: Any, xp: Any, fp: Any, *args: Any, **kwargs: Any) -> Any:
    p = bind_arguments(np.interp, (x, xp, fp, *args), kwargs)
    left, right = p["left"], p["right"]
    c = _Interp(x, xp, fp, left, right, p["period"])

    def interp_pullback(ybar: Any) -> Any:
        w0, w1, j1 = _interp_fp_weights(c, left, right)
        size = (c.n,)
        fbar = take_adjoint(ybar * w0, c.j, size) + take_adjoint(ybar * w1, j1, size)
        xbar = np.real(conj(c.slope) * ybar) if not is_complex(x) else conj(c.slope) * ybar
        dxp0 = np.real(conj(c.slope * (c.t - 1)) * ybar)
        dxp1 = np.real(conj(-c.slope * c.t) * ybar)
        xpbar = take_adjoint(dxp0, c.j, size) + take_adjoint(dxp1, j1, size)
        rest: list[Any] = list(_nots(len(args)))
        if len(args) >= 1 and left is not None:
            rest[0] = _scalar_sum(left, np.where(c.below, ybar, 0))
        if len(args) >= 2 and right is not None:
            rest[1] = _scalar_sum(right, np.where(c.above, ybar, 0))
        return (_NT, _scalar_sum(x, xbar), project(xp, xpbar), project(fp, fbar), *rest)

    return c.y, interp_pullback


def interp_frule(tangents: Any, x: Any, xp: Any, fp: Any, *args: Any, **kwargs: Any) -> Any:
    p = bind_arguments(np.interp, (x, xp, fp, *args), kwargs)
    left, right = p["left"], p["right"]
    c = _Interp(x, xp, fp, left, right, p["period"])
    ts = list(tangents[1:]) + [_ZT] * (5 - len(tangents) + 1)
    xdot, xpdot, fpdot = (dense_tangent(v, t) for v, t in zip((x, xp, fp), ts[:3], strict=True))
    w0, w1, j1 = _interp_fp_weights(c, left, right)
    xpdot, fpdot = np.asarray(xpdot), np.asarray(fpdot)
    ydot = (c.slope * xdot + w0 * fpdot[c.j] + w1 * fpdot[j1]
            + c.slope * (c.t - 1) * xpdot[c.j] - c.slope * c.t * xpdot[j1])
    if len(args) >= 1 and left is not None:
        ydot = ydot + np.where(c.below, dense_tangent(left, ts[3]), 0)
    if len(args) >= 2 and right is not None:
        ydot = ydot + np.where(c.above, dense_tangent(right, ts[4]), 0)
    return c.y, _scalar_sum(c.y, ydot) if np.ndim(c.y) == 0 else project(c.y, ydot)


# ----------------------------------------------------------------------------------------------
# convolve, correlate
# ----------------------------------------------------------------------------------------------
def _full_window(n: int, m: int, mode: str) -> tuple[int, int]:
    """Where the output of ``mode`` sits in the ``'full'`` convolution: (start, length)."""
    lo, hi = min(n, m), max(n, m)
    if mode == "full":
        return 0, n + m - 1
    if mode == "same":
        return (lo - 1) // 2, hi
    return lo - 1, hi - lo + 1


def _convolve_cotangents(ybar: Any, a: Any, v: Any, mode: str) -> tuple[Any, Any]:
    """Cotangents of ``a`` and ``v`` for ``y = convolve(a, v, mode)``: correlations of the
    cotangent (zero-padded to the full output) with the other argument."""
    n, m = np.shape(a)[0], np.shape(v)[0]
    start, length = _full_window(n, m, mode)
    full = np.pad(ybar, (start, n + m - 1 - start - length))
    return np.correlate(full, v, "valid"), np.correlate(full, a, "valid")


def _mode(args: tuple[Any, ...], kwargs: dict[str, Any], default: str) -> str:
    mode = args[0] if args else kwargs.get("mode", default)
    return {"f": "full", "s": "same", "v": "valid"}.get(str(mode)[:1], str(mode))


def convolve_rrule(a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.convolve(a, v, *args, **kwargs)
    mode = _mode(args, kwargs, "full")

    def convolve_pullback(ybar: Any) -> Any:
        abar, vbar = _convolve_cotangents(ybar, a, v, mode)
        return (_NT, project(a, abar), project(v, vbar), *_nots(len(args)))

    return y, convolve_pullback


def _bilinear_frule(f: Any, tangents: Any, a: Any, v: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
    """The frule of ``f(a, v, ...)``, linear in each of ``a`` and ``v``."""
    y = f(a, v, *args, **kwargs)

    def pair(a_: Any, v_: Any) -> Any:
        return f(a_, v_, *args, **kwargs)

    return y, product_tangent(pair, y, (a, v), tangents, (0, 1))


def convolve_frule(tangents: Any, a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
    return _bilinear_frule(np.convolve, tangents, a, v, args, kwargs)


def correlate_rrule(a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
    """``correlate(a, v) == convolve(a, conj(v[::-1]))`` in every mode."""
    y = np.correlate(a, v, *args, **kwargs)
    mode = _mode(args, kwargs, "valid")
    w = conj(np.flip(v))

    def correlate_pullback(ybar: Any) -> Any:
        abar, wbar = _convolve_cotangents(ybar, a, w, mode)
        return (_NT, project(a, abar), project(v, conj(np.flip(wbar))), *_nots(len(args)))

    return y, correlate_pullback


def correlate_frule(tangents: Any, a: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
    return _bilinear_frule(np.correlate, tangents, a, v, args, kwargs)


# ----------------------------------------------------------------------------------------------
# np.vectorize: the user's function element by element, differentiated by the running AD system
# ----------------------------------------------------------------------------------------------
def _vectorized(vec: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The call's result and its arguments broadcast together (refusing what is not element-wise)."""
    name = getattr(vec.pyfunc, "__qualname__", "the function")
    if kwargs or vec.signature is not None or vec.excluded:
        raise NotImplementedError(
            f"the rule for numpy.vectorize({name}) differentiates an element-wise function of "
            "positional arguments (no signature=, excluded= or keyword arguments): call "
            f"{name} in a loop or on whole arrays instead")
    y = vec(*args)
    if isinstance(y, tuple):
        raise NotImplementedError(f"the rule for numpy.vectorize({name}) differentiates one output; "
                                  f"{name} returns {len(y)}: vectorize each output separately")
    return y, list(np.broadcast_arrays(*(np.asarray(a) for a in args)))


def vectorize_rrule(config: RuleConfig, vec: Any, *args: Any, **kwargs: Any) -> Any:
    """``vec(*args)``: one reverse-mode call of ``vec.pyfunc`` per element (``rc.rrule_via_ad``)."""
    y, arrays = _vectorized(vec, args, kwargs)
    shape = np.shape(y)
    backs = {index: rrule_via_ad(config, vec.pyfunc, *(a[index] for a in arrays))[1]
             for index in np.ndindex(shape)}

    def vectorize_pullback(ybar: Any) -> Any:
        sums = [np.zeros(shape, dtype=np.result_type(a, float)) for a in arrays]
        for index, back in backs.items():
            for total, ct in zip(sums, back(np.asarray(ybar)[index])[1:], strict=True):
                if not isinstance(ct, (NoTangent, ZeroTangent)):
                    total[index] += ct
        return NoTangent(), NoTangent(), *(
            project(a, unbroadcast(total, np.shape(a))) if np.result_type(a).kind in "fc" else NoTangent()
            for a, total in zip(args, sums, strict=True))

    return y, vectorize_pullback


def vectorize_frule(config: RuleConfig, tangents: Any, vec: Any, *args: Any, **kwargs: Any) -> Any:
    y, arrays = _vectorized(vec, args, kwargs)
    shape = np.shape(y)
    dots = [np.broadcast_to(np.asarray(dense_tangent(a, t)), shape)
            for a, t in zip(args, tangents[2:], strict=True)]
    ydot = np.zeros(shape, dtype=np.result_type(y, float))
    for index in np.ndindex(shape):
        point = tuple(a[index] for a in arrays)
        ydot[index] = dense_tangent(y[index] if shape else y, frule_via_ad(
            config, (NoTangent(), *(d[index] for d in dots)), vec.pyfunc, *point)[1])
    return y, project(y, ydot if shape else ydot[()])


#: Rounding: piecewise constant, so no derivative.
NON_DIFFERENTIABLE: tuple[Any, ...] = (np.round, np.around, np.ndarray.round)

RULES: tuple[RulePair, ...] = (
    RulePair(np.diff, diff_rrule, diff_frule),
    RulePair(np.ptp, ptp_rrule, ptp_frule),
    RulePair(np.gradient, gradient_rrule, gradient_frule),
    RulePair(np.select, select_rrule, select_frule),
    RulePair(np.ndarray.tolist, tolist_rrule, tolist_frule),
    RulePair(np.interp, interp_rrule, interp_frule),
    RulePair(np.convolve, convolve_rrule, convolve_frule),
    RulePair(np.correlate, correlate_rrule, correlate_frule),
    RulePair(np.sinc, partials=sinc_partials),
    # the frules of these differentiate their first argument only (or the key's entries)
    RulePair(np.nan_to_num, nan_to_num_rrule, nan_to_num_frule, wrt=(0,)),
    RulePair(np.real_if_close, real_if_close_rrule, real_if_close_frule, wrt=(0,)),
    RulePair(np.take_along_axis, take_along_axis_rrule, take_along_axis_frule, wrt=(0,)),
    RulePair(np.partition, partition_rrule, partition_frule, wrt=(0,)),
    RulePair(np.ndarray.item, item_rrule, item_frule, wrt=(0,)),
    RulePair(np.generic.item, item_rrule, item_frule, wrt=(0,)),
    RulePair(np.generic.tolist, tolist_rrule, tolist_frule, wrt=(0,)),
    RulePair(operator.getitem, concatenator_getitem_rrule, concatenator_getitem_frule,
             (_AXIS_CONCATENATOR,), wrt=(1,)),
    RulePair(np.rollaxis, transpose=rollaxis_transpose),
    RulePair(np.vectorize.__call__, vectorize_rrule, config=HasReverseMode),
    RulePair(np.vectorize.__call__, frule=vectorize_frule, config=HasForwardsMode),
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE),
)
