"""The runtime of rewritten code: closures share cells, defaults carry over, in-place updates
are functional for traced values or refused with the engine's error naming the construct."""

import functools
import types

import numpy as np
import pytest

import zygotepy as zp


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


def test_setitem_of_a_traced_value_into_a_local_array_is_functional():
    def f(x):
        y = np.zeros(3)
        y[1] = x * 2.0
        return y.sum()

    assert zp.gradient(f, 1.0) == (2.0,)


def test_setitem_on_attribute_target_is_exact_and_written_back():
    class Holder:
        def __init__(self):
            self.buf = np.zeros(2)

    h = Holder()

    def f(x):
        h.buf[0] = x
        return h.buf.sum()

    assert zp.gradient(f, 1.5) == (1.0,)
    assert type(h.buf) is np.ndarray
    np.testing.assert_allclose(h.buf, [1.5, 0.0])  # as NumPy leaves it


def test_a_function_without_source_that_calls_a_rule_is_refused_not_silently_wrong():
    namespace = {"zp": zp, "operator": __import__("operator")}
    exec("def f(a, b):\n    return zp.hook(operator.neg, a) * b\n", namespace)
    refused = pytest.raises(zp.UntraceableError, match=r"f \(<string>\).*zygotepy\._lib\.hook")
    with pytest.warns(zp.ZygoteWarning), refused:
        zp.gradient(namespace["f"], 2.0, 3.0)


def test_a_function_without_source_calling_a_helper_that_calls_a_rule_is_refused():
    def helper(a):
        return zp.hook(lambda g: 2.0 * g, a)

    namespace = {"helper": helper}
    exec("g = lambda a: helper(a) * a", namespace)
    refused = pytest.raises(zp.UntraceableError, match=r"helper, which calls .*hook")
    with pytest.warns(zp.ZygoteWarning), refused:
        zp.gradient(namespace["g"], 2.0)


def test_a_function_without_source_using_only_operators_and_numpy_is_exact():
    namespace = {"np": np}
    exec("h = lambda a, b: np.sin(a) * b + a ** 2", namespace)
    with pytest.warns(zp.ZygoteWarning):
        g = zp.gradient(namespace["h"], 0.5, 3.0)
    assert g == (pytest.approx(3.0 * np.cos(0.5) + 1.0), pytest.approx(np.sin(0.5)))


def test_python_dash_c_with_a_hook_is_right_as_from_a_file(tmp_path):
    import subprocess
    import sys

    program = ("import zygotepy as zp, operator; "
               "print(zp.gradient(lambda a, b: zp.hook(operator.neg, a) * b, 2.0, 3.0))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "(-3.0, 2.0)", done.stderr  # the source is python -c's own text
    script = tmp_path / "hooked.py"
    script.write_text(program + "\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "(-3.0, 2.0)"


def test_defaultdict_accumulation_moves_references():
    from collections import defaultdict

    def f(x):
        d = defaultdict(float)
        d["k"] += x
        d["k"] += x * x
        return d["k"] * 2.0

    assert zp.gradient(f, 1.5) == (pytest.approx(2.0 * (1.0 + 2 * 1.5)),)


def test_type_of_a_traced_value_is_its_primal_class_and_a_rebound_type_is_called():
    """``type(x)`` in differentiated code (rewritten to skip the dispatcher) sees the primal's
    class at any depth of nesting; a local named ``type`` is an ordinary call."""

    def branches(x):
        if type(x) is float:
            return x * 3.0
        return np.sum(x) * 5.0

    assert zp.gradient(branches, 2.0) == (3.0,)
    np.testing.assert_array_equal(zp.gradient(branches, np.ones(2))[0], [5.0, 5.0])
    second = zp.gradient(lambda u: zp.gradient(lambda v: branches(v) * v, u)[0], 2.0)[0]
    assert second == 6.0  # d2/du2 of 3 u**2, decided on a box of a box

    def rebound(x):
        type = lambda v: v * 2.0  # noqa: A001, E731  (shadows the builtin)
        return type(x)

    assert zp.gradient(rebound, 1.5) == (2.0,)


def test_code_without_source_reading_an_implicit_parameter_is_refused():
    """A function made by exec runs as it is: arithmetic on its arguments records exactly, but an
    implicit parameter it reads (by name, or as a field of an object it reads) would lose its
    gradient, so the engine refuses, naming the variable."""
    class Model:
        pass

    model = Model()
    model.W = np.array([1.0, 2.0])
    W = np.array([3.0, 4.0])
    namespace = {"np": np, "model": model, "W": W}
    exec("def by_name(x):\n    return (W * x).sum()\n", namespace)
    exec("def by_field(x):\n    return (model.W * x).sum()\n", namespace)
    exec("def calls(x):\n    return by_field(x)\n", namespace)
    exec("def plain(x):\n    return (x * x).sum()\n", namespace)
    for name, param, read in (("by_name", W, "'W' of by_name"), ("by_field", model.W, "'model' of by_field"),
                              ("calls", model.W, "'model' of by_field")):
        with pytest.warns(zp.ZygoteWarning), pytest.raises(zp.UntraceableError, match=f"reads {read}"):
            zp.gradient(lambda: namespace[name](2.0), zp.params(param))
    with pytest.warns(zp.ZygoteWarning):
        assert zp.gradient(namespace["plain"], np.ones(2))[0].tolist() == [2.0, 2.0]


def _sine(x, scale=1.0, *, shift=0.0):  # type: ignore[no-untyped-def]
    return np.sin(x) * scale + shift * x


def _cosine(x, scale=1.0, *, shift=0.0):  # type: ignore[no-untyped-def]
    return np.cos(x) * scale + shift * x


_ASSIGNMENTS = {
    "__code__": (lambda f: setattr(f, "__code__", _cosine.__code__),
                 lambda x: -np.sin(x)),
    "__defaults__": (lambda f: setattr(f, "__defaults__", (3.0,)),
                     lambda x: 3.0 * np.cos(x)),
    "__kwdefaults__": (lambda f: setattr(f, "__kwdefaults__", {"shift": 2.0}),
                       lambda x: np.cos(x) + 2.0),
}


@pytest.mark.parametrize("assigned", sorted(_ASSIGNMENTS))
@pytest.mark.parametrize("mode", ["gradient", "jvp", "nested"])
@pytest.mark.parametrize("where", ["called", "given"])
def test_a_function_whose_code_or_defaults_are_assigned_is_differentiated_as_it_is_now(
        assigned: str, mode: str, where: str) -> None:
    """IPython's autoreload assigns an edited function's ``__code__`` and ``__defaults__`` in
    place: the next gradient must differentiate the new body, not the rewritten old one kept
    for the same function object (it did: the old derivative, silently)."""
    g = types.FunctionType(_sine.__code__, globals(), "g", _sine.__defaults__)
    g.__kwdefaults__ = dict(_sine.__kwdefaults__)

    def f(x):  # type: ignore[no-untyped-def]
        return g(x) * 1.0

    target = f if where == "called" else g

    def derivative() -> float:
        if mode == "gradient":
            return float(zp.gradient(target, 0.3)[0])
        if mode == "jvp":
            return float(zp.jvp(target, (0.3,), (1.0,))[1])
        return float(zp.gradient(lambda x: zp.gradient(target, x)[0], 0.3)[0])  # the second derivative

    for _ in range(2):  # the first call fills every cache
        derivative()
    assign, want = _ASSIGNMENTS[assigned]
    assign(g)
    # the nested mode's: the derivative of the new first derivative, by central differences
    expected = want(0.3) if mode != "nested" else (want(0.3 + 1e-6) - want(0.3 - 1e-6)) / 2e-6
    assert derivative() == pytest.approx(expected, rel=1e-6, abs=1e-8)
