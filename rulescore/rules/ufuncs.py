"""Rules for NumPy's ufuncs (and ``np.real``, ``np.imag``, ``np.angle``).

Tables:

- :data:`PARTIALS`: ``{ufunc: partials(*args, result)}`` for the element-wise ufuncs, registered
  with :func:`~rulescore.rules.operators.elementwise_rules` (pullbacks named ``<ufunc>_pullback``);
- :data:`RULES`: ``{callable: (rrule, frule)}`` for the others: ``absolute`` and ``conjugate``
  (not holomorphic), ``matmul``/``vecdot``/``matvec``/``vecmat`` (generalised ufuncs), the
  two-output ``divmod``/``modf``/``frexp``, and ``np.real``/``np.imag``/``np.angle``;
- :data:`NON_DIFFERENTIABLE`: ``sign``, ``floor``, ``ceil``, ``trunc``, ``rint``, comparisons,
  ``logical_*``, ``isnan``/``isinf``/``isfinite``, bitwise operations, ``floor_divide``,
  ``heaviside``, ``signbit``, ``spacing``, ``nextafter``, ``gcd``, ``lcm``, ...

Aliases share the rules of the ufunc they name: ``np.abs`` is ``np.absolute``, ``np.conj`` is
``np.conjugate``, ``np.mod`` is ``np.remainder``, ``np.true_divide`` is ``np.divide``,
``np.pow`` is ``np.power``, ``np.acos`` is ``np.arccos`` (and so on for the array-API names).

Conventions:

- Broadcasting: each cotangent is summed back to its argument's shape and keeps its dtype
  (``float32`` stays ``float32``; an integer argument gets ``float64``; a bool none).
- Complex: holomorphic functions multiply the cotangent by the conjugate of the derivative.
  ``absolute``, ``angle``, ``real`` and ``imag`` are real-valued functions of a complex ``z``: their
  gradient is ``df/dRe(z) + 1j * df/dIm(z)`` (ChainRules), e.g. ``z / |z| * real(ybar)`` for
  ``absolute``; ``conjugate`` maps ``ybar`` to ``conj(ybar)``.
- ``where=mask``: the primal is computed as NumPy does (entries where ``mask`` is ``False`` are
  left uninitialised) and every cotangent and tangent is zero there.
- ``out=`` is refused with a ``TypeError`` naming the ufunc: writing into an existing array is
  not differentiable (``out=None`` is accepted). The generalised ufuncs (``matmul``, ``vecdot``,
  ``matvec``, ``vecmat``) also refuse ``axes=``/``axis=``/``keepdims=``. Other keywords
  (``dtype``, ``casting``, ...) are passed through.
- ``maximum``/``minimum``/``fmax``/``fmin``: the chosen argument gets the cotangent; **ties split
  it 50/50** between the two arguments; a NaN propagated by ``maximum``/``minimum`` takes the
  cotangent from the argument it came from (``fmax``/``fmin`` prefer the non-NaN argument).
- Edges: derivatives that are infinite (``sqrt`` at ``0``, ``arcsin`` at ``±1``) are ``inf``, not
  NaN; ``hypot`` and ``arctan2`` use the zero subgradient at the origin; ``power`` follows
  :mod:`rulescore.rules.operators` (``d/dp`` is ``NoTangent()`` for an integer exponent, ``0``
  for ``x <= 0``).
- Accuracy: ``expm1``'s derivative is ``exp(x)`` (not ``result + 1``, which cancels);
  ``logaddexp``'s are ``exp(-logaddexp(0, y - x))``, which neither overflows nor cancels.

The ufunc methods (``np.add.reduce``, ``.accumulate``, ``.outer``, ``.at``) are not covered here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._helpers import non_differentiable
from rulescore._registry import frule, rrule
from rulescore._thunks import Thunk
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.operators import (
    MINUS_ONE,
    ONE,
    FromResult,
    TupleTangent,
    abs_dot,
    abs_grad,
    add_dots,
    as_array_tangent,
    as_arrays,
    conj,
    ct,
    elementwise_rules,
    entries,
    fit,
    is_complex,
    is_int_like,
    matmul_grad,
    pow_grad_p,
    pow_grad_x,
    proj,
)

_NT = NoTangent()
_ZT = ZeroTangent()
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_GUFUNC_KEYWORDS = ("axes", "axis", "keepdims")


def check_kwargs(uf: Any, kwargs: dict[str, Any]) -> Any:
    """Refuse ``out=`` (and the axes keywords of generalised ufuncs); return the ``where`` mask
    (``None`` when absent or ``True``)."""
    out = kwargs.get("out")
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


def _mask(where: Any, g: Any) -> Any:
    return g if where is None else np.where(where, g, 0)


# -- element-wise partials ---------------------------------------------------------------------


def _power_partials(x: Any, p: Any, result: Any) -> Any:
    return pow_grad_x(x, p, result), (_NT if is_int_like(p) else pow_grad_p(x, p, result))


def _float_power_partials(x: Any, p: Any, result: Any) -> Any:
    one = np.float64(1.0)  # compute the partials in double precision, as float_power does
    xx = x * one
    return pow_grad_x(xx, p, result), (_NT if is_int_like(p) else pow_grad_p(xx, p * one, result))


def _arctan2_partials(y: Any, x: Any, result: Any) -> Any:
    den = x * x + y * y
    nz = den != 0
    den = np.where(nz, den, 1)
    return np.where(nz, x / den, 0), np.where(nz, -y / den, 0)


def _hypot_partials(x: Any, y: Any, result: Any) -> Any:
    nz = result != 0
    r = np.where(nz, result, 1)
    return np.where(nz, x / r, 0), np.where(nz, y / r, 0)


def _logaddexp_partials(x: Any, y: Any, result: Any) -> Any:
    return np.exp(-np.logaddexp(0, y - x)), np.exp(-np.logaddexp(0, x - y))


def _logaddexp2_partials(x: Any, y: Any, result: Any) -> Any:
    return np.exp2(-np.logaddexp2(0, y - x)), np.exp2(-np.logaddexp2(0, x - y))


def _split(first: Any, tie: Any) -> Any:
    w = np.where(first, 1.0, np.where(tie, 0.5, 0.0))
    return w, 1.0 - w


#: One entry per differentiable element-wise ufunc: ``ufunc: partials(*args, result)``.
PARTIALS: dict[Any, Callable[..., Any]] = {
    np.add: FromResult(lambda result: (ONE, ONE)),
    np.subtract: FromResult(lambda result: (ONE, MINUS_ONE)),
    np.multiply: lambda x, y, result: (y, x),
    np.divide: lambda x, y, result: (1 / y, -result / y),
    np.power: _power_partials,
    np.float_power: _float_power_partials,
    np.negative: FromResult(lambda result: MINUS_ONE),
    np.positive: FromResult(lambda result: ONE),
    np.fabs: lambda x, result: np.sign(x),
    np.exp: FromResult(lambda result: result),
    np.exp2: FromResult(lambda result: result * _LN2),
    np.expm1: lambda x, result: np.exp(x),
    np.log: lambda x, result: 1 / x,
    np.log2: lambda x, result: 1 / (x * _LN2),
    np.log10: lambda x, result: 1 / (x * _LN10),
    np.log1p: lambda x, result: 1 / (1 + x),
    np.sqrt: FromResult(lambda result: 0.5 / result),
    np.cbrt: FromResult(lambda result: 1 / (3 * result * result)),
    np.square: lambda x, result: 2 * x,
    np.reciprocal: FromResult(lambda result: -result * result),
    np.sin: lambda x, result: np.cos(x),
    np.cos: lambda x, result: -np.sin(x),
    np.tan: FromResult(lambda result: 1 + result * result),
    np.arcsin: lambda x, result: 1 / np.sqrt(1 - x * x),
    np.arccos: lambda x, result: -1 / np.sqrt(1 - x * x),
    np.arctan: lambda x, result: 1 / (1 + x * x),
    np.sinh: lambda x, result: np.cosh(x),
    np.cosh: lambda x, result: np.sinh(x),
    np.tanh: FromResult(lambda result: 1 - result * result),
    np.arcsinh: lambda x, result: 1 / np.sqrt(x * x + 1),
    np.arccosh: lambda x, result: 1 / (np.sqrt(x - 1) * np.sqrt(x + 1)),
    np.arctanh: lambda x, result: 1 / (1 - x * x),
    np.deg2rad: lambda x, result: _RAD,
    np.radians: lambda x, result: _RAD,
    np.rad2deg: lambda x, result: _DEG,
    np.degrees: lambda x, result: _DEG,
    np.arctan2: _arctan2_partials,
    np.hypot: _hypot_partials,
    np.logaddexp: _logaddexp_partials,
    np.logaddexp2: _logaddexp2_partials,
    np.maximum: lambda x, y, result: _split((x > y) | np.isnan(x), x == y),
    np.minimum: lambda x, y, result: _split((x < y) | np.isnan(x), x == y),
    np.fmax: lambda x, y, result: _split((x > y) | np.isnan(y), x == y),
    np.fmin: lambda x, y, result: _split((x < y) | np.isnan(y), x == y),
    np.copysign: lambda x, y, result: (np.copysign(1.0, x) * np.copysign(1.0, y), None),
    np.fmod: lambda x, y, result: (ONE, -np.rint((x - result) / y)),
    np.remainder: lambda x, y, result: (ONE, -np.floor_divide(x, y)),
    np.ldexp: lambda x, i, result: (np.ldexp(1.0, i), _NT),
}


# -- hand-written rules --------------------------------------------------------------------------


def absolute_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.absolute, kwargs)
    y = np.absolute(x, **kwargs)

    def absolute_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        with np.errstate(divide="ignore", invalid="ignore"):
            g = abs_grad(as_arrays((x,))[0], y, ybar)
        return _NT, proj(x, _mask(where, g))

    return y, absolute_pullback


def absolute_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.absolute, kwargs)
    y = np.absolute(x, **kwargs)
    xdot = ct(tangents[1])
    if xdot is None:
        return y, _ZT
    with np.errstate(divide="ignore", invalid="ignore"):
        ydot = abs_dot(as_arrays((x,))[0], y, xdot)
    return y, fit(y, _mask(where, ydot))


def conjugate_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.conjugate, kwargs)
    y = np.conjugate(x, **kwargs)

    def conjugate_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        return _NT, proj(x, _mask(where, conj(ybar)))

    return y, conjugate_pullback


def conjugate_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.conjugate, kwargs)
    y = np.conjugate(x, **kwargs)
    xdot = ct(tangents[1])
    return y, fit(y, None if xdot is None else _mask(where, conj(xdot)))


def _bilinear_frule(uf: Any) -> Callable[..., Any]:
    """The frule of a generalised ufunc linear in each argument: ``uf(xdot, y) + uf(x, ydot)``."""

    def bilinear_frule(tangents: Any, x: Any, y: Any, **kwargs: Any) -> Any:
        check_kwargs(uf, kwargs)
        xdot, ydot = (_array_dot(a, t) for a, t in zip((x, y), tangents[1:], strict=True))
        z = uf(x, y, **kwargs)
        zdot = add_dots(None if xdot is None else uf(xdot, y), None if ydot is None else uf(x, ydot))
        return z, fit(z, zdot)

    bilinear_frule.__name__ = bilinear_frule.__qualname__ = f"{uf.__name__}_frule"
    return bilinear_frule


def _array_dot(a: Any, t: Any) -> Any:
    t = ct(t)
    if t is not None and (type(a) is list or type(a) is tuple):
        return as_array_tangent(t)
    return t


def matmul_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
    check_kwargs(np.matmul, kwargs)
    z = np.matmul(x, y, **kwargs)

    def matmul_pullback(zbar: Any) -> Any:
        zbar = ct(zbar)
        if zbar is None:
            return _NT, _ZT, _ZT
        xa, ya = as_arrays((x, y))
        return (_NT, Thunk(lambda: proj(x, matmul_grad(xa, ya, zbar, 0))),
                Thunk(lambda: proj(y, matmul_grad(xa, ya, zbar, 1))))

    return z, matmul_pullback


def vecdot_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
    check_kwargs(np.vecdot, kwargs)
    z = np.vecdot(x, y, **kwargs)

    def vecdot_pullback(zbar: Any) -> Any:  # z = sum(conj(x) * y, axis=-1)
        zbar = ct(zbar)
        if zbar is None:
            return _NT, _ZT, _ZT
        a, b = as_arrays((x, y))
        g = np.expand_dims(zbar, -1)
        return _NT, proj(x, b * conj(g)), proj(y, a * g)

    return z, vecdot_pullback


def matvec_rrule(a: Any, v: Any, **kwargs: Any) -> Any:
    check_kwargs(np.matvec, kwargs)
    z = np.matvec(a, v, **kwargs)

    def matvec_pullback(zbar: Any) -> Any:  # z = a @ v over the last axes
        zbar = ct(zbar)
        if zbar is None:
            return _NT, _ZT, _ZT
        aa, vv = as_arrays((a, v))
        abar = np.expand_dims(zbar, -1) * np.expand_dims(conj(vv), -2)
        vbar = np.matvec(np.swapaxes(conj(aa), -1, -2), zbar)
        return _NT, proj(a, abar), proj(v, vbar)

    return z, matvec_pullback


def vecmat_rrule(v: Any, a: Any, **kwargs: Any) -> Any:
    check_kwargs(np.vecmat, kwargs)
    z = np.vecmat(v, a, **kwargs)

    def vecmat_pullback(zbar: Any) -> Any:  # z = conj(v) @ a over the last axes
        zbar = ct(zbar)
        if zbar is None:
            return _NT, _ZT, _ZT
        vv, aa = as_arrays((v, a))
        vbar = np.matvec(aa, conj(zbar))
        abar = np.expand_dims(vv, -1) * np.expand_dims(zbar, -2)
        return _NT, proj(v, vbar), proj(a, abar)

    return z, vecmat_pullback


def divmod_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.divmod, kwargs)
    out = np.divmod(x, y, **kwargs)

    def divmod_pullback(ybar: Any) -> Any:  # the quotient is piecewise constant
        rbar = entries(ybar, 2)[1]
        if rbar is None:
            return _NT, _ZT, _ZT
        return _NT, proj(x, _mask(where, rbar)), proj(y, _mask(where, -rbar * out[0]))

    return out, divmod_pullback


def divmod_frule(tangents: Any, x: Any, y: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.divmod, kwargs)
    _, xdot, ydot = tangents
    xdot, ydot = ct(xdot), ct(ydot)
    out = np.divmod(x, y, **kwargs)
    rdot = add_dots(xdot, None if ydot is None else -out[0] * ydot)
    if rdot is None:
        return out, _ZT
    return out, TupleTangent(_ZT, fit(out[1], _mask(where, rdot)))


def modf_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.modf, kwargs)
    out = np.modf(x, **kwargs)

    def modf_pullback(ybar: Any) -> Any:  # the integral part is piecewise constant
        fbar = entries(ybar, 2)[0]
        if fbar is None:
            return _NT, _ZT
        return _NT, proj(x, _mask(where, fbar))

    return out, modf_pullback


def modf_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.modf, kwargs)
    out = np.modf(x, **kwargs)
    xdot = ct(tangents[1])
    if xdot is None:
        return out, _ZT
    return out, TupleTangent(fit(out[0], _mask(where, xdot)), _ZT)


def frexp_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.frexp, kwargs)
    out = np.frexp(x, **kwargs)

    def frexp_pullback(ybar: Any) -> Any:  # mantissa = x * 2 ** -exponent
        mbar = entries(ybar, 2)[0]
        if mbar is None:
            return _NT, _ZT
        return _NT, proj(x, _mask(where, mbar * np.ldexp(1.0, -out[1])))

    return out, frexp_pullback


def frexp_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.frexp, kwargs)
    out = np.frexp(x, **kwargs)
    xdot = ct(tangents[1])
    if xdot is None:
        return out, _ZT
    return out, TupleTangent(fit(out[0], _mask(where, xdot * np.ldexp(1.0, -out[1]))), _NT)


def real_rrule(x: Any) -> Any:
    y = np.real(x)

    def real_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None:
            return _NT, _ZT
        return _NT, proj(x, np.real(ybar))

    return y, real_pullback


def real_frule(tangents: Any, x: Any) -> Any:
    y = np.real(x)
    xdot = ct(tangents[1])
    return y, fit(y, None if xdot is None else np.real(xdot))


def imag_rrule(x: Any) -> Any:
    y = np.imag(x)

    def imag_pullback(ybar: Any) -> Any:
        ybar = ct(ybar)
        if ybar is None or not is_complex(x):
            return _NT, _ZT
        return _NT, proj(x, 1j * np.real(ybar))

    return y, imag_pullback


def imag_frule(tangents: Any, x: Any) -> Any:
    y = np.imag(x)
    xdot = ct(tangents[1])
    if xdot is None or not is_complex(x):
        return y, _ZT
    return y, fit(y, np.imag(xdot))


def _angle_scale(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
    deg = args[0] if args else kwargs.get("deg", False)
    return _DEG if deg else 1.0


def angle_rrule(z: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.angle(z, *args, **kwargs)
    scale = _angle_scale(args, kwargs)

    def angle_pullback(ybar: Any) -> Any:  # gradient i z / |z|^2 (0 at 0); 0 for real z
        ybar = ct(ybar)
        if ybar is None or not is_complex(z):
            return (_NT, _ZT, *(_NT for _ in args))
        zr, zi = np.real(z), np.imag(z)
        den = zr * zr + zi * zi
        nz = den != 0
        g = np.where(nz, 1j * z / np.where(nz, den, 1), 0) * (np.real(ybar) * scale)
        return (_NT, proj(z, g), *(_NT for _ in args))

    return y, angle_pullback


def angle_frule(tangents: Any, z: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.angle(z, *args, **kwargs)
    zdot = ct(tangents[1])
    if zdot is None or not is_complex(z):
        return y, _ZT
    zr, zi = np.real(z), np.imag(z)
    den = zr * zr + zi * zi
    nz = den != 0
    ydot = np.where(nz, np.imag(np.conj(z) * zdot) / np.where(nz, den, 1), 0) * _angle_scale(args, kwargs)
    return y, fit(y, ydot)


#: ``{callable: (rrule, frule)}`` for the ufuncs (and functions) not given by partials.
RULES: dict[Any, tuple[Callable[..., Any], Callable[..., Any]]] = {
    np.absolute: (absolute_rrule, absolute_frule),
    np.conjugate: (conjugate_rrule, conjugate_frule),
    np.matmul: (matmul_rrule, _bilinear_frule(np.matmul)),
    np.divmod: (divmod_rrule, divmod_frule),
    np.modf: (modf_rrule, modf_frule),
    np.frexp: (frexp_rrule, frexp_frule),
    np.real: (real_rrule, real_frule),
    np.imag: (imag_rrule, imag_frule),
    np.angle: (angle_rrule, angle_frule),
}
_GUFUNC_RRULES: dict[str, Callable[..., Any]] = {
    "vecdot": vecdot_rrule, "matvec": matvec_rrule, "vecmat": vecmat_rrule}
for _name, _rrule in _GUFUNC_RRULES.items():
    if isinstance(getattr(np, _name, None), np.ufunc):  # NumPy 2.0 / 2.2+
        RULES[getattr(np, _name)] = (_rrule, _bilinear_frule(getattr(np, _name)))

_NON_DIFFERENTIABLE_NAMES = (
    "sign", "floor", "ceil", "trunc", "rint", "floor_divide", "heaviside", "signbit", "spacing",
    "nextafter", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
    "isnat", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_count", "invert", "left_shift",
    "right_shift", "gcd", "lcm",
)
#: Ufuncs whose results carry no derivative (integer-, boolean- or piecewise-constant-valued).
NON_DIFFERENTIABLE: tuple[Any, ...] = tuple(
    getattr(np, n) for n in _NON_DIFFERENTIABLE_NAMES if isinstance(getattr(np, n, None), np.ufunc)
)

for _f, _d in PARTIALS.items():
    elementwise_rules(_f, _d, check_kwargs=check_kwargs, errstate=True)
for _f, (_r, _fr) in RULES.items():
    rrule.register(_f)(_r)
    frule.register(_f)(_fr)
for _f in NON_DIFFERENTIABLE:
    non_differentiable(_f)
