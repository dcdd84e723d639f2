"""rulescore.testing._vec: the real-vector view of tangents is faithful."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S
from rulescore.testing._vec import build_node

# ---------------------------------------------------------------------------------------------
# structures: the real-vector view is faithful


class Pair(NamedTuple):
    a: Any
    b: Any



@settings(max_examples=30)
@given(S.nested(), st.integers(0, 2 ** 32 - 1))
def test_tangents_round_trip_through_vectors(x: Any, seed: int) -> None:
    node = build_node(x)
    v = np.random.default_rng(seed).standard_normal(node.n)
    t = node.tangent(v)
    np.testing.assert_array_equal(node.vec(t), v.astype(np.float64))
    assert rct.tangent_space_problem(x, t) is None
    np.testing.assert_array_equal(node.values(node.perturb(np.zeros(node.n))), node.values(x))


@settings(max_examples=20)
@given(S.nested().flatmap(lambda x: st.tuples(st.just(x), S.tangents_for(x))))
def test_tangents_for_draws_fixed_points_of_project(xt: tuple[Any, Any]) -> None:
    x, t = xt
    assert rct.tangent_space_problem(x, t) is None
    assert rc.ProjectTo(x)(t) == t


def test_labels_name_every_coordinate() -> None:
    node = build_node({"w": np.zeros((2, 1), np.complex64), "p": Pair(1.0, "s")})
    assert node.labels("x") == ["x['w'][0, 0].real", "x['w'][0, 0].imag", "x['w'][1, 0].real",
                                "x['w'][1, 0].imag", "x['p'].a"]
