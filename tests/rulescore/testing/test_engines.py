"""rulescore.testing._engines: an AD engine checked by the same harness as rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S

# ---------------------------------------------------------------------------------------------
# an AD engine in place of the rules (autograd as the reference engine)


def _autograd_pullback(f: Any, *args: Any) -> Any:
    from autograd import make_vjp

    vjp, y = make_vjp(lambda packed: f(*packed))(tuple(args))
    return y, lambda ybar: tuple(vjp(ybar))


def _autograd_jvp(f: Any, args: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    from autograd import make_jvp

    dots = tuple(np.zeros_like(np.asarray(a, dtype=float)) if rc.is_zero(t) else t
                 for a, t in zip(args, tangents, strict=True))
    return make_jvp(lambda packed: f(*packed))(tuple(args))(dots)


def _softplus_sum(x: Any, w: Any) -> Any:
    import autograd.numpy as anp

    return anp.sum(anp.log1p(anp.exp(x * w)))


def test_an_engine_is_checked_by_the_same_harness() -> None:
    rrule_f = rct.rrule_from_pullback(_autograd_pullback)
    frule_f = rct.frule_from_jvp(_autograd_jvp)
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    rct.test_rrule(_softplus_sum, x, w, rrule_f=rrule_f, strict=False)
    rct.test_frule(_softplus_sum, x, w, frule_f=frule_f, strict=False)
    rct.test_frule_rrule(_softplus_sum, x, w, rrule_f=rrule_f, frule_f=frule_f)
    rct.RuleTester(rrule_f=rrule_f, frule_f=frule_f).given(
        _softplus_sum, S.arrays(shape=(3,)), S.arrays(shape=(3,)), max_examples=5)


def test_a_broken_engine_is_caught() -> None:
    def broken(f: Any, *args: Any) -> Any:
        y, back = _autograd_pullback(f, *args)
        return y, lambda ybar: tuple(-g for g in back(ybar))

    with pytest.raises(AssertionError, match=r"computed by .*rrule_from_pullback\(.*broken\)"):
        rct.test_rrule(_softplus_sum, np.array([0.5, 1.0]), np.ones(2),
                       rrule_f=rct.rrule_from_pullback(broken), strict=False)


def test_zygotepy_is_checked_by_the_same_harness() -> None:
    import zygotepy as zp

    def loss(x: Any, w: Any) -> Any:
        return np.sum(np.tanh(x * w) ** 2)

    tester = rct.RuleTester(rrule_f=rct.rrule_from_pullback(zp.pullback))
    tester.rrule(loss, np.array([0.3, 1.0]), np.array([0.5, -2.0]))
    tester.given(loss, S.arrays(shape=(3,)), S.arrays(shape=(3,)), frule=False, max_examples=5)
