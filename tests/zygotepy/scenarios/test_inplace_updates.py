"""Scenarios: in-place updates (subscript stores, augmented assignments, aliases, globals): each
is differentiated exactly or refused with the engine's error naming the construct."""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import check, fd


# -- helpers ------------------------------------------------------------------------------------
def test_setitem_with_repeated_integer_index_is_refused_naming_the_index():
    def f(x):
        y = np.zeros(3)
        y[[0, 0]] = x[:2]  # NumPy: y[0] == x[1]
        return np.sum(y * np.arange(1, 4))

    x = np.array([1.0, 2.0, 0.5])
    with pytest.raises(ValueError, match="setindex: an integer-array index writes some positions"):
        zp.gradient(f, x)


def test_setitem_through_an_alias_reaches_the_alias():
    def f(x):
        y = np.zeros(2)
        z = y
        y[0] = x
        return np.sum(y) + np.sum(z) * x  # NumPy: x + x * x

    assert f(1.0) == 2.0
    val, (g,) = zp.withgradient(f, 1.0)
    assert val == 2.0
    assert g == pytest.approx(3.0)


G_BUF = np.zeros(2)


def test_setitem_on_a_declared_global_is_exact_and_keeps_the_global_an_array():
    def f(x):
        global G_BUF
        G_BUF[0] = 1.0
        G_BUF[1] = x
        return np.sum(G_BUF) * 2

    assert zp.withgradient(f, 1.5) == (5.0, (2.0,))
    assert type(G_BUF) is np.ndarray
    np.testing.assert_allclose(G_BUF, [1.0, 1.5])  # written afterwards, as NumPy does


class _Holder:
    def __init__(self):
        self.buf = np.zeros(3)
        self.total = 0.0


def test_augmented_assignments_into_attributes_and_nested_containers():
    def f(x):
        holder = _Holder()
        alias = holder.buf
        holder.buf[1] += x  # a store into an attribute's array
        holder.buf += x  # the attribute keeps its array: alias sees both updates
        holder.total += x * x
        items = [np.zeros(2)]
        items[0][1] += x
        return np.sum(alias * alias) + holder.total + np.sum(items[0])

    assert zp.withgradient(f, 0.7)[0] == pytest.approx(f(0.7))
    assert zp.gradient(f, 0.7)[0] == pytest.approx(fd(f, 0.7), rel=1e-6)


def test_setitem_of_a_list_holding_traced_values():
    def f(x):
        y = np.zeros(3)
        y[0:2] = [x, 2 * x]
        return np.sum(y * y)

    assert zp.gradient(f, 0.7)[0] == pytest.approx(fd(f, 0.7), rel=1e-6)


_CACHE = {}


def test_subscript_store_into_a_global_dict():
    def f(x):
        _CACHE["calls"] = 1
        return x * 2

    assert zp.gradient(f, 1.0) == (2.0,)


def test_subscript_store_into_a_closure_list():
    buf = [0.0, 0.0]

    def g(x):
        buf[0] = x
        return buf[0] * 3

    assert zp.gradient(g, 1.0) == (3.0,)


def test_augmented_subscript_assignment_on_a_plain_local_array():
    def f(x):
        y = np.zeros(3)
        for i in range(3):
            y[i] += x * i
        return np.sum(y)

    assert zp.gradient(f, 0.7) == (3.0,)


def test_augmented_subscript_assignment_on_a_traced_local_array():
    def f(x):
        y = x * 1.0
        y[0] *= x[1]
        y[1] -= x[0]
        return np.sum(y)

    check(f, np.array([1.0, 2.0, 0.5]))


def test_tuple_and_chained_subscript_targets():
    def f(x):
        y = np.zeros(3)
        z = np.zeros(3)
        y[0], y[1] = x, x * 2
        y[2] = z[1] = x
        return np.sum(y) + np.sum(z) * 2

    assert zp.gradient(f, 0.7) == (6.0,)


@pytest.mark.parametrize("name", ["relu_mask_constant", "ellipsis_scalar", "negative_slice_scalar"])
def test_setitem_of_a_broadcast_value(name):
    def relu_mask_constant(x):
        y = x.copy()
        y[y < 0] = 0.0
        return np.sum(y ** 2)

    def ellipsis_scalar(x):
        y = np.zeros(3)
        y[...] = x[0]
        return np.sum(y * x)

    def negative_slice_scalar(x):
        y = np.zeros(3)
        y[-2:] = x[1]
        return np.sum(y * np.arange(1, 4)) + x[0]

    f = {"relu_mask_constant": relu_mask_constant, "ellipsis_scalar": ellipsis_scalar,
         "negative_slice_scalar": negative_slice_scalar}[name]
    check(f, np.array([-1.0, 2.0, 0.5]))


def test_augmented_subscript_store_into_a_traced_local_copy():
    def f(x):
        y = x * 1.0
        y[0] += x[1]
        return np.sum(y)  # x0 + 2 x1

    assert zp.gradient(f, np.array([1.0, 2.0]))[0].tolist() == [1.0, 2.0]


def test_augmented_subscript_assignment_evaluates_its_index_once():
    def f(x):
        y = np.ones(4)
        todo = [3, 1]
        y[todo.pop()] *= x  # one pop: reads and writes slot 1
        y[1:3] += x * 2
        return y @ np.arange(1.0, 5.0)

    val, (g,) = zp.withgradient(f, 2.0)
    assert val == f(2.0) == 32.0
    assert g == pytest.approx(fd(f, 2.0))


def test_augmented_assignment_through_a_view_reaches_the_array():
    def f(x):
        out = np.zeros((2, 3))
        row = out[0]
        row += x * 2  # NumPy writes into out
        return np.sum(out)

    x = np.array([1.0, 2.0, 3.0])
    val, (g,) = zp.withgradient(f, x)
    assert val == f(x) == 12.0
    np.testing.assert_allclose(g, [2.0, 2.0, 2.0])


def test_subscript_store_through_a_view_reaches_the_array():
    def f(x):
        y = np.zeros(4)
        w = y[1:3]
        w[0] = x * 3  # NumPy writes into y
        return y.sum()

    assert zp.gradient(f, 1.0) == (3.0,)


def test_augmented_assignment_into_an_array_held_by_a_dict_reaches_the_dict():
    def f(x):
        state = {"g": np.zeros(3)}
        g = state["g"]
        g += x  # NumPy writes into state["g"]
        return state["g"].sum()

    np.testing.assert_allclose(zp.gradient(f, np.ones(3))[0], np.ones(3))


def test_local_accumulators_views_of_temporaries_and_copies_stay_exact():
    def f(x):
        total = np.zeros(3)
        for i in range(3):
            total += x * i
        y = np.zeros(6).reshape(2, 3)  # a view of a temporary nothing else holds
        y[0] = x
        row = y[1].copy()
        row += x
        return total.sum() + y.sum() + np.sum(row * x)

    x = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(zp.gradient(f, x)[0], fd(f, x), rtol=1e-6)
