"""``rc.Batched``: every operation with a batching rule equals the same operation direction by
direction, and everything else raises ``NotBatchable`` instead of mixing directions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import rulescore as rc

K = 3  # directions


def stacks(shape: tuple[int, ...], dtype: Any = np.float64) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(dtype, (K, *shape), elements=st.floats(-3, 3, width=64 if dtype == np.float64 else 32))


def per_direction(op: Any, *inputs: Any) -> np.ndarray:
    """``op`` run on direction k of every ``Batched`` input, for each k, stacked."""
    return np.stack([np.asarray(op(*(x.data[k] if type(x) is rc.Batched else x for x in inputs)))
                     for k in range(K)])


def same(batched: Any, expected: np.ndarray) -> None:
    assert type(batched) is rc.Batched
    assert batched.data.shape == expected.shape
    np.testing.assert_allclose(batched.data, expected, rtol=1e-12, atol=1e-12)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


@given(st.data())
def test_ufuncs_broadcast_like_each_direction(data: st.DataObject) -> None:
    a_shape, b_shape = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3)).input_shapes
    a = rc.Batched(data.draw(stacks(a_shape)))
    b = data.draw(hnp.arrays(np.float64, b_shape, elements=st.floats(-3, 3)))
    for op in (np.multiply, np.add, np.subtract, np.arctan2, np.maximum):
        same(op(a, b), per_direction(op, a, b))
        same(op(b, a), per_direction(op, b, a))
    c = rc.Batched(data.draw(stacks(b_shape)))
    same(a * c + np.sin(b) * c, per_direction(lambda x, y: x * y + np.sin(b) * y, a, c))
    same(-a ** 2 / 3.0, per_direction(lambda x: -x ** 2 / 3.0, a))
    same(1.5 * a, per_direction(lambda x: 1.5 * x, a))


@pytest.mark.parametrize("a_ndim", [1, 2])
@pytest.mark.parametrize("b_ndim", [1, 2])
@pytest.mark.parametrize("which", ["left", "right", "both"])
def test_matmul_and_dot_in_every_combination(a_ndim: int, b_ndim: int, which: str) -> None:
    rng = np.random.default_rng(0)
    a_shape, b_shape = [(4,), (3, 4)][a_ndim - 1], [(4,), (4, 2)][b_ndim - 1]
    left, right = which in ("left", "both"), which in ("right", "both")
    a: Any = rc.Batched(rng.standard_normal((K, *a_shape))) if left else rng.standard_normal(a_shape)
    b: Any = rc.Batched(rng.standard_normal((K, *b_shape))) if right else rng.standard_normal(b_shape)
    same(a @ b, per_direction(np.matmul, a, b))
    same(np.dot(a, b), per_direction(np.dot, a, b))


@given(st.data())
def test_reductions_and_shape_functions(data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a = rc.Batched(data.draw(stacks(shape)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    for op in (lambda x: np.sum(x), lambda x: np.sum(x, axis=axis),
               lambda x: np.mean(x, axis=axis, keepdims=True), lambda x: x.sum(axis),
               lambda x: np.reshape(x, (-1,)), lambda x: x.reshape(x.size),
               lambda x: np.transpose(x), lambda x: x.T, lambda x: np.expand_dims(x, axis),
               lambda x: np.squeeze(np.expand_dims(x, 0)), lambda x: np.moveaxis(x, axis, 0),
               lambda x: np.swapaxes(x, 0, axis), lambda x: np.broadcast_to(x, (2, *shape)),
               lambda x: np.where(np.ones(shape, bool), x, 0.0), lambda x: x[..., 0],
               lambda x: x[0], lambda x: x[np.array([0, 0])], lambda x: x[None, ..., :1],
               lambda x: np.real(x), lambda x: x.conj(), lambda x: x.astype(np.float32)):
        same(op(a), per_direction(op, a))
    assert np.shape(a) == a.shape == shape and np.ndim(a) == len(shape) and a.directions == K


@pytest.mark.parametrize("operation", [
    pytest.param(lambda t: np.asarray(t), id="asarray"),
    pytest.param(lambda t: float(t[0, 0]), id="float"),
    pytest.param(lambda t: bool(t[0, 0] > 0), id="bool"),
    pytest.param(lambda t: len(t), id="len"),
    pytest.param(lambda t: list(t), id="iterate"),
    pytest.param(lambda t: np.zeros((2, 2)).__setitem__(0, t[0]), id="store into an array"),
    pytest.param(lambda t: t.__setitem__(0, 1.0), id="item assignment"),
    pytest.param(lambda t: np.linalg.solve(np.eye(2), t), id="unlisted function"),
    pytest.param(lambda t: np.add.reduce(t, axis=0), id="ufunc method"),
    pytest.param(lambda t: np.multiply(t, 2.0, out=np.zeros((2, 2))), id="out="),
    pytest.param(lambda t: t[np.array([0, 1]), np.array([1, 0])], id="two array indices"),
    pytest.param(lambda t: np.ones((2, 2, 2)) @ t, id="batched matmul operand"),
])
def test_operations_without_batching_rule_raise(operation: Any) -> None:
    t = rc.Batched(np.ones((K, 2, 2)))
    with pytest.raises(rc.NotBatchable):
        operation(t)




INDICES = [  # (index, shape of x, shape of x[index])
    (slice(1, None), (5,), (4,)), (slice(None, -1), (5,), ()), ((slice(None), 2), (4, 5), (4,)),
    (np.array([0, 0, 2]), (4, 5), (3, 5)), ((Ellipsis, np.array([1, 1])), (4, 5), (4, 2)),
    (np.array([True, False, True, False]), (4, 5), (2, 5)), ((None, 1), (4, 5), (1, 5)),
    ([0, 1], (4, 5), (2, 5)), ((1, slice(None)), (4, 5), (1,)),
]


@pytest.mark.parametrize("index, shape, y_shape", INDICES, ids=range(len(INDICES)))
@given(st.data())
def test_unindex_scatters_every_direction_like_one_at_a_time(
        index: Any, shape: tuple[int, ...], y_shape: tuple[int, ...], data: st.DataObject) -> None:
    """getitem's pullback and frule scatter a whole stack at once (repeated indices accumulate,
    a cotangent of fewer dimensions broadcasts as in each direction)."""
    from rulescore.rules.indexing import unindex

    ybar = rc.Batched(data.draw(stacks(y_shape)))
    same(unindex(ybar, index, shape, np.float64),
         per_direction(lambda y: unindex(y, index, shape, np.float64), ybar))


def test_unindex_refuses_indices_numpy_would_move_before_the_directions() -> None:
    from rulescore.rules.indexing import unindex

    with pytest.raises(rc.NotBatchable):
        unindex(rc.Batched(np.ones((K, 2))), (np.array([0, 1]), np.array([1, 2])), (4, 5), np.float64)


@given(st.data())
def test_sum_and_slice_frules_push_a_stack_at_once(data: st.DataObject) -> None:
    """The frules a Hessian of ``sum(f(x[1:], x[:-1]))`` meets take every direction in one call."""
    import operator

    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=2, max_side=4))
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-3, 3)))
    xdot = rc.Batched(data.draw(stacks(shape)))
    for f, args in ((np.sum, ()), (np.sum, (0,)), (operator.getitem, (slice(1, None),)),
                    (operator.getitem, ((Ellipsis, slice(None, -1)),))):
        rule = rc.frule.lookup(f, (x, *args))  # its body: the checks take one direction at a time
        assert rule is not None and rule.impl is not None
        y, ydot = rule.impl((rc.NoTangent(), xdot, *(rc.NoTangent() for _ in args)), x, *args)
        np.testing.assert_array_equal(y, f(x, *args))
        same(ydot, per_direction(lambda t, f=f, args=args: f(t, *args), xdot))
