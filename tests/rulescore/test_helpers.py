"""``scalar_rule``, ``non_differentiable`` and ``ignore_derivatives``."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc

moderate = st.floats(-3.0, 3.0, allow_nan=False)


def central_difference(f, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (f(*up) - f(*down)) / (2 * h)


# -- scalar_rule: one argument ---------------------------------------------------------------


def softplus(x):
    return np.log1p(np.exp(x))


rc.scalar_rule(softplus, lambda x: 1 / (1 + np.exp(-x)))


@settings(max_examples=50, deadline=None)
@given(x=moderate, ybar=moderate)
def test_scalar_rule_one_argument_matches_finite_differences(x, ybar):
    y, back = rc.rrule(softplus, x)
    assert y == softplus(x)
    fbar, xbar = back(ybar)
    assert fbar is rc.NoTangent()
    assert xbar == pytest.approx(ybar * central_difference(softplus, (x,), 0), abs=1e-6)
    assert rc.frule((rc.NoTangent(), ybar), softplus, x)[1] == pytest.approx(xbar, abs=1e-12)


def test_scalar_rule_gives_int_inputs_float_cotangents():
    _, back = rc.rrule(softplus, 0)
    xbar = back(1.0)[1]
    assert type(xbar) is float and xbar == 0.5


def test_scalar_rule_pullback_is_named_after_the_function():
    _, back = rc.rrule(softplus, 0.0)
    assert back.__name__ == "softplus_pullback"
    (rule,) = rc.rrule.rules_for(softplus)
    assert rule.impl.__name__ == "softplus_rrule"
    assert rc.frule.rules_for(softplus)[0].impl.__name__ == "softplus_frule"


class CountingExp:
    """exp that counts its calls, to show ``result`` reuses the primal output."""

    calls = 0

    def __call__(self, x):
        CountingExp.calls += 1
        return np.exp(x)


counting_exp = CountingExp()
rc.scalar_rule(counting_exp, lambda x, result: result)


def test_partials_with_result_receive_the_primal_output():
    CountingExp.calls = 0
    y, back = rc.rrule(counting_exp, 1.0)
    assert back(2.0)[1] == pytest.approx(2 * np.e)
    assert CountingExp.calls == 1  # the partial used `result`, not another exp
    assert rc.frule((None, 1.0), counting_exp, 0.0) == (1.0, 1.0)


@pytest.mark.parametrize("ybar", [None, rc.ZeroTangent(), rc.NoTangent()])
def test_zero_cotangent_gives_zero_cotangents_without_computing_partials(ybar):
    calls = []

    def shifted(x, y):
        return x + y

    rc.scalar_rule(shifted, lambda x, y: calls.append(1) or (1.0, 1.0))
    _, back = rc.rrule(shifted, 1.0, 2.0)
    assert back(ybar) == (rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent())
    assert calls == []


def test_thunk_cotangent_is_unthunked():
    _, back = rc.rrule(softplus, 0.0)
    assert back(rc.Thunk(lambda: 4.0))[1] == 2.0


# -- scalar_rule: several arguments ----------------------------------------------------------


def poly(x, y):
    return x * x * y + 3 * y


rc.scalar_rule(poly, lambda x, y: (2 * x * y, x * x + 3))


@settings(max_examples=50, deadline=None)
@given(x=moderate, y=moderate, xdot=moderate, ydot=moderate)
def test_scalar_rule_several_arguments(x, y, xdot, ydot):
    out, back = rc.rrule(poly, x, y)
    assert out == poly(x, y)
    _, xbar, ybar = back(1.0)
    assert xbar == pytest.approx(central_difference(poly, (x, y), 0), abs=1e-5)
    assert ybar == pytest.approx(central_difference(poly, (x, y), 1), abs=1e-5)
    # the frule is the same derivative contracted the other way
    _, out_dot = rc.frule((None, xdot, ydot), poly, x, y)
    assert out_dot == pytest.approx(xbar * xdot + ybar * ydot, abs=1e-9)


def test_frule_with_a_tangent_for_only_one_argument():
    assert rc.frule((None, None, 1.0), poly, 2.0, 5.0) == (poly(2.0, 5.0), 7.0)
    assert rc.frule((None, rc.ZeroTangent(), None), poly, 2.0, 5.0) == (poly(2.0, 5.0), rc.ZeroTangent())


def test_scalar_rule_restricted_to_types():
    def halve(x):
        return x / 2

    rc.scalar_rule(halve, lambda x: 0.5, float)
    assert rc.rrule(halve, 1.0) is not None
    assert rc.rrule(halve, np.ones(2)) is None


# -- scalar_rule: arrays ---------------------------------------------------------------------


def weighted(x, w):
    return np.multiply(x, w)


rc.scalar_rule(weighted, lambda x, w: (w, x))


@settings(max_examples=30, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), data=st.data())
def test_scalar_rule_on_arrays_sums_broadcast_dimensions(shapes, data):
    sx, sw = shapes.input_shapes
    small_ints = st.integers(-5, 5)
    x = data.draw(hnp.arrays(np.float64, sx, elements=small_ints))
    w = data.draw(hnp.arrays(np.float32, sw, elements=small_ints))
    y, back = rc.rrule(weighted, x, w)
    ybar = np.ones(y.shape)
    _, xbar, wbar = back(ybar)
    assert xbar.shape == sx and wbar.shape == sw
    assert xbar.dtype == np.float64 and wbar.dtype == np.float32
    np.testing.assert_array_equal(xbar, rc.unbroadcast(np.broadcast_to(w, y.shape) * ybar, sx))
    np.testing.assert_array_equal(wbar, rc.unbroadcast(np.broadcast_to(x, y.shape) * ybar, sw))


def test_scalar_rule_with_a_python_scalar_broadcast_against_an_array():
    y, back = rc.rrule(weighted, 2.0, np.array([1.0, 2.0, 3.0]))
    _, xbar, wbar = back(np.ones(3))
    assert type(xbar) is rc.Thunk  # lazy: the scalar is often a literal, its cotangent a sum
    xbar = rc.unthunk(xbar)
    assert type(xbar) is float and xbar == 6.0
    np.testing.assert_array_equal(wbar, [2.0, 2.0, 2.0])
    _, back = rc.rrule(weighted, np.float32(2.0), np.ones((2, 2)))
    xbar = rc.unthunk(back(np.ones((2, 2)))[1])
    assert type(xbar) is np.float32 and xbar == 4.0


# -- scalar_rule: complex --------------------------------------------------------------------


def csquare(z):
    return z * z


rc.scalar_rule(csquare, lambda z: 2 * z)


@settings(max_examples=30, deadline=None)
@given(re=moderate, im=moderate)
def test_scalar_rule_complex_holomorphic_follows_chainrules_convention(re, im):
    z = complex(re, im)
    y, back = rc.rrule(csquare, z)
    assert y == z * z
    zbar = back(1.0)[1]
    assert zbar == pytest.approx((2 * z).conjugate())
    # the gradient of the real-valued Re(f(z)) is d/dRe + i d/dIm
    h = 1e-6
    d_re = ((z + h) ** 2 - (z - h) ** 2).real / (2 * h)
    d_im = ((z + 1j * h) ** 2 - (z - 1j * h) ** 2).real / (2 * h)
    assert zbar == pytest.approx(complex(d_re, d_im), abs=1e-5)
    assert rc.frule((None, 1j), csquare, z)[1] == pytest.approx(2 * z * 1j)


def test_scalar_rule_complex_cotangent_for_real_input_is_projected_to_real():
    # A real input of a complex-valued function gets a real cotangent.
    _, back = rc.rrule(csquare, 1.5)
    xbar = back(1 + 1j)[1]
    assert type(xbar) is float and xbar == 3.0


# -- non_differentiable ----------------------------------------------------------------------


def argmax_of(xs, *, default=-1):
    return int(np.argmax(xs)) if len(xs) else default


rc.non_differentiable(argmax_of)


def test_non_differentiable_gives_no_tangent_for_every_input():
    y, back = rc.rrule(argmax_of, np.array([1.0, 3.0, 2.0]))
    assert y == 1
    assert back(1.0) == (rc.NoTangent(), rc.NoTangent())
    assert rc.frule((None, np.ones(3)), argmax_of, np.array([1.0, 3.0])) == (1, rc.NoTangent())
    assert rc.rrule(argmax_of, [], default=7)[0] == 7


def test_non_differentiable_rules_are_marked_so_engines_can_skip_them():
    (rule,) = rc.rrule.rules_for(argmax_of)
    assert rule.non_differentiable and rule.kind == "non_differentiable"
    assert rc.rrule.lookup(argmax_of, (np.ones(2),)).non_differentiable
    assert rc.frule.rules_for(argmax_of)[0].non_differentiable


def test_non_differentiable_for_some_types_only():
    def pick(x, i):
        return x[i] if isinstance(x, list) else x

    rc.non_differentiable(pick, list)
    assert rc.rrule(pick, [1.0], 0)[1](1.0) == (rc.NoTangent(), rc.NoTangent(), rc.NoTangent())
    assert rc.rrule(pick, np.ones(2), 0) is None


# -- ignore_derivatives ----------------------------------------------------------------------


def test_ignore_derivatives_passes_values_through():
    x = np.ones(3)
    assert rc.ignore_derivatives(x) is x
    assert rc.ignore_derivatives(2.5) == 2.5


def test_ignore_derivatives_runs_a_zero_argument_function():
    log = []

    def record():
        log.append("ran")
        return 4.0

    assert rc.ignore_derivatives(record) == 4.0
    assert log == ["ran"]
    assert rc.ignore_derivatives(np.sin) is np.sin  # builtins are values, not code to run


def test_ignore_derivatives_stops_gradients():
    y, back = rc.rrule(rc.ignore_derivatives, np.ones(2))
    np.testing.assert_array_equal(y, np.ones(2))
    assert back(np.ones(2)) == (rc.NoTangent(), rc.NoTangent())
    assert rc.rrule.rules_for(rc.ignore_derivatives)[0].non_differentiable
    assert rc.frule((None, 1.0), rc.ignore_derivatives, 3.0) == (3.0, rc.NoTangent())


# -- partials_rules: one NumPy array, the lean path --------------------------------------------


@pytest.mark.parametrize("f, partial", [(np.tanh, lambda x, y: 1 - y * y), (np.exp, lambda x, y: y),
                                        (np.sin, lambda x, y: np.cos(x))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128])
@pytest.mark.parametrize("shape", [(3,), (2, 2), ()])
def test_a_rule_of_one_array_gives_the_general_paths_numbers(f, partial, dtype, shape):
    """An element-wise rule called with one array and nothing else takes a lean path: its value,
    its pullback's name and its cotangent (the partial, conjugated, times ybar, of x's dtype) are
    those of the general path (``where=True`` takes it) and of the formula, to the bit."""
    x = np.linspace(0.1, 0.7, int(np.prod(shape))).reshape(shape).astype(dtype)
    if dtype is np.complex128:
        x = x + 0.3j
    ybar = np.linspace(-1.0, 2.0, x.size).reshape(shape).astype(dtype)
    y, back = rc.rrule(f, x)
    y_general, back_general = rc.rrule(f, x, where=True)
    got, general = back(ybar), back_general(ybar)
    assert back.__name__ == back_general.__name__ == f"{f.__name__}_pullback"
    np.testing.assert_array_equal(y, y_general)
    assert got[1].dtype == x.dtype and np.shape(got[1]) == shape
    np.testing.assert_array_equal(got[1], general[1])
    np.testing.assert_array_equal(got[1], ybar * np.conj(partial(x, y)))


def test_a_rule_of_one_array_keeps_no_input_it_does_not_need():
    """``tanh``'s partial reads only its output: the pullback keeps a stand-in, not the array."""
    import weakref

    x = np.linspace(0.1, 0.7, 1000)
    seen = weakref.ref(x)
    with rc.checking(False):  # (checking mode keeps the arguments, to check the rule with)
        _, back = rc.rrule(np.tanh, x)
    del x
    assert seen() is None
    assert back(np.ones(1000))[1].shape == (1000,)


def test_a_rule_whose_partials_warn_keeps_them_quiet_with_one_array():
    """``arcsin``'s partial divides by zero at 1 (its rule silences it): one array alone does not
    take the lean path past that."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, back = rc.rrule(np.arcsin, np.array([1.0, 0.5]))
        got = back(np.ones(2))[1]
    assert got[0] == np.inf and got[1] == 1 / np.sqrt(0.75)
