"""Found by the program fuzzer (bench/fuzz.py): in-place updates through a view or an alias.

NumPy writes ``row += v`` into the array ``row`` views (and ``g += v`` into the array a dict
holds); zygotepy today loses the update, value and gradient (issue 14, case 1). Each test is the
fuzzer's failing program minimised, checked against finite differences.
"""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd

VIEWS_LOST = pytest.mark.xfail(
    strict=True, reason="issue 14 case 1: an in-place update through a view or alias is lost")


def row_view(x):
    out = np.zeros((2, 3))
    row = out[0]
    row += x * 2
    return np.sum(out)


def column_view(x):
    out = np.zeros((2, 3))
    column = out[:, 1]
    column[0] = x * 3
    return np.sum(out)


def dict_alias(x):
    state = {"g": np.zeros(2)}
    g = state["g"]
    g += x
    return np.sum(state["g"])


@VIEWS_LOST
@pytest.mark.parametrize("f", [row_view, column_view, dict_alias], ids=lambda f: f.__name__)
def test_update_through_a_view_reaches_value_and_gradient(f):
    val, (grad,) = zp.withgradient(f, 0.7)
    assert val == pytest.approx(f(0.7))
    assert grad == pytest.approx(fd(f, 0.7), rel=1e-6)
