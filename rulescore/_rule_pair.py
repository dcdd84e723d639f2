"""One way to declare rules: a :class:`RulePair` per callable (and signature), listed in a
table, registered by :func:`register_rules`.

Every family of the rule library is a module with one table, ``RULES``: a tuple of
``RulePair``. The pairs come from named rule functions (``RulePair(np.sin, sin_rrule,
sin_frule)``) or from the helpers that derive both rules of a common shape
(:func:`~rulescore.partials_rules` for element-wise functions, :func:`~rulescore.linear_rules`
for linear ones, :func:`~rulescore.non_differentiable_rules`). A third-party package writes its
rules the same way, or with the ``@rc.rrule.register(f)`` decorator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rulescore._registry import TypeSpec, frule, rrule


@dataclass(frozen=True)
class RulePair:
    """The rrule and frule of one callable for one signature (either may be ``None``).

    ``types`` restrict the rules to calls whose positional arguments are instances of them;
    ``config`` asks for the engine's :class:`~rulescore.RuleConfig` as first argument; ``kind``
    is ``"rule"`` or ``"non_differentiable"``; ``wrt`` lists the positions of the positional
    arguments with a derivative (default: all): the frule is called only when one of their
    tangents is non-zero, so it never tests the tangents of the others (an axis, a shape).
    ``zero_tangents=True`` (the default of this table form): the frule receives ``ZeroTangent()``
    for a float argument without a tangent and skips its work; ``False``: zeros of the
    argument's shape (what ``@rc.frule.register`` gives by default).

    Example:
        >>> import math, rulescore as rc
        >>> def sin_rrule(x):
        ...     def sin_pullback(ybar):
        ...         return rc.NoTangent(), ybar * math.cos(x)
        ...     return math.sin(x), sin_pullback
        >>> rc.RulePair(math.sin, sin_rrule).rrule(0.0)[1](2.0)
        (NoTangent(), 2.0)
    """

    primal: Any
    rrule: Callable[..., Any] | None = None
    frule: Callable[..., Any] | None = None
    types: tuple[TypeSpec, ...] = ()
    config: type | None = None
    kind: str = "rule"
    wrt: tuple[int, ...] | None = None
    zero_tangents: bool = True


def register_rules(*pairs: RulePair) -> None:
    """Register every pair's rrule and frule (the one registration loop of the library).

    Example:
        >>> import rulescore as rc
        >>> def double(x): return 2 * x
        >>> def double_rrule(x):
        ...     return double(x), lambda ybar: (rc.NoTangent(), 2 * ybar)
        >>> rc.register_rules(rc.RulePair(double, double_rrule))
        >>> rc.rrule(double, 1.0)[1](1.0)
        (NoTangent(), 2.0)
    """
    for pair in pairs:
        if pair.rrule is not None:
            rrule.register_kind(pair.primal, pair.types, pair.rrule, pair.kind, pair.config)
        if pair.frule is not None:
            frule.register_kind(pair.primal, pair.types, pair.frule, pair.kind, pair.config, pair.wrt,
                                pair.zero_tangents)
