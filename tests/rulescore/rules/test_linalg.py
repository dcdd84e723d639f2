"""Rules for ``numpy.linalg`` (rulescore/rules/linalg.py): the table of cases checked against
finite differences, plus targeted tests (det at singular matrices, norms at zero, slogdet's
structural cotangents, the triangle convention of eigh/cholesky, gauge-invariant checks of
complex SVD, unsupported modes).

Factorisations with a sign gauge (svd, eigh, eig, qr) are checked directly: their inputs are
generic (mixed by fixed random rotations, well-separated spectra), where the factors LAPACK
returns are smooth, so finite differences of the factors themselves are meaningful.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import rulescore as rc
import rulescore.testing as rct
import rulescore.testing.strategies as S
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

LA = np.linalg
N = 3  # hypothesis examples per case: small matrices, expensive finite differences


def case(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, name: str = "",
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N),
                    **options)


# --------------------------------------------------------------------------------------------
# strategies
# --------------------------------------------------------------------------------------------

_RNG = np.random.default_rng(20240601)
#: Fixed generic rotations: mixing them in keeps drawn matrices away from structured points
#: (diagonal, permuted) where LAPACK's sign choices may jump.
_ROT = {n: np.linalg.qr(_RNG.standard_normal((n, n)))[0] for n in range(1, 7)}


def wc(n: int, dtype: Any = np.float64) -> Any:
    return S.well_conditioned_matrices(n, dtype)


def batch(strategy: Any, k: int = 2) -> Any:
    return st.lists(strategy, min_size=k, max_size=k).map(np.stack)


def _orthogonal(n: int) -> Any:
    return wc(n).map(lambda a: _ROT[n] @ np.linalg.qr(a)[0])


def _gaps(k: int, lo: float = 1.0) -> Any:
    return st.lists(st.floats(0.5, 1.5), min_size=k, max_size=k).map(lambda g: lo + np.cumsum(g))


def separated(m: int, n: int) -> Any:
    """``m x n`` matrices U diag(s) V^T with generic U, V and singular values >= 1, 0.5 apart."""
    k = min(m, n)

    def build(u: np.ndarray, v: np.ndarray, s: np.ndarray) -> np.ndarray:
        return (u[:, :k] * s[::-1]) @ v[:, :k].T

    return st.builds(build, _orthogonal(m), _orthogonal(n), _gaps(k))


def sym_gap(n: int) -> Any:
    """Symmetric matrices with generic eigenvectors and eigenvalues at least 0.5 apart."""
    def build(q: np.ndarray, w: np.ndarray) -> np.ndarray:
        a = (q * (w - 3.0)) @ q.T
        return (a + a.T) / 2

    return st.builds(build, _orthogonal(n), _gaps(n))


def real_spectrum(n: int) -> Any:
    """Non-symmetric matrices P diag(w) P^-1 with real eigenvalues at least 0.5 apart."""
    def build(p: np.ndarray, w: np.ndarray) -> np.ndarray:
        p = _ROT[n] @ p
        return np.linalg.solve(p.T, (p * (w - 2.0)).T).T

    return st.builds(build, wc(n), _gaps(n))


def distinct(shape: tuple[int, ...], dtype: Any = np.float64) -> Any:
    """Arrays whose absolute values are distinct and at least 0.3 (norms are smooth there)."""
    size = int(np.prod(shape))

    def build(perm: list[int], signs: list[bool]) -> np.ndarray:
        mags = np.array(perm, dtype=np.float64) * 0.4 + 0.3
        return (np.where(signs, mags, -mags).reshape(shape)).astype(dtype)

    return st.builds(build, st.permutations(list(range(size))),
                     st.lists(st.booleans(), min_size=size, max_size=size))


def cdistinct(shape: tuple[int, ...]) -> Any:
    return st.builds(lambda a, ph: a * np.exp(1j * ph), distinct(shape),
                     S.arrays(shape=shape, min_value=-3.0, max_value=3.0))


def rows_distinct(m: int, n: int) -> Any:
    """Matrices whose row and column sums of absolute values are all distinct."""
    scale = (1.0 + 0.37 * np.arange(n)) * (1.0 + 0.11 * np.arange(m))[:, None]
    return distinct((m, n)).map(lambda a: a * scale)


SPD3 = S.spd_matrices(3)
W2, W3, W4 = wc(2), wc(3), wc(4)
C3 = wc(3, np.complex128)
V3, M34, M43 = S.arrays(shape=(3,)), S.arrays(shape=(3, 4)), S.arrays(shape=(4, 3))

# --------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------

CASES = [
    # inv, det, slogdet, solve, matrix_power
    case(LA.inv, (W3,)),
    case(LA.inv, (batch(W2),), name="batched"),
    case(LA.inv, (wc(3, np.float32),), name="float32"),
    case(LA.inv, (C3,), name="complex"),
    case(LA.det, (wc(1),), name="1x1"),
    case(LA.det, (W2,), name="2x2"),
    case(LA.det, (W3,), name="3x3"),
    case(LA.det, (wc(5),), name="5x5"),
    case(LA.det, (batch(W3),), name="batched"),
    case(LA.det, (wc(4, np.complex128),), name="complex"),
    case(LA.det, (wc(3, np.float32),), name="float32"),
    case(LA.slogdet, (W3,)),
    case(LA.slogdet, (batch(W4),), name="batched"),
    case(LA.slogdet, (C3,), name="complex"),
    case(LA.solve, (W3, V3), name="vector"),
    case(LA.solve, (W3, M34), name="matrix"),
    case(LA.solve, (batch(W3), V3), name="batched-vector"),
    case(LA.solve, (batch(W3), batch(S.arrays(shape=(3, 2)))), name="batched-matrix"),
    case(LA.solve, (C3, S.arrays(shape=(3,), dtype=np.complex128)), name="complex"),
    case(LA.solve, (wc(3, np.float32), S.arrays(shape=(3, 2), dtype=np.float32)), name="float32"),
    case(LA.matrix_power, (W3, 3), nondiff=(1,), name="3"),
    case(LA.matrix_power, (W3, 0), nondiff=(1,), name="0"),
    case(LA.matrix_power, (W3, 1), nondiff=(1,), name="1"),
    case(LA.matrix_power, (W3, -2), nondiff=(1,), name="-2"),
    case(LA.matrix_power, (batch(W2), 2), nondiff=(1,), name="batched"),
    # factorisations
    case(LA.cholesky, (SPD3,)),
    case(LA.cholesky, (SPD3,), {"upper": True}, name="upper"),
    case(LA.cholesky, (batch(S.spd_matrices(2)),), name="batched"),
    case(LA.cholesky, (S.spd_matrices(3, np.float32),), name="float32"),
    case(LA.qr, (separated(4, 3),), name="tall"),
    case(LA.qr, (separated(3, 3),), name="square"),
    case(LA.qr, (separated(2, 4),), name="wide"),
    case(LA.qr, (batch(separated(3, 2)),), name="batched"),
    case(LA.qr, (separated(4, 3),), {"mode": "r"}, name="r"),
    case(LA.svd, (separated(4, 3),), {"full_matrices": False}, name="tall"),
    case(LA.svd, (separated(2, 4),), {"full_matrices": False}, name="wide"),
    case(LA.svd, (separated(3, 3),), name="square"),
    case(LA.svd, (batch(separated(3, 2)),), {"full_matrices": False}, name="batched"),
    case(LA.svd, (separated(4, 3),), {"compute_uv": False}, name="values"),
    case(LA.svd, (sym_gap(3),), {"hermitian": True}, name="hermitian"),
    case(LA.svd, (separated(3, 2).map(lambda a: a.astype(np.float32)),), {"full_matrices": False},
         name="float32"),
    case(LA.svdvals, (separated(3, 4),)),
    case(LA.eigh, (sym_gap(3),)),
    case(LA.eigh, (sym_gap(3),), {"UPLO": "U"}, name="upper"),
    case(LA.eigh, (S.arrays(shape=(3, 3)).map(lambda a: a + np.diag([0.0, 8.0, 16.0])),),
         name="non-symmetric input"),
    case(LA.eigh, (batch(sym_gap(2)),), name="batched"),
    case(LA.eigh, (sym_gap(3).map(lambda a: a.astype(np.float32)),), name="float32"),
    case(LA.eigvalsh, (sym_gap(4),)),
    case(LA.eigvalsh, (sym_gap(3),), {"UPLO": "U"}, name="upper"),
    case(LA.eig, (real_spectrum(3),)),
    case(LA.eigvals, (real_spectrum(3),)),
    case(LA.pinv, (separated(4, 3),), name="tall"),
    case(LA.pinv, (separated(2, 3),), name="wide"),
    case(LA.pinv, (batch(separated(3, 3)),), name="batched"),
    case(LA.pinv, (sym_gap(3),), {"hermitian": True}, name="hermitian"),
    case(LA.lstsq, (separated(5, 3), S.arrays(shape=(5,))), name="overdetermined"),
    case(LA.lstsq, (separated(5, 3), S.arrays(shape=(5, 2))), name="matrix"),
    case(LA.lstsq, (separated(2, 4), S.arrays(shape=(2,))), name="underdetermined"),
    # norms
    *[case(LA.norm, (distinct((5,)),), {"ord": o}, name=f"vector-{o}")
      for o in (None, 2, 1, np.inf, -np.inf, 3, 0.5, -1, 0)],
    case(LA.norm, (cdistinct((4,)),), name="complex-vector"),
    case(LA.norm, (cdistinct((4,)),), {"ord": 1}, name="complex-vector-1"),
    case(LA.norm, (cdistinct((4,)),), {"ord": 3}, name="complex-vector-3"),
    case(LA.norm, (distinct((2, 3, 2)),), name="flattened"),
    case(LA.norm, (distinct((2, 3, 2)),), {"ord": 3, "axis": 1, "keepdims": True}, name="axis-keepdims"),
    *[case(LA.norm, (rows_distinct(3, 4),), {"ord": o}, name=f"matrix-{o}")
      for o in ("fro", 1, -1, np.inf, -np.inf)],
    *[case(LA.norm, (separated(3, 4),), {"ord": o}, name=f"matrix-{o}") for o in ("nuc", 2, -2)],
    case(LA.norm, (batch(separated(4, 3)),), {"ord": "nuc", "axis": (2, 1)}, name="axes-nuc"),
    case(LA.norm, (batch(rows_distinct(3, 2)),), {"ord": 1, "axis": (0, 2), "keepdims": True},
         name="axes-1"),
    case(LA.norm, (wc(3, np.complex128),), {"ord": "fro"}, name="complex-fro"),
    case(LA.norm, (distinct((3,)), 2), nondiff=(1,), name="positional-ord"),
    case(LA.norm, (distinct((2, 3), np.float32),), {"axis": 1}, name="float32"),
    case(LA.norm, (separated(3, 3).map(lambda a: a * (1 + 0.5j)),), {"ord": "nuc"}, name="complex-nuc"),
    case(LA.vector_norm, (distinct((2, 3)),)),
    case(LA.vector_norm, (distinct((2, 3, 2)),), {"ord": np.inf, "axis": (0, 2)}, name="axes-inf"),
    case(LA.matrix_norm, (batch(separated(3, 2)),), {"ord": 2}, name="2"),
    case(LA.matrix_norm, (rows_distinct(3, 3),), {"keepdims": True}, name="fro"),
    case(LA.cond, (separated(3, 3),)),
    case(LA.cond, (separated(3, 3),), {"p": -2}, name="-2"),
    case(LA.cond, (batch(W3),), {"p": "fro"}, name="fro"),
    case(LA.cond, (rows_distinct(3, 3).map(lambda a: a + 6 * np.eye(3)),), {"p": 1}, name="1"),
    # products and array-API helpers
    case(LA.matmul, (S.arrays(shape=(2, 3, 4)), S.arrays(shape=(4, 2)))),
    case(LA.matmul, (S.arrays(shape=(4,)), S.arrays(shape=(2, 4, 3))), name="vector-matrix"),
    case(LA.matmul, (M34, S.arrays(shape=(4,))), name="matrix-vector"),
    case(LA.matmul, (V3, V3), name="vector-vector"),
    case(LA.matmul, (S.arrays(shape=(2, 3), dtype=np.complex128), M34), name="complex"),
    case(LA.outer, (V3, S.arrays(shape=(2,)))),
    case(LA.outer, (S.arrays(shape=(2,), dtype=np.complex128), V3), name="complex"),
    case(LA.vecdot, (S.arrays(shape=(2, 3)), V3)),
    case(LA.vecdot, (S.arrays(shape=(2, 3), dtype=np.complex128), S.arrays(shape=(3,), dtype=np.complex128)),
         name="complex"),
    case(LA.vecdot, (M34, S.arrays(shape=(3, 1))), {"axis": 0}, name="axis"),
    case(LA.multi_dot, (st.tuples(M34, S.arrays(shape=(4, 2)), S.arrays(shape=(2, 3))).map(list),)),
    case(LA.multi_dot, (st.tuples(V3, M34, S.arrays(shape=(4,))),), name="vectors"),
    case(LA.tensordot, (S.arrays(shape=(2, 3, 4)), S.arrays(shape=(3, 4, 2)))),
    case(LA.tensordot, (S.arrays(shape=(2, 3, 4)), S.arrays(shape=(4, 2))), {"axes": ([2, 0], [0, 1])},
         name="pairs"),
    case(LA.tensordot, (V3, S.arrays(shape=(2,))), {"axes": 0}, name="outer"),
    case(LA.cross, (S.arrays(shape=(2, 3)), V3)),
    case(LA.cross, (S.arrays(shape=(3, 2)), S.arrays(shape=(3, 2), dtype=np.complex128)), {"axis": 0},
         name="complex-axis"),
    case(LA.matrix_transpose, (S.arrays(shape=(2, 3, 4)),)),
    case(LA.diagonal, (S.arrays(shape=(2, 3, 4)),)),
    case(LA.diagonal, (M34,), {"offset": 1}, name="offset"),
    case(LA.diagonal, (M43,), {"offset": -2}, name="negative-offset"),
    case(LA.trace, (S.arrays(shape=(2, 3, 4)),)),
    case(LA.trace, (M34,), {"offset": -1}, name="offset"),
    case(LA.tensorinv, (wc(6).map(lambda a: a.reshape(2, 3, 6)),)),
    case(LA.tensorinv, (wc(6).map(lambda a: a.reshape(6, 2, 3)), 1), nondiff=(1,), name="ind"),
    case(LA.tensorsolve, (wc(6).map(lambda a: a.reshape(2, 3, 2, 3)), S.arrays(shape=(2, 3)))),
    case(LA.matrix_rank, (M34,)),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


# --------------------------------------------------------------------------------------------
# det at singular matrices
# --------------------------------------------------------------------------------------------


def _cofactor(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix (= adjugate^T = gradient of det) by minors."""
    n = a.shape[0]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
            out[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return out


SINGULAR = [
    np.array([[1.0, 2.0], [2.0, 4.0]]),
    np.zeros((2, 2)),
    np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),
    np.outer([1.0, -2.0, 0.5], [3.0, 1.0, -1.0]),  # rank 1: adjugate 0
    np.array([[2.0, 1.0, 0.0, 1.0], [1.0, 3.0, 1.0, 4.0], [0.0, 1.0, 2.0, 1.0], [3.0, 4.0, 1.0, 5.0]]),
    np.diag([1.0, 2.0, 0.0, 3.0, 4.0]),
]


@pytest.mark.parametrize("a", SINGULAR, ids=lambda a: f"{a.shape[0]}x{a.shape[0]}")
def test_det_gradient_at_singular_matrix_is_the_cofactor_matrix(a: np.ndarray) -> None:
    y, back = rc.rrule(LA.det, a)
    _, abar = back(1.0)
    assert np.all(np.isfinite(abar))
    np.testing.assert_allclose(abar, _cofactor(a), atol=1e-10)
    _, ydot = rc.frule((rc.NoTangent(), np.ones_like(a)), LA.det, a)
    np.testing.assert_allclose(ydot, np.sum(_cofactor(a)), atol=1e-10)


def test_det_batched_with_a_singular_member() -> None:
    a = np.stack([SINGULAR[4], np.eye(4) * 2.0])
    _, back = rc.rrule(LA.det, a)
    _, abar = back(np.array([1.0, 3.0]))
    np.testing.assert_allclose(abar[0], _cofactor(a[0]), atol=1e-10)
    np.testing.assert_allclose(abar[1], 3.0 * _cofactor(a[1]), atol=1e-10)


# --------------------------------------------------------------------------------------------
# norms at zero: the subgradient 0, never NaN
# --------------------------------------------------------------------------------------------

ZERO_NORMS = [
    ((4,), {}), ((4,), {"ord": 2}), ((4,), {"ord": 3}), ((4,), {"ord": 0.5}), ((4,), {"ord": 1}),
    ((4,), {"ord": np.inf}), ((3, 2), {}), ((3, 2), {"ord": "fro"}), ((3, 2), {"ord": 2}),
    ((3, 2), {"ord": "nuc"}), ((3, 2), {"ord": 1}), ((2, 3), {"axis": 1}), ((2, 3, 2), {}),
]


@pytest.mark.parametrize("shape, kw", ZERO_NORMS, ids=lambda v: repr(v))
def test_norm_gradient_at_zero_is_zero(shape: tuple[int, ...], kw: dict[str, Any]) -> None:
    x = np.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, back = rc.rrule(LA.norm, x, **kw)
        _, xbar = back(np.ones(np.shape(y)))
        _, ydot = rc.frule((rc.NoTangent(), np.ones(shape)), LA.norm, x, **kw)
    assert np.all(xbar == 0) and xbar.shape == shape
    assert np.all(np.asarray(ydot) == 0)


def test_norm_gradient_with_a_zero_column() -> None:
    x = np.array([[3.0, 0.0], [4.0, 0.0]])
    _, back = rc.rrule(LA.norm, x, axis=0)
    _, xbar = back(np.ones(2))
    np.testing.assert_allclose(xbar, [[0.6, 0.0], [0.8, 0.0]])


# --------------------------------------------------------------------------------------------
# slogdet: structural cotangents in every accepted form
# --------------------------------------------------------------------------------------------

A3 = np.array([[3.0, 1.0, 0.5], [0.2, -2.0, 1.0], [0.1, 0.3, 4.0]])


@pytest.mark.parametrize("ybar", [
    rc.Tangent[type(LA.slogdet(A3))](logabsdet=1.0),
    rc.Tangent[type(LA.slogdet(A3))](sign=rc.ZeroTangent(), logabsdet=rc.Thunk(lambda: 1.0)),
    rc.Tangent[type(LA.slogdet(A3))](sign=5.0, logabsdet=1.0),
    (0.0, 1.0),
    (rc.ZeroTangent(), 1.0),
    [None, np.float64(1.0)],
    {"logabsdet": 1.0},
    rc.Tangent[tuple](0.0, 1.0),
], ids=["Tangent", "Tangent-zero-sign-thunk", "Tangent-sign-ignored", "tuple", "tuple-zero", "list",
        "dict", "Tangent-tuple"])
def test_slogdet_cotangent_forms(ybar: Any) -> None:
    _, back = rc.rrule(LA.slogdet, A3)
    _, abar = back(ybar)
    np.testing.assert_allclose(abar, np.linalg.inv(A3).T, rtol=1e-12)


@pytest.mark.parametrize("ybar", [rc.ZeroTangent(), None, rc.Tangent[type(LA.slogdet(A3))](sign=1.0),
                                  (1.0, rc.ZeroTangent())])
def test_slogdet_zero_logabsdet_cotangent(ybar: Any) -> None:
    _, back = rc.rrule(LA.slogdet, A3)
    _, abar = back(ybar)
    assert isinstance(abar, rc.ZeroTangent)


def test_slogdet_complex_sign_cotangent() -> None:
    a = A3 + 1j * np.array([[0.5, -1.0, 0.0], [0.3, 0.2, 1.0], [1.0, 0.0, -0.4]])
    sbar = 0.3 - 0.7j
    ybar = rc.Tangent[type(LA.slogdet(a))](sign=sbar)
    rct.test_rrule(LA.slogdet, a, output_tangent=ybar)


# --------------------------------------------------------------------------------------------
# triangle convention (eigh, eigvalsh, cholesky): the cotangent lives on the triangle NumPy reads
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("f, kw, lower", [
    (LA.eigvalsh, {}, True), (LA.eigvalsh, {"UPLO": "U"}, False),
    (LA.cholesky, {}, True), (LA.cholesky, {"upper": True}, False),
])
def test_cotangent_on_the_read_triangle(f: Any, kw: dict[str, Any], lower: bool) -> None:
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    y, back = rc.rrule(f, a, **kw)
    ybar = np.random.default_rng(0).standard_normal(np.shape(y))
    _, abar = back(ybar)
    unread = np.triu(abar, 1) if lower else np.tril(abar, -1)
    assert np.all(unread == 0)
    # along a symmetric perturbation it agrees with the symmetric (ChainRules) convention
    d = np.random.default_rng(1).standard_normal((3, 3))
    d = d + d.T
    h = 1e-6
    fd = (f(a + h * d, **kw) - f(a - h * d, **kw)) / (2 * h)
    np.testing.assert_allclose(np.sum(abar * d), np.sum(ybar * fd), rtol=1e-6)


def test_pinv_hermitian_of_a_matrix_not_symmetric_differentiates_what_numpy_computes() -> None:
    """``pinv(a, hermitian=True)`` inverts the Hermitian matrix of ``a``'s lower triangle: its
    gradient and tangent are those of that function, whatever ``a``'s upper triangle holds."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)  # not symmetric
    ybar, d = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    fd = (LA.pinv(a + 1e-6 * d, hermitian=True) - LA.pinv(a - 1e-6 * d, hermitian=True)) / 2e-6
    _, abar = rc.rrule(LA.pinv, a, hermitian=True)[1](ybar)
    np.testing.assert_allclose(np.sum(abar * d), np.sum(ybar * fd), rtol=1e-6)
    np.testing.assert_allclose(rc.frule((None, d), LA.pinv, a, hermitian=True)[1], fd, rtol=1e-6, atol=1e-8)


# --------------------------------------------------------------------------------------------
# complex SVD / eigh: gauge-invariant losses
# --------------------------------------------------------------------------------------------


def _fd_grad(loss: Any, a: np.ndarray, d: np.ndarray, h: float = 1e-6) -> float:
    return float((loss(a + h * d) - loss(a - h * d)) / (2 * h))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_complex_svd_gauge_invariant_loss(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    k = min(shape)
    w1 = rng.standard_normal((shape[0], k))
    w2 = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    w3 = rng.standard_normal((k, shape[1]))

    def loss(x: np.ndarray) -> float:
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        # |U|^2, U diag(s^2) Vh and |Vh|^2 do not depend on the phases of the singular vectors
        return float(np.sum(w1 * np.abs(u) ** 2) + np.real(np.sum(w2 * ((u * s**2) @ vh)))
                     + np.sum(w3 * np.abs(vh) ** 2))

    u, s, vh = np.linalg.svd(a, full_matrices=False)
    m = np.conj(w2)  # cotangent of M = U diag(s^2) Vh for Re sum(W2 * M)
    ubar = 2 * w1 * u + m @ vh.conj().T * s**2
    vhbar = 2 * w3 * vh + (u * s**2).conj().T @ m
    sbar = 2 * s * np.real(np.sum(np.conj(u) * (m @ vh.conj().T), axis=0))
    y, back = rc.rrule(LA.svd, a, full_matrices=False)
    _, abar = back(rc.Tangent[type(y)](U=ubar, S=sbar, Vh=vhbar))
    for seed in range(3):
        gen = np.random.default_rng(seed)
        d = gen.standard_normal(shape) + 1j * gen.standard_normal(shape)
        expected = _fd_grad(loss, a, d)
        np.testing.assert_allclose(np.real(np.sum(np.conj(abar) * d)), expected, rtol=1e-6, atol=1e-8)


def test_eigh_gauge_invariant_loss() -> None:
    rng = np.random.default_rng(4)
    q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    a = (q * np.array([-1.0, 0.5, 2.0])) @ q.T
    w = rng.standard_normal((3, 3))

    def loss(x: np.ndarray) -> float:
        lam, v = np.linalg.eigh(x)
        return float(np.sum(w * v**2) + np.sum(lam**3))

    lam, v = np.linalg.eigh(a)
    y, back = rc.rrule(LA.eigh, a)
    _, abar = back(rc.Tangent[type(y)](eigenvalues=3 * lam**2, eigenvectors=2 * w * v))
    d = rng.standard_normal((3, 3))
    np.testing.assert_allclose(np.sum(abar * d), _fd_grad(loss, a, d), rtol=1e-6)


# --------------------------------------------------------------------------------------------
# unsupported modes say so
# --------------------------------------------------------------------------------------------


def test_unsupported_modes_raise() -> None:
    a = np.arange(6.0).reshape(3, 2)
    with pytest.raises(NotImplementedError, match="full_matrices"):
        rc.frule((rc.NoTangent(), a), LA.svd, a)
    with pytest.raises(NotImplementedError, match="mode"):
        rc.rrule(LA.qr, a, mode="complete")
    with pytest.raises(NotImplementedError, match="mode"):
        rc.frule((rc.NoTangent(), a, rc.NoTangent()), LA.qr, a, "raw")


@pytest.mark.parametrize("shape", [(4, 2), (2, 5)])
def test_full_svd_differentiates_through_the_first_vectors(shape: tuple[int, int]) -> None:
    """NumPy's default ``full_matrices=True``: a loss of the singular values and the first
    ``min(m, n)`` singular vectors gets the thin SVD's gradient (checked by finite differences);
    one reading the extra vectors, which are not unique, is refused."""
    a = np.random.default_rng(3).normal(size=shape)
    k = min(shape)
    w_u = np.random.default_rng(4).normal(size=(shape[0], k))
    w_v = np.random.default_rng(5).normal(size=(k, shape[1]))

    def loss(x: np.ndarray) -> float:
        u, s, vh = LA.svd(x)
        singular = np.sum(s ** 2 * np.arange(1, k + 1))
        return float(singular + np.sum((u[:, :k] * w_u) ** 2) + np.sum((vh[:k] * w_v) ** 2))

    u, s, vh = LA.svd(a)
    tangent = rc.Tangent[type(LA.svd(a))]
    ubar = np.zeros_like(u)
    ubar[:, :k] = 2 * u[:, :k] * w_u ** 2
    vhbar = np.zeros_like(vh)
    vhbar[:k] = 2 * vh[:k] * w_v ** 2
    _, back = rc.rrule(LA.svd, a)
    abar = back(tangent(U=ubar, S=2 * s * np.arange(1, k + 1), Vh=vhbar))[1]
    d = np.random.default_rng(6).normal(size=shape)
    np.testing.assert_allclose(np.sum(abar * d), _fd_grad(loss, a, d), rtol=1e-5)
    extra = np.zeros_like(u) if shape[0] > shape[1] else np.zeros_like(vh)
    extra[(..., -1) if shape[0] > shape[1] else (-1, ...)] = 1.0
    bad = tangent(U=extra) if shape[0] > shape[1] else tangent(Vh=extra)
    with pytest.raises(NotImplementedError, match="not unique"):
        back(bad)


def test_square_svd_with_full_matrices_is_fine() -> None:
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    y, back = rc.rrule(LA.svd, a)
    assert isinstance(back(rc.Tangent[type(y)](S=np.ones(2)))[1], np.ndarray)


# --------------------------------------------------------------------------------------------
# second derivatives: the pullbacks differentiate again (through zygotepy)
# --------------------------------------------------------------------------------------------

_A = np.array([[3.0, 1.0, 0.5], [0.2, -2.5, 1.0], [0.1, 0.3, 4.0]])
_Q = np.linalg.qr(np.random.default_rng(7).standard_normal((3, 3)))[0]
_SYM = (_Q * np.array([-1.0, 0.5, 2.0])) @ _Q.T
_R = np.random.default_rng(8).standard_normal((4, 3))
_W = np.random.default_rng(9).standard_normal((3, 3))
_B = np.array([1.0, -2.0, 0.5])
_B4 = np.array([1.0, -2.0, 0.5, 0.3])


def _h_inv(a: Any) -> Any:
    return np.sum(LA.inv(a) * _W)


def _h_det(a: Any) -> Any:
    return np.sum(LA.det(np.stack([a, 2 * a])) ** 2)


def _h_slogdet(a: Any) -> Any:
    return LA.slogdet(a)[1]


def _h_solve(a: Any) -> Any:
    return np.sum(LA.solve(a, _B) ** 2)


def _h_matrix_power(a: Any) -> Any:
    return np.sum(LA.matrix_power(a, -2) * _W)


def _h_cholesky(a: Any) -> Any:
    return np.sum(LA.cholesky(a @ a.T) * _W)


def _h_qr(a: Any) -> Any:
    q, r = LA.qr(a)
    return np.sum(r * r) + np.sum(q[:, :2] * a[:, :2])


def _h_svd(a: Any) -> Any:
    u, s, vh = LA.svd(a, full_matrices=False)
    return np.sum(s**3) + np.sum((u * s) @ vh * a)


def _h_eigh(a: Any) -> Any:
    w, v = LA.eigh(a)
    return np.sum(w**3) + np.sum(v * v * _W)


def _h_eig(a: Any) -> Any:
    w, v = LA.eig(a)
    return np.sum(w**3) + np.sum(v * v * _W)


def _h_pinv(a: Any) -> Any:
    return np.sum(LA.pinv(a) ** 2)


def _h_lstsq(a: Any) -> Any:
    return np.sum(LA.lstsq(a, _B4)[0] ** 2)


def _h_norms(a: Any) -> Any:
    return (np.sum(LA.norm(a, axis=0, keepdims=True) ** 3) + np.sum(LA.norm(a, 3, 1, True) ** 2)
            + np.sum(LA.matrix_norm(np.stack([a, a.T]), ord="nuc") ** 2)
            + np.sum(LA.matrix_norm(np.stack([a, a.T]), ord=2) ** 2))


def _h_cond(a: Any) -> Any:
    return np.sum(LA.cond(np.stack([a, a.T])) ** 2)


def _h_products(a: Any) -> Any:
    return (np.sum(LA.multi_dot([a, a, a]) * _W) + np.sum(LA.tensordot(a, a, axes=([0], [1])) ** 2)
            + np.sum(LA.cross(a, a[::-1]) ** 2) + LA.trace(a @ a) + np.sum(LA.diagonal(a @ a) ** 2))


SECOND_ORDER = [
    (_h_inv, _A), (_h_det, _A), (_h_slogdet, _A), (_h_solve, _A), (_h_matrix_power, _A),
    (_h_cholesky, _A), (_h_qr, _R), (_h_svd, _R), (_h_eigh, _SYM), (_h_eig, _SYM + 0.3 * np.triu(_W, 1)),
    (_h_pinv, _R), (_h_lstsq, _R), (_h_norms, _A), (_h_cond, _A), (_h_products, _A),
]


@pytest.mark.parametrize("f, x", SECOND_ORDER, ids=lambda v: getattr(v, "__name__", "x")[3:])
def test_second_derivatives(f: Any, x: np.ndarray) -> None:
    zp = pytest.importorskip("zygotepy")
    v = np.random.default_rng(0).standard_normal(x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", getattr(zp, "ZygoteWarning", Warning))

        def grad(y: Any) -> Any:
            return zp.gradient(f, y)[0]

        def directional(y: Any) -> Any:
            return np.sum(grad(y) * v)

        hv = zp.gradient(directional, x)[0]
        h = 1e-5
        fd = (grad(x + h * v) - grad(x - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-6 * (1 + np.max(np.abs(fd))))
