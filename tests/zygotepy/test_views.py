"""Writes through views and aliases (zygotepy._views): what NumPy refuses is refused."""

import numpy as np
import pytest

import zygotepy as zp


def _frozen(*values):
    a = np.array(values, dtype=float)
    a.flags.writeable = False
    return a


def _set_element(a):
    a[0] = 5.0
    return np.sum(a)


def _add_in_place(a):
    a += 1.0
    return np.sum(a * a)


def _fill(a):
    a[...] = 2.0
    return np.sum(a)


def _ufunc_out(a):
    np.multiply(a, 3.0, out=a)
    return np.sum(a)


def _through_a_slice(a):
    head = a[:1]
    head *= 2.0
    return np.sum(a)


@pytest.mark.parametrize("f", [_set_element, _add_in_place, _fill, _ufunc_out, _through_a_slice])
def test_a_write_into_a_read_only_argument_is_refused_as_numpy_refuses_it(f):
    with pytest.raises(ValueError, match="read-only"):
        f(_frozen(1.0, 2.0))  # NumPy itself
    a = _frozen(1.0, 2.0)
    with pytest.raises(ValueError, match="read-only"):
        zp.gradient(f, a)
    np.testing.assert_array_equal(a, [1.0, 2.0])


def test_a_write_into_a_read_only_global_is_refused():
    table = _frozen(1.0, 2.0, 3.0)

    def f(x):
        table[1] = x
        return x * 2.0

    with pytest.raises(ValueError, match="read-only"):
        zp.gradient(f, 1.0)


@pytest.mark.parametrize("f", [_set_element, _add_in_place, _fill, _ufunc_out, _through_a_slice])
def test_the_same_writes_into_a_writable_argument_are_differentiated(f):
    x = np.array([1.0, 2.0])
    (g,) = zp.gradient(f, x.copy())
    eps, numeric = 1e-6, []
    for i in range(2):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric.append((f(up) - f(down)) / (2 * eps))
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-8)
