"""Forward mode: jvp and pushforward against finite differences and against jacobian @ v for each
rule family; batched tangents; refusals."""

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.families import FAMILIES

RNG = np.random.default_rng(7)


def central_difference(f, x, v, h=1e-6):
    return (np.asarray(f(x + h * v)) - np.asarray(f(x - h * v))) / (2 * h)


@pytest.mark.parametrize("name, f, x", FAMILIES, ids=[n for n, _, _ in FAMILIES])
def test_jvp_matches_finite_differences_and_reverse_jacobian(name, f, x):
    v = RNG.normal(size=np.shape(x)) if np.ndim(x) else 1.0
    y, ydot = zp.jvp(f, (x,), (v,))
    np.testing.assert_allclose(y, f(x), rtol=1e-12)
    np.testing.assert_allclose(ydot, central_difference(f, x, v), rtol=1e-5, atol=1e-6)
    (J,) = zp.jacobian(f, x, mode="reverse")
    Jv = np.tensordot(J, v, axes=np.ndim(x)) if np.ndim(x) else J * v
    np.testing.assert_allclose(ydot, Jv, rtol=1e-9, atol=1e-12)
    (J_forward,) = zp.jacobian(f, x, mode="forward", chunk=2)
    np.testing.assert_allclose(J_forward, J, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, f, x", FAMILIES, ids=[n for n, _, _ in FAMILIES])
def test_batched_tangents_agree_with_one_direction_at_a_time(name, f, x):
    """All directions in one pass (rulescore.Batched tangents) vs one direction per pass (never batched)."""
    (J_one,) = zp.jacobian(f, x, mode="forward", chunk=1)
    (J_all,) = zp.jacobian(f, x, mode="forward", chunk=max(int(np.size(x)), 2))
    np.testing.assert_allclose(J_all, J_one, rtol=1e-12, atol=1e-14)

    def loss(v):
        return np.sum(np.abs(f(v)) ** 2)

    np.testing.assert_allclose(zp.hessian(loss, x), zp.hessian_reverse(loss, x), rtol=1e-8, atol=1e-10)


def test_batchable_frules_run_once_per_pass_and_the_others_fall_back():
    calls = {"batchable": 0, "per_direction": 0}

    def twice_sin(x):
        return 2.0 * np.sin(x)

    def thrice_sin(x):
        return 3.0 * np.sin(x)

    @rc.frule.register(twice_sin)
    def _(tangents, x):
        calls["batchable"] += 1
        return twice_sin(x), 2.0 * np.cos(x) * tangents[1]

    @rc.frule.register(thrice_sin)
    def _(tangents, x):  # float() of a tangent entry: cannot take batched tangents
        calls["per_direction"] += 1
        xdot = tangents[1]
        return thrice_sin(x), np.array([3.0 * np.cos(v) * float(t) for v, t in zip(x, xdot, strict=True)])

    x = np.array([0.1, 0.5, -1.0, 2.0])
    (J,) = zp.jacobian(lambda v: twice_sin(v) + thrice_sin(v), x, mode="forward", chunk=4)
    np.testing.assert_allclose(J, np.diag(5.0 * np.cos(x)), rtol=1e-14)
    assert calls == {"batchable": 1, "per_direction": 1 + 4}


def window(x, index, shape, dtype):
    return np.reshape(x[index], shape).astype(dtype)


@rc.frule.register(window)
def window_frule(tangents, x, index, shape, dtype):
    WINDOW_CALLS.append(type(tangents[1]))
    return window(x, index, shape, dtype), np.reshape(tangents[1][index], shape).astype(dtype)


WINDOW_CALLS: list[type] = []


def test_indices_shapes_and_dtypes_do_not_stop_batching():
    """Arguments holding no traced value (a slice, a tuple of them, a shape, a dtype) have no
    tangent in any direction: the frule still runs once for all directions."""
    WINDOW_CALLS.clear()
    x = np.arange(1.0, 7.0)
    (J,) = zp.jacobian(lambda v: window(v, (slice(1, None),), (5, 1), np.dtype(np.float64)), x,
                       mode="forward")
    np.testing.assert_array_equal(J, np.eye(6)[1:].reshape(5, 1, 6))
    assert WINDOW_CALLS == [rc.Batched]


def scaled_copy(x, s):
    return x * 2.0


def scaled_copy_frule(tangents, x, s):
    SCALED_COPY_CALLS.append(tangents)
    return scaled_copy(x, s), 2.0 * tangents[1]


rc.frule.register_kind(scaled_copy, (), scaled_copy_frule, wrt=(0,))
rc.rrule.register(scaled_copy)(  # an rrule too: jvp's fast path takes callables with both
    lambda x, s: (scaled_copy(x, s), lambda ybar: (rc.NoTangent(), 2.0 * ybar, 0.0)))
SCALED_COPY_CALLS: list[tuple] = []


@pytest.mark.parametrize("checks", [True, False], ids=["checked", "fast path"])
def test_a_tangent_only_where_the_frule_does_not_differentiate_gives_zero_without_calling_it(checks):
    """The rule contract (``wrt``) holds with and without checking mode (which jvp's fast path,
    taken only without it, must keep too): ``s`` is not differentiated."""
    SCALED_COPY_CALLS.clear()
    with rc.checking(checks):
        _, tangent = zp.jvp(lambda s: scaled_copy(np.ones(2), s), (1.0,), (1.0,))
        np.testing.assert_array_equal(tangent, np.zeros(2))
        assert SCALED_COPY_CALLS == []
        _, tangent = zp.jvp(lambda x: scaled_copy(x, 3.0), (np.ones(2),), (np.ones(2),))
    np.testing.assert_array_equal(tangent, [2.0, 2.0])
    assert len(SCALED_COPY_CALLS) == 1


@pytest.mark.parametrize("name, f, x", FAMILIES, ids=[n for n, _, _ in FAMILIES])
def test_the_unchecked_fast_paths_agree_with_checking_mode(name, f, x):
    """jvp's first-order fast path and the batched Hessian run only without checking mode (the
    suite's default is on): their answers must be the checked ones, bit for bit."""
    v = RNG.normal(size=np.shape(x)) if np.ndim(x) else 1.0

    def loss(u):
        return np.sum(np.abs(f(u)) ** 2)

    def hvp(u):
        return zp.jvp(lambda w: zp.gradient(loss, w)[0], (u,), (v,))[1]

    checked = zp.jvp(f, (x,), (v,)), zp.hessian(loss, x), hvp(x)
    with rc.checking(False):
        fast = zp.jvp(f, (x,), (v,)), zp.hessian(loss, x), hvp(x)
    for got, expected in zip(rc.tree_flatten(fast)[0], rc.tree_flatten(checked)[0], strict=True):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("checks", [True, False], ids=["checked", "fast path"])
def test_jvp_through_shapes_names_and_comparisons(checks):
    """Constants that are not numbers (a shape tuple, an attribute name) and non-differentiable
    calls (comparisons, hasattr) on traced values, as rule bodies traced by jvp make them."""
    def f(x):
        m = np.reshape(x, (2, 2)) * (x.reshape((2, 2)) > 0.0)
        return np.sum(m * m) if hasattr(x, "shape") and bool(np.all(x == x)) else x

    x, v = np.array([1.0, -2.0, 3.0, 0.5]), np.array([0.3, 1.0, -1.0, 2.0])
    with rc.checking(checks):
        y, tangent = zp.jvp(f, (x,), (v,))
    assert y == f(x)
    np.testing.assert_allclose(tangent, np.sum(2.0 * x * (x > 0) * v), rtol=1e-14)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    h = np.zeros((len(x), len(x)))
    i = np.arange(len(x) - 1)
    h[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * x[:-1]
    return h


def test_hessian_through_slices_and_sums_in_one_batched_pass_matches_the_closed_form():
    x = RNG.normal(size=7)
    for chunk in (128, 3):
        np.testing.assert_allclose(zp.hessian(rosenbrock, x, chunk=chunk), rosenbrock_hessian(x),
                                   rtol=1e-12, atol=1e-10)


def test_an_frule_error_is_raised_not_swallowed_by_batching():
    def fragile(x):
        return x * 1.0

    @rc.frule.register(fragile)
    def _(tangents, x):
        raise ValueError("fragile has no derivative here")

    with pytest.raises(ValueError, match="fragile has no derivative here"):
        zp.jacobian(fragile, np.ones(3), mode="forward")


def test_pushforward_and_structures():
    @dataclass
    class P:
        a: float
        b: float

    assert zp.pushforward(lambda p: p.a * p.b, P(2.0, 3.0))(rc.Tangent[P](a=1.0, b=0.0)) == 3.0
    y, ydot = zp.jvp(lambda t: t[0] * t[1], ((2.0, 3.0),), ((1.0, 1.0),))
    assert (y, ydot) == (6.0, 5.0)


def test_rrule_without_frule_is_refused():
    def only_reverse(x):
        return x

    rc.rrule.register(only_reverse)(lambda x: (x, lambda g: (rc.NoTangent(), g)))
    only_reverse_c = np.frompyfunc(lambda v: v, 1, 1)  # compiled, no rules at all
    with pytest.raises(zp.UntraceableError):
        zp.jvp(lambda x: only_reverse_c(x), (1.0,), (1.0,))
    # a Python function with only an rrule is differentiated through in forward mode: exact
    assert zp.jvp(only_reverse, (2.0,), (3.0,)) == (2.0, 3.0)




























def test_traced_keyword_arguments_bind_to_their_positions_in_forward_mode_as_in_reverse():
    c = np.array([1.0, 2.0, 3.0])
    expected = np.array([1.0, 0.0, 0.0])  # lo = 1.5 clips only the first entry
    _, tangent = zp.jvp(lambda lo: np.clip(c, a_min=lo, a_max=10.0), (1.5,), (1.0,))
    np.testing.assert_allclose(tangent, expected)
    np.testing.assert_allclose(zp.jacobian(lambda lo: np.clip(c, a_min=lo, a_max=10.0), 1.5, mode="forward"),
                               [expected])
    assert zp.gradient(lambda lo: np.sum(np.clip(c, a_min=lo, a_max=10.0)), 1.5) == (1.0,)


def scaled(x, *, s=1.0):
    return x * s


@rc.rrule.register(scaled)
def scaled_rrule(x, **kwargs):
    s = kwargs.get("s", 1.0)

    def scaled_pullback(ybar):
        return rc.NoTangent(), ybar * s

    return scaled(x, s=s), scaled_pullback


@rc.frule.register(scaled)
def scaled_frule(tangents, x, **kwargs):
    return scaled(x, **kwargs), tangents[1] * kwargs.get("s", 1.0)


def test_traced_keyword_only_arguments_are_refused_in_forward_mode_as_in_reverse():
    """A rule's keyword-only parameter not declared positional (rc.declare_parameters) has no
    slot for its cotangent or tangent: refused in both modes, naming it."""
    c = np.array([1.0, 2.0, 3.0])
    for run in (lambda: zp.jvp(lambda s: scaled(c, s=s), (1.5,), (1.0,)),
                lambda: zp.gradient(lambda s: np.sum(scaled(c, s=s)), 1.5)):
        with pytest.raises(zp.UntraceableError, match="argument 's', which is not one of its positional"):
            run()


def test_frule_arguments_with_slots_and_shared_entries():
    @dataclass(slots=True)
    class Weights:
        w: float

    def energy(p, x):
        return p.w * x + x ** 2

    @rc.frule.register(energy)
    def _(tangents, p, x):
        pdot, xdot = rc.unthunk(tangents[1]), rc.unthunk(tangents[2])
        ydot = 0.0 if rc.is_zero(xdot) else (p.w + 2 * x) * xdot
        return energy(p, x), ydot if rc.is_zero(pdot) else ydot + pdot.w * x

    assert zp.jvp(lambda w: energy(Weights(w), 3.0), (2.0,), (1.0,)) == (15.0, 3.0)
    (J,) = zp.jacobian(lambda v: energy(Weights(v[0]), v[1]), np.array([2.0, 3.0]), mode="forward", chunk=2)
    np.testing.assert_allclose(J, [3.0, 8.0])

    def shared(v):
        row = [v[0], v[1] * 3]
        return np.array([row, row])  # one list twice: not a cycle

    x = np.array([1.0, 2.0])
    expected = np.array([[[1.0, 0.0], [0.0, 3.0]]] * 2)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(zp.jacobian(shared, x, mode=mode)[0], expected)




# -- nested forward levels (issue 30): derivatives of derivatives through the fast paths ------------
# Nested ``jvp`` runs every rule's frule body at the outer levels (``_apply_forward_nested``); a call
# whose arguments are traced only by an outer level is that level's. Each case is checked against
# HIPS autograd (an independent implementation), order by order.
def _compositions(np_, sp_):
    return [
        lambda x: sp_.erf(np_.sin(x)) * np_.exp(-0.5 * x * x) + sp_.expit(np_.tanh(x)),
        lambda x: sp_.gammaln(1.0 + x * x) + np_.log1p(np_.exp(-x)) * sp_.erf(x),
        lambda x: x ** 3 / (1.0 + x ** 2) - np_.cos(2.0 * x) * np_.log(2.0 + np_.sin(x)),
        lambda x: np_.sqrt(1.0 + x * x) * np_.arctan(x) + np_.sinh(0.5 * x) ** 2,
    ]


# Tiny nonzero x (1e-300) is left out: a squared term's fourth derivative goes through pow's rule
# with exponent 0, whose `0 * x ** -1` overflows there (a separate matter of the pow rule).
def _nested_jvp(f, order):
    derivatives = []
    for _ in range(order):
        f = (lambda g: lambda v: zp.jvp(g, (v,), (np.ones_like(v) if np.ndim(v) else 1.0,))[1])(f)
        derivatives.append(f)
    return derivatives


@pytest.mark.parametrize("which", range(4))
@settings(max_examples=4, deadline=None)
@given(x=st.floats(-1.5, 1.5).filter(lambda v: v == 0 or abs(v) > 1e-100))  # (tiny x: see below)
def test_derivatives_1_to_4_by_nested_jvp_match_autograd(which, x):
    autograd = pytest.importorskip("autograd")
    anp, asp = pytest.importorskip("autograd.numpy"), pytest.importorskip("autograd.scipy.special")
    ours, theirs = _compositions(np, scipy.special)[which], _compositions(anp, asp)[which]
    xs = np.array([x, 0.3 - x, 1.1])
    for order, derivative in enumerate(_nested_jvp(ours, 4), start=1):
        theirs = autograd.elementwise_grad(theirs)
        expected = theirs(xs)
        np.testing.assert_allclose(derivative(xs), expected, rtol=1e-9, atol=1e-10, err_msg=f"order {order}")
        np.testing.assert_allclose(derivative(x), expected[0], rtol=1e-9, atol=1e-10,
                                   err_msg=f"order {order}")


def _mixed(x, y):
    # terms in x alone (traced by the outer level only), in y alone, and in both
    return np.sin(x) * y ** 2 + np.exp(x) * np.tanh(x) + np.log1p(y * y) + 3.0 * x


def _mixed_xy(x, y):  # d2/dx dy of _mixed
    return 2.0 * y * np.cos(x)


@pytest.mark.parametrize("outer", ["jvp", "gradient"])
def test_a_mixed_partial_with_terms_only_the_outer_level_traces(outer):
    x, y = 0.7, -1.3

    def inner(u):
        return zp.jvp(lambda w: _mixed(u, w), (y,), (1.0,))[1]  # d/dy, u traced by the outer level

    got = zp.jvp(inner, (x,), (1.0,))[1] if outer == "jvp" else zp.gradient(inner, x)[0]
    assert got == pytest.approx(_mixed_xy(x, y), rel=1e-12)
    # the same in the other order, and on arrays (element-wise)
    xs, ys = np.array([0.1, -0.4, 1.2]), np.array([0.5, 2.0, -0.3])
    ones = np.ones(3)
    swapped = zp.jvp(lambda w: zp.jvp(lambda u: _mixed(u, w), (xs,), (ones,))[1], (ys,), (ones,))[1]
    np.testing.assert_allclose(swapped, _mixed_xy(xs, ys), rtol=1e-12)


@pytest.mark.parametrize("which", range(4))
def test_third_derivative_mixing_forward_and_reverse_levels(which):
    autograd = pytest.importorskip("autograd")
    anp, asp = pytest.importorskip("autograd.numpy"), pytest.importorskip("autograd.scipy.special")
    ours, theirs = _compositions(np, scipy.special)[which], _compositions(anp, asp)[which]
    x = 0.4
    expected = autograd.grad(autograd.grad(autograd.grad(theirs)))(x)
    second_fwd_rev = lambda u: zp.jvp(lambda w: zp.gradient(ours, w)[0], (u,), (1.0,))[1]  # noqa: E731
    second_rev_fwd = lambda u: zp.gradient(lambda w: zp.jvp(ours, (w,), (1.0,))[1], u)[0]  # noqa: E731
    for second in (second_fwd_rev, second_rev_fwd):
        assert zp.jvp(second, (x,), (1.0,))[1] == pytest.approx(expected, rel=1e-9)
        assert zp.gradient(second, x)[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("power", [1, 2, 3, 4, 5.0])
@pytest.mark.parametrize("mode", ["jvp", "gradient"])
def test_higher_derivatives_of_a_power_at_zero(power, mode):
    """x ** n at x = 0: the first derivative's value there is a limit, which must keep depending on
    x (the rule once returned the constant, so the third derivative of x ** 3 at 0 came out 0)."""
    import math

    def step(g):
        if mode == "jvp":
            return lambda v: zp.jvp(g, (v,), (1.0,))[1]
        return lambda v: zp.gradient(g, v)[0]

    f = lambda x: x ** power  # noqa: E731
    # (a gradient of a constant is None, which gradient cannot differentiate again: orders up to n)
    for order in range(1, (4 if mode == "jvp" else int(power)) + 1):
        f = step(f)
        n = int(power)
        expected = math.factorial(n) / math.factorial(n - order) * 0.0 ** (n - order) if order <= n else 0.0
        assert (f(0.0) or 0.0) == pytest.approx(expected, abs=1e-12), order
        assert (f(np.float64(0.0)) or 0.0) == pytest.approx(expected, abs=1e-12), order


def test_frules_registered_after_the_fast_path_cached_one_take_effect():
    """jvp's fast path keeps a callable's sole frule until the frule table changes: a second frule
    (for floats only, next to the first) is used at the next call, the first still on arrays."""

    def cube(x):
        return x * x * x

    rc.rrule.register(cube)(lambda x: (cube(x), lambda g: (rc.NoTangent(), 3 * x * x * g)))
    rc.frule.register(cube)(lambda dots, x: (cube(x), 30.0 * dots[1]))
    assert zp.jvp(cube, (2.0,), (1.0,))[1] == 30.0  # the sole frule, now cached by the fast path
    assert zp.jvp(cube, (2.0,), (1.0,))[1] == 30.0
    rc.frule.register(cube, float)(lambda dots, x: (cube(x), 40.0 * dots[1]))
    assert zp.jvp(cube, (2.0,), (1.0,))[1] == 40.0  # two frules: looked up by type
    np.testing.assert_array_equal(zp.jvp(cube, (np.ones(2),), (np.ones(2),))[1], [30.0, 30.0])


def blend(x, y, z=1.0):
    return x * np.cos(y) + z * y


BLEND_TANGENTS: list[tuple] = []


def blend_frule(dots, x, y, z=1.0):
    """Without ``zero_tangents``: a float argument with no tangent arrives as zeros of its shape."""
    BLEND_TANGENTS.append(tuple(type(d).__name__ for d in dots[1:]))
    _, dx, dy, *dz = dots
    dz = dz[0] if dz else 0.0
    return blend(x, y, z), dx * np.cos(y) - x * np.sin(y) * dy + dz * y + z * dy


rc.frule.register_kind(blend, (), blend_frule, zero_tangents=False)
rc.rrule.register(blend)(  # an rrule too: jvp's fast path takes callables with both
    lambda x, y, z=1.0: (blend(x, y, z), lambda g: (rc.NoTangent(), g * np.cos(y),
                                                     g * (z - x * np.sin(y)), g * y)))


@pytest.mark.parametrize("checks", [False, True], ids=["fast path", "checked"])
@pytest.mark.parametrize("where", ["first", "second", "both", "three", "nested"])
def test_the_fast_paths_argument_forms_keep_the_frule_contract(where, checks):
    """jvp's fast path reads one, two and more arguments each its own way: whichever way, an frule
    registered without ``zero_tangents`` gets zeros of the shape for a float constant, never a
    ``ZeroTangent``, and the tangent matches finite differences."""
    c = np.array([0.3, -1.2])
    f = {"first": lambda t: blend(t, c), "second": lambda t: blend(c, t), "both": lambda t: blend(t, t * t),
         "three": lambda t: blend(t, c, 2.5),
         "nested": lambda t: zp.jvp(lambda s: blend(s, c * t), (t,), (np.ones(2),))[1]}[where]
    x, v = np.array([0.7, 1.9]), np.array([1.0, -0.5])
    BLEND_TANGENTS.clear()
    with rc.checking(checks):
        _, tangent = zp.jvp(f, (x,), (v,))
    np.testing.assert_allclose(tangent, central_difference(f, x, v), rtol=1e-6, atol=1e-8)
    assert BLEND_TANGENTS and all("ZeroTangent" not in seen for seen in BLEND_TANGENTS)


def test_a_rule_changed_after_the_fast_path_kept_it_is_the_one_applied():
    """The fast path keeps, per callable, its frule and whether it takes the found tangents as they
    are, until a table changes: a rule re-registered with another contract (``wrt``) applies next."""

    def shifted(x, y):
        return x + 2.0 * y

    rc.rrule.register(shifted)(lambda x, y: (shifted(x, y), lambda g: (rc.NoTangent(), g, 2.0 * g)))
    rc.frule.register(shifted)(lambda dots, x, y: (shifted(x, y), dots[1] + 2.0 * dots[2]))
    assert zp.jvp(lambda t: shifted(t, t), (1.0,), (1.0,))[1] == 3.0
    assert zp.jvp(lambda t: shifted(t, t), (1.0,), (1.0,))[1] == 3.0  # (from the kept entry)
    rc.frule.register_kind(shifted, (), lambda dots, x, y: (shifted(x, y), dots[1]), wrt=(0,))
    assert zp.jvp(lambda t: shifted(t, t), (1.0,), (1.0,))[1] == 1.0
    assert zp.jvp(lambda t: shifted(1.0, t), (1.0,), (1.0,))[1] == 0.0  # y only: no tangent by the rule


@pytest.mark.parametrize("outer", ["gradient", "jvp"])
def test_a_nested_tangent_written_in_place_by_the_caller_changes_nothing_else(outer):
    """An inner jvp hands its tangent to code an outer level traces as that level's value, not a
    copy: writes into it there (in place, by index, by out=) are traced as new values, so the
    inner result, the outer derivative and the outermost gradient (the user's own array) are right."""
    w = np.array([0.4, -1.3, 2.2])

    def f(x):
        t = zp.jvp(lambda u: np.sin(u) * u, (x,), (w,))[1]
        kept = t * 1.0
        t += 1.0
        t[0] = 3.0 * t[0]
        np.multiply(t, x, out=t)
        return np.sum(t * t) + np.sum(kept)

    x = np.array([0.9, -0.2, 1.4])
    if outer == "gradient":
        (g,) = zp.gradient(f, x)
        fd = np.array([central_difference(f, x, e) for e in np.eye(3)])
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
        assert g.flags.writeable and g.base is None
    else:
        v = np.array([1.0, 0.5, -2.0])
        _, tangent = zp.jvp(f, (x,), (v,))
        np.testing.assert_allclose(tangent, central_difference(f, x, v), rtol=1e-6, atol=1e-8)
