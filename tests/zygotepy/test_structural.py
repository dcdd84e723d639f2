"""Helpers marked ``rulescore.structural`` run on plain values under the engine's levels.

The engine may skip tracing such a helper only because its answer depends on types, shapes and
dtypes alone and carries no derivative. The tests check both halves of that invariant: every
helper rulescore marks answers the same for any numbers of the same shape and dtype, and a
helper marked by mistake (its answer is a number that depends on a traced value) raises
instead of cutting the derivative. Nested derivatives through the rules that use the marked
helpers (``np.sum``, the element-wise partials) are checked against closed forms.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import rulescore
import rulescore as rc
import zygotepy as zp
from rulescore._helpers import _call_kind
from rulescore.rules._common import is_complex, normalize_axes
from rulescore.rules.indexing import _tangent_class, _zero_entries
from rulescore.rules.linalg import _float64_matrix, _float64_solve_ndim
from rulescore.rules.reductions import (
    _cotangent_dtype,
    _dtype,
    _full_reduction,
    _keep_shape,
    _lse_layout,
    _not_args,
    _real_lse_plan,
    _shape,
)
from zygotepy import UntraceableError

#: Every helper rulescore marks, with how to call it on one array (``x``) or shape: a helper
#: marked without an entry here fails ``test_every_marked_helper_is_checked``.
ON_AN_ARRAY: dict[Any, Any] = {
    _dtype: lambda f, x: f(x),
    _cotangent_dtype: lambda f, x: f(x),
    _shape: lambda f, x: f(x),
    _full_reduction: lambda f, x: f(x),
    is_complex: lambda f, x: f(x),
    _call_kind: lambda f, x: f((x, x), x * 2, True),
    normalize_axes: lambda f, x: f(-1 if x.ndim else None, x.ndim),
    _keep_shape: lambda f, x: f(x.shape, tuple(range(0, x.ndim, 2))),
    _not_args: lambda f, x: f(x.ndim),
    _lse_layout: lambda f, x: f(x, (), {"b": x, "axis": -1 if x.ndim else None, "keepdims": True}),
    _tangent_class: lambda f, x: f((x, x)),
    _zero_entries: lambda f, x: f(x.ndim),
    _real_lse_plan: lambda f, x: f(x, (), {"axis": -1 if x.ndim else None}),
    _float64_matrix: lambda f, x: f(x),
    _float64_solve_ndim: lambda f, x: f(x[..., None] if x.ndim == 1 else x, x),
}

DTYPES = st.sampled_from([np.float64, np.float32, np.complex128, np.int64])


def _marked_in_rulescore() -> set[Any]:
    found = set()
    modules = [importlib.import_module(info.name)  # every module, not only those loaded so far
               for info in pkgutil.walk_packages(rulescore.__path__, "rulescore.")]
    for module in modules:
        for value in vars(module).values():
            if rc.is_structural(value) and getattr(value, "__module__", "").startswith("rulescore"):
                found.add(value)
    return found


def test_every_marked_helper_is_checked() -> None:
    assert _marked_in_rulescore() == set(ON_AN_ARRAY)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_marked_helpers_answer_from_shapes_and_dtypes_alone(data: st.DataObject) -> None:
    dtype = data.draw(DTYPES)
    shape = data.draw(array_shapes(min_dims=0, max_dims=3, max_side=3))
    x = data.draw(arrays(dtype, shape, elements=st.integers(-9, 9)))
    other = data.draw(arrays(dtype, shape, elements=st.integers(-9, 9)))
    for helper, apply in ON_AN_ARRAY.items():
        answer = apply(helper, x)
        assert rc.carries_no_derivative(answer), helper
        assert answer == apply(helper, other), helper


@rc.structural
def _scale_of(x: Any) -> Any:
    return float(np.max(np.abs(x)))  # depends on the numbers: marked by mistake


@rc.structural
def _size_of(x: Any) -> Any:
    return np.size(x)


def test_a_helper_marked_by_mistake_raises_at_first_order() -> None:
    with pytest.raises(UntraceableError, match=r"_scale_of is marked rulescore.structural.*returned float"):
        zp.gradient(lambda v: np.sum(v) / _scale_of(v), np.array([1.0, -3.0]))


def test_a_helper_marked_by_mistake_raises_under_nested_levels() -> None:
    def inner(v: np.ndarray) -> Any:
        return zp.gradient(lambda w: np.sum(np.tanh(w)) * _scale_of(w), v)[0]

    with pytest.raises(UntraceableError, match="_scale_of"):
        zp.gradient(lambda u: np.sum(inner(u)), np.array([0.5, -1.0]))


def test_a_structural_helper_sees_plain_values_in_containers() -> None:
    def f(v: np.ndarray) -> Any:
        n = _size_of([v, (v,)][1][0])
        return np.sum(v * v) / n

    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(zp.gradient(f, x)[0], 2.0 * x / 3)
    np.testing.assert_allclose(zp.gradient(lambda u: np.sum(zp.gradient(f, u)[0]), x)[0], np.full(3, 2.0 / 3))


def _tanh_derivatives(x: np.ndarray, orders: int) -> list[Any]:
    out, f = [], np.tanh
    for _ in range(orders):
        f = (lambda g: lambda v: zp.gradient(lambda w: np.sum(g(w)), v)[0])(f)
        out.append(f(x))
    return out


@settings(max_examples=15, deadline=None)
@given(arrays(np.float64, st.integers(1, 5), elements=st.floats(-2.0, 2.0)))
def test_nested_derivatives_of_tanh_through_sum(x: np.ndarray) -> None:
    t = np.tanh(x)
    s = 1.0 - t * t
    expected = [s, -2.0 * t * s, s * (6.0 * t * t - 2.0), 8.0 * t * s * (2.0 - 3.0 * t * t)]
    for got, want in zip(_tanh_derivatives(x, 4), expected, strict=True):
        assert type(got) is np.ndarray and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_nested_sum_keeps_float32_and_complex_cotangents() -> None:
    x32 = np.linspace(-1.0, 1.0, 4, dtype=np.float32)
    got = _tanh_derivatives(x32, 2)
    assert [g.dtype for g in got] == [np.float32, np.float32]
    t = np.tanh(x32.astype(np.float64))
    np.testing.assert_allclose(got[1], -2.0 * t * (1.0 - t * t), rtol=1e-5)

    z = np.array([0.3 + 0.2j, -0.5 + 0.1j])

    def f(u: np.ndarray) -> Any:
        return np.real(np.sum(np.sin(u)))

    inner = zp.gradient(f, z)[0]  # conj(cos(z))
    np.testing.assert_allclose(inner, np.conj(np.cos(z)))
    outer = zp.gradient(lambda u: np.real(np.sum(zp.gradient(f, u)[0])), z)[0]  # d/dz Re sum(conj(cos z))
    np.testing.assert_allclose(outer, np.conj(-np.sin(z)), rtol=1e-12)


def test_sum_with_options_still_takes_the_general_path() -> None:
    x = np.arange(6.0).reshape(2, 3) / 4

    def f(u: np.ndarray) -> Any:
        return np.sum(np.sum(np.tanh(u), axis=0, keepdims=True) ** 2)

    def grad_f(u: np.ndarray) -> np.ndarray:
        t = np.tanh(u)
        return 2.0 * np.sum(t, axis=0, keepdims=True) * (1.0 - t * t)

    np.testing.assert_allclose(zp.gradient(f, x)[0], grad_f(x), rtol=1e-12)
    h, eye = 1e-6, np.eye(x.size).reshape(x.size, *x.shape)
    fd = np.array([(grad_f(x + h * e).sum() - grad_f(x - h * e).sum()) / (2 * h) for e in eye])
    got = zp.gradient(lambda u: np.sum(zp.gradient(f, u)[0]), x)[0]
    np.testing.assert_allclose(got, fd.reshape(x.shape), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("extremum", [np.max, np.min, np.ndarray.max])
def test_nested_full_max_and_min_against_finite_differences(extremum: Any) -> None:
    x = np.array([0.3, 1.7, -1.1, 0.9])

    def f(u: np.ndarray) -> Any:
        return extremum(np.sin(u) * u) ** 2 + np.sum(u * u) * extremum(u)

    def grad_f(u: np.ndarray) -> np.ndarray:
        g = zp.gradient(f, u)[0]
        assert type(g) is np.ndarray
        return g

    h, eye = 1e-6, np.eye(x.size)
    fd = np.array([(grad_f(x + h * e) - grad_f(x - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(zp.hessian(f, x), fd, rtol=1e-6, atol=1e-8)  # forward over reverse
    rows = [zp.gradient(lambda u, i=i: zp.gradient(f, u)[0][i], x)[0] for i in range(x.size)]
    np.testing.assert_allclose(np.array(rows), fd, rtol=1e-6, atol=1e-8)  # reverse over reverse
    tie = np.array([2.0, -1.0, 2.0])  # the cotangent is split between equal elements, as before
    np.testing.assert_allclose(zp.gradient(lambda u: extremum(-u * u if extremum is np.min else u), tie)[0],
                               [0.5, 0.0, 0.5] if extremum is not np.min else [-2.0, 0.0, -2.0])
