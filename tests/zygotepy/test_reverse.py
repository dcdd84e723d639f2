"""The user-facing conventions of gradient, withgradient, pullback and jacobian (shared/API.md)."""

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pytest

import rulescore as rc
import zygotepy as zp
from tests.zygotepy.families import FAMILIES
from tests.zygotepy.finite_differences import fd


@dataclass
class Point:
    x: float
    y: float


class Pair(NamedTuple):
    a: float
    b: float


def test_gradient_of_plain_python():
    grads = zp.gradient(lambda x, y: x * y + math.sin(x), 2.0, 3.0)
    assert grads == pytest.approx((3.0 + math.cos(2.0), 2.0))


def test_unused_argument_and_string_get_none():
    assert zp.gradient(lambda x, s, y: x * 2.0, 1.0, "label", 5.0) == (2.0, None, None)


def test_int_argument_gets_float_gradient():
    (g,) = zp.gradient(lambda n: n * n, 3)
    assert g == 6.0 and type(g) is float


def test_float32_array_keeps_dtype_and_shape():
    x = np.ones((2, 3), dtype=np.float32)
    (g,) = zp.gradient(lambda a: (a * a).sum(), x)
    assert g.dtype == np.float32 and g.shape == (2, 3)
    np.testing.assert_allclose(g, 2 * x)


def test_containers_are_mirrored():
    grads = zp.gradient(lambda t, l, d: t[0] * l[1] + d["w"], (2.0, 5.0), [1.0, 3.0], {"w": 4.0, "s": 1.0})
    assert grads == ((3.0, None), [None, 2.0], {"w": 1.0, "s": None})


def test_objects_get_structural_tangents():
    (g,) = zp.gradient(lambda p: math.sqrt(p.x ** 2 + p.y ** 2), Point(1.0, 2.0))
    assert isinstance(g, rc.Tangent[Point])
    assert (g.x, g.y) == pytest.approx((1 / math.sqrt(5), 2 / math.sqrt(5)))
    (h,) = zp.gradient(lambda p: p.x, Point(1.0, 2.0))
    assert h.x == 1.0 and h.y is None


def test_namedtuple_argument():
    (g,) = zp.gradient(lambda p: p.a * p.b, Pair(2.0, 3.0))
    assert (g.a, g.b) == (3.0, 2.0)


def test_real_input_through_complex_gets_real_gradient():
    (g,) = zp.gradient(lambda x: abs(x * (1 + 1j)), 2.0)
    assert isinstance(g, float) and g == pytest.approx(math.sqrt(2))


def test_complex_input_gets_chainrules_convention():
    # f(z) = |z|^2 = x^2 + y^2: df/dx + i df/dy = 2z
    (g,) = zp.gradient(lambda z: (z * z.conjugate()).real, 1.0 + 2.0j)
    assert g == pytest.approx(2.0 + 4.0j)


def test_withgradient():
    res = zp.withgradient(lambda x: x ** 3, 2.0)
    assert res.val == 8.0 and res.grad == (12.0,)


def test_pullback_can_be_called_twice():
    y, back = zp.pullback(lambda x: np.sin(x), np.array([0.0, 1.0]))
    first, second = back(np.ones(2)), back(2 * np.ones(2))
    np.testing.assert_allclose(first[0], np.cos([0.0, 1.0]))
    np.testing.assert_allclose(second[0], 2 * np.cos([0.0, 1.0]))


def test_pullback_of_tuple_output():
    y, back = zp.pullback(lambda x: (x * 2.0, x * 3.0), 1.0)
    assert y == (2.0, 3.0)
    assert back((1.0, None)) == (2.0,)
    assert back((1.0, 1.0)) == (5.0,)




def test_argnums_and_wrt():
    def f(x, y, z):
        return x * y * z

    assert zp.gradient(f, 1.0, 2.0, 3.0, argnums=(0, 2)) == (6.0, 2.0)
    assert zp.gradient(f, 1.0, 2.0, 3.0, wrt="y") == (3.0,)
    assert zp.gradient(f, 1.0, 2.0, 3.0, wrt=["z", "x"]) == (2.0, 6.0)


@pytest.mark.parametrize("wrt, advice", [
    (1, "argnums=1"), ((0, 2), r"argnums=\(0, 2\)"), ([1], r"argnums=\[1\]"),
    (("x", 1), "argnums="), (1.5, "argnums="), (b"x", "argnums="),
])
@pytest.mark.parametrize("entry", [zp.gradient, zp.withgradient])
def test_wrt_that_does_not_name_parameters_is_a_type_error_naming_wrt(entry, wrt, advice):
    def f(x, y, z):
        return x * y * z

    with pytest.raises(TypeError, match=rf"wrt must name parameters of .*f .*\['x', 'y', 'z'\].*{advice}"):
        entry(f, 1.0, 2.0, 3.0, wrt=wrt)


@pytest.mark.parametrize("f, expected", [
    (lambda x, n: x * n, (3.0, 2.0)),
    (lambda x, n: x ** n, (12.0, 8.0 * math.log(2.0))),
    (lambda x, n: n ** x, (9.0 * math.log(3.0), 6.0)),
    (lambda x, n: math.pow(x, n), (12.0, 8.0 * math.log(2.0))),
    (lambda x, n: pow(x, n), (12.0, 8.0 * math.log(2.0))),
    (lambda x, n: float(np.power(x, n)), (12.0, 8.0 * math.log(2.0))),
    (lambda x, n: x / n + n, (1.0 / 3.0, 1.0 - 2.0 / 9.0)),
    (lambda x, n: x ** (n - 1) * n, (3.0 * 2.0 * 2.0, 4.0 * math.log(2.0) * 3.0 + 4.0)),
])
def test_an_integer_argument_gets_a_float_gradient_whatever_the_operation(f, expected):
    """One rule (ChainRules': an integer's tangent is projected onto the reals): an int argument gets
    a float gradient, whether it meets ``*``, ``/`` or ``**``, checked against finite differences."""
    got = zp.gradient(f, 2.0, 3)
    assert all(type(g) is float for g in got)
    assert got == pytest.approx(expected)
    step = 1e-6
    numeric = ((f(2.0 + step, 3) - f(2.0 - step, 3)) / (2 * step),
               (f(2.0, 3 + step) - f(2.0, 3 - step)) / (2 * step))
    assert got == pytest.approx(numeric, rel=1e-6)


def test_an_integer_used_only_for_control_flow_or_indexing_gets_none():
    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)

    assert zp.gradient(power, 2.0, 3) == (12.0, None)
    assert zp.gradient(lambda v, i: v[i] * 2.0, np.ones(3), 1)[1] is None
    assert zp.gradient(lambda x, n: x ** n, 2.0, True) == (1.0, None)  # a bool has no tangent space


def test_keyword_arguments_pass_through():
    assert zp.gradient(lambda x, scale=1.0: x * scale, 2.0, scale=4.0) == (4.0,)
    (g,) = zp.gradient(lambda x: np.sum(x ** 2, axis=0).sum(), np.ones((2, 2)))
    np.testing.assert_allclose(g, 2 * np.ones((2, 2)))


def test_non_scalar_output_is_refused_with_advice():
    with pytest.raises(zp.NotScalarError, match="jacobian"):
        zp.gradient(lambda x: x * 2, np.ones(3))
    with pytest.raises(zp.NotScalarError, match="complex"):
        zp.gradient(lambda x: x * 1j, 1.0)


def test_constant_output_gives_none():
    assert zp.gradient(lambda x: 3.0, 1.0) == (None,)


def test_user_arrays_are_not_mutated():
    x = np.array([1.0, 2.0])
    before = x.copy()
    zp.gradient(lambda a: (a * a).sum(), x)
    np.testing.assert_array_equal(x, before)


def test_nested_containers_of_arrays_are_projected_and_mirrored():
    W = np.ones((2, 3), dtype=np.float32)
    b = np.zeros(3, dtype=np.float32)
    params = [(W, b), (W.copy(), b.copy()), 4]

    def f(ps):
        (W0, b0), _, n = ps
        return np.sum(np.asarray(W0, np.float64) * 2.0) + np.sum(b0 * 3.0) + n * n

    (g,) = zp.gradient(f, params)
    assert g[1] is None  # an untouched pair is None, not a tuple of Nones
    (gW, gb), n_bar = g[0], g[2]
    assert gW.dtype == np.float32 and gb.dtype == np.float32  # float64 cotangents projected
    np.testing.assert_allclose(gW, 2.0)
    np.testing.assert_allclose(gb, 3.0)
    assert n_bar == 8.0 and type(n_bar) is float


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mean_squared_error_gradient(dtype):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 5)).astype(dtype), rng.standard_normal((4, 5)).astype(dtype)
    x_before = x.copy()
    gx, gy = zp.gradient(lambda a, c: np.sum((a - c) ** 2) / 20, x, y)
    np.testing.assert_allclose(gx, (x - y) / 10, rtol=1e-6)
    np.testing.assert_allclose(gy, (y - x) / 10, rtol=1e-6)
    assert gx.dtype == dtype and gy.dtype == dtype
    np.testing.assert_array_equal(x, x_before)


def test_dividing_by_an_int_constant_or_a_traced_int():
    x = np.arange(1.0, 4.0)
    (gx,) = zp.gradient(lambda a: np.sum(a) / 4, x)
    np.testing.assert_allclose(gx, 0.25)
    gx, gn = zp.gradient(lambda a, n: np.sum(a) / n, x, 4)
    np.testing.assert_allclose(gx, 0.25)
    assert gn == pytest.approx(-6.0 / 16) and type(gn) is float


def test_unprojected_rule_cotangents_are_projected_at_the_edge():
    def scaled_total(a):
        return float(np.sum(a)) * 2.0

    @rc.rrule.register(scaled_total)
    def _(a):  # a careless rule: a float64 cotangent for a float32 argument
        return scaled_total(a), lambda ybar: (rc.NoTangent(), np.full(3, 2.0 * ybar))

    x32 = np.ones(3, dtype=np.float32)
    with rc.checking(False):  # checking mode would reject the rule itself
        (g,) = zp.gradient(scaled_total, x32)
        (gs,) = zp.gradient(lambda ps: scaled_total(ps[0]), [x32])
    assert g.dtype == np.float32 and g.shape == (3,)
    np.testing.assert_allclose(g, 2.0)
    assert gs[0].dtype == np.float32 and gs[0].shape == (3,)


W_GLOBAL = np.array([[1.0, 2.0], [3.0, 4.0]])


class Layer:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return np.tanh(self.W @ x + self.b)


def test_closure_global_and_attribute_parameters():
    b = np.array([0.5, -0.5])
    layer = Layer(np.eye(2), np.zeros(2))
    x = np.array([1.0, 2.0])

    def loss():
        return np.sum(layer(W_GLOBAL @ x + b))

    ps = zp.params(W_GLOBAL, b, layer)
    gs = zp.gradient(loss, ps)
    assert set(map(id, gs.keys())) == {id(W_GLOBAL), id(b), id(layer.W), id(layer.b)}
    # check against the explicit gradient
    def explicit(W, bb, LW, Lb):
        return np.sum(np.tanh(LW @ (W @ x + bb) + Lb))

    gW, gb, gLW, gLb = zp.gradient(explicit, W_GLOBAL, b, layer.W, layer.b)
    for p, expected in [(W_GLOBAL, gW), (b, gb), (layer.W, gLW), (layer.b, gLb)]:
        np.testing.assert_allclose(gs[p], expected)


def test_grads_arithmetic_and_optimiser_step():
    W = np.array([1.0, -2.0])
    ps = zp.params(W)
    gs = zp.gradient(lambda: np.sum(W ** 2), ps)
    np.testing.assert_allclose((gs + gs)[W], 4 * W)
    np.testing.assert_allclose((0.5 * gs)[W], W)
    for p in ps:
        p -= 0.25 * gs[p]
    np.testing.assert_allclose(W, [0.5, -1.0])
    assert list(gs.items())[0][0] is W


def test_unused_parameter_is_none_and_unknown_key_errors():
    W, V = np.ones(2), np.ones(3)
    gs = zp.gradient(lambda: W.sum(), zp.params(W, V))
    assert gs[V] is None
    with pytest.raises(KeyError):
        gs[np.ones(2)]


def test_highly_nested_parameter_list():
    theta = [np.array([1.0]), [np.array([2.0]), {"c": np.array([3.0])}]]

    def K():
        a, (b, d) = theta[0], theta[1]
        return np.sum(a * b * d["c"])

    gs = zp.gradient(K, zp.params(theta))
    np.testing.assert_allclose(gs[theta[0]], [6.0])
    np.testing.assert_allclose(gs[theta[1][0]], [3.0])
    np.testing.assert_allclose(gs[theta[1][1]["c"]], [2.0])


def test_withgradient_selects_arguments_like_gradient():
    res = zp.withgradient(lambda x, y: x * y, 2.0, 5.0, argnums=1)
    assert res == (10.0, (2.0,))


def test_argnums_out_of_range_is_refused_and_negative_counts_from_the_end():
    def f(x, y):
        return x * y ** 2

    with pytest.raises(ValueError, match=r"argnums=5 is out of range: .*f was given 2 positional"):
        zp.gradient(f, 2.0, 3.0, argnums=5)
    with pytest.raises(ValueError, match=r"argnums=\(0, -3\) is out of range"):
        zp.gradient(f, 2.0, 3.0, argnums=(0, -3))
    assert zp.gradient(f, 2.0, 3.0, argnums=-1) == (pytest.approx(fd(lambda y: f(2.0, y), 3.0)),)
    assert zp.gradient(f, 2.0, 3.0, argnums=(-2, 1)) == (9.0, 12.0)


@pytest.mark.parametrize("name, f, x", [  # one family by default, every one with --exhaustive (CI's budget)
    pytest.param(*family, marks=() if family[0] == "operators" else pytest.mark.exhaustive)
    for family in FAMILIES
], ids=[n for n, _, _ in FAMILIES])
def test_nested_reverse_fast_path_agrees_with_checking_mode(name, f, x):
    """Reverse over reverse takes the nested fast path only without checking mode (the suite's
    default is on): the Hessian and a third-order derivative must be the checked ones, bit for
    bit, and the Hessian must match finite differences of the gradient."""

    def loss(u):
        return np.sum(np.abs(f(u)) ** 2)

    def derivatives(u):
        hess = zp.jacobian(lambda w: zp.gradient(loss, w)[0], u, mode="reverse")[0]
        third = zp.gradient(lambda w: np.sum(zp.gradient(
            lambda v: np.sum(zp.gradient(loss, v)[0] ** 2), w)[0]), u)[0]
        return hess, third

    checked = derivatives(x)
    with rc.checking(False):
        fast = derivatives(x)
    for got, expected in zip(fast, checked, strict=True):
        np.testing.assert_array_equal(got, expected)
    n, h = int(np.size(x)), 1e-6
    flat = np.ravel(np.asarray(x, dtype=float))
    columns = []
    for i in range(n):
        step = np.zeros(n)
        step[i] = h
        ends = [np.ravel(zp.gradient(loss, np.reshape(flat + s, np.shape(x)) if np.ndim(x)
                                     else float(flat[0] + s[0]))[0]) for s in (step, -step)]
        columns.append((ends[0] - ends[1]) / (2 * h))
    np.testing.assert_allclose(np.reshape(checked[0], (n, n)), np.stack(columns, axis=1),
                               rtol=1e-5, atol=1e-5)


# -- Zygote's habits with implicit parameters: Params and Grads as Python methods -----------------
RNG = np.random.default_rng(29)
W_HABIT = RNG.standard_normal((3, 2))
B_HABIT = RNG.standard_normal(3)
X_HABIT = RNG.standard_normal(2)


def _habit_loss():
    return np.sum(np.tanh(W_HABIT @ X_HABIT + B_HABIT) ** 2)


def _fd_of_param(loss, p):
    """Finite differences of ``loss()`` in the entries of the array ``p`` (perturbed in place)."""
    def at(value):
        saved = p.copy()
        p[...] = value
        try:
            return loss()
        finally:
            p[...] = saved

    return fd(at, p.copy())


@pytest.mark.parametrize("scale", [2.0, -0.5, 3])
def test_grads_arithmetic_matches_the_arithmetic_of_their_arrays(scale):
    ps = zp.params(W_HABIT, B_HABIT)
    gs = zp.gradient(_habit_loss, ps)
    other = zp.gradient(lambda: np.sum(W_HABIT ** 3) + np.sum(B_HABIT), ps)
    for p in (W_HABIT, B_HABIT):
        np.testing.assert_allclose(gs[p], _fd_of_param(_habit_loss, p), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose((gs - other)[p], gs[p] - other[p])
        np.testing.assert_allclose((gs + other)[p], gs[p] + other[p])
        np.testing.assert_allclose((gs * scale)[p], gs[p] * scale)
        np.testing.assert_allclose((scale * gs)[p], scale * gs[p])
        np.testing.assert_allclose((gs / scale)[p], gs[p] / scale)
        np.testing.assert_allclose((-gs)[p], -gs[p])
        np.testing.assert_allclose((gs * other)[p], gs[p] * other[p])
        np.testing.assert_allclose(gs.map(np.abs)[p], np.abs(gs[p]))


def test_grads_arithmetic_reads_a_missing_gradient_as_zero_and_scalars_keep_it_missing():
    W, unused = np.array([1.0, 2.0]), np.array([5.0])
    gs = zp.gradient(lambda: np.sum(W ** 2), zp.params(W, unused))
    assert gs[unused] is None and (gs * 2)[unused] is None and gs.map(np.abs)[unused] is None
    only_unused = zp.gradient(lambda: np.sum(unused * 3.0), zp.params(unused))
    both = gs - only_unused  # parameters of either side, None as zero
    np.testing.assert_allclose(both[W], [2.0, 4.0])
    np.testing.assert_allclose(both[unused], [-3.0])
    assert (gs * only_unused)[W] is None
    with pytest.raises(TypeError):
        gs + 1.0  # noqa: B018  (a number is not a set of gradients)


def test_grads_merge_accumulates_in_place_like_zygote_merge():
    W, V = np.array([1.0, -1.0]), np.array([2.0])
    ps_w = zp.params(W)
    total = zp.gradient(lambda: np.sum(W * 3.0), ps_w)
    again = zp.gradient(lambda: np.sum(W * V), zp.params(W, V))
    third = zp.gradient(lambda: np.sum(V ** 2), zp.params(V))
    assert total.merge(again, third) is total
    np.testing.assert_allclose(total[W], [5.0, 5.0])
    np.testing.assert_allclose(total[V], np.sum(W) + 2 * V)
    assert len(ps_w) == 1, "merge must not change the user's Params"
    np.testing.assert_allclose(again[W], [2.0, 2.0])  # the merged-in Grads are left alone


def test_grads_and_params_copy_to_and_from_flat_vectors():
    W, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5])
    ps = zp.params(W, b)
    gs = zp.gradient(lambda: np.sum(W ** 2) + float(b[0]) * 0.0, ps)
    flat = gs.copy_to()
    np.testing.assert_allclose(flat, np.concatenate([2 * W.ravel(), [0.0]]))
    out = np.full(5, 7.0)
    assert gs.copy_to(out) is out and np.array_equal(out, flat)
    np.testing.assert_allclose(ps.copy_to(), [1.0, 2.0, 3.0, 4.0, 0.5])
    ps.copy_from(np.arange(5.0))
    np.testing.assert_allclose(W, [[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(b, [4.0])
    with pytest.raises(ValueError, match="length 5"):
        ps.copy_from(np.zeros(4))
    with pytest.raises(ValueError, match="length 5"):
        gs.copy_to(np.zeros((5, 1)))


def test_params_add_update_union_discard_by_identity():
    W, V, twin = np.ones(2), np.zeros(3), np.ones(2)  # twin equals W but is another array
    ps = zp.params(W)
    ps.add(W)
    ps.add(twin)
    assert len(ps) == 2 and twin in ps
    ps.update([V], {"again": W})
    assert [id(p) for p in ps] == [id(W), id(twin), id(V)]
    bigger = ps.union(np.ones(1))
    assert len(bigger) == 4 and len(ps) == 3
    ps.discard(twin)
    ps.discard(np.ones(2))  # equal to W, not W: ignored
    assert [id(p) for p in ps] == [id(W), id(V)]
    gs = zp.gradient(lambda: np.sum(W * twin) + np.sum(V), ps)
    assert set(map(id, gs)) == {id(W), id(V)}
    np.testing.assert_allclose(gs[W], twin)


def test_pullback_with_params_gives_grads_for_any_cotangent():
    def hidden():
        return np.tanh(W_HABIT @ X_HABIT + B_HABIT)

    ps = zp.params(W_HABIT, B_HABIT)
    y, back = zp.pullback(hidden, ps)
    np.testing.assert_allclose(y, hidden())
    for ybar in (np.ones(3), np.array([1.0, -2.0, 0.5])):
        gs = back(ybar)
        assert isinstance(gs, zp.Grads)
        for p in ps:
            np.testing.assert_allclose(gs[p], _fd_of_param(lambda: float(hidden() @ ybar), p),
                                       rtol=1e-5, atol=1e-8)
    y, back, aux = zp.pullback(lambda: (np.sum(W_HABIT), "aux"), ps, has_aux=True)
    assert aux == "aux" and back(1.0)[B_HABIT] is None


@pytest.mark.parametrize("bad", ["2.0", b"2.0"])
def test_a_rule_cotangent_that_is_text_is_refused_by_name(bad):
    def doubled(a):
        return a * 2.0

    @rc.rrule.register(doubled)
    def _(a):
        return doubled(a), lambda ybar: (rc.NoTangent(), bad)

    with rc.checking(False):
        for x in (1.0, np.ones(2)):
            named = f"of the rrule for .*doubled .*cotangent of type {type(bad).__name__}"
            with pytest.raises(rc.RuleError, match=named):
                zp.gradient(lambda v: np.sum(doubled(v)), x)


def _object_array_literal(x: Any) -> Any:
    return np.array([x, 1.0], dtype=object)[0] * 2.0


def _object_array_written(x: Any) -> Any:
    a = np.empty(2, dtype=object)
    a[0] = x
    return a[0] * 2.0


def _object_array_mixed(x: Any) -> Any:
    return np.sum(np.asarray([np.sin(x), "label"], dtype=object)[:1])


def _object_array_of_a_list(x: Any) -> Any:
    return np.array([[x, None]])[0, 0] * 2.0  # NumPy infers dtype object


@pytest.mark.parametrize("f", [_object_array_literal, _object_array_written, _object_array_mixed,
                               _object_array_of_a_list])
@pytest.mark.parametrize("mode", ["gradient", "jvp", "hessian"])
def test_an_object_array_of_traced_values_is_refused_not_taken_as_a_constant(f: Any, mode: str) -> None:
    """Its entries are Python objects: NumPy carries no derivative through them. Before, the
    gradient came out as None and the jvp as 0.0 (silently wrong); a numeric array of the same
    values differentiates."""
    run = {"gradient": lambda: zp.gradient(f, 0.3), "jvp": lambda: zp.jvp(f, (0.3,), (1.0,)),
           "hessian": lambda: zp.hessian(f, 0.3)}[mode]
    with pytest.raises(zp.UntraceableError, match="array of dtype object from traced values"):
        run()
    assert zp.gradient(lambda x: np.array([x, 1.0], dtype=float)[0] * 2.0, 0.3) == (2.0,)


# -- scalar code on a tape of numbers (a rule's scalar form at real scalars) -----------------------
# (outside rulescore's checking mode, which the suite runs in and which runs every rule itself)


@pytest.fixture
def numbers_tape():
    with rc.checking(False):
        yield


def _operators_and_constants(x):
    y = 3 - x * 2 + 1.5 / x - (-x) + np.float64(0.5) * x - x / 4 + 7 * x
    return y * y


def _reused(x):
    s = 0.0
    for k in range(50):
        s = s + math.sin(x * k) / (k + 1)
    return s


@pytest.mark.parametrize("f, x", [
    (_operators_and_constants, 1.3), (_operators_and_constants, np.float64(1.3)), (_reused, 0.3),
    (lambda x: math.exp(x) * x / (1 + x) - np.cos(x), 0.7), (lambda x: np.sin(x) * x + 0.1, 0.5),
    (lambda x: x * True + x, 2.0)])
def test_scalar_code_gradients_match_finite_differences_with_the_argument_type(f, x, numbers_tape):
    (g,) = zp.gradient(f, x)
    assert g == pytest.approx(fd(f, x), rel=1e-6) and type(g) is type(x)


@pytest.mark.parametrize("f, error", [(lambda x: x / (x - x), ZeroDivisionError),
                                      (lambda x: math.sqrt(-x), ValueError),
                                      (lambda x: x * 10 ** 400, OverflowError)])
def test_scalar_code_raises_as_the_rule_does(f, error, numbers_tape):
    with pytest.raises(error):
        zp.gradient(f, 1.0)


def test_a_rule_downstream_of_scalar_code_gets_a_python_float_cotangent(numbers_tape):
    seen = []

    def scaled(v):
        return 2.0 * v

    @rc.rrule.register(scaled)
    def scaled_rrule(v):
        def scaled_pullback(ybar):
            seen.append(type(ybar))
            return rc.NoTangent(), 2.0 * ybar
        return scaled(v), scaled_pullback

    (g,) = zp.gradient(lambda x: scaled(x * x) + np.sin(x) * np.float64(2.0), 0.5)
    assert g == pytest.approx(2.0 + 2 * math.cos(0.5)) and seen == [float]


def test_a_pullback_of_scalar_code_takes_any_cotangent_and_nests(numbers_tape):
    _, back = zp.pullback(lambda x: math.sin(x) * x, 0.3)
    d = math.cos(0.3) * 0.3 + math.sin(0.3)
    assert back(2.0)[0] == pytest.approx(2 * d)
    assert back(np.array(2.0))[0] == pytest.approx(2 * d) and back(1 + 2j)[0] == pytest.approx(d)
    assert zp.gradient(lambda t: back(t)[0] * t, 2.0)[0] == pytest.approx(4 * d)


def test_rules_defined_after_first_use_apply_to_scalar_code(numbers_tape):
    def cube(x):
        return x ** 3

    (before,) = zp.gradient(lambda x: cube(x) * 2.0, 1.5)
    rc.scalar_rule(cube, lambda x: 100.0)  # a deliberately different derivative: is it used?
    (after,) = zp.gradient(lambda x: cube(x) * 2.0, 1.5)
    assert before == pytest.approx(13.5) and after == 200.0

    def halve(x):
        return x / 2.0

    f = lambda x: halve(x) * 3.0  # noqa: E731
    assert zp.gradient(f, 1.0) == (1.5,)
    zp.adjoint(halve)(lambda x: (halve(x), lambda d: (d * 10.0,)))
    assert zp.gradient(f, 1.0) == (30.0,)

    def double(x):  # a rule with a scalar form at first use, then another rule, then an adjoint
        return 2.0 * x

    g = lambda x: double(x) * 3.0  # noqa: E731
    rc.scalar_rule(double, lambda x: 2.0)
    assert zp.gradient(g, 1.0) == (6.0,)
    rc.scalar_rule(double, lambda x: 7.0)
    assert zp.gradient(g, 1.0) == (21.0,)
    zp.adjoint(double)(lambda x: (double(x), lambda d: (d * 100.0,)))
    assert zp.gradient(g, 1.0) == (300.0,)


def test_checking_mode_runs_the_rules_of_scalar_code():
    """rulescore's checking mode checks every rule it runs: scalar code then runs its rrules (a
    wrong scalar form would go unseen by the checks)."""
    ran = []

    def triple(x):
        return 3.0 * x

    def triple_rrule(x):
        ran.append(x)
        return triple(x), lambda ybar: (rc.NoTangent(), 3.0 * ybar)

    rc.register_rules(rc.RulePair(triple, triple_rrule, scalar=lambda x: (3.0 * x, (3.0,))))
    with rc.checking(False):
        assert zp.gradient(lambda x: triple(x) * x, 2.0) == (12.0,) and ran == []  # the numbers
    with rc.checking(True):
        assert zp.gradient(lambda x: triple(x) * x, 2.0) == (12.0,)
    assert ran == [2.0]


@pytest.mark.parametrize("z", [np.float64(-0.2), -0.2])
def test_scalar_code_cotangents_keep_their_values_type(z, numbers_tape):
    """A cotangent of a NumPy float64 stays a float64: a Python float times a ``np.float16`` would
    be rounded to a float16 (NumPy's weak Python scalars), as the rules' projections never do."""
    y16 = np.float16(0.1031)

    def f(z):
        return z / (1.5 + math.tanh(z * y16)) + math.tanh(z * y16) * np.float64(2.0)

    (g,) = zp.gradient(f, z)
    with rc.checking(True):  # the rrules
        (g_rules,) = zp.gradient(f, z)
    assert g == pytest.approx(g_rules, rel=1e-13) and type(g) is type(z)
