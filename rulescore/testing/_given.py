"""Hypothesis-driven rule checks: draw the arguments, then run every check on each draw."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from hypothesis import HealthCheck, configuration, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from rulescore.testing._testers import test_frule, test_frule_rrule, test_rrule, test_scalar
from rulescore.testing._vec import no_tangent

_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


@contextlib.contextmanager
def _storage_outside_the_working_directory() -> Iterator[None]:
    """Hypothesis keeps caches (the constants of the modules it reads) under its home directory,
    ``.hypothesis`` in the working directory unless configured: while a check runs, a temporary
    one unless the user chose one (``HYPOTHESIS_STORAGE_DIRECTORY`` or
    ``hypothesis.configuration.set_hypothesis_home_dir``), so a check leaves no folder behind."""
    chosen = vars(configuration).get("__hypothesis_home_directory")
    if chosen is not None or os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="rulescore-hypothesis-") as home:
        configuration.set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(None)


def _strategy(a: Any) -> SearchStrategy[Any]:
    return a if isinstance(a, SearchStrategy) else st.just(a)


def check_rule(f: Any, args: Sequence[Any], kwargs: dict[str, Any] | None = None, *,
               nondiff: Sequence[int] = (), frule: bool = True, rtol: float | None = None,
               atol: float | None = None, max_examples: int | None = None,
               rrule_f: Callable[..., Any] | None = None, frule_f: Callable[..., Any] | None = None,
               strict: bool = True) -> None:
    """Check the rules of ``f`` on arguments drawn by hypothesis: ``test_rrule``, then (unless
    ``frule=False``) ``test_frule`` and ``test_frule_rrule``, on every example.

    ``args``: per positional argument a strategy or a plain value; ``kwargs``: plain keyword
    arguments; ``nondiff``: positions that are not perturbed and must get ``NoTangent()``;
    ``rrule_f``/``frule_f``/``strict``: as in ``test_rrule`` (to check an AD engine).
    Hypothesis settings come from the active profile (always ``deadline=None``, one reported
    failure, the simplest, and no example database: nothing is written to the working directory,
    plugin or not); ``max_examples`` overrides the profile's. A failure shows the falsifying
    example.

    Example:
        >>> import numpy as np
        >>> import rulescore.testing as rct
        >>> from rulescore.testing import strategies as S
        >>> rct.check_rule(np.multiply, (S.arrays(shape=(3,)), 2.0), max_examples=5)
    """
    strategies = st.tuples(*(_strategy(a) for a in args))
    overrides: dict[str, Any] = {"deadline": None, "suppress_health_check": _HEALTH,
                                 "report_multiple_bugs": False, "database": None}
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    fkwargs = dict(kwargs or {})
    skip = set(nondiff)

    @settings(**overrides)
    @given(strategies)
    def check(drawn: tuple[Any, ...]) -> None:
        marked = tuple(no_tangent(a) if i in skip else a for i, a in enumerate(drawn))
        tol: dict[str, Any] = {"rtol": rtol, "atol": atol, "fkwargs": fkwargs}
        test_rrule(f, *marked, rrule_f=rrule_f, strict=strict, **tol)
        if frule:
            test_frule(f, *marked, frule_f=frule_f, strict=strict, **tol)
            test_frule_rrule(f, *marked, rrule_f=rrule_f, frule_f=frule_f, **tol)

    with _storage_outside_the_working_directory():
        check()


class RuleTester:
    """The checks with shared defaults (tolerances, an AD engine in place of the rules).

    The pytest plugin's ``rule_tester`` fixture is a ``RuleTester()``; build your own to test an
    AD engine with the same harness: ``RuleTester(rrule_f=my_engine_rrule)``.

    Example:
        >>> import math, numpy as np, rulescore.testing as rct
        >>> from rulescore.testing import strategies as S
        >>> t = rct.RuleTester()
        >>> t.rrule(math.cos, 0.3); t.frule(math.cos, 0.3); t.scalar(math.tanh, 0.2)
        >>> t.given(np.tanh, S.arrays(max_dims=1), max_examples=5)
    """

    def __init__(self, *, rtol: float | None = None, atol: float | None = None,
                 rrule_f: Callable[..., Any] | None = None,
                 frule_f: Callable[..., Any] | None = None, strict: bool | None = None) -> None:
        self.rtol, self.atol, self.rrule_f, self.frule_f = rtol, atol, rrule_f, frule_f
        # engines hand back user-facing values (None, plain tuples): not strict by default
        self.strict = strict if strict is not None else (rrule_f is None and frule_f is None)

    def _tol(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"rtol": self.rtol, "atol": self.atol, **kwargs}

    def rrule(self, f: Any, *args: Any, **kwargs: Any) -> None:
        """``test_rrule`` with this tester's defaults."""
        kwargs.setdefault("rrule_f", self.rrule_f)
        kwargs.setdefault("strict", self.strict)
        test_rrule(f, *args, **self._tol(kwargs))

    def frule(self, f: Any, *args: Any, **kwargs: Any) -> None:
        """``test_frule`` with this tester's defaults."""
        kwargs.setdefault("frule_f", self.frule_f)
        kwargs.setdefault("strict", self.strict)
        test_frule(f, *args, **self._tol(kwargs))

    def consistency(self, f: Any, *args: Any, **kwargs: Any) -> None:
        """``test_frule_rrule`` with this tester's defaults."""
        kwargs.setdefault("rrule_f", self.rrule_f)
        kwargs.setdefault("frule_f", self.frule_f)
        test_frule_rrule(f, *args, **self._tol(kwargs))

    def both(self, f: Any, *args: Any, **kwargs: Any) -> None:
        """The rrule, the frule and their consistency, at the given arguments."""
        self.rrule(f, *args, **kwargs)
        self.frule(f, *args, **kwargs)
        self.consistency(f, *args, **kwargs)

    def scalar(self, f: Any, x: Any, **kwargs: Any) -> None:
        """``test_scalar`` with this tester's defaults."""
        kwargs.setdefault("rrule_f", self.rrule_f)
        kwargs.setdefault("frule_f", self.frule_f)
        test_scalar(f, x, **self._tol(kwargs))

    def given(self, f: Any, *args: Any, kwargs: dict[str, Any] | None = None, nondiff: Sequence[int] = (),
              frule: bool = True, max_examples: int | None = None) -> None:
        """``check_rule``: every check on arguments drawn by hypothesis (strategies or values)."""
        check_rule(f, args, kwargs, nondiff=nondiff, frule=frule, rtol=self.rtol, atol=self.atol,
                   max_examples=max_examples, rrule_f=self.rrule_f, frule_f=self.frule_f, strict=self.strict)
