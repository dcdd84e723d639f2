"""The harness itself: finite differences, structures, strategies, engines, reports, plugin."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
from rulescore.testing import strategies as S
from rulescore.testing._vec import build_node

# ---------------------------------------------------------------------------------------------
# finite differences


@pytest.mark.parametrize(
    ("g", "x", "dg"),
    [
        (np.exp, 0.3, np.exp),
        (np.log, 0.02, lambda x: 1 / x),              # the first steps leave the domain
        (np.tan, 1.5, lambda x: 1 / np.cos(x) ** 2),  # near a pole
        (np.sqrt, 1e-3, lambda x: 0.5 / np.sqrt(x)),
        (lambda x: x ** 7, 2.5, lambda x: 7 * x ** 6),
        (lambda x: math.log(x), 0.01, lambda x: 1 / x),  # raises ValueError outside the domain
    ],
    ids=["exp", "log-near-0", "tan-near-pole", "sqrt-near-0", "x7", "math.log"],
)
def test_finite_differences_are_accurate(g: Any, x: float, dg: Any) -> None:
    d, err = rct.FiniteDifferences().derivative(lambda t: np.array([g(x + t)]), scale=abs(x))
    assert abs(d[0] - dg(x)) <= 1e-8 * abs(dg(x)), (d[0], dg(x))
    assert err <= 1e-6 * abs(dg(x))


def test_finite_differences_report_a_function_that_is_nowhere_finite() -> None:
    with pytest.raises(rct.FiniteDifferenceError, match="not finite"):
        rct.FiniteDifferences().derivative(lambda t: np.array([np.nan]))


@dataclasses.dataclass
class Particle:
    pos: np.ndarray
    mass: float
    name: str


class Pair(NamedTuple):
    a: Any
    b: Any


def energy(p: Particle, extra: dict[str, Any], pair: Pair) -> Any:
    return 0.5 * p.mass * np.sum(p.pos ** 2) + extra["k"] * pair.a * pair.b.real + np.abs(pair.b) ** 2


def test_fd_vjp_over_structures() -> None:
    p = Particle(np.array([1.0, -2.0]), 3.0, "e")
    extra = {"k": 0.5, "label": "x"}
    pair = Pair(2.0, 1.0 + 2.0j)
    pbar, ebar, pairbar = rct.fd_vjp(energy, (p, extra, pair), 1.0)
    assert isinstance(pbar, rc.Tangent[Particle]) and pbar.name == rc.NoTangent()
    np.testing.assert_allclose(pbar.pos, p.mass * p.pos, rtol=1e-9)
    assert pbar.mass == pytest.approx(0.5 * 5.0, rel=1e-9)
    assert isinstance(ebar, rc.Tangent[dict]) and ebar["label"] == rc.NoTangent()
    assert ebar["k"] == pytest.approx(2.0, rel=1e-9)
    assert isinstance(pairbar, rc.Tangent[Pair])
    assert pairbar.a == pytest.approx(0.5, rel=1e-9)
    # gradient convention for a real function of complex b: df/dRe + i df/dIm
    assert pairbar.b == pytest.approx(complex(0.5 * 2.0 + 2.0, 2 * 2.0), rel=1e-9)


def test_fd_jvp_over_structures_and_complex() -> None:
    z = np.array([0.5 + 1.0j, -1.0 + 0.25j])
    zdot = np.array([1.0 - 0.5j, 0.3j])
    np.testing.assert_allclose(rct.fd_jvp(np.exp, (z,), (zdot,)), np.exp(z) * zdot, rtol=1e-9)
    out = rct.fd_jvp(lambda t: (t[0] * t[1], {"s": t[0]}), ((2.0, 3.0),), (rc.Tangent[tuple](1.0, 0.0),))
    assert isinstance(out, rc.Tangent[tuple])
    assert out[0] == pytest.approx(3.0) and out[1]["s"] == pytest.approx(1.0)


def test_fd_skips_marked_arguments() -> None:
    xbar, nbar = rct.fd_vjp(lambda x, n: x[n] * 2.0, (np.ones(3), rct.no_tangent(1)), 1.0)
    np.testing.assert_allclose(xbar, [0.0, 2.0, 0.0], atol=1e-9)
    assert nbar == rc.NoTangent()


# ---------------------------------------------------------------------------------------------
# structures: the real-vector view is faithful


@settings(max_examples=30)
@given(S.nested(), st.integers(0, 2 ** 32 - 1))
def test_tangents_round_trip_through_vectors(x: Any, seed: int) -> None:
    node = build_node(x)
    v = np.random.default_rng(seed).standard_normal(node.n)
    t = node.tangent(v)
    np.testing.assert_array_equal(node.vec(t), v.astype(np.float64))
    assert rct.tangent_space_problem(x, t) is None
    np.testing.assert_array_equal(node.values(node.perturb(np.zeros(node.n))), node.values(x))


@settings(max_examples=20)
@given(S.nested().flatmap(lambda x: st.tuples(st.just(x), S.tangents_for(x))))
def test_tangents_for_draws_fixed_points_of_project(xt: tuple[Any, Any]) -> None:
    x, t = xt
    assert rct.tangent_space_problem(x, t) is None
    assert rc.ProjectTo(x)(t) == t


def test_labels_name_every_coordinate() -> None:
    node = build_node({"w": np.zeros((2, 1), np.complex64), "p": Pair(1.0, "s")})
    assert node.labels("x") == ["x['w'][0, 0].real", "x['w'][0, 0].imag", "x['w'][1, 0].real",
                                "x['w'][1, 0].imag", "x['p'].a"]


# ---------------------------------------------------------------------------------------------
# strategies


@settings(max_examples=25)
@given(S.arrays(dtype=np.complex64, min_value=-2.0, max_value=1.0))
def test_complex_arrays_draw_both_parts_in_range(z: np.ndarray) -> None:
    assert z.dtype == np.complex64 and 0 <= z.ndim <= 3 and all(1 <= n <= 4 for n in z.shape)
    assert np.all((z.real >= -2.0) & (z.real <= 1.0) & (z.imag >= -2.0) & (z.imag <= 1.0))


@settings(max_examples=10)
@given(S.arrays(shape=(2, 3), dtype=np.int32), S.scalars(dtype=np.float32), S.scalars(dtype=int))
def test_other_dtypes(a: np.ndarray, s: Any, i: int) -> None:
    assert a.shape == (2, 3) and a.dtype == np.int32 and np.all(np.abs(a) <= 3)
    assert isinstance(s, np.float32) and isinstance(i, int)


@settings(max_examples=15)
@given(S.broadcasting_arrays(3, dtype=np.float32))
def test_broadcasting_arrays(xs: tuple[np.ndarray, ...]) -> None:
    assert len(xs) == 3 and len({x.shape for x in xs}) > 1 and all(x.dtype == np.float32 for x in xs)
    np.broadcast_shapes(*(x.shape for x in xs))


@settings(max_examples=15)
@given(S.well_conditioned_matrices(dtype=np.complex128), S.spd_matrices(3, dtype=np.complex128),
       S.symmetric_matrices(), S.hermitian_matrices(3, min_eigengap=0.3))
def test_matrices(w: np.ndarray, p: np.ndarray, s: np.ndarray, h: np.ndarray) -> None:
    assert w.dtype == np.complex128 and np.linalg.cond(w) < 10
    assert p.shape == (3, 3) and np.allclose(p, p.conj().T) and np.linalg.eigvalsh(p).min() > 0.99
    assert np.array_equal(s, s.T)
    assert np.allclose(h, h.conj().T) and np.diff(np.linalg.eigvalsh(h)).min() > 0.29


# ---------------------------------------------------------------------------------------------
# the checks on correct rules of many kinds


def test_scalar_real_and_complex() -> None:
    rct.test_scalar(math.sin, 0.5)
    rct.test_scalar(math.exp, -1.25)


def csquare(z: Any) -> Any:
    return z * z


rc.scalar_rule(csquare, lambda z: 2 * z)


def test_scalar_complex_holomorphic() -> None:
    rct.test_scalar(csquare, 0.5 - 1.5j)
    rct.test_scalar(csquare, 0.75)


def test_non_differentiable_rules_need_notangent_only() -> None:
    rct.test_rrule(math.floor, 2.0)  # even at a jump: declared non-differentiable, no FD
    rct.test_frule(math.floor, 2.0)


def power(x: Any, n: int) -> Any:
    return x ** n


@rc.rrule.register(power)
def _power_rrule(x: Any, n: int) -> Any:
    def power_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        if rc.is_zero(ybar):
            return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
        return (rc.NoTangent(), rc.project(x, ybar * n * x ** (n - 1)),
                rc.project(n, np.sum(ybar * x ** n * np.log(x))))

    return x ** n, power_pullback


def test_an_integer_with_a_real_cotangent_is_checked_as_a_real() -> None:
    rct.test_rrule(power, np.array([0.5, 2.0]), 3)
    rct.test_rrule(power, 1.5, 2)


def bad_power(x: Any, n: int) -> Any:
    return x ** n


@rc.rrule.register(bad_power)
def _bad_power_rrule(x: Any, n: int) -> Any:
    def bad_power_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        return rc.NoTangent(), rc.project(x, ybar * n * x ** (n - 1)), rc.project(n, 0.0 * ybar)

    return x ** n, bad_power_pullback


def test_an_integer_with_a_wrong_real_cotangent_is_caught() -> None:
    with pytest.raises(AssertionError, match=r"argument 2 \(int\) disagrees"):
        rct.test_rrule(bad_power, 1.5, 2)


class Meter:
    def __init__(self, scale: np.ndarray) -> None:
        self.scale = scale

    def read(self, x: Any) -> Any:
        return self.scale * x


@rc.rrule.register(Meter.read)
def _read_rrule(m: Meter, x: Any) -> Any:
    def read_pullback(ybar: Any) -> Any:
        ybar = rc.unthunk(ybar)
        if rc.is_zero(ybar):
            return rc.NoTangent(), rc.ZeroTangent(), rc.ZeroTangent()
        mbar = rc.Tangent[Meter](scale=rc.project(m.scale, ybar * x))
        return rc.NoTangent(), mbar, rc.project(x, ybar * m.scale)

    return m.read(x), read_pullback


def test_bound_methods_are_checked_with_self_as_the_function() -> None:
    m = Meter(np.array([1.0, 2.0]))
    rct.test_rrule(m.read, np.array([0.5, 0.25]))


def test_function_keywords_that_collide_go_in_fkwargs() -> None:
    def f(x: Any, *, rtol: float) -> Any:
        return np.sin(x) * rtol

    @rc.rrule.register(f)
    def _(x: Any, *, rtol: float) -> Any:
        def f_pullback(ybar: Any) -> Any:
            ybar = rc.unthunk(ybar)
            if rc.is_zero(ybar):
                return rc.NoTangent(), rc.ZeroTangent()
            return rc.NoTangent(), rc.project(x, ybar * np.cos(x) * rtol)

        return f(x, rtol=rtol), f_pullback

    rct.test_rrule(f, np.array([0.1, 0.2]), fkwargs={"rtol": 2.0})


def test_tolerances_follow_dtypes() -> None:
    assert rct.default_tolerance(np.zeros(1)) == rct.Tolerance(1e-6, 1e-9)
    assert rct.default_tolerance(np.zeros(1), (np.float32(1.0),)).rtol == 1e-3
    assert rct.default_tolerance({"a": np.zeros(1, np.float16)}).rtol == 3e-2


def test_float32_rules_get_float32_tolerances() -> None:
    # float32 rules are only float32-accurate; finite differences run in float64
    x = np.linspace(-3, 3, 7).astype(np.float32)
    rct.test_rrule(csquare, x)
    rct.test_frule(csquare, x)
    rct.test_rrule(csquare, np.float32(1.5))


def test_rule_tester_fixture(rule_tester: rct.RuleTester) -> None:
    rule_tester.both(csquare, np.array([0.5, -1.0]))
    rule_tester.given(csquare, S.arrays(dtype=np.complex128), max_examples=5)
    assert rc.checks_enabled()


# ---------------------------------------------------------------------------------------------
# an AD engine in place of the rules (autograd as the reference engine)


def _autograd_pullback(f: Any, *args: Any) -> Any:
    from autograd import make_vjp

    vjp, y = make_vjp(lambda packed: f(*packed))(tuple(args))
    return y, lambda ybar: tuple(vjp(ybar))


def _autograd_jvp(f: Any, args: tuple[Any, ...], tangents: tuple[Any, ...]) -> Any:
    from autograd import make_jvp

    dots = tuple(np.zeros_like(np.asarray(a, dtype=float)) if rc.is_zero(t) else t
                 for a, t in zip(args, tangents, strict=True))
    return make_jvp(lambda packed: f(*packed))(tuple(args))(dots)


def _softplus_sum(x: Any, w: Any) -> Any:
    import autograd.numpy as anp

    return anp.sum(anp.log1p(anp.exp(x * w)))


def test_an_engine_is_checked_by_the_same_harness() -> None:
    rrule_f = rct.rrule_from_pullback(_autograd_pullback)
    frule_f = rct.frule_from_jvp(_autograd_jvp)
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -0.5])
    rct.test_rrule(_softplus_sum, x, w, rrule_f=rrule_f, strict=False)
    rct.test_frule(_softplus_sum, x, w, frule_f=frule_f, strict=False)
    rct.test_frule_rrule(_softplus_sum, x, w, rrule_f=rrule_f, frule_f=frule_f)
    rct.RuleTester(rrule_f=rrule_f, frule_f=frule_f).given(
        _softplus_sum, S.arrays(shape=(3,)), S.arrays(shape=(3,)), max_examples=5)


def test_a_broken_engine_is_caught() -> None:
    def broken(f: Any, *args: Any) -> Any:
        y, back = _autograd_pullback(f, *args)
        return y, lambda ybar: tuple(-g for g in back(ybar))

    with pytest.raises(AssertionError, match=r"computed by .*rrule_from_pullback\(.*broken\)"):
        rct.test_rrule(_softplus_sum, np.array([0.5, 1.0]), np.ones(2),
                       rrule_f=rct.rrule_from_pullback(broken), strict=False)


def test_zygotepy_is_checked_by_the_same_harness() -> None:
    import zygotepy as zp

    def loss(x: Any, w: Any) -> Any:
        return np.sum(np.tanh(x * w) ** 2)

    tester = rct.RuleTester(rrule_f=rct.rrule_from_pullback(zp.pullback))
    tester.rrule(loss, np.array([0.3, 1.0]), np.array([0.5, -2.0]))
    tester.given(loss, S.arrays(shape=(3,)), S.arrays(shape=(3,)), frule=False, max_examples=5)


# ---------------------------------------------------------------------------------------------
# reports through hypothesis


def wrong_cube(x: Any) -> Any:
    return x ** 3


rc.scalar_rule(wrong_cube, lambda x: 2 * x ** 2)


def test_check_rule_failures_carry_the_falsifying_example() -> None:
    with pytest.raises(AssertionError) as info:
        rct.check_rule(wrong_cube, (S.arrays(),), max_examples=10)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Falsifying example" in notes or "Failing test case" in notes  # hypothesis < / >= 6.16x
    assert "wrong_cube" in str(info.value) and "rrule for" in str(info.value)


# ---------------------------------------------------------------------------------------------
# the pytest plugin, in a separate pytest process


def test_plugin_gives_fixtures_profile_and_checking_mode(tmp_path: Path) -> None:
    (tmp_path / "test_third_party.py").write_text(textwrap.dedent('''
        import numpy as np
        import rulescore as rc
        from hypothesis import settings

        def triple(x):
            return 3.0 * x

        rc.scalar_rule(triple, lambda x: 3.0)

        def test_rule(rule_tester):
            rule_tester.both(triple, np.array([1.0, 2.0]))
            rule_tester.given(triple, np.array([0.5]))

        def test_environment():
            assert rc.checks_enabled()
            assert settings.default.derandomize and settings.default.deadline is None
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(rc.__file__).parent.parent)}
    env.pop("RULESCORE_CHECKS", None)
    installed = any(ep.value == "rulescore.testing.plugin"
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    enable = [] if installed else ["-p", "rulescore.testing.plugin"]  # source checkout: by hand
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *enable, "-p", "no:cacheprovider", "-p", "no:randomly",
         str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
