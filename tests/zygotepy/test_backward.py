"""The backward sweep over a hand-built tape: accumulation, fan-out, routes into containers,
freeing with ``once``, and the error for a pullback returning the wrong number of cotangents."""

import gc
import weakref

import pytest

import rulescore as rc
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
    with pytest.raises(rc.RuleError, match=r"short_pullback returned 1 cotangents; expected 2"):
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
