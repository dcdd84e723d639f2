"""``linear_rules`` / ``deflinear``: rules of linear functions from their transpose."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
from rulescore._linear import dense_tangent

finite = st.floats(-10.0, 10.0, allow_nan=False)


def shift_sum(x, k):
    """Sum of ``x`` rolled by ``k``: linear in ``x``, ``k`` is static."""
    return np.roll(x, k) * np.arange(1.0, len(x) + 1)


def shift_sum_transpose(ybar, x, k):
    return np.roll(ybar * np.arange(1.0, len(x) + 1), -k)


rc.deflinear(shift_sum, shift_sum_transpose)


def pair_total(xs):
    """``xs[0] + 2 * xs[1]`` for a list of two arrays: linear in the list."""
    return xs[0] + 2 * xs[1]


def pair_total_transpose(ybar, xs):
    return [ybar, 2 * ybar]


PAIR = rc.linear_rules(pair_total, pair_total_transpose)


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 5), elements=finite), k=st.integers(-3, 3))
def test_deflinear_rules_pass_the_rule_tester(x, k):
    rct.test_rrule(shift_sum, x, k)
    rct.test_frule(shift_sum, x, k)


def test_the_transpose_is_the_adjoint_of_the_frule():
    rng = np.random.default_rng(0)
    x, xdot, ybar = rng.normal(size=(3, 4))
    _, back = rc.rrule(shift_sum, x, 1)
    _, ydot = rc.frule((None, xdot, None), shift_sum, x, 1)
    assert np.dot(ydot, ybar) == pytest.approx(np.dot(xdot, back(ybar)[1]))
    assert back(ybar)[2] is rc.NoTangent()


def test_rules_are_named_after_the_function():
    y, back = PAIR.rrule([np.ones(2), np.ones(2)])
    assert PAIR.rrule.__name__ == "pair_total_rrule" and back.__name__ == "pair_total_pullback"
    assert PAIR.frule.__name__ == "pair_total_frule"


def test_a_list_argument_gets_a_list_tangent_and_zero_entries_read_as_zeros():
    xs = [np.ones(2), np.ones(2)]
    _, back = PAIR.rrule(xs)
    assert back(np.array([1.0, 3.0]))[1] == rc.Tangent[list](np.array([1.0, 3.0]), np.array([2.0, 6.0]))
    _, ydot = PAIR.frule((None, rc.Tangent[list](rc.ZeroTangent(), np.array([1.0, 2.0]))), xs)
    np.testing.assert_array_equal(ydot, [2.0, 4.0])


def test_a_zero_tangent_of_the_linear_argument_gives_a_zero_tangent():
    y, ydot = rc.frule((None, rc.ZeroTangent(), 1.0), shift_sum, np.ones(3), 1)
    np.testing.assert_array_equal(y, [1.0, 2.0, 3.0])
    assert ydot == rc.ZeroTangent()


def test_dense_tangent_makes_float_zeros_for_int_primals():
    z = dense_tangent(np.arange(3), rc.ZeroTangent())
    assert z.dtype == np.float64 and z.shape == (3,) and not z.any()
