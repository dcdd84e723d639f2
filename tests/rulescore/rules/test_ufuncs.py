"""Rules for NumPy's ufuncs (rulescore/rules/ufuncs.py): the table of cases checked against finite
differences (shapes, broadcasting, float32, complex, Python scalars, empty arrays), plus
targeted tests (``where=``, ``out=``, ties in maximum/minimum, edge values, stability)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing.strategies as S
from rulescore.rules import ufuncs
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

N = 5  # hypothesis examples per case


def case(f: Any, args: tuple[Any, ...], name: str = "", kwargs: dict[str, Any] | None = None,
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N), **options)


AWAY0 = "away0"


def _inward(v: float, up: bool, dtype: Any) -> float:
    """``v`` rounded into the domain to a value the dtype represents exactly (for hypothesis)."""
    if np.dtype(dtype) not in (np.float32, np.complex64):
        return v
    w = np.float32(v)
    if (float(w) < v) if up else (float(w) > v):
        w = np.nextafter(w, np.float32(np.inf if up else -np.inf))
    return float(w)


def arr(dom: Any, shape: Any = None, dtype: Any = np.float64) -> st.SearchStrategy[Any]:
    """Arrays on a domain ``(lo, hi)`` or away from zero (``|x| >= 0.3``)."""
    if dom == AWAY0:
        return arr((0.3, 3.0), shape, dtype).flatmap(
            lambda a: S.arrays(shape=a.shape, dtype=np.int64, min_value=0, max_value=1).map(
                lambda s: (a * (2 * s - 1)).astype(a.dtype)))
    lo, hi = _inward(dom[0], True, dtype), _inward(dom[1], False, dtype)
    return S.arrays(shape=shape, dtype=dtype, min_value=lo, max_value=hi)


def scalar(dom: Any) -> st.SearchStrategy[float]:
    if dom == AWAY0:
        return st.one_of(S.scalars(0.3, 3.0), S.scalars(-3.0, -0.3))
    return S.scalars(dom[0], dom[1])


def quadrant1(shape: Any = (2, 3)) -> st.SearchStrategy[np.ndarray]:
    """Complex arrays with both parts in [0.3, 3]: away from zero and from every branch cut."""
    return S.arrays(shape=shape, dtype=np.complex128, min_value=0.3, max_value=3.0)


def complex_ok(uf: np.ufunc) -> bool:
    return any(t.split("->")[0] == "D" * uf.nin for t in uf.types)


R = (-3.0, 3.0)

#: ``(ufunc, real domain)`` for the differentiable unary ufuncs.
UNARY = [
    (np.sin, R), (np.cos, R), (np.tan, (-1.2, 1.2)), (np.arcsin, (-0.9, 0.9)), (np.arccos, (-0.9, 0.9)),
    (np.arctan, R), (np.sinh, R), (np.cosh, R), (np.tanh, R), (np.arcsinh, R), (np.arccosh, (1.2, 3.0)),
    (np.arctanh, (-0.9, 0.9)), (np.exp, R), (np.exp2, R), (np.expm1, R), (np.log, (0.1, 3.0)),
    (np.log2, (0.1, 3.0)), (np.log10, (0.1, 3.0)), (np.log1p, (-0.8, 3.0)), (np.sqrt, (0.1, 3.0)),
    (np.cbrt, AWAY0), (np.square, R), (np.reciprocal, AWAY0), (np.negative, R), (np.positive, R),
    (np.fabs, AWAY0), (np.absolute, AWAY0), (np.conjugate, R), (np.deg2rad, R), (np.radians, R),
    (np.rad2deg, R), (np.degrees, R),
]


def unary_cases(uf: np.ufunc, dom: Any) -> list[RuleCase]:
    out = [
        case(uf, (arr(dom),), "array"),
        case(uf, (arr(dom, (3, 4), np.float32),), "float32"),
        case(uf, (scalar(dom),), "float"),
        case(uf, (arr(dom, (0, 3)),), "empty"),
    ]
    if complex_ok(uf) or uf is np.absolute:
        out.append(case(uf, (quadrant1(),), "complex"))
    return out


#: ``(ufunc, domain of x, domain of y)`` for the differentiable binary ufuncs.
BINARY = [
    (np.add, R, R), (np.subtract, R, R), (np.multiply, R, R), (np.divide, R, AWAY0),
    (np.power, (0.5, 3.0), R), (np.float_power, (0.5, 3.0), R), (np.arctan2, R, (0.3, 3.0)),
    (np.hypot, AWAY0, R), (np.logaddexp, R, R), (np.logaddexp2, R, R), (np.copysign, AWAY0, AWAY0),
    (np.nextafter, R, R),
    (np.fmod, (2.3, 2.6), (0.97, 1.0)), (np.remainder, (2.3, 2.6), (0.97, 1.0)),
]


def binary_cases(uf: np.ufunc, dx: Any, dy: Any) -> list[RuleCase]:
    out = [
        case(uf, (arr(dx, (3, 4)), arr(dy, (3, 4))), "same-shape"),
        case(uf, (arr(dx, (3, 1)), arr(dy, (4,))), "broadcast"),
        case(uf, (scalar(dx), arr(dy, (2, 3))), "float-array"),
        case(uf, (scalar(dx), scalar(dy)), "floats"),
        case(uf, (arr(dx, ()), arr(dy, (3,))), "0d"),
        case(uf, (arr(dx, (3, 4), np.float32), arr(dy, (4,), np.float32)), "float32"),
        case(uf, (arr(dx, (0, 3)), arr(dy, (3,))), "empty"),
    ]
    if complex_ok(uf):
        out.append(case(uf, (quadrant1((2, 3)), quadrant1((3,))), "complex"))
        out.append(case(uf, (quadrant1((2, 3)), arr(dy, (2, 3))), "complex-real"))
    return out


def separated(shape: Any, key: str, dtype: Any = np.float64) -> tuple[Any, Any]:
    """Two arrays whose (real parts) differ by at least 0.5 everywhere, in random order."""
    base = st.shared(S.arrays(shape=shape, dtype=dtype), key=key)
    gaps = S.arrays(shape=shape, min_value=0.5, max_value=2.0)
    signs = S.arrays(shape=shape, dtype=np.int64, min_value=0, max_value=1)
    other = st.tuples(base, gaps, signs).map(lambda t: (t[0] + t[1] * (2 * t[2] - 1)).astype(t[0].dtype))
    return base, other


def extremum_cases(uf: np.ufunc) -> list[RuleCase]:
    name = uf.__name__
    low, high = S.arrays(shape=(3, 1), min_value=-3.0, max_value=-1.0), S.arrays(shape=(4,), min_value=1.0)
    return [
        case(uf, separated((3, 4), f"{name}-a"), "same-shape"),
        case(uf, separated((3,), f"{name}-b", np.float32), "float32"),
        case(uf, separated((2, 2), f"{name}-c", np.complex128), "complex"),
        case(uf, (low, high), "broadcast"),
        case(uf, (high, low), "broadcast-swapped"),
        case(uf, (S.scalars(-3.0, -1.0), S.scalars(1.0, 3.0)), "floats"),
    ]


I4 = S.arrays(shape=(4,), dtype=np.int64, min_value=0, max_value=9)
INT_PAIR = (I4, S.arrays(shape=(4,), dtype=np.int64, min_value=1, max_value=9))
A34 = S.arrays(shape=(3, 4))
A3 = S.arrays(shape=(3,))
A4 = S.arrays(shape=(4,))
C34 = S.arrays(shape=(3, 4), dtype=np.complex128)
C4 = S.arrays(shape=(4,), dtype=np.complex128)

NONDIFF = [
    case(uf, args, max_examples=2)
    for uf, args in [
        (np.floor, (A34,)), (np.ceil, (A34,)), (np.trunc, (A34,)), (np.rint, (A34,)),
        (np.floor_divide, (A34, arr(AWAY0, (4,)))), (np.heaviside, (A34, 0.5)), (np.signbit, (A34,)),
        (np.spacing, (A34,)), (np.equal, (A34, A4)), (np.not_equal, (A34, A4)),
        (np.less, (A34, A4)), (np.less_equal, (A34, A4)), (np.greater, (A34, A4)),
        (np.greater_equal, (A34, A4)), (np.logical_and, (A34, A4)), (np.logical_or, (A34, A4)),
        (np.logical_xor, (A34, A4)), (np.logical_not, (A34,)), (np.isnan, (A34,)), (np.isinf, (A34,)),
        (np.isfinite, (A34,)), (np.isnat, (np.array(["2020-01-01", "2021-06-30"], dtype="datetime64[D]"),)),
        (np.bitwise_and, INT_PAIR), (np.bitwise_or, INT_PAIR), (np.bitwise_xor, INT_PAIR),
        (np.invert, (I4,)), (np.left_shift, INT_PAIR), (np.right_shift, INT_PAIR), (np.gcd, INT_PAIR),
        (np.lcm, INT_PAIR),
    ]
]
if isinstance(getattr(np, "bitwise_count", None), np.ufunc):
    NONDIFF.append(case(np.bitwise_count, (I4,), max_examples=2))

GUFUNC_CASES = [
    case(np.matmul, (A34, S.arrays(shape=(4, 2))), "2d-2d"),
    case(np.matmul, (A4, A4), "1d-1d"),
    case(np.matmul, (A4, S.arrays(shape=(4, 3))), "1d-2d"),
    case(np.matmul, (A34, A4), "2d-1d"),
    case(np.matmul, (S.arrays(shape=(2, 1, 3, 4)), S.arrays(shape=(3, 4, 2))), "batch-broadcast"),
    case(np.matmul, (C34, S.arrays(shape=(4, 2), dtype=np.complex128)), "complex"),
    case(np.matmul, (S.arrays(shape=(3, 4), dtype=np.float32), S.arrays(shape=(4,), dtype=np.float32)),
         "float32"),
    case(np.matmul, ([[1.0, 2.0]], A34.map(lambda a: a[:2])), "list"),
    case(np.matmul, (S.arrays(shape=(0, 4)), S.arrays(shape=(4, 2))), "empty"),
]
if isinstance(getattr(np, "vecdot", None), np.ufunc):  # NumPy 2.0+
    GUFUNC_CASES += [
        case(np.vecdot, (A34, A4), "broadcast"),
        case(np.vecdot, (S.arrays(shape=(2, 3, 4)), A34), "batched"),
        case(np.vecdot, (C34, C4), "complex"),
        case(np.vecdot, (A4, A4), "1d"),
    ]
if isinstance(getattr(np, "matvec", None), np.ufunc):  # NumPy 2.2+
    GUFUNC_CASES += [
        case(np.matvec, (A34, A4), "2d-1d"),
        case(np.matvec, (S.arrays(shape=(2, 3, 4)), S.arrays(shape=(2, 4))), "batched"),
        case(np.matvec, (C34, C4), "complex"),
        case(np.vecmat, (A3, A34), "1d-2d"),
        case(np.vecmat, (S.arrays(shape=(2, 3)), S.arrays(shape=(2, 3, 4))), "batched"),
        case(np.vecmat, (S.arrays(shape=(3,), dtype=np.complex128), C34), "complex"),
    ]

OTHER_CASES = [
    case(np.power, (arr((0.5, 3.0), (3, 4)), 3), "int-exponent"),  # negative bases: plain tests
    case(np.power, (arr((0.5, 3.0), (3, 4)), np.array([0, 1, 2, 3])), "int-array-exponent"),
    case(np.power, (S.arrays(shape=(3,), dtype=np.int64, min_value=1, max_value=3), arr((0.5, 2.0), (3,))),
         "int-base"),
    case(np.float_power, (arr((0.5, 3.0), (3, 4), np.float32), 2.5), "float32-to-float64"),
    case(np.float_power, (arr((0.5, 3.0), (3, 4)), 2), "int-exponent"),
    case(np.ldexp, (A34, S.arrays(shape=(4,), dtype=np.int64, min_value=-3, max_value=3)), "array"),
    case(np.ldexp, (S.scalars(), 3), "float"),
    case(np.ldexp, (arr(R, (3,), np.float32), np.array([1, -1, 2])), "float32"),
    case(np.multiply, ([1.0, 2.0, 3.0], A3), "list"),
    case(np.divmod, (arr((2.3, 2.6), (3, 4)), arr((0.97, 1.0), (4,))), "broadcast"),
    case(np.divmod, (S.scalars(2.3, 2.6), S.scalars(0.97, 1.0)), "floats"),
    case(np.modf, (arr((2.3, 2.7), (3, 4)),), "positive"),
    case(np.modf, (arr((-1.7, -1.3), (3,), np.float32),), "negative-float32"),
    case(np.frexp, (arr((1.3, 1.7), (3, 4)),), "in-1-2"),
    case(np.frexp, (arr((-5.5, -4.5), (3,), np.float32),), "negative-float32"),
    case(np.real, (C34,), "complex"),
    case(np.real, (A34,), "real"),
    case(np.real, (S.scalars(dtype=complex),), "python-complex"),
    case(np.imag, (C34,), "complex"),
    case(np.imag, (A34,), "real"),
    case(np.imag, (S.scalars(dtype=complex),), "python-complex"),
    case(np.angle, (quadrant1((3, 4)),), "complex"),
    case(np.angle, (S.arrays(shape=(3,), dtype=np.complex128, min_value=0.3),), "right-half"),
    case(np.angle, (arr(AWAY0, (3,)),), "real"),
    case(np.angle, (quadrant1((3,)),), "deg", {"deg": True}),
    case(np.angle, (quadrant1((3,)), True), "deg-positional"),
    case(np.angle, (S.scalars(0.3, 3.0, complex),), "python-complex"),
    case(np.sign, (quadrant1((3, 4)),), "complex"),
    case(np.sign, (S.scalars(0.3, 3.0, complex),), "python-complex"),
    case(np.sign, (arr(AWAY0, (3, 4)),), "real"),
]

CASES = [
    *[c for uf, dom in UNARY for c in unary_cases(uf, dom)],
    *[c for uf, dx, dy in BINARY for c in binary_cases(uf, dx, dy)],
    *[c for uf in (np.maximum, np.minimum, np.fmax, np.fmin) for c in extremum_cases(uf)],
    *GUFUNC_CASES,
    *OTHER_CASES,
    *NONDIFF,
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


# ---------------------------------------------------------------------------------------------
# targeted tests


def _pullback(f: Any, *args: Any, ybar: Any = None, **kwargs: Any) -> tuple[Any, ...]:
    y, back = rc.rrule(f, *args, **kwargs)
    return back(np.ones(np.shape(y)) if ybar is None else ybar)  # type: ignore[no-any-return]


def test_every_ufunc_of_numpy_has_rules() -> None:
    all_ufuncs = {u for u in vars(np).values() if isinstance(u, np.ufunc)}
    missing = sorted(u.__name__ for u in all_ufuncs if not (rc.rrule.has_rules(u) and rc.frule.has_rules(u)))
    assert not missing
    for alias, target in [(np.abs, np.absolute), (np.conj, np.conjugate), (np.mod, np.remainder),
                          (np.true_divide, np.divide)]:
        assert alias is target


MASK = np.array([[True, False, True], [False, True, True]])


@pytest.mark.parametrize("uf, args", [
    (np.sin, (np.linspace(0.1, 1.0, 6).reshape(2, 3),)),
    (np.sqrt, (np.linspace(0.1, 1.0, 6).reshape(2, 3),)),
    (np.absolute, (np.linspace(-1.0, 1.0, 6).reshape(2, 3) + 1j,)),
    (np.multiply, (np.linspace(0.1, 1.0, 6).reshape(2, 3), np.array([1.0, 2.0, 3.0]))),
    (np.power, (np.linspace(0.1, 1.0, 6).reshape(2, 3), 2.5)),
    (np.maximum, (np.linspace(0.1, 1.0, 6).reshape(2, 3), 0.5)),
])
def test_where_gives_zero_gradient_where_false(uf: Any, args: tuple[Any, ...]) -> None:
    full = _pullback(uf, *args)
    masked = _pullback(uf, *args, where=MASK, out=None)  # out=None: NumPy's way to say "fresh output"
    for a, g, gm in zip(args, full[1:], masked[1:], strict=True):
        if np.ndim(a) == 2:
            assert np.array_equal(gm, np.where(MASK, g, 0))
    x = args[0]
    dots = (None, np.ones_like(x), *(np.zeros(np.shape(a)) for a in args[1:]))
    ydot_full = rc.frule(dots, uf, *args)[1]
    ydot_masked = rc.frule(dots, uf, *args, where=MASK, out=None)[1]
    assert np.array_equal(ydot_masked, np.where(MASK, ydot_full, 0))


def test_where_with_broadcasting_sums_only_where_true() -> None:
    _, dx, dy = _pullback(np.add, np.ones((2, 3)), np.ones(3), where=MASK, out=None)
    assert np.array_equal(dx, MASK * 1.0) and np.array_equal(dy, MASK.sum(axis=0) * 1.0)


@pytest.mark.parametrize("uf, args", [
    (np.sin, (np.ones(3),)), (np.add, (np.ones(3), 1.0)), (np.absolute, (np.ones(3),)),
    (np.matmul, (np.ones((2, 2)), np.ones(2))), (np.divmod, (np.ones(3), 2.0)),
])
def test_out_is_refused_with_a_clear_error(uf: Any, args: tuple[Any, ...]) -> None:
    out = np.empty(np.shape(uf(*args)[0] if uf.nout > 1 else uf(*args)))
    message = rf"numpy\.{uf.__name__}: out= is not supported under differentiation"
    with pytest.raises(TypeError, match=message):
        rc.rrule(uf, *args, out=out)
    with pytest.raises(TypeError, match=message):
        rc.frule((None, *(np.zeros(np.shape(a)) for a in args)), uf, *args, out=out)
    assert rc.rrule(np.sin, np.ones(2), out=None)[0].shape == (2,)  # out=None is harmless


def test_gufunc_axes_keywords_are_refused() -> None:
    with pytest.raises(TypeError, match="axes= is not supported"):
        rc.rrule(np.matmul, np.ones((2, 2)), np.ones((2, 2)), axes=[(0, 1), (0, 1), (0, 1)])


@pytest.mark.parametrize("uf", [np.maximum, np.minimum, np.fmax, np.fmin])
def test_ties_split_the_gradient_half_half(uf: Any) -> None:
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0, 0.0, 5.0])
    _, dx, dy = _pullback(uf, x, y)
    larger = uf in (np.maximum, np.fmax)
    assert np.array_equal(dx, [0.5, 1.0, 0.0] if larger else [0.5, 0.0, 1.0])
    assert np.array_equal(dx + dy, np.ones(3))
    _, dx, dy = _pullback(uf, 2.0, 2.0, ybar=1.0)
    assert dx == dy == 0.5


def test_nan_routing_in_maximum_and_fmax() -> None:
    x, y = np.array([np.nan, 1.0]), np.array([0.0, np.nan])
    _, dx, dy = _pullback(np.maximum, x, y)  # the NaN propagates: it gets the gradient
    assert np.array_equal(dx, [1.0, 0.0]) and np.array_equal(dy, [0.0, 1.0])
    _, dx, dy = _pullback(np.fmax, x, y)  # the number is chosen: it gets the gradient
    assert np.array_equal(dx, [0.0, 1.0]) and np.array_equal(dy, [1.0, 0.0])


def test_sqrt_at_zero_is_inf_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _pullback(np.sqrt, np.array([0.0, 4.0]))[1]
        assert np.array_equal(g, [np.inf, 0.25])
        assert _pullback(np.sqrt, 0.0, ybar=1.0)[1] == np.inf
        assert np.array_equal(rc.frule((None, np.ones(2)), np.sqrt, np.array([0.0, 4.0]))[1], [np.inf, 0.25])
        assert _pullback(np.cbrt, np.array([0.0]))[1][0] == np.inf
        assert _pullback(np.arcsin, np.array([1.0]))[1][0] == np.inf


def test_hypot_and_arctan2_at_the_origin() -> None:
    assert _pullback(np.hypot, 0.0, 0.0, ybar=1.0)[1:] == (0.0, 0.0)
    assert _pullback(np.arctan2, np.zeros(2), np.zeros(2))[1].tolist() == [0.0, 0.0]


def test_logaddexp_is_stable() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, dx, dy = _pullback(np.logaddexp, np.array([1000.0, 0.0, -1000.0]), np.array([1000.0, 800.0, 0.0]))
        assert np.allclose(dx, [0.5, 0.0, 0.0]) and np.allclose(dy, [0.5, 1.0, 1.0])
        _, dx, dy = _pullback(np.logaddexp2, np.array([1e6]), np.array([1e6 - 1]))
        assert dx == pytest.approx(2 / 3, rel=1e-12) and dy == pytest.approx(1 / 3, rel=1e-12)


def test_expm1_and_log1p_accuracy() -> None:
    assert _pullback(np.expm1, np.array([-30.0]))[1][0] == pytest.approx(np.exp(-30.0), rel=1e-14)
    assert _pullback(np.log1p, np.array([1e-18]))[1][0] == 1.0


def test_non_holomorphic_functions_follow_chainrules() -> None:
    z = np.array([3 + 4j, 0j])
    assert np.allclose(_pullback(np.absolute, z)[1], [0.6 + 0.8j, 0])
    assert np.allclose(_pullback(np.angle, np.array([1j]))[1], [-1.0 + 0j])  # d/dRe = -1 at z = i
    assert np.allclose(_pullback(np.real, z)[1], [1, 1]) and _pullback(np.real, z)[1].dtype == complex
    assert np.allclose(_pullback(np.imag, z)[1], [1j, 1j])
    assert isinstance(_pullback(np.imag, np.ones(2))[1], rc.ZeroTangent)
    assert np.allclose(_pullback(np.conjugate, z, ybar=np.array([1j, 1.0]))[1], [-1j, 1.0])
    assert np.allclose(_pullback(np.sin, np.array([1j]))[1], np.conj(np.cos(1j)))
    # sign(z) = z/|z| moves only along the circle: at z = 1, a cotangent i pulls back to i, 1 to 0
    assert np.allclose(_pullback(np.sign, np.array([1 + 0j, 2 + 0j]), ybar=np.array([1j, 1.0]))[1], [1j, 0])
    assert isinstance(_pullback(np.sign, np.array([-2.0, 3.0]))[1], rc.ZeroTangent)


def test_multi_output_cotangents() -> None:
    (q, r), back = rc.rrule(np.divmod, np.array([7.5]), 2.0)
    assert back(rc.Tangent[tuple](np.ones(1), np.ones(1))) == (rc.NoTangent(), np.ones(1), -3.0)
    frac, back = rc.rrule(np.modf, np.array([2.5]))
    assert np.array_equal(back((np.ones(1), rc.ZeroTangent()))[1], [1.0])
    (m, e), back = rc.rrule(np.frexp, np.array([6.0]))
    assert np.array_equal(back(rc.Tangent[tuple](np.ones(1), rc.ZeroTangent()))[1], [0.125])


def test_int_inputs_get_float_cotangents_and_bools_none() -> None:
    assert _pullback(np.sin, np.arange(3))[1].dtype == np.float64
    assert isinstance(_pullback(np.add, np.array([True]), np.ones(1))[1], rc.NoTangent)


def test_check_kwargs() -> None:
    assert ufuncs.check_kwargs(np.sin, {"where": True}) is None
    assert ufuncs.check_kwargs(np.sin, {"where": MASK}) is MASK
