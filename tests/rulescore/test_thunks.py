"""Lazy tangents: ``Thunk`` is evaluated at most once; ``InplaceableThunk`` can add in place.
Their operators are tested with the rest of the arithmetic."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc

ints = st.integers(-1000, 1000).map(float)


class Counter:
    """A thunk body that records how often it ran."""

    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_thunk_is_lazy_and_memoised():
    body = Counter(2.0)
    t = rc.Thunk(body)
    assert body.calls == 0
    assert repr(t) == "Thunk(unevaluated)"
    assert rc.unthunk(t) == 2.0
    assert rc.unthunk(t) == 2.0 and t.unthunk() == 2.0
    _ = (t + 1.0, t * 2.0, -t, t - 1.0, rc.ProjectTo(1.0)(t), rc.add(t, t))
    assert body.calls == 1
    assert repr(t) == "Thunk(2.0)"


def test_thunk_memoises_array_values_by_identity():
    t = rc.Thunk(lambda: np.arange(3.0))
    assert rc.unthunk(t) is rc.unthunk(t)


def test_thunk_of_a_thunk_unthunks_all_the_way():
    assert rc.unthunk(rc.Thunk(lambda: rc.Thunk(lambda: 5.0))) == 5.0


@settings(max_examples=25, deadline=None)
@given(x=st.one_of(ints, st.text(max_size=3), st.none(), st.tuples(ints)))
def test_unthunk_is_the_identity_on_non_thunks(x):
    assert rc.unthunk(x) is x


def test_a_failing_thunk_raises_each_time_it_is_asked():
    def boom():
        raise ValueError("no value")

    t = rc.Thunk(boom)
    for _ in range(2):
        with pytest.raises(ValueError, match="no value"):
            rc.unthunk(t)


def test_inplaceable_thunk_adds_into_the_accumulator_in_place():
    acc = np.zeros(3)
    calls = Counter(np.ones(3))
    t = rc.InplaceableThunk(lambda a: np.add(a, 2.0, out=a), calls)
    out = t.add_into(acc)
    assert out is acc
    np.testing.assert_array_equal(acc, [2.0, 2.0, 2.0])
    assert calls.calls == 0  # the in-place path never builds the value
    assert isinstance(t, rc.Thunk)
    np.testing.assert_array_equal(rc.unthunk(t), np.ones(3))
    rc.unthunk(t)
    assert calls.calls == 1


def test_inplaceable_thunk_behaves_as_a_thunk_in_arithmetic():
    t = rc.InplaceableThunk(lambda a: np.add(a, 1.0, out=a), lambda: np.ones(2))
    np.testing.assert_array_equal(np.ones(2) + t, [2.0, 2.0])
    np.testing.assert_array_equal(rc.ProjectTo(np.zeros(2, np.float32))(t), np.ones(2, np.float32))
    assert rc.ProjectTo(np.zeros(2, np.float32))(t).dtype == np.float32
