"""Rules of linear functions, declared once with their transpose (JAX's ``deflinear``).

A function ``f(x, *args, **kwargs)`` linear in its first argument needs no derivative of its
own: the frule applies ``f`` itself to the tangent of ``x`` and the pullback applies the
transpose to the cotangent. The other arguments (shapes, axes, orders) get ``NoTangent()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._checks import callable_name
from rulescore._fitting import as_array_tangent, fit
from rulescore._namespace import foreign_namespace, unbroadcast_to
from rulescore._projection import project
from rulescore._registry import register_rules
from rulescore._rule_pair import DERIVERS, RulePair, TypeSpec
from rulescore._tangent import Tangent
from rulescore._thunks import unthunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

_NT = NoTangent()
_ZT = ZeroTangent()


def dense_tangent(x: Any, t: Any) -> Any:
    """The tangent ``t`` of ``x`` as a value a linear function accepts: zeros become dense
    zeros of ``x``'s shape, and a list or tuple ``x`` gets a list or tuple entry by entry.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> dense_tangent([np.ones(2), 1.0], rc.Tangent[list](rc.ZeroTangent(), 3.0))
        [array([0., 0.]), 3.0]
    """
    t = unthunk(t)
    if isinstance(x, (list, tuple)):
        if isinstance(t, AbstractZero):
            entries: list[Any] = [ZeroTangent()] * len(x)
        else:
            entries = list(t.backing) if isinstance(t, Tangent) else list(t)
        return type(x)(dense_tangent(v, e) for v, e in zip(x, entries, strict=True))
    if isinstance(t, AbstractZero) or t is None:
        dt = np.result_type(x)
        return np.zeros(np.shape(x), dtype=dt if dt.kind in "fc" else np.float64)
    return t


def product_tangent(f: Any, y: Any, args: tuple[Any, ...], tangents: Any, positions: Any) -> Any:
    """The tangent of ``y = f(*args)`` for ``f`` linear in each argument at ``positions`` (a
    product: ``matmul``, ``kron``, ``einsum``): ``sum_p f(..., xdot_p, ...)`` over the operands
    whose tangent is not zero (the rule contract leaves the others zero: skipping them here is
    why no product rule tests for zeros), fitted to ``y``.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> product_tangent(np.multiply, 6.0, (2.0, 3.0), (None, 1.0, rc.ZeroTangent()), (0, 1))
        3.0
    """
    operands = list(args)
    for p in positions:  # a list given to NumPy is an array, and so is its tangent
        if type(args[p]) is list or type(args[p]) is tuple:
            operands[p] = np.asarray(args[p])
    ydot: Any = _ZT
    for p in positions:
        t = tangents[1 + p]
        if isinstance(t, AbstractZero):
            continue
        targs = list(operands)
        targs[p] = as_array_tangent(t) if operands[p] is not args[p] else t
        ydot = ydot + f(*targs)
    return fit(y, ydot)


def _native_namespace(native: Any, x: Any) -> Any:
    """``x``'s array namespace when the rule has a ``native`` spelling and ``x`` is a non-NumPy
    array (a JAX array, a PyTorch tensor: the native tier), else ``None`` (NumPy as usual)."""
    if native is None or type(x) is np.ndarray:
        return None
    return foreign_namespace((x,))


def linear_rules(f: Any, transpose: Callable[..., Any], *types: TypeSpec,
                 native: Callable[..., Any] | None = None) -> RulePair:
    """The frule and rrule of ``f``, linear in its first argument, from its ``transpose`` (not
    registered: put the pair in a ``RULES`` table, or call :func:`deflinear`).

    ``transpose(ybar, x, *args, **kwargs)`` returns the cotangent of ``x`` for the output
    cotangent ``ybar`` (the adjoint map, evaluated at the call's other arguments); it is
    projected onto ``x``. The frule is ``f(xdot, *args, **kwargs)``. Every other argument gets
    ``NoTangent()``: declare functions linear in several arguments with named rules instead.

    ``native(xp, x, *args, **kwargs)`` is ``f`` written with the array namespace ``xp``: given
    it, the rules run on non-NumPy arrays (JAX, PyTorch: the native tier, no host callback),
    computing ``y`` and the tangent with it and the cotangent with ``transpose``, which must then
    accept those arrays too (:func:`rulescore.array_namespace`). NumPy input takes ``f``.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> def flip_transpose(ybar, x, axis=None):
        ...     return np.flip(ybar, axis)
        >>> pair = rc.linear_rules(np.flip, flip_transpose)
        >>> pair.rrule(np.arange(3.0))[1](np.array([1.0, 0.0, 0.0]))
        (NoTangent(), array([0., 0., 1.]))
        >>> pair.frule((None, np.array([1.0, 2.0])), np.zeros(2))
        (array([0., 0.]), array([2., 1.]))
    """
    return RulePair(f, types=types, transpose=transpose, native=native).resolved()


def linear_rule_functions(pair: RulePair) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule that the entry ``pair`` derives from its ``transpose`` (and its
    ``native`` spelling; see :func:`linear_rules`).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> entry = rc.RulePair(np.negative, transpose=lambda ybar, x: -ybar)
        >>> reverse, forward = linear_rule_functions(entry)
        >>> reverse(np.ones(2))[1](np.array([1.0, 2.0]))
        (NoTangent(), array([-1., -2.]))
    """
    f, transpose, native = pair.primal, pair.transpose, pair.native
    assert transpose is not None
    assert native is None or not isinstance(native, str), "native= of a transpose entry is a function of xp"
    name = callable_name(f).rsplit(".", 1)[-1]

    def native_pullback(xp: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        def native_linear_pullback(ybar: Any) -> Any:
            xbar = unbroadcast_to(xp, x, transpose(ybar, x, *args, **kwargs))
            return (_NT, xbar, *((_NT,) * len(args)))

        native_linear_pullback.__name__ = native_linear_pullback.__qualname__ = f"{name}_pullback"
        return native_linear_pullback

    def linear_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
        if (xp := _native_namespace(native, x)) is not None:
            return native(xp, x, *args, **kwargs), native_pullback(xp, x, args, kwargs)  # type: ignore[misc]
        y = f(x, *args, **kwargs)
        rest = (_NT,) * len(args) if args else ()  # (x.T: no call, no product at a nested level)

        def linear_pullback(ybar: Any) -> Any:
            return (_NT, project(x, transpose(ybar, x, *args, **kwargs)), *rest)

        linear_pullback.__name__ = linear_pullback.__qualname__ = f"{name}_pullback"
        return y, linear_pullback

    def linear_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        xp = _native_namespace(native, x)
        y = f(x, *args, **kwargs) if xp is None else native(xp, x, *args, **kwargs)  # type: ignore[misc]
        xdot = tangents[1]
        if isinstance(xdot, AbstractZero):  # only a static argument's tangent was non-zero
            return y, ZeroTangent()
        if xp is not None:
            return y, native(xp, xdot, *args, **kwargs)  # type: ignore[misc]
        if not kwargs and type(y) is np.ndarray and type(x) is np.ndarray and type(xdot) is np.ndarray \
                and xdot.dtype == x.dtype and xdot.shape == x.shape:
            return y, f(xdot, *args)  # an array of y's shape and dtype: projecting is the identity
        kwargs.pop("out", None)
        return y, project(y, f(dense_tangent(x, xdot), *args, **kwargs))

    linear_rrule.__name__ = linear_rrule.__qualname__ = f"{name}_rrule"
    linear_frule.__name__ = linear_frule.__qualname__ = f"{name}_frule"
    return linear_rrule, linear_frule


def deflinear(f: Any, transpose: Callable[..., Any], *types: TypeSpec) -> None:
    """Register the rules of ``f``, linear in its first argument, from its transpose: the entry
    ``RulePair(f, types=types, transpose=transpose)``, registered.

    Example:
        >>> import rulescore as rc
        >>> def triple(x): return 3 * x
        >>> rc.deflinear(triple, lambda ybar, x: 3 * ybar)
        >>> rc.rrule(triple, 1.0)[1](2.0), rc.frule((None, 1.0), triple, 5.0)
        ((NoTangent(), 6.0), (15.0, 3.0))
    """
    register_rules(RulePair(f, types=types, transpose=transpose))


DERIVERS["transpose"] = linear_rule_functions
