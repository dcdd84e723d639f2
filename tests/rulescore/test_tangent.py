"""``Tangent[P]``: construction, field access, repr, equality and ``primal + tangent``."""

import copy
import gc
import pickle
import weakref
from dataclasses import dataclass

import numpy as np
import pytest

import rulescore as rc
from tests.rulescore.structs import FrozenPoint, Model, PlainPoint, Point, PointNT, SlotPoint

# -- construction ----------------------------------------------------------------------------


def test_tangent_of_a_type_is_one_cached_class():
    assert rc.Tangent[Point] is rc.Tangent[Point]
    assert rc.Tangent[Point] is not rc.Tangent[PointNT]
    t = rc.Tangent[Point](x=1.0)
    assert isinstance(t, rc.Tangent) and isinstance(t, rc.Tangent[Point])
    assert t.primal_type is Point


def test_tangent_needs_a_primal_type():
    with pytest.raises(TypeError, match="Tangent\\[P\\]"):
        rc.Tangent(1.0)


def test_tangent_of_tuple_list_and_dict():
    assert rc.Tangent[tuple](1.0, 2.0).backing == (1.0, 2.0)
    assert rc.Tangent[list](1.0).backing == (1.0,)
    assert rc.Tangent[dict]({"a": 1.0}).backing == {"a": 1.0}
    assert rc.Tangent[dict](a=1.0, b=2.0).backing == {"a": 1.0, "b": 2.0}


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: rc.Tangent[tuple](a=1.0), "positional"),
        (lambda: rc.Tangent[dict](1.0), "dict"),
        (lambda: rc.Tangent[dict]({"a": 1.0}, {"b": 2.0}), "dict"),
        (lambda: rc.Tangent[Point](1.0, 2.0), "keyword"),
        (lambda: rc.Tangent[PointNT](1.0, 2.0, 3.0), "keyword"),
    ],
)
def test_tangent_rejects_entries_that_do_not_fit_its_kind(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_named_tuple_tangent_accepts_positions_and_names():
    assert rc.Tangent[PointNT](1.0, 2.0) == rc.Tangent[PointNT](x=1.0, y=2.0)
    assert rc.Tangent[PointNT](1.0, y=2.0).backing == {"x": 1.0, "y": 2.0}


# -- field access ----------------------------------------------------------------------------


def test_absent_fields_read_as_zero_tangent():
    t = rc.Tangent[Point](x=1.0)
    assert t.x == 1.0
    assert t.y is rc.ZeroTangent()
    assert rc.Tangent[dict]({"a": 1.0})["b"] is rc.ZeroTangent()
    assert rc.Tangent[dict]({"a": 1.0}).a == 1.0
    assert rc.Tangent[PointNT](x=1.0)[1] is rc.ZeroTangent()
    assert rc.Tangent[PointNT](x=1.0)[0] == 1.0
    assert rc.Tangent[tuple](1.0)[3] is rc.ZeroTangent()
    assert rc.Tangent[tuple](1.0, 2.0)[-1] == 2.0


def test_positional_tangent_has_no_named_fields():
    with pytest.raises(AttributeError, match="positional"):
        rc.Tangent[tuple](1.0).x  # noqa: B018


def test_items_len_and_iteration():
    t = rc.Tangent[tuple](1.0, None)
    assert t.items() == [(0, 1.0), (1, None)]
    assert len(t) == 2 and list(t) == [1.0, None]
    nt = rc.Tangent[PointNT](y=2.0)
    assert list(nt) == [rc.ZeroTangent(), 2.0]  # in field order, absent fields as zeros
    assert rc.Tangent[Point](y=2.0, x=1.0).items() == [("y", 2.0), ("x", 1.0)]
    with pytest.raises(TypeError, match="items"):
        iter(rc.Tangent[Point](x=1.0))


# -- repr ------------------------------------------------------------------------------------


def test_repr_names_the_primal_type_and_fields():
    assert repr(rc.Tangent[Point](x=0.447, y=0.894)) == "Tangent[Point](x=0.447, y=0.894)"
    assert repr(rc.Tangent[PointNT](0.5, None)) == "Tangent[PointNT](x=0.5, y=None)"
    assert repr(rc.Tangent[tuple](1.0, rc.ZeroTangent())) == "Tangent[tuple](1.0, ZeroTangent())"
    assert repr(rc.Tangent[dict]({"a": 1.0})) == "Tangent[dict]({'a': 1.0})"


def test_repr_of_a_class_defined_in_a_function_has_no_locals_noise():
    def make():
        @dataclass
        class Local:
            x: float

        return Local

    assert repr(rc.Tangent[make()](x=1.0)) == "Tangent[Local](x=1.0)"


def test_repr_of_a_thunk_field_shows_its_state():
    t = rc.Tangent[Point](x=rc.Thunk(lambda: 2.0))
    assert repr(t) == "Tangent[Point](x=Thunk(unevaluated))"


# -- equality --------------------------------------------------------------------------------


def test_absent_field_equals_explicit_zero():
    assert rc.Tangent[Point](x=1.0) == rc.Tangent[Point](x=1.0, y=rc.ZeroTangent())
    assert rc.Tangent[Point](x=1.0) == rc.Tangent[Point](x=1.0, y=None)
    assert rc.Tangent[Point](x=1.0) == rc.Tangent[Point](x=1.0, y=0.0)
    assert rc.Tangent[Point](x=1.0) != rc.Tangent[Point](x=1.0, y=0.5)


def test_all_zero_tangent_equals_zero_tangent():
    assert rc.Tangent[Point](x=0.0, y=None) == rc.ZeroTangent()
    assert rc.Tangent[tuple](rc.Tangent[tuple](None), np.zeros(2)) == rc.ZeroTangent()
    assert rc.Tangent[tuple](np.array([0.0, 1.0])) != rc.ZeroTangent()


def test_equality_compares_arrays_and_thunks_by_value():
    a = rc.Tangent[Model](weights=np.ones(3))
    assert a == rc.Tangent[Model](weights=np.ones(3))
    assert a != rc.Tangent[Model](weights=np.arange(3.0))
    assert rc.Tangent[Point](x=rc.Thunk(lambda: 2.0)) == rc.Tangent[Point](x=2.0)


def test_tangents_of_different_types_are_not_equal():
    assert rc.Tangent[Point](x=1.0) != rc.Tangent[PointNT](x=1.0)
    assert rc.Tangent[tuple](1.0) != (1.0,)


@pytest.mark.parametrize(
    "t",
    [rc.Tangent[Point](x=1.0, y=np.ones(2)), rc.Tangent[tuple](1.0, None, rc.NoTangent()),
     rc.Tangent[dict]({"a": rc.Tangent[PointNT](y=2.0)})],
    ids=["dataclass", "tuple", "nested"],
)
def test_tangents_pickle_and_deepcopy(t):
    # gradients cross process boundaries (multiprocessing, checkpoints)
    for copied in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert type(copied) is type(t)
        assert copied == t


def test_tangent_is_unhashable():
    with pytest.raises(TypeError):
        hash(rc.Tangent[tuple](1.0))


# -- the structures a Tangent sees --------------------------------------------------------


def test_fields_of_and_rebuild_agree_on_every_kind_of_struct():
    for p in (Point(1.0, 2.0), FrozenPoint(1.0, 2.0), PointNT(1.0, 2.0), PlainPoint(1.0, 2.0),
              SlotPoint(1.0, 2.0)):
        assert rc.fields_of(p) == {"x": 1.0, "y": 2.0}
        q = rc.rebuild(p, {"y": 5.0})
        assert rc.fields_of(q) == {"x": 1.0, "y": 5.0} and rc.fields_of(p)["y"] == 2.0


# -- the cache of Tangent[P] classes ---------------------------------------------------------


def _local_class_used_everywhere() -> weakref.ref:
    """A class defined in a function, used through every path that makes ``Tangent[P]``."""

    @dataclass
    class Local:
        x: float

    p = Local(1.0)
    t = rc.Tangent[Local](x=2.0)
    assert rc.ProjectTo(p)(t) + t == rc.Tangent[Local](x=4.0)
    assert rc.add_to_primal(p, t) == Local(3.0) and rc.project(p, {"x": 1.0}) == rc.Tangent[Local](x=1.0)
    return weakref.ref(Local)


def test_a_class_used_in_tangents_is_collected_once_deleted():
    primal_type = _local_class_used_everywhere()
    gc.collect()
    assert primal_type() is None


def test_the_tangent_class_lives_as_long_as_its_primal_type():
    spec = weakref.ref(rc.Tangent[Point])
    gc.collect()
    assert spec() is rc.Tangent[Point] and spec().primal_type is Point


def test_a_tangent_does_not_keep_its_primal_type_alive():
    @dataclass
    class Gone:
        x: float

    t = rc.Tangent[Gone](x=1.0)
    primal_type = weakref.ref(Gone)
    del Gone
    gc.collect()
    assert primal_type() is None and t.primal_type is None
    assert repr(2 * t + t) == "Tangent[Gone](x=3.0)"
