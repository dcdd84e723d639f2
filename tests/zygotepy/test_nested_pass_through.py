"""Second derivatives through the pullbacks' projections and conjugations.

Nested levels answer ``project``/``proj``/``conj``/``stand_in`` from the plain values when they
hand their argument back unchanged (their ``"pass_through"`` entries); the cases here take
the other branches too: a float broadcast against an array (its cotangent summed back), a
NumPy scalar meeting a float, and complex intermediates (the conjugate is not the identity).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import zygotepy as zp

XS = arrays(np.float64, st.integers(1, 6), elements=st.floats(-2.0, 2.0))
POINTS = st.floats(-1.5, 1.5)


@settings(max_examples=25, deadline=None)
@given(XS, POINTS)
def test_second_derivative_of_a_float_broadcast_against_an_array(x: np.ndarray, b: float) -> None:
    def inner(c: float) -> float:
        return zp.gradient(lambda d: np.sum(np.tanh(x + d)), c)[0]

    t = np.tanh(x + b)
    got = zp.gradient(inner, b)[0]
    assert type(got) is float
    np.testing.assert_allclose(got, np.sum(-2.0 * t * (1.0 - t * t)), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(XS)
def test_second_derivative_through_complex_intermediates(x: np.ndarray) -> None:
    def f(v: np.ndarray) -> float:
        return np.real(np.sum(np.exp(1j * v) * v))  # sum(v cos v)

    got = zp.gradient(lambda u: np.sum(zp.gradient(f, u)[0]), x)[0]
    np.testing.assert_allclose(got, -2.0 * np.sin(x) - x * np.cos(x), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(POINTS)
def test_third_derivative_of_numpy_functions_of_a_float(x: float) -> None:
    def d(f):  # noqa: ANN001, ANN202
        return lambda u: zp.gradient(f, u)[0]

    got = d(d(d(lambda u: np.sin(u) * u)))(x)  # NumPy scalars (np.sin of a float) meet floats
    np.testing.assert_allclose(got, -3.0 * np.sin(x) - x * np.cos(x), rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(XS, POINTS)
def test_nested_jvp_of_a_float_broadcast_against_an_array(x: np.ndarray, b: float) -> None:
    # the frules' ``fit`` broadcasts the float's tangent onto the array: not handed back unchanged
    def inner(c: float) -> float:
        return zp.jvp(lambda d: np.sum(np.tanh(x + d)), (c,), (1.0,))[1]

    t = np.tanh(x + b)
    got = zp.jvp(inner, (b,), (1.0,))[1]
    np.testing.assert_allclose(got, np.sum(-2.0 * t * (1.0 - t * t)), rtol=1e-10, atol=1e-12)


def test_nested_jvp_keeps_float32_tangents() -> None:
    x = np.linspace(-1.0, 1.0, 5, dtype=np.float32)
    ones = np.ones_like(x)
    got = zp.jvp(lambda v: zp.jvp(np.tanh, (v,), (ones,))[1], (x,), (ones,))[1]
    assert got.dtype == np.float32
    t = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(got, -2.0 * t * (1.0 - t * t), rtol=1e-5)
