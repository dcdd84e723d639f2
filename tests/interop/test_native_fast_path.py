"""The exporters' native-tier fast path (issue 31, "every target at native speed"): the op of a call
on plain arrays is found by shapes and dtypes alone, the rule is looked up once per call and its
pullback called without the contract's wrapper. What the slower path gave must still hold: a rule
registered or replaced after ``wrap`` takes effect at the next call (its tier found again), and the
rule contract (zeros, thunks, dtypes, the count of cotangents) is kept, with errors naming the rule
and the function. Each case runs on PyTorch and on eager JAX; gradients are checked against the
rule's own formula or finite differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
from rulescore.interop._host import NativeTierWarning
from tests.zygotepy.finite_differences import fd

torch = pytest.importorskip("torch", reason="needs torch (the `torch` extra)")
jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore.interop.jax as rjax  # noqa: E402
import rulescore.interop.torch as rtorch  # noqa: E402


def _grad_torch(g, x):
    t = torch.tensor(x, requires_grad=True)
    g(t).sum().backward()
    return t.grad.numpy()


def _grad_jax(g, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(g(v)))(jnp.asarray(x)))


SYSTEMS = {"torch": (rtorch.wrap, _grad_torch), "jax": (rjax.wrap, _grad_jax)}


def _scaled_sin(scale):
    """A fresh function (so no test sees another's rules) and a native rrule scaling its derivative."""
    def wavy(x):
        return rc.array_namespace(x).sin(x)

    def register(factor):
        @rc.rrule.register(wavy)
        def wavy_rrule(x):
            xp = rc.array_namespace(x)

            def wavy_pullback(ybar):
                return rc.NoTangent(), factor * ybar * xp.cos(x)

            return wavy(x), wavy_pullback

    register(scale)
    return wavy, register


@settings(max_examples=8, deadline=None)
@given(system=st.sampled_from(sorted(SYSTEMS)), first=st.floats(0.5, 3.0), second=st.floats(0.5, 3.0),
       n=st.integers(1, 5))
def test_a_rule_replaced_after_wrap_takes_effect_at_the_next_call(system, first, second, n) -> None:
    wrap, grad = SYSTEMS[system]
    wavy, register = _scaled_sin(first)
    g = wrap(wavy)
    x = np.linspace(0.1, 1.0, n)
    np.testing.assert_allclose(grad(g, x), first * np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(grad(g, x), first * np.cos(x), rtol=1e-12)  # the op found by shapes
    register(second)
    np.testing.assert_allclose(grad(g, x), second * np.cos(x), rtol=1e-12)
    assert g.tier == "native"


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_a_native_rule_replaced_by_a_numpy_one_moves_to_the_host_tier_and_back(system) -> None:
    wrap, grad = SYSTEMS[system]
    wavy, register = _scaled_sin(1.0)
    g = wrap(wavy)
    x = np.array([0.2, 0.9, 1.4])
    np.testing.assert_allclose(grad(g, x), np.cos(x), rtol=1e-12)
    assert g.tier == "native"

    @rc.rrule.register(wavy)
    def wavy_numpy_rrule(x):  # NumPy only: its pullback cannot run on the system's arrays
        def wavy_numpy_pullback(ybar):
            return rc.NoTangent(), 3.0 * np.asarray(ybar) * np.cos(np.asarray(x))

        return np.sin(np.asarray(x)), wavy_numpy_pullback

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NativeTierWarning)  # wavy runs natively, its new rule does not
        np.testing.assert_allclose(grad(g, x), 3.0 * np.cos(x), rtol=1e-12)
    assert g.tier == "host"
    register(2.0)
    np.testing.assert_allclose(grad(g, x), 2.0 * np.cos(x), rtol=1e-12)
    assert g.tier == "native"


def _rule_with_pullback(make_cotangent):
    """A fresh ``cube`` whose native pullback returns ``make_cotangent(xp, x, ybar)`` for ``x``."""
    def cube(x):
        return x * x * x

    @rc.rrule.register(cube)
    def cube_rrule(x):
        xp = rc.array_namespace(x)

        def cube_pullback(ybar):
            return rc.NoTangent(), make_cotangent(xp, x, ybar)

        return cube(x), cube_pullback

    return cube


# the cotangents a pullback may return under the contract, and the gradient the system must see
CONTRACT_CASES = {
    "an array": (lambda xp, x, ybar: 3 * ybar * x * x, lambda x: 3 * x * x),
    "a thunk": (lambda xp, x, ybar: rc.Thunk(lambda: 3 * ybar * x * x), lambda x: 3 * x * x),
    "ZeroTangent": (lambda xp, x, ybar: rc.ZeroTangent(), lambda x: 0 * x),
    "NoTangent": (lambda xp, x, ybar: rc.NoTangent(), lambda x: 0 * x),
    "a sum of zeros and an array": (lambda xp, x, ybar: rc.ZeroTangent() + 3 * ybar * x * x + rc.NoTangent(),
                                    lambda x: 3 * x * x),
}


@pytest.mark.parametrize("system", sorted(SYSTEMS))
@pytest.mark.parametrize("case", sorted(CONTRACT_CASES))
def test_the_fast_path_keeps_the_rule_contract(system, case) -> None:
    wrap, grad = SYSTEMS[system]
    make_cotangent, want = CONTRACT_CASES[case]
    g = wrap(_rule_with_pullback(make_cotangent))
    x = np.array([0.5, -1.25, 2.0])
    for _ in range(2):  # the first call finds the op, the second takes the fast path
        got = grad(g, x)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want(x), rtol=1e-6)
    assert g.tier == "native"


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_the_fast_path_gradient_matches_finite_differences(system) -> None:
    wrap, grad = SYSTEMS[system]
    cube = _rule_with_pullback(CONTRACT_CASES["an array"][0])
    g = wrap(cube)
    x = np.array([0.3, -0.7, 1.1, 2.0])
    for _ in range(2):
        np.testing.assert_allclose(grad(g, x), fd(lambda v: float(np.sum(v ** 3)), x), rtol=1e-6)


@pytest.mark.parametrize("system", sorted(SYSTEMS))
@pytest.mark.parametrize("count", [1, 3])
def test_a_pullback_returning_the_wrong_count_is_an_error_naming_the_rule(system, count) -> None:
    """The pullback goes wrong only after the op was found and used (the native tier's trial on
    abstract values would otherwise refuse it first): the fast path itself must catch it."""
    wrap, grad = SYSTEMS[system]
    broken = [False]

    def lopsided(x):
        return rc.array_namespace(x).exp(x)

    @rc.rrule.register(lopsided)
    def lopsided_rrule(x):
        xp = rc.array_namespace(x)

        def lopsided_pullback(ybar):
            return (rc.NoTangent(), ybar * xp.exp(x), ybar)[:count] if broken[0] else \
                (rc.NoTangent(), ybar * xp.exp(x))

        return lopsided(x), lopsided_pullback

    g = wrap(lopsided)
    x = np.array([0.1, 0.2])
    for _ in range(2):
        np.testing.assert_allclose(grad(g, x), np.exp(x), rtol=1e-12)
    broken[0] = True
    for _ in range(2):
        with pytest.raises(rc.RuleError, match=r"lopsided.*expected 2"):
            grad(g, x)
    assert g.tier == "native"


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_an_rrule_returning_no_pair_is_an_error_naming_the_rule(system) -> None:
    wrap, grad = SYSTEMS[system]

    def pairless(x):
        return rc.array_namespace(x).tanh(x)

    @rc.rrule.register(pairless)
    def pairless_rrule(x):
        return pairless(x)  # the pullback forgotten

    with pytest.raises((rc.RuleError, TypeError), match="pairless"):
        grad(wrap(pairless, native=True), np.array([0.1, 0.2]))


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_a_bound_method_without_rules_of_its_own_uses_its_functions_rule(system) -> None:
    """The path the fast lookup does not cover (``rrule`` unbinds the method) still works."""
    wrap, grad = SYSTEMS[system]

    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return self.k * rc.array_namespace(x).sin(x)

    @rc.rrule.register(Scaler.apply)
    def apply_rrule(self, x):
        xp = rc.array_namespace(x)
        return self.apply(x), lambda ybar: (rc.NoTangent(), rc.NoTangent(), self.k * ybar * xp.cos(x))

    g = wrap(Scaler(2.5).apply)
    x = np.array([0.4, 1.3])
    for _ in range(2):
        np.testing.assert_allclose(grad(g, x), 2.5 * np.cos(x), rtol=1e-12)


def _closure_values(fn, depth=3):
    """The values a function's closure holds, through the closures of the functions it holds."""
    found = []
    for cell in getattr(fn, "__closure__", None) or ():
        value = cell.cell_contents
        found.append(value)
        if depth and callable(value):
            found += _closure_values(value, depth - 1)
    return found


@pytest.mark.parametrize("system", ["torch", "jax"])
@pytest.mark.parametrize(("f", "reads_output"), [(np.sin, False), (np.cos, False), (np.multiply, False),
                                                 (np.exp, True), (np.tanh, True), (np.sqrt, True)])
def test_a_partials_pullback_keeps_the_output_only_when_its_partials_read_it(system, f, reads_output) -> None:
    """What a hand-written backward saves: the inputs, and the output only for derivatives written
    with it (exp, tanh, sqrt); then its gradient is the partial's."""
    x = np.array([0.3, 0.8, 1.7])
    array = torch.tensor(x) if system == "torch" else jnp.asarray(x)
    args = (array, array) if f is np.multiply else (array,)
    y, back = rc.rrule(f, *args)
    held = [v for value in _closure_values(back) for v in (value if type(value) is tuple else (value,))]
    assert any(v is y for v in held) is reads_output
    assert any(v is array for v in held) or f in (np.exp, np.tanh, np.sqrt)
    grads = back(torch.ones(3, dtype=torch.float64) if system == "torch" else jnp.ones(3))[1:]
    want = {np.sin: [np.cos(x)], np.cos: [-np.sin(x)], np.multiply: [x, x], np.exp: [np.exp(x)],
            np.tanh: [1 - np.tanh(x) ** 2], np.sqrt: [0.5 / np.sqrt(x)]}[f]
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12)
