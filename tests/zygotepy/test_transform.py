"""Source rewriting: lambdas, closures, classes, decorators, caching, tracebacks."""

import functools
import math
import traceback

import pytest

import rulescore as rc
import zygotepy as zp
from zygotepy._runtime import transformed
from zygotepy._transform import _BY_CODE


def test_several_lambdas_on_one_line_are_told_apart():
    f, g = (lambda x: math.sin(x)), (lambda x: math.cos(x))
    assert zp.gradient(f, 0.0) == (1.0,)
    assert zp.gradient(g, 0.0) == (pytest.approx(0.0),)






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
    assert f.__code__ in _BY_CODE[False]
    assert transformed(f) is transformed(f)


def test_tracebacks_point_at_user_code():
    def failing(x):
        return x * undefined_name  # noqa: F821

    with pytest.raises(NameError) as info:
        zp.gradient(failing, 1.0)
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.name == "failing"]
    assert frames and frames[-1].line.strip().startswith("return x * undefined_name")












def test_curried_lambdas_on_one_line_are_told_apart():
    make = lambda m: lambda a, b: m * a * b  # noqa: E731
    assert zp.gradient(lambda x: make(2.0)(x, 3.0), 1.0) == (6.0,)
    same_names = lambda x: lambda x: x * 5.0  # noqa: E731
    assert zp.gradient(lambda v: same_names(1.0)(v) * v, 2.0) == (20.0,)


def test_negative_literals_stay_literals_and_negated_values_are_traced():
    def f(x):
        return x[-1] * -2.0 + (-x[0]) * -1

    def count_negations(fn):
        import dis
        return sum(1 for i in dis.get_instructions(transformed(fn)) if i.argval == "_zp_op_neg")

    import numpy as np
    x = np.array([1.0, 2.0, 3.0])
    assert count_negations(f) == 1  # -x[0] only: the literals are constants of the rewritten code
    np.testing.assert_allclose(zp.gradient(f, x)[0], [1.0, 0.0, -2.0])
