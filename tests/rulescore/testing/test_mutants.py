"""The harness must catch deliberately broken rules, and pass the correct ones.

Every function here is local to this module: rules are registered on these functions only,
never on library callables. Each function has a correct rule (which must pass, over hypothesis
draws) and mutants (each must raise AssertionError or rc.RuleError). Mutants are checked both
with rulescore's checking mode on and off, so the harness catches them on its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S

# ---------------------------------------------------------------------------------------------
# the functions under test (local to this module)


def sin_(x: Any) -> Any:
    return np.sin(x)


def matmul_(a: Any, b: Any) -> Any:
    return a @ b


def add_(x: Any, y: Any) -> Any:
    return x + y


def take_(x: Any, i: int) -> Any:
    return x[i]


def scaled_(x: Any, negate: bool) -> Any:
    return -x if negate else x


def square_(z: Any) -> Any:
    return z * z


def sincos_(x: Any) -> Any:
    return np.sin(x), np.cos(x)


def softsum_(x: Any, *, axis: int | None = None) -> Any:
    return np.sum(np.exp(x), axis=axis)


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float


def area_(p: Point) -> float:
    return p.x * p.y


@dataclasses.dataclass(eq=False)
class Scale:
    """A callable object with differentiable state (hashable by identity: rules are registered
    on the instance)."""

    a: np.ndarray

    def __call__(self, x: Any) -> Any:
        return self.a * x


# ---------------------------------------------------------------------------------------------
# rules: each function's rrule and frule are built by a factory taking the mutation's name


def _zero(t: Any) -> bool:
    return rc.is_zero(rc.unthunk(t))


def sin_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any) -> Any:
        y = np.sin(x)

        def sin_pullback(ybar: Any) -> Any:
            if mutant == "mutate_input":
                x[...] = np.cos(x)
                return rc.NoTangent(), rc.project(x, ybar * x)
            if mutant == "mutate_ybar":
                ybar *= np.cos(x)
                return rc.NoTangent(), ybar
            sign = -1.0 if mutant == "sign" else 1.0
            xbar = ybar * np.cos(x) * sign
            if mutant == "dtype":
                return rc.NoTangent(), np.asarray(xbar, dtype=np.float64)
            if mutant == "complex_for_real":
                return rc.NoTangent(), np.asarray(xbar) + 0j
            if mutant == "count":
                return (rc.project(x, xbar),)
            if mutant == "fbar_zero":
                return rc.ZeroTangent(), rc.project(x, xbar)
            if mutant == "not_tuple":
                return [rc.NoTangent(), rc.project(x, xbar)]
            return rc.NoTangent(), rc.project(x, xbar)

        if mutant == "primal":
            y = y + 1e-3
        return y, sin_pullback

    def frule(tangents: Any, x: Any) -> Any:
        xdot = rc.unthunk(tangents[1])
        y = np.sin(x)
        if rc.is_zero(xdot):
            return y, rc.ZeroTangent()
        sign = -1.0 if mutant == "frule_sign" else 1.0
        ydot = rc.project(y, sign * np.cos(x) * xdot)
        if mutant == "frule_dtype":
            ydot = np.asarray(ydot, dtype=np.float64)
        if mutant == "frule_not_batch_safe" and not isinstance(xdot, (np.ndarray, float)):
            ydot = rc.project(y, np.cos(x))  # treats an unknown tangent type as "one unit step"
        return y, ydot

    return rrule, frule


def matmul_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(a: Any, b: Any) -> Any:
        def matmul_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
            if mutant == "transpose":
                return rc.NoTangent(), rc.project(a, ybar @ b), rc.project(b, a @ ybar)
            if mutant == "swap":
                return rc.NoTangent(), rc.project(a, a.T @ ybar), rc.project(b, ybar @ b.T)
            return rc.NoTangent(), rc.project(a, ybar @ b.conj().T), rc.project(b, a.conj().T @ ybar)

        return a @ b, matmul_pullback

    def frule(tangents: Any, a: Any, b: Any) -> Any:
        _, adot, bdot = (rc.unthunk(t) for t in tangents)
        ydot: Any = rc.ZeroTangent()
        if not rc.is_zero(adot):
            ydot = adot @ b
        if not rc.is_zero(bdot) and mutant != "frule_drop_b":
            ydot = rc.add(ydot, a @ bdot)
        return a @ b, ydot

    return rrule, frule


def _unbroadcast(x: Any, dx: Any) -> Any:
    return rc.project(x, np.sum(dx) if isinstance(x, float) else dx)


def add_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any, y: Any) -> Any:
        def add_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
            if mutant == "no_unbroadcast":
                return rc.NoTangent(), ybar, ybar
            return rc.NoTangent(), _unbroadcast(x, ybar), _unbroadcast(y, ybar)

        return x + y, add_pullback

    def frule(tangents: Any, x: Any, y: Any) -> Any:
        out = x + y
        ydot = rc.add(rc.unthunk(tangents[1]), rc.unthunk(tangents[2]))
        return out, (ydot if rc.is_zero(ydot) else rc.project(out, np.broadcast_to(ydot, np.shape(out))))

    return rrule, frule


def take_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any, i: int) -> Any:
        def take_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            ibar = rc.ZeroTangent() if mutant == "zero_for_index" else rc.NoTangent()
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent(), ibar
            xbar = np.zeros_like(x)
            xbar = xbar + (np.arange(x.shape[0]) == i)[(...,) + (None,) * (x.ndim - 1)] * ybar
            return rc.NoTangent(), rc.project(x, xbar), ibar

        return x[i], take_pullback

    def frule(tangents: Any, x: Any, i: int) -> Any:
        xdot = rc.unthunk(tangents[1])
        return x[i], (rc.ZeroTangent() if rc.is_zero(xdot) else xdot[i])

    return rrule, frule


def scaled_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any, negate: bool) -> Any:
        def scaled_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            flag = rc.ZeroTangent() if mutant == "zero_for_bool" else rc.NoTangent()
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent(), flag
            return rc.NoTangent(), rc.project(x, -ybar if negate else ybar), flag

        return scaled_(x, negate), scaled_pullback

    def frule(tangents: Any, x: Any, negate: bool) -> Any:
        xdot = rc.unthunk(tangents[1])
        return scaled_(x, negate), (xdot if rc.is_zero(xdot) else (-xdot if negate else xdot))

    return rrule, frule


def square_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(z: Any) -> Any:
        def square_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            d = 2 * z if mutant == "no_conj" else np.conj(2 * z)
            return rc.NoTangent(), rc.project(z, ybar * d)

        return z * z, square_pullback

    def frule(tangents: Any, z: Any) -> Any:
        zdot = rc.unthunk(tangents[1])
        return z * z, (rc.ZeroTangent() if rc.is_zero(zdot) else rc.project(z * z, 2 * z * zdot))

    return rrule, frule


def sincos_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any) -> Any:
        def sincos_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            s_bar, c_bar = rc.unthunk(ybar[0]), rc.unthunk(ybar[1])
            xbar: Any = rc.ZeroTangent()
            if not rc.is_zero(s_bar):
                xbar = s_bar * np.cos(x)
            if not rc.is_zero(c_bar) and mutant != "drop_second":
                xbar = rc.add(xbar, -c_bar * np.sin(x))
            return rc.NoTangent(), rc.project(x, xbar)

        return sincos_(x), sincos_pullback

    def frule(tangents: Any, x: Any) -> Any:
        xdot = rc.unthunk(tangents[1])
        y = sincos_(x)
        if rc.is_zero(xdot):
            return y, rc.ZeroTangent()
        return y, rc.Tangent[tuple](np.cos(x) * xdot, -np.sin(x) * xdot)

    return rrule, frule


def softsum_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(x: Any, *, axis: int | None = None) -> Any:
        y = softsum_(x, axis=axis)

        def softsum_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            b = ybar if axis is None or mutant == "no_expand_dims" else np.expand_dims(ybar, axis)
            return rc.NoTangent(), rc.project(x, b * np.exp(x))

        return y, softsum_pullback

    def frule(tangents: Any, x: Any, *, axis: int | None = None) -> Any:
        xdot = rc.unthunk(tangents[1])
        y = softsum_(x, axis=axis)
        if rc.is_zero(xdot):
            return y, rc.ZeroTangent()
        return y, rc.project(y, np.sum(np.exp(x) * xdot, axis=axis))

    return rrule, frule


def area_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    def rrule(p: Point) -> Any:
        def area_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            if mutant == "swap_fields":
                return rc.NoTangent(), rc.Tangent[Point](x=ybar * p.x, y=ybar * p.y)
            if mutant == "plain_dict":
                return rc.NoTangent(), {"x": ybar * p.y, "y": ybar * p.x}
            return rc.NoTangent(), rc.Tangent[Point](x=ybar * p.y, y=ybar * p.x)

        return area_(p), area_pullback

    def frule(tangents: Any, p: Point) -> Any:
        pdot = rc.unthunk(tangents[1])
        if rc.is_zero(pdot):
            return area_(p), rc.ZeroTangent()
        return area_(p), float(pdot.x * p.y + p.x * pdot.y)

    return rrule, frule


SCALE_F = Scale(np.array([1.0, 2.0]))


def scale_rules(mutant: str = "") -> tuple[Callable[..., Any], Callable[..., Any]]:
    s = SCALE_F

    def rrule(x: Any) -> Any:
        def scale_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.ZeroTangent(), rc.ZeroTangent()
            fbar: Any = rc.Tangent[Scale](a=rc.project(s.a, ybar * x))
            if mutant == "no_fbar":
                fbar = rc.NoTangent()
            return fbar, rc.project(x, ybar * s.a)

        return s(x), scale_pullback

    def frule(tangents: Any, x: Any) -> Any:
        sdot, xdot = (rc.unthunk(t) for t in tangents)
        ydot: Any = rc.ZeroTangent()
        if not rc.is_zero(sdot):
            ydot = sdot.a * x
        if not rc.is_zero(xdot):
            ydot = rc.add(ydot, s.a * xdot)
        return s(x), ydot

    return rrule, frule


# ---------------------------------------------------------------------------------------------
# registration


class Registered:
    """The rules of one local function, re-registered for each mutant."""

    def __init__(self, f: Any, factory: Callable[[str], tuple[Callable[..., Any], ...]]) -> None:
        self.f, self.factory = f, factory

    def use(self, mutant: str = "") -> None:
        rrule, frule = self.factory(mutant)
        rc.rrule.register(self.f)(rrule)
        rc.frule.register(self.f)(frule)


SIN = Registered(sin_, sin_rules)
MATMUL = Registered(matmul_, matmul_rules)
ADD = Registered(add_, add_rules)
TAKE = Registered(take_, take_rules)
SCALED = Registered(scaled_, scaled_rules)
SQUARE = Registered(square_, square_rules)
SINCOS = Registered(sincos_, sincos_rules)
SOFTSUM = Registered(softsum_, softsum_rules)
AREA = Registered(area_, area_rules)
SCALE = Registered(SCALE_F, scale_rules)

# ---------------------------------------------------------------------------------------------
# arguments

RNG = np.random.default_rng(1)
X3 = np.array([0.3, -1.2, 2.0])
X32 = X3.astype(np.float32)
A = np.array([[1.0, 2.0], [-0.5, 0.7]])
B = np.array([[0.3, -1.0], [2.0, 0.4]])
XB, YB = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([0.5, -1.0, 2.0])
Z = np.array([0.5 + 1.0j, -1.0 + 0.3j])


def run_rrule(f: Any, *args: Any, **kw: Any) -> None:
    rct.test_rrule(f, *args, **kw)


def run_frule(f: Any, *args: Any, **kw: Any) -> None:
    rct.test_frule(f, *args, **kw)


def run_consistency(f: Any, *args: Any, **kw: Any) -> None:
    rct.test_frule_rrule(f, *args, **kw)


# (rules, mutant, check, f, args, kwargs, what the report must say)
MUTANTS: list[tuple[Registered, str, Callable[..., None], Any, tuple[Any, ...], dict[str, Any], str]] = [
    (SIN, "sign", run_rrule, sin_, (X3,), {}, r"disagrees with finite differences"),
    (SIN, "sign", run_rrule, sin_, (0.7,), {}, r"disagrees with finite differences"),
    (SIN, "dtype", run_rrule, sin_, (X32,), {}, r"dtype float64"),
    (SIN, "complex_for_real", run_rrule, sin_, (X3,), {}, r"complex128"),
    (SIN, "count", run_rrule, sin_, (X3,), {}, r"returned 1 cotangents"),
    (SIN, "not_tuple", run_rrule, sin_, (X3,), {}, r"returned a list"),
    (SIN, "fbar_zero", run_rrule, sin_, (X3,), {}, r"f itself has no tangent space"),
    (SIN, "mutate_input", run_rrule, sin_, (X3,), {}, r"the pullback mutated argument 1"),
    (SIN, "mutate_ybar", run_rrule, sin_, (X3,), {}, r"mutated the output cotangent ybar"),
    (SIN, "primal", run_rrule, sin_, (X3,), {}, r"primal output differs"),
    (SIN, "frule_sign", run_frule, sin_, (X3,), {}, r"ydot disagrees with finite differences"),
    (SIN, "frule_sign", run_consistency, sin_, (X3,), {}, r"the frule and the rrule disagree"),
    (SIN, "frule_dtype", run_frule, sin_, (X32,), {}, r"dtype float64"),
    (SIN, "frule_not_batch_safe", run_frule, sin_, (X3,), {}, r"Batched tangents the frule disagrees"),
    (MATMUL, "transpose", run_rrule, matmul_, (A, B), {}, r"disagrees with finite differences"),
    (MATMUL, "swap", run_rrule, matmul_, (A, B), {}, r"disagrees with finite differences"),
    (MATMUL, "frule_drop_b", run_frule, matmul_, (A, B), {}, r"ydot disagrees with finite differences"),
    (MATMUL, "frule_drop_b", run_consistency, matmul_, (A, B), {}, r"the frule and the rrule disagree"),
    (ADD, "no_unbroadcast", run_rrule, add_, (XB, YB), {}, r"\(2, 3\)"),
    (ADD, "no_unbroadcast", run_rrule, add_, (XB, 1.5), {}, r"\(2, 3\)"),
    (TAKE, "zero_for_index", run_rrule, take_, (X3, 1), {}, r"must get NoTangent\(\)"),
    (TAKE, "zero_for_index", run_rrule, take_, (X3, rct.no_tangent(1)), {}, r"must get NoTangent\(\)"),
    (SCALED, "zero_for_bool", run_rrule, scaled_, (X3, True), {}, r"must get NoTangent\(\)"),
    (SQUARE, "no_conj", run_rrule, square_, (Z,), {}, r"disagrees with finite differences"),
    (SQUARE, "no_conj", run_rrule, square_, (0.5 - 0.25j,), {}, r"disagrees with finite differences"),
    (SINCOS, "drop_second", run_rrule, sincos_, (X3,), {}, r"disagrees with finite differences"),
    (SOFTSUM, "no_expand_dims", run_rrule, softsum_, (A,), {"axis": 1}, r"disagrees with finite differences"),
    (AREA, "swap_fields", run_rrule, area_, (Point(1.5, -0.5),), {}, r"disagrees with finite differences"),
    (AREA, "plain_dict", run_rrule, area_, (Point(1.5, -0.5),), {}, r"a dict where .* Tangent\[Point\]"),
    (SCALE, "no_fbar", run_rrule, SCALE_F, (np.array([0.5, -0.25]),), {}, r"cotangent of f itself disagrees"),
]


def _mutant_id(m: tuple[Any, ...]) -> str:
    rules, mutant, check, f, args, _, _ = m
    return f"{check.__name__[4:]}-{getattr(f, '__name__', type(f).__name__)}-{mutant}-{len(args)}args" \
        f"-{type(args[0]).__name__}"


@pytest.fixture(autouse=True)
def _correct_rules_afterwards() -> Any:
    yield
    for r in (SIN, MATMUL, ADD, TAKE, SCALED, SQUARE, SINCOS, SOFTSUM, AREA, SCALE):
        r.use("")


@pytest.mark.parametrize("checking", [True, False], ids=["checking-on", "checking-off"])
@pytest.mark.parametrize("m", MUTANTS, ids=[_mutant_id(m) for m in MUTANTS])
def test_mutant_is_caught(m: tuple[Any, ...], checking: bool) -> None:
    rules, mutant, check, f, args, kwargs, reason = m
    rules.use(mutant)
    fresh = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    with rc.checking(checking), pytest.raises((AssertionError, rc.RuleError), match=reason):
        check(f, *fresh, **kwargs)


def test_mutated_input_is_reported_as_such() -> None:
    SIN.use("mutate_input")
    with pytest.raises(AssertionError, match=r"the pullback mutated argument 1"):
        rct.test_rrule(sin_, X3.copy())


def test_wrong_count_is_reported_with_the_expected_count() -> None:
    SIN.use("count")
    with rc.checking(False), pytest.raises(AssertionError, match=r"returned 1 cotangents; expected 2"):
        rct.test_rrule(sin_, X3)


def test_index_with_zero_tangent_is_explained() -> None:
    TAKE.use("zero_for_index")
    with pytest.raises(AssertionError, match=r"(?s)argument 2 \(int\).*must get\s+NoTangent\(\)"):
        rct.test_rrule(take_, X3, 1)


def test_missing_unbroadcast_is_explained() -> None:
    ADD.use("no_unbroadcast")
    with rc.checking(False), pytest.raises(AssertionError,
                                           match=r"shape \(2, 3\) where the primal has shape \(3,\)"):
        rct.test_rrule(add_, XB, YB)


def test_sign_error_report_names_elements_and_hints() -> None:
    SIN.use("sign")
    with pytest.raises(AssertionError) as info:
        rct.test_rrule(sin_, X3)
    text = str(info.value)
    assert "argument 1 (ndarray[float64 (3,)])" in text
    assert "arg1[0]: expected" in text and "arg1[2]: expected" in text
    assert "hint: the cotangent has the wrong sign" in text
    assert "rule: rrule for" in text and "test_mutants.py" in text  # rc.rrule.explain
    assert "output cotangent ybar" in text


def test_transpose_hint() -> None:
    MATMUL.use("transpose")
    with pytest.raises(AssertionError, match="transpose"):
        rct.test_rrule(matmul_, A, B, output_tangent=np.eye(2))


def test_dtype_report() -> None:
    SIN.use("dtype")
    with rc.checking(False), pytest.raises(AssertionError,
                                           match="dtype float64 where the tangent space has dtype float32"):
        rct.test_rrule(sin_, X32)


# ---------------------------------------------------------------------------------------------
# the correct rules pass (over hypothesis draws)


@settings(max_examples=15)
@given(S.arrays(dtype=np.float64))
def test_correct_sin_float64(x: np.ndarray) -> None:
    rct.test_rrule(sin_, x)
    rct.test_frule(sin_, x)
    rct.test_frule_rrule(sin_, x)


@settings(max_examples=10)
@given(S.arrays(dtype=np.float32))
def test_correct_sin_float32(x: np.ndarray) -> None:
    rct.test_rrule(sin_, x)
    rct.test_frule(sin_, x)


def test_correct_rules_pass_by_check_rule() -> None:
    rct.check_rule(sin_, (S.scalars(),), max_examples=10)
    rct.check_rule(matmul_, (S.arrays(shape=(2, 3)), S.arrays(shape=(3, 2))), max_examples=10)
    complex_matrices = S.square_matrices(3, dtype=np.complex128)
    rct.check_rule(matmul_, (complex_matrices, complex_matrices), max_examples=5)
    rct.check_rule(add_, (S.arrays(max_dims=2), S.scalars()), max_examples=10)
    rct.check_rule(take_, (S.arrays(min_dims=1), 0), max_examples=10)
    rct.check_rule(take_, (S.arrays(min_dims=1), 0), nondiff=(1,), max_examples=5)
    rct.check_rule(scaled_, (S.arrays(), True), max_examples=5)
    rct.check_rule(scaled_, (S.arrays(), False), max_examples=5)
    rct.check_rule(square_, (S.arrays(dtype=np.complex128),), max_examples=10)
    rct.check_rule(square_, (S.scalars(dtype=complex),), max_examples=10)
    rct.check_rule(sincos_, (S.arrays(),), max_examples=10)
    rct.check_rule(softsum_, (S.arrays(shape=(2, 3)),), {"axis": 1}, max_examples=5)
    rct.check_rule(softsum_, (S.arrays(shape=(2, 3)),), max_examples=5)
    rct.check_rule(area_, (S.scalars().map(lambda v: Point(v, 2.0 - v)),), max_examples=5)
    rct.check_rule(SCALE_F, (S.arrays(shape=(2,)),), max_examples=5)


@given(S.broadcasting_arrays(2))
@settings(max_examples=15)
def test_correct_add_broadcasting(xs: tuple[np.ndarray, ...]) -> None:
    rct.test_rrule(add_, *xs)
    rct.test_frule(add_, *xs)


def test_check_rule_catches_a_mutant_through_hypothesis() -> None:
    SIN.use("sign")
    with pytest.raises(AssertionError, match="disagrees with finite differences"):
        rct.check_rule(sin_, (S.arrays(),), max_examples=5)


def test_check_rule_catches_wrong_unbroadcast_through_hypothesis() -> None:
    ADD.use("no_unbroadcast")
    with pytest.raises((AssertionError, rc.RuleError)):
        rct.check_rule(add_, (S.arrays(shape=(2, 3)), S.arrays(shape=(3,))), max_examples=5)


for _r in (SIN, MATMUL, ADD, TAKE, SCALED, SQUARE, SINCOS, SOFTSUM, AREA, SCALE):
    _r.use("")
