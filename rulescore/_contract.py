"""The rule contract, kept once for every consumer of the registry.

A rule author's pullback is called only with a plain, non-zero, unthunked cotangent, and an
author's frule only when some tangent is non-zero (each tangent unthunked, ``None`` read as
``ZeroTangent()``). Everything else (zeros, ``None``, thunks, the count of cotangents a pullback
returns) is dealt with here, so an engine, the tester and the exporters to other AD systems all
see the same behaviour, and no rule in the library repeats it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._checks import RuleError, callable_name
from rulescore._thunks import Thunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

_NT = NoTangent()
_ZT = ZeroTangent()


def pullback_name(pullback: Any) -> str:
    """The name of the pullback an author wrote (through the contract's wrapper)."""
    inner = pullback
    while hasattr(inner, "__wrapped__"):
        inner = inner.__wrapped__
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or inner)


def zero_of(rule: Any) -> AbstractZero:
    """The zero a rule's tangents take: ``NoTangent()`` for a non-differentiable rule (none of
    its inputs or outputs has a tangent), else ``ZeroTangent()``."""
    return _NT if getattr(rule, "kind", "rule") == "non_differentiable" else _ZT


def plain_cotangent(ybar: Any) -> Any:
    """``ybar`` unthunked, or ``None`` when it is a zero (``None``, ``ZeroTangent()``,
    ``NoTangent()``): then no pullback is called and every input's cotangent is zero.

    Example:
        >>> import rulescore as rc
        >>> plain_cotangent(rc.Thunk(lambda: 2.0)), plain_cotangent(rc.ZeroTangent())
        (2.0, None)
    """
    tb = type(ybar)
    if tb is float or tb is np.ndarray or tb is np.float64:
        return ybar
    if isinstance(ybar, Thunk):
        ybar = ybar.unthunk()
    if ybar is None or isinstance(ybar, AbstractZero):
        return None
    return ybar


def check_count(cts: Any, nargs: int, pullback: Any, rule: Any = None) -> tuple[Any, ...]:
    """``cts`` if it is a tuple of ``1 + nargs`` cotangents; else a :class:`RuleError` naming
    the pullback (and the rule)."""
    if type(cts) is tuple and len(cts) == nargs + 1:
        return cts
    got = f"{len(cts)} cotangents" if isinstance(cts, tuple) else f"a {type(cts).__name__}"
    of_rule = f" of {rule!r}" if rule is not None else ""
    raise RuleError(f"the pullback {pullback_name(pullback)}{of_rule} returned {got}; expected {nargs + 1} "
                    "(a tuple: one for the function, then one per positional argument)")


def keep_rrule_contract(rule: Any, f: Any, nargs: int, result: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(y, pullback)`` of an rrule, its pullback wrapped to keep the contract.

    The wrapper returns zeros for every argument on a zero (or ``None``) cotangent without
    calling the author's pullback, unthunks a thunk once, and raises :class:`RuleError` naming
    the rule and the primal function when the author's pullback returns anything but a tuple of
    ``1 + nargs`` cotangents. (Engines that sweep a tape call :func:`plain_cotangent` and
    :func:`check_count` themselves around the author's pullback, and skip the wrapper.)

    Example:
        >>> import rulescore as rc
        >>> def twice(x): return 2 * x
        >>> @rc.rrule.register(twice)
        ... def twice_rrule(x):
        ...     return twice(x), lambda ybar: (rc.NoTangent(), 2 * ybar)   # no zero handling
        >>> y, back = rc.rrule(twice, 1.5)
        >>> back(1.0), back(None), back(rc.Thunk(lambda: 3.0))
        ((NoTangent(), 2.0), (NoTangent(), ZeroTangent()), (NoTangent(), 6.0))
    """
    if type(result) is not tuple or len(result) != 2 or not callable(result[1]):
        raise RuleError(f"the rrule for {callable_name(f)} ({rule}) returned {type(result).__name__}; "
                        "expected a (y, pullback) pair")
    y, back = result
    zero = zero_of(rule)
    zeros = (_NT, *((zero,) * nargs))

    def pullback(ybar: Any) -> Any:
        ybar = plain_cotangent(ybar)
        if ybar is None:
            return zeros
        return check_count(back(ybar), nargs, back, rule)

    pullback.__wrapped__ = back  # type: ignore[attr-defined]
    pullback.__name__ = getattr(back, "__name__", "pullback")
    pullback.__qualname__ = getattr(back, "__qualname__", pullback.__name__)
    return y, pullback


def plain_tangents(tangents: Any) -> tuple[Any, ...] | None:
    """The tangents an frule author receives (unthunked, ``None`` as ``ZeroTangent()``), or
    ``None`` when every one is zero (then the frule is not called: the output tangent is zero).

    Example:
        >>> import rulescore as rc
        >>> plain_tangents((None, rc.Thunk(lambda: 2.0))), plain_tangents((None, None))
        ((ZeroTangent(), 2.0), None)
    """
    out = []
    nonzero = False
    for t in tangents:
        if isinstance(t, Thunk):
            t = t.unthunk()
        if t is None:
            t = _ZT
        elif not isinstance(t, AbstractZero):
            nonzero = True
        out.append(t)
    return tuple(out) if nonzero else None
