"""``TestConfig``: a :class:`~rulescore.RuleConfig` for testing rules that call back into AD.

ChainRulesTestUtils' ``ADviaRuleConfig`` for Python: a rule taking a config (registered with
``config=rc.HasReverseMode`` or ``rc.HasForwardsMode``) is tested with no AD engine installed;
its ``rrule_via_ad`` / ``frule_via_ad`` use the registered rules of the function they are given
when one applies, and high-accuracy finite differences otherwise.
"""

from __future__ import annotations

from typing import Any

import rulescore as rc
from rulescore.testing._finite_differences import DEFAULT_FD, FiniteDifferences, fd_jvp, fd_vjp


class TestConfig(rc.RuleConfig, rc.HasReverseMode, rc.HasForwardsMode):
    """A config whose ``rrule_via_ad`` / ``frule_via_ad`` need no engine: ``f``'s registered rule
    when one applies, else finite differences (``fd``). ``test_rrule`` and ``test_frule`` pass
    one to rules that take a config (or the ``config=`` given to them).

    Example:
        >>> import numpy as np, rulescore as rc, rulescore.testing as rct
        >>> def apply(g, x): return g(x)
        >>> @rc.rrule.register(apply, config=rc.HasReverseMode)
        ... def apply_rrule(config, g, x):
        ...     y, g_pullback = rc.rrule_via_ad(config, g, x)
        ...     return y, lambda ybar: (rc.NoTangent(), rc.NoTangent(), g_pullback(ybar)[1])
        >>> def cube(x): return x ** 3               # no rule: finite differences stand in
        >>> y, back = rc.rrule(rct.TestConfig(), apply, cube, 2.0)
        >>> round(float(back(1.0)[2]), 6)
        12.0
        >>> rct.test_rrule(apply, rct.no_tangent(cube), np.array([0.5, 2.0]))
    """

    __test__ = False  # not a pytest test class

    def __init__(self, fd: FiniteDifferences = DEFAULT_FD) -> None:
        self.fd = fd

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``f``'s rrule (given this config), or ``f(*args)`` with a finite-difference pullback."""
        found = rc.rrule(self, f, *args, **kwargs)
        if found is not None:
            return found
        y = f(*args, **kwargs)

        def finite_difference_pullback(ybar: Any) -> tuple[Any, ...]:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return (rc.NoTangent(), *(rc.ZeroTangent() for _ in args))
            return (rc.NoTangent(), *fd_vjp(f, args, ybar, self.fd, **kwargs))

        return y, finite_difference_pullback

    def frule_via_ad(self, tangents: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        """``f``'s frule (given this config), or ``f(*args)`` with a finite-difference tangent."""
        found = rc.frule(self, tangents, f, *args, **kwargs)
        if found is not None:
            return found
        xdots = [rc.ZeroTangent() if t is None else rc.unthunk(t) for t in tuple(tangents)[1:]]
        return f(*args, **kwargs), fd_jvp(f, args, xdots, self.fd, **kwargs)


def configured(table: Any, config: rc.RuleConfig) -> Any:
    """``table`` (``rc.rrule`` or ``rc.frule``) called with ``config`` first."""

    def with_config(*call: Any, **kwargs: Any) -> Any:
        return table(config, *call, **kwargs)

    with_config.__name__ = with_config.__qualname__ = f"{table.name}({type(config).__name__}(), ...)"
    return with_config


def config_for(table: Any, f: Any, primals: tuple[Any, ...], config: rc.RuleConfig | None
               ) -> rc.RuleConfig | None:
    """The config a tester passes: ``config`` if given, else a :class:`TestConfig` when ``f`` has
    only rules that take a config, else ``None`` (the rule is called as an engine without a
    config would)."""
    if config is not None:
        return config
    if table.lookup(f, primals) is None and table.lookup(f, primals, TestConfig()) is not None:
        return TestConfig()
    return None
