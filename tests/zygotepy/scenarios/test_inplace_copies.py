"""Found by the program fuzzer (bench/fuzz.py): in-place updates of a local array that nothing
else references were refused ("also referenced elsewhere"), though the only other references are
the engine's own (a slice read by ``y[a:b] op= v``, the value being assigned, a recorded
operation). They differentiate exactly. Minimised from the fuzzer's programs; checked against
finite differences.
"""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def slice_scaled_in_place(x):
    y = np.array([0.5, 1.0])
    y[0:2] *= x
    return np.sum(y)


def assigned_from_own_product(x):
    z = np.zeros(2)
    z[0] = (z * x)[0] + x
    return np.sum(z)


def assigned_to_itself(x):
    y = np.array([0.5, 1.0])
    y[1] = x
    y[0:2] = y
    return np.sum(y)


def element_incremented(x):
    y = np.array([0.5, 1.0])
    y[0] += x * x
    return np.sum(y)


@pytest.mark.parametrize("f", [
    slice_scaled_in_place, assigned_from_own_product, assigned_to_itself, element_incremented,
], ids=lambda f: f.__name__)
def test_in_place_update_of_a_local_array(f):
    val, (grad,) = zp.withgradient(f, 0.7)
    assert val == pytest.approx(f(0.7))
    assert grad == pytest.approx(fd(f, 0.7), rel=1e-6)
