"""rulescore.testing._result_checks: tolerances and tangent spaces, without finite differences."""

from __future__ import annotations

import numpy as np

import rulescore as rc
import rulescore.testing as rct


def test_tolerances_follow_dtypes() -> None:
    assert rct.default_tolerance(np.zeros(1)) == rct.Tolerance(1e-6, 1e-9)
    assert rct.default_tolerance(np.zeros(1), (np.float32(1.0),)).rtol == 1e-3
    assert rct.default_tolerance({"a": np.zeros(1, np.float16)}).rtol == 3e-2


def test_tangent_spaces_reject_what_projection_would_move() -> None:
    x = np.zeros(3, np.float32)
    assert rct.tangent_space_problem(x, np.ones(3, np.float32)) is None
    assert rct.tangent_space_problem(x, rc.ZeroTangent()) is None
    assert rct.tangent_space_problem(x, np.ones(3)) is not None          # float64 for float32
    assert rct.tangent_space_problem(x, np.ones(4, np.float32)) is not None
    assert rct.tangent_space_problem(1.0, 1j) is not None                # complex for a real
