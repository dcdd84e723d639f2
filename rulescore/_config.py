"""``RuleConfig``: what a running AD system can do, handed to rules that ask for it.

A rule registered with ``config=HasReverseMode`` receives the engine's config as its first
argument and may call back into that engine with ``rrule_via_ad`` (for example to differentiate
a user-supplied function inside ``map``). Capabilities are mixin classes, as in ChainRulesCore.
"""

from __future__ import annotations

from typing import Any


class RuleConfig:
    """Base class of every AD system's configuration object.

    An engine subclasses it together with the capability mixins it has and overrides
    ``rrule_via_ad`` / ``frule_via_ad``.

    Example:
        >>> import rulescore as rc
        >>> class MyAD(rc.RuleConfig, rc.HasReverseMode, rc.NoForwardsMode):
        ...     def rrule_via_ad(self, f, *args, **kwargs):
        ...         return rc.rrule(f, *args, **kwargs)
        >>> import math
        >>> y, back = rc.rrule_via_ad(MyAD(), math.exp, 0.0)
        >>> y, back(2.0)
        (1.0, (NoTangent(), 2.0))
    """

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``(y, pullback)`` for ``f(*args)`` from the running reverse-mode AD system."""
        raise TypeError(f"{type(self).__name__} has no reverse mode (rrule_via_ad)")

    def frule_via_ad(self, tangents: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``(y, ydot)`` for ``f(*args)`` from the running forward-mode AD system."""
        raise TypeError(f"{type(self).__name__} has no forward mode (frule_via_ad)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class HasReverseMode:
    """Capability: the config's ``rrule_via_ad`` works."""


class NoReverseMode:
    """Capability: the AD system has no reverse mode."""


class HasForwardsMode:
    """Capability: the config's ``frule_via_ad`` works."""


class NoForwardsMode:
    """Capability: the AD system has no forward mode."""


def rrule_via_ad(config: RuleConfig, f: Any, *args: Any, **kwargs: Any) -> Any:
    """Ask the AD system behind ``config`` for ``(y, pullback)`` of ``f(*args, **kwargs)``.

    Example: see :class:`RuleConfig`.
    """
    return config.rrule_via_ad(f, *args, **kwargs)


def frule_via_ad(config: RuleConfig, tangents: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
    """Ask the AD system behind ``config`` for ``(y, ydot)`` of ``f(*args, **kwargs)``.

    Example:
        >>> import rulescore as rc
        >>> class Fwd(rc.RuleConfig, rc.HasForwardsMode):
        ...     def frule_via_ad(self, tangents, f, *args, **kwargs):
        ...         return rc.frule(tangents, f, *args, **kwargs)
        >>> import math
        >>> rc.frule_via_ad(Fwd(), (None, 1.0), math.exp, 0.0)
        (1.0, 1.0)
    """
    return config.frule_via_ad(tangents, f, *args, **kwargs)
