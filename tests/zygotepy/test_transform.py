"""Source rewriting: lambdas, closures, classes, decorators, caching, tracebacks."""

import functools
import math
import traceback

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from zygotepy._runtime import transformed
from zygotepy._transform import _BY_CODE


def test_several_lambdas_on_one_line_are_told_apart():
    f, g = (lambda x: math.sin(x)), (lambda x: math.cos(x))
    assert zp.gradient(f, 0.0) == (1.0,)
    assert zp.gradient(g, 0.0) == (pytest.approx(0.0),)


def test_closures_share_cells_with_the_original():
    counter = 0

    def f(x):
        nonlocal counter
        counter += 1
        return x * 2

    zp.gradient(f, 1.0)
    assert counter == 1
    scale = 5.0
    assert zp.gradient(lambda x: x * scale, 1.0) == (5.0,)


def test_defaults_kwdefaults_and_partial():
    def f(x, a=2.0, *, b=3.0):
        return x * a * b

    assert zp.gradient(f, 1.0) == (6.0,)
    assert zp.gradient(functools.partial(f, a=1.0), 1.0) == (3.0,)


class Base:
    def energy(self, x):
        return x * x


class Child(Base):
    __secret = 3.0

    def energy(self, x):
        return super().energy(x) * self.__secret

    @staticmethod
    def twice(x):
        return 2 * x

    @classmethod
    def thrice(cls, x):
        return 3 * x


def test_methods_super_private_names_static_and_class_methods():
    c = Child()
    assert zp.gradient(c.energy, 2.0) == (12.0,)
    assert zp.gradient(Child.twice, 1.0) == (2.0,)
    assert zp.gradient(Child.thrice, 1.0) == (3.0,)


def decorated(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) + 1.0

    return wrapper


@decorated
def with_decorator(x):
    return math.sin(x)


def test_decorated_functions():
    assert zp.gradient(with_decorator, 0.0) == (1.0,)


def test_rules_are_seen_inside_comprehensions_and_nested_defs():
    calls = []

    def special(x):
        return x

    @rc.rrule.register(special)
    def special_rrule(x):
        calls.append(1)
        return x, lambda ybar: (rc.NoTangent(), 4.0 * ybar)

    def f(xs):
        def inner(v):
            return special(v)

        return sum([inner(v) for v in xs])

    assert zp.gradient(f, [1.0, 2.0]) == ([4.0, 4.0],)
    assert len(calls) == 2


def test_generators_are_left_alone():
    def gen(x):
        yield x * 2
        yield x * 3

    assert zp.gradient(lambda x: sum(gen(x)), 1.0) == (5.0,)


def test_cached_per_code_object():
    def f(x):
        return x * x

    zp.gradient(f, 1.0)
    assert (f.__code__, False) in _BY_CODE
    assert transformed(f) is transformed(f)


def test_tracebacks_point_at_user_code():
    def failing(x):
        return x * undefined_name  # noqa: F821

    with pytest.raises(NameError) as info:
        zp.gradient(failing, 1.0)
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.name == "failing"]
    assert frames and frames[-1].line.strip().startswith("return x * undefined_name")


def test_in_place_add_on_local_copy_is_functional():
    def f(w):
        acc = np.zeros(3)
        for i in range(3):
            acc += w * i
        return acc.sum()

    np.testing.assert_allclose(zp.gradient(f, np.ones(3))[0], 3 * np.ones(3))


def test_list_append_and_dict_building():
    def f(x):
        parts = []
        for k in range(3):
            parts.append(x * k)
        d = {"a": parts[1], "b": parts[2]}
        return d["a"] + d["b"]

    assert zp.gradient(f, 1.0) == (3.0,)


def test_setitem_into_traced_array_is_refused_or_exact():
    def f(x):
        y = np.zeros(3)
        y[1] = x * 2.0
        return y.sum()

    try:
        result = zp.gradient(f, 1.0)
    except TypeError as err:
        assert "functional" in str(err)
    else:
        assert result == (2.0,)


def test_setitem_on_attribute_target_is_refused_clearly():
    class Holder:
        def __init__(self):
            self.buf = np.zeros(2)

    h = Holder()

    def f(x):
        h.buf[0] = x
        return h.buf.sum()

    with pytest.raises(TypeError):
        zp.gradient(f, 1.0)


def test_higher_order_builtins_call_back_into_the_engine():
    import functools

    assert zp.gradient(lambda xs: sum(map(math.sin, xs)), [0.0, 1.0]) == ([1.0, math.cos(1.0)],)
    assert zp.gradient(lambda xs: sum(filter(lambda v: v > 0, xs)), [-1.0, 2.0]) == ([None, 1.0],)
    assert zp.gradient(lambda xs: sorted(xs, key=lambda v: -v)[0] * 2, [1.0, 3.0]) == ([None, 2.0],)
    assert zp.gradient(lambda xs: functools.reduce(lambda a, b: a * b, xs), [2.0, 3.0, 4.0]) == (
        [12.0, 8.0, 6.0],)
    assert zp.gradient(lambda xs: max(xs, key=abs), [1.0, -3.0]) == ([None, 1.0],)
