"""Scenarios: ordinary Python constructs in differentiated code (closures, classes, dataclasses,
control flow, modules, stdlib callables, threads), checked against finite differences."""

import collections
import dataclasses
import functools
import heapq
import math
import operator
import re
import threading
from typing import NamedTuple

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from tests.zygotepy import helpers_module
from tests.zygotepy.finite_differences import check


# -- helpers ------------------------------------------------------------------------------------
def test_nonlocal_accumulator_and_augmented_nonlocal():
    def f(x):
        acc = 0.0

        def add(v):
            nonlocal acc
            acc += v * v

        add(x)
        add(2 * x)
        return acc

    check(f, 1.5, 5 * 2 * 1.5)


def test_lambdas_on_one_line_nested_and_default_lambdas():
    a, b = 2.0, 3.0
    f1 = lambda x: (lambda y: y * a)(x) + (lambda y: y * b)(x)  # noqa: E731
    fa, fb = (lambda x: x * 2.0), (lambda x: x * 3.0)

    def withdef(x, g=lambda v: v ** 3, h=lambda v: v ** 2):
        return g(x) + h(x)

    assert zp.gradient(f1, 1.0) == (5.0,)
    assert zp.gradient(fa, 1.0) == (2.0,) and zp.gradient(fb, 1.0) == (3.0,)
    assert zp.gradient(withdef, 2.0) == (16.0,)


def test_varargs_kwargs_wraps_and_partial():
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            return 2 * fn(*a, **k)

        return wrapper

    @deco
    def f(x, k=2.0, *, p=3):
        return x ** p * k

    def g(*args, **kw):
        return sum(v * v for v in args) * kw.get("s", 1.0)

    check(f, 1.2)
    check(lambda x: g(x, 2 * x, s=3.0), 1.1)
    check(lambda x: functools.partial(f, k=x)(x), 0.9)


class _Model:
    scale = 3.0

    def __init__(self, w):
        self.w = w

    @classmethod
    def make(cls, w):
        return cls(w * cls.scale)

    @staticmethod
    def sq(v):
        return v * v

    @property
    def w2(self):
        return self.w ** 2

    def __call__(self, x):
        return self.w * x + _Model.sq(x)

    def __private(self, x):
        return self.w * x

    def public(self, x):
        return self.__private(x)


class _Child(_Model):
    def __call__(self, x):
        return super().__call__(x) * 2 + self.w2


def test_classmethod_staticmethod_property_call_super_mangling():
    check(lambda x: _Model.make(x).w, 0.5)
    check(lambda x: _Model(x).w2, 0.5)
    check(lambda x: _Model(x)(x), 0.5)
    check(lambda x: _Child(x)(x), 0.5)
    check(lambda x: _Model(x).public(x), 0.5)


@dataclasses.dataclass(frozen=True)
class _Frozen:
    a: float
    b: float = 2.0

    def e(self):
        return self.a * self.b


@dataclasses.dataclass(slots=True)
class _Slotted:
    a: float
    b: float = 2.0


class _NT(NamedTuple):
    a: float
    b: float


def test_dataclasses_and_namedtuple_fields():
    check(lambda x: _Frozen(x).e(), 0.5)
    check(lambda x: dataclasses.replace(_Frozen(x), b=x).e(), 0.5)
    check(lambda x: _Slotted(x, x).a * _Slotted(x).b, 0.5)
    check(lambda x: _NT(x, x * 2).b * _NT(x, 1.0).a, 0.5)
    (g,) = zp.gradient(lambda t: t[0] * t.b, _NT(1.0, 2.0))
    assert g == rc.Tangent[_NT](a=2.0, b=1.0)


def test_comprehensions_generators_and_functional_builtins():
    x = np.array([1.0, 3.0, 2.0])
    check(lambda v: sum({i: v[0] ** i for i in range(4)}.values()), x)
    check(lambda v: sum(v[i] ** 2 for i in range(3)), x)
    check(lambda v: sum(map(math.sin, v)), x)
    check(lambda v: sum(filter(lambda t: t > 1.5, v)), x)
    check(lambda v: sorted(v, key=lambda t: -t)[0] * 2 + sorted(v)[0], x)
    check(lambda v: functools.reduce(operator.mul, v), x)
    check(lambda v: min(v, key=lambda t: (t - 2.9) ** 2) * 3, x)
    check(lambda v: max([v[0], 2 * v[1], -v[2]], key=abs), x)


def test_control_flow_recursion_exceptions_with_and_finally():
    def fact(x, n):
        return 1.0 if n == 0 else x * fact(x, n - 1)

    def f(x):
        y = x
        try:
            y = y * 3
            if y > 1:
                raise RuntimeError
        except RuntimeError:
            y = y + x
        finally:
            y = y * x
        while y < 10:
            y = y * 2
        with np.errstate(divide="ignore"):
            return y + fact(x, 3)

    def g(x):
        try:
            return math.log(x - 10)
        except ValueError:
            return x * 5

    check(f, 0.7)
    check(g, 0.7, 5.0)


def test_globals_and_module_level_functions_of_another_module(tmp_path, monkeypatch):
    (tmp_path / "review_other_module.py").write_text(
        "import numpy as np\nSCALE = 2.0\n"
        "def helper(x):\n    return np.sin(x) * SCALE\n"
        "def outer_helper(x):\n    return helper(x) + x ** 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import review_other_module as other

    check(lambda x: helpers_module.calls_scaled_square(x) + other.outer_helper(x) * other.SCALE, 0.7)
    monkeypatch.setattr(other, "SCALE", 5.0)  # globals stay live
    check(lambda x: other.helper(x), 0.7, 5.0 * math.cos(0.7))


class _WithClassmethod:
    @classmethod
    def c(cls, x):
        return x * 2


def test_rule_registered_for_a_classmethod_is_used():
    rc.rrule.register(_WithClassmethod.c)(
        lambda x: (_WithClassmethod.c(x), lambda yb: (rc.NoTangent(), 13.0 * yb)))
    assert rc.rrule(_WithClassmethod.c, 3.0)[1](1.0)[1] == 13.0  # rulescore itself finds it
    assert zp.gradient(lambda x: _WithClassmethod.c(x), 3.0) == (13.0,)


def test_asarray_of_a_traced_value_in_unrewritten_code_is_refused():
    namespace = {"np": np}
    exec("def no_source(x):\n    return np.asarray(x) * 2\n", namespace)  # no source: not rewritten

    with pytest.warns(zp.ZygoteWarning), pytest.raises(zp.UntraceableError):
        zp.gradient(lambda x: np.sum(namespace["no_source"](x)), np.array([0.5, 1.0]))


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return iter((self.a, self.b))


def test_sum_over_a_user_iterable_object():
    check(lambda x: sum(_Pair(x, x * x)), 0.7)


def test_re_compile_inside_differentiated_code():
    def f(x):
        n = int(re.match(r"(\d)", "3").group(1))
        return x * n

    assert zp.gradient(f, 0.5) == (3.0,)


def test_thread_started_inside_differentiated_code():
    def f(x):
        out = []
        t = threading.Thread(target=lambda: out.append(3.0))
        t.start()
        t.join()
        return x * out[0]

    assert zp.gradient(f, 0.5) == (3.0,)


class _Node:
    def __init__(self, v, parent=None):
        self.v, self.parent, self.children = v, parent, []
        if parent is not None:
            parent.children.append(self)


def test_rule_call_on_an_object_with_a_reference_cycle():
    def f(x):
        root = _Node(1.0)
        leaf = _Node(x, root)
        assert isinstance(leaf, _Node)
        return leaf.v * len(root.children) * 2

    assert zp.gradient(f, 0.5) == (2.0,)


def test_namedtuple_built_from_traced_values_then_indexed_or_sliced():
    check(lambda x: _NT(x, x * 2)[1] * _NT(x, 1.0)[0] + sum(_NT(x, 2.0)[:1]), 0.5)


class _Vec:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __add__(self, other):
        return _Vec(self.a + other.a, self.b + other.b)

    def __mul__(self, s):
        return _Vec(self.a * s, self.b * s)

    __rmul__ = __mul__

    def __neg__(self):
        return _Vec(-self.a, -self.b)

    def __abs__(self):
        return (self.a ** 2 + self.b ** 2) ** 0.5


@pytest.mark.parametrize("f", [
    lambda x: (_Vec(x, 1.0) + _Vec(2.0, x)).b * 3,
    lambda x: (x * _Vec(x, 2.0)).a,
    lambda x: (_Vec(x, 2.0) * 3.0).a,
    lambda x: abs(-_Vec(x, 2.0)),
], ids=["add", "rmul", "mul", "neg_abs"])
def test_user_class_operator_overloading(f):
    check(f, 0.7)


@pytest.mark.parametrize("f", [
    lambda x: sum(collections.deque([x, 2 * x]))
    + (lambda d: (d.append(3 * x), d[-1])[1])(collections.deque()),
    lambda x: (lambda h: (heapq.heapify(h), heapq.heappop(h))[1])([3.0, x, 2 * x]) * 2,
    lambda x: operator.itemgetter(1)([x, 2 * x]),
], ids=["deque", "heapq", "itemgetter"])
def test_reference_moving_stdlib_callables(f):
    check(f, 0.5)


def test_exception_carrying_a_traced_value():
    def f(x):
        try:
            raise ValueError("too big", x * 2)
        except ValueError as e:
            return e.args[1] * x

    check(f, 0.7)
