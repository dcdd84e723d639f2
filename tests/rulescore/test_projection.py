"""``ProjectTo``: every row of the table in ``rulescore/_projection.py``."""

import math
import types
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from tests.rulescore.structs import Point, PointNT

ints = st.integers(-100, 100).map(float)


class Layer:
    def __init__(self, w, n):
        self.w = w
        self.n = n


# -- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("primal", [1.5, 3])
@pytest.mark.parametrize(
    "dx, expected",
    [(2.0, 2.0), (2, 2.0), (2 + 3j, 2.0), (np.float32(0.5), 0.5), (np.array(4.0), 4.0),
     (np.complex128(1 - 1j), 1.0), (np.array(1 + 5j), 1.0)],
)
def test_real_numbers_project_to_a_python_float(primal, dx, expected):
    out = rc.ProjectTo(primal)(dx)
    assert type(out) is float and out == expected
    assert rc.project(primal, dx) == expected


def test_complex_numbers_project_to_complex():
    for dx in (2.0, 1 + 2j, np.complex64(1 + 2j), np.array(3j)):
        out = rc.ProjectTo(1j)(dx)
        assert type(out) is complex and out == complex(np.asarray(dx)[()])


@pytest.mark.parametrize("primal", [1.0, 2, 1j])
@pytest.mark.parametrize("dx", [np.ones(3), np.ones((1, 1)), [1.0], "a", rc.Tangent[tuple](1.0)])
def test_scalars_reject_cotangents_that_are_not_scalars(primal, dx):
    with pytest.raises(rc.ProjectionError, match="scalar primal"):
        rc.ProjectTo(primal)(dx)


NO_TANGENT_PRIMALS = [
    True, np.bool_(False), "text", b"bytes", None, int, math.sin, len, print, math, range(3),
    slice(1, 2), ..., np.dtype("float64"), np.sin, np.array([True, False]), np.array(["a", "b"]),
    np.array([np.datetime64("2020-01-01")]), np.array([1.0], dtype=object), rc.ZeroTangent(),
    [].append,
]


@pytest.mark.parametrize("primal", NO_TANGENT_PRIMALS, ids=lambda p: type(p).__name__)
def test_primals_without_a_tangent_space_project_to_no_tangent(primal):
    assert rc.ProjectTo(primal)(1.0) is rc.NoTangent()
    assert rc.ProjectTo(primal)(np.ones(2)) is rc.NoTangent()


def test_functions_defined_here_have_no_tangent_space():
    def f(x):
        return x

    assert isinstance(f, types.FunctionType)
    assert rc.ProjectTo(f)(1.0) is rc.NoTangent()
    assert rc.ProjectTo(lambda: 0)(1.0) is rc.NoTangent()


# -- NumPy scalars ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "primal, dx, expected_type, expected",
    [
        (np.float32(1.0), 2.0, np.float32, 2.0),
        (np.float32(1.0), 2 + 1j, np.float32, 2.0),
        (np.float16(1.0), np.float64(0.5), np.float16, 0.5),
        (np.float64(1.0), np.array(3.0), np.float64, 3.0),
        (np.complex64(1j), 2 + 1j, np.complex64, 2 + 1j),
        (np.int64(3), 2.5, np.float64, 2.5),
        (np.int8(3), np.float32(2.5), np.float64, 2.5),
    ],
)
def test_numpy_scalars_keep_their_float_dtype(primal, dx, expected_type, expected):
    out = rc.ProjectTo(primal)(dx)
    assert type(out) is expected_type and out == expected


def test_numpy_scalar_rejects_an_array_cotangent():
    with pytest.raises(rc.ProjectionError, match="shape \\(2,\\)"):
        rc.ProjectTo(np.float32(1.0))(np.ones(2))


# -- arrays ----------------------------------------------------------------------------------

FLOAT_DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_arrays_keep_dtype_and_shape(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4))
    x = np.zeros(shape, dtype)
    dx = data.draw(hnp.arrays(np.float64, shape, elements=ints))
    out = rc.ProjectTo(x)(dx)
    assert out.dtype == dtype and out.shape == shape
    np.testing.assert_array_equal(out, dx.astype(dtype))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16])
def test_integer_arrays_project_to_float64(dtype):
    out = rc.ProjectTo(np.arange(3, dtype=dtype))(np.array([1, 2, 3], dtype=np.int32))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_real_arrays_drop_the_imaginary_part(dtype):
    out = rc.ProjectTo(np.zeros(2, dtype))(np.array([1 + 2j, 3 - 4j]))
    assert out.dtype.kind == "f"
    np.testing.assert_array_equal(out, [1.0, 3.0])


def test_complex_arrays_keep_the_imaginary_part():
    out = rc.ProjectTo(np.zeros(2, np.complex64))(np.array([1 + 2j, 3.0]))
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(out, np.array([1 + 2j, 3.0], np.complex64))


@pytest.mark.parametrize(
    "primal_shape, dx_shape, expected",
    [
        ((3,), (2, 3), np.full(3, 2.0)),
        ((1, 3), (2, 3), np.full((1, 3), 2.0)),
        ((2, 1), (2, 3), np.full((2, 1), 3.0)),
        ((2, 1), (4, 2, 3), np.full((2, 1), 12.0)),
        ((), (2, 2), np.array(4.0)),
        ((1,), (5,), np.array([5.0])),
    ],
)
def test_a_shape_broadcast_in_the_forward_pass_is_summed_back(primal_shape, dx_shape, expected):
    out = rc.ProjectTo(np.zeros(primal_shape, np.float32))(np.ones(dx_shape))
    assert out.shape == primal_shape and out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=50, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), data=st.data())
def test_unbroadcast_preserves_the_total(shapes, data):
    primal_shape = shapes.input_shapes[0]
    dx = data.draw(hnp.arrays(np.float64, shapes.result_shape, elements=ints))
    out = rc.ProjectTo(np.zeros(primal_shape))(dx)
    assert out.shape == primal_shape
    assert out.sum() == dx.sum()  # every cotangent entry lands in exactly one primal entry
    np.testing.assert_array_equal(out, rc.unbroadcast(dx, primal_shape))
    # summing back is the adjoint of broadcasting: <dx, broadcast(v)> == <unbroadcast(dx), v>
    v = data.draw(hnp.arrays(np.float64, primal_shape, elements=ints))
    assert np.sum(dx * np.broadcast_to(v, dx.shape)) == np.sum(out * v)


@pytest.mark.parametrize(
    "primal_shape, dx",
    [((2,), np.ones(3)), ((3, 2), np.ones((2, 3))), ((3,), 1.0), ((2, 3), np.ones(3)),
     ((2, 2), np.ones((3, 2)))],
)
def test_wrong_shapes_raise_projection_error(primal_shape, dx):
    with pytest.raises(rc.ProjectionError, match="shape"):
        rc.ProjectTo(np.zeros(primal_shape))(dx)


def test_projection_error_is_a_value_error():
    assert issubclass(rc.ProjectionError, ValueError)


def test_zero_dimensional_array_takes_a_scalar():
    out = rc.ProjectTo(np.array(1.0, np.float32))(2.0)
    assert out.shape == () and out.dtype == np.float32 and out == 2.0


# -- zeros and thunks ------------------------------------------------------------------------

PRIMALS = [1.0, np.zeros(3, np.float32), (1.0, 2.0), {"a": 1.0}, Point(1.0, 2.0), "s"]


@pytest.mark.parametrize("primal", PRIMALS, ids=lambda p: type(p).__name__)
def test_zeros_pass_through_and_none_becomes_zero_tangent(primal):
    p = rc.ProjectTo(primal)
    assert p(None) is rc.ZeroTangent()
    assert p(rc.ZeroTangent()) is rc.ZeroTangent()
    assert p(rc.NoTangent()) is rc.NoTangent()


def test_thunks_are_evaluated_then_projected():
    out = rc.ProjectTo(np.zeros(3, np.float32))(rc.Thunk(lambda: np.ones((2, 3))))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


# -- structures ------------------------------------------------------------------------------


def test_tuples_project_entry_wise():
    primal = (1.0, 2, "name", np.zeros(2, np.float32), True)
    out = rc.ProjectTo(primal)((1 + 1j, 3, 9.0, np.ones(2), 1.0))
    assert type(out) is rc.Tangent[tuple]
    a, b, c, d, e = out
    assert (a, b, c, e) == (1.0, 3.0, rc.NoTangent(), rc.NoTangent())
    assert type(b) is float and d.dtype == np.float32


def test_lists_project_to_list_tangents_and_accept_tangents_and_arrays():
    p = rc.ProjectTo([1.0, 2.0])
    assert p([1, 2]) == rc.Tangent[list](1.0, 2.0)
    assert type(p((1.0, 2.0))) is rc.Tangent[list]
    assert p(rc.Tangent[list](None, 2.0)) == rc.Tangent[list](rc.ZeroTangent(), 2.0)
    assert p(np.array([3.0, 4.0])) == rc.Tangent[list](3.0, 4.0)


def test_sequence_length_mismatch_and_non_sequences_raise():
    with pytest.raises(rc.ProjectionError, match="3 entries.*length 2"):
        rc.ProjectTo((1.0, 2.0))((1.0, 2.0, 3.0))
    with pytest.raises(rc.ProjectionError, match="float for a tuple"):
        rc.ProjectTo((1.0, 2.0))(1.0)


def test_dicts_project_key_wise_and_absent_keys_stay_absent():
    primal = {"w": np.zeros(2, np.float32), "n": 3, "tag": "x"}
    out = rc.ProjectTo(primal)({"w": np.ones(2), "n": 2})
    assert type(out) is rc.Tangent[dict]
    assert out["w"].dtype == np.float32 and out["n"] == 2.0 and type(out["n"]) is float
    assert out["tag"] is rc.ZeroTangent()
    assert rc.ProjectTo(primal)(rc.Tangent[dict]({"tag": 1.0}))["tag"] is rc.NoTangent()


def test_dict_with_an_unknown_key_raises():
    with pytest.raises(rc.ProjectionError, match="'zzz'"):
        rc.ProjectTo({"a": 1.0})({"zzz": 1.0})
    with pytest.raises(rc.ProjectionError, match="for a dict"):
        rc.ProjectTo({"a": 1.0})(1.0)


@pytest.mark.parametrize(
    "primal", [Point(1.0, 2), PointNT(1.0, 2), Layer(1.0, 2)], ids=lambda p: type(p).__name__
)
def test_structs_project_field_wise(primal):
    cls = type(primal)
    out = rc.ProjectTo(primal)(rc.Tangent[cls](x=1 + 1j, y=3) if cls is not Layer
                               else rc.Tangent[Layer](w=1 + 1j, n=3))
    assert type(out) is rc.Tangent[cls]
    values = [v for _, v in out.items()]
    assert values == [1.0, 3.0] and all(type(v) is float for v in values)


def test_struct_accepts_a_dict_of_fields():
    assert rc.ProjectTo(Point(1.0, 2.0))({"y": 2}) == rc.Tangent[Point](y=2.0)


def test_primal_typed_cotangents_are_kept():
    ct = Point(0.5, 0.5)
    assert rc.ProjectTo(Point(1.0, 2.0))(ct) is ct
    nt = PointNT(0.5, 0.5)
    assert rc.ProjectTo(PointNT(1.0, 2.0))(nt) is nt


def test_named_tuple_accepts_a_cotangent_built_by_position():
    p = rc.ProjectTo(PointNT(1.0, 2.0))
    assert p((1, 2)) == rc.Tangent[PointNT](x=1.0, y=2.0)
    assert p(rc.Tangent[tuple](None, 3.0)) == rc.Tangent[PointNT](y=3.0)
    with pytest.raises(rc.ProjectionError, match="3 entries"):
        p((1.0, 2.0, 3.0))


def test_struct_rejects_wrong_tangents():
    p = rc.ProjectTo(Point(1.0, 2.0))
    with pytest.raises(rc.ProjectionError, match="Tangent\\[PointNT\\] for a Point"):
        p(rc.Tangent[PointNT](x=1.0))
    with pytest.raises(rc.ProjectionError, match="no field"):
        p(rc.Tangent[Point](z=1.0))
    with pytest.raises(rc.ProjectionError, match="float for a Point"):
        p(1.0)


def test_nested_structures_project_all_the_way_down():
    primal = {"layers": [Layer(np.zeros((2, 2), np.float32), 3)], "scale": np.float32(1.0)}
    dx = {"layers": [rc.Tangent[Layer](w=np.ones((3, 2, 2)))], "scale": 2.0}
    out = rc.ProjectTo(primal)(dx)
    w = out["layers"][0].w
    assert w.shape == (2, 2) and w.dtype == np.float32 and np.all(w == 3.0)
    assert out["layers"][0].n is rc.ZeroTangent()
    assert type(out["scale"]) is np.float32


def test_project_fast_path_returns_matching_cotangents_unchanged():
    x = np.zeros(3)
    dx = np.ones(3)
    assert rc.project(x, dx) is dx
    assert rc.project(np.zeros(3, np.float32), dx).dtype == np.float32
    assert rc.project(1.0, 2.5) == 2.5
    assert rc.project(1.0, None) is rc.ZeroTangent()


def test_projector_repr_names_the_primal_type():
    assert repr(rc.ProjectTo(np.zeros(2))) == "ProjectTo(ndarray)"
    assert repr(rc.ProjectTo(Point(1.0, 2.0))) == "ProjectTo(Point)"


# -- Batched: direction by direction -------------------------------------------------------------


@pytest.mark.parametrize(("shape", "primal"), [
    (shape, primal) for shape in [(), (3,), (2, 3)]
    for primal in ["array", "float32 array", "float", "broadcast"]
    if not (primal == "float" and shape)  # a float's tangent has no shape
])
def test_projection_equals_projection_of_each_direction(shape: tuple[int, ...], primal: str) -> None:
    rng, K = np.random.default_rng(1), 3  # K directions
    data = rng.standard_normal((K, *shape)) + 1j * rng.standard_normal((K, *shape))
    x: Any = {"array": np.zeros(shape), "float32 array": np.zeros(shape, np.float32), "float": 1.0,
              "broadcast": np.zeros((1,) * len(shape))}[primal]
    got = rc.ProjectTo(x)(rc.Batched(data))
    expected = np.stack([np.asarray(rc.ProjectTo(x)(data[k])) for k in range(K)])
    assert type(got) is rc.Batched and got.data.dtype == expected.dtype
    np.testing.assert_allclose(got.data, expected, rtol=1e-12, atol=1e-12)


# -- proj, the rules' fast projection: a broadcast cotangent summed back -------------------------------


def test_proj_sums_a_broadcast_cotangent_back_as_project_does():
    from rulescore._fitting import proj

    dx = np.arange(12.0).reshape(4, 3)
    for x in (np.zeros(3), np.zeros((1, 3)), np.zeros((4, 1)), np.zeros((1, 1)), np.zeros(3, np.float32),
              np.zeros((4, 3), np.float32), np.array(0.0)):
        got, expected = proj(x, dx), rc.project(x, dx)
        assert type(got) is np.ndarray and got.shape == x.shape and got.dtype == x.dtype
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(proj(np.zeros(3), dx), dx.sum(axis=0))


@pytest.mark.parametrize("shape", [(4,), (2, 3), (3, 4)])
def test_proj_refuses_a_cotangent_that_no_broadcast_of_the_primal_gives(shape):
    from rulescore._fitting import proj

    with pytest.raises(rc.ProjectionError, match="cotangent of shape"):
        proj(np.zeros(shape), np.ones((4, 3)))
