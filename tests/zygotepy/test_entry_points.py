"""The entry points as a JAX/PyTorch user calls them: has_aux, argnums, keywords, Jacobians and
Hessians over several and structured arguments (checked against finite differences, and
against JAX's structures where JAX is installed)."""

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.finite_differences import fd


def loss_and_prediction(w, x):
    pred = np.tanh(w * x)
    return np.sum(pred ** 2), pred


def test_gradient_has_aux_returns_grads_and_aux():
    w, x = np.array([0.3, -0.2]), np.array([1.0, 2.0])
    grads, pred = zp.gradient(loss_and_prediction, w, x, has_aux=True)
    np.testing.assert_allclose(pred, np.tanh(w * x))
    np.testing.assert_allclose(grads[0], fd(lambda v: loss_and_prediction(v, x)[0], w), rtol=1e-6)
    assert isinstance(pred, np.ndarray)  # aux is plain, not traced


def test_gradient_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match="has_aux=True needs .*pair"):
        zp.gradient(lambda x: x * 2.0, 1.0, has_aux=True)
    with pytest.raises(TypeError, match="tuple of length 3"):
        zp.gradient(lambda x: (x, x, x), 1.0, has_aux=True)


def test_gradient_of_a_tuple_without_has_aux_says_how():
    with pytest.raises(zp.NotScalarError, match="has_aux=True"):
        zp.gradient(lambda x: (x * x, 1), 2.0)


def test_withgradient_differentiates_first_entry_and_returns_whole_tuple():
    val, grad = zp.withgradient(loss_and_prediction, np.array([0.5]), np.array([2.0]), argnums=0)
    assert isinstance(val, tuple) and len(val) == 2
    np.testing.assert_allclose(val[1], np.tanh([1.0]))
    np.testing.assert_allclose(grad[0], fd(lambda v: loss_and_prediction(v, np.array([2.0]))[0],
                                           np.array([0.5])), rtol=1e-6)


def test_pullback_has_aux_is_jax_vjp():
    y, back, aux = zp.pullback(lambda v: (np.sin(v), {"n": len(v)}), np.array([0.1, 0.2]), has_aux=True)
    np.testing.assert_allclose(y, np.sin([0.1, 0.2]))
    assert aux == {"n": 2}
    np.testing.assert_allclose(back(np.ones(2))[0], np.cos([0.1, 0.2]))


def test_argnums_out_of_range_is_an_error_not_a_wraparound():  # issue 14, item 10
    with pytest.raises(ValueError, match=r"argnums=5 is out of range.*-2\.\.1"):
        zp.gradient(lambda x, y: x * y, 2.0, 3.0, argnums=5)
    with pytest.raises(ValueError, match="argnums=-3"):
        zp.gradient(lambda x, y: x * y, 2.0, 3.0, argnums=-3)


def test_argnums_duplicates_and_non_ints_are_refused():
    with pytest.raises(ValueError, match="more than once"):
        zp.gradient(lambda x, y: x * y, 2.0, 3.0, argnums=(0, -2))
    for bad in (1.0, "x", True, (0, None)):
        with pytest.raises(TypeError, match="argnums must be an int"):
            zp.gradient(lambda x, y: x * y, 2.0, 3.0, argnums=bad)


@given(st.integers(1, 4), st.integers(-6, 6))
def test_argnums_counts_from_the_end_or_refuses(nargs, n):
    args = tuple(float(i + 1) for i in range(nargs))

    def f(*xs):
        return sum(k * x for k, x in zip(range(1, nargs + 1), xs, strict=True))

    if -nargs <= n < nargs:
        assert zp.gradient(f, *args, argnums=n) == (float(n % nargs + 1),)
    else:
        with pytest.raises(ValueError, match="out of range"):
            zp.gradient(f, *args, argnums=n)


def test_misspelt_reserved_keyword_is_refused_before_the_function_runs():
    ran = []

    def f(x, **kw):
        ran.append(kw)
        return x * 2.0

    with pytest.raises(TypeError, match=r"'argnum'.*did you mean argnums="):
        zp.gradient(f, 1.0, argnum=0)
    with pytest.raises(TypeError, match=r"'hasaux'.*did you mean has_aux="):
        zp.gradient(f, 1.0, hasaux=True)
    with pytest.raises(TypeError, match=r"'mod'.*did you mean mode="):
        zp.jacobian(f, 1.0, mod="forward")
    assert ran == []


def test_keyword_the_function_does_not_take_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"'scale'.*does not take"):
        zp.gradient(lambda x: x * 2.0, 1.0, scale=3.0)


def test_user_keywords_pass_through_undifferentiated():
    def f(x, scale=1.0, argnum=None):  # a parameter of f's own is never taken for a typo
        return x * scale + (0.0 if argnum is None else argnum)

    assert zp.gradient(f, 2.0, scale=3.0) == (3.0,)
    assert zp.gradient(f, 2.0, argnum=1.0) == (1.0,)
    assert zp.hessian(lambda x, p: p * x ** 3, 2.0, p=2.0) == pytest.approx(24.0)


def test_hessian_of_two_scalars_tuning_options_are_keyword_only():
    H = zp.hessian(lambda x, y: x * y, 2.0, 3.0)
    assert [[float(h) for h in row] for row in H] == [[0.0, 1.0], [1.0, 0.0]]


def f_xy(x, y):
    return np.sum(np.sin(x) * y[0]) + y[1] ** 2 * np.sum(x)


def test_hessian_of_several_arguments_matches_finite_differences():
    x, y = np.array([0.3, 0.7]), np.array([1.5, -0.4])
    (Hxx, Hxy), (Hyx, Hyy) = zp.hessian(f_xy, x, y)
    assert Hxx.shape == (2, 2) and Hxy.shape == (2, 2) and Hyx.shape == (2, 2)
    gx = lambda xx, yy: zp.gradient(f_xy, xx, yy)[0]  # noqa: E731
    for j in range(2):
        e = np.eye(2)[j] * 1e-5
        np.testing.assert_allclose(Hxx[:, j], (gx(x + e, y) - gx(x - e, y)) / 2e-5, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(Hxy[:, j], (gx(x, y + e) - gx(x, y - e)) / 2e-5, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(Hyx, Hxy.T)
    np.testing.assert_allclose(zp.hessian_reverse(f_xy, x, y)[1][1], Hyy, atol=1e-12)


def loss_of_dict(p):
    return np.sum(p["w"] ** 2) * p["b"] + p["b"] ** 3


def test_jacobian_and_hessian_of_a_dict_argument():
    p = {"w": np.array([1.0, 2.0]), "b": 0.5, "name": "layer"}
    J, = zp.jacobian(lambda q: q["w"] * q["b"], p)
    np.testing.assert_allclose(J["w"], 0.5 * np.eye(2))
    np.testing.assert_allclose(J["b"], [1.0, 2.0])
    assert J["name"] is None
    H = zp.hessian(loss_of_dict, {"w": p["w"], "b": p["b"]})
    np.testing.assert_allclose(H["w"]["w"], 2 * 0.5 * np.eye(2))
    np.testing.assert_allclose(H["w"]["b"], 2 * p["w"])
    np.testing.assert_allclose(H["b"]["w"], 2 * p["w"])
    assert float(H["b"]["b"]) == pytest.approx(6 * 0.5)


@dataclass
class Layer:
    w: np.ndarray
    b: float


def test_jacobian_of_list_and_dataclass_arguments_with_a_dict_output():
    layer, xs = Layer(np.array([1.0, -1.0]), 0.25), [np.array([2.0, 3.0]), 4.0]
    J = zp.jacobian(lambda m, v: {"out": m.w * v[0] + m.b, "s": v[1] * m.b}, layer, xs)
    Jl, Jx = J["out"]
    assert isinstance(Jl, Layer) and isinstance(Jx, list)
    np.testing.assert_allclose(Jl.w, np.diag([2.0, 3.0]))
    np.testing.assert_allclose(Jl.b, [1.0, 1.0])
    np.testing.assert_allclose(Jx[0], np.diag([1.0, -1.0]))
    np.testing.assert_allclose(Jx[1], [0.0, 0.0])
    assert float(J["s"][0].b) == 4.0 and float(J["s"][1][1]) == 0.25


def test_jacobian_modes_agree_on_structured_arguments():
    p = {"a": np.array([0.1, 0.2, 0.3]), "b": (2.0, np.array([1.0]))}

    def f(q):
        return np.cos(q["a"]) * q["b"][0] + q["b"][1]

    fwd, = zp.jacobian(f, p, mode="forward")
    rev, = zp.jacobian(f, p, mode="reverse")
    for a, b in zip(rc.tree_leaves(fwd), rc.tree_leaves(rev), strict=True):
        np.testing.assert_allclose(a, b)


def test_jacobian_has_aux():
    (J,), aux = zp.jacobian(lambda v: (v ** 2, "aux"), np.array([1.0, 3.0]), has_aux=True)
    np.testing.assert_allclose(J, np.diag([2.0, 6.0]))
    assert aux == "aux"


def test_hessian_of_an_unused_argument_is_zero():
    (Hxx, Hxy), (Hyx, Hyy) = zp.hessian(lambda x, y: x ** 3, 2.0, 5.0)
    assert (float(Hxx), float(Hxy), float(Hyx), float(Hyy)) == (12.0, 0.0, 0.0, 0.0)


def _same_structure(ours, theirs):
    import jax

    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)  # JAX: float32


def test_structures_match_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    x, y = np.array([0.3, 0.7]), np.array([1.5, -0.4])  # JAX's answers compiled whole (eager: op by op)

    def g(x, y, m=np):
        return m.sum(m.sin(x) * y[0]) + y[1] ** 2 * m.sum(x)

    _same_structure(zp.hessian(g, x, y),
                    jax.jit(jax.hessian(lambda a, b: g(a, b, jnp), argnums=(0, 1)))(x, y))
    _same_structure(zp.hessian(g, x, y=y), jax.jit(jax.hessian(lambda a: g(a, y, jnp)))(x))
    p = {"w": np.array([1.0, 2.0]), "b": np.array(0.5)}
    _same_structure(zp.hessian(loss_of_dict, p),
                    jax.jit(jax.hessian(lambda q: jnp.sum(q["w"] ** 2) * q["b"] + q["b"] ** 3))(p))

    def h(q, v):
        return {"o": jnp.tanh(q["w"] * v[0]), "p": [v[1] * q["b"]]}

    ours = zp.jacobian(lambda q, v: {"o": np.tanh(q["w"] * v[0]), "p": [v[1] * q["b"]]}, p, (2.0, 3.0))
    _same_structure(ours, jax.jit(jax.jacrev(h, argnums=(0, 1)))(p, (2.0, 3.0)))
