"""Scenarios: NumPy programs (construction, indexing, the library, dtypes), checked against finite
differences and HIPS autograd."""

import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import check

# -- helpers ------------------------------------------------------------------------------------
X4 = np.array([1.0, 3.0, 2.0, -1.5])


def test_math_and_numpy_mixed_and_python_numbers():
    check(lambda v: math.sin(v[0]) * np.cos(v[1]) + math.tanh(np.sum(v)), np.array([0.3, 0.5]))
    check(lambda x: float(x) ** 2 + math.hypot(x, 2.0) + math.atan2(x, 2.0), 0.7)
    check(lambda x: abs(complex(x, 2 * x)) ** 2 + ((x + 1j) * (x - 2j)).real, 1.7)
    check(lambda x: divmod(x, 0.5)[1] * 3 + pow(x, 3), 1.7)


def test_array_construction_indexing_and_functional_setitem():
    def f(x):
        y = np.zeros(4)
        y[1:3] = x[:2]
        y[-1] = x[0] ** 2
        z = x.copy()
        z += x
        z *= x
        return np.sum(y ** 2) + np.sum(z)

    check(f, X4)
    check(lambda x: np.sum(x[::-1] * np.arange(4)) + np.sum(x[-1:0:-2] ** 2), X4)
    check(lambda x: np.sum(x[[0, 0, 2]] ** 2) + np.sum(x[x > 1.5] ** 3), X4)
    check(lambda x: np.sum(x.reshape(2, 2)[np.array([1, 0]), :][:, [1]] * 3)
          + x.reshape(2, 2)[1, -1] ** 2, X4)
    check(lambda x: np.sum(np.array([[x, 1.0], [2.0, x * x]]) @ np.ones(2)), 0.5)


def test_numpy_library_against_autograd():
    m = np.array([[0.9, 0.2], [-0.3, 1.4]])
    cases = [
        (lambda a: np.sum(np.where(a > 0.5, a ** 2, -a)), lambda a: anp.sum(anp.where(a > 0.5, a ** 2, -a))),
        (lambda a: np.sum(np.clip(a, 0, 1.0) ** 2), lambda a: anp.sum(anp.clip(a, 0, 1.0) ** 2)),
        (lambda a: np.sum(a.T @ a * a.sum(axis=0)), lambda a: anp.sum(anp.dot(a.T, a) * anp.sum(a, axis=0))),
        (lambda a: np.linalg.det(a) + np.sum(np.linalg.inv(a)),
         lambda a: anp.linalg.det(a) + anp.sum(anp.linalg.inv(a))),
        (lambda a: np.sum(np.linalg.solve(a, np.ones(2))),
         lambda a: anp.sum(anp.linalg.solve(a, np.ones(2)))),
        (lambda a: np.linalg.slogdet(a @ a.T + np.eye(2))[1],
         lambda a: anp.linalg.slogdet(anp.dot(a, a.T) + anp.eye(2))[1]),
        (lambda a: np.sum(np.linalg.eigh(a @ a.T)[0] ** 2),
         lambda a: anp.sum(anp.linalg.eigh(anp.dot(a, a.T))[0] ** 2)),
        (lambda a: np.real(np.sum(np.exp(1j * a) * np.conj(np.exp(2j * a)))),
         lambda a: anp.real(anp.sum(anp.exp(1j * a) * anp.conj(anp.exp(2j * a))))),
        (lambda a: np.sum(np.exp(a) / np.sum(np.exp(a), axis=1, keepdims=True) * m),
         lambda a: anp.sum(anp.exp(a) / anp.sum(anp.exp(a), axis=1, keepdims=True) * m)),
    ]
    for f, fa in cases:
        (g,) = zp.gradient(f, m)
        np.testing.assert_allclose(g, autograd.grad(fa)(m), rtol=1e-6, atol=1e-9)


def test_float32_int_and_complex_inputs():
    (g,) = zp.gradient(lambda x: np.sum(x ** 2), np.array([1.0, 2.0], dtype=np.float32))
    assert g.dtype == np.float32
    assert zp.gradient(lambda x: x ** 2, 3) == (6.0,)
    (gz,) = zp.gradient(lambda z: abs(z), 3.0 + 4.0j)
    assert gz == pytest.approx(0.6 + 0.8j)


@pytest.mark.parametrize("f, x", [
    (lambda x: np.sum(np.full(3, x)), 0.7),
    (lambda x: np.sum(np.full_like(np.ones(3), x)), 0.7),
    (lambda x: np.sum(np.linspace(0.0, x, 5)), 0.7),
    (lambda x: np.sum(np.arange(x, x + 3)), 0.7),
], ids=["full", "full_like", "linspace", "arange"])
def test_constructors_with_traced_fill_value_or_endpoints(f, x):
    check(f, x)
