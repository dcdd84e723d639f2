"""Rules for getitem and getattr (rulescore/rules/indexing.py): the table of cases checked against
finite differences, plus targeted tests (repeated indices, second derivatives via unindex)."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
import rulescore.testing.strategies as S
from rulescore.rules import indexing
from rulescore.rules.indexing import setindex, unindex
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 5


def case(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, name: str = "",
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N),
                    **options)


MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, True, True]])
ARRAY_INDICES: list[tuple[str, tuple[int, ...], Any]] = [
    ("int", (3, 4), 1),
    ("negative-int", (3, 4), -1),
    ("scalar", (5,), 2),
    ("slice", (5, 2), slice(1, 4)),
    ("step-slice", (6,), slice(None, None, -2)),
    ("ellipsis", (2, 3, 4), (Ellipsis, 1)),
    ("newaxis", (3, 4), (None, slice(None), None, 2)),
    ("bool-mask", (3, 4), MASK),
    ("bool-rows", (3, 4), np.array([True, False, True])),
    ("int-array-repeats", (4, 2), np.array([0, 2, 2, 0, 3])),
    ("int-array-2d", (5,), np.array([[0, 1], [1, 4]])),
    ("list", (4,), [3, 3, 1]),
    ("mixed", (3, 4, 5), (np.array([0, 0, 2]), slice(1, 3), np.array([4, 4, 1]))),
    ("mixed-mask", (3, 4), (slice(None), np.array([True, False, True, True]))),
    ("mixed-ellipsis-int", (2, 3, 4), (1, Ellipsis, np.array([1, 1]))),
    ("empty-tuple-0d", (), ()),
    ("empty-result", (3, 4), slice(2, 2)),
]


class Point(NamedTuple):
    x: float
    y: Any


@dataclass
class Layer:
    w: Any
    b: float
    label: str = "layer"
    scale = 2.0  # a class-level constant

    @property
    def doubled(self) -> Any:
        return 2 * self.w


MIXED_TUPLE = st.tuples(S.scalars(), S.arrays(shape=(2,)), st.just("tag"), S.scalars())

CASES = [
    *[case(operator.getitem, (S.arrays(shape=shape), index), name=name)
      for name, shape, index in ARRAY_INDICES],
    case(operator.getitem, (S.arrays(shape=(3, 4), dtype=np.float32), (1, slice(None, 2))), name="float32"),
    case(operator.getitem, (S.arrays(shape=(3, 4), dtype=np.complex128), MASK), name="complex"),
    case(operator.getitem, (S.arrays(shape=(3,), dtype=np.int64), 1), name="int-array"),
    case(operator.getitem, (S.scalars(dtype=np.float32), (None, Ellipsis)), name="numpy-scalar"),
    # sequences, mappings, strings
    case(operator.getitem, (MIXED_TUPLE, 1), name="tuple-int"),
    case(operator.getitem, (MIXED_TUPLE, -1), name="tuple-negative"),
    case(operator.getitem, (MIXED_TUPLE, slice(0, 3)), name="tuple-slice"),
    case(operator.getitem, (st.lists(S.scalars(), min_size=4, max_size=4), slice(None, None, -2)),
         name="list-slice"),
    case(operator.getitem, (st.lists(S.arrays(shape=(2,)), min_size=3, max_size=3), 0), name="list-int"),
    case(operator.getitem, (st.builds(Point, S.scalars(), S.arrays(shape=(2,))), 1), name="namedtuple"),
    case(operator.getitem, (st.builds(S.NamedPair, S.scalars(), S.scalars()), slice(None)),
         name="namedtuple-slice"),
    case(operator.getitem, (st.fixed_dictionaries({"a": S.scalars(), "b": S.arrays(shape=(3,))}), "b"),
         name="dict"),
    case(operator.getitem, ("differentiable", 3), name="str"),
    # attributes
    case(getattr, (S.arrays(shape=(2, 3)), "T"), name="T"),
    case(getattr, (S.arrays(shape=(2, 3, 4), dtype=np.complex128), "mT"), name="mT"),
    case(getattr, (S.arrays(shape=(3,), dtype=np.complex128), "real"), name="real"),
    case(getattr, (S.arrays(shape=(3,), dtype=np.complex128), "imag"), name="imag"),
    case(getattr, (S.arrays(shape=(3,), dtype=np.float32), "real"), name="real-of-real"),
    case(getattr, (S.scalars(dtype=complex), "imag"), name="imag-of-complex"),
    case(getattr, (S.arrays(shape=(2, 3)), "shape"), name="shape"),
    case(getattr, (S.arrays(shape=(2, 3)), "dtype"), name="dtype"),
    case(getattr, (st.builds(Layer, S.arrays(shape=(2,)), S.scalars()), "w"), name="dataclass"),
    case(getattr, (st.builds(Layer, S.arrays(shape=(2,)), S.scalars()), "b"), name="dataclass-float"),
    case(getattr, (st.builds(Point, S.scalars(), S.arrays(shape=(2,))), "y"), name="namedtuple"),
    case(getattr, (st.builds(S.Pair, S.scalars(), S.scalars()), "missing", S.scalars()), name="default"),
    # the scatter primitive itself (second derivatives of indexing go through it)
    case(setindex, (S.arrays(shape=(4,)), 1, S.scalars()), nondiff=(1,), name="scalar-into-vector"),
    case(setindex, (S.arrays(shape=(3, 2)), (slice(0, 2), 1), S.arrays(shape=(2,))), nondiff=(1,),
         name="slice"),
    case(setindex, (S.arrays(shape=(3, 2)), np.array([True, False, True]), S.arrays(shape=(2,))),
         nondiff=(1,), name="mask-broadcast-value"),
    case(unindex, (S.arrays(shape=(3,)), np.array([0, 2, 0]), (4,), np.dtype(np.float64)),
         name="repeats"),
    case(unindex, (S.arrays(shape=(2, 2)), (slice(None), np.array([True, False, True])), (2, 3),
                   np.dtype(np.float64)), name="mask"),
    case(unindex, (S.arrays(shape=(2,), dtype=np.complex128), 1, (3, 2), np.dtype(np.complex128)),
         name="complex"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


# -- arrays ----------------------------------------------------------------------------------


def test_repeated_fancy_indices_accumulate() -> None:
    x = np.arange(5.0)
    y, back = rc.rrule(operator.getitem, x, np.array([1, 3, 1, 1]))
    np.testing.assert_array_equal(y, [1.0, 3.0, 1.0, 1.0])
    _, xbar, ibar = back(np.array([1.0, 10.0, 100.0, 1000.0]))
    np.testing.assert_array_equal(xbar, [0.0, 1101.0, 0.0, 10.0, 0.0])
    assert ibar == rc.NoTangent()


def test_repeated_indices_in_a_tuple_accumulate() -> None:
    x = np.zeros((2, 3))
    _, back = rc.rrule(operator.getitem, x, (np.array([0, 0, 1]), [2, 2, 0]))
    np.testing.assert_array_equal(back(np.ones(3))[1], [[0.0, 0.0, 2.0], [1.0, 0.0, 0.0]])


def test_getitem_cotangent_keeps_dtype_and_is_fresh() -> None:
    x = np.ones((3, 2), np.float32)
    ybar = np.ones(2, np.float32)
    _, back = rc.rrule(operator.getitem, x, 0)
    xbar = back(ybar)[1]
    assert xbar.dtype == np.float32 and xbar.flags.writeable
    assert not np.shares_memory(xbar, ybar)


def test_second_derivative_through_getitem_pullback() -> None:
    """The pullback of x[index] is unindex(ybar, ...); the pullback of that is a gather."""
    x = np.arange(6.0).reshape(2, 3)
    index = (np.array([1, 1, 0]), np.array([2, 2, 0]))
    _, back = rc.rrule(operator.getitem, x, index)
    ybar = np.array([1.0, 2.0, 3.0])
    xbar = back(ybar)[1]
    # differentiate the pullback itself: xbar = unindex(ybar, index, x.shape, dtype)
    z, unindex_back = rc.rrule(unindex, ybar, index, x.shape, x.dtype)
    np.testing.assert_array_equal(z, xbar)
    np.testing.assert_array_equal(z, [[3.0, 0.0, 0.0], [0.0, 0.0, 3.0]])
    zbar = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    cts = unindex_back(zbar)
    np.testing.assert_array_equal(cts[1], zbar[index])  # a gather: [60, 60, 10]
    assert cts[2:] == (rc.NoTangent(),) * 3
    # and the gather's own rule scatters again (third order)
    _, gather_back = rc.rrule(operator.getitem, zbar, index)
    np.testing.assert_array_equal(gather_back(np.ones(3))[1], [[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    rct.test_rrule(unindex, ybar, rct.no_tangent(index), x.shape, rct.no_tangent(x.dtype))


def test_unindex_hands_tracers_to_array_function() -> None:
    seen: list[Any] = []

    class Traced:
        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
            seen.append(func)
            return "dispatched"

    assert unindex(Traced(), 0, (2,), np.float64) == "dispatched"
    assert seen == [unindex]


# -- sequences and mappings ----------------------------------------------------------------


def test_tuple_cotangent_has_zeros_elsewhere() -> None:
    x = (1.0, np.ones(2), "s")
    _, back = rc.rrule(operator.getitem, x, 1)
    assert back(np.array([2.0, 3.0]))[1] == rc.Tangent[tuple](rc.ZeroTangent(), np.array([2.0, 3.0]),
                                                              rc.ZeroTangent())


def test_list_slice_places_entries() -> None:
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y, back = rc.rrule(operator.getitem, x, slice(1, None, 2))
    assert y == [2.0, 4.0]
    ct = back(rc.Tangent[list](10.0, 20.0))[1]
    assert ct == rc.Tangent[list](0.0, 10.0, 0.0, 20.0, 0.0)
    assert isinstance(ct, rc.Tangent[list])


def test_namedtuple_and_dict() -> None:
    p = Point(1.0, 2.0)
    assert rc.rrule(operator.getitem, p, 0)[1](5.0)[1] == rc.Tangent[Point](x=5.0)
    d = {"a": 1.0, "b": 2.0}
    assert rc.rrule(operator.getitem, d, "b")[1](3.0)[1] == rc.Tangent[dict]({"b": 3.0})


def test_str_is_non_differentiable() -> None:
    y, back = rc.rrule(operator.getitem, "abc", 1)
    assert y == "b" and back(None) == (rc.NoTangent(),) * 3


# -- getattr ---------------------------------------------------------------------------------


def test_getattr_field_and_constant_and_nondiff() -> None:
    layer = Layer(np.ones(2), 0.5)
    assert rc.rrule(getattr, layer, "w")[1](np.ones(2))[1] == rc.Tangent[Layer](w=np.ones(2))
    assert rc.rrule(getattr, layer, "scale")[1](1.0)[1] == rc.ZeroTangent()
    assert all(rc.is_zero(c) for c in rc.rrule(getattr, layer, "label")[1](None))  # the rule contract
    x = np.ones((2, 3))
    assert rc.is_zero(rc.rrule(getattr, x, "shape")[1](None)[1])
    assert rc.is_zero(rc.rrule(getattr, x, "dtype")[1](None)[1])


def test_getattr_property_raises_when_used() -> None:
    layer = Layer(np.ones(2), 0.5)
    y, back = rc.rrule(getattr, layer, "doubled")
    np.testing.assert_array_equal(y, [2.0, 2.0])
    assert back(rc.ZeroTangent())[1] == rc.ZeroTangent()
    with pytest.raises(TypeError, match="doubled"):
        back(np.ones(2))


def test_getattr_bound_method_passes_self_tangent() -> None:
    x = np.ones(3)
    y, back = rc.rrule(getattr, x, "sum")
    assert y.__self__ is x
    np.testing.assert_array_equal(back(np.full(3, 2.0))[1], np.full(3, 2.0))


def test_getattr_imag_of_real_is_zero() -> None:
    x = np.ones(3)
    assert rc.rrule(getattr, x, "imag")[1](np.ones(3))[1] == rc.ZeroTangent()


def test_registration_tables() -> None:
    assert set(indexing.ARRAY_ATTRIBUTES) == {"T", "mT", "real", "imag"}
    assert {"shape", "ndim", "dtype", "size"} <= indexing.NONDIFF_ATTRIBUTES
    assert rc.rrule.rules_for(getattr) and rc.frule.rules_for(unindex)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_repeated_positions_are_found_exactly(data: Any) -> None:
    """setindex's check of repeated positions (a fast answer for strictly increasing index arrays,
    np.diag_indices' kind) against the set of positions the index names."""
    ndim = data.draw(st.integers(1, 3))
    length = data.draw(st.integers(0, 8))
    increasing = data.draw(st.booleans())
    parts = []
    for _ in range(ndim):
        if increasing:
            values = sorted(data.draw(st.sets(st.integers(0, 9), min_size=length, max_size=length)))
        else:
            values = data.draw(st.lists(st.integers(0, 3), min_size=length, max_size=length))
        parts.append(np.array(values, dtype=np.intp))
    index = tuple(parts)
    positions = list(zip(*(p.tolist() for p in parts), strict=True))
    assert indexing._repeats(index) == (len(set(positions)) < len(positions))
