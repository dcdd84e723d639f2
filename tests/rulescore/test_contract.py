"""The rule contract (``rulescore._contract``): what an author's pullback and frule receive."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from rulescore._contract import plain_cotangent, plain_tangents

ZT, NT = rc.ZeroTangent(), rc.NoTangent()

#: Tangents in every form a caller may pass: (the form, its plain value or None for a zero).
ZEROS = st.sampled_from([None, ZT, NT, rc.Thunk(lambda: ZT)])
VALUES = st.floats(-5, 5, allow_nan=False).filter(bool)
TANGENTS = st.one_of(
    ZEROS.map(lambda z: (z, None)),
    VALUES.map(lambda v: (v, v)),
    VALUES.map(lambda v: (rc.Thunk(lambda: v), v)),
)


@given(st.lists(TANGENTS, min_size=1, max_size=4), st.data())
def test_an_frule_is_called_only_with_a_non_zero_tangent_where_it_differentiates(given_tangents, data):
    wrt = data.draw(st.none() | st.sets(st.integers(0, len(given_tangents) - 1)).map(tuple))
    forms = tuple(form for form, _ in given_tangents)
    plain = plain_tangents((None, *forms), wrt)
    positions = range(len(forms)) if wrt is None else wrt
    if all(given_tangents[i][1] is None for i in positions):
        assert plain is None
    else:
        assert plain is not None
        for got, (_, value) in zip(plain[1:], given_tangents, strict=True):
            assert (isinstance(got, rc.AbstractZero) if value is None else got == value)


def test_a_structural_cotangent_comes_with_plain_entries():
    t = plain_cotangent(rc.Tangent[tuple](rc.Thunk(lambda: 2.0), None))
    assert t.backing == (2.0, ZT)
    named = plain_cotangent(rc.Tangent[dict]({"a": rc.Thunk(lambda: 1.0), "b": None}))
    assert dict(named.backing) == {"a": 1.0, "b": ZT}
    plain = rc.Tangent[tuple](1.0, ZT)
    assert plain_cotangent(plain) is plain  # nothing to convert: no copy
    assert plain_cotangent(rc.Tangent[tuple](ZT, rc.Thunk(lambda: NT))) is None


def two_parts(x):
    return x, 2 * x


def two_parts_rrule(x):
    def two_parts_pullback(ybar):
        first, second = ybar.backing
        assert not (isinstance(first, rc.AbstractZero) and isinstance(second, rc.AbstractZero))
        return NT, first + 2 * second

    return two_parts(x), two_parts_pullback


rc.register_rules(rc.RulePair(two_parts, two_parts_rrule))


def test_a_pullback_never_sees_a_structural_cotangent_of_zeros():
    _, back = rc.rrule(two_parts, 1.5)
    assert back(rc.Tangent[tuple](ZT, None)) == (NT, ZT)
    assert back(rc.Tangent[tuple](ZT, rc.Thunk(lambda: 1.0))) == (NT, 2.0)


def scaled_by(x, k):
    """``k * x`` where ``k`` is a setting the rule does not differentiate."""
    return k * x


CALLS: list[tuple] = []


def scaled_by_frule(tangents, x, k):
    CALLS.append(tangents)
    return scaled_by(x, k), k * tangents[1]


rc.register_rules(rc.RulePair(scaled_by, frule=scaled_by_frule, wrt=(0,)))


def test_wrt_keeps_an_frule_from_a_tangent_it_does_not_differentiate():
    CALLS.clear()
    assert rc.frule((None, ZT, 1.0), scaled_by, 2.0, 3.0) == (6.0, ZT)
    assert CALLS == []
    assert rc.frule((None, 1.0, 1.0), scaled_by, 2.0, 3.0) == (6.0, 3.0)
    assert CALLS == [(ZT, 1.0, 1.0)]


def test_zygotepy_forward_mode_keeps_the_same_contract():
    CALLS.clear()
    k = 3.0
    y, ydot = zp.jvp(lambda x: scaled_by(x, k), (2.0,), (1.0,))
    assert (y, ydot) == (6.0, 3.0)
    y, ydot = zp.jvp(lambda kk: scaled_by(2.0, kk), (k,), (1.0,))
    assert y == 6.0 and (isinstance(ydot, rc.AbstractZero) or ydot == 0.0)
    assert len(CALLS) == 1


def test_a_reduction_ignores_a_tangent_given_for_its_axis():
    x = np.arange(6.0).reshape(2, 3)
    y, ydot = rc.frule((None, ZT, 1.0), np.sum, x, 0)
    assert np.array_equal(y, x.sum(0)) and ydot is ZT
