"""The traced value's behaviour: operators, NumPy protocols, attributes, iteration and the
conversions that would drop a gradient."""

import math
import operator

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def test_operators_and_reflected_operators_reach_their_rules():
    f = lambda x: (2.0 - x) * 3.0 / (1.0 + x) ** 2 + (-x) % 5.0 + abs(x)  # noqa: E731
    assert zp.gradient(f, 0.7)[0] == pytest.approx(fd(f, 0.7), rel=1e-6)


def test_numpy_ufuncs_and_functions_on_boxes_use_the_rules():
    f = lambda x: np.sum(np.exp(x) * np.sin(x))  # noqa: E731
    x = np.array([0.1, -0.4, 0.9])
    np.testing.assert_allclose(zp.gradient(f, x)[0], np.exp(x) * (np.sin(x) + np.cos(x)))


def test_array_methods_and_data_attributes():
    f = lambda m: m.T.sum(axis=0).dot(m.mean(axis=1)) + m.shape[0]  # noqa: E731
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(zp.gradient(f, m)[0], fd(f, m), rtol=1e-6)


def test_iteration_len_bool_and_comparisons_see_the_primal():
    def f(v):
        total = 0.0
        for i, item in enumerate(v):
            if item > 0 and len(v) == 3 and bool(item):
                total = total + item * (i + 1)
        return total

    np.testing.assert_allclose(zp.gradient(f, np.array([1.0, -2.0, 3.0]))[0], [1.0, 0.0, 3.0])


def test_printing_shows_the_primal(capsys):
    zp.gradient(lambda x: print(x, f"{x:.2f}") or x, 1.5)
    assert capsys.readouterr().out == "1.5 1.50\n"


def test_conversion_to_a_plain_float_in_code_without_source_names_the_function():
    namespace = {}
    exec("def loss(x):\n    return float(x) * 2.0\n", namespace)
    refused = pytest.raises(zp.UntraceableError, match=r"plain float inside loss \(<string>:2\)")
    with pytest.warns(zp.ZygoteWarning), refused:
        zp.gradient(namespace["loss"], 1.0)


def test_a_compiled_method_without_a_rule_names_itself():
    with pytest.raises(zp.UntraceableError, match=r"float\.__float__ has no rrule .* argument 1"):
        zp.gradient(lambda x: operator.mul(float.__float__(x), 2.0), 1.0)


def test_conversion_to_an_array_outside_the_rewritten_code_is_refused():
    x_seen = []
    immutable = type("Immutable", (tuple,), {"__slots__": ()})

    def loss(x):
        x_seen.append(immutable((x,)))  # a tuple subclass: the box cannot be replaced by its plain value
        return np.sum(x)

    with pytest.warns(UserWarning, match="outlives it"):
        zp.gradient(loss, np.ones(2))
    with pytest.raises(zp.UntraceableError, match="not active"):
        x_seen[0][0] + 1.0  # the trace finished: the box escaped


def test_math_functions_and_float_in_rewritten_code_keep_the_gradient():
    assert zp.gradient(lambda x: math.sin(float(x)), 0.3) == (pytest.approx(math.cos(0.3)),)


def test_a_traced_float_as_a_key_refuses_instead_of_changing_the_lookup():
    memo = {}

    def expensive(x):
        if x not in memo:
            memo[x] = math.sin(x) * x
        return memo[x]

    expensive(0.5)  # filled before differentiation with the plain float: it would answer with a constant
    with pytest.raises(TypeError, match=r"dictionary key or set member inside .*expensive.*dropgrad"):
        zp.gradient(lambda x: expensive(x) * 2.0, 0.5)
    table = {1.0: 5.0}
    with pytest.raises(TypeError, match="dictionary key"):
        zp.gradient(lambda x: table.get(x, 1.0) * x, 1.0)  # identity hashing would silently miss
    with pytest.raises(TypeError, match="dictionary key"):
        zp.gradient(lambda x: x * (2.0 if x in {1.0} else 1.0), 1.0)
    with pytest.raises(TypeError, match="dictionary key"):
        zp.gradient(lambda x: np.sum(x * len({x})), np.ones(2))
    # the documented fix: look it up by its plain value
    assert zp.gradient(lambda x: table.get(zp.dropgrad(x), 1.0) * x, 1.0) == (5.0,)


def test_traced_ints_still_index_tables():
    table = {3: 2.0}
    assert zp.gradient(lambda x, n: x * table[n], 2.0, 3) == (2.0, None)
