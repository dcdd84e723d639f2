"""``rc.RulePair``, the one rule entry: the rules it derives (from partials, a transpose, its
kind), the explicit rules that replace derived ones, its checks, and the registry's lazy
registration (an entry's rules are built on the first lookup of its callable)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
from rulescore._registry import RuleTable

finite = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)


def _central(f: Any, x: float, h: float = 1e-6) -> float:
    return float((f(x + h) - f(x - h)) / (2 * h))


@settings(max_examples=30, deadline=None)
@given(a=finite, b=finite, x=finite)
def test_partials_entry_matches_finite_differences(a: float, b: float, x: float) -> None:
    def cubic(t: Any) -> Any:
        return a * t ** 3 + b * t

    reverse, forward = rc.RulePair(cubic, partials=lambda t: 3 * a * t ** 2 + b).rules()
    assert reverse is not None and forward is not None
    expected = _central(cubic, x)
    assert reverse(x)[1](1.0)[1] == pytest.approx(expected, rel=1e-5, abs=1e-5)
    assert forward((None, 1.0), x)[1] == pytest.approx(expected, rel=1e-5, abs=1e-5)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_transpose_entry_is_the_adjoint(data: st.DataObject) -> None:
    """For a linear map, <ybar, f(xdot)> == <pullback(ybar), xdot> (the frule applies f)."""
    n = data.draw(st.integers(1, 5))
    weights = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)))

    def weigh(x: Any) -> Any:
        return np.cumsum(weights * x)

    def weigh_transpose(ybar: Any, x: Any) -> Any:
        return weights * np.cumsum(ybar[::-1])[::-1]

    reverse, forward = rc.RulePair(weigh, transpose=weigh_transpose).rules()
    assert reverse is not None and forward is not None
    x = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)))
    xdot = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)))
    ybar = np.array(data.draw(st.lists(finite, min_size=n, max_size=n)))
    y, ydot = forward((None, xdot), x)
    np.testing.assert_allclose(y, weigh(x))
    xbar = reverse(x)[1](ybar)[1]
    assert float(ybar @ ydot) == pytest.approx(float(xbar @ xdot), rel=1e-9, abs=1e-9)


def test_registered_entries_pass_the_rule_tester() -> None:
    def softsign(x: Any) -> Any:
        return x / (1 + np.abs(x))

    def shift(x: Any, k: int) -> Any:
        return np.roll(x, k)

    rc.register_rules(
        rc.RulePair(softsign, partials=lambda x: 1 / (1 + np.abs(x)) ** 2),
        rc.RulePair(shift, transpose=lambda ybar, x, k: np.roll(ybar, -k)),
    )
    x = np.array([0.5, -1.5, 2.0])
    rct.test_rrule(softsign, x)
    rct.test_frule(softsign, x)
    rct.test_rrule(shift, x, 1)
    rct.test_frule(shift, x, 1)


def test_kinds_derive_their_rules() -> None:
    def parity(n: int) -> int:
        return n % 2

    def passes(x: Any) -> Any:
        return x

    rc.register_rules(rc.RulePair(parity, kind="non_differentiable"),
                      rc.RulePair(passes, types=(int,), kind="opt_out"))
    y, back = rc.rrule(parity, 3)
    assert (y, back(1.0)) == (1, (rc.NoTangent(), rc.NoTangent()))
    assert rc.frule((None, 1.0), parity, 3) == (1, rc.NoTangent())
    assert rc.rrule.rules_for(parity)[0].kind == "non_differentiable"
    assert rc.rrule(passes, 1) is None and rc.frule((None, 1.0), passes, 1) is None
    assert [r.kind for r in rc.rrule.rules_for(passes)] == ["opt_out"]


def test_an_explicit_rule_replaces_the_derived_one() -> None:
    """The former half-pair ``RulePair(np.pad, linear_rules(...).rrule, pad_frule)``: the rrule
    from the transpose, the frule its own."""
    calls = []

    def scale(x: Any) -> Any:
        return 2 * x

    def scale_frule(tangents: Any, x: Any) -> Any:
        calls.append(x)
        return scale(x), 2 * tangents[1]

    pair = rc.RulePair(scale, frule=scale_frule, transpose=lambda ybar, x: 2 * ybar)
    reverse, forward = pair.rules()
    assert forward is scale_frule and reverse is not None
    assert reverse(1.5)[1](1.0) == (rc.NoTangent(), 2.0)
    rc.register_rules(pair)
    assert rc.frule((None, 1.0), scale, 3.0) == (6.0, 2.0) and calls == [3.0]
    assert rc.rrule(scale, 3.0)[1](1.0) == (rc.NoTangent(), 2.0)


def test_entry_options_are_checked_when_it_is_written() -> None:
    def f(x: Any) -> Any:
        return x

    with pytest.raises(TypeError, match="partials= .* or transpose="):
        rc.RulePair(f, partials=lambda x: 1, transpose=lambda ybar, x: ybar)
    with pytest.raises(TypeError, match="options of partials="):
        rc.RulePair(f, f, errstate=True)
    with pytest.raises(TypeError, match="native= is an option"):
        rc.RulePair(f, f, native="sin")
    with pytest.raises(TypeError, match="takes rc.RulePair entries"):
        rc.register_rules((f, f))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="classes or tuples of classes"):
        rc.register_rules(rc.RulePair(f, f, types=("float",)))  # type: ignore[arg-type]


def test_rules_are_built_on_the_first_lookup() -> None:
    """Registering keeps the entry; its rules are derived when a lookup first needs them."""
    built = []

    def square(x: Any) -> Any:
        return x * x

    def square_partials(x: Any) -> Any:
        return 2 * x

    table = RuleTable("rrule")
    pair = rc.RulePair(square, partials=square_partials)
    original = pair.rules

    def counting_rules() -> Any:
        built.append(True)
        return original()

    object.__setattr__(pair, "rules", counting_rules)
    version = table.version
    table.declare(pair)
    assert built == [] and table.has_rules(square) and square in table.primals and table.version > version
    assert square in table.callables()
    assert table.sole_rule(square) is not None and built == [True]
    [rule] = table.rules_for(square)
    assert rule.origin.endswith(str(square_partials.__code__.co_firstlineno))  # where the author wrote it
    assert table(square, 3.0)[1](1.0) == (rc.NoTangent(), 6.0)


def test_later_entries_replace_earlier_ones_while_pending() -> None:
    def cube(x: Any) -> Any:
        return x ** 3

    table = RuleTable("rrule")
    table.declare(rc.RulePair(cube, partials=lambda x: 0.0))  # wrong, replaced before any lookup
    table.declare(rc.RulePair(cube, partials=lambda x: 3 * x ** 2))
    table.declare(rc.RulePair(cube, types=(int,), kind="non_differentiable"))
    assert table(cube, 2.0)[1](1.0) == (rc.NoTangent(), 12.0)
    assert table(cube, 2)[1](1.0) == (rc.NoTangent(), rc.NoTangent())
    assert len(table.rules_for(cube)) == 2
    assert "out of 2 registered" in table.explain(cube, 2.0)


def test_a_declared_entry_is_explained_before_any_lookup() -> None:
    def halve(x: Any) -> Any:
        return x / 2

    table = RuleTable("frule")
    table.declare(rc.RulePair(halve, partials=lambda x: 0.5))
    assert "picks <frule(" in table.explain(halve, 1.0)
    assert table((None, 2.0), halve, 4.0) == (2.0, 1.0)


def test_register_kind_keeps_its_signature() -> None:
    """Engines and the interop tier register with ``register_kind`` (now through the entry)."""
    def twice(x: Any) -> Any:
        return 2 * x

    def twice_frule(tangents: Any, x: Any) -> Any:
        return twice(x), 2 * tangents[1]

    table = RuleTable("frule")
    table.register_kind(twice, (float,), twice_frule, "rule", None, (0,), False)
    [rule] = table.rules_for(twice)
    assert (rule.impl, rule.types, rule.kind, rule.wrt, rule.zero_tangents) == (twice_frule, (float,), "rule",
                                                                                (0,), False)
