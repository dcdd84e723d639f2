"""Nested AD: gradients of gradients, with no perturbation confusion."""

import math

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp


def d(f):
    return lambda x: zp.gradient(f, x)[0]


def test_perturbation_confusion_classic():
    # d/dx [x * d/dy (x + y)] at any x is 1
    assert zp.gradient(lambda x: x * zp.gradient(lambda y: x + y, 1.0)[0], 3.0) == (1.0,)


def test_closure_over_outer_traced_value():
    # d/dx [d/dy (x * y)] = 1 ; d/dx [x * d/dy(x*y)] = 2x
    assert zp.gradient(lambda x: zp.gradient(lambda y: x * y, 2.0)[0], 3.0) == (1.0,)
    assert zp.gradient(lambda x: x * zp.gradient(lambda y: x * y, 2.0)[0], 3.0) == (6.0,)


def test_higher_orders_of_sin():
    x = 0.7
    assert d(math.sin)(x) == pytest.approx(math.cos(x))
    assert d(d(math.sin))(x) == pytest.approx(-math.sin(x))
    assert d(d(d(math.sin)))(x) == pytest.approx(-math.cos(x))


def test_second_derivative_through_numpy_rules():
    f = lambda x: np.sum(np.exp(x) * np.sin(x))  # noqa: E731
    x = np.array([0.3, -0.2])
    (h,) = zp.jacobian(lambda v: zp.gradient(f, v)[0], x)
    expected = np.diag(2 * np.exp(x) * np.cos(x))
    np.testing.assert_allclose(h, expected, rtol=1e-10)


def test_pullbacks_of_user_rules_are_differentiated():
    def cube(x):
        return x ** 3

    @rc.rrule.register(cube)
    def cube_rrule(x):
        return cube(x), lambda ybar: (rc.NoTangent(), ybar * 3 * x ** 2)

    assert d(d(cube))(2.0) == pytest.approx(12.0)


def test_nested_gradient_of_matrix_function():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])

    def energy(x):
        return 0.5 * x @ A @ x

    (H,) = zp.jacobian(lambda x: zp.gradient(energy, x)[0], np.ones(2))
    np.testing.assert_allclose(H, A)
