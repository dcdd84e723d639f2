"""frules and partly-zero tangents: the rule contract gives an ``@rc.frule.register`` author zeros of
the argument's shape for an argument held constant (``rc.frule`` and zygotepy's forward mode
alike), and ``rct.test_frule`` catches an frule that breaks on ``ZeroTangent()`` where one is passed."""

from __future__ import annotations

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing as rct

X = np.array([1.0, 2.0, -0.5])
W = np.array([3.0, -1.0, 0.25])


def weighted_sum(x, w):
    return np.sum(x * w)


@rc.frule.register(weighted_sum)
def weighted_sum_frule(tangents, x, w):
    _, xdot, wdot = tangents  # no zero guards: np.sum and .reshape need arrays
    return weighted_sum(x, w), np.sum(xdot * w) + np.sum(x * wdot.reshape(w.shape))


def scaled_norm(x, s):
    """An array and a Python float."""
    return s * np.sqrt(np.sum(x ** 2))


@rc.frule.register(scaled_norm)
def scaled_norm_frule(tangents, x, s):
    _, xdot, sdot = tangents
    n = np.sqrt(np.sum(x ** 2))
    return scaled_norm(x, s), s * np.dot(x, xdot) / n + float(sdot) * n  # float() of a zero fails


def affine(x, a, b):
    """Three arguments: any two may be held constant."""
    return a @ x + b


@rc.frule.register(affine)
def affine_frule(tangents, x, a, b):
    _, xdot, adot, bdot = tangents
    return affine(x, a, b), np.matmul(adot, x) + np.matmul(a, xdot) + bdot.copy()


A = np.arange(6.0).reshape(2, 3) / 7
B = np.array([0.5, -0.5])
CASES = [(weighted_sum, (X, W)), (scaled_norm, (X, 1.5)), (affine, (X, A, B))]


@pytest.mark.parametrize(("f", "args"), CASES)
def test_rc_frule_gives_zeros_of_the_arguments_shape(f, args) -> None:
    rct.test_frule(f, *args)  # exercises ZeroTangent() for each argument in turn
    rng = np.random.default_rng(0)
    for i in range(len(args)):
        tangents = [rc.ZeroTangent()] * len(args)
        tangents[i] = rng.standard_normal(np.shape(args[i])) if np.ndim(args[i]) else 0.7
        _, ydot = rc.frule((rc.NoTangent(), *tangents), f, *args)
        h = 1e-6
        plus = list(args)
        plus[i] = args[i] + h * tangents[i]
        minus = list(args)
        minus[i] = args[i] - h * tangents[i]
        np.testing.assert_allclose(ydot, (f(*plus) - f(*minus)) / (2 * h), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("f", "args"), CASES)
def test_zygotepy_forward_mode_with_constant_arguments(f, args) -> None:
    zp = pytest.importorskip("zygotepy")
    for i in range(len(args)):
        def partial(v, i=i):
            return f(*args[:i], v, *args[i + 1:])

        t = np.ones_like(args[i]) if np.ndim(args[i]) else 1.0
        _, ydot = zp.jvp(partial, (args[i],), (t,))
        h = 1e-6
        np.testing.assert_allclose(ydot, (partial(args[i] + h * t) - partial(args[i] - h * t)) / (2 * h),
                                   rtol=1e-6, atol=1e-8)
        if np.ndim(args[i]):  # several directions at once (jacfwd-style batching)
            jac = zp.jacobian(partial, args[i])[0] if hasattr(zp, "jacobian") else None
            assert jac is not None and np.all(np.isfinite(jac))


def unguarded(x, w):
    return np.sum(x * w)


def unguarded_frule(tangents, x, w):
    _, xdot, wdot = tangents
    return unguarded(x, w), np.sum(xdot * w) + np.sum(x * wdot.reshape(w.shape))


rc.register_rules(rc.RulePair(unguarded, frule=unguarded_frule))  # table form: takes ZeroTangent()


def test_the_tester_catches_an_frule_that_breaks_on_a_zero_tangent() -> None:
    with pytest.raises(AssertionError, match=r"tangent of argument 2 is ZeroTangent\(\)") as info:
        rct.test_frule(unguarded, X, W)
    assert "argument 1 is ZeroTangent" not in str(info.value)  # np.sum of a zero is the zero


@pytest.mark.parametrize(("numpy_function", "args"), [
    (np.sum, ()), (np.mean, ()), (np.dot, (np.ones(2),)), (np.outer, (np.ones(2),)),
    (np.reshape, ((2, 1),)), (np.transpose, ()), (np.einsum, ("ij,j",))])
def test_numpy_linear_functions_of_a_zero_give_the_zero(numpy_function, args) -> None:
    z = rc.ZeroTangent()
    got = numpy_function(args[0], np.ones((2, 2)), z) if numpy_function is np.einsum else \
        numpy_function(*args, z) if numpy_function in (np.dot, np.outer) else numpy_function(z, *args)
    assert got is z
    assert np.sum(rc.NoTangent()) is rc.NoTangent()


def ignores_zero(x, w):
    return np.sum(x * w)


def ignores_zero_frule(tangents, x, w):
    _, xdot, wdot = tangents
    if rc.is_zero(wdot):
        return ignores_zero(x, w), np.sum(xdot)  # wrong: drops w when w's tangent is zero
    return ignores_zero(x, w), np.sum(xdot * w) + np.sum(x * wdot)


rc.register_rules(rc.RulePair(ignores_zero, frule=ignores_zero_frule))


def test_the_tester_catches_an_frule_that_is_wrong_on_a_zero_tangent() -> None:
    with pytest.raises(AssertionError, match=r"tangent of argument 2 ZeroTangent\(\) the frule gives"):
        rct.test_frule(ignores_zero, X, W)


def sine_weighted(x, w):
    return np.sum(np.sin(x) * w)


@rc.frule.register(sine_weighted)
def sine_weighted_frule(tangents, x, w):
    _, xdot, wdot = tangents
    return sine_weighted(x, w), np.sum(np.cos(x) * xdot * w) + np.sum(np.sin(x) * wdot.reshape(w.shape))


def test_nested_forward_mode_with_a_constant_argument() -> None:
    zp = pytest.importorskip("zygotepy")

    def jac(x):
        return zp.jacobian(lambda v: sine_weighted(v, W), x, mode="forward")[0]

    (hess,) = zp.jacobian(jac, X, mode="forward")  # the frule runs on the outer level's traced x
    np.testing.assert_allclose(hess, np.diag(-np.sin(X) * W), atol=1e-12)
