"""The two zero tangents: singletons, falsy, identity of ``+``, absorbing under ``*``."""

import copy
import pickle

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc

ZEROS = [rc.ZeroTangent(), rc.NoTangent()]
finite = st.floats(-1e6, 1e6, allow_nan=False)
arrays = hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=finite)


@pytest.mark.parametrize("cls", [rc.ZeroTangent, rc.NoTangent])
def test_zeros_are_falsy_singletons(cls):
    z = cls()
    assert z is cls()
    assert not z
    assert isinstance(z, rc.AbstractZero)
    assert repr(z) == f"{cls.__name__}()"


def test_zero_tangent_and_no_tangent_are_different():
    assert rc.ZeroTangent() != rc.NoTangent()
    assert not isinstance(rc.ZeroTangent(), rc.NoTangent)
    assert rc.ZeroTangent() == rc.ZeroTangent()
    assert {rc.ZeroTangent(): 1, rc.NoTangent(): 2}[rc.NoTangent()] == 2


def test_equality_between_zero_and_an_all_zero_tangent_is_symmetric():
    t = rc.Tangent[tuple](0.0, None)
    assert rc.ZeroTangent() == t and t == rc.ZeroTangent()
    assert rc.ZeroTangent() != rc.Tangent[tuple](1.0) and rc.Tangent[tuple](1.0) != rc.ZeroTangent()
    assert rc.ZeroTangent() != 0.0  # a zero tangent is not the number zero
    assert rc.ZeroTangent() != None  # noqa: E711


@pytest.mark.parametrize("z", ZEROS)
def test_copy_and_pickle_keep_the_singleton(z):
    assert copy.copy(z) is z
    assert copy.deepcopy(z) is z
    assert pickle.loads(pickle.dumps(z)) is z


@pytest.mark.parametrize("z", ZEROS)
@settings(max_examples=25, deadline=None)
@given(x=finite)
def test_zero_is_the_identity_of_addition_for_numbers(z, x):
    assert z + x == x
    assert x + z == x
    assert rc.add(z, x) == x
    assert rc.add(x, z) == x
    assert x - z == x
    assert z - x == -x


@pytest.mark.parametrize("z", ZEROS)
@settings(max_examples=25, deadline=None)
@given(x=arrays)
def test_zero_is_the_identity_of_addition_for_arrays(z, x):
    # NumPy must defer to the zero's reflected operators instead of making an object array.
    for out in (z + x, x + z, rc.add(z, x), x - z):
        assert isinstance(out, np.ndarray) and out.dtype == np.float64
        np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(z - x, -x)


@pytest.mark.parametrize("z", ZEROS)
def test_zero_plus_numpy_scalar_is_the_scalar(z):
    assert np.float32(1.5) + z == np.float32(1.5)
    assert type(z + np.float32(1.5)) is np.float32


@pytest.mark.parametrize("z", ZEROS)
@settings(max_examples=25, deadline=None)
@given(x=st.one_of(finite, arrays, st.complex_numbers(max_magnitude=1e6)))
def test_zero_absorbs_multiplication(z, x):
    assert z * x is z
    assert x * z is z
    assert z / (x if np.all(x != 0) else 1.0) is z
    assert -z is z and +z is z


@pytest.mark.parametrize("z", ZEROS)
def test_zero_absorbs_matmul(z):
    m = np.eye(2)
    assert m @ z is z
    assert z @ m is z


def test_sum_of_zeros_keeps_no_tangent_only_if_both_have_no_tangent_space():
    no, zero = rc.NoTangent(), rc.ZeroTangent()
    assert no + no is no
    assert no + zero is zero and zero + no is zero
    assert zero + zero is zero
    assert rc.add(None, no) is no and rc.add(no, None) is no
    assert rc.add(None, None) is zero
    assert None + zero is zero and None + no is no  # None means "zero" wherever a tangent is


@pytest.mark.parametrize("z", ZEROS)
def test_zero_of_a_struct_reads_as_zero_in_every_field(z):
    # The zero tangent of a struct has every field zero.
    assert z.x is z and z.weights.bias is z
    assert z[0] is z and z["key"] is z
    assert list(z) == []
    assert z.real is z and z.imag is z and z.conjugate() is z


@pytest.mark.parametrize("z", ZEROS)
def test_dunder_lookups_on_zeros_are_not_swallowed(z):
    # Libraries probe dunders (copy, numpy, pickle); they must see a normal AttributeError.
    with pytest.raises(AttributeError):
        z.__array_interface__  # noqa: B018
    assert not hasattr(z, "__len__")


@pytest.mark.parametrize("z", [None, rc.ZeroTangent(), rc.NoTangent()])
def test_is_zero_is_true_for_none_and_the_zeros(z):
    assert rc.is_zero(z)


@pytest.mark.parametrize("x", [0.0, 0, np.zeros(3), rc.Tangent[tuple](None), False, rc.Thunk(lambda: None)])
def test_is_zero_is_about_types_not_values(x):
    assert not rc.is_zero(x)


@pytest.mark.parametrize("z", ZEROS)
def test_zero_plus_tangent_and_thunk(z):
    t = rc.Tangent[tuple](1.0, 2.0)
    assert z + t == t and t + z == t
    th = rc.Thunk(lambda: 3.0)
    assert rc.unthunk(z + th) == 3.0 and rc.unthunk(th + z) == 3.0


def test_scale_and_conj_of_none_give_zero_tangent():
    assert rc.scale(None, 2.0) is rc.ZeroTangent()
    assert rc.scale(rc.NoTangent(), 2.0) is rc.NoTangent()
    assert rc.conj(None) is rc.ZeroTangent()
    assert rc.sub(None, None) is rc.ZeroTangent()
