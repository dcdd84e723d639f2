"""The user's edge: internal tangents to what users see, and users' gradients to tangents."""

import dataclasses
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from zygotepy._edge import to_internal, to_user


@dataclasses.dataclass
class Point:
    x: float
    y: float


def test_zeros_become_none_and_containers_are_mirrored():
    assert to_user(rc.ZeroTangent(), 1.0) is None
    assert to_user(rc.Tangent[list](1.0, rc.ZeroTangent()), [2.0, 3.0]) == [1.0, None]
    assert to_user(rc.Tangent[dict]({"a": 1.0}), {"a": 1.0, "b": 2.0}) == {"a": 1.0, "b": None}


def test_ints_get_float_gradients_and_arrays_are_projected():
    assert to_user(3, 1) == 3.0 and type(to_user(3, 1)) is float
    np.testing.assert_array_equal(to_user(np.ones((2, 2)), np.zeros(2)), [2.0, 2.0])  # unbroadcast


def test_objects_keep_their_structural_tangent():
    g = to_user(rc.Tangent[Point](x=1.0, y=rc.ZeroTangent()), Point(1.0, 2.0))
    assert isinstance(g, rc.Tangent) and g.x == 1.0 and g.y is None


def test_users_gradients_become_internal_tangents():
    assert to_internal(None, 1.0) == rc.ZeroTangent()
    t = to_internal([1.0, None], [2.0, 3.0])
    assert isinstance(t, rc.Tangent) and t[0] == 1.0 and rc.is_zero(t[1])
    assert to_internal({"a": 2.0}, {"a": 1.0})["a"] == 2.0


def test_round_trip_through_an_adjoint_is_the_identity_on_users_gradients():
    def pair(a, b):
        return [a, b]

    @zp.adjoint(pair)
    def _(a, b):
        return pair(a, b), lambda ct: (ct[0], ct[1])  # receives a list, returns per argument

    assert zp.gradient(lambda a, b: pair(a, b)[0] * 3.0, 1.0, 2.0) == (3.0, None)


def test_jvp_of_a_list_valued_function_returns_a_list():
    y, ydot = zp.jvp(lambda x: [x, 2.0 * x], (1.0,), (1.0,))
    assert (y, ydot) == ([1.0, 2.0], [1.0, 2.0]) and type(ydot) is list


# -- gradients handed out are the user's own ----------------------------------------------------------
def _all_own(grads, inputs):
    """Every array gradient writable, owning its memory, of its primal's dtype, sharing memory with
    no other gradient and no input."""
    arrays = [g for g in grads if isinstance(g, np.ndarray)]
    for g, x in zip(grads, inputs, strict=True):
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            assert isinstance(g, np.ndarray) and g.dtype == x.dtype
    for i, g in enumerate(arrays):
        assert g.flags.writeable and g.base is None
        assert not any(np.shares_memory(g, h) for h in arrays[i + 1:])
        assert not any(np.shares_memory(g, x) for x in inputs if isinstance(x, np.ndarray))


def test_one_cotangent_reaching_two_arguments_is_two_arrays():
    W, b = np.ones((2, 2)), np.ones((2, 2))
    gW, gb = zp.gradient(lambda W, b: np.sum(W + b), W, b)
    _all_own([gW, gb], [W, b])
    gW *= 0.5  # an in-place step on one gradient leaves the other
    np.testing.assert_array_equal(gb, np.ones((2, 2)))


def test_a_broadcast_gradient_is_writable():
    x = np.arange(3.0)
    (g,) = zp.gradient(np.sum, x)
    g *= 0.1
    np.testing.assert_allclose(g, 0.1)


def test_gradients_through_params_and_dicts_are_separate():
    W, b = np.ones(3), np.ones(3)
    gs = zp.gradient(lambda: np.sum(W + b), zp.params(W, b))
    _all_own([gs[W], gs[b]], [W, b])
    (d,) = zp.gradient(lambda p: np.sum(p["W"] - p["b"]), {"W": W, "b": b})
    _all_own([d["W"], d["b"]], [W, b])
    (t,) = zp.gradient(lambda p: np.sum(p[0] * 1.0 + p[1]), (W, b))
    _all_own(list(t), [W, b])


def test_a_rule_returning_a_constant_as_cotangent_does_not_hand_it_out():
    C = np.array([1.0, 2.0])

    def weigh(x):
        return float(np.dot(x, C))

    @rc.rrule.register(weigh)
    def _weigh_rrule(x):
        return weigh(x), lambda ybar: (rc.NoTangent(), C)  # ybar is 1: the rule hands back C itself

    x = np.zeros(2)
    (g,) = zp.gradient(weigh, x)
    g[0] = 99.0
    np.testing.assert_array_equal(C, [1.0, 2.0])
    gs = zp.gradient(lambda: weigh(x), zp.params(x))  # through implicit parameters
    assert not np.shares_memory(gs[x], C)


@given(shape=st.sampled_from([(), (1,), (3,), (2, 3)]),
       dtype=st.sampled_from([np.float64, np.float32]),
       which=st.sampled_from(["add", "sub", "sum_each", "mean", "reused"]))
@settings(max_examples=40, deadline=None)
def test_every_gradient_is_fresh_whatever_the_path(shape, dtype, which):
    W, b = np.ones(shape, dtype), np.full(shape, 2.0, dtype)
    losses = {
        "add": lambda W, b: np.sum(W + b),
        "sub": lambda W, b: np.sum(W - b),
        "sum_each": lambda W, b: np.sum(W) + np.sum(b),
        "mean": lambda W, b: np.mean(W + b),
        "reused": lambda W, b: np.sum(W + b) + np.sum(W),
    }
    grads = zp.gradient(losses[which], W, b)
    _all_own(list(grads), [W, b])
    y, back = zp.pullback(losses[which], W, b)
    _all_own(list(back(1.0)), [W, b])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_networks_parameters_in_a_list_of_pairs_get_their_own_exact_gradients(dtype):
    """A list of (weight, bias) pairs: its arrays are handed out in one loop. Each gradient is
    exact, of its parameter's dtype, and its own, also where one array is two parameters, a
    cotangent is a broadcast view (a sum's) or one array is the cotangent of two."""
    W, b = np.array([[1.0, 2.0], [3.0, 4.0]], dtype), np.array([0.5, -0.5], dtype)
    X = np.array([[1.0, -1.0], [2.0, 0.5], [0.0, 1.0]], dtype)

    def loss(ps):
        h = X
        for w, c in ps[:3]:
            h = h @ w + c
        return np.sum(h) + np.sum((ps[3][0] + ps[3][1]) ** 2)  # (one array, the cotangent of both)

    params = [(W, b), (W, b), (np.eye(2, dtype=dtype), np.zeros(2, dtype)), (b, np.ones(2, dtype))]
    (grads,) = zp.gradient(loss, params)
    assert type(grads) is list and all(type(g) is tuple for g in grads)
    flat = [g for pair in grads for g in pair]
    _all_own(flat, [p for pair in params for p in pair])
    M1, M2 = W, params[2][0]
    h1 = X @ W + b
    ones = np.ones((3, 2), dtype)
    expected = [X.T @ (ones @ M2.T @ M1.T), (ones @ M2.T @ M1.T).sum(axis=0),
                h1.T @ (ones @ M2.T), (ones @ M2.T).sum(axis=0),
                (h1 @ M1 + b).T @ ones, ones.sum(axis=0)]
    expected += [2 * (b + 1), 2 * (b + 1)]
    for g, e in zip(flat, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_a_parameter_in_a_list_whose_cotangent_is_not_an_array_of_its_dtype_goes_through_to_user():
    """An int array or a complex cotangent for a real one: not handed out as it is (projected)."""
    ints, reals = np.array([1, 2]), np.array([1.0, 2.0])
    (grads,) = zp.gradient(lambda ps: np.sum(ps[0] * ps[1]) + np.real(np.sum(ps[1] * 1j)), [ints, reals])
    assert grads[0].dtype == np.float64 and grads[1].dtype == np.float64
    np.testing.assert_array_equal(grads[0], [1.0, 2.0])
    np.testing.assert_array_equal(grads[1], [1.0, 2.0])


# -- arguments the engine would differentiate wrongly are refused, naming the type and the fix ---------
_STRUCTURED = np.zeros(2, dtype=[("a", float), ("b", float)])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix's own
    _MATRIX = np.matrix([[1.0, 2.0]])


@pytest.mark.parametrize("argument, named, fix", [
    (_MATRIX, "np.matrix", "np.asarray"),
    (np.ma.array([1.0, 2.0], mask=[0, 1]), "masked array", "np.ma.getdata"),
    (np.array([1.0, 2.0], dtype=object), "dtype object", "astype(float)"),
    (_STRUCTURED, "structured array", "structured_to_unstructured"),
    (_STRUCTURED[0], "structured array", "structured_to_unstructured"),
    (Fraction(1, 2), "Fraction", "float(x)"),
    (Decimal("0.5"), "Decimal", "float(x)"),
    ((float(i) for i in range(3)), "generator", "list(it)"),
    (iter([1.0, 2.0]), "list_iterator", "list(it)"),
    ([1.0, np.array([1.0], dtype=object)], "dtype object", "astype(float)"),
    ({"w": _MATRIX}, "'w'", "np.asarray"),
    ([(np.ones(2), np.ones(2)), (np.ones(2), np.array([1.0], dtype=object))], "dtype object",
     "astype(float)"),
    ([(np.ones(2), 1.0), [np.ones(2), (_MATRIX,)]], "np.matrix", "np.asarray"),
    ((np.ones(2), [2.0, _STRUCTURED]), "structured array", "structured_to_unstructured"),
])
def test_an_argument_differentiated_wrongly_is_refused_with_its_fix(argument, named, fix):
    def loss(a):
        return 0.0

    for entry, run in [("gradient", lambda: zp.gradient(loss, argument)),
                       ("gradient", lambda: zp.pullback(loss, argument)),
                       ("jvp", lambda: zp.jvp(loss, (argument,), (1.0,))),
                       ("jacobian", lambda: zp.jacobian(loss, argument, mode="forward")),
                       ("withjacobian", lambda: zp.withjacobian(loss, argument)),
                       ("hessian", lambda: zp.hessian(loss, argument)),
                       ("hessian_reverse", lambda: zp.hessian_reverse(loss, argument))]:
        with pytest.raises(TypeError) as err:
            run()
        message = str(err.value)
        assert entry in message and "loss" in message and named in message and fix in message


@pytest.mark.parametrize("make", [lambda: (v for v in [1.0, 2.0]), lambda: map(float, [1, 2]),
                                  lambda: iter([1.0, 2.0])])
def test_an_iterator_next_to_differentiated_arguments_is_refused_by_multi_pass_entry_points(make):
    """Forward passes run f once per chunk of directions: an iterator would be used up by the first
    (the second pass would see it empty and give another Jacobian); refused with its fix."""
    def f(v, values):
        return v * sum(values)

    for entry, run in [("jacobian", lambda it: zp.jacobian(f, np.ones(3), it, mode="forward", chunk=1)),
                       ("withjacobian", lambda it: zp.withjacobian(f, np.ones(3), it, chunk=1)),
                       ("hessian", lambda it: zp.hessian(lambda v, it: np.sum(f(v, it) ** 2), np.ones(2), it,
                                                         chunk=1))]:
        with pytest.raises(TypeError, match=rf"{entry} of .*argument 1 is a \w+.*list\(it\)"):
            run(make())


def test_arguments_not_differentiated_are_not_checked():
    gen = (v for v in [1.0, 2.0])
    assert zp.gradient(lambda x, g: x * sum(g), 2.0, gen, argnums=0) == (3.0,)


def test_a_refused_argument_is_refused_before_the_function_runs_and_leaves_no_trace_active():
    """The reverse entry points check each argument as they box it (one walk): a refusal comes
    before the function runs, names the argument and the fix, and leaves no trace active."""
    from zygotepy._trace import LEVELS

    ran = []

    def loss(x, ps):
        ran.append(1)
        return x * 2.0

    for bad in ([(np.ones(2), np.array([1.0], dtype=object))], {"a": [Fraction(1, 2)]}, (1.0, iter([1.0]))):
        for run in (lambda: zp.gradient(loss, 1.0, bad), lambda: zp.pullback(loss, 1.0, bad),
                    lambda: zp.withgradient(loss, 1.0, bad)):
            with pytest.raises(TypeError, match=r"gradient of .*loss: argument 1 "):
                run()
    assert ran == [] and LEVELS.get() == ()
    assert zp.gradient(loss, 1.5, [np.array(["a"]), np.array([1, 2]), np.ones(2, bool)]) == (2.0, None)
    assert zp.gradient(loss, 1.5, [(np.ones(2), np.array([1.0], dtype=object))], argnums=0) == (2.0,)
