"""Rules for the ``operator`` module: the hottest rules of an engine (every ``a + b`` lands here).

Every rule is written by hand for speed (no ``ProjectTo`` object per call; Python floats stay
Python floats) and listed in the one table, :data:`RULES`, with the non-differentiable operators
(comparisons, ``floordiv``, ``not_``, ``truth``, ``is_``, ``contains``, bitwise operators).
``operator.matmul`` is in :mod:`rulescore.rules.contractions`.

Numbers (``int``, ``float``, ``complex``), NumPy scalars and arrays are supported, with
broadcasting (cotangents are summed back to each operand's shape and keep its dtype). ``+`` and
``*`` on lists and tuples (concatenation, repetition) get structural ``Tangent`` cotangents.
Complex numbers follow ChainRules: the pullback of a holomorphic operation multiplies by the
conjugate of the derivative; ``abs`` of a complex ``z`` gives ``z / |z| * real(ybar)``.

Conventions at the edges:

- ``x ** p``: ``d/dx`` at ``x == 0`` is its limit (``1`` for ``p == 1``, ``0`` for ``p == 0`` or
  ``p > 1``, ``inf`` for ``0 < p < 1``); ``d/dp`` is ``z * log(x)``: for real ``x < 0`` (where
  ``x ** p`` is real only at integer ``p``) ``z * log(-x)``, the derivative of the real part, as
  ChainRules; ``0`` at ``x == 0``. An integer ``p`` (a Python or NumPy int, or an integer array)
  gets this float cotangent too, as every integer argument does (ChainRules projects an
  integer's tangent onto the reals); it is a thunk, so the logarithm is computed only when an
  engine reads it. A boolean ``p`` gets ``NoTangent()``.
- ``abs`` has derivative ``0`` at ``0``; ``x % y`` has ``d/dy = -(x // y)``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._tangent import tangent_type
from rulescore._thunks import Thunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent
from rulescore.rules._common import (
    abs_dot,
    abs_grad,
    conj,
    entries,
    fit,
    is_bool_like,
    is_int_like,
    pow_grad_p,
    pow_grad_x,
    proj,
    stand_in,
)

_NT = NoTangent()
_ZT = ZeroTangent()
_Z2 = (_NT, _ZT, _ZT)
_SEQ = (list, tuple)
_NDARRAY = np.ndarray  # (a global: one load, also in rewritten code)


# -- sequences: + (concatenation) and * (repetition) --------------------------------------------


def _seq_tangent(x: Any, items: list[Any]) -> Any:
    if not isinstance(x, _SEQ):
        return _NT
    return tangent_type(type(x))(*items)


def _concat_rrule(x: Any, y: Any, z: Any) -> Any:
    nx = len(x)

    def concat_pullback(zbar: Any) -> Any:
        parts = entries(zbar, len(z))
        return _NT, _seq_tangent(x, parts[:nx]), _seq_tangent(y, parts[nx:])

    return z, concat_pullback


def _concat_dot(x: Any, y: Any, z: Any, xdot: Any, ydot: Any) -> Any:
    return _seq_tangent(z, entries(xdot, len(x)) + entries(ydot, len(y)))


def _repeat_rrule(x: Any, y: Any, z: Any) -> Any:
    seq_first = isinstance(x, _SEQ)
    seq = x if seq_first else y
    n = len(seq)

    def repeat_pullback(zbar: Any) -> Any:
        parts = entries(zbar, len(z))
        sums: list[Any] = []
        for i in range(n):
            acc: Any = _ZT
            for v in parts[i::n]:
                acc = acc + v
            sums.append(acc)
        bar = _seq_tangent(seq, sums)
        return (_NT, bar, _NT) if seq_first else (_NT, _NT, bar)

    return z, repeat_pullback


# -- the scalar forms (see RulePair's scalar): the partials at real scalars, as numbers -----------


def add_scalar(x: Any, y: Any) -> Any:
    return x + y, (1.0, 1.0)


def sub_scalar(x: Any, y: Any) -> Any:
    return x - y, (1.0, -1.0)


def mul_scalar(x: Any, y: Any) -> Any:
    return x * y, (y, x)


def truediv_scalar(x: Any, y: Any) -> Any:
    if y == 0:
        return None  # the rule raises (Python floats) or warns (NumPy's), once
    z = x / y
    return z, (1.0 / y, -z / y)


def neg_scalar(x: Any) -> Any:
    return -x, (-1.0,)


# -- the rules ------------------------------------------------------------------------------------


def add_rrule(x: Any, y: Any) -> Any:
    z = x + y
    tx, ty = type(x), type(y)
    if tx is _NDARRAY and ty is _NDARRAY:  # two arrays (a layer's bias), first
        x, y = stand_in(x), stand_in(y)

        def add_pullback(zbar: Any) -> Any:
            return _NT, proj(x, zbar), proj(y, zbar)

        return z, add_pullback
    if tx is float and ty is float:  # the scalar hot path: no projection needed
        return z, float_add_pullback
    if (tx is float or tx is np.float64) and (ty is float or ty is np.float64):

        def real_add_pullback(zbar: Any) -> Any:  # NumPy's float64 scalars: nothing to stand in for
            if type(zbar) is float or type(zbar) is np.float64:  # projection is a conversion
                return _NT, zbar if type(zbar) is tx else tx(zbar), zbar if type(zbar) is ty else ty(zbar)
            return _NT, proj(x, zbar), proj(y, zbar)

        return z, real_add_pullback
    if type(z) in _SEQ:
        return _concat_rrule(x, y, z)
    x, y = stand_in(x), stand_in(y)

    def mixed_add_pullback(zbar: Any) -> Any:  # an operand that is not an array
        if type(zbar) is np.ndarray:
            # lazy: a scalar's cotangent sums zbar, and the scalar is often a literal (1 + t * t)
            return (_NT, proj(x, zbar) if tx is np.ndarray else Thunk(lambda: proj(x, zbar)),
                    proj(y, zbar) if ty is np.ndarray else Thunk(lambda: proj(y, zbar)))
        return _NT, proj(x, zbar), proj(y, zbar)

    return z, mixed_add_pullback


def float_add_pullback(zbar: Any) -> Any:
    """The pullback of ``x + y`` for two Python floats."""
    if type(zbar) is float:
        return _NT, zbar, zbar
    return _NT, proj(1.0, zbar), proj(1.0, zbar)


def add_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x + y
    if type(z) in _SEQ:
        return z, _concat_dot(x, y, z, xdot, ydot)
    return z, fit(z, xdot + ydot)


def sub_rrule(x: Any, y: Any) -> Any:
    tx, ty = type(x), type(y)
    if (tx is float or tx is np.float64) and (ty is float or ty is np.float64):

        def real_sub_pullback(zbar: Any) -> Any:  # real scalars (a difference of losses, of sums)
            if type(zbar) is float or type(zbar) is np.float64:  # projection is a conversion
                nbar = -zbar  # (proj's answers, without two calls to trace at a nested level)
                return _NT, zbar if type(zbar) is tx else tx(zbar), nbar if type(nbar) is ty else ty(nbar)
            return _NT, proj(x, zbar), proj(y, -zbar)

        real_sub_pullback.__name__ = real_sub_pullback.__qualname__ = "sub_pullback"
        return x - y, real_sub_pullback

    def sub_pullback(zbar: Any) -> Any:
        if type(zbar) is np.ndarray:  # lazy: y is often a constant (data, targets), and so is a scalar x
            return (_NT, proj(x, zbar) if array_x else Thunk(lambda: proj(x, zbar)),
                    Thunk(lambda: proj(y, -zbar)))
        return _NT, proj(x, zbar), proj(y, -zbar)

    z = x - y
    array_x = type(x) is np.ndarray
    x, y = stand_in(x), stand_in(y)
    return z, sub_pullback


def sub_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x - y
    return z, fit(z, xdot - ydot)


def mul_rrule(x: Any, y: Any) -> Any:
    z = x * y
    tx, ty = type(x), type(y)
    if (tx is float or tx is np.float64) and (ty is float or ty is np.float64):
        # the real-scalar hot path (Python floats, or the float64 scalars NumPy functions return):
        # no conjugation, and no projection at all for Python floats

        def float_mul_pullback(zbar: Any) -> Any:
            tz = type(zbar)
            if tz is float and tx is float and ty is float:
                return _NT, zbar * y, zbar * x
            if tz is float or tz is np.float64:  # projection is a conversion
                dx, dy = zbar * y, x * zbar
                return _NT, dx if type(dx) is tx else tx(dx), dy if type(dy) is ty else ty(dy)
            return _NT, proj(x, zbar * y), proj(y, x * zbar)

        return z, float_mul_pullback
    if tx is not np.ndarray and ty is not np.ndarray and type(z) in _SEQ:  # (an array's product is one)
        return _repeat_rrule(x, y, z)

    if tx is np.ndarray and ty is np.ndarray:
        if x.dtype.kind != "c" and y.dtype.kind != "c":
            # real: conj is the identity, and a call to it is one more traced call at a nested level

            def real_mul_pullback(zbar: Any) -> Any:
                # thunks: a factor is often a constant (data, targets): an engine that needs one
                # operand's cotangent pays for one product (at a nested level, one traced call)
                return _NT, Thunk(lambda: proj(x, zbar * y)), Thunk(lambda: proj(y, x * zbar))

            real_mul_pullback.__name__ = real_mul_pullback.__qualname__ = "mul_pullback"
            return z, real_mul_pullback

        def mul_pullback(zbar: Any) -> Any:
            return _NT, proj(x, zbar * conj(y)), proj(y, conj(x) * zbar)

        return z, mul_pullback

    def mixed_mul_pullback(zbar: Any) -> Any:  # an operand that is not an array
        if type(zbar) is np.ndarray:
            # lazy: a scalar's cotangent sums the product, and the scalar is often a constant (2.0 * x)
            return (_NT,
                    proj(x, zbar * conj(y)) if tx is np.ndarray else Thunk(lambda: proj(x, zbar * conj(y))),
                    proj(y, conj(x) * zbar) if ty is np.ndarray else Thunk(lambda: proj(y, conj(x) * zbar)))
        return _NT, proj(x, zbar * conj(y)), proj(y, conj(x) * zbar)

    return z, mixed_mul_pullback


def mul_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x * y
    if type(z) in _SEQ:
        seq_first = isinstance(x, _SEQ)
        n = len(y) if not seq_first else len(x)
        reps = len(z) // n if n else 0
        return z, _seq_tangent(z, entries(xdot if seq_first else ydot, n) * reps)
    return z, fit(z, xdot * y + x * ydot)


def truediv_rrule(x: Any, y: Any) -> Any:
    z = x / y

    def truediv_pullback(zbar: Any) -> Any:
        xbar = zbar / conj(y)
        if type(y) is not float:
            # lazy: dividing by a constant (a count, an array of data) is common, and so is dividing
            # a literal (1 / t)
            return (_NT, proj(x, xbar) if array_x else Thunk(lambda: proj(x, xbar)),
                    Thunk(lambda: proj(y, -xbar * conj(z))))
        return _NT, proj(x, xbar), proj(y, -xbar * conj(z))

    array_x = type(x) is np.ndarray
    return z, truediv_pullback


def truediv_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x / y
    return z, fit(z, (xdot - z * ydot) / y)


def mod_rrule(x: Any, y: Any) -> Any:
    z = x % y
    if isinstance(z, str):  # string formatting: no derivative
        return z, format_pullback

    def mod_pullback(zbar: Any) -> Any:
        return _NT, proj(x, zbar), proj(y, -zbar * (x // y))

    return z, mod_pullback


def format_pullback(zbar: Any) -> Any:
    """The pullback of ``"..." % args`` (string formatting): no derivative."""
    return _Z2


def mod_frule(tangents: Any, x: Any, y: Any) -> Any:
    _, xdot, ydot = tangents
    z = x % y
    if isinstance(z, str):
        return z, _NT
    return z, fit(z, xdot - (x // y) * ydot)


def pow_rrule(x: Any, p: Any) -> Any:
    z = x ** p
    int_p = is_int_like(p)
    bool_p = int_p and type(p) is not int and is_bool_like(p)  # (a Python int exponent: no call)
    square = type(p) is int and p == 2 and type(x) is np.ndarray and x.dtype.kind == "f"

    def pow_pullback(zbar: Any) -> Any:
        if square and type(zbar) is np.ndarray and not any(zbar.strides) and zbar.size:
            # the cotangent of a sum is one number broadcast: (2 * ybar) * x is one pass, not two
            xbar = proj(x, (2 * zbar.reshape(-1)[0]) * x)
        else:
            xbar = proj(x, zbar * conj(pow_grad_x(x, p, z)))
        if bool_p:
            return _NT, xbar, _NT
        if int_p:  # an exponent written as a literal is rarely differentiated: the log only when read
            return _NT, xbar, Thunk(lambda: proj(p, zbar * conj(pow_grad_p(x, p, z))))
        return _NT, xbar, proj(p, zbar * conj(pow_grad_p(x, p, z)))

    return z, pow_pullback


def pow_frule(tangents: Any, x: Any, p: Any) -> Any:
    _, xdot, pdot = tangents
    z = x ** p
    zdot = pow_grad_x(x, p, z) * xdot
    if not isinstance(pdot, AbstractZero) and pdot is not None and not is_bool_like(p):
        zdot = zdot + pow_grad_p(x, p, z) * pdot
    return z, fit(z, zdot)


def neg_rrule(x: Any) -> Any:
    def neg_pullback(zbar: Any) -> Any:
        return _NT, proj(x, -zbar)

    return -x, neg_pullback


def neg_frule(tangents: Any, x: Any) -> Any:
    z = -x
    return z, fit(z, -tangents[1])


def pos_rrule(x: Any) -> Any:
    def pos_pullback(zbar: Any) -> Any:
        return _NT, proj(x, zbar)

    return +x, pos_pullback


def pos_frule(tangents: Any, x: Any) -> Any:
    z = +x
    return z, fit(z, tangents[1])


def abs_rrule(x: Any) -> Any:
    y = abs(x)

    def abs_pullback(ybar: Any) -> Any:
        return _NT, proj(x, abs_grad(x, y, ybar))

    return y, abs_pullback


def abs_frule(tangents: Any, x: Any) -> Any:
    y = abs(x)
    return y, fit(y, abs_dot(x, y, tangents[1]))


#: Operators whose result carries no derivative (booleans, integers, identity).
NON_DIFFERENTIABLE: tuple[Any, ...] = (
    operator.floordiv, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
    operator.not_, operator.truth, operator.is_, operator.is_not, operator.contains,
    operator.and_, operator.or_, operator.xor, operator.invert, operator.lshift, operator.rshift,
    operator.index, operator.countOf, operator.indexOf,
)

#: The operators with rules of their own (``add_rrule``, ``add_frule``, ...; ``+`` on sequences
#: is ``add``'s too).
RULES: tuple[RulePair, ...] = (
    RulePair(operator.add, add_rrule, add_frule, scalar=add_scalar),
    RulePair(operator.concat, add_rrule, add_frule),
    RulePair(operator.sub, sub_rrule, sub_frule, scalar=sub_scalar),
    RulePair(operator.mul, mul_rrule, mul_frule, scalar=mul_scalar),
    RulePair(operator.truediv, truediv_rrule, truediv_frule, scalar=truediv_scalar),
    RulePair(operator.mod, mod_rrule, mod_frule),
    RulePair(operator.pow, pow_rrule, pow_frule),
    RulePair(operator.neg, neg_rrule, neg_frule, scalar=neg_scalar),
    RulePair(operator.pos, pos_rrule, pos_frule),
    RulePair(operator.abs, abs_rrule, abs_frule),
    *(RulePair(f, kind="non_differentiable") for f in NON_DIFFERENTIABLE),
)
