"""rulescore.interop.jax: f's rules as JAX derivatives, host (callback) and native tiers."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="needs jax (the `jax` extra)")
import jax.numpy as jnp  # noqa: E402

import rulescore as rc  # noqa: E402
import rulescore.interop.jax as rjax  # noqa: E402
from rulescore.interop import _host  # noqa: E402
from tests.interop import _functions as F  # noqa: E402

X = np.array([0.3, -0.5, 1.2])


def sin_sum(g):
    return lambda x: jnp.sum(g(x))


@pytest.mark.parametrize("transform", [lambda h: h, jax.jit])
def test_grad_vjp_jvp_of_a_library_rule(transform) -> None:
    g = rjax.wrap(np.sin)
    x = jnp.asarray(X)
    np.testing.assert_allclose(transform(jax.grad(sin_sum(g)))(x), np.cos(X))
    y, back = jax.vjp(g, x)
    np.testing.assert_allclose(back(jnp.ones(3))[0], np.cos(X))
    y, ydot = transform(lambda x, t: jax.jvp(g, (x,), (t,)))(x, jnp.full(3, 2.0))
    np.testing.assert_allclose(ydot, 2 * np.cos(X))
    np.testing.assert_allclose(jax.jacfwd(g)(x), np.diag(np.cos(X)))


def test_higher_orders_differentiate_the_pullback() -> None:
    g = rjax.wrap(np.sin)
    x = jnp.asarray(X)
    np.testing.assert_allclose(jax.grad(jax.grad(g))(0.3), -np.sin(0.3))
    np.testing.assert_allclose(jax.grad(jax.grad(jax.grad(g)))(0.3), -np.cos(0.3))
    np.testing.assert_allclose(jax.hessian(sin_sum(g))(x), np.diag(-np.sin(X)))
    np.testing.assert_allclose(jax.jit(jax.jacrev(jax.jacrev(sin_sum(g))))(x), np.diag(-np.sin(X)))


def test_vmap_of_grad_and_grad_of_vmap() -> None:
    g = rjax.wrap(np.sin)
    xs = jnp.asarray(np.stack([X, 2 * X]))
    np.testing.assert_allclose(jax.vmap(g)(xs), np.sin(xs))
    np.testing.assert_allclose(jax.vmap(jax.grad(sin_sum(g)))(xs), np.cos(xs))
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jax.vmap(g)(v)))(xs), np.cos(xs))
    np.testing.assert_allclose(jax.jit(jax.vmap(g, in_axes=1, out_axes=1))(xs.T), np.sin(xs.T))


def test_structures_ints_and_pytrees() -> None:
    g = rjax.wrap(F.scaled_sum)
    params = {"w": jnp.asarray(1.5), "b": jnp.asarray(0.25)}
    xs = (jnp.asarray(X), jnp.asarray([1.0, 2.0]))

    def loss(params, xs):
        out = g(params, xs, 3)
        return jnp.sum(out["y"] ** 2) + out["s"]

    def reference(params, xs):
        out = {"y": 3 * params["w"] * xs[0] + params["b"], "s": jnp.sum(xs[1] ** 2)}
        return jnp.sum(out["y"] ** 2) + out["s"]

    got = jax.jit(jax.grad(loss, argnums=(0, 1)))(params, xs)
    want = jax.grad(reference, argnums=(0, 1))(params, xs)
    jax.tree_util.tree_map(np.testing.assert_allclose, got, want)
    t = ({"w": jnp.asarray(1.0), "b": jnp.asarray(0.0)}, (jnp.ones(3), jnp.ones(2)))
    _, ydot = jax.jvp(lambda p, x: g(p, x, 3), (params, xs), t)
    np.testing.assert_allclose(ydot["y"], 3 * (X + 1.5))
    np.testing.assert_allclose(ydot["s"], 2 * 3.0)


def test_integer_arrays_get_float0_cotangents() -> None:
    g = rjax.wrap(np.multiply)
    _, back = jax.vjp(g, jnp.asarray(X), jnp.arange(3))
    xbar, kbar = back(jnp.ones(3))
    np.testing.assert_allclose(xbar, np.arange(3))
    assert kbar.dtype == jax.dtypes.float0


def scaled_and_count(x):
    """A float output and an integer one (no tangent: JAX's symbolic zero)."""
    xp = rc.array_namespace(x)
    return 2 * x, xp.sum(xp.ones(x.shape, dtype=xp.int64))


@rc.rrule.register(scaled_and_count)
def scaled_and_count_rrule(x):
    return scaled_and_count(x), lambda ybar: (rc.NoTangent(), 2 * ybar[0])


@pytest.mark.parametrize("transform", [lambda h: h, jax.jit])
def test_an_integer_output_has_a_symbolic_zero_tangent(transform) -> None:
    """Eager and under jit, in reverse (JAX's linearization of the primitive) and forward mode:
    JAX 0.10 dropped ``Zero.from_primal_value``, so this raised AttributeError there."""
    g = rjax.wrap(scaled_and_count)
    x = jnp.asarray(X)
    np.testing.assert_allclose(transform(jax.grad(lambda v: jnp.sum(g(v)[0])))(x), 2 * np.ones(3))
    (y, n), (ydot, ndot) = transform(lambda v, t: jax.jvp(g, (v,), (t,)))(x, jnp.ones(3))
    np.testing.assert_allclose(ydot, 2 * np.ones(3))
    assert int(n) == 3 and ndot.dtype == jax.dtypes.float0
    assert g.tier == "native"


def test_complex_convention_is_converted() -> None:
    g = rjax.wrap(F.abs2)
    z = jnp.asarray([1.0 + 2.0j, -0.5 + 0.25j])
    got = jax.grad(lambda z: jnp.sum(g(z)))(z)
    want = jax.grad(lambda z: jnp.sum(jnp.real(z * jnp.conj(z))))(z)
    np.testing.assert_allclose(got, want)


def test_float32_stays_float32() -> None:
    g = rjax.wrap(np.sin)
    x = jnp.asarray(X, dtype=jnp.float32)
    assert g(x).dtype == jnp.float32 and jax.grad(sin_sum(g))(x).dtype == jnp.float32


def test_out_shape_given_by_the_author() -> None:
    def first_half(x):
        if np.all(x == 1.0):  # the example call cannot tell the shape
            raise ValueError("needs real data")
        return x[: len(x) // 2] * 2.0

    import rulescore as rc

    @rc.rrule.register(first_half)
    def first_half_rrule(x):
        def first_half_pullback(ybar):
            xbar = np.zeros_like(x)
            xbar[: len(x) // 2] = 2.0 * ybar
            return rc.NoTangent(), xbar
        return first_half(x), first_half_pullback

    g = rjax.wrap(first_half, out_shape=lambda x: jax.ShapeDtypeStruct((x.shape[0] // 2,), x.dtype))
    x = jnp.asarray([0.5, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(jax.jit(jax.grad(lambda x: jnp.sum(g(x))))(x), [2.0, 2.0, 0.0, 0.0])


def test_a_missing_frule_is_named() -> None:
    g = rjax.wrap(F.no_frule, native=False)  # the host tier: its pullback cannot be transposed
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(g(x)))(jnp.asarray(X)), 2.0)
    with pytest.raises(TypeError, match="no frule for no_frule"):
        jax.jvp(g, (jnp.asarray(X),), (jnp.ones(3),))


@pytest.fixture
def no_engine_installed(monkeypatch):
    """An environment where no package registers a ``rulescore.engines`` entry point."""
    monkeypatch.setattr(_host.importlib.metadata, "entry_points", lambda group: [])
    _host.engine.cache_clear()
    yield
    _host.engine.cache_clear()


def test_without_an_engine_higher_order_says_what_to_install(no_engine_installed) -> None:
    g = rjax.wrap(F.logistic)
    d = F.logistic(0.5) * (1 - F.logistic(0.5))
    np.testing.assert_allclose(jax.grad(g)(0.5), d)
    np.testing.assert_allclose(jax.jvp(g, (0.5,), (1.0,))[1], d)
    with pytest.raises(Exception, match="pip install zygotepy"):
        jax.grad(jax.grad(g))(0.5)
    np.testing.assert_allclose(jax.grad(jax.grad(rjax.wrap(np.tanh)))(0.5), -2 * np.tanh(0.5) * d_tanh(0.5))


def d_tanh(x):
    return 1 - np.tanh(x) ** 2


def test_host_tier_runs_through_a_callback() -> None:
    g = rjax.wrap(F.logistic)
    x = jnp.asarray(X)
    hess = jax.jit(jax.hessian(lambda x: jnp.sum(g(x))))
    assert "callback" in hess.lower(x).as_text()
    np.testing.assert_allclose(hess(x), np.diag(F.logistic_d2(X)))


#: library ufuncs written against rc.array_namespace, with their first and second derivatives
NATIVE_UFUNCS = [
    (np.sin, np.cos, lambda x: -np.sin(x)),
    (np.tanh, d_tanh, lambda x: -2 * np.tanh(x) * d_tanh(x)),
    (np.exp, np.exp, np.exp),
    (np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), lambda x: -x / (x * x + 1) ** 1.5),
]


@pytest.mark.parametrize(("f", "d1", "d2"), NATIVE_UFUNCS, ids=lambda v: getattr(v, "__name__", ""))
def test_library_ufuncs_run_natively_at_any_order(f, d1, d2) -> None:
    g = rjax.wrap(f, native=True)
    x = jnp.asarray(X)
    hess = jax.jit(jax.hessian(lambda x: jnp.sum(g(x))))
    assert "callback" not in hess.lower(x).as_text()  # the compiled program: no host round trip
    np.testing.assert_allclose(hess(x), np.diag(d2(X)), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(g)))(x), d1(X), rtol=1e-12)
    np.testing.assert_allclose(jax.jacfwd(jax.jacfwd(g))(x).diagonal().diagonal(), d2(X), rtol=1e-12)
    third = jax.grad(jax.grad(jax.grad(g)))(0.3)  # any order: the pullback's JAX operations, differentiated
    own = getattr(jnp, f.__name__)
    np.testing.assert_allclose(third, jax.grad(jax.grad(jax.grad(own)))(0.3))


def test_library_binary_ufuncs_run_natively() -> None:
    x, y = jnp.asarray(X), jnp.asarray([0.7, -0.4, 0.2])  # no ties: max has no second derivative there
    for f, ref in [(np.multiply, jnp.multiply), (np.arctan2, jnp.arctan2), (np.hypot, jnp.hypot),
                   (np.maximum, jnp.maximum)]:
        g = rjax.wrap(f, native=True)
        hess = jax.jit(jax.hessian(lambda a, b, g=g: jnp.sum(g(a, b) ** 2), argnums=(0, 1)))
        assert "callback" not in hess.lower(x, y).as_text()
        want = jax.jit(jax.hessian(lambda a, b, ref=ref: jnp.sum(ref(a, b) ** 2), argnums=(0, 1)))(x, y)
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14), hess(x, y), want)
    # a broadcast scalar argument gets its cotangent summed back
    dy = jax.grad(lambda y: jnp.sum(rjax.wrap(np.multiply)(x, y)))(2.0)
    np.testing.assert_allclose(dy, np.sum(X))


def test_native_tier_runs_without_callbacks() -> None:
    g = rjax.wrap(F.softsign)
    x = jnp.asarray(X)
    assert "callback" not in jax.jit(jax.hessian(lambda x: jnp.sum(g(x)))).lower(x).as_text()
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(g(x)))(x), 1 / (1 + np.abs(X)) ** 2)
    np.testing.assert_allclose(jax.hessian(lambda x: jnp.sum(g(x)))(x), np.diag(F.softsign_d2(X)))
    np.testing.assert_allclose(jax.jacfwd(jax.jacfwd(g))(x).diagonal().diagonal(), F.softsign_d2(X))
    xs = jnp.asarray(np.stack([X, -X]))
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jax.vmap(g)(v)))(xs), 1 / (1 + np.abs(xs)) ** 2)
    with pytest.raises(TypeError, match="native=True"):
        rjax.wrap(F.logistic, native=True)(x)


@pytest.mark.parametrize(("f", "kwargs", "ref"), [
    (np.sum, {"axis": 1}, jnp.sum), (np.mean, {}, jnp.mean), (np.var, {"axis": 0, "ddof": 1}, jnp.var),
    (np.std, {"axis": (0, 1)}, jnp.std), (np.max, {"axis": 1, "keepdims": True}, jnp.max),
    (np.ndarray.sum, {}, jnp.sum), (np.matmul, {}, jnp.matmul)], ids=lambda v: getattr(v, "__name__", ""))
def test_library_reductions_and_matmul_run_natively(f, kwargs, ref) -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 4)))
    args = (x, x.T) if f is np.matmul else (x,)
    g = rjax.wrap(f, native=True)
    hess = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(g(*a, **kwargs)))))
    assert "callback" not in hess.lower(*args).as_text()
    want = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(ref(*a, **kwargs)))))(*args)
    np.testing.assert_allclose(hess(*args), want, rtol=1e-10, atol=1e-12)


# -- forward mode for an rrule-only native rule: the transposed pullback ------------------------------


def rrule_only_softsign(x):
    xp = rc.array_namespace(x)
    return x / (1 + xp.abs(x))


@rc.rrule.register(rrule_only_softsign)
def rrule_only_softsign_rrule(x):
    xp = rc.array_namespace(x)
    return rrule_only_softsign(x), lambda ybar: (rc.NoTangent(), ybar / (1 + xp.abs(x)) ** 2)


def rrule_only_shift(x, b):
    xp = rc.array_namespace(x, b)
    return xp.tanh(x + b)


@rc.rrule.register(rrule_only_shift)
def rrule_only_shift_rrule(x, b):
    y = rrule_only_shift(x, b)

    def rrule_only_shift_pullback(ybar):
        d = ybar * (1 - y ** 2)
        return rc.NoTangent(), rc.project(x, d), rc.project(b, d)

    return y, rrule_only_shift_pullback


def rrule_only_square(z):
    """Holomorphic: the pullback is ``conj(2 z) * ybar`` (rulescore's convention)."""
    return z * z


@rc.rrule.register(rrule_only_square)
def rrule_only_square_rrule(z):
    xp = rc.array_namespace(z)
    return rrule_only_square(z), lambda ybar: (rc.NoTangent(), ybar * xp.conj(2 * z))


def rrule_only_abs2(z):
    xp = rc.array_namespace(z)
    return xp.real(z * xp.conj(z))


@rc.rrule.register(rrule_only_abs2)
def rrule_only_abs2_rrule(z):
    return rrule_only_abs2(z), lambda ybar: (rc.NoTangent(), 2 * ybar * z)


TRANSPOSED = [
    (rrule_only_softsign, lambda x: x / (1 + jnp.abs(x)), (X,)),
    (rrule_only_shift, lambda x, b: jnp.tanh(x + b), (X, np.array(0.4))),
    (rrule_only_shift, lambda x, b: jnp.tanh(x + b), (X.reshape(3, 1), np.array([0.1, -0.2]))),
    (rrule_only_square, lambda z: z * z, (np.array([1.0 + 2.0j, -0.5 + 0.25j]),)),
    (rrule_only_abs2, lambda z: jnp.real(z * jnp.conj(z)), (np.array([1.0 + 2.0j, -0.5 + 0.25j]),)),
]


@pytest.mark.parametrize(("f", "ref", "args"), TRANSPOSED, ids=lambda v: getattr(v, "__name__", ""))
@pytest.mark.parametrize("transform", [lambda h: h, jax.jit], ids=["eager", "jit"])
def test_forward_mode_of_an_rrule_only_native_rule(f, ref, args, transform) -> None:
    g = rjax.wrap(f, native=True)
    xs = tuple(jnp.asarray(a) for a in args)
    rng = np.random.default_rng(2)
    ts = tuple(jnp.asarray(rng.standard_normal(np.shape(a)) + (1j * rng.standard_normal(np.shape(a))
                                                                if np.iscomplexobj(a) else 0)) for a in args)
    _, got = transform(lambda xs, ts: jax.jvp(g, xs, ts))(xs, ts)
    _, want = jax.jvp(ref, xs, ts)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("f", "ref", "args"), [c for c in TRANSPOSED if not np.iscomplexobj(c[2][0])],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_hessian_of_an_rrule_only_native_rule(f, ref, args) -> None:
    g = rjax.wrap(f, native=True)
    xs = tuple(jnp.asarray(a) for a in args)
    argnums = tuple(range(len(xs)))
    hess = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(g(*a))), argnums=argnums))
    assert "callback" not in hess.lower(*xs).as_text()
    # the references compiled whole (JAX's eager dispatch, op by op, was most of the test's time)
    want = jax.jit(jax.hessian(lambda *a: jnp.sum(jnp.sin(ref(*a))), argnums=argnums))(*xs)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12), hess(*xs), want)
    jac = jax.vmap(jax.jacfwd(lambda x: g(x, *xs[1:])))(jnp.stack([xs[0], 2 * xs[0]]))
    want_jac = jax.jit(jax.vmap(jax.jacfwd(lambda x: ref(x, *xs[1:]))))(jnp.stack([xs[0], 2 * xs[0]]))
    np.testing.assert_allclose(jac, want_jac, rtol=1e-12, atol=1e-14)


def host_doubled(x):
    return 2.0 * np.asarray(x)  # NumPy only: the host tier, where the pullback is not transposable


@rc.rrule.register(host_doubled)
def host_doubled_rrule(x):
    return host_doubled(x), lambda ybar: (rc.NoTangent(), 2.0 * ybar)


def test_a_host_rrule_only_rule_still_names_the_missing_frule() -> None:
    g = rjax.wrap(host_doubled)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(g(x)))(jnp.asarray(X)), 2.0)
    with pytest.raises(Exception, match="no frule for .*host_doubled"):
        jax.jvp(g, (jnp.asarray(X),), (jnp.ones(3),))
    # the same rule written natively gets forward mode from its transposed pullback
    np.testing.assert_allclose(jax.jvp(rjax.wrap(F.no_frule), (jnp.asarray(X),), (jnp.ones(3),))[1], 2.0)
