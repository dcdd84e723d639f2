"""Rules for ``scipy.special`` (rulescore/rules/scipy_special.py): every rule against finite
differences on hypothesis-drawn points (arrays, broadcasting, Python floats), through zygotepy,
and against ``jax.scipy.special`` where JAX has the function."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

sp = pytest.importorskip("scipy.special")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_special  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 5


def arr(lo: float, hi: float, shape: Any = None) -> Any:
    return S.arrays(shape=shape, min_value=lo, max_value=hi)


def case(f: Any, args: tuple[Any, ...], name: str = "", **options: Any) -> RuleCase:
    kwargs = options.pop("kwargs", {})
    return RuleCase(f, args, kwargs, name=name, max_examples=options.pop("max_examples", N), **options)


ANY = arr(-3, 3)
POS = arr(0.3, 3)
ANY3 = arr(-3, 3, (3,))
POS3 = arr(0.3, 3, (3,))
UNIT = arr(0.05, 0.95)
A23 = S.arrays(shape=(2, 3))

CASES = [
    case(sp.expit, (ANY,)),
    case(sp.expit, (S.scalars(),), "float"),
    case(sp.logit, (UNIT,)),
    case(sp.expm1, (ANY,)),
    case(sp.log1p, (arr(-0.7, 3),)),
    case(sp.cosm1, (ANY,)),
    case(sp.gammaln, (POS,)),
    case(sp.digamma, (POS,)),
    case(sp.polygamma, (2, POS), nondiff=(0,)),
    case(sp.polygamma, (np.array([0, 1, 3]), arr(0.5, 3, (2, 3))), "array-orders", nondiff=(0,)),
    case(sp.gamma, (arr(0.3, 4),)),
    case(sp.beta, (POS3, POS3)),
    case(sp.betaln, (arr(0.5, 3, (3,)), arr(0.5, 3, (2, 3))), "broadcast"),
    case(sp.erf, (ANY,)),
    case(sp.erfc, (ANY,)),
    case(sp.erfinv, (arr(-0.9, 0.9),)),
    case(sp.erfcinv, (arr(0.1, 1.9),)),
    case(sp.ndtr, (ANY,)),
    case(sp.log_ndtr, (arr(-30, 3),), "left-tail"),
    case(sp.ndtri, (UNIT,)),
    case(sp.xlogy, (ANY3, POS3)),
    case(sp.xlog1py, (ANY3, arr(-0.7, 3, (3,)))),
    case(sp.entr, (POS,)),
    case(sp.rel_entr, (POS3, POS3)),
    case(sp.kl_div, (POS3, POS3)),
    case(sp.kl_div, (S.scalars(0.3, 3), POS3), "scalar-broadcast"),
    case(sp.i0, (ANY,)),
    case(sp.i0e, (arr(0.1, 3),), "positive"),
    case(sp.i0e, (arr(-3, -0.1),), "negative"),
    case(sp.i1, (ANY,)),
    case(sp.i1, (0.0,), "zero"),
    case(sp.i1e, (arr(0.1, 3),), "positive"),
    case(sp.i1e, (arr(-3, -0.1),), "negative"),
    case(sp.multigammaln, (arr(2.0, 4.0), 3), nondiff=(1,)),
    case(sp.zeta, (arr(1.5, 4.0, (3,)), POS3)),
    case(sp.zeta, (arr(1.5, 4.0, (3,)),)),  # Riemann's zeta: no q
    case(sp.gammainc, (arr(0.5, 4.0, (3,)), POS3)),
    case(sp.gammaincc, (arr(0.5, 4.0, (3,)), POS3)),
    case(sp.softmax, (A23,), "all"),
    case(sp.softmax, (A23, 1), "positional-axis", nondiff=(1,)),
    case(sp.softmax, (A23,), "keyword-axis", kwargs={"axis": 0}),
    case(sp.log_softmax, (A23,), "all"),
    case(sp.log_softmax, (A23, 0), "positional-axis", nondiff=(1,)),
    case(sp.log_softmax, (A23,), "keyword-axis", kwargs={"axis": 1}),
    case(sp.j0, (ANY3,)),
    case(sp.j1, (ANY3,)),
    case(sp.y0, (POS3,)),
    case(sp.y1, (POS3,)),
    case(sp.jv, (arr(-2.5, 2.5, (3,)), POS3)),
    case(sp.iv, (arr(-2.5, 2.5, (3,)), POS3)),
    case(sp.ive, (arr(-2.5, 2.5, (3,)), arr(0.1, 3, (3,)))),
    case(sp.yn, (np.array([0, 1, 3]), POS3), nondiff=(0,)),
    case(sp.rgamma, (arr(-2.7, 3.5, (3,)),)),
    case(sp.rgamma, (np.array([0.0, -1.0, -2.0, 1.0]),), "poles"),
    case(sp.betainc, (arr(0.5, 3, (3,)), arr(0.5, 3, (3,)), arr(0.05, 0.95, (3,)))),
    case(sp.gammasgn, (arr(-2.7, 3.5, (3,)),)),
    case(sp.wright_bessel, (arr(0.1, 2, (3,)), arr(0.2, 2, (3,)), arr(0.1, 4, (3,))), rtol=1e-5),
    case(sp.log_wright_bessel, (arr(0.1, 2, (3,)), arr(0.2, 2, (3,)), arr(0.1, 40, (3,))), rtol=1e-5),
    case(sp.log_wright_bessel, (0.5, 1.5, arr(0.1, 40, (3,))), "scalar-orders", rtol=1e-5),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    # logsumexp's entry holds the reductions' rules: its cases are in test_reductions.py
    covered = {id(c.f) for c in CASES}
    assert {id(p.primal) for p in scipy_special.RULES if p.primal is not sp.logsumexp} <= covered


def test_importing_rulescore_does_not_import_scipy_and_scipy_registers_later() -> None:
    code = ("import sys, rulescore as rc; assert 'scipy' not in sys.modules; "
            "import scipy.special as sp; assert rc.rrule.has_rules(sp.gammaln); "
            "assert rc.frule.has_rules(sp.softmax); assert rc.rrule.has_rules(sp.logsumexp); "
            "assert not any(type(f).__name__ == '_AfterImport' for f in sys.meta_path) or "
            "'scipy.stats' not in sys.modules; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_scipy_imported_before_rulescore_registers_at_import() -> None:
    code = ("import scipy.special as sp, scipy.stats as st, rulescore as rc; "
            "assert rc.rrule.has_rules(sp.gammaln) and rc.rrule.has_rules(st.rv_continuous.logpdf); "
            "print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_errors_name_scipy_objects() -> None:
    from rulescore._checks import callable_name
    assert callable_name(sp.gammaln) == "scipy.special.gammaln"
    assert callable_name(sp.softmax) == "scipy.special.softmax"
    assert callable_name(np.sin) == "numpy.sin"


def test_log_ndtr_gradient_is_finite_far_in_the_left_tail() -> None:
    _, back = rc.rrule(sp.log_ndtr, np.array([-40.0, -20.0]))
    grad = back(np.ones(2))[1]
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, [40.0, 20.0], rtol=1e-2)  # ~ -x in the tail


def test_gammainc_in_a_matches_a_fine_finite_difference() -> None:
    a, x, h = 2.5, 1.7, 1e-6
    _, back = rc.rrule(sp.gammainc, a, x)
    expected = (sp.gammainc(a + h, x) - sp.gammainc(a - h, x)) / (2 * h)
    assert back(1.0)[1] == pytest.approx(expected, rel=1e-7)


# -- through zygotepy ------------------------------------------------------------------------

def neg_log_likelihood(w: np.ndarray) -> Any:
    """A logistic-regression loss written with scipy.special."""
    X = np.array([[0.5, -1.0], [1.5, 0.3], [-0.7, 2.0]])
    y = np.array([1.0, 0.0, 1.0])
    p = sp.expit(X @ w)
    return -np.sum(sp.xlogy(y, p) + sp.xlog1py(1 - y, -p))


def gamma_model(a: np.ndarray) -> Any:
    return np.sum(sp.gammaln(a) - sp.betaln(a, 2.0) + sp.digamma(a) * sp.erf(a / 3)
                  + sp.log_softmax(a)[0] + sp.i0e(a) + sp.multigammaln(a[0] + 2.0, 2))


@pytest.mark.parametrize("f, x", [(neg_log_likelihood, np.array([0.3, -0.2])),
                                  (gamma_model, np.array([1.2, 2.5, 0.8]))])
def test_zygotepy_gradient_matches_finite_differences(f: Any, x: np.ndarray) -> None:
    (g,) = zp.gradient(f, x)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-6, atol=1e-8)


# -- against JAX -----------------------------------------------------------------------------

JAX_NAMES = ["expit", "logit", "gammaln", "digamma", "gamma", "erf", "erfc", "erfinv", "ndtr",
             "log_ndtr", "ndtri", "entr", "i0", "i0e", "i1", "i1e"]
JAX_BINARY = ["xlogy", "xlog1py", "betaln", "rel_entr", "kl_div", "gammainc", "gammaincc", "zeta"]
_POINTS = {"logit": [0.2, 0.7], "ndtri": [0.2, 0.7], "erfinv": [-0.4, 0.6]}


@pytest.mark.parametrize("name", JAX_NAMES)
def test_unary_gradient_matches_jax(name: str) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsp = pytest.importorskip("jax.scipy.special")
    x = np.array(_POINTS.get(name, [0.7, 1.9]))
    _, back = rc.rrule(getattr(sp, name), x)
    expected = jax.jit(jax.vmap(jax.grad(getattr(jsp, name))))(x)
    np.testing.assert_allclose(back(np.ones(2))[1], np.asarray(expected), rtol=1e-8)


@pytest.mark.parametrize("name", JAX_BINARY)
def test_binary_gradient_matches_jax(name: str) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsp = pytest.importorskip("jax.scipy.special")
    a, b = np.array([2.5, 1.7]), np.array([0.8, 1.3])
    _, back = rc.rrule(getattr(sp, name), a, b)
    argnums = (1,) if name == "zeta" else (0, 1)  # JAX's zeta has no derivative in x
    expected = jax.jit(jax.vmap(jax.grad(getattr(jsp, name), argnums=argnums)))(a, b)
    got = back(np.ones(2))[1:]
    for i, e in zip(argnums, expected, strict=True):
        np.testing.assert_allclose(got[i], np.asarray(e), rtol=1e-7)


def test_softmax_matches_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnn = pytest.importorskip("jax.nn")
    x = np.array([[0.2, -1.0, 0.5], [1.5, 0.3, -0.4]])
    w = np.arange(6.0).reshape(2, 3)
    for ours, theirs in ((sp.softmax, jnn.softmax), (sp.log_softmax, jnn.log_softmax)):
        _, back = rc.rrule(ours, x, axis=1)
        expected = jax.jit(jax.grad(lambda v, theirs=theirs: (theirs(v, axis=1) * w).sum()))(x)
        np.testing.assert_allclose(back(w)[1], np.asarray(expected), rtol=1e-10)
