"""Algebraic laws of tangent arithmetic, for every kind of tangent.

Values are integer-valued floats (and complexes with integer parts), so sums and products are
exact and the laws can be checked with ``==``.
"""

from dataclasses import dataclass
from typing import NamedTuple

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc

ints = st.integers(-100, 100).map(float)
scalars = st.integers(-10, 10).map(float)
entries = st.one_of(ints, st.none(), st.just(rc.ZeroTangent()))


@dataclass
class Point:
    x: float
    y: float


class PointNT(NamedTuple):
    x: float
    y: float


class Plain:
    def __init__(self, x, y):
        self.x, self.y = x, y


@dataclass
class Model:
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
        cls = {"dataclass": Point, "namedtuple": PointNT, "object": Plain}[kind]
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
            return rc.Tangent[Model](**fields)

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
