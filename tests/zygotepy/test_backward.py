"""The backward sweep over a hand-built tape: accumulation, fan-out, routes into containers,
freeing with ``once``; and a rule's pullback returning the wrong number of cotangents, or a
cotangent of another shape or kind, refused where the sweep meets it, naming the rule."""

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import fd as fd_gradient
from zygotepy._backward import backward, extract
from zygotepy._reverse import ReverseTrace
from zygotepy._trace import new_trace


def _mul_pullback(a, b):
    return lambda ct: (rc.NoTangent(), ct * b, ct * a)


def test_fan_out_accumulates_and_inputs_keep_their_cotangents():
    with new_trace(ReverseTrace) as trace:
        x = trace.box(3.0)
        y = trace.box(9.0, _mul_pullback(3.0, 3.0), ((0, x), (1, x)), 2)  # x * x
        z = trace.box(27.0, _mul_pullback(9.0, 3.0), ((0, y), (1, x)), 2)  # y * x
    cts = backward(trace, [(z._zp_index, 1.0)])
    assert cts[x._zp_index] == 27.0  # d(x^3)/dx at 3
    assert cts[z._zp_index] is None and cts[y._zp_index] is None  # intermediate cotangents are freed


def test_routes_into_containers_take_their_part_of_a_structured_cotangent():
    with new_trace(ReverseTrace) as trace:
        a, b = trace.box(1.0), trace.box(2.0)
        pair_pullback = lambda ct: (rc.NoTangent(), ct)  # noqa: E731  (identity on a tuple)
        routes = ((0, [((("i", 0),), a), ((("i", 1),), b)]),)
        out = trace.box((1.0, 2.0), pair_pullback, routes, 1)
    cts = backward(trace, [(out._zp_index, rc.Tangent[tuple](5.0, rc.ZeroTangent()))])
    assert cts[a._zp_index] == 5.0 and cts[b._zp_index] is None


def test_extract_follows_paths_and_stops_at_zeros():
    ct = rc.Tangent[dict]({"w": rc.Tangent[tuple](1.0, 2.0)})
    assert extract(ct, (("k", "w"), ("i", 1))) == 2.0
    assert isinstance(extract(rc.ZeroTangent(), (("i", 0),)), rc.ZeroTangent)


def test_once_drops_each_pullback_after_it_runs():
    class Saved:
        pass

    saved = Saved()
    alive = weakref.ref(saved)
    with new_trace(ReverseTrace) as trace:
        x = trace.box(2.0)
        keep = saved
        y = trace.box(4.0, lambda ct, _keep=keep: (rc.NoTangent(), ct * 2.0), ((0, x),), 1)
    del saved, keep
    backward(trace, [(y._zp_index, 1.0)], once=True)
    gc.collect()
    assert alive() is None and trace.tape[y._zp_index] is None


def test_a_pullback_with_the_wrong_arity_is_named():
    def short_pullback(ct):
        return (ct,)

    with new_trace(ReverseTrace) as trace:
        x = trace.box(2.0)
        y = trace.box(4.0, short_pullback, ((0, x),), 1)
    named = r"short_pullback \(.*test_backward.py:\d+\) returned 1 cotangents; expected 2"
    with pytest.raises(rc.RuleError, match=named):
        backward(trace, [(y._zp_index, 1.0)])


def test_nodes_with_one_to_four_routes_each_send_every_cotangent_home():
    """A node is one flat tuple (``_trace.node``) whose first two routes the sweep unpacks and
    whose further routes it reads in a loop: every route, in any position, must get its part."""
    def pullback_of(nargs):
        return lambda ct: (rc.NoTangent(), *[ct * (k + 1) for k in range(nargs)])

    with new_trace(ReverseTrace) as trace:
        xs = [trace.box(1.0) for _ in range(4)]
        outs = []
        for nargs in (1, 2, 3, 4):
            # a constant in the first position when there is room: routes need not start at 0
            routes = tuple((k, xs[k]) for k in range(nargs) if nargs == 1 or k > 0)
            outs.append(trace.box(0.0, pullback_of(nargs), routes, nargs))
    cts = backward(trace, [(o._zp_index, 10.0) for o in outs])
    # x_k gets (k + 1) * 10 from every node with more than k arguments that routes position k
    expected = [10.0, 3 * 20.0, 2 * 30.0, 1 * 40.0]
    assert [cts[x._zp_index] for x in xs] == expected


# -- a rule's mistake in its pullback is refused where it happens, naming the rule and its primal ---------
def _careless(cotangent_of):
    """A primal ``weighed`` (4 * sum) whose rrule's pullback gives ``cotangent_of(a, ybar)`` for ``a``."""
    def weighed(a):
        return float(np.sum(a)) * 4.0

    @rc.rrule.register(weighed)
    def weighed_rrule(a):
        return weighed(a), lambda ybar: (rc.NoTangent(), cotangent_of(a, ybar))

    return weighed


#: where the careless rule's argument comes from: the argument itself, or the output of another rule
#: (whose pullback would sum or broadcast a wrong cotangent silently: [12, 12, 12] for [4, 4, 4])
_PLACES = {
    "argument": lambda weighed: lambda x: weighed(x),
    "after sin": lambda weighed: lambda x: weighed(np.sin(x)),
    "after a product": lambda weighed: lambda x: weighed(x * 2.0),
    "after a sum": lambda weighed: lambda x: weighed(x + 1.0),
    "next to another use": lambda weighed: lambda x: weighed(x) + np.sum(x),
    "in a dict": lambda weighed: lambda x: weighed({"a": x}["a"]),
    "of a stacked list": lambda weighed: lambda x: weighed(np.stack([x, x])[0]),
}

_ENTRIES = {
    "gradient": lambda f, x: zp.gradient(f, x),
    "pullback": lambda f, x: zp.pullback(f, x)[1](1.0),
    "params": lambda f, x: zp.gradient(lambda: f(x), zp.params(x)),
    "nested": lambda f, x: zp.gradient(lambda s: s * zp.gradient(lambda v: f(v * s), x)[0][0], 1.0),
    "jacobian": lambda f, x: zp.jacobian(f, x, mode="reverse"),
}


def _maybe_lazy(lazy, cotangent_of):
    """``cotangent_of``, or the same cotangent as a ``Thunk`` (read after the sweep has moved on:
    an input's at the end, an intermediate's when its node is reached, or by an accumulation)."""
    if not lazy:
        return cotangent_of
    return lambda a, ybar: rc.Thunk(lambda: cotangent_of(a, ybar))


@given(shape=st.sampled_from([(2, 3), (3, 3), (1, 3), (6,), (3, 1), ()]),
       place=st.sampled_from(sorted(_PLACES)), entry=st.sampled_from(sorted(_ENTRIES)), lazy=st.booleans())
@settings(max_examples=80, deadline=None)
def test_a_cotangent_of_another_shape_is_refused_wherever_the_rule_is(shape, place, entry, lazy):
    """ChainRules' ProjectTo refuses a size mismatch; only a rule that broadcasts sums back, itself.
    The refusal names the pullback, its rule's origin and the primal, without checking mode, for
    a lazy cotangent (a thunk) too."""
    weighed = _careless(_maybe_lazy(lazy, lambda a, ybar: np.full(shape, 4.0 * ybar)))
    with rc.checking(False), pytest.raises(rc.RuleError) as refused:
        _ENTRIES[entry](_PLACES[place](weighed), np.ones(3))
    message = str(refused.value)
    assert "weighed_rrule.<locals>.<lambda> (" in message and "test_backward.py:" in message
    assert f"of the rrule for {weighed.__module__}.{weighed.__qualname__} (registered at " in message
    assert f"of shape {shape} for its argument 1, of shape (3,)" in message


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("place", ["argument", "after sin", "after a sum", "next to another use"])
def test_a_cotangent_of_another_shape_for_a_parameter_in_a_list_is_refused(place, lazy):
    """A network's parameters, a list of (weight, bias) pairs, whose arrays the user edge hands out
    in one loop: a wrong shape is refused there too (a thunk's when it is read), naming the rule."""
    weighed = _careless(_maybe_lazy(lazy, lambda a, ybar: np.full((5,), 4.0 * ybar)))
    f = _PLACES[place](weighed)
    params = [(np.ones((2, 2)), np.ones(2)), (np.ones(3), np.ones(2))]
    with rc.checking(False), pytest.raises(rc.RuleError) as refused:
        zp.gradient(lambda ps: f(ps[1][0]) + np.sum(ps[0][0] @ ps[0][1]), params)
    message = str(refused.value)
    assert "weighed_rrule.<locals>.<lambda> (" in message
    assert "of shape (5,) for its argument 1, of shape (3,)" in message


@given(place=st.sampled_from(sorted(_PLACES)), entry=st.sampled_from(["gradient", "pullback", "params"]),
       lazy=st.booleans())
@settings(max_examples=35, deadline=None)
def test_a_cotangent_of_the_right_shape_is_never_refused(place, entry, lazy):
    weighed = _careless(_maybe_lazy(lazy, lambda a, ybar: np.full(np.shape(a), 4.0 * ybar)))
    f, x = _PLACES[place](weighed), np.array([0.3, -0.2, 0.9])
    got = _ENTRIES[entry](f, x)
    g = got[x] if entry == "params" else got[0]
    np.testing.assert_allclose(g, fd_gradient(f, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", ["text", b"bytes"])
@pytest.mark.parametrize("place", ["argument", "after sin", "after a product", "of a stacked list"])
def test_a_cotangent_that_is_not_a_number_is_refused_naming_the_rule(bad, place):
    weighed = _careless(lambda a, ybar: bad)
    with rc.checking(False), pytest.raises(rc.RuleError, match=r"weighed_rrule.*of the rrule for .*weighed "
                                                               r"\(registered at .*of type (str|bytes)"):
        zp.gradient(_PLACES[place](weighed), np.ones(3))


@pytest.mark.parametrize("returned, got", [(lambda ybar: (rc.NoTangent(),), "1 cotangents"),
                                           (lambda ybar: (rc.NoTangent(), ybar, ybar), "3 cotangents"),
                                           (lambda ybar: ybar, "a float"),
                                           (lambda ybar: [rc.NoTangent(), ybar], "a list")])
@pytest.mark.parametrize("place", ["argument", "after sin", "next to another use"])
def test_a_wrong_count_of_cotangents_names_the_rule_and_its_primal(returned, got, place):
    def scaled(a):
        return float(np.sum(a))

    @rc.rrule.register(scaled)
    def scaled_rrule(a):
        return scaled(a), returned

    with rc.checking(False), pytest.raises(rc.RuleError) as refused:
        zp.gradient(_PLACES[place](scaled), np.ones(3))
    message = str(refused.value)
    assert f"of the rrule for {scaled.__module__}.{scaled.__qualname__} (registered at " in message
    assert f"returned {got}; expected 2" in message


@pytest.mark.parametrize("dtype, cotangent_dtype", [(np.float32, np.float64), (np.float32, np.complex128),
                                                    (np.float64, np.complex128), (np.float16, np.float64)])
@pytest.mark.parametrize("place", ["argument", "after sin", "after a product"])
def test_a_cotangent_of_another_dtype_is_projected_as_projectto_does(dtype, cotangent_dtype, place):
    """ChainRules' ProjectTo converts a Float64 cotangent of a Float32 primal to Float32, and keeps
    the real part of a complex cotangent of a real primal: not a mistake worth refusing, and
    the gradient is the primal's dtype with the right values."""
    weighed = _careless(lambda a, ybar: np.full(np.shape(a), 4.0 * ybar, dtype=cotangent_dtype))
    f, x = _PLACES[place](weighed), np.array([0.3, -0.2, 0.9], dtype=dtype)
    with rc.checking(False):
        (g,) = zp.gradient(f, x)
    assert g.dtype == dtype and not np.iscomplexobj(g)
    rtol = 1e-2 if dtype == np.float16 else 1e-4
    np.testing.assert_allclose(g, fd_gradient(f, x.astype(np.float64)), rtol=rtol)
