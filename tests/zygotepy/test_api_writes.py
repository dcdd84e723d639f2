"""Every entry point leaves the caller's arrays as one plain call of ``f`` leaves them (issue 27):
a write inside ``f`` into an argument or a global buffer is written back once, after the
derivatives are taken at the point ``f`` was called at (``pullback``'s ``back``, called later,
still differentiates there)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zygotepy as zp
from tests.zygotepy.finite_differences import fd

BUFFER = np.zeros(3)


def _adds_in_place(x):
    y = np.sum(x * x)
    x += 1.0
    return y + np.sum(np.sin(x))


def _sets_a_slice(x):
    y = np.sum(np.tanh(x))
    x[1:] = x[:2] * 2.0
    return y + np.sum(x ** 2)


def _writes_a_global(x):
    BUFFER[...] = x * 3.0
    return np.sum(BUFFER * x)


def _writes_through_a_view(x):
    head = x[:2]
    head *= 0.5
    return np.sum(x ** 3)


def _out_argument(x):
    np.multiply(x, 2.0, out=x)
    return np.sum(np.exp(x))


SCALAR_LOSSES = {f.__name__: f for f in (_adds_in_place, _sets_a_slice, _writes_a_global,
                                         _writes_through_a_view, _out_argument)}


def _vector(loss):
    """A vector-valued function with the same writes: for the Jacobians."""
    def f(x):
        loss(x)
        return np.stack([np.sum(x), x[0] * x[2]])

    f.__qualname__ = f"vector {loss.__name__}"
    return f


def _plain_after(f, x0):
    """What one plain call of ``f`` leaves in its argument and in the global buffer."""
    BUFFER[...] = 0.0
    x = x0.copy()
    f(x)
    return x, BUFFER.copy()


def _fd_jacobian(f, x0):
    """Central differences of a vector function, each evaluation on a copy (f writes into it)."""
    h, cols = 1e-6, []
    for i in range(x0.size):
        up, down = x0.copy(), x0.copy()
        up[i] += h
        down[i] -= h
        cols.append((np.asarray(f(up)) - np.asarray(f(down))) / (2 * h))
    return np.stack(cols, axis=-1)


def _fd_grad(f, x0):
    return fd(lambda v: f(v.copy()), x0)


ENTRIES = {  # name -> (the call on the caller's x, the expected derivative from finite differences)
    "pullback": (lambda f, x: zp.pullback(f, x)[1](1.0)[0], lambda f, x0: _fd_grad(f, x0)),
    "pullback, back called twice": (lambda f, x: [zp.pullback(f, x)[1](1.0) for _ in range(1)][0][0],
                                    lambda f, x0: _fd_grad(f, x0)),
    "jvp": (lambda f, x: zp.jvp(f, (x,), (np.array([1.0, -2.0, 0.5]),))[1],
            lambda f, x0: _fd_grad(f, x0) @ np.array([1.0, -2.0, 0.5])),
    "pushforward": (lambda f, x: zp.pushforward(f, x)(np.ones(3)), lambda f, x0: np.sum(_fd_grad(f, x0))),
    "hessian": (lambda f, x: zp.hessian(f, x),
                lambda f, x0: _fd_jacobian(lambda v: _fd_grad(f, v), x0)),
    "hessian, one direction a pass": (lambda f, x: zp.hessian(f, x, chunk=1),
                                      lambda f, x0: _fd_jacobian(lambda v: _fd_grad(f, v), x0)),
    "hessian_reverse": (lambda f, x: zp.hessian_reverse(f, x),
                        lambda f, x0: _fd_jacobian(lambda v: _fd_grad(f, v), x0)),
    "gradient": (lambda f, x: zp.gradient(f, x)[0], lambda f, x0: _fd_grad(f, x0)),
}

JACOBIANS = {
    "jacobian auto": lambda f, x: zp.jacobian(f, x)[0],
    "jacobian forward": lambda f, x: zp.jacobian(f, x, mode="forward")[0],
    "jacobian forward, one direction a pass": lambda f, x: zp.jacobian(f, x, mode="forward", chunk=1)[0],
    "jacobian reverse": lambda f, x: zp.jacobian(f, x, mode="reverse")[0],
    "withjacobian": lambda f, x: zp.withjacobian(f, x).grad[0],
    "withjacobian forward, one direction a pass": lambda f, x: zp.withjacobian(f, x, mode="forward",
                                                                               chunk=1).grad[0],
}

POINTS = st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3).map(np.array)


@given(x0=POINTS, loss=st.sampled_from(sorted(SCALAR_LOSSES)), entry=st.sampled_from(sorted(ENTRIES)))
@settings(max_examples=20, deadline=None)
def test_scalar_entry_points_leave_the_arguments_as_numpy_does(x0, loss, entry):
    f = SCALAR_LOSSES[loss]
    run, expected = ENTRIES[entry]
    want_x, want_buffer = _plain_after(f, x0)
    reference = expected(f, x0)
    BUFFER[...] = 0.0
    x = x0.copy()
    got = run(f, x)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(BUFFER, want_buffer)
    np.testing.assert_allclose(got, reference, rtol=1e-3, atol=1e-3)  # (Hessians: differences of differences)


@given(x0=POINTS, loss=st.sampled_from(sorted(SCALAR_LOSSES)), entry=st.sampled_from(sorted(JACOBIANS)))
@settings(max_examples=20, deadline=None)
def test_jacobians_in_every_mode_leave_the_arguments_as_numpy_does(x0, loss, entry):
    f = _vector(SCALAR_LOSSES[loss])
    want_x, want_buffer = _plain_after(f, x0)
    reference = _fd_jacobian(f, x0)
    BUFFER[...] = 0.0
    x = x0.copy()
    got = JACOBIANS[entry](f, x)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(BUFFER, want_buffer)
    np.testing.assert_allclose(got, reference, rtol=1e-3, atol=1e-3)  # (Hessians: differences of differences)


def test_a_pullback_differentiates_where_f_was_called_however_often_back_is_called():
    x = np.array([1.0, 2.0, 3.0])
    y, back = zp.pullback(_adds_in_place, x)
    np.testing.assert_array_equal(x, [2.0, 3.0, 4.0])
    first = back(1.0)[0]
    x -= 0.5  # the user's own step between calls: kept, and not read by the sweep
    second = back(2.0)[0]
    np.testing.assert_allclose(first, _fd_grad(_adds_in_place, np.array([1.0, 2.0, 3.0])), rtol=1e-5)
    np.testing.assert_allclose(second, 2.0 * first)
    np.testing.assert_array_equal(x, [1.5, 2.5, 3.5])


def test_a_jacobian_of_implicit_parameters_writes_back_once():
    W = np.array([0.5, 1.0])

    def f():
        out = W * W
        W[0] = 3.0
        return out

    jac = zp.jacobian(f, zp.params(W))
    np.testing.assert_array_equal(W, [3.0, 1.0])
    np.testing.assert_allclose(jac[W], np.diag([1.0, 2.0]))


@pytest.mark.parametrize("entry", ["jvp", "jacobian forward", "jacobian reverse", "hessian", "pullback"])
def test_a_write_into_a_read_only_argument_is_refused_by_every_entry_point(entry):
    x = np.array([1.0, 2.0, 3.0])
    x.flags.writeable = False
    run = {"jvp": lambda: zp.jvp(_adds_in_place, (x,), (np.ones(3),)),
           "jacobian forward": lambda: zp.jacobian(_vector(_adds_in_place), x, mode="forward", chunk=1),
           "jacobian reverse": lambda: zp.jacobian(_vector(_adds_in_place), x, mode="reverse"),
           "hessian": lambda: zp.hessian(_adds_in_place, x, chunk=1),
           "pullback": lambda: zp.pullback(_adds_in_place, x)}[entry]
    with pytest.raises(ValueError, match="read-only"):
        run()
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_a_plain_write_in_a_forward_pass_is_not_read_by_the_next_pass():
    """Several forward passes (chunk=1) each see the argument as the caller left it, even where f
    writes into an argument that pass does not differentiate (a plain write, into memory)."""
    def f(x, y):
        out = x * y
        y += 1.0
        return out

    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    jx, jy = zp.jacobian(f, x, y, mode="forward", chunk=1)
    np.testing.assert_allclose(jx, np.diag([3.0, 4.0]))
    np.testing.assert_allclose(jy, np.diag([1.0, 2.0]))
    np.testing.assert_array_equal(y, [4.0, 5.0])
    np.testing.assert_array_equal(x, [1.0, 2.0])


class _Holder:
    pass


def _param_writes():
    """Losses over a parameter array ``p`` (in a holder) that read it, then write plain values
    into it: the tape must still read the values it had (they were [12, 12, 12]-style wrong
    when the write went into memory during the differentiation)."""
    def item(h):
        y = np.sum(h.p * h.p)
        h.p[0] = 3.0
        return y + np.sum(h.p)

    def whole(h):
        y = np.sum(np.sin(h.p))
        h.p[...] = 0.5
        return y

    def out_argument(h):
        y = np.sum(h.p ** 3)
        np.add(h.p, 1.0, out=h.p)
        return y

    def view(h):
        y = np.sum(np.exp(h.p))
        head = h.p[:2]
        head *= 2.0
        return y + np.sum(h.p)

    return {f.__name__: f for f in (item, whole, out_argument, view)}


PARAM_WRITES = _param_writes()


@pytest.mark.parametrize("write", sorted(PARAM_WRITES))
@pytest.mark.parametrize("entry", ["gradient", "withgradient", "pullback"])
def test_a_plain_write_into_an_implicit_parameter_is_made_after_the_tape_is_read(write, entry):
    loss = PARAM_WRITES[write]
    p0 = np.array([0.3, -0.7, 1.1])
    plain = _Holder()
    plain.p = p0.copy()
    loss(plain)

    def at(v):
        h = _Holder()
        h.p = v.copy()
        return loss(h)

    held = _Holder()
    held.p = p0.copy()
    W = held.p
    run = {"gradient": lambda: zp.gradient(lambda: loss(held), zp.params(W)),
           "withgradient": lambda: zp.withgradient(lambda: loss(held), zp.params(W)).grad,
           "pullback": lambda: zp.pullback(lambda: loss(held), zp.params(W))[1](1.0)}[entry]
    gs = run()
    np.testing.assert_allclose(gs[W], fd(at, p0), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(W, plain.p)
    assert held.p is W


class Tagged(np.ndarray):
    """A user's ndarray subclass (as np.memmap, astropy's Quantity and others are)."""


def _tagged(values):
    return np.array(values, dtype=float).view(Tagged)


def _memmap(tmp_path, values):
    m = np.memmap(tmp_path / "m.dat", dtype=float, mode="w+", shape=(len(values),))
    m[:] = values
    return m


def _item_write(a):
    a[0] = a[0] * 3.0
    return np.sum(a * a)


def _augmented(a):
    a += 1.0
    return np.sum(a * a)


def _out_ufunc(a):
    np.multiply(a, 3.0, out=a)
    return np.sum(a * a)


def _through_a_view(a):
    head = a[:1]
    head *= 2.0
    return np.sum(a * a)


def _plain_value(a):
    y = np.sum(a * a)
    a[1] = 5.0
    return y + np.sum(a)


def _copyto(a):
    np.copyto(a, a * 2.0)
    return np.sum(a * a)


@pytest.mark.parametrize("loss", [_item_write, _augmented, _out_ufunc, _through_a_view, _plain_value,
                                  _copyto])
@pytest.mark.parametrize("make", ["subclass", "memmap"])
@pytest.mark.parametrize("entry", ["gradient", "jvp", "jacobian"])
def test_a_write_into_an_ndarray_subclass_argument_is_refused_never_lost(tmp_path, loss, make, entry):
    """The engine follows in-place writes in plain arrays only; into a subclass (np.memmap, a
    user's) a write would be lost for the other references (the caller's array unchanged, or a
    later read of the old value: a wrong gradient), so it refuses, naming the type and the fix."""
    x = _tagged([1.0, 2.0]) if make == "subclass" else _memmap(tmp_path, [1.0, 2.0])
    before = np.array(x)
    run = {"gradient": lambda: zp.gradient(loss, x),
           "jvp": lambda: zp.jvp(loss, (x,), (np.ones(2),)),
           "jacobian": lambda: zp.jacobian(loss, x)}[entry]
    with pytest.raises(TypeError, match=rf"{type(x).__name__} \(a subclass of np.ndarray.*np.asarray\(x\)"):
        run()
    assert np.array_equal(np.asarray(x), before)  # refused before anything was written


@pytest.mark.parametrize("loss", [_item_write, _augmented, _out_ufunc, _copyto])
def test_the_fix_the_refusal_names_gives_numpys_values_and_exact_gradients(loss):
    """``np.asarray(x)``: a plain array over the subclass's memory, written back as NumPy writes."""
    x = _tagged([1.0, 2.0])
    expected = np.array(x, copy=True).view(np.ndarray)
    g_fd = fd(lambda v: loss(v.copy()), expected.copy())
    (g,) = zp.gradient(loss, np.asarray(x))
    loss(expected)
    assert np.allclose(g, g_fd, rtol=1e-6, atol=1e-6)
    assert np.array_equal(np.asarray(x), expected)


def test_a_subclass_argument_only_read_is_differentiated():
    x = _tagged([0.5, -1.5])
    (g,) = zp.gradient(lambda a: np.sum(np.sin(a) * a), x)
    assert np.allclose(g, np.cos(x.view(np.ndarray)) * x.view(np.ndarray) + np.sin(x.view(np.ndarray)))


A_OUT = np.array([[1.0, -0.5, 0.2], [0.3, 0.8, -1.1], [0.0, 0.4, 0.9]])
#: NumPy functions given ``out`` by position: a ufunc's arguments after its inputs, np.dot's third.
OUT_BY_POSITION = {
    "sin(x, out)": lambda x, out: np.sin(x, out),
    "exp(x, out)": lambda x, out: np.exp(x, out),
    "negative(x, out)": lambda x, out: np.negative(x, out),
    "add(x, c, out)": lambda x, out: np.add(x, 0.5, out),
    "multiply(x, x, out)": lambda x, out: np.multiply(x, x, out),
    "dot(A, x, out)": lambda x, out: np.dot(A_OUT, x, out),
}


def _through_out(write):
    def loss(x):
        buf = np.zeros(3)
        write(x, buf)
        return np.sum(buf * x) + np.sum(buf ** 2)
    return loss


@pytest.mark.parametrize("entry", ["gradient", "jvp", "jacobian forward", "hessian", "nested"])
@pytest.mark.parametrize("name", list(OUT_BY_POSITION))
def test_out_given_by_position_is_written_functionally_in_every_mode(name, entry):
    """``np.sin(x, out)`` (a unary ufunc with two arguments) took the fast paths as a call with a
    constant second argument: the gradient silently lost the write into ``out`` and jvp raised. A
    ufunc's arguments beyond its inputs, and ``np.dot``'s third, are ``out`` in every mode."""
    loss = _through_out(OUT_BY_POSITION[name])
    x = np.array([0.3, -0.7, 1.1])
    g = fd(loss, x)
    if entry == "gradient":
        np.testing.assert_allclose(zp.gradient(loss, x)[0], g, rtol=1e-6, atol=1e-8)
    elif entry == "jvp":
        v = np.array([1.0, 0.5, -2.0])
        np.testing.assert_allclose(zp.jvp(loss, (x,), (v,))[1], g @ v, rtol=1e-6, atol=1e-8)
    elif entry == "jacobian forward":
        np.testing.assert_allclose(zp.jacobian(loss, x, mode="forward")[0], g, rtol=1e-6, atol=1e-8)
    elif entry == "hessian":
        want = np.array([fd(lambda u, i=i: fd(loss, u, h=1e-5)[i], x, h=1e-4) for i in range(3)])
        np.testing.assert_allclose(zp.hessian(loss, x), want, rtol=1e-4, atol=1e-4)
    else:  # the derivative of the gradient's sum, reverse over reverse
        want = fd(lambda u: np.sum(fd(loss, u, h=1e-5)), x, h=1e-4)
        got = zp.gradient(lambda u: np.sum(zp.gradient(loss, u)[0]), x)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
