"""Scenarios: constructs that raised misleading errors or failed where they should work (issue
14's list), written as a user would, checked against finite differences or JAX; where the
construct cannot be differentiated, the error names the user's code and the fix."""

import copy
import dataclasses
import functools
import heapq
import logging
import math
import warnings

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import check


@functools.lru_cache(maxsize=128)
def cached_square(x):
    return x * x


@functools.cache
def cached_poly(x, k):
    return x ** k + math.sin(x)


def test_lru_cache_functions_are_differentiated_through_their_body():
    check(lambda x: cached_square(x) * 2.0, 3.0, 12.0)
    check(lambda x: cached_poly(x, 3), 0.7)
    assert cached_square(3.0) == 9.0  # still a cache outside differentiation


def _countdown(x, n):
    return x if n == 0 else _countdown(x, n - 1) * 1.001


def test_recursion_as_deep_as_python_allows_without_the_engine():
    check(lambda x: _countdown(x, 400), 2.0, 1.001 ** 400)


def test_locals_shows_only_the_users_names():
    seen = []

    def f(x):
        y = x * 2.0
        seen.append(sorted(locals()))
        return y

    f(1.0)
    assert zp.gradient(f, 1.0) == (2.0,)
    assert seen[1] == seen[0] == ["seen", "x", "y"]  # a closure's free variable is a local too


def test_empty_fancy_index():
    check(lambda x: np.sum(x[[]]) + np.sum(x ** 2), np.array([1.0, 2.0, 3.0]), [2.0, 4.0, 6.0])


def test_methods_of_a_numpy_scalar():
    x = np.array([0.5, 1.0, 2.0])
    check(lambda x: np.sum(np.sum(x * x).reshape((1,)) * 3.0), x)
    check(lambda x: np.sum(x).clip(0.0, 10.0) * np.sum(x * x).astype(np.float64).conj(), x)


def test_second_order_maximum_with_a_shape_one_operand():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    x = np.array([1.0, 0.2, -0.4])

    def f(v, lib=np):
        return lib.sum(lib.maximum(v, lib.array([0.5])) ** 3)

    np.testing.assert_allclose(zp.hessian(f, x), jax.jit(jax.hessian(lambda v: f(v, jnp)))(x))


def test_fourth_order_forward_nesting():
    def D(g):
        return lambda x: zp.jvp(g, (x,), (1.0,))[1]

    assert D(D(D(D(np.sin))))(0.3) == pytest.approx(np.sin(0.3), rel=1e-12)
    assert D(D(D(np.sin)))(0.3) == pytest.approx(-np.cos(0.3), rel=1e-12)


def test_jvp_of_a_list_valued_function_returns_lists():
    y, ydot = zp.jvp(lambda x: [x * 2.0, np.sin(x)], (1.0,), (1.0,))
    assert type(y) is list and type(ydot) is list
    assert ydot == pytest.approx([2.0, np.cos(1.0)])


def test_traced_value_kept_after_gradient_names_the_code_and_the_fix():
    history, plain = [], []

    def loss(x):
        history.append(x)  # a list entry: it holds the plain value afterwards (issue 27)
        kept.append(immutable((x,)))  # a tuple subclass: it cannot, and its next use names the fix
        plain.append(zp.dropgrad(x))
        return x * 2.0

    kept = []
    immutable = type("Immutable", (tuple,), {"__slots__": ()})
    with pytest.warns(UserWarning, match="outlives it"):
        assert zp.gradient(loss, 1.5) == (2.0,)
    assert plain[0] + 1 == 2.5 and history[0] + 1 == 2.5  # the fix the message names

    def later():
        return kept[0][0] + 1

    with pytest.raises(zp.UntraceableError, match=r"used in .*later .*dropgrad"):
        later()


class Doubler:
    def __init__(self, v):
        self.v = v

    def __getitem__(self, i):
        return self.v[i] * 2.0


class Accumulator:
    def __init__(self):
        self.total = 0.0

    def __iadd__(self, other):
        self.total = self.total + other
        return self


def test_user_classes_with_python_getitem_or_only_iadd():
    check(lambda x: Doubler(x)[1] + Doubler(x)[2] ** 2, np.array([1.0, 2.0, 3.0]), [0.0, 2.0, 24.0])

    def f(x):
        acc = Accumulator()
        acc += x * 3.0
        acc += np.sin(x)
        return acc.total

    check(f, 0.4)


@dataclasses.dataclass
class Polar:
    x: float
    y: float
    r: float = 0.0

    def __post_init__(self):
        self.r = math.sqrt(self.x ** 2 + self.y ** 2)


def test_post_init_using_math_sqrt():
    check(lambda t: Polar(t, 2.0 * t).r + Polar(1.0, t).r, 0.8)


def test_deepcopy_and_asdict_of_traced_values():
    x = np.array([1.0, -2.0])
    check(lambda v: np.sum(copy.deepcopy([v, {"w": v * 2.0}])[1]["w"] ** 2), x)
    check(lambda v: np.sum(copy.copy(v) * v) + copy.deepcopy(v[0] * 3.0), x)

    def copied_in_place(v):
        w = copy.deepcopy(v)
        w *= 2.0  # the copy changes, not the argument
        return np.sum(w * v)

    check(copied_in_place, x)
    check(lambda v: np.sum(dataclasses.asdict(Polar(v[0], v[1]))["y"] * v), x)


def test_heapq_nsmallest_and_nlargest():
    def f(v):
        items = [v[0], v[1] * 3.0, v[2]]
        return sum(heapq.nsmallest(2, items)) + heapq.nlargest(1, items)[0]

    check(f, np.array([1.0, 2.0, 3.0]), [1.0, 3.0, 1.0])


def test_logging_inside_a_loss_is_quiet_and_sees_values(caplog):
    log = logging.getLogger("tests.user_loss")

    def loss(x):
        log.warning("x is %s", x)
        return x * x

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no engine warning about logging's internals
        with caplog.at_level(logging.WARNING, logger="tests.user_loss"):
            assert zp.gradient(loss, 3.0) == (6.0,)
    assert "x is 3.0" in caplog.text

