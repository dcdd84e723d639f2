"""Helpers shared by the rule families: the one place each is defined (or, for those the core
needs too, imported from: :func:`proj`, :func:`fit`, :func:`stand_in`, :func:`as_arrays`,
:func:`as_array_tangent` from :mod:`rulescore._fitting`; :func:`entries` from
:mod:`rulescore._contract`, which reads a structural tangent as the rule contract hands it;
:func:`product_tangent` from :mod:`rulescore._linear`; :func:`mask` (a ufunc's ``where=``) from
:mod:`rulescore._helpers`; :func:`conj` is the public ``rc.conj``).

Derivatives used by several families (``pow``, ``abs``) are here too, so each is written once.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import numpy as np

from rulescore._arithmetic import conj
from rulescore._contract import entries
from rulescore._fitting import as_array_tangent, as_arrays, fit, proj, stand_in
from rulescore._helpers import mask
from rulescore._linear import dense_tangent, product_tangent
from rulescore._projection import project
from rulescore._structural import structural
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent

__all__ = [
    "TupleTangent", "abs_dot", "abs_grad", "as_array_tangent", "as_arrays", "bind_arguments",
    "check_kwargs", "conj", "divmod_cotangents", "divmod_tangent", "entries", "fit",
    "frexp_cotangents", "frexp_tangent", "is_bool_like", "is_complex", "is_int_like", "mask",
    "modf_cotangents", "modf_tangent", "normalize_axes", "pow_grad_p", "pow_grad_x", "pow_partials",
    "product_tangent", "proj", "spread", "stand_in", "sum_dots",
]

_NT = NoTangent()
_ZT = ZeroTangent()
#: ``Tangent[tuple]`` (the cotangent of the tuple output of ``divmod``, ``frexp``, ``modf``).
TupleTangent = tangent_type(tuple)

_SIGNATURES: dict[Any, inspect.Signature] = {}


def bind_arguments(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``f``'s arguments by name, defaults filled in (signatures cached per callable).

    Example:
        >>> import numpy as np
        >>> bind_arguments(np.linalg.norm, (np.ones(2),), {})["ord"] is None
        True
    """
    sig = _SIGNATURES.get(f)
    if sig is None:
        sig = _SIGNATURES[f] = inspect.signature(f)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


_GUFUNC_KEYWORDS = ("axes", "axis", "keepdims")


def check_kwargs(uf: Any, kwargs: dict[str, Any]) -> Any:
    """Refuse ``out=`` (and the axes keywords of generalised ufuncs); return the ``where`` mask
    (``None`` when absent or ``True``).

    Example:
        >>> import numpy as np
        >>> check_kwargs(np.sin, {"where": True}) is None
        True
    """
    out = kwargs.get("out")
    if out is Ellipsis:  # asks for an array rather than a scalar: nothing is written
        out = None
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        raise TypeError(f"numpy.{uf.__name__}: out= is not supported under differentiation (it writes "
                        "into an existing array); use the returned value instead")
    if uf.signature is not None:
        for k in _GUFUNC_KEYWORDS:
            if k in kwargs:
                raise TypeError(f"numpy.{uf.__name__}: {k}= is not supported under differentiation; "
                                "move the axes with np.moveaxis instead")
    where = kwargs.get("where", True)
    if where is True:
        return None
    return where


@structural
def is_complex(v: Any) -> bool:
    """Whether ``v`` is a complex number or has a complex dtype.

    Example:
        >>> import numpy as np
        >>> is_complex(1j), is_complex(np.ones(2)), is_complex(np.complex64(1))
        (True, False, True)
    """
    if isinstance(v, complex):
        return True
    dt = getattr(v, "dtype", None)
    return dt is not None and np.dtype(dt).kind == "c"


@structural
def normalize_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (``None`` for every axis, an int, a negative int or a sequence) as sorted
    non-negative axes, NumPy's ``AxisError`` for one out of range.

    Example:
        >>> normalize_axes(None, 3), normalize_axes(-1, 3), normalize_axes((2, 0), 3)
        ((0, 1, 2), (2,), (0, 2))
    """
    if axis is None:
        return tuple(range(ndim))
    out = set()
    for a in axis if isinstance(axis, (tuple, list)) else (axis,):
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.add(a % ndim)
    return tuple(sorted(out))


def spread(xs: Any, ybar: Any) -> Any:
    """Cotangent of the iterable ``xs`` for ``y = sum(xs)``: ``ybar`` in every entry.

    Lists and tuples get ``Tangent[list]`` / ``Tangent[tuple]``; an array (summed along its first
    axis) an array; an iterable that cannot hold a tangent (a generator, a range) ``NoTangent``.

    Example:
        >>> spread([1.0, 2.0], 3.0)
        Tangent[list](3.0, 3.0)
    """
    if type(xs) is list or type(xs) is tuple:
        return tangent_type(type(xs))(*(proj(v, ybar) for v in xs))
    if isinstance(xs, np.ndarray):
        return fit(xs, ybar)
    if isinstance(xs, (list, tuple)):
        return project(xs, [proj(v, ybar) for v in xs])
    return _NT


def sum_dots(xs: Any, xsdot: Any) -> Any:
    """Forward tangent of ``sum(xs)`` given the tangent of ``xs`` (a zero gives a zero).

    Example:
        >>> import rulescore as rc
        >>> sum_dots([1.0, 2.0], rc.Tangent[list](0.5, 0.25))
        0.75
    """
    if isinstance(xs, np.ndarray):
        return np.sum(dense_tangent(xs, xsdot), axis=0)
    total: Any = _ZT
    for v in entries(xsdot, len(xs)):
        total = total + v
    return total


# -- pow: builtins.pow, operator.pow, math.pow, numpy.power, numpy.float_power -----------------


def is_int_like(p: Any) -> bool:
    """An integer exponent (Python/NumPy int or integer array): it has no tangent space here.

    Example:
        >>> import numpy as np
        >>> is_int_like(np.arange(2)), is_int_like(2.0)
        (True, False)
    """
    if isinstance(p, (int, np.integer)):
        return True
    dt = getattr(p, "dtype", None)
    return dt is not None and dt.kind in "iub"


def is_bool_like(p: Any) -> bool:
    """A boolean exponent (``bool``, ``np.bool_`` or a boolean array): it has no tangent space, while
    an integer exponent gets a float cotangent, as every integer argument does (ChainRules projects
    an integer's tangent onto the reals).

    Example:
        >>> import numpy as np
        >>> is_bool_like(True), is_bool_like(np.array([True])), is_bool_like(2)
        (True, True, False)
    """
    if isinstance(p, (bool, np.bool_)):
        return True
    dt = getattr(p, "dtype", None)
    return dt is not None and dt.kind == "b"


def _pow_dx_at_zero(p: Any) -> Any:
    """Limit of ``p * x ** (p - 1)`` as ``x -> 0`` from above."""
    pr = p.real
    if pr == 1:
        return 1.0
    if pr > 1 or pr == 0:
        return 0.0
    return np.inf


def pow_grad_x(x: Any, p: Any, z: Any) -> Any:
    """``d(x ** p)/dx``; at ``x == 0`` its limit (``1`` for ``p == 1``, ``0`` for ``p == 0`` or
    ``p > 1``, ``inf`` for ``0 < p < 1``).

    Example:
        >>> pow_grad_x(2.0, 3, 8.0), pow_grad_x(0.0, 0.5, 0.0)
        (12.0, inf)
    """
    if not isinstance(x, np.ndarray) and not isinstance(p, np.ndarray):
        if x != 0:
            if isinstance(x, np.integer):
                x = x * 1.0
            return p * x ** (p - 1)
        if getattr(p, "imag", 0) == 0 and p.real >= 1:
            # at 0 the formula's value is its limit (1 for p == 1, else 0) and, unlike the limit's
            # constant, it depends on x: an outer differentiation (a higher derivative at 0) needs it
            return p * (x * 1.0) ** (p - 1)
        return _pow_dx_at_zero(p)
    if getattr(x, "dtype", None) is not None and x.dtype.kind in "iub":
        x = x * 1.0
    elif isinstance(x, (int, np.integer)):
        x = x * 1.0
    if type(p) in (int, float) and p == 2:
        return 2 * x  # the common square: one pass instead of a power and a product
    with np.errstate(divide="ignore", invalid="ignore"):
        d = p * x ** (p - 1)
        if isinstance(p, np.ndarray) or p == 0:
            d = np.where((x == 0) & (p == 0), 0.0, d)
    return d


def pow_grad_p(x: Any, p: Any, z: Any) -> Any:
    """``d(x ** p)/dp``: ``z * log(x)``; for real ``x < 0`` and real ``z`` (``p`` an integer, or a
    float with an integer value) ``z * log(-x)``, the derivative of the real part of ``x ** p``
    along real ``p`` (ChainRules' ``real(log(complex(x)))``); ``0`` at ``x == 0``.

    Example:
        >>> round(float(pow_grad_p(2.0, 3.0, 8.0)), 4), round(float(pow_grad_p(-2.0, 3, -8.0)), 4)
        (5.5452, -5.5452)
    """
    if not isinstance(x, np.ndarray) and not isinstance(p, np.ndarray) and not isinstance(z, np.ndarray):
        if is_complex(x):
            return z * np.log(x) if x != 0 else 0.0 * z
        if x > 0:
            return z * np.log(x)
        if is_complex(z):  # Python's (-2.0) ** 0.5 is complex: use the principal complex log
            return z * np.log(x + 0j) if x != 0 else 0.0 * z
        return z * np.log(-x) if x < 0 else 0.0 * z
    with np.errstate(divide="ignore", invalid="ignore"):
        nz = x != 0
        if is_complex(x):
            return np.where(nz, z * np.log(np.where(nz, x, 1)), 0)
        return np.where(nz, z * np.log(np.abs(np.where(nz, x, 1))), 0)


def pow_partials(x: Any, p: Any, result: Any) -> Any:
    """Both partials of ``x ** p`` (an integer exponent too gets ``z * log(x)``; a boolean one
    ``NoTangent()``).

    Example:
        >>> dx, dp = pow_partials(2.0, 3, 8.0)
        >>> dx, round(float(dp), 4)
        (12.0, 5.5452)
    """
    return pow_grad_x(x, p, result), (_NT if is_bool_like(p) else pow_grad_p(x, p, result))


# -- abs: builtins.abs, operator.abs, numpy.absolute ---------------------------------------------


def _sign_times(x: float, v: Any) -> Any:
    """``sign(x) * v`` for a Python number ``x``, without a NumPy call (the scalar hot path)."""
    if x > 0:
        return v
    return -v if x < 0 else 0.0 * v


def abs_grad(x: Any, y: Any, ybar: Any) -> Any:
    """Cotangent of ``x`` for ``y = abs(x)``: ``sign(x) * ybar``, ``x / |x| * real(ybar)`` for
    complex ``x`` (``0`` at ``0``).

    Example:
        >>> abs_grad(-2.0, 2.0, 1.0), abs_grad(3j, 3.0, 1.0)
        (-1.0, 1j)
    """
    if type(x) is float or type(x) is int:
        return _sign_times(x, ybar)
    if is_complex(x):
        if isinstance(x, np.ndarray):
            nz = y != 0
            return np.where(nz, x / np.where(nz, y, 1), 0) * np.real(ybar)
        return x / y * np.real(ybar) if y != 0 else 0.0 * x * np.real(ybar)
    return np.sign(x) * ybar


def abs_dot(x: Any, y: Any, xdot: Any) -> Any:
    """Tangent of ``abs(x)``: ``sign(x) * xdot``; ``real(conj(x) * xdot) / |x|`` for complex.

    Example:
        >>> abs_dot(-2.0, 2.0, 1.0), float(abs_dot(3j, 3.0, 1j))
        (-1.0, 1.0)
    """
    if type(x) is float or type(x) is int:
        return _sign_times(x, xdot)
    if is_complex(x):
        num = np.real(np.conj(x) * xdot)
        if isinstance(x, np.ndarray) or isinstance(num, np.ndarray):
            nz = y != 0
            return np.where(nz, num / np.where(nz, y, 1), 0)
        return num / y if y != 0 else 0.0 * num
    return np.sign(x) * xdot


# -- two-output functions: divmod, modf, frexp (builtins/math/numpy share the derivatives) -------


def divmod_cotangents(x: Any, y: Any, quotient: Any, outbar: Any, where: Any = None) -> Any:
    """The pullback of ``(q, r) = divmod(x, y)``: ``q`` is piecewise constant, ``r = x - q * y``.

    Example:
        >>> import rulescore as rc
        >>> divmod_cotangents(7.0, 2.0, 3.0, rc.Tangent[tuple](1.0, 1.0))
        (NoTangent(), 1.0, -3.0)
    """
    rbar = entries(outbar, 2)[1]
    return _NT, proj(x, mask(where, rbar)), proj(y, mask(where, -rbar * quotient))


def divmod_tangent(out: Any, xdot: Any, ydot: Any, where: Any = None) -> Any:
    """The tangent of ``(q, r) = divmod(x, y)``: zero for ``q``, ``xdot - q * ydot`` for ``r``."""
    return TupleTangent(_ZT, fit(out[1], mask(where, xdot - out[0] * ydot)))


def modf_cotangents(x: Any, outbar: Any, where: Any = None) -> Any:
    """The pullback of ``(frac, whole) = modf(x)``: ``whole`` is piecewise constant.

    Example:
        >>> import rulescore as rc
        >>> modf_cotangents(2.5, rc.Tangent[tuple](2.0, 1.0))
        (NoTangent(), 2.0)
    """
    return _NT, proj(x, mask(where, entries(outbar, 2)[0]))


def modf_tangent(out: Any, xdot: Any, where: Any = None) -> Any:
    """The tangent of ``(frac, whole) = modf(x)``."""
    return TupleTangent(fit(out[0], mask(where, xdot)), _ZT)


def frexp_cotangents(x: Any, exponent: Any, outbar: Any, where: Any = None) -> Any:
    """The pullback of ``(m, e) = frexp(x)``: ``m = x * 2 ** -e`` with ``e`` piecewise constant.

    Example:
        >>> import rulescore as rc
        >>> frexp_cotangents(8.0, 4, rc.Tangent[tuple](1.0, rc.NoTangent()))
        (NoTangent(), 0.0625)
    """
    return _NT, proj(x, mask(where, entries(outbar, 2)[0] * np.ldexp(1.0, -exponent)))


def frexp_tangent(out: Any, xdot: Any, where: Any = None) -> Any:
    """The tangent of ``(m, e) = frexp(x)``."""
    return TupleTangent(fit(out[0], mask(where, xdot * np.ldexp(1.0, -out[1]))), _NT)
