"""Forward mode over reverse mode (a JVP of a pullback) where HIPS autograd's own suite found it
failing (tools/autograd_suite.py): complex ``log``, ``log10``, ``log1p``, ``log2``, ``arctanh`` of
a Python complex (the conjugate in their pullbacks), and the functions returning a list of arrays
(``split`` and its family: the seed of a list output), against finite differences."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import zygotepy as zp


def _vjp(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
    return zp.pullback(f, x)[1](v)[0]


def _jvp_of_vjp_against_differences(f: Callable[[Any], Any], x: Any, dx: Any, v: Any) -> None:
    _, slope = zp.jvp(lambda p: _vjp(f, p, v), (x,), (dx,))
    h = 1e-6
    by_differences = (np.asarray(_vjp(f, x + h * dx, v)) - np.asarray(_vjp(f, x - h * dx, v))) / (2 * h)
    np.testing.assert_allclose(slope, by_differences, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [np.log, np.log10, np.log1p, np.log2, np.arctanh, np.sqrt],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("z", [0.4 + 0.3j, -0.2 + 0.5j])
def test_complex_scalar_functions(f: Callable[[Any], Any], z: complex) -> None:
    _jvp_of_vjp_against_differences(f, z, 0.7 - 0.2j, 1.3 + 0.4j)
    _jvp_of_vjp_against_differences(f, z, 1.0 + 0.0j, 1.0 + 0.0j)


SPLITS = [
    (lambda x: np.split(x, 2), (4,)),
    (lambda x: np.split(x, [1, 3], axis=1), (2, 4)),
    (lambda x: np.array_split(x, 3), (7,)),
    (lambda x: np.hsplit(x, 2), (3, 4)),
    (lambda x: np.vsplit(x, [1]), (3, 2)),
    (lambda x: np.dsplit(x, 2), (2, 2, 4)),
]


@pytest.mark.parametrize(("split", "shape"), SPLITS, ids=[str(i) for i in range(len(SPLITS))])
def test_functions_returning_lists(split: Callable[[Any], Any], shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(shape))
    x = rng.normal(size=shape)

    def f(p: Any) -> Any:
        return [np.sin(part) * part for part in split(p)]

    v = [rng.normal(size=np.shape(part)) for part in split(x)]
    _jvp_of_vjp_against_differences(f, x, rng.normal(size=shape), v)


@pytest.mark.parametrize("field", [1, "logabsdet"])
def test_an_entry_of_a_namedtuple_result_at_both_nested_modes(field: Any) -> None:
    """``slogdet(a)[1]`` (and ``.logabsdet``) inside a gradient differentiated again: the
    NamedTuple's tangent built from its entries at the outer level, forward-over-reverse and
    reverse-over-reverse, against the closed form d/da <a^-T, v> = -(a^-1 v a^-1)^T."""
    rng = np.random.default_rng(3)
    a, v = np.eye(4) + 0.3 * rng.standard_normal((2, 4, 4))

    def f(m: Any) -> Any:
        result = np.linalg.slogdet(m)
        return 2.0 * (result[field] if type(field) is int else result.logabsdet)

    inv = np.linalg.inv(a)
    np.testing.assert_allclose(zp.gradient(f, a)[0], 2.0 * inv.T, rtol=1e-10)
    expected = -2.0 * (inv @ v @ inv).T
    grad = lambda m: zp.gradient(f, m)[0]  # noqa: E731
    np.testing.assert_allclose(zp.jvp(grad, (a,), (v,))[1], expected, rtol=1e-10)
    np.testing.assert_allclose(zp.gradient(lambda m: np.sum(grad(m) * v), a)[0], expected, rtol=1e-10)


def test_an_index_with_an_ellipsis_at_both_nested_modes() -> None:
    """``x[..., :, None]`` and ``x[..., None, :]`` (an outer product's indices, as linalg's
    pullbacks write them) in a gradient differentiated again, against the closed form of
    f(x) = sum_ij sin(x_i) x_j = sum(sin x) sum(x)."""
    rng = np.random.default_rng(4)
    x, v = rng.standard_normal((2, 5))

    def f(u: Any) -> Any:
        return np.sum(np.sin(u)[..., :, None] * u[..., None, :])

    grad = lambda u: zp.gradient(f, u)[0]  # noqa: E731
    np.testing.assert_allclose(grad(x), np.cos(x) * np.sum(x) + np.sum(np.sin(x)), rtol=1e-12)
    expected = -np.sin(x) * v * np.sum(x) + np.cos(x) * np.sum(v) + np.sum(np.cos(x) * v)
    np.testing.assert_allclose(zp.jvp(grad, (x,), (v,))[1], expected, rtol=1e-12)
    np.testing.assert_allclose(zp.gradient(lambda u: np.sum(grad(u) * v), x)[0], expected, rtol=1e-12)


_RNG = np.random.default_rng(14)
_X, _Z, _Y = _RNG.normal(size=(5, 4)), _RNG.normal(size=(3, 6)), _RNG.normal(size=3)
_K0 = np.exp(-0.5 * np.subtract.outer(np.arange(3.0), np.arange(3.0)) ** 2)

#: Rules with a straight-line pullback for their commonest call (logsumexp of a real array, solve
#: and slogdet of float64 matrices) and calls with constant keywords (the fast paths take them).
STRAIGHT_LINES = {
    "logsumexp-axis-keyword": (lambda w: np.sum(_logsumexp(_X @ w, axis=1)), (4, 3)),
    "logsumexp-positional-axis-keepdims": (lambda w: np.sum(_logsumexp(w, 0, keepdims=True) ** 2), (4, 3)),
    "logsumexp-all": (lambda w: 2.0 * _logsumexp(w) * _logsumexp(w), (2, 3)),
    "solve-vector": (lambda t: _Y @ np.linalg.solve(_K0 + np.diag(np.exp(t)), _Y), (3,)),
    "solve-matrix": (lambda m: np.sum(_Z * np.linalg.solve(m @ m.T + np.eye(3), _Z)), (3, 3)),
    "slogdet": (lambda m: np.linalg.slogdet(m @ m.T + np.eye(3))[1] ** 2, (3, 3)),
    "sum-axis-keyword": (lambda w: np.sum(np.sum(np.sin(w) ** 3, axis=1, keepdims=True) ** 2), (2, 3)),
}


def _logsumexp(*args: Any, **kwargs: Any) -> Any:
    import scipy.special

    return scipy.special.logsumexp(*args, **kwargs)


@pytest.mark.parametrize("name", list(STRAIGHT_LINES))
def test_straight_line_pullbacks_at_both_nested_modes(name: str) -> None:
    """Hessian-vector products through them, forward over reverse and reverse over reverse,
    against differences of the gradient."""
    f, shape = STRAIGHT_LINES[name]
    x, v = _RNG.normal(size=shape), _RNG.normal(size=shape)
    grad = lambda p: zp.gradient(f, p)[0]  # noqa: E731
    forward = zp.jvp(grad, (x,), (v,))[1]
    reverse = zp.gradient(lambda p: np.sum(grad(p) * v), x)[0]
    h = 1e-6
    by_differences = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(forward, by_differences, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(reverse, forward, rtol=1e-12, atol=1e-12)
