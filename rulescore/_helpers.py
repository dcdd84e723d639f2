"""Helpers that declare rules without writing pullbacks by hand.

``scalar_rule`` derives both the frule and the rrule of an (element-wise) function from its
partial derivatives; ``non_differentiable`` declares that a function has no derivative;
``ignore_derivatives`` stops gradients at a value.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._checks import callable_name
from rulescore._projection import project
from rulescore._registry import TypeSpec
from rulescore._rule_pair import RulePair, register_rules
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent


def conj(x: Any) -> Any:
    """Complex conjugate that leaves real Python numbers alone (works on tracers too)."""
    if isinstance(x, (int, float)):
        return x
    return np.conj(x)


def _cotangent(x: Any, dx: Any) -> Any:
    """``project(x, dx)``, first summing ``dx`` if a scalar ``x`` was broadcast against arrays
    (arrays are unbroadcast by the projection itself)."""
    if not isinstance(x, np.ndarray) and np.ndim(x) == 0 and np.ndim(dx) != 0:
        dx = np.sum(dx)
    return project(x, dx)


def _wants_result(partials: Callable[..., Any]) -> bool:
    try:
        return "result" in inspect.signature(partials).parameters
    except (TypeError, ValueError):
        return False


def partials_rules(f: Any, partials: Callable[..., Any], *types: TypeSpec) -> RulePair:
    """The frule and rrule of ``f`` derived from its partial derivatives (not registered: put
    the pair in a family's ``RULES`` table, or call :func:`scalar_rule`).

    ``partials(*args)`` returns one partial derivative per argument (a bare value for a single
    argument); if it takes a ``result`` keyword it also receives ``f(*args)``. Element-wise
    NumPy functions work too: partials are then arrays and broadcasting is summed back. For
    complex arguments ``f`` must be holomorphic: the pullback multiplies by the conjugate.

    Example:
        >>> import rulescore as rc
        >>> def cube(x): return x ** 3
        >>> pair = rc.partials_rules(cube, lambda x: 3 * x ** 2)
        >>> pair.rrule(2.0)[1](1.0), pair.frule((None, 1.0), 2.0)
        ((NoTangent(), 12.0), (8.0, 12.0))
    """
    name = callable_name(f).rsplit(".", 1)[-1]
    with_result = _wants_result(partials)

    def partials_at(args: tuple[Any, ...], y: Any) -> tuple[Any, ...]:
        d = partials(*args, result=y) if with_result else partials(*args)
        return d if isinstance(d, tuple) else (d,)

    def scalar_rrule(*args: Any) -> Any:
        y = f(*args)

        def pullback(ybar: Any) -> Any:
            ds = partials_at(args, y)
            return (NoTangent(), *(_cotangent(a, ybar * conj(d)) for a, d in zip(args, ds, strict=True)))

        pullback.__name__ = pullback.__qualname__ = f"{name}_pullback"
        return y, pullback

    def scalar_frule(tangents: Any, *args: Any) -> Any:
        y = f(*args)
        ydot: Any = ZeroTangent()
        ds = partials_at(args, y)
        for d, xdot in zip(ds, tangents[1:], strict=True):
            if not isinstance(xdot, AbstractZero):
                ydot = d * xdot if isinstance(ydot, AbstractZero) else ydot + d * xdot
        if not isinstance(ydot, AbstractZero):
            ydot = project(y, ydot)
        return y, ydot

    scalar_rrule.__name__ = scalar_rrule.__qualname__ = f"{name}_rrule"
    scalar_frule.__name__ = scalar_frule.__qualname__ = f"{name}_frule"
    return RulePair(f, scalar_rrule, scalar_frule, types)


def scalar_rule(f: Any, partials: Callable[..., Any], *types: TypeSpec) -> None:
    """Register an frule and an rrule for ``f`` from its partial derivatives
    (:func:`partials_rules`, registered).

    Example:
        >>> import rulescore as rc
        >>> def cube(x): return x ** 3
        >>> rc.scalar_rule(cube, lambda x: 3 * x ** 2)
        >>> y, back = rc.rrule(cube, 2.0)
        >>> y, back(1.0), rc.frule((None, 1.0), cube, 2.0)
        (8.0, (NoTangent(), 12.0), (8.0, 12.0))
    """
    register_rules(partials_rules(f, partials, *types))


def non_differentiable_rules(f: Any, *types: TypeSpec) -> RulePair:
    """Rules for ``f`` giving ``NoTangent`` for every input (not registered: see
    :func:`non_differentiable`). Engines see the ``non_differentiable`` kind and skip recording.

    Example:
        >>> import rulescore as rc
        >>> def sign_of(x): return 1 if x > 0 else -1
        >>> rc.non_differentiable_rules(sign_of).kind
        'non_differentiable'
    """

    def no_derivative_rrule(*args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)

        def no_derivative_pullback(ybar: Any) -> Any:
            return (NoTangent(),) * (1 + len(args))

        return y, no_derivative_pullback

    def no_derivative_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs), NoTangent()

    return RulePair(f, no_derivative_rrule, no_derivative_frule, types, kind="non_differentiable")


def non_differentiable(f: Any, *types: TypeSpec) -> None:
    """Declare ``f`` non-differentiable: its rules give ``NoTangent`` for every input.

    Example:
        >>> import rulescore as rc
        >>> def sign_of(x): return 1 if x > 0 else -1
        >>> rc.non_differentiable(sign_of)
        >>> y, back = rc.rrule(sign_of, 2.0)
        >>> y, back(1.0)
        (1, (NoTangent(), NoTangent()))
    """
    register_rules(non_differentiable_rules(f, *types))


def ignore_derivatives(x: Any) -> Any:
    """Return ``x`` unchanged, with no gradient flowing back through it.

    A zero-argument callable is called and its result returned (as in ChainRulesCore), so
    ``ignore_derivatives(lambda: log_state())`` runs code that is never differentiated.

    Example:
        >>> import rulescore as rc
        >>> rc.ignore_derivatives(3.0), rc.rrule(rc.ignore_derivatives, 3.0)[1](1.0)
        (3.0, (NoTangent(), NoTangent()))
    """
    if inspect.isfunction(x) or inspect.ismethod(x):
        return x()
    return x


non_differentiable(ignore_derivatives)
