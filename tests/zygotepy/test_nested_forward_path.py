"""The forward pipeline of a call when two or three reverse levels are live (issue 30, session 15):
the nested fast path unrolled for one and two arguments, an entry of a rule's tuple result taken by
the owning level's rule, a box's ``T``/``mT`` called as their NumPy functions, helpers marked
``rulescore.structural`` and closures met at a call site, and a call site that skips the numbers
path after it missed on arrays. Each against closed forms or finite differences, and against the
dispatcher's general path (a DEBUG log turns every fast path off), bit for bit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import zygotepy as zp

_RNG = np.random.default_rng(15)
_A = _RNG.normal(size=(4, 4))
_B = _A @ _A.T + 4.0 * np.eye(4)
_C = _RNG.normal(size=(4, 4))
_Z = _RNG.normal(size=(4, 6))


def _hvps(f: Callable[[Any], Any], x: Any, v: Any) -> tuple[Any, Any, Any]:
    """The Hessian-vector product of ``f`` at ``x`` forward over reverse, reverse over reverse, and
    by central differences of the gradient."""
    grad = lambda p: zp.gradient(f, p)[0]  # noqa: E731
    forward = zp.jvp(grad, (x,), (v,))[1]
    reverse = zp.gradient(lambda p: np.sum(grad(p) * v), x)[0]
    h = 1e-6
    return forward, reverse, (grad(x + h * v) - grad(x - h * v)) / (2 * h)


def _on_the_general_path(run: Callable[[], Any], caplog: pytest.LogCaptureFixture) -> Any:
    """``run()`` with the engine logging every call: no fast path, no call site's kept answer."""
    with caplog.at_level(logging.DEBUG, logger="zygotepy"):
        return run()


def _assert_hvps_right(f: Any, x: Any, v: Any, caplog: pytest.LogCaptureFixture,
                       modes_rtol: float = 1e-10) -> None:
    """Both nested modes' HVPs against differences and each other, and bit-equal to the general path."""
    forward, reverse, by_differences = _hvps(f, x, v)
    np.testing.assert_allclose(forward, by_differences, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reverse, forward, rtol=modes_rtol, atol=modes_rtol)
    general = _on_the_general_path(lambda: _hvps(f, x, v)[:2], caplog)
    np.testing.assert_array_equal(forward, general[0])
    np.testing.assert_array_equal(reverse, general[1])


def test_derivatives_one_to_three_through_an_entry_of_a_tuple_result() -> None:
    """``slogdet(B + t A)[1]`` differentiated three times by nested gradients (the entry taken at
    every level from a box of the rule's tuple result): tr(M^-1 A), -tr((M^-1 A)^2), 2 tr((M^-1 A)^3)."""
    def f(t: float) -> Any:
        return np.linalg.slogdet(_B + t * _C)[1]

    d1 = lambda t: zp.gradient(f, t)[0]  # noqa: E731
    d2 = lambda t: zp.gradient(d1, t)[0]  # noqa: E731
    d3 = lambda t: zp.gradient(d2, t)[0]  # noqa: E731
    t = 0.3
    p = np.linalg.solve(_B + t * _C, _C)
    np.testing.assert_allclose(d1(t), np.trace(p), rtol=1e-12)
    np.testing.assert_allclose(d2(t), -np.trace(p @ p), rtol=1e-10)
    np.testing.assert_allclose(d3(t), 2.0 * np.trace(p @ p @ p), rtol=1e-9)


@pytest.mark.parametrize("entry", [0, 1, -1])
def test_entries_of_a_tuple_result_at_both_nested_modes_match_the_general_path(
        entry: int, caplog: pytest.LogCaptureFixture) -> None:
    """``eigh(S)`` indexed by position (a negative one too) inside a gradient differentiated again:
    against differences, and bit-equal to the dispatcher's general path."""
    def f(m: Any) -> Any:
        s = m @ m.T + np.eye(4)
        values = np.linalg.eigh(s)[entry] if entry != 1 else np.linalg.eigh(s)[1][:, 0] ** 2
        return np.sum(values ** 2) + np.linalg.slogdet(s)[entry] * 1.5

    x, v = _RNG.normal(size=(4, 4)), _RNG.normal(size=(4, 4))
    _assert_hvps_right(f, x, v, caplog)


def test_transposes_of_boxes_at_both_nested_modes_match_the_general_path(
        caplog: pytest.LogCaptureFixture) -> None:
    """``L.T`` and ``x.mT`` of traced arrays inside a gradient differentiated again (a Gaussian NLL
    in a covariance factor, and a batched product): against differences, bit-equal to the general path."""
    def f(m: Any) -> Any:
        s = m @ m.T + np.eye(4)
        stacked = np.stack([m, 2.0 * m])
        return 0.5 * np.sum(_Z * np.linalg.solve(s, _Z)) + np.sum(np.tanh(stacked @ stacked.mT))

    x, v = _RNG.normal(size=(4, 4)), _RNG.normal(size=(4, 4))
    _assert_hvps_right(f, x, v, caplog)


def _times(a: Any, b: Any) -> Any:
    return a * b  # one call site, met with arrays and with floats in turn


def test_a_call_site_alternating_arrays_and_floats() -> None:
    """A call site whose numbers path missed on arrays takes floats again (the numbers path, or the
    rule, which records the same numbers): first and second order, against closed forms."""
    def f(x: Any, w: Any) -> Any:
        total = 0.0
        for k in range(3):
            total = total + np.sum(_times(w, w)) * _times(x, x) + _times(x, float(k + 1))
        return total

    x, w = 0.7, np.array([0.5, -1.5, 2.0])
    gx, gw = zp.gradient(f, x, w)
    np.testing.assert_allclose(gx, 3 * 2 * x * np.sum(w * w) + 6.0, rtol=1e-14)
    np.testing.assert_allclose(gw, 3 * 2 * w * x * x, rtol=1e-14)
    second = zp.gradient(lambda u: zp.gradient(f, u, w)[0], x)[0]
    np.testing.assert_allclose(second, 6.0 * np.sum(w * w), rtol=1e-14)
    mixed = zp.gradient(lambda u: np.sum(zp.gradient(f, x, u)[1]), w)[0]
    np.testing.assert_allclose(mixed, 6.0 * x * x * np.ones(3), rtol=1e-14)


def _scaled(k: float) -> Callable[[Any], Any]:
    return lambda u: k * np.sin(u)


def test_nested_one_two_and_three_argument_calls_and_closures_at_a_site(
        caplog: pytest.LogCaptureFixture) -> None:
    """The nested fast path's unrolled cases (one argument; two with a constant first, a shape second;
    three, with constants among them) and two closures met at one call site, at both nested modes:
    against differences, bit-equal to the general path."""
    def f(x: Any) -> Any:
        y = np.exp(x)  # one argument
        z = 2.0 - np.reshape(y * x, (3, 2))  # a constant first; a shape second
        c = np.clip(np.broadcast_to(x, (2, 6)), -0.4, 0.9)  # three arguments, two constants
        total = np.sum(z ** 2) + np.sum(c * c)
        for k in (1.5, -0.5):
            total = total + np.sum(_scaled(k)(x))  # one site, a new closure each time
        return total

    x, v = _RNG.normal(size=6) * 0.5, _RNG.normal(size=6)
    _assert_hvps_right(f, x, v, caplog, modes_rtol=1e-12)
