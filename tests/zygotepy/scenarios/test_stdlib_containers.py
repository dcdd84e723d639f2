"""Found by the program fuzzer (bench/fuzz.py): standard-library containers holding traced values.
Minimised from the fuzzer's programs; checked against finite differences."""

import copy
from collections import defaultdict

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def defaultdict_accumulates(x):
    totals = defaultdict(float)
    for k, v in enumerate([x, x * x, np.sin(x)]):
        totals[k % 2] += v
    return totals[0] + totals[1] * 0.5


def shallow_copy_of_list(x):
    items = copy.copy([x, x * x])
    return items[0] + items[-1]


@pytest.mark.parametrize("f", [defaultdict_accumulates, shallow_copy_of_list], ids=lambda f: f.__name__)
def test_container_of_traced_values(f):
    val, (grad,) = zp.withgradient(f, 0.7)
    assert val == pytest.approx(f(0.7))
    assert grad == pytest.approx(fd(f, 0.7), rel=1e-6)
