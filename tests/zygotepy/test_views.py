"""Writes through views and aliases (zygotepy._views): what NumPy refuses is refused."""

import collections
import types

import numpy as np
import pytest

import zygotepy as zp


def _frozen(*values):
    a = np.array(values, dtype=float)
    a.flags.writeable = False
    return a


def _set_element(a):
    a[0] = 5.0
    return np.sum(a)


def _add_in_place(a):
    a += 1.0
    return np.sum(a * a)


def _fill(a):
    a[...] = 2.0
    return np.sum(a)


def _ufunc_out(a):
    np.multiply(a, 3.0, out=a)
    return np.sum(a)


def _through_a_slice(a):
    head = a[:1]
    head *= 2.0
    return np.sum(a)


@pytest.mark.parametrize("f", [_set_element, _add_in_place, _fill, _ufunc_out, _through_a_slice])
def test_a_write_into_a_read_only_argument_is_refused_as_numpy_refuses_it(f):
    with pytest.raises(ValueError, match="read-only"):
        f(_frozen(1.0, 2.0))  # NumPy itself
    a = _frozen(1.0, 2.0)
    with pytest.raises(ValueError, match="read-only"):
        zp.gradient(f, a)
    np.testing.assert_array_equal(a, [1.0, 2.0])


def test_a_write_into_a_read_only_global_is_refused():
    table = _frozen(1.0, 2.0, 3.0)

    def f(x):
        table[1] = x
        return x * 2.0

    with pytest.raises(ValueError, match="read-only"):
        zp.gradient(f, 1.0)


@pytest.mark.parametrize("f", [_set_element, _add_in_place, _fill, _ufunc_out, _through_a_slice])
def test_the_same_writes_into_a_writable_argument_are_differentiated(f):
    x = np.array([1.0, 2.0])
    (g,) = zp.gradient(f, x.copy())
    eps, numeric = 1e-6, []
    for i in range(2):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        numeric.append((f(up) - f(down)) / (2 * eps))
    np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-8)


# -- writes made by a differentiation inside another reach the enclosing one ----------------------------
def test_a_nested_gradient_writes_into_a_global_buffer_as_numpy_would():
    buffer = np.zeros(2)

    def inner(h):
        buffer[...] = h
        return np.sum(h * h)

    x = np.array([1.0, 2.0])
    (g,) = zp.gradient(lambda v: np.sum(zp.gradient(inner, v)[0]), x)
    np.testing.assert_allclose(g, [2.0, 2.0])
    np.testing.assert_array_equal(buffer, x)


def _fd(f, x, eps=1e-6):
    out = []
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        out.append((f(up) - f(down)) / (2 * eps))
    return np.array(out)


def _reads_what_the_inner_gradient_wrote(x):
    a = np.zeros(2)

    def inner(h):
        a[...] = h * h
        return np.sum(h)

    zp.gradient(inner, x)
    return np.sum(a * x)


def _writes_a_slice_in_the_inner_gradient(x):
    a = np.ones(3)

    def inner(h):
        a[1:] = np.sin(h)
        return np.sum(h * a[1:])

    zp.gradient(inner, x)
    return np.sum(a) * x[0]


def _adds_in_place_in_the_inner_gradient(x):
    a = np.array([1.0, 1.0])

    def inner(h):
        a[...] += h * 3.0
        return np.sum(h)

    zp.gradient(inner, x)
    zp.gradient(inner, x)  # twice: both writes count
    return np.sum(a * a)


@pytest.mark.parametrize("f", [_reads_what_the_inner_gradient_wrote, _writes_a_slice_in_the_inner_gradient,
                               _adds_in_place_in_the_inner_gradient])
def test_the_enclosing_function_reads_the_inner_gradients_writes_with_their_derivatives(f):
    x = np.array([0.5, 1.5])
    (g,) = zp.gradient(f, x.copy())
    np.testing.assert_allclose(g, _fd(f, x), rtol=1e-5, atol=1e-8)


# -- traced values stored where they outlive the call ------------------------------------------------------
class _Filter:
    def __init__(self):
        self.state = np.zeros(2)
        self.count = 0.0

    def update(self, x):
        self.state = 0.5 * self.state + x
        self.count = self.count + x[0]
        return np.sum(self.state)


def test_an_object_updated_inside_the_loss_holds_plain_values_afterwards():
    flt = _Filter()
    x = np.array([1.0, 2.0])
    for _ in range(3):  # the next use works, inside a gradient and outside
        (g,) = zp.gradient(flt.update, x)
        np.testing.assert_allclose(g, [1.0, 1.0])
        assert type(flt.state) is np.ndarray and type(flt.count) is np.float64
    np.testing.assert_allclose(flt.state, 1.75 * x)
    assert flt.update(x) == pytest.approx(np.sum(1.875 * x))


def test_dicts_lists_and_cells_written_inside_the_loss_hold_plain_values_afterwards():
    log, history = {}, []
    last = None

    def f(x):
        nonlocal last
        log["y"] = x * 2.0
        history.append(np.sin(x))
        last = x + 1.0
        return np.sum(x)

    x = np.array([0.5, 1.0])
    zp.gradient(f, x)
    assert type(log["y"]) is np.ndarray and type(history[0]) is np.ndarray and type(last) is np.ndarray
    np.testing.assert_allclose(history[0], np.sin(x))
    np.testing.assert_allclose(last, x + 1.0)


def test_a_traced_value_in_a_tuple_is_replaced_where_the_tuple_is_held_or_named_in_a_warning():
    listed, logged, kept = [], {}, []
    immutable = type("Immutable", (tuple,), {"__slots__": ()})

    def f(x):
        listed.append((x * 3.0, "a"))
        logged["args"] = (x,)
        kept.append(immutable((x * 4.0,)))  # a tuple subclass: cannot be replaced
        return x * 2.0

    with pytest.warns(UserWarning, match="traced value stored in a Immutable"):
        zp.gradient(f, 1.0)
    assert listed == [(3.0, "a")] and type(listed[0][0]) is float and logged["args"] == (1.0,)


def _stores_everywhere(store):
    """A loss that stores traced values where they outlive it: an attribute, a dict, a list, a
    closure cell, its own argument list and its output list."""
    last = None

    def f(xs):
        nonlocal last
        store.state = xs[0] * 2.0
        store.log["y"] = np.sin(xs[1])
        store.history.append(xs[0] * xs[1])
        store.args = xs
        last = xs[1] + 1.0
        out = [xs[0] * xs[1], np.cos(xs[1])]
        store.out = out
        return out

    return f, lambda: last


@pytest.mark.parametrize("has_aux", [False, True])
def test_a_pullback_leaves_plain_values_where_f_stored_traced_ones_and_back_still_works(has_aux):
    store = types.SimpleNamespace(log={}, history=[])
    f, last = _stores_everywhere(store)
    xs = [np.array([0.5, 1.5]), 2.0]
    g = (lambda a: (f(a), "note")) if has_aux else f
    y, back, *aux = zp.pullback(g, xs, has_aux=has_aux)
    assert aux == (["note"] if has_aux else [])
    plain = [store.state, store.log["y"], store.history[0], *store.args, last(), *store.out]
    assert not any(type(v).__name__ == "Box" for v in plain)
    np.testing.assert_allclose(store.history[0], xs[0] * 2.0)
    assert store.state.sum() + 1.0 == pytest.approx(5.0)  # usable at once, not an escaped box
    ybar = [np.array([1.0, -1.0]), 2.0]
    for _ in range(2):  # back, called again, gives the same
        ((ga, gb),) = back(ybar)
        np.testing.assert_allclose(ga, xs[1] * ybar[0])
        assert gb == pytest.approx(np.sum(xs[0] * ybar[0]) - 2.0 * np.sin(xs[1]))


def test_a_pullback_of_implicit_parameters_leaves_plain_values_behind():
    W = np.array([1.0, -2.0])
    seen = {}

    def loss():
        seen["w2"] = W * W
        return np.sum(W * W)

    y, back = zp.pullback(loss, zp.params(W))
    assert type(seen["w2"]) is np.ndarray
    np.testing.assert_allclose(back(1.0)[W], 2.0 * W)


def test_values_a_checkpointed_function_stores_are_plain_after_the_differentiation():
    """The forward pass and the backward pass's recomputation both store traced values (a
    checkpoint runs ``f`` twice, as PyTorch's does); after the outermost call every one is plain."""
    store = types.SimpleNamespace(history=[])

    def f(x):
        store.state = x * 2.0
        store.history.append(np.sin(x))
        return np.sum(store.state * x)

    x = np.array([0.5, 1.5])
    for run in (lambda: zp.gradient(lambda v: zp.checkpointed(f, v), x),
                lambda: zp.pullback(lambda v: zp.checkpointed(f, v), x)[1](1.0),
                lambda: zp.gradient(lambda v: zp.gradient(lambda u: zp.checkpointed(f, u), v)[0].sum(), x)):
        store.history.clear()
        run()
        assert [type(v) for v in (store.state, *store.history)] == [np.ndarray] * (1 + len(store.history))
    np.testing.assert_allclose(zp.gradient(lambda v: zp.checkpointed(f, v), x)[0], 4.0 * x)


def test_a_value_a_checkpointed_function_stored_raises_if_the_loss_reads_it():
    """Its derivative was not kept (the checkpoint keeps only the returned value's): a read inside
    the differentiation refuses rather than treating it as a constant."""
    store = types.SimpleNamespace()

    def f(x):
        store.state = x * 2.0
        return np.sum(x * x)

    with pytest.raises(TypeError, match="differentiation is not active"):
        zp.gradient(lambda v: zp.checkpointed(f, v) + np.sum(store.state), np.array([0.5, 1.5]))


class _CachingLayer:
    """A hand-written layer that keeps what its backward pass would need, as NumPy code does."""

    def __init__(self):
        self.log, self.seen = {}, []

    def __call__(self, x, w):
        self.inputs = x
        self.pre = (x * w, w)
        self.log["act"] = np.tanh(x * w)
        self.seen.append(self.log["act"])
        self.seen[0] = self.seen[-1] * 1.0
        return np.sum(self.log["act"])


@pytest.mark.parametrize("entry", ["gradient", "pullback", "jvp", "nested"])
def test_values_rewritten_code_stores_are_released_without_searching_the_heap(monkeypatch, entry):
    """Attributes, dict and list entries, tuples there: where rewritten code stores traced values its
    trace knows, so a program that caches intermediates does not pay a search of the whole heap."""
    from zygotepy import _views

    def searched(*objects):
        raise AssertionError("the heap was searched for escaped traced values")

    monkeypatch.setattr(_views.gc, "get_referrers", searched)
    layer, x, w = _CachingLayer(), np.array([0.5, -1.0]), 1.5
    run = {"gradient": lambda: zp.gradient(layer, x, w),
           "pullback": lambda: zp.pullback(layer, x, w)[1](1.0),
           "jvp": lambda: zp.jvp(layer, (x, w), (np.ones(2), 1.0)),
           "nested": lambda: zp.gradient(lambda v: zp.gradient(layer, v, w)[0].sum(), x)}[entry]
    run()
    values = (layer.inputs, *layer.pre, layer.log["act"], *layer.seen)
    assert all(type(v) in (np.ndarray, float) for v in values), [type(v).__name__ for v in values]
    np.testing.assert_allclose(layer.log["act"], np.tanh(x * w))


def test_a_gradient_whose_values_do_not_escape_never_searches_the_heap(monkeypatch):
    from zygotepy import _views

    def searched(*objects):
        raise AssertionError("the heap was searched for escaped traced values")

    monkeypatch.setattr(_views.gc, "get_referrers", searched)
    W, buffer = np.ones(2), np.zeros(2)

    def writes(x):
        buffer[...] = x * 2.0
        return np.sum(buffer * W)

    zp.gradient(lambda x: np.sum(np.sin(x) * W), np.ones(2))
    zp.gradient(writes, np.ones(2))
    zp.gradient(lambda: np.sum(W * W), zp.params(W))
    zp.gradient(lambda x: zp.checkpointed(lambda h: np.sum(np.tanh(h)), x), np.ones(2))
    zp.gradient(lambda x: zp.gradient(lambda y: y * y * x, x)[0], 1.5)
    zp.withgradient(lambda d: d["a"] * d["b"], {"a": 1.0, "b": 2.0})
    # implicit parameters, with views of them and writes: their boxes are in the trace's own tables
    zp.gradient(lambda: np.sum(W[1:] * W[:1]), zp.params(W))
    zp.gradient(lambda: writes(W), zp.params(W))
    zp.withgradient(lambda: np.sum(np.tanh(W)), zp.params(W, buffer))
    zp.gradient(lambda x: np.sum(x[::-1] * 3.0), np.ones(3))


# -- the same through implicit parameters (zp.params) ------------------------------------------------------
_W = np.array([0.5, -1.0, 2.0])


class _Model:
    def __init__(self):
        self.W = _W
        self.cache = {}
        self.history = []


def _fd_param(f, p, h=1e-6):
    g = np.zeros_like(p)
    for i in range(p.size):
        old = p[i]
        p[i] = old + h
        up = f()
        p[i] = old - h
        down = f()
        p[i] = old
        g[i] = (up - down) / (2 * h)
    return g


def _stores_in_a_dict(m):
    m.cache["y"] = m.W * 2.0
    return np.sum(m.cache["y"] ** 2)


_STORES = {  # a loss over the model's parameter that stores what it computed on the model
    "attribute": lambda m: setattr(m, "last", np.tanh(m.W)) or np.sum(m.last),
    "dict": _stores_in_a_dict,
    "list": lambda m: m.history.append(np.sin(m.W)) or np.sum(m.history[-1]),
    "the parameter itself": lambda m: setattr(m, "seen", m.W) or np.sum(m.seen * m.W),
    "a view of it": lambda m: setattr(m, "head", m.W[:2]) or np.sum(m.head ** 3),
}


@pytest.mark.parametrize("store", sorted(_STORES))
@pytest.mark.parametrize("entry", ["gradient", "withgradient"])
def test_values_stored_during_an_implicit_parameter_gradient_are_plain_afterwards(store, entry):
    model = _Model()
    loss = _STORES[store]
    run = zp.gradient if entry == "gradient" else lambda f, ps: zp.withgradient(f, ps).grad
    for _ in range(2):  # the next use works, in a gradient and outside
        gs = run(lambda: loss(model), zp.params(model.W))
        np.testing.assert_allclose(gs[_W], _fd_param(lambda: float(loss(_Model())), _W), rtol=1e-5, atol=1e-8)
        stored = [*model.__dict__.values(), *model.cache.values(), *model.history]
        leaves = [v for s in stored for v in (s if type(s) is tuple else (s,))]
        assert not any(type(v).__name__ == "Box" for v in leaves)
    assert getattr(model, "seen", _W) is _W  # a parameter stored is the parameter array again
    assert float(loss(model)) == pytest.approx(float(loss(_Model())))


class _Slotted:
    __slots__ = ("value",)


def test_an_implicit_parameter_stored_where_it_cannot_be_replaced_is_named_in_a_warning():
    slotted = _Slotted()

    def loss():
        slotted.value = _W * 2.0  # no __dict__ to replace it in
        return np.sum(_W)

    with pytest.warns(UserWarning, match="traced value stored in a _Slotted"):
        zp.gradient(loss, zp.params(_W))


def test_values_appended_to_a_deque_are_plain_afterwards():
    kept = collections.deque()
    zp.gradient(lambda: kept.append(_W * 2.0) or np.sum(_W), zp.params(_W))
    assert type(kept[0]) is np.ndarray
    np.testing.assert_allclose(kept[0], 2.0 * _W)


def test_implicit_parameters_with_writes_store_plain_values_and_write_back():
    buffer, model = np.zeros(3), _Model()

    def loss():
        buffer[...] = model.W * 2.0
        model.last = buffer * 1.0
        return np.sum(buffer * model.W)

    gs = zp.gradient(loss, zp.params(model))
    np.testing.assert_allclose(gs[_W], 4.0 * _W)
    np.testing.assert_allclose(buffer, 2.0 * _W)  # as NumPy leaves it
    assert type(model.last) is np.ndarray
    np.testing.assert_allclose(model.last, 2.0 * _W)


# -- the same after jvp, jacobian (each mode), withjacobian and hessian ------------------------------------
class _Recorder:
    def __init__(self):
        self.seen = []

    def __call__(self, x):
        h = np.tanh(x * 2.0)
        self.seen.append(h)
        self.last = h
        return h


@pytest.mark.parametrize("entry", ["jvp", "jacobian forward", "jacobian forward chunked", "jacobian reverse",
                                   "withjacobian", "hessian", "hessian_reverse"])
def test_values_a_model_stores_during_any_entry_point_are_plain_afterwards(entry):
    model, x = _Recorder(), np.array([0.2, -0.4])
    run = {"jvp": lambda: zp.jvp(model, (x,), (np.ones(2),)),
           "jacobian forward": lambda: zp.jacobian(model, x, mode="forward"),
           "jacobian forward chunked": lambda: zp.jacobian(model, x, mode="forward", chunk=1),
           "jacobian reverse": lambda: zp.jacobian(model, x, mode="reverse"),
           "withjacobian": lambda: zp.withjacobian(model, x),
           "hessian": lambda: zp.hessian(lambda v: np.sum(model(v)), x),
           "hessian_reverse": lambda: zp.hessian_reverse(lambda v: np.sum(model(v)), x)}[entry]
    run()
    assert model.seen and all(type(h) is np.ndarray for h in model.seen)
    assert type(model.last) is np.ndarray
    np.testing.assert_allclose(model.last, np.tanh(x * 2.0))
    np.testing.assert_allclose(model(x) + model.last, 2 * np.tanh(x * 2.0))  # the next plain use


def test_a_jacobian_whose_values_do_not_escape_never_searches_the_heap(monkeypatch):
    from zygotepy import _views

    def searched(*objects):
        raise AssertionError("the heap was searched for escaped traced values")

    monkeypatch.setattr(_views.gc, "get_referrers", searched)
    x = np.ones(3)
    zp.jvp(lambda v: np.sin(v) * 2.0, (x,), (x,))
    zp.jacobian(lambda v: {"a": np.sin(v), "b": (v[::-1], v * 2.0)}, x, mode="forward", chunk=1)
    zp.jacobian(lambda v: {"a": np.sin(v), "b": (v[::-1], v * 2.0)}, x, mode="reverse")
    zp.hessian(lambda v: np.sum(v ** 3), x)
    zp.withjacobian(np.tanh, x)


# -- a.flat: the jitter idiom K.flat[::n + 1] += s, flat writes and reads -------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.zygotepy.finite_differences import fd  # noqa: E402


def _jitter_traced_scale(s):
    K = np.outer(np.arange(1.0, 4.0), np.arange(1.0, 4.0))
    K.flat[::4] += s
    return np.sum(np.sin(K) * K)


def _jitter_traced_matrix(K):
    K = K.copy()
    K.flat[::K.shape[0] + 1] += 0.25
    return np.sum(np.cos(K) * K)


def _jitter_both(p):
    K = np.outer(p[:3], p[:3])
    n = K.shape[0]
    K.flat[::n + 1] += np.exp(p[3])
    return np.log(np.linalg.det(K)) + np.sum(K ** 2)


def _flat_set_element(p):
    K = np.outer(p, p)
    K.flat[1] = p[0] ** 3
    K.flat[[4, 8]] = np.sin(p[1:])
    return np.sum(K * np.arange(9.0).reshape(3, 3))


def _flat_reads(K):
    return np.sum(K.flat[::2] ** 2) + K.flat[5] * K.flat[-1] + np.sum(K.flat[[0, 3, 3]]) + np.sum(
        K.flat[K.ravel() > 0.5] ** 3)


def _flat_of_a_transpose(K):
    K = K + 0.0
    T = K.T
    T.flat[:3] *= 2.0  # a write through a view reaches K
    return np.sum(K ** 3)


def _flat_repeating_values(p):
    K = np.zeros((2, 3))
    K.flat[[0, 2, 4, 5]] = p  # two values fill four places, repeated as NumPy repeats them
    return np.sum(K * np.arange(1.0, 7.0).reshape(2, 3) ** 2)


def _flat_written_twice_and_iterated(p):
    K = np.outer(p, p)
    K.flat[::3] += 1.0
    K.flat[::3] *= p
    return sum(v * v for v in K.flat)


def _flat_alias(s):
    K = np.eye(3)
    alias = K
    K.flat[::4] += s
    return np.sum(alias * alias)


FLAT_CASES = [
    (_jitter_traced_scale, np.array(0.3)),
    (_jitter_traced_matrix, np.arange(9.0).reshape(3, 3) / 7),
    (_jitter_both, np.array([1.0, 0.5, -0.7, -1.0])),
    (_flat_set_element, np.array([0.4, -1.2, 0.9])),
    (_flat_reads, np.linspace(-1.0, 1.5, 12).reshape(3, 4)),
    (_flat_of_a_transpose, np.arange(6.0).reshape(2, 3) / 5),
    (_flat_repeating_values, np.array([0.7, -0.3])),
    (_flat_written_twice_and_iterated, np.array([0.5, 1.5, -1.0])),
    (_flat_alias, np.array(0.6)),
]


@pytest.mark.parametrize(("f", "x"), FLAT_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_flat_writes_and_reads_reverse_mode(f, x):
    (g,) = zp.gradient(f, x)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("f", "x"), FLAT_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_flat_writes_and_reads_forward_mode(f, x):
    direction = np.linspace(1.0, -0.5, np.size(x)).reshape(np.shape(x))
    y, ydot = zp.jvp(f, (x,), (direction,))
    assert np.isclose(y, f(x))
    np.testing.assert_allclose(ydot, np.sum(fd(f, x) * direction), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("f", "x"), [c for c in FLAT_CASES if np.ndim(c[1]) == 1],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_flat_writes_second_order(f, x):
    def gradient(p):
        return zp.gradient(f, p)[0]

    by_differences = np.stack([(gradient(x + h) - gradient(x - h)) / 2e-5 for h in 1e-5 * np.eye(len(x))])
    np.testing.assert_allclose(zp.hessian(f, x), by_differences, rtol=1e-5, atol=1e-6)


def test_flat_write_leaves_the_callers_array_as_numpy_would():
    K = np.ones((2, 2))

    def f(s):
        K.flat[::3] += s
        return np.sum(K)

    (g,) = zp.gradient(f, 0.5)
    assert g == 2.0
    np.testing.assert_array_equal(K, [[1.5, 1.0], [1.0, 1.5]])


def test_flat_of_a_traced_array_is_refused_as_a_numpy_array():
    with pytest.raises(zp.UntraceableError, match=r"a\.ravel\(\)"):
        zp.gradient(lambda K: np.sum(np.asarray(K.flat)), np.ones((2, 2)))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), start=st.integers(0, 4), step=st.integers(1, 7), scale=st.floats(-2.0, 2.0))
def test_flat_slice_updates_match_finite_differences(n, start, step, scale):
    """Any slice of the flat index, updated with a traced scalar and a traced matrix."""
    K0 = np.linspace(-1.0, 1.0, n * n).reshape(n, n)

    def f(p):
        K = K0 * p[0]
        K.flat[start::step] += scale * p[1]
        return np.sum(np.sin(K))

    p = np.array([0.8, 0.3])
    (g,) = zp.gradient(f, p)
    np.testing.assert_allclose(g, fd(f, p), rtol=1e-6, atol=1e-8)
    _, ydot = zp.jvp(f, (p,), (np.array([1.0, -2.0]),))
    np.testing.assert_allclose(ydot, fd(f, p) @ [1.0, -2.0], rtol=1e-6, atol=1e-8)
