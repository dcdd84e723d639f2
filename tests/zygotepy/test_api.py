"""The entry points combining modes: jacobian, hessian, hessian_reverse, diaghessian, forwarddiff."""

import numpy as np
import pytest

import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def test_jacobian_shape():
    A = np.arange(6.0).reshape(2, 3)
    (J,) = zp.jacobian(lambda x: A @ x, np.ones(3))
    np.testing.assert_allclose(J, A)
    (J2,) = zp.jacobian(lambda m: m.sum(axis=0), np.ones((2, 3)))
    assert J2.shape == (3, 2, 3)


RNG = np.random.default_rng(7)


A = RNG.normal(size=(3, 3))


SPD = A @ A.T + 3 * np.eye(3)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] += -400 * x[i]
        H[i + 1, i] += -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def test_hessian_of_rosenbrock():
    x = RNG.normal(size=5)
    np.testing.assert_allclose(zp.hessian(rosenbrock, x), rosenbrock_hessian(x), rtol=1e-10)
    np.testing.assert_allclose(zp.hessian_reverse(rosenbrock, x), rosenbrock_hessian(x), rtol=1e-10)
    np.testing.assert_allclose(zp.diaghessian(rosenbrock, x), np.diag(rosenbrock_hessian(x)), rtol=1e-10)


def test_hessian_of_logsumexp():
    x = RNG.normal(size=4)
    p = np.exp(x - logsumexp(x))
    np.testing.assert_allclose(zp.hessian(logsumexp, x), np.diag(p) - np.outer(p, p), atol=1e-12)


def test_hessian_of_gaussian_log_density():
    mu = RNG.normal(size=3)

    def log_density(x):
        d = x - mu
        return -0.5 * d @ np.linalg.solve(SPD, d) - 0.5 * np.linalg.slogdet(SPD)[1]

    np.testing.assert_allclose(zp.hessian(log_density, RNG.normal(size=3)), -np.linalg.inv(SPD), rtol=1e-9)


def test_hessian_of_neural_network_loss_in_its_weights():
    X = RNG.normal(size=(5, 2))
    y = RNG.normal(size=5)

    def loss(w):
        return np.mean((np.tanh(X @ w) - y) ** 2)

    w = RNG.normal(size=2)
    t = np.tanh(X @ w)
    r, s = t - y, 1 - t ** 2
    # d2/dw2 mean(r^2) = 2/n sum (s^2 + r * (-2 t s)) x x^T
    weights = 2 / len(y) * (s ** 2 - 2 * r * t * s)
    expected = (X * weights[:, None]).T @ X
    np.testing.assert_allclose(zp.hessian(loss, w), expected, rtol=1e-9)


def test_forwarddiff_inside_gradient_with_params_and_closures():
    W = RNG.normal(size=(3, 3))
    b = RNG.normal(size=3)

    def loss_forwarddiff():
        return np.sum(zp.forwarddiff(lambda v: np.tanh(W @ v + b), b))

    def loss_plain():
        return np.sum(np.tanh(W @ b + b))

    ps = zp.params(W, b)
    g1, g2 = zp.gradient(loss_forwarddiff, ps), zp.gradient(loss_plain, ps)
    np.testing.assert_allclose(g1[W], g2[W], rtol=1e-12)
    np.testing.assert_allclose(g1[b], g2[b], rtol=1e-12)
    (gx,) = zp.gradient(lambda x: np.sum(zp.forwarddiff(lambda v: np.sin(W @ v) * x, x)), b)
    (gx_plain,) = zp.gradient(lambda x: np.sum(np.sin(W @ x) * x), b)
    np.testing.assert_allclose(gx, gx_plain, rtol=1e-12)


def test_mixed_nesting_orders():
    f = lambda v: np.sum(v ** 3)  # noqa: E731
    x = np.array([1.0, 2.0])
    # reverse over forward
    (g,) = zp.gradient(lambda u: zp.jvp(f, (u,), (np.ones(2),))[1], x)
    np.testing.assert_allclose(g, 6 * x)
    # forward over reverse
    _, hv = zp.jvp(lambda u: zp.gradient(f, u)[0], (x,), (np.ones(2),))
    np.testing.assert_allclose(hv, 6 * x)
    # forward over forward, with perturbations kept apart
    assert zp.jvp(lambda a: zp.jvp(lambda t: t ** 3, (a,), (1.0,))[1], (2.0,), (1.0,)) == (12.0, 12.0)
    assert zp.jvp(lambda a: a * zp.jvp(lambda t: a + t, (1.0,), (1.0,))[1], (3.0,), (1.0,)) == (3.0, 1.0)


def test_hessians_of_a_wide_tanh_layer_agree_with_the_closed_form():
    W = RNG.normal(size=(100, 100)) / 10
    x = RNG.normal(size=100)
    t = np.tanh(W @ x)
    expected = W.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * W)
    h = lambda v: np.sum(np.tanh(W @ v))  # noqa: E731
    np.testing.assert_allclose(zp.hessian(h, x), expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(zp.hessian_reverse(h, x), expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, f, x", [
    ("a rule's tuple output, indexed", lambda v: np.linalg.eigh(v + v.T)[0], RNG.normal(size=(3, 3))),
    ("qr", lambda v: np.linalg.qr(v)[1], RNG.normal(size=(4, 3))),
    ("an output with a zero tangent", lambda v: np.full_like(v, 2.0) * v + np.imag(v), RNG.normal(size=3)),
    ("a constant output", lambda v: np.full_like(v, 2.0), RNG.normal(size=3)),
    ("a list of arrays", lambda v: v[0] * v[1], [RNG.normal(size=3), RNG.normal(size=3)]),
    ("a tuple of matrices", lambda v: v[0] @ v[1], (RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2)))),
])
@pytest.mark.parametrize("chunk", [1, 4])
def test_forward_jacobians_of_structured_values_match_reverse(name, f, x, chunk):
    (J_forward,) = zp.jacobian(f, x, mode="forward", chunk=chunk)
    (J_reverse,) = zp.jacobian(f, x, mode="reverse")
    np.testing.assert_allclose(np.asarray(J_forward), np.asarray(J_reverse), rtol=1e-10, atol=1e-12)


def test_hessians_through_tuple_outputs_and_zero_tangents():
    x = np.array([1.0, 2.0, 3.0])
    H = zp.hessian(lambda v: np.sum(np.full_like(v, 2.0) * v ** 3), x)
    np.testing.assert_allclose(H, np.diag(12.0 * x))
    f = lambda v: np.sum(np.linalg.eigh(np.outer(v, v) + np.eye(3))[0] ** 2)  # noqa: E731
    np.testing.assert_allclose(zp.hessian(f, x), zp.hessian_reverse(f, x), rtol=1e-8, atol=1e-10)


def test_hessian_of_a_function_using_forwarddiff():
    W = np.array([[1.0, 2.0], [3.0, 4.0]])

    def f(x):
        return np.sum(zp.forwarddiff(lambda v: np.tanh(W @ v), x) ** 2)

    def grad(x):  # analytic: 2 W^T (t (1 - t^2))
        t = np.tanh(W @ x)
        return 2 * W.T @ (t * (1 - t * t))

    x, h = np.array([0.1, -0.2]), 1e-6
    H_fd = np.stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(2)], axis=-1)
    np.testing.assert_allclose(zp.hessian(f, x), H_fd, rtol=1e-6)
    np.testing.assert_allclose(zp.hessian_reverse(f, x), H_fd, rtol=1e-6)


# -- jacobian and withjacobian with implicit parameters (Zygote's jacobian(f, ps)) -------------------
W_J = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]])
B_J = np.array([0.1, -0.3, 0.2])


def _layer(x):
    return np.tanh(W_J @ x + B_J)


@pytest.mark.parametrize("x", [np.array([0.3, -0.7]), np.array([1.5, 2.0])])
def test_jacobian_with_params_matches_the_explicit_jacobian(x):
    ps = zp.params(W_J, B_J)
    jac = zp.jacobian(lambda: _layer(x), ps)
    assert isinstance(jac, zp.Grads)
    J_W, J_B = zp.jacobian(lambda W, b: np.tanh(W @ x + b), W_J, B_J, mode="reverse")
    assert jac[W_J].shape == (3, 3, 2) and jac[B_J].shape == (3, 3)
    np.testing.assert_allclose(jac[W_J], J_W)
    np.testing.assert_allclose(jac[B_J], J_B)
    np.testing.assert_allclose(jac[B_J][:, 1], fd(lambda v: _layer_with_bias(x, 1, v), B_J[1]),
                               rtol=1e-6, atol=1e-9)


def _layer_with_bias(x, i, value):
    b = B_J.copy()
    b[i] = value
    return np.tanh(W_J @ x + b)


def test_jacobian_with_params_scalar_output_unused_parameter_and_aux():
    W, unused = np.array([1.0, 2.0]), np.ones(2)
    jac, aux = zp.jacobian(lambda: (np.sum(W ** 2), "aux"), zp.params(W, unused), has_aux=True)
    np.testing.assert_allclose(jac[W], [2.0, 4.0])
    assert aux == "aux"
    np.testing.assert_array_equal(jac[unused], np.zeros(2))
    with pytest.raises(ValueError, match="reverse mode"):
        zp.jacobian(lambda: W * 2, zp.params(W), mode="forward")
    with pytest.raises(ValueError, match="real output"):
        zp.jacobian(lambda: W * 1j, zp.params(W))


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
def test_withjacobian_gives_the_value_and_jacobians(mode):
    x, y = np.array([1.0, 2.0]), 3.0
    res = zp.withjacobian(lambda a, s: a * s + a ** 2, x, y, mode=mode)
    assert isinstance(res, zp.WithJacobian)
    np.testing.assert_allclose(res.val, x * y + x ** 2)
    expected = zp.jacobian(lambda a, s: a * s + a ** 2, x, y, mode=mode)
    for got, want in zip(res.grad, expected, strict=True):
        np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(res.grad[0], np.diag(y + 2 * x))
    np.testing.assert_allclose(res.grad[1], x)
    res = zp.withjacobian(lambda: _layer(x), zp.params(W_J, B_J))
    np.testing.assert_allclose(res.val, _layer(x))
    np.testing.assert_allclose(res.grad[B_J], zp.jacobian(lambda b: np.tanh(W_J @ x + b), B_J)[0])


# -- jacobian's mode="auto" counts outputs on copies -------------------------------------------------
def _moves_its_argument(x):
    x += 1.0
    return x ** 2


def _scales_its_argument(x):
    x *= 3.0
    return np.sin(x)


def _writes_an_element(x):
    x[0] = 0.0
    return x * x[-1]


@pytest.mark.parametrize("f, exact", [
    (_moves_its_argument, lambda x: np.diag(2 * (x + 1.0))),
    (_scales_its_argument, lambda x: np.diag(3.0 * np.cos(3.0 * x))),
    (_writes_an_element, lambda x: np.array([[0.0, 0.0, 0.0], [0.0, x[2], x[1]], [0.0, 0.0, 2 * x[2]]])),
])
def test_jacobian_in_every_mode_is_taken_at_the_callers_point(f, exact):
    """At the point the caller passed, and the caller's array left as one plain call leaves it
    (written back once, after every pass)."""
    x0 = np.array([1.0, 2.0, 3.0])
    numpy_leaves = x0.copy()
    f(numpy_leaves)
    for mode in ("auto", "forward", "reverse"):
        x = x0.copy()
        (J,) = zp.jacobian(f, x, mode=mode, chunk=1)
        np.testing.assert_allclose(J, exact(x0), err_msg=mode)
        np.testing.assert_array_equal(x, numpy_leaves, err_msg=f"{mode}: not as NumPy leaves the array")
