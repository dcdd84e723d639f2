"""Found by the program fuzzer (bench/fuzz.py): in-place updates through a view or an alias.

NumPy writes ``row += v`` into the array ``row`` views (and ``g += v`` into the array a dict
holds); zygotepy lost the update, value and gradient (issue 14, case 1). Each test is the
fuzzer's failing program minimised, or the same construct as a user would write it, checked
against finite differences.
"""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def row_view(x):
    out = np.zeros((2, 3))
    row = out[0]
    row += x * 2
    return np.sum(out)


def column_view(x):
    out = np.zeros((2, 3))
    column = out[:, 1]
    column[0] = x * 3
    return np.sum(out)


def dict_alias(x):
    state = {"g": np.zeros(2)}
    g = state["g"]
    g += x
    return np.sum(state["g"])


@pytest.mark.parametrize("f", [row_view, column_view, dict_alias], ids=lambda f: f.__name__)
def test_update_through_a_view_reaches_value_and_gradient(f):
    val, (grad,) = zp.withgradient(f, 0.7)
    assert val == pytest.approx(f(0.7))
    assert grad == pytest.approx(fd(f, 0.7), rel=1e-6)


# -- the same constructs as users write them: every reference reads the update ------------------
def view_of_a_traced_array(x):
    y = x * np.ones(4)
    w = y[1:3]
    w[0] = x * 3  # NumPy writes into y
    return np.sum(y * y)


def augmented_through_a_transpose(x):
    y = x * np.ones((2, 2))
    t = y.T
    t[0, 1] += x * 3  # NumPy writes y[1, 0]
    return np.sum(y * y)


def view_made_before_the_write_read_after(x):
    out = np.zeros((2, 3))
    column = out[:, 0]
    row = out[0]
    row += x
    scaled = out * x
    return np.sum(column * x) + np.sum(scaled) + np.sum(row)


def compared_after_the_write(x):
    out = np.zeros(3)
    head = out[:2]
    head += x
    return np.sum(np.where(out > 0.5, out, 0.0)) + np.sum(out == 0)


def iterated_and_unpacked_after_the_write(x):
    out = np.zeros((2, 3))
    row = out[0]
    row += x
    first, second = out
    return sum(np.sum(r * r) for r in out) + np.sum(first * second + first)


class Buffer:
    def __init__(self):
        self.data = np.zeros(3)

    def total(self):
        return np.sum(self.data.T) + np.sum(self.data)


def attribute_alias(x):
    buffer = Buffer()
    data = buffer.data
    data += x
    return buffer.total()


def fill_tail(out, x):
    tail = out[1:]
    tail += x


def written_by_a_helper(x):
    out = np.zeros(3)
    fill_tail(out, x)
    return np.sum(out * out)


def argument_written_through_a_view(x):
    head = x[:2]
    head *= 3.0
    return np.sum(x * x)


@pytest.mark.parametrize("f", [
    view_of_a_traced_array, augmented_through_a_transpose, view_made_before_the_write_read_after,
    compared_after_the_write, iterated_and_unpacked_after_the_write, attribute_alias,
    written_by_a_helper,
], ids=lambda f: f.__name__)
def test_every_reference_reads_the_update(f):
    val, (grad,) = zp.withgradient(f, 0.7)
    assert val == pytest.approx(f(0.7))
    assert grad == pytest.approx(fd(f, 0.7), rel=1e-6)


def test_argument_written_through_a_view_is_updated_as_numpy_does():
    x = np.array([0.5, -1.0, 2.0])
    expected = x.copy()
    want = argument_written_through_a_view(expected)  # NumPy: expected[:2] *= 3
    val, (grad,) = zp.withgradient(argument_written_through_a_view, x)
    assert val == pytest.approx(want)
    np.testing.assert_allclose(x, expected)  # the argument holds the new values afterwards
    np.testing.assert_allclose(grad, [18 * 0.5, 18 * -1.0, 2 * 2.0])


BUFFER = np.zeros(3)


def accumulate_into_the_global_buffer(x):
    head = BUFFER[:2]
    head += x
    return np.sum(BUFFER * BUFFER)


def test_a_global_buffer_written_through_a_view_holds_the_new_values_afterwards():
    BUFFER[:] = [1.0, 2.0, 3.0]
    val, (grad,) = zp.withgradient(accumulate_into_the_global_buffer, 0.5)
    assert val == pytest.approx(1.5 ** 2 + 2.5 ** 2 + 9)
    assert grad == pytest.approx(2 * 1.5 + 2 * 2.5)
    np.testing.assert_allclose(BUFFER, [1.5, 2.5, 3.0])


class Result:
    def __init__(self, data):
        self.data = data


def returns_an_object_made_before_the_write(x):
    out = np.zeros(3)
    result = Result(out)
    head = out[:2]
    head += x
    return result, [out]


def test_outputs_made_before_the_write_read_the_update():
    (result, [out]), back = zp.pullback(returns_an_object_made_before_the_write, 0.7)
    np.testing.assert_allclose(result.data, [0.7, 0.7, 0.0])
    np.testing.assert_allclose(out, [0.7, 0.7, 0.0])
    assert back((Result(np.ones(3)), [np.ones(3)])) == (pytest.approx(4.0),)


def returns_the_written_array(x):
    out = np.zeros(3)
    tail = out[1:]
    tail += x * x
    return out


def test_the_written_array_as_output_in_every_mode():
    expected = np.array([0.0, 1.4, 1.4])
    np.testing.assert_allclose(zp.jacobian(returns_the_written_array, 0.7)[0], expected)
    np.testing.assert_allclose(zp.jacobian(returns_the_written_array, 0.7, mode="forward")[0], expected)
    y, dy = zp.jvp(row_view, (0.7,), (1.0,))
    assert (y, dy) == (pytest.approx(row_view(0.7)), pytest.approx(6.0))


def test_second_derivative_through_a_view():
    def f(x):
        out = np.zeros(2)
        head = out[:1]
        head += x ** 3
        return np.sum(out)

    assert zp.gradient(lambda x: zp.gradient(f, x)[0], 0.7)[0] == pytest.approx(6 * 0.7)


def test_a_view_made_by_stride_tricks_is_refused_naming_the_function():
    def f(x):
        out = np.zeros(3)
        window = np.lib.stride_tricks.sliding_window_view(out, 2)[0]
        window += x
        return np.sum(out)

    with pytest.raises(zp.UntraceableError, match=r"inside .*\.f \(.*np\.lib\.stride_tricks.*Copy it first"):
        zp.gradient(f, 0.7)


def views_of_fresh_and_traced_arrays(x):
    out = np.zeros((2, 3))
    row = out[0]
    row += x * x
    y = x * np.ones(3)
    tail = y[1:]
    tail *= x[1:]
    return np.sum(out * out) + np.sum(y)


def test_hessian_and_jvp_through_views_match_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)

    def same_in_jax(x):  # the writes as JAX spells them (functional .at[] updates)
        out = jnp.zeros((2, 3)).at[0].add(x * x)
        y = (x * jnp.ones(3)).at[1:].multiply(x[1:])
        return jnp.sum(out * out) + jnp.sum(y)

    x = np.array([0.3, -0.5, 0.8])
    np.testing.assert_allclose(zp.hessian(views_of_fresh_and_traced_arrays, x),
                               jax.jit(jax.hessian(same_in_jax))(x))
    y, dy = zp.jvp(views_of_fresh_and_traced_arrays, (x,), (np.ones(3),))
    y_jax, dy_jax = jax.jvp(same_in_jax, (x,), (jnp.ones(3),))
    assert (y, dy) == (pytest.approx(float(y_jax)), pytest.approx(float(dy_jax)))
