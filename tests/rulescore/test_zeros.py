"""The two zero tangents (falsy singletons that read as zero in every field) and the one list of
types without a tangent space. Their operators are tested with the rest of the arithmetic."""

import copy
import math
import pickle

import numpy as np
import pytest

import rulescore as rc
from rulescore._zeros import NO_TANGENT_DATA, NO_TANGENT_TYPES

ZEROS = [rc.ZeroTangent(), rc.NoTangent()]


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




# -- the one list of types without a tangent space -------------------------------------------

NO_TANGENT_VALUES = [True, np.True_, "s", b"b", None, float, range(2), slice(1), Ellipsis,
                     np.dtype(np.float32), len, np.sin, math.sin, "s".upper, math, lambda x: x]


@pytest.mark.parametrize("value", NO_TANGENT_VALUES, ids=lambda v: type(v).__name__)
def test_every_value_without_a_tangent_space_is_listed_and_projects_to_no_tangent(value):
    assert isinstance(value, NO_TANGENT_TYPES)
    assert rc.ProjectTo(value)(1.0) is rc.NoTangent()


@pytest.mark.parametrize("value", [1, 1.5, 2j, np.float32(1.0), np.int64(1), np.zeros(2), (1.0,), {"a": 1.0}])
def test_numbers_arrays_and_containers_are_not_listed(value):
    assert not isinstance(value, NO_TANGENT_TYPES)
    assert rc.ProjectTo(value)(rc.ProjectTo(value)(value)) is not rc.NoTangent()


def test_the_data_types_are_the_list_without_callables():
    assert set(NO_TANGENT_DATA) < set(NO_TANGENT_TYPES)
    assert not any(callable(v) and not isinstance(v, type) for v in NO_TANGENT_VALUES
                   if isinstance(v, NO_TANGENT_DATA))
