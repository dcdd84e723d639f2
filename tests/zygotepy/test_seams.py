"""The seams: code Python runs implicitly (descriptors, iteration, context managers, container and
operator special methods, construction) on plain objects of classes defined in another module runs
rewritten, so rules, ``dropgrad`` and in-place writes inside it are seen; arguments that are not
numbers stay the same objects; ``out=`` on NumPy functions is exact; code the engine does not see
refuses what it cannot follow."""

import enum
import functools
import math
import operator

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy import seam_classes as sc
from tests.zygotepy.finite_differences import fd


def _setter(x):
    s = sc.Setter()
    s.v = x
    return s.v


def _deleter(x):
    out = []
    d = sc.Deleter(x, out)
    del d.v
    return out[0]


def _for_loop(x):
    total = 0.0
    for v in sc.Stepping(x):
        total = total + v
    return total


def _with(x):
    with sc.Managed(x) as v:
        return v


def _exit(x):
    m = sc.Managed(x)
    with m:
        pass
    return m.closed


def _setitem(x):
    s = sc.Store(0.0)
    s[1] = x
    return s.items[1]


def _delitem(x):
    s = sc.Store(x)
    del s[2]
    return s.items[2]


def _contains(x):
    s = sc.Store(x)
    assert 3 in s
    return s.seen


def _len(x):
    s = sc.Store(x)
    assert len(s) == 1
    return s.length


def _unpack(x):
    (v,) = sc.Generating(x)
    return v


def _assigns(x):
    a = sc.Assigns()
    a.v = x
    return a.v


def _augmented_attribute(x):
    s = sc.Setter()
    s.v = x
    s.v += 0.0  # reads through the getter, writes through the setter: body(body(x))... once more
    return s.v


PROTOCOLS = {
    "property": lambda x: sc.Prop(x).v,
    "cached_property": lambda x: sc.Cached(x).v,
    "property setter": _setter,
    "property deleter": _deleter,
    "__iter__ generator in a comprehension": lambda x: [v for v in sc.Generating(x)][0],
    "__iter__ by sum": lambda x: sum(sc.Generating(x)),
    "__iter__ by list": lambda x: list(sc.Generating(x))[0],
    "__iter__ by unpacking": _unpack,
    "__next__ in a for loop": _for_loop,
    "__next__ by next": lambda x: next(sc.Stepping(x)),
    "__next__ by max": lambda x: max(sc.Stepping(x)),
    "old __getitem__ iteration": lambda x: list(sc.OldSequence(x))[0],
    "__enter__": _with,
    "__exit__": _exit,
    "__getitem__": lambda x: sc.Store(x)[1],
    "__setitem__": _setitem,
    "__delitem__": _delitem,
    "__contains__": _contains,
    "__len__": _len,
    "__add__": lambda x: (sc.Arithmetic(x) + 1.0) - 1.0,
    "__radd__": lambda x: (1.0 + sc.Arithmetic(x)) - 1.0,
    "__neg__": lambda x: 0.0 - (-sc.Arithmetic(x)),
    "__call__": lambda x: sc.Arithmetic(x)(1.0),
    "inherited __init__": lambda x: sc.Inherits(x).v,
    "__new__": lambda x: sc.Allocates(x).v,
    "__getattr__": lambda x: sc.Dynamic(x).anything,
    "__getattribute__": lambda x: sc.Intercepts(x).v,
    "__setattr__": _assigns,
    "key= callback": lambda x: sorted([x], key=sc.body)[0] * 0.0 + max([x], key=sc.body) * 0.0 + sc.body(x),
    "map": lambda x: list(map(sc.body, [x]))[0],
}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_implicit_calls_run_rewritten_in_reverse_mode(protocol):
    value, (g,) = zp.withgradient(PROTOCOLS[protocol], 1.5)
    want_value, want_slope = sc.expected(1.5)
    assert value == pytest.approx(want_value)
    assert g == pytest.approx(want_slope)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_implicit_calls_run_rewritten_in_forward_mode(protocol):
    value, tangent = zp.jvp(PROTOCOLS[protocol], (1.5,), (1.0,))
    want_value, want_slope = sc.expected(1.5)
    assert value == pytest.approx(want_value)
    assert tangent == pytest.approx(want_slope)


def test_a_cached_property_is_filled_only_with_a_plain_value():
    c = sc.Cached(1.5)
    zp.gradient(lambda x: sc.Cached(x).v, 1.5)
    assert c.v == pytest.approx(sc.expected(1.5)[0])  # computed plainly, outside differentiation
    holder = sc.Cached(2.0)
    zp.gradient(lambda x: holder.v * x, 1.5)  # its field is a constant: the cache may keep the value
    assert type(holder.__dict__["v"]) in (float, np.float64)


# -- arguments that are not numbers stay the same objects ------------------------------------------
class Act(enum.Enum):
    RELU = 1
    SWISH = 2


SENTINEL = object()


def activation(x, act):
    if act is Act.SWISH:
        return x * np.tanh(x)
    return np.maximum(x, 0.0) * 0.3


def swish(x):
    return x * np.tanh(x)


class HoldsAFunction:
    def __init__(self):
        self.f = np.tanh


NOT_NUMBERS = {
    "enum": (activation, Act.SWISH, swish),
    "enum in a config dict": (lambda x, cfg: activation(x, cfg["act"]), {"act": Act.SWISH}, swish),
    "enum in a set": (lambda x, a: x * (2.0 if a in {Act.SWISH} else 1.0), Act.SWISH, lambda x: 2 * x),
    "enum as a key": (lambda x, a: x * {Act.SWISH: 3.0}[a], Act.SWISH, lambda x: 3 * x),
    "sentinel": (lambda x, s: x * (2.0 if s is SENTINEL else 1.0), SENTINEL, lambda x: 2 * x),
    "partial": (lambda x, f: f(x), functools.partial(np.power, 2.0), lambda x: 2.0 ** x),
    "set of names": (lambda x, names: x * len(names) * ("a" in names), {"a", "b"}, lambda x: 2 * x),
    "object holding a ufunc": (lambda x, h: h.f(x), HoldsAFunction(), np.tanh),
    "string": (lambda x, s: x * len(s), "abc", lambda x: 3 * x),
    "class": (lambda x, k: k(x) * x, float, lambda x: x * x),
    "range": (lambda x, r: x * sum(r), range(4), lambda x: 6 * x),
    "builtin function": (lambda x, f: f(x, 2.0), min, lambda x: min(x, 2.0)),
}


@pytest.mark.parametrize("case", NOT_NUMBERS)
def test_arguments_that_are_not_numbers_pass_through(case):
    f, other, reference = NOT_NUMBERS[case]
    value, (g, g_other) = zp.withgradient(f, 0.7, other)
    assert value == pytest.approx(reference(0.7))
    assert g == pytest.approx(fd(reference, 0.7))
    assert g_other is None


def test_a_random_generator_argument_is_the_callers_own():
    rng = np.random.default_rng(0)
    draw = np.random.default_rng(0).random()
    value, (g, g_rng) = zp.withgradient(lambda x, r: x * r.random(), 2.0, rng)
    assert (value, g, g_rng) == (pytest.approx(2 * draw), pytest.approx(draw), None)
    assert rng.random() == np.random.default_rng(0).random(2)[1]  # the caller's generator advanced


# -- implicit parameters ------------------------------------------------------------------------------
def test_dropgrad_of_an_implicit_parameter_stops_its_gradient():
    W = np.array([1.0, 2.0])
    gs = zp.gradient(lambda: np.sum(W * zp.dropgrad(W)), zp.params(W))
    np.testing.assert_allclose(gs[W], W)
    gs = zp.gradient(lambda: np.sum(zp.dropgrad(W) ** 2) + np.sum(W), zp.params(W))
    np.testing.assert_allclose(gs[W], [1.0, 1.0])


def test_implicit_parameters_read_through_a_property_of_a_plain_object():
    W = np.array([1.0, 2.0])
    holder = sc.Prop(W)
    gs = zp.gradient(lambda: np.sum(holder.v), zp.params(W))
    np.testing.assert_allclose(gs[W], sc.RULE_SLOPE + W)


# -- out= on NumPy functions that are not ufuncs ---------------------------------------------------
def _dot(a):
    c = np.empty(2)
    np.dot(np.array([[1.0, 2.0], [3.0, 4.0]]), a, out=c)
    return np.sum(c * c)


def _dot_positional(a):
    c = np.empty(2)
    np.dot(np.array([[1.0, 2.0], [3.0, 4.0]]), a, c)
    return np.sum(c * c)


def _clip(a):
    c = a * 1.0
    np.clip(c, 0.0, 0.5, out=c)
    return np.sum(c * a)


def _einsum(a):
    c = np.empty(())
    np.einsum("i,i->", a, a, out=c)
    return c * 1.0


def _concatenate(a):
    c = np.empty(4)
    np.concatenate([a, a * a], out=c)
    return np.sum(c * c)


def _take(a):
    c = np.empty(2)
    np.take(a, [1, 0], out=c)
    return np.sum(c * np.array([1.0, 3.0]))


def _trace(a):
    c = np.empty(())
    np.trace(np.outer(a, a), out=c)
    return c * 1.0


def _reductions(a):
    s, m, mx = np.empty(()), np.empty(()), np.empty(())
    np.sum(a * a, out=s)
    np.mean(a, out=m)
    np.max(a, out=mx)
    return s * m + mx


def _cumsum(a):
    c = np.empty(2)
    np.cumsum(a * a, out=c)
    return np.sum(c)


def _outer(a):
    c = np.empty((2, 2))
    np.outer(a, a * a, out=c)
    return np.sum(c)


def _matmul_into_slice(a):
    c = np.zeros(3)
    np.multiply(a, a, out=c[:2])
    return np.sum(c * np.array([1.0, 2.0, 3.0]))


OUT = [_dot, _dot_positional, _clip, _einsum, _concatenate, _take, _trace, _reductions, _cumsum, _outer,
       _matmul_into_slice]


@pytest.mark.parametrize("f", OUT, ids=lambda f: f.__name__.strip("_"))
def test_out_on_numpy_functions_is_exact(f):
    a = np.array([0.75, 0.3])
    (g,) = zp.gradient(f, a)
    np.testing.assert_allclose(g, fd(f, a), rtol=1e-6, atol=1e-8)
    direction = np.array([1.0, -2.0])
    y, t = zp.jvp(f, (a,), (direction,))
    assert y == pytest.approx(f(a))
    assert t == pytest.approx(np.dot(fd(f, a), direction), rel=1e-6)


# -- what code the engine does not see refuses --------------------------------------------------------
def test_an_in_place_write_in_unseen_code_refuses_naming_it():
    namespace = {"np": np}
    exec("def accumulate(x):\n    acc = np.zeros(2)\n    acc += x\n    return np.sum(acc)\n", namespace)
    with pytest.raises(zp.UntraceableError, match=r"plain array .* accumulate \(<string>:3\).*no Python"):
        zp.gradient(namespace["accumulate"], 1.5)


def test_a_conversion_in_unseen_code_names_the_reason_truthfully():
    namespace = {"math": math}
    exec("def convert(x):\n    return math.sin(float(x))\n", namespace)
    with pytest.raises(zp.UntraceableError, match=r"plain float inside convert \(<string>:2\)"):
        zp.gradient(namespace["convert"], 1.5)


def test_jacobian_keeps_the_inputs_dtype():
    for mode in ("reverse", "forward", "auto"):
        (j,) = zp.jacobian(lambda x: x * 2.0, np.ones(2, np.float32), mode=mode)
        assert j.dtype == np.float32, mode


# -- builtins that call methods or consume generators ------------------------------------------------
def _logged(x):
    import json
    import logging

    text = "{:.3f}".format(x) + "%.2f" % x  # noqa: UP031, UP032  (the spellings users write)
    text += f"{x:.1f}" + json.dumps(float(zp.dropgrad(x)))
    logging.getLogger("zygotepy.tests").info("loss %f %s", x, text)
    return x * x


CALLBACKS = {
    "str.format and logging": (_logged, lambda x: x * x),
    "math.fsum of a generator": (lambda x: math.fsum(v * v for v in (x, 2 * x)), lambda x: 5 * x * x),
    "methodcaller with a keyword": (lambda x: operator.methodcaller("sum", axis=0)(np.array([x, x * x])),
                                    lambda x: x + x * x),
    "methodcaller": (lambda x: operator.methodcaller("clip", 0.0, 0.5)(np.array([x, 2 * x])).sum(),
                     lambda x: min(x, 0.5) + min(2 * x, 0.5)),
}


@pytest.mark.parametrize("case", CALLBACKS)
def test_builtins_calling_back_differentiate(case):
    f, reference = CALLBACKS[case]
    (g,) = zp.gradient(f, 0.2)
    assert g == pytest.approx(fd(reference, 0.2))
