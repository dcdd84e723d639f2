"""A Python function whose call reaches no traced value runs as it is, unrewritten (scikit-learn's
parameter plumbing inside a GP likelihood): exact, because a traced value is reachable through
no route the engine did not see. Each route a function may read a traced value through (an
argument's field, ``self``, a class attribute, a global, a module attribute, a closure cell, a
container, a store by code run as it is), set inside the differentiated function, still
differentiates the reading code: ``math.sin`` of a traced value in code run as it is would
refuse, and a wrong route would give a wrong number against finite differences."""

import collections
import collections.abc
import functools
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import check
from zygotepy._transform import ZygoteWarning

X = 0.7


class Holder:
    """An object a traced value is stored into (or a class attribute is set on)."""

    shared = 0.0

    def __init__(self, w=0.0):
        self.w = w

    def read(self):
        return math.sin(self.w)

    @classmethod
    def read_class(cls):
        return math.sin(cls.shared)


Pair = collections.namedtuple("Pair", "a b")  # built in C: storing into it is no store the engine sees
_GLOBAL = 0.0
_STATE: dict = {}
_LIST: list = []


class Kept(collections.abc.MutableMapping):
    """A mapping whose ``update`` is the standard library's, whose ``__setitem__`` is Python's."""

    def __init__(self):
        self.data = {}

    def __getitem__(self, k):
        return self.data[k]

    def __setitem__(self, k, v):
        self.data[k] = v

    def __delitem__(self, k):
        del self.data[k]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


_MAPPING = Kept()


def read_global():
    return math.sin(_GLOBAL)


def read_state():
    return math.sin(_STATE["w"])


def read_list():
    return math.sin(_LIST[-1])


def read_pair(p):
    return math.sin(p.a) * p.b


def read_mapping(d):
    return math.sin(d["w"])


_CALLBACKS: list = []
_W = np.array([0.3, -0.4])
_RNG = np.random.default_rng(3)


def register(callback):
    _CALLBACKS.append(callback)


def sin_of_registered():
    return math.sin(_CALLBACKS[-1]())


def sum_of_w():
    return np.sum(np.sin(_W))


def mask(shape):
    return _RNG.random(shape) > 0.5


def level():
    return 0


def read_kept():
    return math.sin(_MAPPING.data["w"])


def test_a_field_of_self_set_inside():
    def f(x):
        h = Holder()
        h.w = x * 2.0
        return h.read()

    check(f, X)


def test_self_built_with_the_traced_value():
    check(lambda x: Holder(x * 3.0).read(), X)


def test_a_class_attribute_set_inside():
    def f(x):
        Holder.shared = x * 2.0
        return Holder.read_class()

    def g(x):
        setattr(Holder, "shared", x * 3.0)  # noqa: B010  (the builtin's own route)
        return Holder.read_class()

    try:
        check(f, X)
        check(g, X)
    finally:
        Holder.shared = 0.0


def test_a_global_set_inside():
    def f(x):
        global _GLOBAL
        _GLOBAL = x * 2.0
        return read_global()

    def g(x):
        sys.modules[__name__]._GLOBAL = x * 3.0
        return read_global()

    def h(x):
        globals()["_GLOBAL"] = x * 4.0
        return read_global()

    try:
        for fn in (f, g, h):
            check(fn, X)
    finally:
        globals()["_GLOBAL"] = 0.0


def test_a_closure_cell():
    def f(x):
        y = x * 2.0
        return (lambda: math.sin(y))()

    def make():
        value = 0.0

        def put(v):
            nonlocal value
            value = v

        def get():
            return math.sin(value)

        return put, get

    put, get = make()

    def g(x):
        put(x * 3.0)
        return get()

    check(f, X)
    check(g, X)


def test_a_closure_over_a_local_handed_to_code_run_as_it_is():
    def f(x):
        y = 0.0
        register(lambda: y)  # holds no traced value yet: registered by code run as it is
        y = x * 2.0
        return sin_of_registered()

    try:
        check(f, X)
    finally:
        _CALLBACKS.clear()


def test_a_dict_or_list_set_inside():
    def f(x):
        _STATE["w"] = x * 2.0
        return read_state()

    def g(x):
        _LIST.append(x * 3.0)
        return read_list()

    def h(x):
        _LIST.extend([1.0, x * 4.0])
        return read_list()

    def k(x):
        _STATE.update(w=x * 5.0)
        return read_state()

    def through_a_local_name(x):
        state = _STATE  # a local name for a dict other references see
        state["w"] = x * 6.0
        return read_state()

    try:
        for fn in (f, g, h, k, through_a_local_name):
            check(fn, X)
    finally:
        _STATE.clear()
        _LIST.clear()


def test_a_store_made_by_code_without_source():
    namespace = {"_STATE": _STATE}
    exec("def keep(v):\n    _STATE['w'] = v\n", namespace)  # run as it is: its store is not seen

    def f(x):
        namespace["keep"](x * 2.0)
        return read_state()

    try:
        with pytest.warns(ZygoteWarning, match="no source for keep"):
            check(f, X)
    finally:
        _STATE.clear()


def test_an_argument_holding_the_traced_value():
    def local_dict(x):
        d = {}
        d["w"] = x * 2.0  # a dict only this frame holds: not escaped, but an argument below
        return read_mapping(d)

    def in_c_built_tuple(x):
        return read_pair(Pair(x * 2.0, 3.0))

    def in_partial(x):
        return functools.partial(read_pair, Pair(x * 2.0, 3.0))()

    def in_bound_method(x):
        return Holder(x * 2.0).read()

    for fn in (local_dict, in_c_built_tuple, in_partial, in_bound_method):
        check(fn, X)


def test_a_store_made_by_standard_library_code_run_as_it_is():
    def f(x):
        _MAPPING.update(w=x * 2.0)  # MutableMapping.update (frozen, run as it is) calls __setitem__
        return read_mapping(_MAPPING)

    def g(x):
        _MAPPING.update(w=x * 3.0)
        return read_kept()

    try:
        check(f, X)
        check(g, X)
    finally:
        _MAPPING.data.clear()


def test_an_array_written_through_an_alias_is_read_at_its_value():
    def total(a):
        return a.sum()

    def f(x):
        a = np.zeros(3)
        b = a
        a[0] = x * 2.0  # b sees it: the plain array's memory does not
        return total(b)

    check(f, X)


def test_a_closure_made_by_rulescore_code():
    def f(x):
        _, pullback = rc.rrule(math.sin, x)  # rulescore's closure over x (its code is never noted)
        return pullback(1.0)[1]

    check(f, X)


def test_implicit_parameters_read_by_a_function_without_arguments():
    (g,) = zp.gradient(lambda: sum_of_w(), zp.params(_W))[_W],
    np.testing.assert_allclose(g, np.cos(_W))


def test_random_draws_in_a_checkpointed_block():
    def block(h):
        return np.sum(h * np.sin(h) * mask(h.shape))

    x = np.linspace(0.1, 1.0, 8)
    state = _RNG.bit_generator.state
    (g,) = zp.gradient(lambda v: zp.checkpointed(block, v), x)  # drawn again in the backward pass
    _RNG.bit_generator.state = state
    np.testing.assert_allclose(g, (np.sin(x) + x * np.cos(x)) * mask(x.shape))


def test_a_legacy_adjoint_applying_without_traced_arguments():
    @zp.adjoint(level)
    def _():
        return level() + 1, lambda _: None

    def nested_level():
        return level()

    assert zp.gradient(lambda x: x * nested_level(), X) == (1.0,)
    assert nested_level() == 0


def test_isderiving_in_code_run_as_it_is():
    def deriving():
        return zp.isderiving()

    def f(x):
        return x * (2.0 if deriving() else 5.0)

    assert zp.gradient(f, X) == (2.0,)
    assert deriving() is False


def test_a_call_reaching_no_traced_value_runs_unrewritten(tmp_path):
    # in a process of its own: a legacy adjoint another test defined would turn the shortcut off
    module = tmp_path / "as_is_module.py"
    module.write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import zygotepy as zp

        codes = []

        def plumbing(config):
            codes.append(sys._getframe().f_code)
            return {k: v * 2 for k, v in config.items()}

        def loss(x, config):
            scale = plumbing(config)["scale"]
            return np.sum(x ** 2) * scale

        (g,) = zp.gradient(lambda x: loss(x, {"scale": 1.5}), np.ones(3))
        assert np.allclose(g, 6.0), g
        assert codes == [plumbing.__code__], "plumbing was rewritten"
        zp.gradient(lambda x: loss(x, {"scale": x[0]}), np.ones(3))
        assert codes[-1] is not plumbing.__code__, "a traced value reached plumbing unrewritten"
        print("ok")
    """))
    out = subprocess.run([sys.executable, str(module)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={**__import__("os").environ, "PYTHONPATH": ":".join(sys.path)})
    assert out.stdout.strip() == "ok", out.stderr


def test_a_library_context_manager_and_class_on_plain_values_run_as_they_are():
    """``with np.errstate(...)`` in differentiated code: NumPy's class built from plain values and
    its ``__enter__``/``__exit__`` run as they are (what their runner decides after searching the
    manager), at first order and nested: its setting is in force inside the block (a division by
    zero does not warn) and restored after it; the derivatives are the closed forms."""
    import warnings

    def f(x):
        with np.errstate(divide="ignore"):
            y = np.sum(x * np.log(x)) + np.sum(np.ones(1) / np.zeros(1) == np.inf)  # warns without
            inside = np.geterr()["divide"]
        assert inside == "ignore" and np.geterr()["divide"] != "ignore"
        return y

    x, v = np.array([0.5, 2.0]), np.array([1.0, -3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(2):  # the second time from the call site's kept answer
            np.testing.assert_allclose(zp.gradient(f, x)[0], np.log(x) + 1.0, rtol=1e-12)
            grad = lambda u: zp.gradient(f, u)[0]  # noqa: E731
            np.testing.assert_allclose(zp.jvp(grad, (x,), (v,))[1], v / x, rtol=1e-12)
            np.testing.assert_allclose(zp.gradient(lambda u: np.sum(grad(u) * v), x)[0], v / x, rtol=1e-12)
