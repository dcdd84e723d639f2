"""The parameters of a callable, for engines that bind keyword arguments to positions.

A pullback returns cotangents for positional arguments only. An AD engine that sees a traced
keyword argument (``logsumexp(a, b=w)``) moves it into its positional slot first, filling the
slots before it with their defaults, so the rule's pullback gives its cotangent. That needs the
callable's parameters: :func:`inspect.signature` where there is one, or a declaration where the
callable has none or hides its parameters behind ``*args, **kwds`` (a ufunc, a SciPy
distribution method): :func:`declare_parameters`.

A declaration is the positional form the callable's *rules* take, and may place parameters the
callable takes by keyword only (``scipy.integrate.simpson``'s ``dx``): an engine binds such a
keyword into its slot for the rule only (the callable itself is still called as written), and
the pullback returns its cotangent there; the rule passes it on by keyword
(docs/writing-rules.md, "Keyword-only parameters").
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["declare_parameters", "parameters_of"]

#: callable -> its declared signature, or a function of the call's positional arguments giving it.
_DECLARED: dict[Any, inspect.Signature | Callable[[tuple[Any, ...]], inspect.Signature | None]] = {}


def declare_parameters(f: Any, parameters: inspect.Signature | Callable[[tuple[Any, ...]], Any]) -> None:
    """Declare the parameters of ``f``'s rules for keyword binding: an :class:`inspect.Signature`,
    or a function of a call's positional arguments returning one (or ``None``) when they depend
    on the call (a SciPy distribution's shapes depend on the instance). A keyword-only parameter
    of ``f`` declared positional reaches the rules in that position.

    Example:
        >>> import inspect, rulescore as rc
        >>> def scaled(x, *args, **kwds): return x * kwds.get("s", args[0] if args else 1.0)
        >>> P = inspect.Parameter
        >>> rc.declare_parameters(scaled, inspect.Signature(
        ...     [P("x", P.POSITIONAL_OR_KEYWORD), P("s", P.POSITIONAL_OR_KEYWORD, default=1.0)]))
        >>> list(rc.parameters_of(scaled, (2.0,)).parameters)
        ['x', 's']
    """
    _DECLARED[f] = parameters


def parameters_of(f: Any, args: tuple[Any, ...] = ()) -> inspect.Signature | None:
    """The parameters of ``f`` for a call with positional ``args``: declared
    (:func:`declare_parameters`) or from :func:`inspect.signature`; ``None`` when unknown.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> list(rc.parameters_of(np.clip).parameters)[:3]
        ['a', 'a_min', 'a_max']
        >>> list(rc.parameters_of(np.add).parameters)[:3]   # a ufunc: operands positional only
        ['x1', 'x2', 'out']

    """
    try:
        declared = _DECLARED.get(f)
    except TypeError:  # an unhashable callable object
        return None
    if declared is None:
        return _signature(f)
    if isinstance(declared, inspect.Signature):
        return declared
    return declared(args)


@functools.lru_cache(maxsize=1024)
def _signature(f: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(f)
    except (TypeError, ValueError):
        return None
