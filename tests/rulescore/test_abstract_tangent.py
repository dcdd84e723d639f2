"""``AbstractTangent``, the base of the tangent types: ``+`` and ``-`` on each of them, on either
side, are ``rc.add`` and ``rc.sub`` (installed by ``rulescore._arithmetic``), NumPy deferring."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from rulescore._abstract_tangent import AbstractTangent

values = st.integers(-100, 100).map(float)


def tangents(v):
    """A tangent of each non-structural tangent type (the thunks' value is v)."""
    return [rc.ZeroTangent(), rc.NoTangent(), rc.Thunk(lambda: v),
            rc.InplaceableThunk(lambda acc: acc + v, lambda: v)]


@pytest.mark.parametrize("cls", [rc.AbstractZero, rc.ZeroTangent, rc.NoTangent, rc.Thunk,
                                 rc.InplaceableThunk, rc.Tangent, rc.Tangent[tuple]])
def test_every_tangent_type_is_an_abstract_tangent(cls):
    assert issubclass(cls, AbstractTangent)


@settings(max_examples=25, deadline=None)
@given(v=values, w=values)
def test_plus_and_minus_are_add_and_sub_on_either_side(v, w):
    for t in tangents(v):
        for other in (w, np.array([w, 2 * w]), None, rc.ZeroTangent()):
            for got, expected in ((t + other, rc.add(t, other)), (other + t, rc.add(other, t)),
                                  (t - other, rc.sub(t, other)), (other - t, rc.sub(other, t))):
                if isinstance(other, np.ndarray):  # NumPy deferred: no object array
                    assert isinstance(got, np.ndarray) and got.dtype == np.float64
                np.testing.assert_array_equal(rc.unthunk(got), rc.unthunk(expected))


@settings(max_examples=25, deadline=None)
@given(v=values, w=values)
def test_structural_tangents_add_and_subtract_field_wise(v, w):
    t, u = rc.Tangent[tuple](v, None), rc.Tangent[tuple](w, w)
    assert t + u == rc.add(t, u) == rc.Tangent[tuple](v + w, w)
    assert t - u == rc.sub(t, u) == rc.Tangent[tuple](v - w, -w)
