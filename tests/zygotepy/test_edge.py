"""The user's edge: internal tangents to what users see, and users' gradients to tangents."""

import dataclasses

import numpy as np

import rulescore as rc
import zygotepy as zp
from zygotepy._edge import to_internal, to_user


@dataclasses.dataclass
class Point:
    x: float
    y: float


def test_zeros_become_none_and_containers_are_mirrored():
    assert to_user(rc.ZeroTangent(), 1.0) is None
    assert to_user(rc.Tangent[list](1.0, rc.ZeroTangent()), [2.0, 3.0]) == [1.0, None]
    assert to_user(rc.Tangent[dict]({"a": 1.0}), {"a": 1.0, "b": 2.0}) == {"a": 1.0, "b": None}


def test_ints_get_float_gradients_and_arrays_are_projected():
    assert to_user(3, 1) == 3.0 and type(to_user(3, 1)) is float
    np.testing.assert_array_equal(to_user(np.ones((2, 2)), np.zeros(2)), [2.0, 2.0])  # unbroadcast


def test_objects_keep_their_structural_tangent():
    g = to_user(rc.Tangent[Point](x=1.0, y=rc.ZeroTangent()), Point(1.0, 2.0))
    assert isinstance(g, rc.Tangent) and g.x == 1.0 and g.y is None


def test_users_gradients_become_internal_tangents():
    assert to_internal(None, 1.0) == rc.ZeroTangent()
    t = to_internal([1.0, None], [2.0, 3.0])
    assert isinstance(t, rc.Tangent) and t[0] == 1.0 and rc.is_zero(t[1])
    assert to_internal({"a": 2.0}, {"a": 1.0})["a"] == 2.0


def test_round_trip_through_an_adjoint_is_the_identity_on_users_gradients():
    def pair(a, b):
        return [a, b]

    @zp.adjoint(pair)
    def _(a, b):
        return pair(a, b), lambda ct: (ct[0], ct[1])  # receives a list, returns per argument

    assert zp.gradient(lambda a, b: pair(a, b)[0] * 3.0, 1.0, 2.0) == (3.0, None)


def test_jvp_of_a_list_valued_function_returns_a_list():
    y, ydot = zp.jvp(lambda x: [x, 2.0 * x], (1.0,), (1.0,))
    assert (y, ydot) == ([1.0, 2.0], [1.0, 2.0]) and type(ydot) is list
