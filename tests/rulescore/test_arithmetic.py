"""Tangent arithmetic (``rulescore/_arithmetic.py``): its algebraic laws for every kind of tangent,
the zeros as identities, thunks left unevaluated by zeros, ``primal + tangent``.

Values are integer-valued floats (and complexes with integer parts), so sums and products are
exact and the laws can be checked with ``==``.
"""

from dataclasses import dataclass

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from tests.rulescore.structs import (
    FrozenPoint,
    FrozenSlotPoint,
    Model,
    PlainPoint,
    Point,
    PointNT,
    SlotPoint,
)

ints = st.integers(-100, 100).map(float)
scalars = st.integers(-10, 10).map(float)
entries = st.one_of(ints, st.none(), st.just(rc.ZeroTangent()))
ZEROS = [rc.ZeroTangent(), rc.NoTangent()]
finite = st.floats(-1e6, 1e6, allow_nan=False)
arrays = hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4), elements=finite)


@dataclass
class Net:
    weights: np.ndarray
    inner: tuple


laws = settings(max_examples=20, deadline=None)  # 11 kinds x 8 laws: keep the file fast

KINDS = ["float", "complex", "array", "tuple", "list", "dict", "dataclass", "namedtuple", "object",
         "nested", "thunk"]


@st.composite
def triples(draw, kind):
    """Three tangents of one primal of the given kind."""
    if kind == "float":
        return tuple(draw(ints) for _ in range(3))
    if kind == "complex":
        return tuple(complex(draw(ints), draw(ints)) for _ in range(3))
    if kind == "array":
        shape = draw(hnp.array_shapes(max_dims=2, max_side=3))
        return tuple(draw(hnp.arrays(np.float64, shape, elements=ints)) for _ in range(3))
    if kind in ("tuple", "list"):
        n = draw(st.integers(0, 3))
        make = rc.Tangent[tuple if kind == "tuple" else list]
        return tuple(make(*(draw(entries) for _ in range(n))) for _ in range(3))
    if kind == "dict":
        return tuple(
            rc.Tangent[dict]({k: draw(entries) for k in draw(st.sets(st.sampled_from("abc")))})
            for _ in range(3)
        )
    if kind in ("dataclass", "namedtuple", "object"):
        cls = {"dataclass": Point, "namedtuple": PointNT, "object": PlainPoint}[kind]
        return tuple(
            rc.Tangent[cls](**{k: draw(entries) for k in draw(st.sets(st.sampled_from("xy")))})
            for _ in range(3)
        )
    if kind == "nested":
        def one():
            fields = {}
            if draw(st.booleans()):
                fields["weights"] = draw(hnp.arrays(np.float64, 2, elements=ints))
            if draw(st.booleans()):
                fields["inner"] = rc.Tangent[tuple](draw(entries), draw(entries))
            return rc.Tangent[Net](**fields)

        return (one(), one(), one())
    assert kind == "thunk"
    return tuple(rc.Thunk(lambda v=v: v) for v in (draw(ints), draw(ints), draw(ints)))


def same(a, b):
    """Equal as tangents: zeros equal all-zero values, arrays compare element-wise."""
    a, b = rc.unthunk(a), rc.unthunk(b)
    if isinstance(a, rc.Tangent) or isinstance(b, rc.Tangent):
        return a == b if isinstance(a, rc.Tangent) else b == a
    if rc.is_zero(a) and rc.is_zero(b):
        return True
    if rc.is_zero(a) or rc.is_zero(b):
        return bool(np.all(np.asarray(b if rc.is_zero(a) else a) == 0))
    return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))


@pytest.mark.parametrize("kind", KINDS)
@laws
@given(data=st.data(), zero=st.sampled_from([None, rc.ZeroTangent(), rc.NoTangent()]))
def test_zero_is_the_identity(kind, data, zero):
    a, _, _ = data.draw(triples(kind))
    assert same(rc.add(a, zero), a)
    assert same(rc.add(zero, a), a)
    if zero is not None:
        assert same(a + zero, a) and same(zero + a, a)


@pytest.mark.parametrize("kind", KINDS)
@laws
@given(data=st.data())
def test_addition_commutes(kind, data):
    a, b, _ = data.draw(triples(kind))
    assert same(rc.add(a, b), rc.add(b, a))
    assert same(a + b, b + a)


@pytest.mark.parametrize("kind", KINDS)
@laws
@given(data=st.data())
def test_addition_is_associative(kind, data):
    a, b, c = data.draw(triples(kind))
    assert same(rc.add(rc.add(a, b), c), rc.add(a, rc.add(b, c)))
    assert same((a + b) + c, a + (b + c))


@pytest.mark.parametrize("kind", KINDS)
@laws
@given(data=st.data(), s=scalars, r=scalars)
def test_scalar_multiplication_distributes_and_associates(kind, data, s, r):
    a, b, _ = data.draw(triples(kind))
    assert same(s * (a + b), s * a + s * b)
    assert same(rc.scale(rc.add(a, b), s), rc.add(rc.scale(a, s), rc.scale(b, s)))
    assert same((s + r) * a, s * a + r * a)
    assert same(s * (r * a), (s * r) * a)
    assert same(a * s, s * a)
    assert same(1.0 * a, a)
    assert same(0.0 * a, rc.ZeroTangent())


@pytest.mark.parametrize("kind", KINDS)
@laws
@given(data=st.data())
def test_subtraction_inverts_addition(kind, data):
    a, b, _ = data.draw(triples(kind))
    assert same(rc.sub(a, a), rc.ZeroTangent())
    assert same(rc.add(rc.sub(a, b), b), a)
    assert same(rc.sub(a, b), rc.add(a, rc.scale(b, -1.0)))
    assert same(-a, rc.scale(a, -1.0))


@pytest.mark.parametrize("kind", ["tuple", "dict", "dataclass", "namedtuple", "object", "nested"])
@laws
@given(data=st.data())
def test_structural_sum_is_field_wise(kind, data):
    a, b, _ = data.draw(triples(kind))
    total = a + b
    assert type(total) is type(a)
    for k, _ in a.items() + b.items():
        assert same(total[k], rc.add(a[k], b[k]))


@settings(max_examples=20, deadline=None)
@given(x=hnp.arrays(np.float64, 3, elements=ints), s=scalars)
def test_tangent_times_array_and_array_times_tangent_scale_each_field(x, s):
    t = rc.Tangent[Point](x=s, y=np.ones(3))
    for out in (x * t, t * x, rc.scale(t, x), rc.scale(t, x, left=True)):
        assert isinstance(out, rc.Tangent[Point])
        np.testing.assert_array_equal(out.x, s * x)
        np.testing.assert_array_equal(out.y, x)
    assert (t / 2).x == s / 2


def test_plain_tuples_lists_and_dicts_add_element_wise():
    assert rc.add((1.0, None), (2.0, 3.0)) == (3.0, 3.0)
    assert rc.add([1.0, 2.0], [1.0, 1.0]) == [2.0, 3.0]
    out = rc.add({"b": 1.0, "a": 2.0}, {"a": 1.0, "c": 5.0})
    assert out == {"b": 1.0, "a": 3.0, "c": 5.0}
    assert list(out) == ["b", "a", "c"]  # the first dict's key order is kept


def test_adding_tangents_of_different_primals_raises():
    with pytest.raises(TypeError, match="Tangent\\[Point\\].*Tangent\\[PointNT\\]"):
        rc.Tangent[Point](x=1.0) + rc.Tangent[PointNT](x=1.0)
    with pytest.raises(ValueError, match="lengths 1 and 2"):
        rc.Tangent[tuple](1.0) + rc.Tangent[tuple](1.0, 2.0)


def test_a_primal_typed_cotangent_plus_a_tangent_is_a_primal():
    # Legacy custom adjoints may return an instance of the primal's type as a cotangent.
    assert rc.add(Point(1.0, 2.0), rc.Tangent[Point](x=1.0)) == Point(2.0, 2.0)
    assert rc.add(rc.Tangent[Point](y=1.0), Point(1.0, 2.0)) == Point(1.0, 3.0)


@settings(max_examples=20, deadline=None)
@given(re=ints, im=ints)
def test_conj(re, im):
    z = complex(re, im)
    assert rc.conj(z) == z.conjugate()
    assert rc.conj(re) == re
    assert rc.conj(np.array([z]))[0] == z.conjugate()
    assert rc.conj(rc.Tangent[tuple](z, None)) == rc.Tangent[tuple](z.conjugate(), None)


# -- the zeros: identity of + --------------------------------------------------------------------


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


def test_sum_of_zeros_keeps_no_tangent_only_if_both_have_no_tangent_space():
    no, zero = rc.NoTangent(), rc.ZeroTangent()
    assert no + no is no
    assert no + zero is zero and zero + no is zero
    assert zero + zero is zero
    assert rc.add(None, no) is no and rc.add(no, None) is no
    assert rc.add(None, None) is zero
    assert None + zero is zero and None + no is no  # None means "zero" wherever a tangent is


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


# -- thunks: zeros do not force them, laws hold --------------------------------------------------


def test_zeros_do_not_force_a_thunk():
    calls = []
    t = rc.Thunk(lambda: calls.append(1) or 1.0)
    assert rc.add(t, rc.ZeroTangent()) is t
    assert rc.add(None, t) is t
    assert rc.ZeroTangent() * t is rc.ZeroTangent()
    assert t * rc.ZeroTangent() is rc.ZeroTangent() and t * None is rc.ZeroTangent()
    assert rc.scale(t, rc.ZeroTangent()) is rc.ZeroTangent()
    assert not calls


@settings(max_examples=25, deadline=None)
@given(a=ints, b=ints)
def test_addition_of_thunks_commutes_and_has_zero_identity(a, b):
    ab = rc.add(rc.Thunk(lambda: a), rc.Thunk(lambda: b))
    assert ab == rc.add(rc.Thunk(lambda: b), rc.Thunk(lambda: a)) == a + b
    assert rc.unthunk(rc.add(rc.Thunk(lambda: a), rc.ZeroTangent())) == a


@settings(max_examples=25, deadline=None)
@given(a=ints, b=ints, s=ints)
def test_scalar_multiplication_distributes_over_thunk_sums(a, b, s):
    ta, tb = rc.Thunk(lambda: a), rc.Thunk(lambda: b)
    assert s * (ta + tb) == s * ta + s * tb == rc.scale(rc.add(ta, tb), s)


def test_thunk_conjugate():
    assert rc.Thunk(lambda: 1 + 2j).conjugate() == 1 - 2j
    assert rc.conj(rc.Thunk(lambda: 1 + 2j)) == 1 - 2j


def test_thunk_inside_a_tangent_is_evaluated_on_addition():
    t = rc.Tangent[tuple](rc.Thunk(lambda: 1.0), 2.0)
    assert t + rc.Tangent[tuple](1.0, 1.0) == rc.Tangent[tuple](2.0, 3.0)


# -- Tangent: conjugate and primal + tangent -----------------------------------------------------


def test_conjugate_is_field_wise():
    t = rc.Tangent[Point](x=1 + 2j, y=np.array([1j]))
    c = t.conjugate()
    assert c.x == 1 - 2j
    np.testing.assert_array_equal(c.y, [-1j])
    assert rc.conj(t) == c


@pytest.mark.parametrize("cls", [Point, FrozenPoint, FrozenSlotPoint, PointNT, PlainPoint, SlotPoint])
def test_primal_plus_tangent_rebuilds_the_primal_without_mutating_it(cls):
    p = cls(1.0, 2.0)
    t = rc.Tangent[cls](x=0.5)
    for q in (p + t, t + p, rc.add_to_primal(p, t)):
        assert type(q) is cls
        assert (q.x, q.y) == (1.5, 2.0)
        assert q is not p
    assert (p.x, p.y) == (1.0, 2.0)


def test_primal_plus_tangent_for_tuple_list_and_dict():
    assert (1.0, 2.0) + rc.Tangent[tuple](0.5, None) == (1.5, 2.0)
    assert [1.0, 2.0] + rc.Tangent[list](None, 1.0) == [1.0, 3.0]
    d = {"a": 1.0, "b": 2.0}
    assert d + rc.Tangent[dict]({"b": 1.0}) == {"a": 1.0, "b": 3.0}
    assert d == {"a": 1.0, "b": 2.0}


def test_primal_plus_nested_tangent_rebuilds_each_level_and_keeps_the_rest():
    w = np.ones(3)
    m = Model(weights=w, bias=1.0, shape=(1.0, 2.0), name="m")
    t = rc.Tangent[Model](weights=np.full(3, 0.5), shape=rc.Tangent[tuple](None, 1.0), name=rc.NoTangent())
    new = m + t
    np.testing.assert_array_equal(new.weights, [1.5, 1.5, 1.5])
    assert new.shape == (1.0, 3.0) and new.bias == 1.0 and new.name == "m"
    assert m.weights is w
    np.testing.assert_array_equal(w, np.ones(3))  # the original array is not updated in place
    assert m.shape == (1.0, 2.0)


def test_primal_plus_thunk_fields_evaluates_them():
    assert Point(1.0, 2.0) + rc.Tangent[Point](y=rc.Thunk(lambda: 1.0)) == Point(1.0, 3.0)


def test_primal_plus_plain_tuple_field_adds_element_wise():
    # A cotangent for a tuple field written as a plain tuple adds entries, never concatenates.
    m = Model(weights=np.ones(1), bias=0.0, shape=(1.0, 2.0), name="m")
    assert (m + rc.Tangent[Model](shape=(1.0, 1.0))).shape == (2.0, 3.0)
    assert rc.add_to_primal((1.0, 2.0), (1.0, 1.0)) == (2.0, 3.0)


def test_primal_plus_zero_tangent_is_the_primal():
    p = Point(1.0, 2.0)
    assert rc.add_to_primal(p, rc.ZeroTangent()) is p
    assert rc.add_to_primal(p, None) is p
    assert p + rc.Tangent[Point]() == p


def test_primal_plus_tangent_with_an_unknown_field_raises():
    with pytest.raises(AttributeError, match="z"):
        Point(1.0, 2.0) + rc.Tangent[Point](z=1.0)


# -- Batched -------------------------------------------------------------------------------------


def test_zero_tangents_absorb_and_add() -> None:
    t = rc.Batched(np.ones((3, 2)))
    assert rc.add(rc.ZeroTangent(), t) is t and rc.add(t, None) is t
    assert rc.ZeroTangent() * t == rc.ZeroTangent()
    total = rc.add(t, t)
    assert type(total) is rc.Batched
    np.testing.assert_array_equal(total.data, 2 * np.ones((3, 2)))


# -- the zeros absorb *, / and @ -----------------------------------------------------------------


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


# -- thunks: arithmetic on the value -------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(a=ints, b=ints)
def test_thunk_arithmetic_matches_its_value(a, b):
    t = rc.Thunk(lambda: a)
    assert t + b == a + b and b + t == b + a
    assert t - b == a - b and b - t == b - a
    assert t * b == a * b and b * t == b * a
    assert -t == -a
    if b != 0:
        assert t / b == a / b
    if a != 0:
        assert b / t == b / a


@settings(max_examples=25, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(1, 4), elements=ints))
def test_thunk_arithmetic_with_arrays_on_either_side(x):
    t = rc.Thunk(lambda: 2 * x)
    np.testing.assert_array_equal(x + t, 3 * x)
    np.testing.assert_array_equal(t + x, 3 * x)
    np.testing.assert_array_equal(x - t, -x)
    np.testing.assert_array_equal(x * t, 2 * x * x)
    np.testing.assert_array_equal(x @ t, 2 * x @ x)
    np.testing.assert_array_equal(t @ x, 2 * x @ x)
    assert not isinstance(x + t, rc.Thunk)
