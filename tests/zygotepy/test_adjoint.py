"""@zygotepy.adjoint: precedence over rulescore, what back receives and returns, accumulation."""

from dataclasses import dataclass

import pytest

import rulescore as rc
import zygotepy as zp


def test_adjoint_takes_precedence_and_stays_invisible_to_rulescore():
    def f(x):
        return x * 2

    rc.rrule.register(f)(lambda x: (f(x), lambda g: (rc.NoTangent(), 2 * g)))

    @zp.adjoint(f)
    def _(x):
        return f(x), lambda g: (100 * g,)

    assert zp.gradient(f, 1.0) == (100.0,)
    y, back = rc.rrule(f, 1.0)
    assert back(1.0)[1] == 2.0  # rulescore still sees only its own rule

    def g(x):
        return x

    zp.adjoint(g)(lambda x: (x, lambda d: (d,)))
    assert rc.rrule(g, 1.0) is None


def test_adjoint_returning_none_for_everything_and_wrong_count():
    def h(a, b):
        return a * b

    @zp.adjoint(h)
    def _(a, b):
        return h(a, b), lambda c: None

    assert zp.gradient(lambda a, b: h(a, b) + a, 2.0, 3.0) == (1.0, None)

    def bad(a, b):
        return a + b

    @zp.adjoint(bad)
    def _(a, b):
        return bad(a, b), lambda c: (c,)

    with pytest.raises(rc.RuleError, match=r"adjoint of .*bad.*1 gradients.*expected a tuple of 2"):
        zp.gradient(bad, 1.0, 2.0)


def test_adjoint_receives_user_facing_cotangents():
    seen = []

    def pair(x):
        return (x, 2 * x)

    @zp.adjoint(pair)
    def _(x):
        def back(ybar):
            seen.append(ybar)
            a, b = ybar
            return ((0.0 if a is None else a) + 2 * (0.0 if b is None else b),)

        return pair(x), back

    assert zp.gradient(lambda x: pair(x)[1], 1.0) == (2.0,)
    assert seen == [(None, 1.0)]


def test_primal_typed_cotangent_accumulates_with_its_own_add():
    @dataclass
    class V:
        a: float
        b: float

        def __add__(self, other):
            return V(self.a + other.a, self.b + other.b)

    def first(v):
        return v.a

    def second(v):
        return v.b

    zp.adjoint(first, V)(lambda v: (v.a, lambda g: (V(g, 0.0),)))
    zp.adjoint(second, V)(lambda v: (v.b, lambda g: (V(0.0, g),)))
    assert zp.gradient(lambda v: first(v) * 2 + second(v) * 3, V(1.0, 1.0)) == (V(2.0, 3.0),)
