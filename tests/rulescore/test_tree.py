"""Tree helpers on the user's side of gradients: optimiser steps over dicts of parameters whose
gradients have ``None`` for unused entries."""

from dataclasses import dataclass

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp

leaves = st.one_of(st.floats(-10, 10), st.lists(st.floats(-10, 10), min_size=1, max_size=3).map(np.array))
trees = st.recursive(leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
    st.dictionaries(st.sampled_from("abc"), kids, max_size=3)), max_leaves=6)


def _none_some(tree, data):
    """``tree`` with some leaves (or whole subtrees) replaced by None, as gradients have them."""
    flat, unflatten = rc.tree_flatten(tree)
    return unflatten([None if data.draw(st.booleans()) else leaf for leaf in flat])


@given(trees, st.data())
def test_sgd_step_treats_none_as_zero(params, data):
    grads = _none_some(params, data)
    new = rc.tree_sub(params, rc.tree_scale(0.1, grads))
    for p, g, n in zip(rc.tree_flatten(params)[0], rc.tree_flatten(grads)[0], rc.tree_flatten(new)[0],
                       strict=True):
        np.testing.assert_allclose(n, p if g is None else p - 0.1 * g)
    assert type(new) is type(params)


@given(trees)
def test_flatten_unflatten_round_trip(tree):
    flat, unflatten = rc.tree_flatten(tree)
    again = unflatten(flat)
    assert type(again) is type(tree)
    assert all(np.array_equal(a, b) for a, b in zip(rc.tree_leaves(again), flat, strict=True))


def test_adam_on_a_dict_of_parameters_with_an_unused_one():
    params = {"w": np.array([1.0, -2.0]), "b": 0.5, "unused": np.ones(3)}
    m = rc.tree_map(rc.zero_like, params)
    v = rc.tree_map(rc.zero_like, params)

    def loss(p):
        return np.sum((p["w"] - 3.0) ** 2) + (p["b"] + 1.0) ** 2

    for t in range(1, 301):
        g, = zp.gradient(loss, params)
        assert g["unused"] is None
        m = rc.tree_map(lambda m_, g_: 0.9 * m_ + 0.1 * g_, m, g)
        v = rc.tree_map(lambda v_, g_: 0.999 * v_ + 0.001 * g_ ** 2, v, g)
        params = rc.tree_map(lambda p, m_, v_: p - 0.05 * (m_ / (1 - 0.9 ** t)) / (
            np.sqrt(v_ / (1 - 0.999 ** t)) + 1e-8), params, m, v)
    np.testing.assert_allclose(params["w"], [3.0, 3.0], atol=0.05)
    assert abs(params["b"] + 1.0) < 0.05
    np.testing.assert_array_equal(params["unused"], np.ones(3))


@dataclass
class Layer:
    w: np.ndarray
    b: float


def test_dataclass_parameters_with_a_structural_tangent_gradient():
    layer = Layer(np.array([1.0, 2.0]), 3.0)
    g, = zp.gradient(lambda m: np.sum(m.w ** 2), layer)
    assert isinstance(g, rc.Tangent)
    new = rc.tree_map(lambda p, d: p - 0.5 * d, layer, g)
    assert isinstance(new, Layer)
    np.testing.assert_allclose(new.w, [0.0, 0.0])
    assert new.b == 3.0


def test_tree_add_with_none_on_either_side():
    assert rc.tree_add(None, {"a": 1.0}) == {"a": 1.0}
    assert rc.tree_add({"a": None, "b": [1.0]}, {"a": 2.0, "b": None}) == {"a": 2.0, "b": [1.0]}
    assert rc.zero_like(np.float32(2.0)).dtype == np.float32
