"""The inner sweep as an outer level traces it (reverse-over-reverse): the paths made lean for it.

A rule's pullback is called directly under outer levels (``_runtime.runs_as_it_is``); a lazy
cotangent of a traced argument is read when it is routed, and a constant's is never read;
``project``/``proj``/``fit`` hand back a value that already fits its primal on one comparison
(``_dispatch._fitting_pass_through``); ``mul`` of two real arrays and ``matmul`` with a vector
return thunks chosen at rrule time; a tuple's getitem pullback makes its zero entries by a
structural helper. Each is checked against central differences of the first derivative, or
against the general path it replaces.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from rulescore._fitting import fit, proj
from rulescore._projection import project
from rulescore.rules.contractions import matmul_grad
from zygotepy._dispatch import _fitting_pass_through, _pass_through
from zygotepy._runtime import runs_as_it_is, transformed
from zygotepy._trace import Box, Trace

RNG = np.random.default_rng(15)


@pytest.fixture(params=[False, True], ids=["unchecked", "checked"])
def checks(request: pytest.FixtureRequest):  # noqa: ANN201
    """Rule checks off (the tape holds the rules' own pullbacks: the direct calls) and on (each
    pullback wrapped by the checks: the dispatcher's calls)."""
    with rc.checking(request.param):
        yield request.param


def _hvp_ror(f, x, v):  # noqa: ANN001, ANN202
    return zp.gradient(lambda u: np.sum(zp.gradient(f, u)[0] * v), x)[0]


def _hvp_differences(f, x, v, h=1e-6):  # noqa: ANN001, ANN202
    g = lambda u: zp.gradient(f, u)[0]  # noqa: E731
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


@pytest.mark.parametrize("shape", [(3,), (4, 2)])
def test_hvp_through_a_product_with_a_constant_array(shape: tuple[int, ...], checks: bool) -> None:
    c = RNG.standard_normal(shape)
    x, v = RNG.standard_normal(shape), RNG.standard_normal(shape)

    def f(u: np.ndarray) -> float:
        return np.sum(c * u * np.tanh(u))  # c * u: a constant factor (its thunk is never read)

    np.testing.assert_allclose(_hvp_ror(f, x, v), _hvp_differences(f, x, v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("form", ["v@w", "A@v", "v@A"])
def test_hvp_through_matmul_with_a_vector(form: str, checks: bool) -> None:
    A = RNG.standard_normal((3, 3))
    x, v = RNG.standard_normal(3), RNG.standard_normal(3)
    f = {"v@w": lambda u: np.tanh(u) @ u,
         "A@v": lambda u: np.sum(np.sin(A @ u)),
         "v@A": lambda u: np.sum(np.sin(u @ A) * u)}[form]
    np.testing.assert_allclose(_hvp_ror(f, x, v), _hvp_differences(f, x, v), rtol=1e-6, atol=1e-8)
    forward = zp.jvp(lambda u: zp.gradient(f, u)[0], (x,), (v,))[1]  # forward over reverse too
    np.testing.assert_allclose(forward, _hvp_differences(f, x, v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shapes", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3))])
def test_vector_matmul_pullback_is_matmul_grads(shapes: tuple[tuple[int, ...], ...]) -> None:
    x, y = (RNG.standard_normal(s) for s in shapes)
    z, pullback = rc.rrule(np.matmul, x, y)
    zbar = RNG.standard_normal(np.shape(z))
    _, xbar, ybar = (rc.unthunk(c) for c in pullback(zbar))
    assert np.array_equal(xbar, matmul_grad(x, y, zbar, 0))  # the same products: bit-equal
    assert np.array_equal(ybar, matmul_grad(x, y, zbar, 1))


def test_a_constants_thunk_is_never_read() -> None:
    read = []

    def scale(c: np.ndarray, x: np.ndarray) -> np.ndarray:
        return c * x

    @rc.rrule.register(scale)
    def scale_rrule(c: np.ndarray, x: np.ndarray):  # noqa: ANN202
        def scale_pullback(ybar: np.ndarray):  # noqa: ANN202
            return rc.NoTangent(), rc.Thunk(lambda: read.append("c") or ybar * x), rc.Thunk(lambda: ybar * c)

        return c * x, scale_pullback

    c, x = np.array([2.0, 3.0]), np.array([1.0, -1.0])
    with rc.checking(False):  # (the rule checks read every cotangent)
        assert np.array_equal(zp.gradient(lambda u: np.sum(scale(c, u) ** 2), x)[0], 2 * c * c * x)
        assert read == []
        hvp = _hvp_ror(lambda u: np.sum(scale(c, u) ** 2), x, np.ones(2))
        assert read == []
    np.testing.assert_allclose(hvp, 2 * c * c)


def test_a_routed_thunk_of_the_wrong_shape_is_refused(checks: bool) -> None:
    def widen(x: np.ndarray) -> np.ndarray:
        return 2.0 * x

    @rc.rrule.register(widen)
    def widen_rrule(x: np.ndarray):  # noqa: ANN202
        return 2.0 * x, lambda ybar: (rc.NoTangent(), rc.Thunk(lambda: np.ones(x.size + 2)))

    x = np.ones(3)
    with pytest.raises(rc.RuleError, match="widen"):
        zp.gradient(lambda u: np.sum(widen(u)), x)
    with pytest.raises(rc.RuleError, match="widen"):  # the same check under an outer level
        zp.gradient(lambda u: np.sum(zp.gradient(lambda w: np.sum(widen(w) * w), u)[0]), x)


def test_hvp_through_an_entry_of_slogdets_tuple(checks: bool) -> None:
    K0 = np.eye(4) + 0.3 * np.ones((4, 4))
    theta, v = RNG.standard_normal(4) * 0.2, RNG.standard_normal(4)

    def f(t: np.ndarray) -> float:
        K = K0 + np.diag(np.exp(t))
        return 0.5 * np.linalg.slogdet(K)[1] + 0.5 * (t @ np.linalg.solve(K, t))

    np.testing.assert_allclose(_hvp_ror(f, theta, v), _hvp_differences(f, theta, v), rtol=1e-6, atol=1e-8)


VALUES = st.sampled_from([
    (np.zeros(3), np.ones(3)), (np.zeros((2, 2)), np.ones((2, 2))), (np.zeros(3), np.ones((2, 3))),
    (np.zeros(3, np.float32), np.ones(3)), (np.zeros(2, complex), np.ones(2)),
    (np.zeros(2), np.ones(2, complex)),
    (1.0, 2.0), (1.0, np.float64(2.0)), (np.float64(1.0), np.float64(2.0)), (np.float64(1.0), 2.0),
    (1.0, np.ones(3)), (np.zeros(()), np.ones(())), (np.zeros(2, int), np.ones(2, int)),
])


def _answer(handler, *args):  # noqa: ANN001, ANN202
    try:
        return handler(*args)
    except Exception as e:  # (a refusal is an answer too: the same one from both)
        return type(e)


@settings(max_examples=200, deadline=None)
@given(VALUES, st.sampled_from([project, proj, fit]), st.booleans(), st.booleans())
def test_fitting_pass_through_answers_as_the_plain_call(pair, fn, box_x: bool, box_d: bool) -> None:  # noqa: ANN001
    trace = Trace(())
    x, d = pair
    args = (Box(x, trace, 0) if box_x else x, Box(d, trace, 1) if box_d else d)
    got, general = _answer(_fitting_pass_through, fn, args), _answer(_pass_through, fn, args, 1)
    assert got is general or (type(got) is type(general) and np.array_equal(got, general))
    if got is args[1]:  # handed back: what the helper returns on the plain values
        assert fn(x, d) is d


def test_runs_as_it_is_only_for_rewritten_rule_code() -> None:
    args = (np.ones(2), np.ones(2))
    rrule = rc.rrule.lookup(operator.mul, args).impl
    _, pullback = transformed(rrule)(*args)  # as an outer level runs the rule: rewritten
    assert runs_as_it_is(pullback)  # a closure of rewritten code: its calls come back already
    _, plain = rrule(*args)  # the rule run as it is (a tape recorded before the outer level began)
    assert not runs_as_it_is(plain)  # rewritten when an outer level calls it: the dispatcher's
    assert np.array_equal(zp.gradient(lambda u: np.sum(zp.gradient(lambda w: np.sum(w * w * u), u)[0]),
                                      np.ones(2))[0], np.full(2, 4.0))  # d/du sum(2 u u)

    def user_function(x: float) -> float:
        return x

    assert not runs_as_it_is(user_function)  # rewritten before it runs: the dispatcher's
    assert not runs_as_it_is(np.sin) and not runs_as_it_is(rc.structural(lambda x: x))


def test_second_derivatives_through_a_difference_of_real_scalars(checks: bool) -> None:
    x, v = RNG.standard_normal(4), RNG.standard_normal(4)

    def f(u: np.ndarray) -> float:
        return np.sum(u ** 3) - 0.5 * np.sum(np.sin(u))  # NumPy float64s: sub's real-scalar pullback

    np.testing.assert_allclose(_hvp_ror(f, x, v), _hvp_differences(f, x, v), rtol=1e-6, atol=1e-8)
    second = zp.gradient(lambda a: zp.gradient(lambda b: np.sin(b) - b * b * 2.0, a)[0], 0.3)[0]
    assert type(second) is float  # a float's derivatives stay floats (the conversions of proj)
    np.testing.assert_allclose(second, -np.sin(0.3) - 4.0, rtol=1e-12)
