"""Rules for any callable are used wherever it is called; otherwise the engine recurses."""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from tests.zygotepy import helpers_module
from tests.zygotepy.helpers_module import Scaler, calls_scaled_square, scaled_square


def _marking_rule(f, calls, slope):
    @rc.rrule.register(f)
    def marked_rrule(*args):
        calls.append(f.__name__)
        y = f(*args)
        return y, lambda ybar: (rc.NoTangent(), *(ybar * slope for _ in args))


def local_double(x):
    return 2 * x


def test_rule_for_imported_function_used_at_depth():
    calls = []
    # a deliberately different derivative proves the rule, not the body, was used
    _marking_rule(scaled_square, calls, 100.0)
    try:
        assert zp.gradient(calls_scaled_square, 2.0) == (100.0,)
        assert zp.gradient(lambda x: helpers_module.scaled_square(x), 2.0) == (100.0,)
        assert calls == ["scaled_square", "scaled_square"]
    finally:
        rc.rrule.opt_out(scaled_square)
    assert zp.gradient(calls_scaled_square, 2.0) == (12.0,)  # opted out: the body is differentiated


def test_rule_registered_after_first_use_is_used_next_time():
    def triple(x):
        return 3 * x

    assert zp.gradient(lambda x: triple(x), 1.0) == (3.0,)
    calls = []
    _marking_rule(triple, calls, 7.0)
    assert zp.gradient(lambda x: triple(x), 1.0) == (7.0,)
    assert calls == ["triple"]


def test_rule_for_a_method_and_a_class():
    calls = []

    @rc.rrule.register(Scaler.apply)
    def apply_rrule(self, x):
        calls.append("apply")
        return self.apply(x), lambda ybar: (rc.NoTangent(), rc.NoTangent(), ybar * 10.0)

    s = Scaler(2.0)
    assert zp.gradient(lambda x: s.apply(x), 0.0) == (10.0,)
    assert calls == ["apply"]

    class Celsius:
        def __init__(self, t):
            self.t = t

    @rc.rrule.register(Celsius)
    def celsius_rrule(t):
        return Celsius(t), lambda ybar: (rc.NoTangent(), 5.0 * ybar.t)

    assert zp.gradient(lambda t: Celsius(t).t, 1.0) == (5.0,)


def test_rule_for_math_builtin_and_numpy_function():
    assert zp.gradient(math.sin, 0.0) == (1.0,)
    assert zp.gradient(lambda x: abs(x), -2.0) == (-1.0,)
    (g,) = zp.gradient(lambda x: np.sum(np.exp(x)), np.zeros(3))
    np.testing.assert_allclose(g, np.ones(3))


def test_compiled_function_without_rule_names_itself():
    vectorised_exp = np.frompyfunc(math.exp, 1, 1)  # a ufunc nobody registered a rule for
    with pytest.raises(zp.UntraceableError, match=r"^exp \(vectorized\) has no rrule") as refused:
        zp.gradient(lambda x: vectorised_exp(x), 1.0)
    assert "numpy.exp" not in str(refused.value)  # a ufunc compiled elsewhere is not NumPy's
    with pytest.raises(zp.UntraceableError, match=r"bytes"):
        zp.gradient(lambda x: len(bytes([x])) * x, 1.0)


def test_plain_conversion_inside_compiled_code_raises():
    import struct

    with pytest.raises(zp.UntraceableError, match=r"_struct\.pack has no rrule .* argument 2"):
        zp.gradient(lambda x: struct.unpack("d", struct.pack("d", x))[0], 1.0)


def test_float_conversion_in_rewritten_code_is_fine():
    assert zp.gradient(lambda x: float(x) * 2.0, np.float64(3.0)) == (2.0,)


def test_source_less_function_still_works_by_overloading_and_warns():
    namespace = {}
    exec(textwrap.dedent("""
        def cube(x):
            return x * x * x
    """), namespace)
    with pytest.warns(zp.ZygoteWarning, match="no source"):
        assert zp.gradient(namespace["cube"], 2.0) == (12.0,)


def test_print_inside_differentiated_code_sees_plain_values(capsys):
    def f(x):
        print(x)
        return x * 2

    zp.gradient(f, 1.5)
    assert capsys.readouterr().out.strip() == "1.5"


def test_isinstance_and_len_see_the_primal():
    def f(x):
        assert isinstance(x, np.ndarray) and len(x) == 3 and x.shape == (3,)
        return x.sum()

    np.testing.assert_allclose(zp.gradient(f, np.ones(3))[0], np.ones(3))


def test_first_call_is_fast(tmp_path):
    script = tmp_path / "first_call.py"
    script.write_text(textwrap.dedent("""
        import time, numpy as np, zygotepy as zp
        def f(x):
            y = x
            for i in range(3):
                y = np.tanh(y) * 2.0 + np.sin(y)
            return y.sum()
        zp.gradient(f, np.ones(3))          # warm the library
        def g(x):
            a = np.sin(x); b = np.cos(a); c = a * b
            return (c + a).sum()
        t = time.process_time(); zp.gradient(g, np.ones(3)); first = time.process_time() - t
        print(first)
    """))
    first = float(subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                 check=True).stdout.split()[-1])
    assert first < 0.5, f"first call on a new function took {first:.3f} s of CPU"


def test_rules_and_adjoints_defined_after_first_use_take_effect():
    """The dispatcher caches which callables take its first-order fast path; registering a
    rule or a legacy adjoint later must still be seen at the next call."""

    def triple(x):
        return 3.0 * x

    assert zp.gradient(triple, 2.0) == (3.0,)  # differentiated through: no rule yet
    rc.rrule.register(triple)(lambda x: (triple(x), lambda g: (rc.NoTangent(), 30.0 * g)))
    assert zp.gradient(triple, 2.0) == (30.0,)  # the rule, now on the fast path
    assert zp.gradient(triple, 2.0) == (30.0,)
    # a rule for floats only, after the fast path kept the one rule above as the only one
    rc.rrule.register(triple, float)(lambda x: (triple(x), lambda g: (rc.NoTangent(), 40.0 * g)))
    assert zp.gradient(triple, 2.0) == (40.0,)
    np.testing.assert_array_equal(zp.gradient(lambda v: np.sum(triple(v)), np.ones(2))[0], [30.0, 30.0])

    @zp.adjoint(triple)
    def _(x):
        return triple(x), lambda g: (300.0 * g,)

    assert zp.gradient(triple, 2.0) == (300.0,)



class _Doubler:
    def __init__(self, k):
        self.k = k

    def times(self, x):
        return self.k * x


def _square(x):
    return x * x


def test_call_sites_see_rules_registered_after_first_use_at_every_level():
    """Each call site of rewritten code keeps the dispatcher's answer for the callable it met last
    (``zygotepy._runtime.call_site``): a function, a bound method and a constructor differentiated
    through are answered by the site next time, until a rule registered later applies, at first
    order and in a nested gradient alike."""

    def f(x):
        return _square(_Doubler(2.0).times(x))

    def second(x):
        return zp.gradient(f, x)[0]

    for _ in range(2):  # the second time from the sites' kept answers
        assert zp.gradient(f, 1.5) == (12.0,)  # d/dx (2x)^2 = 8x
        assert zp.gradient(second, 1.5) == (8.0,)
    calls = []
    rc.rrule.register(_square)(lambda x: (calls.append("square") or _square(x),
                                          lambda g: (rc.NoTangent(), 100.0 * x * g)))
    assert zp.gradient(f, 1.5) == (600.0,)  # 100 * (2x) * 2
    assert zp.gradient(second, 1.5) == (400.0,)
    rc.rrule.register(_Doubler.times)(lambda self, x: (calls.append("times") or self.times(x),
                                                       lambda g: (rc.NoTangent(), rc.NoTangent(), 10.0 * g)))
    assert zp.gradient(f, 1.5) == (3000.0,)  # 100 * (2x) * 10
    assert zp.gradient(second, 1.5) == (10000.0,)  # d/dx (100 * 10 * times(x)), times' = 10 again
    assert "square" in calls and "times" in calls


class _Scaled:
    def __init__(self, x):
        self.v = 2.0 * x


def test_a_call_site_constructs_a_class_with_its_current_init():
    """A call site keeps a class's differentiable constructor while the class's ``__init__`` is
    the one it was made for: a replaced ``__init__`` is used at the next call."""

    def f(x):
        return _Scaled(x).v

    original = _Scaled.__init__
    try:
        for _ in range(2):
            assert zp.gradient(f, 1.0) == (2.0,)

        def tripled(self, x):
            self.v = 3.0 * x

        _Scaled.__init__ = tripled  # type: ignore[method-assign]
        assert zp.gradient(f, 1.0) == (3.0,)
    finally:
        _Scaled.__init__ = original  # type: ignore[method-assign]

@pytest.mark.parametrize("checks", [True, False])
def test_first_order_fast_path_gives_the_same_gradients_with_and_without_checking(checks):
    W = np.array([[1.0, -2.0], [0.5, 3.0]])

    def f(x, s):
        return np.sum(np.tanh(W @ x + 1.0) * s) + math.sin(s) * s - 2 * s

    with rc.checking(checks):
        gx, gs = zp.gradient(f, np.array([0.1, -0.3]), 0.7)
    t = np.tanh(W @ np.array([0.1, -0.3]) + 1.0)
    np.testing.assert_allclose(gx, W.T @ ((1 - t * t) * 0.7), rtol=1e-12)
    assert gs == pytest.approx(np.sum(t) + math.cos(0.7) * 0.7 + math.sin(0.7) - 2, rel=1e-12)


@pytest.mark.parametrize("checks", [True, False])
@pytest.mark.parametrize("x", [0.7, np.float64(0.7), np.array([0.7, -1.2])],
                         ids=["float", "float64", "array"])
def test_first_order_fast_path_every_argument_layout(checks, x):
    """One and two arguments (traced or constant in either place, ints among the constants),
    three arguments, and a call with nothing traced: the fast path's cases, against closed forms."""

    def f(u, s):
        a = np.sin(u) * 2.0 + 3 * u - u / 4.0  # traced first, constant second (int and float)
        b = 2.0 * u + 1.5 / (1.0 + u * u)  # constant first
        c = np.clip(u, -1.0, 1.0) * s + np.arctan2(u, s)  # three arguments; both traced
        d = np.sin(0.3) * np.cos(np.float64(0.2)) + float(np.hypot(3.0, 4.0))  # nothing traced
        return np.sum(a + b + c + d * u)

    with rc.checking(checks):
        gu, gs = zp.gradient(f, x, 0.9)
    u, s = np.asarray(x), 0.9
    inside = (u > -1.0) & (u < 1.0)
    d = np.sin(0.3) * np.cos(0.2) + 5.0
    expected_u = (2.0 * np.cos(u) + 3 - 0.25 + 2.0 - 3.0 * u / (1.0 + u * u) ** 2 + inside * s
                  + s / (u * u + s * s) + d)
    np.testing.assert_allclose(gu, expected_u, rtol=1e-12)
    assert gs == pytest.approx(np.sum(np.clip(u, -1.0, 1.0) - u / (u * u + s * s)), rel=1e-12)


def test_higher_order_builtins_call_back_into_the_engine():
    import functools

    assert zp.gradient(lambda xs: sum(map(math.sin, xs)), [0.0, 1.0]) == ([1.0, math.cos(1.0)],)
    assert zp.gradient(lambda xs: sum(filter(lambda v: v > 0, xs)), [-1.0, 2.0]) == ([None, 1.0],)
    assert zp.gradient(lambda xs: sorted(xs, key=lambda v: -v)[0] * 2, [1.0, 3.0]) == ([None, 2.0],)
    assert zp.gradient(lambda xs: functools.reduce(lambda a, b: a * b, xs), [2.0, 3.0, 4.0]) == (
        [12.0, 8.0, 6.0],)
    assert zp.gradient(lambda xs: max(xs, key=abs), [1.0, -3.0]) == ([None, 1.0],)


class _Hyperparameters:
    """sklearn's kernels in small: names found with ``str`` methods, numbers read by name."""

    def __init__(self, scale, shift):
        self.hyperparameter_scale, self.hyperparameter_shift = "scale", "shift"
        self.scale, self.shift = scale, shift

    @property
    def names(self):
        return [getattr(self, a) for a in dir(self) if a.startswith("hyperparameter_")]

    def value(self, x):
        total = 0.0
        for name in self.names:
            label = "{}={}".format(name.upper(), 1).split("=")[0].lower()  # noqa: UP032  (str.format is the point)
            power = (3).bit_length() - int((2.5).is_integer())  # 2
            total = total + getattr(self, label) * x ** power
        return total


@pytest.mark.parametrize("x", [0.5, -1.25])
def test_c_methods_of_strings_and_numbers_on_plain_values_inside_a_gradient(x):
    """Methods of strings and numbers called on strings and numbers (they run as they are) next
    to traced attributes: the derivative is the closed form's."""

    def f(scale, shift, x):
        return _Hyperparameters(scale, shift).value(x) * scale

    g = zp.gradient(f, 1.5, 0.25, x)
    assert g[0] == pytest.approx(2 * 1.5 * x**2 + 0.25 * x**2, rel=1e-12)
    assert g[1] == pytest.approx(1.5 * x**2, rel=1e-12)
    assert g[2] == pytest.approx(1.5 * 2 * (1.5 + 0.25) * x, rel=1e-12)


def test_string_formatting_of_a_traced_value_still_takes_the_general_path():
    def f(x):
        text = "{:.3f}".format(x)  # noqa: UP032  (a traced argument: not strings and numbers alone)
        return x * len(text) + float(text.startswith("0.5"))

    assert zp.gradient(f, 0.5) == (5.0,)


def test_string_methods_are_logged_when_the_engine_logs(caplog):
    import logging

    with caplog.at_level(logging.DEBUG, logger="zygotepy"):
        zp.gradient(lambda x: x * float("ab".startswith("a")), 2.0)
    assert any("startswith" in r.zygotepy_call for r in caplog.records if r.name == "zygotepy")


def test_a_legacy_adjoint_on_a_string_method_applies_without_traced_arguments():
    """Zygote calls an ``@adjoint`` even when no argument is traced: a method of ``str`` with one
    is not run as it is (in a child process: the adjoint stays defined)."""
    program = textwrap.dedent("""
        import zygotepy as zp
        calls = []
        @zp.adjoint(str.upper)
        def _(s):
            calls.append(s)
            return s.upper() + "!", lambda g: (None,)
        def f(x):
            return x * len("ab".upper())
        print(zp.gradient(f, 2.0)[0], calls)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3.0", "['ab']"]


def test_array_transposes_of_a_box_are_differentiated_at_every_level():
    """``x.T`` and ``x.mT`` of a traced array are read as ``np.transpose`` and
    ``np.linalg.matrix_transpose`` (the same views, whose rules the fast paths apply): first
    order, forward-over-reverse and reverse-over-reverse give the closed forms."""
    rng = np.random.default_rng(0)
    B, L, V = rng.standard_normal((3, 4, 4))
    S = B + B.T

    def f(L):
        return np.sum((L @ L.T) * B) + np.sum(L.mT * B) + np.sum(np.stack([L, 2 * L]).mT[1] * B)

    grad = lambda L: zp.gradient(f, L)[0]  # noqa: E731
    expected = S @ L + B.T + 2 * B.T  # d/dL <L L', B> = (B + B') L; <L', B> and <2 L', B>: B', 2 B'
    np.testing.assert_allclose(grad(L), expected, rtol=1e-12)
    np.testing.assert_allclose(zp.jvp(grad, (L,), (V,))[1], S @ V, rtol=1e-12)
    np.testing.assert_allclose(zp.gradient(lambda u: np.sum(grad(u) * V), L)[0], S @ V, rtol=1e-12)


def test_array_transposes_use_a_getattr_rule_registered_for_arrays():
    """A ``getattr`` rule registered for NumPy arrays answers ``x.T`` of a traced array (rules
    first: the read as ``np.transpose`` is only for the library's generic rule). In a child
    process: the rule stays registered."""
    program = textwrap.dedent("""
        import numpy as np, rulescore as rc, zygotepy as zp
        calls = []
        @rc.rrule.register(getattr, np.ndarray, str)
        def array_getattr_rrule(x, name):
            calls.append(name)
            return getattr(x, name), lambda g: (rc.NoTangent(), 10.0 * g.T, rc.NoTangent())
        print(zp.gradient(lambda x: np.sum(x.T), np.ones((2, 3)))[0].tolist(), calls)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert out.stdout.split("]] ") == ["[[10.0, 10.0, 10.0], [10.0, 10.0, 10.0", "['T']\n"]
