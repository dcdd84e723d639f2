"""Rules for ``scipy.linalg`` (rulescore/rules/scipy_linalg.py) against finite differences on
hypothesis-drawn matrices (including the entries SciPy does not read), through zygotepy, and
against ``jax.scipy.linalg``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sl = pytest.importorskip("scipy.linalg")

import rulescore as rc  # noqa: E402
import rulescore.testing.strategies as S  # noqa: E402
import zygotepy as zp  # noqa: E402
from rulescore.rules import scipy_linalg  # noqa: E402
from tests.rulescore.rules._cases import RuleCase, case_id, check_case  # noqa: E402
from tests.rulescore.rules.test_linalg import sym_gap  # noqa: E402
from tests.zygotepy.finite_differences import fd  # noqa: E402

N = 4
WELL = S.well_conditioned_matrices(3)
SPD = S.spd_matrices(3)
SMALL = S.arrays(shape=(3, 3), min_value=-0.5, max_value=0.5)
B32 = S.arrays(shape=(3, 2))
B3 = S.arrays(shape=(3,))


def banded(shape: tuple[int, int], diagonal_row: int) -> Any:
    """Banded storage of a diagonally dominant matrix (3 on the diagonal, the rest small)."""
    big = np.zeros((shape[0], 1))
    big[diagonal_row] = 3.0
    return S.arrays(shape=shape, min_value=-0.5, max_value=0.5).map(lambda a: a + big)


def case(f: Any, args: tuple[Any, ...], name: str = "", **options: Any) -> RuleCase:
    kwargs = options.pop("kwargs", {})
    return RuleCase(f, args, kwargs, name=name, max_examples=options.pop("max_examples", N), **options)


CASES = [
    case(sl.expm, (S.arrays(shape=(3, 3), min_value=-1, max_value=1),)),
    case(sl.expm_frechet, (SMALL, S.arrays(shape=(3, 3)))),
    case(sl.expm_frechet, (SMALL, S.arrays(shape=(3, 3))), "frechet-only", kwargs={"compute_expm": False}),
    case(sl.expm_frechet, (S.arrays(shape=(2, 3, 3), min_value=-0.5, max_value=0.5),
                           S.arrays(shape=(2, 3, 3))), "batched"),
    # eigenvectors: the drivers whose signs are smooth in the matrix (evr, the default, flips
    # them; test_eigh_subsets_through_zygotepy checks it with a gauge-invariant loss)
    case(sl.eigh, (sym_gap(3),), kwargs={"driver": "evd"}),
    case(sl.eigh, (sym_gap(3),), "eigvals-only-upper", kwargs={"eigvals_only": True, "lower": False}),
    case(sl.eigh, (sym_gap(4),), "subset-by-index", kwargs={"subset_by_index": [1, 2], "driver": "evx"}),
    case(sl.eigh, (sym_gap(4),), "subset-by-index-values",
         kwargs={"subset_by_index": (0, 1), "eigvals_only": True}),
    case(sl.eigh, (sym_gap(4),), "subset-by-value",
         kwargs={"subset_by_value": (-np.inf, 0.1), "driver": "evx"}),
    case(sl.logm, (SPD,), "spd"),
    case(sl.sqrtm, (SPD,), "spd"),
    case(sl.inv, (WELL,)),
    case(sl.det, (WELL,)),
    case(sl.det, (st.tuples(WELL, WELL).map(np.stack),), "batched"),
    case(sl.solve_banded, ((1, 1), banded((3, 3), 1), B32), nondiff=(0,)),
    case(sl.solve_banded, ((2, 0), banded((3, 4), 0), S.arrays(shape=(4,))), "lower-vector", nondiff=(0,)),
    case(sl.solve, (WELL, B32)),
    case(sl.solve, (WELL, B3), "vector"),
    case(sl.solve, (SPD, B32), "sym", kwargs={"assume_a": "sym"}),
    case(sl.solve, (SPD, B32), "pos-lower", kwargs={"assume_a": "pos", "lower": True}),
    case(sl.solve, (WELL, B32), "lower-triangular", kwargs={"assume_a": "lower triangular"}),
    case(sl.solve, (WELL, B3), "diagonal", kwargs={"assume_a": "diagonal"}),
    case(sl.solve, (SPD, B32, True), "positional-lower", nondiff=(2,), kwargs={"assume_a": "sym"}),
    case(sl.solve_triangular, (WELL, B32)),
    case(sl.solve_triangular, (WELL, B3, 1, True), "trans-lower", nondiff=(2, 3)),
    case(sl.solve_triangular, (WELL, B32), "unit-trans", kwargs={"unit_diagonal": True, "trans": "T"}),
    case(sl.cholesky, (SPD,)),
    case(sl.cholesky, (SPD,), "lower", kwargs={"lower": True}),
    case(sl.cholesky, (SPD, True), "positional-lower", nondiff=(1,)),
    case(sl.cholesky, (SPD,), "lower-unchecked", kwargs={"lower": True, "check_finite": False}),
    case(sl.cholesky, (st.tuples(SPD, SPD).map(np.stack),), "batched"),
    case(sl.cho_factor, (SPD,)),
    case(sl.cho_factor, (SPD,), "lower", kwargs={"lower": True}),
    case(sl.cho_solve, (SPD.map(sl.cho_factor), B32)),
    case(sl.cho_solve, (SPD.map(lambda a: sl.cho_factor(a, lower=True)), B3), "lower-vector"),
    case(sl.lu_factor, (WELL,)),
    case(sl.lu_solve, (WELL.map(sl.lu_factor), B32)),
    case(sl.lu_solve, (WELL.map(sl.lu_factor), B3, 1), "trans", nondiff=(2,)),
    case(sl.solve_sylvester, (SPD, SPD, SMALL)),
    case(sl.solve_continuous_lyapunov, (SPD, SMALL)),
    case(sl.block_diag, (S.arrays(shape=(2, 2)), B3, S.scalars(), B32)),
]


#: The cholesky and cho_solve pullbacks' fast helpers (LAPACK's sygst, BLAS's trmm): their rules are
#: the derivatives of the formulas they stand for, through the engine (config rules; not exported:
#: only pullbacks call them). The frules are tested through zygotepy
#: (test_cholesky_helpers_second_order_through_zygotepy).
HELPER_CASES = [
    case(scipy_linalg._cholesky_cotangent, (SPD.map(np.linalg.cholesky), S.arrays(shape=(3, 3))), "fast",
         frule=False),
    case(scipy_linalg._factor_cotangent, (SPD.map(np.linalg.cholesky), st.just(True), B32, B32), "lower",
         nondiff=(1,), frule=False),
    case(scipy_linalg._factor_cotangent, (SPD.map(lambda a: np.linalg.cholesky(a).T), st.just(False), B32,
                                          B32), "upper", nondiff=(1,), frule=False),
]
#: (tests/rulescore/rules/test_coverage.py: the helpers' rules are covered by the cases above)
COVERED = [c.f for c in HELPER_CASES]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


@pytest.mark.parametrize("case", HELPER_CASES, ids=case_id)
def test_fast_helper_rule(case: RuleCase) -> None:
    check_case(case)


def test_every_rule_of_the_family_has_a_case() -> None:
    assert {id(p.primal) for p in scipy_linalg.RULES} <= {id(c.f) for c in CASES + HELPER_CASES}


def test_complex_matrices_are_refused_not_differentiated_wrongly() -> None:
    with pytest.raises(TypeError, match=r"scipy\.linalg\.expm handle real matrices only"):
        rc.rrule(sl.expm, np.eye(2, dtype=complex))


def test_solve_refuses_an_unknown_structure() -> None:
    with pytest.raises(ValueError, match="transposed=True"):
        rc.rrule(sl.solve, np.eye(2), np.ones(2), transposed=True)


def gaussian_process_nll(theta: np.ndarray) -> Any:
    """A GP's negative log marginal likelihood written with scipy.linalg."""
    t = np.array([0.0, 0.4, 1.1, 1.7])
    y = np.array([0.3, -0.1, 0.8, 0.5])
    k = np.exp(theta[0]) * np.exp(-np.subtract.outer(t, t) ** 2 / np.exp(theta[1])) + 0.1 * np.eye(4)
    alpha = sl.solve(k, y, assume_a="pos")
    return 0.5 * y @ alpha + 0.5 * np.log(sl.det(k))


def gaussian_process_cholesky(theta: np.ndarray) -> Any:
    """The same likelihood through cho_factor/cho_solve, as GP code usually writes it."""
    t = np.array([0.0, 0.4, 1.1, 1.7])
    y = np.array([0.3, -0.1, 0.8, 0.5])
    k = np.exp(theta[0]) * np.exp(-np.subtract.outer(t, t) ** 2 / np.exp(theta[1])) + 0.1 * np.eye(4)
    factor = sl.cho_factor(k, lower=True)
    lu = sl.lu_factor(k)
    return (0.5 * y @ sl.cho_solve(factor, y) + np.sum(np.log(np.diag(factor[0])))
            + 0.1 * np.sum(sl.lu_solve(lu, y, trans=1)))


def gaussian_process_scipy_cholesky(theta: np.ndarray) -> Any:
    """The likelihood as scikit-learn writes it: ``scipy.linalg.cholesky(lower=True,
    check_finite=False)``, then triangular solves."""
    t = np.array([0.0, 0.4, 1.1, 1.7, 2.0])
    y = np.array([0.3, -0.1, 0.8, 0.5, 0.2])
    k = np.exp(theta[0]) * np.exp(-np.subtract.outer(t, t) ** 2 / np.exp(theta[1])) + 0.1 * np.eye(5)
    low = sl.cholesky(k, lower=True, check_finite=False)
    alpha = sl.solve_triangular(low.T, sl.solve_triangular(low, y, lower=True), lower=False)
    upper = sl.cholesky(k)
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(low))) + 0.01 * np.sum(upper ** 2)


def matrix_functions(theta: np.ndarray) -> Any:
    a = np.array([[1.0 + theta[0], theta[1]], [theta[1], 2.0]])
    lower = np.array([[2.0, 0.0], [theta[0], 1.5]])
    return (np.sum(sl.expm(0.3 * a)) + np.trace(sl.logm(a)) + np.sum(sl.sqrtm(a))
            + np.sum(sl.solve_triangular(lower, np.array([1.0, theta[1]]), lower=True))
            + np.sum(sl.inv(a)) + np.sum(sl.solve_continuous_lyapunov(-a, np.eye(2)))
            + np.sum(sl.block_diag(a, theta)))


@pytest.mark.parametrize("f, x", [(gaussian_process_nll, np.array([0.2, -0.3])),
                                  (gaussian_process_cholesky, np.array([0.2, -0.3])),
                                  (gaussian_process_scipy_cholesky, np.array([0.2, -0.3])),
                                  (matrix_functions, np.array([0.3, 0.2]))])
def test_zygotepy_gradient_matches_finite_differences(f: Any, x: np.ndarray) -> None:
    (g,) = zp.gradient(f, x)
    np.testing.assert_allclose(g, fd(f, x), rtol=1e-6, atol=1e-8)


def test_scipy_cholesky_forward_mode_and_second_order() -> None:
    """jvp, and the Hessian (forward over reverse) of the likelihood against differences of the
    gradient."""
    theta, direction = np.array([0.2, -0.3]), np.array([0.7, -1.1])
    _, ydot = zp.jvp(gaussian_process_scipy_cholesky, (theta,), (direction,))
    np.testing.assert_allclose(ydot, fd(gaussian_process_scipy_cholesky, theta) @ direction, rtol=1e-6)
    hessian = zp.hessian(gaussian_process_scipy_cholesky, theta)
    def first(x: np.ndarray) -> Any:
        return zp.gradient(gaussian_process_scipy_cholesky, x)[0]
    by_differences = np.stack([(first(theta + h) - first(theta - h)) / 2e-5 for h in 1e-5 * np.eye(2)])
    np.testing.assert_allclose(hessian, by_differences, rtol=1e-5, atol=1e-7)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 3), lower=st.booleans(), single=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_fast_cholesky_helpers_equal_their_formulas(n: int, k: int, lower: bool, single: bool,
                                                    seed: int) -> None:
    """The pullbacks' LAPACK/BLAS helpers against the formulas they stand for, with garbage in the
    triangle cho_solve does not read, float64 and float32 (the dtype kept)."""
    rng = np.random.default_rng(seed)
    dtype = np.float32 if single else np.float64
    a = rng.standard_normal((n, n))
    low = np.linalg.cholesky(a @ a.T + n * np.eye(n)).astype(dtype)
    lbar = rng.standard_normal((n, n)).astype(dtype)
    tol = {"rtol": 1e-4, "atol": 1e-4} if single else {"rtol": 1e-10, "atol": 1e-12}
    got = scipy_linalg._cholesky_cotangent(low, lbar)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, scipy_linalg._cholesky_cotangent_formula(low, lbar), **tol)
    garbage = rng.standard_normal((n, n))
    garbage = (np.triu(garbage, 1) if lower else np.tril(garbage, -1)).astype(dtype)
    packed = (low if lower else low.T) + garbage
    mm, xm = (rng.standard_normal((n, k)).astype(dtype) for _ in range(2))
    got = scipy_linalg._factor_cotangent(packed, lower, mm, xm)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, scipy_linalg._factor_cotangent_formula(packed, lower, mm, xm), **tol)


def sklearn_style_likelihood(theta: np.ndarray) -> Any:
    """scikit-learn's log marginal likelihood: cholesky(lower=True), cho_solve, log of the diagonal."""
    t = np.array([0.0, 0.4, 1.1, 1.7, 2.0, 2.6])
    y = np.array([[0.3, 1.0], [-0.1, 0.2], [0.8, -0.4], [0.5, 0.1], [0.2, 0.9], [-0.6, 0.3]])
    k = np.exp(theta[0]) * np.exp(-np.subtract.outer(t, t) ** 2 / np.exp(theta[1])) + 0.1 * np.eye(6)
    low = sl.cholesky(k, lower=True, check_finite=False)
    alpha = sl.cho_solve((low, True), y, check_finite=False)
    upper = sl.cholesky(k)
    return (-0.5 * np.sum(y * alpha) - np.sum(np.log(np.diag(low)))
            + 0.1 * np.sum(sl.cho_solve((upper, False), y[:, 0])))


@pytest.mark.parametrize("theta", [np.array([0.2, -0.3]), np.array([-0.4, 0.5])])
def test_cholesky_helpers_second_order_through_zygotepy(theta: np.ndarray) -> None:
    """The pullbacks of cholesky and cho_solve (lower and upper) at second order: the Hessian by
    forward over reverse (the helpers' frules) and by reverse over reverse (their rrules) against
    differences of the gradient."""
    def first(x: np.ndarray) -> Any:
        return zp.gradient(sklearn_style_likelihood, x)[0]

    np.testing.assert_allclose(first(theta), fd(sklearn_style_likelihood, theta), rtol=1e-6, atol=1e-8)
    by_differences = np.stack([(first(theta + h) - first(theta - h)) / 2e-5 for h in 1e-5 * np.eye(2)])
    hessian = zp.hessian(sklearn_style_likelihood, theta)
    np.testing.assert_allclose(hessian, by_differences, rtol=1e-5, atol=1e-7)
    reverse_over_reverse = np.stack([zp.gradient(lambda x, e=e: first(x) @ e, theta)[0] for e in np.eye(2)])
    np.testing.assert_allclose(reverse_over_reverse, by_differences, rtol=1e-5, atol=1e-7)


def test_scipy_cholesky_checks_finite_entries_unless_told_not_to() -> None:
    with pytest.raises(ValueError, match="infs or NaNs"):
        rc.rrule(sl.cholesky, np.array([[1.0, np.nan], [np.nan, 1.0]]))


def eigh_subsets(theta: np.ndarray) -> Any:
    """Gauge-invariant uses of eigh's subsets: the projector on two middle eigenvectors, the
    eigenvalues below 1 and the lowest one."""
    a = np.array([[2.0 + theta[0], 0.3, theta[1]], [0.3, 1.0, 0.2], [theta[1], 0.2, -0.5]])
    w, v = sl.eigh(np.kron(np.diag([1.0, 2.0]), a), subset_by_index=[2, 3])
    projector = v @ v.T
    low = sl.eigh(a, subset_by_value=(-np.inf, 1.0), eigvals_only=True)
    return np.sum(projector * np.arange(36.0).reshape(6, 6)) + np.sum(w ** 2) + np.sum(low) + sl.eigh(
        a, eigvals_only=True, lower=False, subset_by_index=[0, 0])[0] ** 3


def test_eigh_subsets_through_zygotepy() -> None:
    theta = np.array([0.3, -0.4])
    (g,) = zp.gradient(eigh_subsets, theta)
    np.testing.assert_allclose(g, fd(eigh_subsets, theta), rtol=1e-6, atol=1e-8)


def test_eigh_refuses_the_generalised_problem_and_stacks() -> None:
    with pytest.raises(NotImplementedError, match="standard problem only"):
        rc.rrule(sl.eigh, np.eye(2), np.eye(2))
    with pytest.raises(NotImplementedError, match="takes one matrix"):
        rc.rrule(sl.eigh, np.stack([np.eye(2), np.eye(2)]))


def test_expm_frechet_and_eigh_match_jax() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsl = pytest.importorskip("jax.scipy.linalg")
    a = np.array([[0.2, 0.3, -0.1], [0.1, -0.4, 0.2], [0.3, 0.0, 0.1]])
    e = np.array([[1.0, -0.5, 0.2], [0.3, 0.4, -1.0], [0.0, 0.6, 0.5]])
    w1, w2 = np.cos(np.arange(9.0)).reshape(3, 3), np.sin(np.arange(9.0)).reshape(3, 3)
    _, back = rc.rrule(sl.expm_frechet, a, e)
    ours = back(rc.Tangent[tuple](w1, w2))[1:]
    def total(a: Any, e: Any) -> Any:
        expm_a, frechet = jsl.expm_frechet(a, e)
        return (expm_a * w1).sum() + (frechet * w2).sum()

    theirs = jax.jit(jax.grad(total, argnums=(0, 1)))(a, e)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o, np.asarray(t), rtol=1e-8, atol=1e-12)
    s = a + a.T
    _, back = rc.rrule(sl.eigh, s, eigvals_only=True)
    (ours_s,) = back(np.array([1.0, -2.0, 0.5]))[1:]
    theirs_s = jax.jit(jax.grad(lambda m: jsl.eigh(m, eigvals_only=True) @ np.array([1.0, -2.0, 0.5])))(s)
    # JAX symmetrises; the rule folds onto the lower triangle it reads: same on symmetric directions
    t = np.asarray(theirs_s)
    np.testing.assert_allclose(ours_s, np.tril(t + t.T) - np.diag(np.diag(t)), rtol=1e-8, atol=1e-12)


# (JAX has no gradient for sqrtm)
@pytest.mark.parametrize("name", ["expm", "inv", "det", "solve", "solve_triangular"])
def test_gradient_matches_jax(name: str) -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsl = pytest.importorskip("jax.scipy.linalg")
    if not hasattr(jsl, name):
        pytest.skip(f"jax.scipy.linalg has no {name}")
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.8]])
    b = np.array([[1.0, 0.5], [-0.3, 0.2], [0.7, -1.1]])
    args = (a, b) if name.startswith("solve") else (a,)
    y, back = rc.rrule(getattr(sl, name), *args)
    w = np.cos(np.arange(np.size(y))).reshape(np.shape(y))
    ours = back(w)[1:]

    def total(*xs: Any) -> Any:
        out = getattr(jsl, name)(*xs)
        return (jax.numpy.real(out) * w).sum()

    theirs = jax.jit(jax.grad(total, argnums=tuple(range(len(args)))))(*args)
    for o, t in zip(ours, theirs, strict=True):
        if name == "solve_triangular":  # both read the upper triangle only
            o, t = np.triu(o), np.triu(np.asarray(t))
        np.testing.assert_allclose(o, np.asarray(t), rtol=1e-7, atol=1e-10)
