"""Rules for NumPy's ufuncs (and ``np.real``, ``np.imag``, ``np.angle``).

One table, :data:`RULES`: the element-wise ufuncs from their named partials
(``RulePair(f, partials=...)``, pullbacks named ``<ufunc>_pullback``), hand-written rules for
the others (``absolute``, ``conjugate`` and ``sign``, not holomorphic; the two-output
``divmod``/``modf``/``frexp``; ``np.real``/``np.imag``/``np.angle``), and the ufuncs with no
derivative (:data:`NON_DIFFERENTIABLE`: ``floor``, ``ceil``, ``trunc``, ``rint``,
comparisons, ``logical_*``, ``isnan``/``isinf``/``isfinite``, bitwise operations,
``floor_divide``, ``heaviside``, ``signbit``, ``spacing``, ``gcd``, ``lcm``, ...).
The generalised ufuncs ``matmul``/``vecdot``/``matvec``/``vecmat`` are in
:mod:`rulescore.rules.contractions`.

Aliases share the rules of the ufunc they name: ``np.abs`` is ``np.absolute``, ``np.conj`` is
``np.conjugate``, ``np.mod`` is ``np.remainder``, ``np.true_divide`` is ``np.divide``,
``np.pow`` is ``np.power``, ``np.acos`` is ``np.arccos`` (and so on for the array-API names).

Conventions:

- Broadcasting: each cotangent is summed back to its argument's shape and keeps its dtype
  (``float32`` stays ``float32``; an integer argument gets ``float64``; a bool none).
- Complex: holomorphic functions multiply the cotangent by the conjugate of the derivative.
  ``absolute``, ``angle``, ``real`` and ``imag`` are real-valued functions of a complex ``z``: their
  gradient is ``df/dRe(z) + 1j * df/dIm(z)`` (ChainRules), e.g. ``z / |z| * real(ybar)`` for
  ``absolute``; ``conjugate`` maps ``ybar`` to ``conj(ybar)``. ``sign`` of a complex ``z`` is
  ``z / |z|``, smooth away from ``0`` (its derivative there is taken as ``0``); of a real ``x``
  it is piecewise constant, with derivative ``0``.
- ``where=mask``: the primal is computed as NumPy does (entries where ``mask`` is ``False`` are
  left uninitialised) and every cotangent and tangent is zero there.
- ``out=`` is refused with a ``TypeError`` naming the ufunc: writing into an existing array is
  not differentiable (``out=None`` is accepted). The generalised ufuncs (in
  :mod:`~rulescore.rules.contractions`) also refuse ``axes=``/``axis=``/``keepdims=``. Other keywords
  (``dtype``, ``casting``, ...) are passed through.
- ``maximum``/``minimum``/``fmax``/``fmin``: the chosen argument gets the cotangent; **ties split
  it 50/50** between the two arguments; a NaN propagated by ``maximum``/``minimum`` takes the
  cotangent from the argument it came from (``fmax``/``fmin`` prefer the non-NaN argument).
- Edges: derivatives that are infinite (``sqrt`` at ``0``, ``arcsin`` at ``±1``) are ``inf``, not
  NaN; ``hypot`` and ``arctan2`` use the zero subgradient at the origin; ``power`` follows
  :mod:`rulescore.rules.operators` (``d/dp`` is ``z * log(x)``, ``z * log(-x)`` for ``x < 0``,
  for an integer exponent too: a float cotangent, as every integer argument gets; ``NoTangent()``
  for a boolean exponent).
- Accuracy: ``expm1``'s derivative is ``exp(x)`` (not ``result + 1``, which cancels);
  ``logaddexp``'s are ``exp(-logaddexp(0, y - x))``, which neither overflows nor cancels.

The ufunc methods (``np.add.reduce``, ``.accumulate``, ``.outer``, ``.at``) are not covered here.

Native tier: the ufuncs whose primal and partials have array-API spellings name them
(``native="asin"``; the partials take ``xp=np``), so their rules run on JAX arrays and PyTorch
tensors too (``RulePair(f, partials=..., native=...)``); NumPy input takes the NumPy path unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import (
    abs_dot,
    abs_grad,
    as_arrays,
    check_kwargs,
    conj,
    divmod_cotangents,
    divmod_tangent,
    fit,
    frexp_cotangents,
    frexp_tangent,
    is_bool_like,
    is_complex,
    mask,
    modf_cotangents,
    modf_tangent,
    pow_grad_p,
    pow_grad_x,
    pow_partials,
    proj,
)

_NT = NoTangent()
_ZT = ZeroTangent()
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0


# -- element-wise partials (math.py uses the ones that hold for Python floats too) ---------------


def add_partials(x: Any, y: Any) -> Any:
    return 1, 1


def subtract_partials(x: Any, y: Any) -> Any:
    return 1, -1


def multiply_partials(x: Any, y: Any) -> Any:
    return y, x


def divide_partials(x: Any, y: Any, result: Any) -> Any:
    return 1 / y, -result / y


def float_power_partials(x: Any, p: Any, result: Any) -> Any:
    one = np.float64(1.0)  # compute the partials in double precision, as float_power does
    xx = x * one
    return pow_grad_x(xx, p, result), (_NT if is_bool_like(p) else pow_grad_p(xx, p * one, result))


def negative_partials(x: Any) -> Any:
    return -1


def positive_partials(x: Any) -> Any:
    return 1


def sign_partials(x: Any) -> Any:
    """The derivative of ``|x|`` for real ``x`` (``0`` at ``0``)."""
    return np.sign(x)


def exp_partials(x: Any, result: Any) -> Any:
    return result


def exp2_partials(x: Any, result: Any) -> Any:
    return result * _LN2


def expm1_partials(x: Any, xp: Any = np) -> Any:
    return xp.exp(x)  # not result + 1: that cancels for x << 0


def log_partials(x: Any) -> Any:
    return 1 / x


def log2_partials(x: Any) -> Any:
    return 1 / (x * _LN2)


def log10_partials(x: Any) -> Any:
    return 1 / (x * _LN10)


def log1p_partials(x: Any) -> Any:
    return 1 / (1 + x)


def sqrt_partials(x: Any, result: Any) -> Any:
    return 0.5 / result


def cbrt_partials(x: Any, result: Any) -> Any:
    return 1 / (3 * result * result)


def square_partials(x: Any) -> Any:
    return 2 * x


def reciprocal_partials(x: Any, result: Any) -> Any:
    return -result * result


def sin_partials(x: Any, xp: Any = np) -> Any:
    return xp.cos(x)


def cos_partials(x: Any, xp: Any = np) -> Any:
    return -xp.sin(x)


def tan_partials(x: Any, result: Any) -> Any:
    return 1 + result * result


def arcsin_partials(x: Any, xp: Any = np) -> Any:
    return 1 / xp.sqrt(1 - x * x)


def arccos_partials(x: Any, xp: Any = np) -> Any:
    return -1 / xp.sqrt(1 - x * x)


def arctan_partials(x: Any) -> Any:
    return 1 / (1 + x * x)


def sinh_partials(x: Any, xp: Any = np) -> Any:
    return xp.cosh(x)


def cosh_partials(x: Any, xp: Any = np) -> Any:
    return xp.sinh(x)


def tanh_partials(x: Any, result: Any) -> Any:
    return 1 - result * result


def arcsinh_partials(x: Any, xp: Any = np) -> Any:
    return 1 / xp.sqrt(x * x + 1)


def arccosh_partials(x: Any, xp: Any = np) -> Any:
    return 1 / (xp.sqrt(x - 1) * xp.sqrt(x + 1))


def arctanh_partials(x: Any) -> Any:
    return 1 / (1 - x * x)


def radians_partials(x: Any) -> Any:
    return _RAD


def degrees_partials(x: Any) -> Any:
    return _DEG


def arctan2_partials(y: Any, x: Any, xp: Any = np) -> Any:
    den = x * x + y * y
    nz = den != 0
    den = xp.where(nz, den, 1)
    return xp.where(nz, x / den, 0), xp.where(nz, -y / den, 0)


def hypot_partials(x: Any, y: Any, result: Any, xp: Any = np) -> Any:
    nz = result != 0
    r = xp.where(nz, result, 1)
    return xp.where(nz, x / r, 0), xp.where(nz, y / r, 0)


def logaddexp_partials(x: Any, y: Any) -> Any:
    return np.exp(-np.logaddexp(0, y - x)), np.exp(-np.logaddexp(0, x - y))


def logaddexp2_partials(x: Any, y: Any) -> Any:
    return np.exp2(-np.logaddexp2(0, y - x)), np.exp2(-np.logaddexp2(0, x - y))


def _split(first: Any, tie: Any, xp: Any = np) -> Any:
    """Weights of the two arguments of a max/min: the chosen one gets 1, a tie 0.5 each."""
    w = xp.where(first, 1.0, xp.where(tie, 0.5, 0.0))
    return w, 1.0 - w


def maximum_partials(x: Any, y: Any, xp: Any = np) -> Any:
    return _split((x > y) | xp.isnan(x), x == y, xp)


def minimum_partials(x: Any, y: Any, xp: Any = np) -> Any:
    return _split((x < y) | xp.isnan(x), x == y, xp)


def fmax_partials(x: Any, y: Any, xp: Any = np) -> Any:
    return _split((x > y) | xp.isnan(y), x == y, xp)


def fmin_partials(x: Any, y: Any, xp: Any = np) -> Any:
    return _split((x < y) | xp.isnan(y), x == y, xp)


def copysign_partials(x: Any, y: Any) -> Any:
    return np.copysign(1.0, x) * np.copysign(1.0, y), _ZT


def nextafter_partials(x: Any, y: Any) -> Any:
    """``nextafter(x, y)`` is ``x`` moved by one ulp toward ``y``: slope one in ``x``, none in ``y``."""
    return 1.0 + 0.0 * np.add(x, y), _ZT


def fmod_partials(x: Any, y: Any, result: Any) -> Any:
    """``fmod(x, y) = x - n * y`` for the integer ``n = rint((x - result) / y)``."""
    return 1, -np.rint((x - result) / y)


def remainder_partials(x: Any, y: Any) -> Any:
    return 1, -np.floor_divide(x, y)


def ldexp_partials(x: Any, i: Any) -> Any:
    return np.ldexp(1.0, i), _NT


# -- hand-written rules --------------------------------------------------------------------------


def absolute_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.absolute, kwargs)
    y = np.absolute(x, **kwargs)

    def absolute_pullback(ybar: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            g = abs_grad(as_arrays((x,))[0], y, ybar)
        return _NT, proj(x, mask(where, g))

    return y, absolute_pullback


def absolute_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.absolute, kwargs)
    y = np.absolute(x, **kwargs)
    with np.errstate(divide="ignore", invalid="ignore"):
        ydot = abs_dot(as_arrays((x,))[0], y, tangents[1])
    return y, fit(y, mask(where, ydot))


def conjugate_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.conjugate, kwargs)
    y = np.conjugate(x, **kwargs)

    def conjugate_pullback(ybar: Any) -> Any:
        return _NT, proj(x, mask(where, conj(ybar)))

    return y, conjugate_pullback


def conjugate_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.conjugate, kwargs)
    y = np.conjugate(x, **kwargs)
    return y, fit(y, mask(where, conj(tangents[1])))


def _unit_over_modulus(x: Any, y: Any) -> Any:
    """``sign(x) / |x|`` (``0`` at ``0``), given ``y = sign(x)``."""
    r = np.absolute(x)
    nz = r != 0
    return np.where(nz, y / np.where(nz, r, 1), 0)


def sign_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.sign, kwargs)
    y = np.sign(x, **kwargs)

    def sign_pullback(ybar: Any) -> Any:
        if not is_complex(x):
            return _NT, _ZT  # piecewise constant
        # d sign = i sign Im(conj(sign) dz) / |z|, so its adjoint is i sign Im(ybar conj(sign)) / |z|
        g = 1j * _unit_over_modulus(x, y) * np.imag(ybar * np.conj(y))
        return _NT, proj(x, mask(where, g))

    return y, sign_pullback


def sign_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.sign, kwargs)
    y = np.sign(x, **kwargs)
    if not is_complex(x):
        return y, _ZT
    ydot = 1j * _unit_over_modulus(x, y) * np.imag(np.conj(y) * tangents[1])
    return y, fit(y, mask(where, ydot))


def divmod_rrule(x: Any, y: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.divmod, kwargs)
    out = np.divmod(x, y, **kwargs)

    def divmod_pullback(outbar: Any) -> Any:
        return divmod_cotangents(x, y, out[0], outbar, where)

    return out, divmod_pullback


def divmod_frule(tangents: Any, x: Any, y: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.divmod, kwargs)
    out = np.divmod(x, y, **kwargs)
    return out, divmod_tangent(out, tangents[1], tangents[2], where)


def modf_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.modf, kwargs)
    out = np.modf(x, **kwargs)

    def modf_pullback(outbar: Any) -> Any:
        return modf_cotangents(x, outbar, where)

    return out, modf_pullback


def modf_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.modf, kwargs)
    out = np.modf(x, **kwargs)
    return out, modf_tangent(out, tangents[1], where)


def frexp_rrule(x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.frexp, kwargs)
    out = np.frexp(x, **kwargs)

    def frexp_pullback(outbar: Any) -> Any:
        return frexp_cotangents(x, out[1], outbar, where)

    return out, frexp_pullback


def frexp_frule(tangents: Any, x: Any, **kwargs: Any) -> Any:
    where = check_kwargs(np.frexp, kwargs)
    out = np.frexp(x, **kwargs)
    return out, frexp_tangent(out, tangents[1], where)


def real_rrule(x: Any) -> Any:
    y = np.real(x)

    def real_pullback(ybar: Any) -> Any:
        return _NT, proj(x, np.real(ybar))

    return y, real_pullback


def real_frule(tangents: Any, x: Any) -> Any:
    y = np.real(x)
    return y, fit(y, np.real(tangents[1]))


def imag_rrule(x: Any) -> Any:
    y = np.imag(x)

    def imag_pullback(ybar: Any) -> Any:
        if not is_complex(x):
            return _NT, _ZT
        return _NT, proj(x, 1j * np.real(ybar))

    return y, imag_pullback


def imag_frule(tangents: Any, x: Any) -> Any:
    y = np.imag(x)
    if not is_complex(x):
        return y, _ZT
    return y, fit(y, np.imag(tangents[1]))


def _angle_scale(args: tuple[Any, ...], kwargs: dict[str, Any]) -> float:
    deg = args[0] if args else kwargs.get("deg", False)
    return _DEG if deg else 1.0


def _angle_gradient(z: Any) -> Any:
    """``i z / |z|^2`` (``0`` at ``0``): the gradient of ``angle`` at a complex ``z``."""
    zr, zi = np.real(z), np.imag(z)
    den = zr * zr + zi * zi
    nz = den != 0
    return np.where(nz, 1j * z / np.where(nz, den, 1), 0)


def angle_rrule(z: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.angle(z, *args, **kwargs)
    scale = _angle_scale(args, kwargs)

    def angle_pullback(ybar: Any) -> Any:  # 0 for real z
        if not is_complex(z):
            return (_NT, _ZT, *(_NT for _ in args))
        return (_NT, proj(z, _angle_gradient(z) * (np.real(ybar) * scale)), *(_NT for _ in args))

    return y, angle_pullback


def angle_frule(tangents: Any, z: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.angle(z, *args, **kwargs)
    if not is_complex(z):
        return y, _ZT
    # real(conj(grad) * zdot) with grad = i z / |z|^2
    ydot = np.real(np.conj(_angle_gradient(z)) * tangents[1]) * _angle_scale(args, kwargs)
    return y, fit(y, ydot)


_NON_DIFFERENTIABLE_NAMES = (
    "floor", "ceil", "trunc", "rint", "floor_divide", "heaviside", "signbit", "spacing",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "isfinite",
    "isnat", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_count", "invert", "left_shift",
    "right_shift", "gcd", "lcm",
)
#: Ufuncs whose results carry no derivative (integer-, boolean- or piecewise-constant-valued).
NON_DIFFERENTIABLE: tuple[Any, ...] = tuple(
    getattr(np, n) for n in _NON_DIFFERENTIABLE_NAMES if isinstance(getattr(np, n, None), np.ufunc)
)


RULES: tuple[RulePair, ...] = (
    # the ufuncs with rules of their own
    RulePair(np.absolute, absolute_rrule, absolute_frule),
    RulePair(np.conjugate, conjugate_rrule, conjugate_frule),
    RulePair(np.sign, sign_rrule, sign_frule),
    RulePair(np.divmod, divmod_rrule, divmod_frule),
    RulePair(np.modf, modf_rrule, modf_frule),
    RulePair(np.frexp, frexp_rrule, frexp_frule),
    RulePair(np.real, real_rrule, real_frule),
    RulePair(np.imag, imag_rrule, imag_frule),
    RulePair(np.angle, angle_rrule, angle_frule),
    # the element-wise ufuncs from their partials: out= refused and where= masked (check_kwargs);
    # errstate=True: the partials may divide by zero (sqrt at 0), so they run under np.errstate
    # (which costs several times the partial itself on a scalar: np.sin of a float goes without);
    # needs_inputs=False: they read the result only, so the pullback need not keep the inputs;
    # native="name": the rules also run on JAX and PyTorch arrays, through the array API's function
    # of the same meaning (spelled differently for arcsin, ...: asin); native_complex=False: NumPy
    # orders complex numbers and array libraries do not, so complex arrays take the host tier
    RulePair(np.add, partials=add_partials, check_kwargs=check_kwargs, needs_inputs=False, native="add"),
    RulePair(np.subtract, partials=subtract_partials, check_kwargs=check_kwargs,
             needs_inputs=False, native="subtract"),
    RulePair(np.multiply, partials=multiply_partials, check_kwargs=check_kwargs, native="multiply"),
    RulePair(np.divide, partials=divide_partials, check_kwargs=check_kwargs, errstate=True, native="divide"),
    RulePair(np.power, partials=pow_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.float_power, partials=float_power_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.negative, partials=negative_partials, check_kwargs=check_kwargs,
             needs_inputs=False, native="negative"),
    RulePair(np.positive, partials=positive_partials, check_kwargs=check_kwargs,
             needs_inputs=False, native="positive"),
    RulePair(np.fabs, partials=sign_partials, check_kwargs=check_kwargs),
    RulePair(np.exp, partials=exp_partials, check_kwargs=check_kwargs, needs_inputs=False, native="exp"),
    RulePair(np.exp2, partials=exp2_partials, check_kwargs=check_kwargs, needs_inputs=False, native="exp2"),
    RulePair(np.expm1, partials=expm1_partials, check_kwargs=check_kwargs, errstate=True, native="expm1"),
    RulePair(np.log, partials=log_partials, check_kwargs=check_kwargs, errstate=True, native="log"),
    RulePair(np.log2, partials=log2_partials, check_kwargs=check_kwargs, errstate=True, native="log2"),
    RulePair(np.log10, partials=log10_partials, check_kwargs=check_kwargs, errstate=True, native="log10"),
    RulePair(np.log1p, partials=log1p_partials, check_kwargs=check_kwargs, errstate=True, native="log1p"),
    RulePair(np.sqrt, partials=sqrt_partials, check_kwargs=check_kwargs,
             needs_inputs=False, errstate=True, native="sqrt"),
    RulePair(np.cbrt, partials=cbrt_partials, check_kwargs=check_kwargs,
             needs_inputs=False, errstate=True, native="cbrt"),
    RulePair(np.square, partials=square_partials, check_kwargs=check_kwargs, native="square"),
    RulePair(np.reciprocal, partials=reciprocal_partials, check_kwargs=check_kwargs,
             needs_inputs=False, errstate=True, native="reciprocal"),
    RulePair(np.sin, partials=sin_partials, check_kwargs=check_kwargs, native="sin"),
    RulePair(np.cos, partials=cos_partials, check_kwargs=check_kwargs, native="cos"),
    RulePair(np.tan, partials=tan_partials, check_kwargs=check_kwargs,
             needs_inputs=False, errstate=True, native="tan"),
    RulePair(np.arcsin, partials=arcsin_partials, check_kwargs=check_kwargs, errstate=True, native="asin"),
    RulePair(np.arccos, partials=arccos_partials, check_kwargs=check_kwargs, errstate=True, native="acos"),
    RulePair(np.arctan, partials=arctan_partials, check_kwargs=check_kwargs, errstate=True, native="atan"),
    RulePair(np.sinh, partials=sinh_partials, check_kwargs=check_kwargs, native="sinh"),
    RulePair(np.cosh, partials=cosh_partials, check_kwargs=check_kwargs, native="cosh"),
    RulePair(np.tanh, partials=tanh_partials, check_kwargs=check_kwargs, needs_inputs=False, native="tanh"),
    RulePair(np.arcsinh, partials=arcsinh_partials, check_kwargs=check_kwargs, errstate=True, native="asinh"),
    RulePair(np.arccosh, partials=arccosh_partials, check_kwargs=check_kwargs, errstate=True, native="acosh"),
    RulePair(np.arctanh, partials=arctanh_partials, check_kwargs=check_kwargs, errstate=True, native="atanh"),
    RulePair(np.deg2rad, partials=radians_partials, check_kwargs=check_kwargs, native="deg2rad"),
    RulePair(np.radians, partials=radians_partials, check_kwargs=check_kwargs, native="radians"),
    RulePair(np.rad2deg, partials=degrees_partials, check_kwargs=check_kwargs, native="rad2deg"),
    RulePair(np.degrees, partials=degrees_partials, check_kwargs=check_kwargs, native="degrees"),
    RulePair(np.arctan2, partials=arctan2_partials, check_kwargs=check_kwargs, errstate=True, native="atan2"),
    RulePair(np.hypot, partials=hypot_partials, check_kwargs=check_kwargs, errstate=True, native="hypot"),
    RulePair(np.logaddexp, partials=logaddexp_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.logaddexp2, partials=logaddexp2_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.maximum, partials=maximum_partials, check_kwargs=check_kwargs,
             native="maximum", native_complex=False),
    RulePair(np.minimum, partials=minimum_partials, check_kwargs=check_kwargs,
             native="minimum", native_complex=False),
    RulePair(np.fmax, partials=fmax_partials, check_kwargs=check_kwargs, native="fmax", native_complex=False),
    RulePair(np.fmin, partials=fmin_partials, check_kwargs=check_kwargs, native="fmin", native_complex=False),
    RulePair(np.copysign, partials=copysign_partials, check_kwargs=check_kwargs),
    RulePair(np.nextafter, partials=nextafter_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.fmod, partials=fmod_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.remainder, partials=remainder_partials, check_kwargs=check_kwargs, errstate=True),
    RulePair(np.ldexp, partials=ldexp_partials, check_kwargs=check_kwargs),
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE),
)
