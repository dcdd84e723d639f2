"""Adapters that let ``test_rrule`` / ``test_frule`` check an AD engine instead of a rule."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import rulescore as rc


def rrule_from_pullback(pullback: Callable[..., Any]) -> Callable[..., Any]:
    """An ``rrule_f`` for ``test_rrule`` from an engine's ``pullback(f, *args) -> (y, back)``,
    where ``back(ybar)`` returns one gradient per argument (``zygotepy.pullback``'s signature).

    Keyword arguments are bound with ``functools.partial``; the engine's cotangent for ``f``
    itself is ``NoTangent()``; a thunked ybar is evaluated and a zero ybar short-circuits to
    zeros. Use ``strict=False`` in ``test_rrule``: engines return user-facing values (``None``,
    plain tuples) rather than ``rc.Tangent``.

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> def by_hand(f, *args):   # a toy "engine" that knows only np.sin
        ...     (x,) = args
        ...     return f(x), lambda ybar: (ybar * np.cos(x),)
        >>> rct.test_rrule(np.sin, np.array([0.1, 0.2]), rrule_f=rct.rrule_from_pullback(by_hand),
        ...                strict=False)
    """

    def engine_rrule(f: Any, *args: Any, **kwargs: Any) -> Any:
        g = functools.partial(f, **kwargs) if kwargs else f
        y, back = pullback(g, *args)

        def engine_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return (rc.NoTangent(), *(rc.ZeroTangent() for _ in args))
            grads = back(ybar)
            if grads is None:
                grads = (None,) * len(args)
            return (rc.NoTangent(), *tuple(grads))

        return y, engine_pullback

    engine_rrule.__name__ = engine_rrule.__qualname__ = f"rrule_from_pullback({_name(pullback)})"
    return engine_rrule


def frule_from_jvp(jvp: Callable[..., Any]) -> Callable[..., Any]:
    """An ``frule_f`` for ``test_frule`` from an engine's ``jvp(f, args, tangents) -> (y, ydot)``
    (one tangent per argument; ``f``'s own tangent is dropped).

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> def by_hand(f, args, tangents):   # a toy forward-mode "engine" for np.sin
        ...     return f(*args), np.cos(args[0]) * tangents[0]
        >>> rct.test_frule(np.sin, np.array([0.1, 0.2]), frule_f=rct.frule_from_jvp(by_hand))
    """

    def engine_frule(tangents: Sequence[Any], f: Any, *args: Any, **kwargs: Any) -> Any:
        g = functools.partial(f, **kwargs) if kwargs else f
        return jvp(g, args, tuple(tangents[1:]))

    engine_frule.__name__ = engine_frule.__qualname__ = f"frule_from_jvp({_name(jvp)})"
    return engine_frule


def _name(f: Any) -> str:
    return str(getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__)
