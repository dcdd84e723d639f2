"""Rules for NumPy reductions and scans: ``sum``, ``mean``, ``prod``, ``var``, ``std``, ``max``,
``min`` (and ``amax``/``amin``), ``nansum``, ``add.reduce``, ``cumsum``, ``cumprod``, the matching
``ndarray`` methods (``x.sum(axis=0)`` dispatches as ``np.ndarray.sum(x, axis=0)``) and, when SciPy
is installed, the rules of ``scipy.special.logsumexp`` (listed in the table of
:mod:`rulescore.rules.scipy_special`, registered when ``scipy.special`` is imported, so that
importing rulescore does not import SciPy).

Every rule takes the NumPy signature: ``axis`` (``None``, an int, a negative int or a tuple),
``keepdims``, ``dtype=`` where NumPy has it, ``where=``, and ``ddof``/``correction``/``mean`` for
``var`` and ``std``. Positional arguments after the array (``axis``, ``dtype``, ...) get
``NoTangent``; ``initial=`` is treated as a constant. ``out=`` is refused: it writes into an existing
array, which cannot be differentiated.

Conventions:

- **ties in max/min** split the gradient evenly among the tied elements (as ``jax.numpy.max``
  and ``torch.amax`` do): ``np.max([1.0, 3.0, 3.0])`` has gradient ``[0, 0.5, 0.5]``. The frule is
  the same linear map, so it averages the tied tangents. A NaN maximum sends the gradient to the
  NaNs.
- **prod** is exact when the input has zeros: the gradient is the product of all *other*
  elements, built from exclusive cumulative products (no division). **cumprod** divides only when
  it holds concrete arrays with no zeros; otherwise it uses an exact ``O(n^2)`` form.
- **std** has gradient zero where the standard deviation is zero (a subgradient, as in PyTorch)
  instead of dividing by zero.
- **logsumexp idiom**: ``m = x.max(axis, keepdims=True); m + np.log(np.sum(np.exp(x - m), axis,
  keepdims=True))`` differentiates to ``softmax(x)``: the two paths through ``m`` cancel
  whatever element the max picks, ties included.

Pullbacks are written with NumPy functions and operators only, so they differentiate again.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._arithmetic import is_zero
from rulescore._batched import Batched
from rulescore._linear import dense_tangent
from rulescore._namespace import constant_like, foreign_namespace, is_complex_array, unbroadcast_to
from rulescore._projection import project
from rulescore._structural import structural
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import is_complex, normalize_axes, stand_in

_NOVALUE: Any = getattr(np, "_NoValue", object())
_NT = NoTangent()

# -- argument handling -------------------------------------------------------------------------


def _bind(name: str, params: tuple[str, ...], args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments after the array, by name, as NumPy would bind them."""
    if len(args) > len(params):
        raise TypeError(f"{name}() takes at most {len(params) + 1} positional arguments")
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
        bound[key] = value
    if _opt(bound, "out", None) is not None:
        raise TypeError(f"{name}(..., out=...) writes into an existing array and cannot be "
                        "differentiated; drop out= and use the returned value")
    return bound


def _opt(bound: dict[str, Any], key: str, default: Any) -> Any:
    value = bound.get(key, _NOVALUE)
    return default if value is _NOVALUE else value


@structural
def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


@structural
def _dtype(x: Any) -> np.dtype[Any]:
    dt: np.dtype[Any] = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return dt


@structural
def _cotangent_dtype(x: Any) -> np.dtype[Any]:
    dt = _dtype(x)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


def _conj_if(flag: bool, v: Any, xp: Any = np) -> Any:
    return xp.conj(v) if flag else v


@structural
def _keep_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


@structural
def _full_reduction(x: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int,
                                           np.dtype[Any]]:
    """The geometry of a reduction of ``x`` over every axis: its shape, axes, shape with
    ``keepdims``, element count and cotangent dtype (structural: nested levels do not trace it)."""
    return x.shape, tuple(range(x.ndim)), (1,) * x.ndim, x.size, _cotangent_dtype(x)


@structural
def _not_args(n: int) -> tuple[NoTangent, ...]:
    return (NoTangent(),) * n


# -- reductions --------------------------------------------------------------------------------


class _Call:
    """One call of a reduction: its arguments, result and geometry; ``xp`` is the array
    namespace the pullback computes with (NumPy, or the input's own in the native tier)."""

    xp: Any = np

    def __init__(self, name: str, params: tuple[str, ...], compute: Callable[..., Any], x: Any,
                 args: tuple[Any, ...], kwargs: dict[str, Any], default_axis: Any = None) -> None:
        self.x = x
        self.nargs = len(args)
        if not args and not kwargs and type(x) is np.ndarray and default_axis is None:
            # the commonest call, np.sum(x): every axis, no options
            self.kw = {}
            self.y = compute(x)
            self.shape, self.axes, self.kshape, self.count, self.dtype = _full_reduction(x)
            self.keepdims = False
            self.where = True
            self.complex = self.dtype.kind == "c"
            return
        else:
            self.kw = _bind(name, params, args, kwargs)
            self.shape = _shape(x)
            self.axes = normalize_axes(_opt(self.kw, "axis", default_axis), len(self.shape))
            xp = None if type(x) is np.ndarray else foreign_namespace((x,))
            if xp is not None:  # the native tier: a JAX or PyTorch array (see _native_reduction)
                self.xp = xp
                self.y = _native_reduction(xp, name, x, self.axes, self.kw)
            else:
                self.y = compute(x, *args, **kwargs)
            self.kshape = _keep_shape(self.shape, self.axes)
            self.keepdims = bool(_opt(self.kw, "keepdims", False))
            self.where = _opt(self.kw, "where", True)
            self.count = math.prod(self.shape[a] for a in self.axes)
        if self.xp is np:
            self.dtype = _cotangent_dtype(x)
            self.complex = self.dtype.kind == "c"
        else:
            self.complex = is_complex_array(self.xp, x)

    def cotangents(self, xbar: Any) -> tuple[Any, ...]:
        """The pullback's result: ``xbar`` projected on the input, ``NoTangent()`` for the rest."""
        if self.xp is not np:
            return (_NT, unbroadcast_to(self.xp, self.x, self.xp.broadcast_to(xbar, self.shape)),
                    *_not_args(self.nargs))
        return (_NT, project(self.x, xbar), *_not_args(self.nargs))

    def tangent(self, xdot: Any, push: Callable[[_Call, Any], Any]) -> Any:
        """The frule's output tangent: ``push(self, xdot)`` projected on the result (the frule
        runs only when ``xdot`` is non-zero: ``wrt=(0,)``)."""
        if self.xp is not np:
            return unbroadcast_to(self.xp, self.y, push(self, xdot))
        xdot = dense_tangent(self.x, xdot)
        return project(self.y, push(self, xdot if type(xdot) is Batched else np.asarray(xdot)))

    def keep(self, v: Any) -> Any:
        """A value of the result's shape reshaped as if reduced with ``keepdims=True``."""
        return self.xp.reshape(v, self.kshape)

    def spread(self, ybar: Any) -> Any:
        """The cotangent of the result, broadcast back to the input's shape: a read-only view,
        so a pullback downstream can see that it is constant along the broadcast axes."""
        if not self.keepdims and len(self.axes) == len(self.shape):
            return self.xp.broadcast_to(ybar, self.shape)  # a full reduction's cotangent is a number
        return self.xp.broadcast_to(self.keep(ybar), self.shape)

    def reduce(self, v: Any) -> Any:
        """Sum ``v`` (of the input's shape) over the reduced axes, as the primal does."""
        return self.xp.sum(v, axis=self.axes, keepdims=self.keepdims)

    def masked(self, v: Any) -> Any:
        return v if self.where is True else v * self.where

    def counts(self) -> Any:
        """How many elements each output reduces (an int, or an array with ``where=``)."""
        if self.where is True:
            return self.count
        return np.sum(np.broadcast_to(self.where, self.shape), axis=self.axes, keepdims=True)


#: The reductions with a native tier: their array-API names (``correction`` is NumPy's ``ddof``).
_NATIVE = {"sum": "sum", "mean": "mean", "var": "var", "std": "std", "max": "max", "min": "min",
           "prod": "prod"}


def _native_reduction(xp: Any, name: str, x: Any, axes: tuple[int, ...], kw: dict[str, Any]) -> Any:
    """``name`` of ``x`` in its own array namespace ``xp``: axes, ``keepdims`` and ``ddof`` only."""
    allowed = ("axis", "keepdims", "ddof", "correction")
    given = sorted(k for k, v in kw.items() if v is not _NOVALUE and v is not None
                   and not (k == "where" and v is True) and k not in allowed)
    if name not in _NATIVE or given:
        raise TypeError(f"numpy.{name}: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes "
                        f"axis, keepdims and ddof only{'; got ' + ', '.join(given) if given else ''}: call "
                        "it on NumPy arrays for the rest")
    options: dict[str, Any] = {"axis": axes, "keepdims": bool(_opt(kw, "keepdims", False))}
    if name in ("var", "std"):
        options["correction"] = _ddof(kw)
    return getattr(xp, _NATIVE[name])(x, **options)


# sum, nansum, add.reduce ------------------------------------------------------------------------

def _sum_grad(c: _Call, ybar: Any) -> Any:
    return c.masked(c.spread(ybar))


def _sum_push(c: _Call, xdot: Any) -> Any:
    return c.reduce(c.masked(xdot))


def _nansum_grad(c: _Call, ybar: Any) -> Any:
    return c.masked(c.spread(ybar) * (c.x == c.x))  # NaNs (x != x) get no gradient


def _nansum_push(c: _Call, xdot: Any) -> Any:
    return c.reduce(c.masked(xdot * (c.x == c.x)))


# mean ------------------------------------------------------------------------------------------

def _mean_weight(c: _Call) -> Any:
    n = c.counts()
    if c.where is True:
        return 1.0 / n if n else 0.0
    return c.where / np.maximum(n, 1)


def _mean_grad(c: _Call, ybar: Any) -> Any:
    return c.spread(ybar) * _mean_weight(c)


def _mean_push(c: _Call, xdot: Any) -> Any:
    return c.reduce(xdot * _mean_weight(c))


# prod ------------------------------------------------------------------------------------------

def _exclusive_products(x: Any, shape: tuple[int, ...], axes: tuple[int, ...], xp: Any = np) -> Any:
    """For each element of the array ``x`` (of namespace ``xp``), the product of the *other*
    elements of its slice along ``axes``: exact with zeros (no division), from exclusive
    cumulative products."""
    n = math.prod(shape[a] for a in axes)
    if n == 0:
        return xp.zeros_like(x, dtype=_cotangent_dtype(x)) if xp is np else xp.zeros_like(x)
    nd = len(shape)
    keep = [a for a in range(nd) if a not in axes]
    perm = keep + list(axes)
    moved = x if perm == list(range(nd)) else xp.permute_dims(x, perm)
    batch = tuple(shape[a] for a in keep)
    flat = xp.reshape(moved, (*batch, n))
    ones = xp.ones_like(flat[..., :1])
    left = xp.cumulative_prod(xp.concat([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = xp.cumulative_prod(xp.concat([ones, xp.flip(flat[..., 1:], axis=-1)], axis=-1), axis=-1)
    others = xp.reshape(left * xp.flip(right, axis=-1), tuple(shape[a] for a in perm))
    if perm == list(range(nd)):
        return others
    return xp.permute_dims(others, tuple(perm.index(i) for i in range(nd)))


def _prod_partials(c: _Call) -> Any:
    if c.xp is not np:  # the native tier: no where= or initial=
        return _exclusive_products(c.x, c.shape, c.axes, c.xp)
    x = np.asarray(c.x) if c.where is True else np.where(c.where, c.x, 1)
    d = c.masked(_exclusive_products(x, c.shape, c.axes))
    initial = _opt(c.kw, "initial", None)
    if initial is not None:
        d = d * initial
    return d


def _prod_grad(c: _Call, ybar: Any) -> Any:
    return c.keep(ybar) * _conj_if(c.complex, _prod_partials(c), c.xp)


def _prod_push(c: _Call, xdot: Any) -> Any:
    return c.reduce(_prod_partials(c) * xdot)


# var, std --------------------------------------------------------------------------------------

def _ddof(kw: dict[str, Any]) -> Any:
    """``var``'s and ``std``'s ``ddof`` (or the array API's ``correction``; default 0)."""
    correction = _opt(kw, "correction", None)
    if correction is None:
        return _opt(kw, "ddof", 0)
    return correction


def _var_parts(c: _Call) -> tuple[Any, Any]:
    """``(x - mean, weight)``: d var / dx = 2 * weight * (x - mean) (conjugated for complex)."""
    ddof = _ddof(c.kw)
    mean = _opt(c.kw, "mean", None)
    if mean is None:
        if c.where is True:
            mean = c.xp.mean(c.x, axis=c.axes, keepdims=True)
        else:
            mean = np.mean(c.x, axis=c.axes, keepdims=True, where=c.where)
    n = c.counts()
    if c.where is True:
        weight: Any = 1.0 / (n - ddof) if n > ddof else math.nan
    else:
        dof = n - ddof
        weight = c.where / np.where(dof > 0, dof, np.nan)
    return c.x - mean, weight


def _var_grad(c: _Call, ybar: Any) -> Any:
    centred, weight = _var_parts(c)
    return c.keep(ybar) * (2 * weight) * centred


def _var_push(c: _Call, xdot: Any) -> Any:
    centred, weight = _var_parts(c)
    inner = c.xp.real(c.xp.conj(centred) * xdot) if c.complex else centred * xdot
    return c.reduce(inner * (2 * weight))


def _safe(y: Any) -> Any:
    return y + (y == 0)  # 1 where y is 0: the gradient there is then 0 (the centred x is 0)


def _std_grad(c: _Call, ybar: Any) -> Any:
    centred, weight = _var_parts(c)
    return c.keep(ybar) * weight * centred / _safe(c.keep(c.y))


def _std_push(c: _Call, xdot: Any) -> Any:
    return _var_push(c, xdot) / (2 * _safe(c.y))


# max, min --------------------------------------------------------------------------------------

def _extremum_weights(c: _Call) -> Any:
    """1/k on each of the k elements equal to their slice's result, 0 elsewhere."""
    y = c.keep(c.y)
    hits = (c.x == y) | ((c.x != c.x) & (y != y))
    if c.where is not True:
        hits = hits & c.where
    return hits / c.xp.maximum(c.xp.sum(hits, axis=c.axes, keepdims=True), 1)


def _extremum_grad(c: _Call, ybar: Any) -> Any:
    return c.keep(ybar) * _extremum_weights(c)


def _extremum_push(c: _Call, xdot: Any) -> Any:
    return c.reduce(_extremum_weights(c) * xdot)


# full reductions (np.sum(x), np.max(x): every axis, no options): a cotangent map without the
# _Call bookkeeping, which an outer level of nested AD would otherwise trace line by line

def _sum_all_grad(x: np.ndarray, y: Any, ybar: Any) -> Any:
    return np.broadcast_to(ybar, x.shape)


#: Full-reduction cotangent maps that read only ``x``'s shape and dtype: their pullback keeps
#: ``stand_in(x)``, so the reduced array (often a temporary, ``np.sum((a - b) ** 2)``) is freed
#: at once, as it is without differentiation.
_SHAPE_ONLY = frozenset({_sum_all_grad})


def _extremum_all_grad(x: np.ndarray, y: Any, ybar: Any) -> Any:
    hits = (x == y) | ((x != x) & (y != y))  # y is one of x's elements, so at least one hit
    return ybar * (hits / np.sum(hits))


_SUM_PARAMS = ("axis", "dtype", "out", "keepdims", "initial", "where")
_MEAN_PARAMS = ("axis", "dtype", "out", "keepdims")
_VAR_PARAMS = ("axis", "dtype", "out", "ddof", "keepdims")
_MAX_PARAMS = ("axis", "out", "keepdims", "initial", "where")

# the rules: one generic rrule and frule, a table row per reduction ------------------------------

def reduction_rules(compute: Callable[..., Any], name: str, params: tuple[str, ...],
                    grad: Callable[[_Call, Any], Any], push: Callable[[_Call, Any], Any],
                    default_axis: Any = None, grad_all: Callable[..., Any] | None = None,
                    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule of the reduction ``compute`` (``np.sum``, ...) from its cotangent map
    ``grad(call, ybar)`` and its tangent map ``push(call, xdot)``: only the derivative differs
    from one reduction to the next, the argument handling is the same. ``grad_all(x, y, ybar)``,
    when given, is the cotangent map of the commonest call, ``compute(x)`` of a NumPy array.

    Example:
        >>> import numpy as np
        >>> rrule, frule = reduction_rules(np.sum, "sum", _SUM_PARAMS, _sum_grad, _sum_push)
        >>> rrule(np.ones((2, 3)), 0)[1](np.array([1.0, 2.0, 3.0]))[1]
        array([[1., 2., 3.],
               [1., 2., 3.]])
        >>> frule((None, np.ones(3)), np.arange(3.0))
        (np.float64(3.0), np.float64(3.0))
    """

    def reduction_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        if grad_all is not None and not args and not kwargs and type(x) is np.ndarray:
            y = compute(x)
            if grad_all in _SHAPE_ONLY:
                x = stand_in(x)

            def full_reduction_pullback(ybar: Any) -> Any:
                return _NT, project(x, grad_all(x, y, ybar))

            full_reduction_pullback.__name__ = full_reduction_pullback.__qualname__ = pullback_name
            return y, full_reduction_pullback
        c = _Call(name, params, compute, x, args, kwargs, default_axis)

        def reduction_pullback(ybar: Any) -> Any:
            return c.cotangents(grad(c, ybar))

        reduction_pullback.__name__ = reduction_pullback.__qualname__ = pullback_name
        return c.y, reduction_pullback

    def reduction_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        c = _Call(name, params, compute, x, args, kwargs, default_axis)
        return c.y, c.tangent(tangents[1], push)

    pullback_name = f"{name}_pullback"
    reduction_rrule.__name__ = reduction_rrule.__qualname__ = f"{name}_rrule"
    reduction_frule.__name__ = reduction_frule.__qualname__ = f"{name}_frule"
    return reduction_rrule, reduction_frule


#: One row per reduction: the callables it serves (the first computes), its name, the
#: parameters after the array, its cotangent and tangent maps, its default axis, and the
#: cotangent map of a reduction over every axis with no options (or None).
_REDUCTIONS: tuple[tuple[Any, ...], ...] = (
    ((np.sum, np.ndarray.sum), "sum", _SUM_PARAMS, _sum_grad, _sum_push, None, _sum_all_grad),
    ((np.add.reduce,), "add_reduce", _SUM_PARAMS, _sum_grad, _sum_push, 0, None),
    ((np.nansum,), "nansum", _SUM_PARAMS, _nansum_grad, _nansum_push, None, None),
    ((np.mean, np.ndarray.mean), "mean", _MEAN_PARAMS, _mean_grad, _mean_push, None, None),
    ((np.prod, np.ndarray.prod), "prod", _SUM_PARAMS, _prod_grad, _prod_push, None, None),
    ((np.var, np.ndarray.var), "var", _VAR_PARAMS, _var_grad, _var_push, None, None),
    ((np.std, np.ndarray.std), "std", _VAR_PARAMS, _std_grad, _std_push, None, None),
    ((np.max, np.amax, np.ndarray.max), "max", _MAX_PARAMS, _extremum_grad, _extremum_push, None,
     _extremum_all_grad),
    ((np.min, np.amin, np.ndarray.min), "min", _MAX_PARAMS, _extremum_grad, _extremum_push, None,
     _extremum_all_grad),
)


# -- scans -------------------------------------------------------------------------------------
# Written against the array namespace ``xp`` (NumPy, or the input's own: the native tier).

def _reverse_cumsum(z: Any, axis: int, xp: Any = np) -> Any:
    return xp.flip(xp.cumulative_sum(xp.flip(z, axis=axis), axis=axis), axis=axis)


def _to_last(v: Any, axis: int, xp: Any) -> Any:
    """``v`` with ``axis`` moved last (``permute_dims``: PyTorch's ``moveaxis`` has no vmap rule)."""
    nd = len(v.shape)
    return xp.permute_dims(v, (*(i for i in range(nd) if i != axis), axis))


def _from_last(v: Any, axis: int, xp: Any) -> Any:
    """The inverse of :func:`_to_last`."""
    perm = list(range(len(v.shape) - 1))
    perm.insert(axis, len(v.shape) - 1)
    return xp.permute_dims(v, perm)


def _cumprod_matrix(x: Any, axis: int, xp: Any = np) -> tuple[Any, Any]:
    """``C[..., i, j] = prod(x[k] for k <= j if k != i)`` along ``axis`` (moved last), and the
    mask ``j >= i``: the exact Jacobian of cumprod, zeros included."""
    moved = _to_last(xp.asarray(x), axis, xp)
    n = moved.shape[-1]
    eye = constant_like(xp, np.eye(n, dtype=bool), x)
    rows = xp.where(eye, 1, moved[..., None, :])  # row i: x with x[i] replaced by 1
    return xp.cumulative_prod(rows, axis=-1), constant_like(xp, np.triu(np.ones((n, n), dtype=bool)), x)


def _no_zeros(x: Any, y: Any) -> bool:
    """Concrete NumPy arrays (not traced) without zeros: cumprod may divide by x."""
    return type(x) is np.ndarray and type(y) is np.ndarray and bool(np.all(x != 0))


def _cumsum_grad(x: Any, y: Any, ybar: Any, axis: int, xp: Any = np) -> Any:
    return _reverse_cumsum(ybar, axis, xp)


def _cumsum_push(x: Any, y: Any, xdot: Any, axis: int, xp: Any = np) -> Any:
    return xp.cumulative_sum(xdot, axis=axis)


def _cumprod_grad(x: Any, y: Any, ybar: Any, axis: int, xp: Any = np) -> Any:
    cplx = is_complex(x) if xp is np else is_complex_array(xp, x)
    if _no_zeros(x, y):
        return _reverse_cumsum(ybar * _conj_if(cplx, y), axis) / _conj_if(cplx, x)
    jac, upper = _cumprod_matrix(x, axis, xp)
    ybar_rows = _to_last(ybar, axis, xp)[..., None, :] * upper
    return _from_last(xp.sum(_conj_if(cplx, jac, xp) * ybar_rows, axis=-1), axis, xp)


def _cumprod_push(x: Any, y: Any, xdot: Any, axis: int, xp: Any = np) -> Any:
    if _no_zeros(x, y):
        return y * np.cumsum(xdot / x, axis=axis)
    jac, upper = _cumprod_matrix(x, axis, xp)
    xdot_cols = _to_last(xdot, axis, xp)[..., :, None] * upper
    return _from_last(xp.sum(jac * xdot_cols, axis=-2), axis, xp)


class _Scan:
    """One call of a scan: the input as the scan sees it (flattened for ``axis=None``), the axis,
    the result, and the namespace ``xp`` the rules compute with (the native tier on non-NumPy
    arrays: ``axis`` only)."""

    def __init__(self, name: str, compute: Callable[..., Any], x: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        kw = _bind(name, ("axis", "dtype", "out"), args, kwargs)
        axis = kw.get("axis")
        xp = None if type(x) is np.ndarray else foreign_namespace((x,))
        self.xp = xp or np
        self.x, self.nargs = x, len(args)
        self.xs, self.axis = x, 0
        if axis is None:  # the flattened input
            self.xs = self.xp.reshape(x, (-1,))
        else:
            self.axis = normalize_axes(axis, len(_shape(x)))[0]
        if xp is None:
            self.y = compute(x, *args, **kwargs)
            return
        if kw.get("dtype") is not None:
            raise TypeError(f"numpy.{name}: the native rule (on {getattr(xp, '__name__', xp)} arrays) takes "
                            "axis only; got dtype: call it on NumPy arrays for the rest")
        scan = xp.cumulative_sum if name == "cumsum" else xp.cumulative_prod
        self.y = scan(self.xs, axis=self.axis)

    def cotangents(self, xbar: Any) -> tuple[Any, ...]:
        if self.xp is np:
            return (_NT, project(self.x, np.reshape(xbar, _shape(self.x))), *_not_args(self.nargs))
        return (_NT, unbroadcast_to(self.xp, self.x, self.xp.reshape(xbar, self.x.shape)),
                *_not_args(self.nargs))

    def tangent(self, xdot: Any, push: Callable[..., Any]) -> Any:
        if self.xp is np:
            xdot = np.reshape(dense_tangent(self.x, xdot), _shape(self.xs))
            return project(self.y, push(self.xs, self.y, xdot, self.axis))
        xdot = self.xp.reshape(xdot, self.xs.shape)
        return unbroadcast_to(self.xp, self.y, push(self.xs, self.y, xdot, self.axis, self.xp))


def scan_rules(compute: Callable[..., Any], name: str, grad: Callable[..., Any],
               push: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule of the scan ``compute`` (``np.cumsum``, ...) from its cotangent map
    ``grad(x, y, ybar, axis, xp)`` and tangent map ``push(x, y, xdot, axis, xp)``.

    Example:
        >>> import numpy as np
        >>> rrule, _ = scan_rules(np.cumsum, "cumsum", _cumsum_grad, _cumsum_push)
        >>> rrule(np.ones(3))[1](np.ones(3))[1]
        array([3., 2., 1.])
    """

    def scan_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        c = _Scan(name, compute, x, args, kwargs)

        def scan_pullback(ybar: Any) -> Any:
            return c.cotangents(grad(c.xs, c.y, ybar, c.axis, c.xp))

        scan_pullback.__name__ = scan_pullback.__qualname__ = f"{name}_pullback"
        return c.y, scan_pullback

    def scan_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        c = _Scan(name, compute, x, args, kwargs)
        return c.y, c.tangent(tangents[1], push)

    scan_rrule.__name__ = scan_rrule.__qualname__ = f"{name}_rrule"
    scan_frule.__name__ = scan_frule.__qualname__ = f"{name}_frule"
    return scan_rrule, scan_frule


_SCANS: tuple[tuple[Any, ...], ...] = (
    ((np.cumsum, np.ndarray.cumsum), "cumsum", _cumsum_grad, _cumsum_push),
    ((np.cumprod, np.ndarray.cumprod), "cumprod", _cumprod_grad, _cumprod_push),
)


RULES: tuple[RulePair, ...] = (
    *(RulePair(f, *pair, wrt=(0,)) for fs, name, params, grad, push, axis, grad_all in _REDUCTIONS
      for pair in [reduction_rules(fs[0], name, params, grad, push, axis, grad_all)] for f in fs),
    *(RulePair(f, *pair, wrt=(0,)) for fs, name, grad, push in _SCANS
      for pair in [scan_rules(fs[0], name, grad, push)] for f in fs),
)


# -- scipy.special.logsumexp (optional) ----------------------------------------------------------

_LSE_PARAMS = ("axis", "b", "keepdims", "return_sign")


class _LogSumExp:
    """One call of ``logsumexp(a, axis, b, keepdims, return_sign)`` and its partials, computed in
    the namespace ``xp`` of ``a`` and ``b`` (the native tier on non-NumPy arrays: ``axis``,
    ``b`` and ``keepdims``)."""

    def __init__(self, compute: Callable[..., Any], a: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        # one structural call for the argument handling: a nested level would trace each line
        (self.return_sign, with_b, self.nargs, self.axes, self.kshape, self.keepdims,
         self.complex) = _lse_layout(a, args, kwargs)
        self.a, self.b = a, (args[1] if len(args) >= 2 else kwargs["b"]) if with_b else None
        xp = None if type(a) is np.ndarray else foreign_namespace((a, self.b))
        self.xp = xp or np
        if xp is None:
            self.y = compute(a, *args, **kwargs)
        else:
            self.y = self._native(xp)
        self.lse: Any
        self.sign: Any
        self.lse, self.sign = self.y if self.return_sign else (self.y, None)

    def _native(self, xp: Any) -> Any:
        """The log of the sum of ``b * exp(a)`` in ``xp``, shifted by the finite maximum."""
        if self.b is not None and foreign_namespace((self.b,)) is None:
            self.b = constant_like(xp, np.asarray(self.b), self.a)
        if self.return_sign or any(is_complex_array(xp, v) for v in (self.a, self.b)):
            raise TypeError(f"scipy.special.logsumexp: the native rule (on {getattr(xp, '__name__', xp)} "
                            "arrays) takes real a and b, axis and keepdims: call it on NumPy arrays for "
                            "return_sign= or complex input")
        m = xp.max(self.a, axis=self.axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        e = xp.exp(self.a - m)
        total = xp.sum(self.weights(e), axis=self.axes, keepdims=True)
        lse = xp.log(total) + m
        return lse if self.keepdims else xp.reshape(lse, tuple(n for i, n in enumerate(lse.shape)
                                                             if i not in self.axes))

    def exps(self) -> Any:
        """``exp(a - lse)`` times the sign: d lse / d b (safe where lse is infinite)."""
        xp = self.xp
        lse = self.lse if self.keepdims else xp.reshape(self.lse, self.kshape)
        finite = xp.isfinite(lse)
        if xp is not np or not finite.all():  # (NumPy: a flag, not two traced calls at a nested level)
            lse = xp.where(finite, lse, xp.zeros_like(lse))
        e = xp.exp(self.a - lse)
        if self.sign is not None:
            e = e * np.reshape(self.sign, self.kshape)
        return e

    def weights(self, e: Any) -> Any:
        """d lse / d a from :meth:`exps`: ``b`` times them."""
        if self.b is not None:
            e = e * self.b
        return e

    def keep(self, v: Any) -> Any:
        return self.xp.reshape(v, self.kshape)

    def fit(self, x: Any, g: Any) -> Any:
        """The cotangent ``g`` of ``x`` (an argument or the result), in ``x``'s namespace."""
        return project(x, g) if self.xp is np else unbroadcast_to(self.xp, x, g)


@structural
def _lse_layout(a: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                ) -> tuple[bool, bool, int, tuple[int, ...], tuple[int, ...], bool, bool]:
    """What one ``logsumexp(a, *args, **kwargs)`` call's rules need besides the arrays:
    ``return_sign``, whether ``b`` is given, the number of positional arguments after ``a``, the
    reduced axes, the shape with ``keepdims``, ``keepdims``, and (when NumPy computes the call,
    not the native tier) whether ``a`` or ``b`` is complex."""
    kw = _bind("logsumexp", _LSE_PARAMS, args, kwargs)
    b = kw.get("b")
    shape = _shape(a)
    if b is not None:
        shape = np.broadcast_shapes(shape, _shape(b))
    axes = normalize_axes(kw.get("axis"), len(shape))
    with_numpy = type(a) is np.ndarray or foreign_namespace((a, b)) is None
    complex_ = with_numpy and (is_complex(a) or (b is not None and is_complex(b)))
    return (bool(kw.get("return_sign", False)), b is not None, len(args), axes,
            _keep_shape(shape, axes), bool(kw.get("keepdims", False)), complex_)


def _logsumexp(*args: Any, **kwargs: Any) -> Any:
    return sys.modules["scipy.special"].logsumexp(*args, **kwargs)


@structural
def _real_lse_plan(a: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   ) -> tuple[tuple[int, ...], tuple[NoTangent, ...]] | None:
    """For a real NumPy ``a`` without ``b`` or ``return_sign`` (the commonest call), what its
    straight-line pullback needs: the shape with ``keepdims`` and the other arguments'
    cotangents; ``None`` for any other call."""
    return_sign, with_b, nargs, _, kshape, _, complex_ = _lse_layout(a, args, kwargs)
    if type(a) is np.ndarray and not (return_sign or with_b or complex_):
        return kshape, (_NT,) * nargs
    return None


def logsumexp_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    plan = _real_lse_plan(a, args, kwargs)
    if plan is not None:
        # ybar * exp(a - lse), what _LogSumExp's pullback computes, in straight lines and locals
        # (a nested level traces each method call and attribute read of the general one)
        lse = _logsumexp(a, *args, **kwargs)
        kshape, rest = plan

        def real_logsumexp_pullback(ybar: Any) -> Any:
            lse_k = np.reshape(lse, kshape)
            finite = np.isfinite(lse_k)
            if not finite.all():  # (a flag, not two traced calls at a nested level)
                lse_k = np.where(finite, lse_k, np.zeros_like(lse_k))
            return (_NT, project(a, np.reshape(ybar, kshape) * np.exp(a - lse_k)), *rest)

        real_logsumexp_pullback.__name__ = real_logsumexp_pullback.__qualname__ = "logsumexp_pullback"
        return lse, real_logsumexp_pullback
    call = _LogSumExp(_logsumexp, a, args, kwargs)

    def logsumexp_pullback(ybar: Any) -> Any:
        rest: list[Any] = [_NT] * call.nargs
        with_b = call.nargs >= 2 and call.b is not None
        lbar = ybar[0] if call.return_sign else ybar
        if is_zero(lbar):  # only the sign's cotangent was given: the sign is locally constant
            if with_b:
                rest[1] = ZeroTangent()
            return (_NT, ZeroTangent(), *rest)
        e = call.exps()
        lbar_k = call.keep(lbar)
        if with_b:
            rest[1] = call.fit(call.b, lbar_k * _conj_if(call.complex, e))
        return (_NT, call.fit(a, lbar_k * _conj_if(call.complex, call.weights(e))), *rest)

    return call.y, logsumexp_pullback


def logsumexp_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    call = _LogSumExp(_logsumexp, a, args, kwargs)
    bdot = tangents[3] if call.nargs >= 2 else ZeroTangent()
    e = call.exps()
    total = call.weights(e) * tangents[1] + e * bdot  # either tangent may be zero, not both
    ydot = call.fit(call.lse, call.xp.sum(total, axis=call.axes, keepdims=call.keepdims))
    if call.return_sign:
        return call.y, tangent_type(tuple)(ydot, ZeroTangent())
    return call.y, ydot


__all__ = ["RULES", "logsumexp_frule", "logsumexp_rrule"]
