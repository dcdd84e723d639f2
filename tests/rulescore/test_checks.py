"""Checking mode: a rule that breaks the protocol raises ``RuleError`` naming the rule and the
primal call."""

import contextvars
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import rulescore as rc


def bad_count(x, y):
    return x * y


@rc.rrule.register(bad_count)
def bad_count_rrule(x, y):
    return bad_count(x, y), lambda ybar: (rc.NoTangent(), ybar * y)  # forgot y's cotangent


def bad_shape(x):
    return x.sum()


@rc.rrule.register(bad_shape)
def bad_shape_rrule(x):
    return bad_shape(x), lambda ybar: (rc.NoTangent(), np.ones(x.size + 1) * ybar)


def bad_dtype(x):
    return x.sum()


@rc.rrule.register(bad_dtype)
def bad_dtype_rrule(x):
    return bad_dtype(x), lambda ybar: (rc.NoTangent(), np.ones(x.shape, np.float64) * ybar)


def bad_complex(x):
    return x * 1j


@rc.rrule.register(bad_complex)
def bad_complex_rrule(x):
    return bad_complex(x), lambda ybar: (rc.NoTangent(), ybar * -1j)  # unprojected: complex


def bad_string(name, x):
    return x


@rc.rrule.register(bad_string)
def bad_string_rrule(name, x):
    return x, lambda ybar: (rc.NoTangent(), 1.0, ybar)  # a string has no tangent space


def bad_pair(x):
    return x


@rc.rrule.register(bad_pair)
def bad_pair_rrule(x):
    return x  # not (y, pullback)


def bad_list(x):
    return x


@rc.rrule.register(bad_list)
def bad_list_rrule(x):
    return x, lambda ybar: [rc.NoTangent(), ybar]


def good(x, n):
    return x * n


@rc.rrule.register(good)
def good_rrule(x, n):
    def good_pullback(ybar):
        ybar = rc.unthunk(ybar)
        if rc.is_zero(ybar):
            return rc.NoTangent(), rc.ZeroTangent(), rc.NoTangent()
        return rc.NoTangent(), rc.project(x, ybar * n), rc.NoTangent()

    return good(x, n), good_pullback


def bad_frule(x):
    return x


@rc.frule.register(bad_frule)
def bad_frule_frule(tangents, x):
    return x, np.ones(x.size + 1)


@pytest.fixture(autouse=True)
def checks_on():
    with rc.checking():
        yield


def rule_error(f, *args, ybar=1.0):
    y, back = rc.rrule(f, *args)
    with pytest.raises(rc.RuleError) as err:
        back(ybar)
    return str(err.value)


def names_rule_and_call(message, rule_name, call):
    assert call in message, message
    assert "<rrule(" in message and f"test_checks.{rule_name})" in message, message
    assert "test_checks.py:" in message, message  # where the broken rule is


def test_wrong_number_of_cotangents():
    message = rule_error(bad_count, 2.0, 3.0)
    names_rule_and_call(message, "bad_count", "bad_count(float, float)")
    assert "returned 2 cotangents, expected 3" in message


def test_pullback_returning_a_list_instead_of_a_tuple():
    message = rule_error(bad_list, 2.0)
    names_rule_and_call(message, "bad_list", "bad_list(float)")
    assert "returned a list" in message


def test_wrong_shape():
    message = rule_error(bad_shape, np.zeros(3))
    names_rule_and_call(message, "bad_shape", "bad_shape(ndarray[float64 (3,)])")
    assert "argument 1" in message and "shape (4,) for a primal of shape (3,)" in message


def test_wrong_dtype():
    message = rule_error(bad_dtype, np.zeros(3, np.float32))
    names_rule_and_call(message, "bad_dtype", "bad_dtype(ndarray[float32 (3,)])")
    assert "dtype float64 for a primal of dtype float32" in message


def test_integer_array_needs_a_float64_cotangent():
    def int_ct(x):
        return x

    rc.rrule.register(int_ct)(lambda x: (x, lambda ybar: (rc.NoTangent(), np.ones(x.shape, np.int64))))
    message = rule_error(int_ct, np.arange(3))
    assert "dtype int64 for a primal of dtype int64 (expected float64)" in message


def test_complex_cotangent_for_a_real_input():
    message = rule_error(bad_complex, 2.0)
    names_rule_and_call(message, "bad_complex", "bad_complex(float)")
    assert "complex" in message and "for a real float" in message
    message = rule_error(bad_complex, np.ones(2), ybar=np.ones(2, complex))
    assert "dtype complex128 for a primal of dtype float64" in message


def test_array_cotangent_for_a_scalar_input():
    def spread(x):
        return x * np.ones(3)

    rc.rrule.register(spread)(lambda x: (spread(x), lambda ybar: (rc.NoTangent(), ybar)))
    message = rule_error(spread, 2.0, ybar=np.ones(3))
    assert "shape (3,) for a scalar float" in message


@pytest.mark.parametrize("name", ["w", None, float, range(2), slice(1), np.dtype(np.float32), True])
def test_cotangent_for_an_input_without_tangent_space(name):
    message = rule_error(bad_string, name, 2.0)
    kind = type(name).__name__
    names_rule_and_call(message, "bad_string", f"bad_string({kind}, float)")
    assert "argument 1" in message and f"a float for a {kind}" in message


def test_rrule_not_returning_a_pair():
    with pytest.raises(rc.RuleError, match=r"bad_pair\(float\).*expected a \(y, pullback\) pair"):
        rc.rrule(bad_pair, 2.0)


def test_frule_with_a_tangent_of_the_wrong_shape():
    with pytest.raises(rc.RuleError, match=r"frule for .*bad_frule\(ndarray\[float64 \(2,\)\]\).*shape"):
        rc.frule((None, np.ones(2)), bad_frule, np.zeros(2))


def test_thunk_cotangents_are_checked_too():
    def lazy(x):
        return x

    rc.rrule.register(lazy)(lambda x: (x, lambda ybar: (rc.NoTangent(), rc.Thunk(lambda: np.ones(5)))))
    assert "shape (5,) for a primal of shape (2,)" in rule_error(lazy, np.zeros(2))


def test_correct_rules_pass_unchanged():
    y, back = rc.rrule(good, np.zeros(2, np.float32), 3)
    assert back.__name__ == "good_pullback"  # errors and tracebacks still show the real name
    _, xbar, nbar = back(np.ones(2, np.float32))
    assert xbar.dtype == np.float32 and nbar is rc.NoTangent()
    for ybar in (None, rc.ZeroTangent(), rc.Thunk(lambda: np.ones(2))):
        back(ybar)


def test_zero_cotangents_always_pass():
    def zeros(x, s):
        return x

    rc.rrule.register(zeros)(lambda x, s: (x, lambda ybar: (rc.NoTangent(), None, rc.ZeroTangent())))
    assert rc.rrule(zeros, np.ones(2), "s")[1](1.0) == (rc.NoTangent(), None, rc.ZeroTangent())


def test_errors_through_bound_methods_name_the_function():
    class Box:
        def value(self, x):
            return x

    rc.rrule.register(Box.value)(lambda self, x: (x, lambda ybar: (rc.NoTangent(), rc.NoTangent())))
    message = rule_error(Box().value, 1.0)
    assert "Box.value(Box, float)" in message and "expected 3" in message


def test_checking_can_be_turned_off():
    with rc.checking(False):
        assert not rc.checks_enabled()
        y, back = rc.rrule(bad_dtype, np.ones(2, np.float32))
        assert back(np.ones(2, np.float32))[1].dtype == np.float64  # goes through unchecked
        with pytest.raises(rc.RuleError, match="returned 2 cotangents; expected 3"):
            rc.rrule(bad_count, 2.0, 3.0)[1](1.0)  # the count is the rule contract: always checked
    assert rc.checks_enabled()


def test_checking_is_context_local():
    default = contextvars.Context().run(rc.checks_enabled)  # what a fresh context sees
    seen = []
    with rc.checking(not default):
        t = threading.Thread(target=lambda: seen.append(rc.checks_enabled()))
        t.start()
        t.join()
        assert rc.checks_enabled() is (not default)
    assert seen == [default]  # a new thread does not inherit the with-block's setting


@pytest.mark.parametrize("value, expected", [("1", "True True"), ("0", "False False")])
def test_environment_variable_sets_the_default(value, expected):
    # read when first needed, so it may be set after `import rulescore` (as a pytest plugin does)
    code = (f"import os, rulescore as rc, threading; os.environ['RULESCORE_CHECKS'] = {value!r}; "
            "out = []; t = threading.Thread(target=lambda: out.append(rc.checks_enabled())); "
            "t.start(); t.join(); print(rc.checks_enabled(), out[0])")
    env = {k: v for k, v in os.environ.items() if k != "RULESCORE_CHECKS"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=os.path.dirname(os.path.dirname(rc.__file__)),
    )
    assert out.stdout.strip() == expected


def test_callable_names_of_compiled_functions_are_the_ones_users_can_find() -> None:
    """A ufunc compiled outside NumPy (numba's, np.frompyfunc's) is not called ``numpy.<name>``;
    a pybind11 function is named without the binding's record type."""
    from rulescore._checks import callable_name

    def scaled(a, b):
        return a * b

    compiled = np.frompyfunc(scaled, 2, 1)
    assert callable_name(compiled).startswith("scaled")
    assert "numpy." not in callable_name(compiled)
    assert callable_name(np.hypot) == "numpy.hypot" and callable_name(np.hypot.reduce) == "numpy.hypot.reduce"
    distance = pytest.importorskip("scipy.spatial._distance_pybind")
    assert callable_name(distance.pdist_sqeuclidean) == "scipy.spatial._distance_pybind.pdist_sqeuclidean"
    special = pytest.importorskip("scipy.special")
    assert callable_name(special.gammaln) == "scipy.special.gammaln"
