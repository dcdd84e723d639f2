"""Rules for ``scipy.linalg`` (registered when SciPy imports ``scipy.linalg``, see
:mod:`rulescore.rules._optional`), for real matrices: ``expm`` and ``expm_frechet`` (through
Frechet derivatives of block matrices), ``eigh`` (the standard problem, with ``eigvals_only``,
``subset_by_index`` and ``subset_by_value``), ``inv``, ``det``, ``solve`` (``assume_a``:
general, symmetric/positive definite, triangular, diagonal), ``solve_triangular``, ``cholesky``
(``lower=``, ``check_finite=``), ``cho_factor``/``cho_solve``, ``lu_factor``/``lu_solve``,
``sqrtm``, ``logm``,
``solve_sylvester``, ``solve_continuous_lyapunov`` and ``block_diag``.

``eigh``'s derivatives need every eigenpair: a subset's rule computes the full decomposition of
the matrix it reads (with the selected eigenvectors as SciPy returned them, their signs).

Where SciPy reads only part of a matrix (one triangle for ``assume_a="sym"``/``"pos"`` and in
``solve_triangular``, the diagonal for ``assume_a="diagonal"``; not the diagonal with
``unit_diagonal=True``) the cotangent is the derivative in the entries it reads: zero elsewhere,
the symmetric gradient folded onto the triangle it reads. Complex matrices raise ``TypeError``
(these rules are not written for them yet) rather than give a wrong gradient.

Example:
    >>> import numpy as np, rulescore as rc, scipy.linalg as sl
    >>> a = np.array([[2.0, 1.0], [0.5, 3.0]])
    >>> y, back = rc.rrule(sl.det, a)
    >>> bool(np.allclose(back(1.0)[1], y * np.linalg.inv(a).T))
    True
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import numpy as np
import scipy.linalg as sl

from rulescore import RulePair
from rulescore._checks import callable_name
from rulescore._config import HasForwardsMode, HasReverseMode, RuleConfig, frule_via_ad, rrule_via_ad
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._tangent import tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules import linalg
from rulescore.rules._common import bind_arguments, entries, proj
from rulescore.rules.linalg import _eigh_grad, _entry, _fold, _given, _unfold


def _real(f: Any, *arrays: Any) -> None:
    for a in arrays:
        if np.iscomplexobj(a):
            raise TypeError(f"the rules for {callable_name(f)} handle real matrices only; "
                            "differentiate a real formulation (real and imaginary parts)")


def _t(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


# -- expm, logm, sqrtm: through their Frechet derivatives -------------------------------------

def expm_rrule(a: Any) -> Any:
    _real(sl.expm, a)
    y = sl.expm(a)

    def expm_pullback(ybar: Any) -> Any:
        return NoTangent(), project(a, sl.expm_frechet(_t(a), ybar, compute_expm=False))

    return y, expm_pullback


def expm_frule(tangents: Any, a: Any) -> Any:
    _real(sl.expm, a)
    y, ydot = sl.expm_frechet(a, tangents[1])
    return y, project(y, ydot)


def _logm_frechet(a: Any, e: Any) -> Any:
    """The Frechet derivative of ``logm`` at ``a`` in direction ``e``: the upper right block of
    ``logm([[a, e], [0, a]])``."""
    n = a.shape[-1]
    block = np.block([[a, e], [np.zeros_like(a), a]])
    return np.real_if_close(sl.logm(block))[:n, n:]


def logm_rrule(a: Any) -> Any:
    _real(sl.logm, a)
    y = sl.logm(a)

    def logm_pullback(ybar: Any) -> Any:
        return NoTangent(), project(a, _logm_frechet(_t(a), np.asarray(ybar, dtype=float)))

    return y, logm_pullback


def logm_frule(tangents: Any, a: Any) -> Any:
    _real(sl.logm, a)
    y = sl.logm(a)
    return y, project(y, _logm_frechet(a, np.asarray(tangents[1], dtype=float)))


def sqrtm_rrule(a: Any) -> Any:
    _real(sl.sqrtm, a)
    y = sl.sqrtm(a)

    def sqrtm_pullback(ybar: Any) -> Any:
        # y dy + dy y = da, so abar solves y^T m + m y^T = ybar
        return NoTangent(), project(a, sl.solve_sylvester(_t(y), _t(y), ybar))

    return y, sqrtm_pullback


def sqrtm_frule(tangents: Any, a: Any) -> Any:
    _real(sl.sqrtm, a)
    y = sl.sqrtm(a)
    return y, project(y, sl.solve_sylvester(y, y, tangents[1]))


def _blocks2(a: Any, e: Any) -> Any:
    """``[[a, e], [0, a]]`` (for a stack, each): its exponential holds ``expm(a)`` and
    ``expm_frechet(a, e)``."""
    a, e = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(e, dtype=float))
    return np.concatenate([np.concatenate([a, e], axis=-1),
                           np.concatenate([np.zeros_like(a), a], axis=-1)], axis=-2)


def _expm_frechet_options(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return bool(bind_arguments(sl.expm_frechet, (None, None, *args), kwargs)["compute_expm"])


def expm_frechet_rrule(a: Any, e: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.expm_frechet, a, e)
    both = _expm_frechet_options(args, kwargs)
    out = sl.expm_frechet(a, e, *args, **kwargs)
    n = np.shape(a)[-1]

    def expm_frechet_pullback(ybar: Any) -> Any:
        # the result is the top row of expm(m), m = [[a, e], [0, a]]: pull back through expm(m)
        expm_bar, l_bar = entries(ybar, 2) if both else (ZeroTangent(), ybar)
        m = _blocks2(a, e)
        zero = np.zeros(m.shape[:-2] + (n, n))
        top = np.concatenate([expm_bar + zero, l_bar + zero], axis=-1)  # a zero part adds nothing
        mbar_full = np.concatenate([top, np.zeros_like(top)], axis=-2)
        mbar = sl.expm_frechet(_t(m), mbar_full, compute_expm=False)
        return (NoTangent(), project(a, mbar[..., :n, :n] + mbar[..., n:, n:]),
                project(e, mbar[..., :n, n:]), *(NoTangent() for _ in args))

    return out, expm_frechet_pullback


def expm_frechet_frule(tangents: Any, a: Any, e: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.expm_frechet, a, e)
    both = _expm_frechet_options(args, kwargs)
    out = sl.expm_frechet(a, e, *args, **kwargs)
    n = np.shape(a)[-1]
    m = _blocks2(a, e)
    adot, edot = dense_tangent(a, tangents[1]), dense_tangent(e, tangents[2])
    mdot = sl.expm_frechet(m, _blocks2(adot, edot) + np.zeros_like(m), compute_expm=False)
    if not both:
        return out, project(out, mdot[..., :n, n:])
    # a tuple, or a list for a stack of matrices
    return out, tangent_type(type(out))(project(out[0], mdot[..., :n, :n]),
                                        project(out[1], mdot[..., :n, n:]))


# -- eigh, with subsets ---------------------------------------------------------------------------

class _Eigh:
    """An ``eigh`` call of a real symmetric matrix (one triangle read) and where its selected
    eigenpairs sit in the full decomposition, whose other columns the derivatives need."""

    def __init__(self, a: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        _real(sl.eigh, a)
        if np.ndim(a) != 2:
            raise NotImplementedError("the rule for scipy.linalg.eigh takes one matrix; for a stack, "
                                      "use numpy.linalg.eigh (its rule takes stacks) or one call per matrix")
        options = bind_arguments(sl.eigh, (a, *args), kwargs)
        if options["b"] is not None:
            raise NotImplementedError("the rule for scipy.linalg.eigh covers the standard problem "
                                      "only (b=None); for a generalised one, eigh a transformed "
                                      "matrix (solve_triangular with cholesky(b))")
        self.lower, self.only = bool(options["lower"]), bool(options["eigvals_only"])
        self.out = sl.eigh(a, *args, **kwargs)
        self.full_w, full_v = np.linalg.eigh(_unfold(np.asarray(a, dtype=float), self.lower))
        w = self.out if self.only else self.out[0]
        # the selected eigenvalues are consecutive in the sorted order: find the first one
        self.start = int(np.argmin(np.abs(self.full_w - w[0]))) if len(w) else 0
        self.index = np.arange(self.start, self.start + len(w))
        self.full_v = full_v if self.only else self._with_columns(full_v, self.out[1])

    def _with_columns(self, full: Any, selected: Any) -> Any:
        """The full eigenvectors with the selected ones as the caller got them (their signs)."""
        v = np.array(full)
        v[:, self.index] = selected
        return v

    def spread(self, part: Any, shape: tuple[int, ...]) -> Any:
        """A cotangent of the selected eigenvalues (eigenvectors), zero for the others (a zero
        stays a zero)."""
        if not _given(part):
            return part
        full = np.zeros(shape)
        end = self.start + len(self.index)
        return np.concatenate([full[..., :self.start], part, full[..., end:]], axis=-1)

    def cotangent(self, ybar: Any) -> Any:
        n = self.full_w.shape[-1]
        wbar = ybar if self.only else _entry(ybar, 0)
        vbar = ZeroTangent() if self.only else _entry(ybar, 1)
        g = _eigh_grad(self.full_w, self.full_v, self.spread(wbar, (n,)), self.spread(vbar, (n, n)))
        return _fold(g, self.lower)

    def tangent(self, adot: Any) -> Any:
        v, w, i = self.full_v, self.full_w, self.index
        mm = _t(v) @ _unfold(np.asarray(adot, dtype=float), self.lower) @ v[:, i]
        gaps = w[i][None, :] - w[:, None]
        f = np.where(np.arange(len(w))[:, None] == i[None, :], 0.0, 1.0 / np.where(gaps == 0, 1.0, gaps))
        wdot = np.diagonal(mm[i, :]).copy()
        if self.only:
            return project(self.out, wdot)
        return tangent_type(tuple)(project(self.out[0], wdot), project(self.out[1], v @ (f * mm)))


def eigh_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Eigh(a, args, kwargs)

    def eigh_pullback(ybar: Any) -> Any:
        return NoTangent(), project(a, call.cotangent(ybar)), *(NoTangent() for _ in args)

    return call.out, eigh_pullback


def eigh_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    call = _Eigh(a, args, kwargs)
    return call.out, call.tangent(tangents[1])


# -- inv, det ------------------------------------------------------------------------------------

def inv_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.inv, a)
    y = sl.inv(a, *args, **kwargs)

    def inv_pullback(ybar: Any) -> Any:
        return NoTangent(), project(a, -_t(y) @ ybar @ _t(y)), *(NoTangent() for _ in args)

    return y, inv_pullback


def inv_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.inv, a)
    y = sl.inv(a, *args, **kwargs)
    return y, project(y, -y @ tangents[1] @ y)


def det_rrule(a: Any, *args: Any) -> Any:
    _real(sl.det, a)
    y = sl.det(a)

    def det_pullback(ybar: Any) -> Any:
        scale = np.asarray(ybar * y)[..., None, None]
        return NoTangent(), project(a, scale * _t(np.linalg.inv(a))), *(NoTangent() for _ in args)

    return y, det_pullback


def det_frule(tangents: Any, a: Any, *args: Any) -> Any:
    _real(sl.det, a)
    y = sl.det(a)
    trace = np.trace(np.linalg.solve(a, tangents[1]), axis1=-2, axis2=-1)
    return y, project(y, y * trace)


# -- solve, solve_triangular -------------------------------------------------------------------

_SOLVE_NAMES = ("a", "b", "lower", "overwrite_a", "overwrite_b", "check_finite", "assume_a", "transposed")
_SYMMETRIC = ("sym", "her", "pos", "symmetric", "hermitian", "positive definite")
_GENERAL = (None, "gen", "general", "banded", "tridiagonal")


def _read_part(g: Any, assume_a: Any, lower: bool) -> Any:
    """``g``, a gradient in every entry of ``a``, as the gradient in the entries ``solve`` reads."""
    if assume_a in _GENERAL:
        return g
    if assume_a in _SYMMETRIC:
        folded = g + _t(g) - np.eye(g.shape[-1]) * g
        return np.tril(folded) if lower else np.triu(folded)
    if assume_a in ("lower triangular", "upper triangular"):
        return np.tril(g) if assume_a == "lower triangular" else np.triu(g)
    if assume_a == "diagonal":
        return np.eye(g.shape[-1]) * g
    raise ValueError(f"the rule for scipy.linalg.solve does not know assume_a={assume_a!r}")


def _solve_options(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    options = dict(zip(_SOLVE_NAMES[2:], args, strict=False))
    options.update(kwargs)
    return options


def _as_matrix(v: Any) -> Any:
    return v[:, None] if np.ndim(v) == 1 else v


def _solve_parts(a: Any, b: Any, options: dict[str, Any]) -> tuple[Any, Any, bool]:
    if options.get("transposed"):
        raise ValueError("the rule for scipy.linalg.solve does not take transposed=True; "
                         "solve with a.T instead")
    return options.get("assume_a"), sl.solve(a, b, **options), bool(options.get("lower", False))


def _effective(a: Any, assume_a: Any, lower: bool) -> Any:
    """The matrix ``solve`` solves with: the read part made whole (symmetric from a triangle)."""
    if assume_a in _SYMMETRIC:
        tri = np.tril(a) if lower else np.triu(a)
        return tri + _t(tri) - np.eye(a.shape[-1]) * a
    return _read_part(a, assume_a, lower)  # a itself, or its read triangle or diagonal


def solve_rrule(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.solve, a, b)
    options = _solve_options(args, kwargs)
    assume_a, x, lower = _solve_parts(a, b, options)
    full = _effective(a, assume_a, lower)

    def solve_pullback(ybar: Any) -> Any:
        m = np.linalg.solve(_t(full), _as_matrix(ybar))
        abar = _read_part(-m @ _t(_as_matrix(x)), assume_a, lower)
        return (NoTangent(), project(a, abar), project(b, np.reshape(m, np.shape(b))),
                *(NoTangent() for _ in args))

    return x, solve_pullback


def solve_frule(tangents: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.solve, a, b)
    options = _solve_options(args, kwargs)
    assume_a, x, lower = _solve_parts(a, b, options)
    full = _effective(a, assume_a, lower)
    adot = np.asarray(dense_tangent(a, tangents[1]), dtype=float)
    rhs = _as_matrix(dense_tangent(b, tangents[2])) - _effective(adot, assume_a, lower) @ _as_matrix(x)
    return x, project(x, np.reshape(np.linalg.solve(full, rhs), np.shape(x)))


_TRIANGULAR_NAMES = ("trans", "lower", "unit_diagonal", "overwrite_b", "check_finite")
_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 1, "C": 1}  # real matrices: "C" is "T"


def _triangle(g: Any, lower: bool, unit_diagonal: bool) -> Any:
    """The part of ``g`` in the entries ``solve_triangular`` reads."""
    part = np.tril(g) if lower else np.triu(g)
    return part - np.eye(g.shape[-1]) * part if unit_diagonal else part


def _triangular_options(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, bool, bool]:
    options = dict(zip(_TRIANGULAR_NAMES, args, strict=False))
    options.update(kwargs)
    return (_TRANS[options.get("trans", 0)], bool(options.get("lower", False)),
            bool(options.get("unit_diagonal", False)))


def _triangular_matrix(a: Any, trans: int, lower: bool, unit_diagonal: bool) -> Any:
    """``op(a)`` as ``solve_triangular`` uses it (the read triangle, unit diagonal if asked)."""
    tri = _triangle(a, lower, unit_diagonal) + (np.eye(a.shape[-1]) if unit_diagonal else 0)
    return _t(tri) if trans else tri


def solve_triangular_rrule(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.solve_triangular, a, b)
    trans, lower, unit = _triangular_options(args, kwargs)
    x = sl.solve_triangular(a, b, *args, **kwargs)

    def solve_triangular_pullback(ybar: Any) -> Any:
        # op(a) x = b: bbar solves op(a)^T m = ybar, op(a)bar = -m x^T
        m = sl.solve_triangular(a, ybar, trans=1 - trans, lower=lower, unit_diagonal=unit)
        opbar = -_as_matrix(m) @ _t(_as_matrix(x))
        abar = _triangle(_t(opbar) if trans else opbar, lower, unit)
        return NoTangent(), project(a, abar), project(b, m), *(NoTangent() for _ in args)

    return x, solve_triangular_pullback


def solve_triangular_frule(tangents: Any, a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.solve_triangular, a, b)
    trans, lower, unit = _triangular_options(args, kwargs)
    x = sl.solve_triangular(a, b, *args, **kwargs)
    adot = _triangle(np.asarray(dense_tangent(a, tangents[1]), dtype=float), lower, unit)
    rhs = _as_matrix(dense_tangent(b, tangents[2])) - (_t(adot) if trans else adot) @ _as_matrix(x)
    xdot = np.linalg.solve(_triangular_matrix(a, trans, lower, unit), rhs)
    return x, project(x, np.reshape(xdot, np.shape(x)))


# -- cholesky, cho_factor, cho_solve ----------------------------------------------------------

def _cholesky_upper(a: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``scipy.linalg.cholesky`` returns (and LAPACK reads) the upper triangle."""
    _real(sl.cholesky, a)
    return not bool(bind_arguments(sl.cholesky, (a, *args), kwargs)["lower"])


def _triangular_sandwich(low: Any, m: Any) -> Any:
    """``L^-T m L^-1`` for a lower-triangular ``L`` (a stack: each), by triangular solves."""
    if np.ndim(low) > 2:
        return np.stack([_triangular_sandwich(f, x) for f, x in zip(low, m, strict=True)])
    left = sl.solve_triangular(low, m, trans="T", lower=True, check_finite=False)
    return _t(sl.solve_triangular(low, _t(left), trans="T", lower=True, check_finite=False))


def _inverse_sandwich(low: Any, m: Any) -> Any:
    """``L^-1 m L^-T`` for a lower-triangular ``L`` (a stack: each)."""
    if np.ndim(low) > 2:
        return np.stack([_inverse_sandwich(f, x) for f, x in zip(low, m, strict=True)])
    left = sl.solve_triangular(low, m, lower=True)
    return _t(sl.solve_triangular(low, _t(left), lower=True))


@functools.lru_cache(maxsize=8)
def _lower_weights(n: int, dtype: Any) -> Any:
    """``(n, n)``: 1 below the diagonal, 1/2 on it, 0 above (read-only; a few kept)."""
    weights = (np.tri(n) - 0.5 * np.eye(n)).astype(dtype)
    weights.flags.writeable = False
    return weights


@functools.lru_cache(maxsize=8)
def _lower_ones(n: int, dtype: Any) -> Any:
    """``(n, n)``: 1 on and below the diagonal, 0 above (read-only; a few kept)."""
    ones = np.tri(n, dtype=dtype)
    ones.flags.writeable = False
    return ones


def _plain_matrices(*arrays: Any) -> bool:
    """NumPy matrices (2-D) of one real floating dtype LAPACK computes in: the fast paths' case
    (anything else, traced values of an outer derivative included, takes the general path)."""
    dtype = arrays[0].dtype if type(arrays[0]) is np.ndarray else None
    return (dtype == np.float64 or dtype == np.float32) and all(
        type(a) is np.ndarray and a.ndim == 2 and a.dtype == dtype for a in arrays)


def _cholesky_cotangent_formula(low: Any, lbar: Any) -> Any:
    """The cotangent of the triangle ``cholesky`` reads, as the lower triangle, from the factor
    ``L`` and its cotangent ``Lbar``: ``numpy.linalg.cholesky``'s ``L^-T Phi(L^T Lbar) L^-1``
    (``Phi``: the lower triangle, diagonal halved) folded, by triangular solves."""
    return _fold(_triangular_sandwich(low, linalg._phi(_t(low) @ lbar)), lower=True)


def _cholesky_cotangent(low: Any, lbar: Any) -> Any:
    """:func:`_cholesky_cotangent_formula`, computed for plain matrices as ``W``'s lower triangle
    with the diagonal halved, ``W = L^-T (Phi + Phi^T) L^-1`` the symmetric matrix whose lower
    triangle is ``L^T Lbar``'s: one product and LAPACK's ``sygst`` (about the cost of one
    triangular solve of a matrix, where the formula takes two), on the matrices flipped in both
    axes, since ``sygst`` forms ``U^-T M U^-1`` for an upper-triangular ``U`` (``U = J L J``,
    ``J`` the flip: ``J W J = U^-T (J M J) U^-1``). Its rules are the formula's (an outer
    derivative differentiates the formula, through the engine running it)."""
    if _plain_matrices(low, lbar):
        sygst = sl.get_lapack_funcs("sygst", (low,))
        p = low.T @ lbar
        w, info = sygst(p[::-1, ::-1], low[::-1, ::-1], itype=1, lower=0, overwrite_a=1)
        if info == 0:
            return w[::-1, ::-1] * _lower_weights(low.shape[0], low.dtype)  # the upper part of w is not set
    return _cholesky_cotangent_formula(low, lbar)


def cholesky_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    """The factor is SciPy's; the pullback is ``numpy.linalg.cholesky``'s (``L^-T Phi(L^T Lbar)
    L^-1`` folded onto the triangle LAPACK read), see :func:`_cholesky_cotangent`."""
    upper = _cholesky_upper(a, args, kwargs)
    c = sl.cholesky(a, *args, **kwargs)
    low = _t(c) if upper else c

    def cholesky_pullback(cbar: Any) -> Any:
        g = _cholesky_cotangent(low, _t(cbar) if upper else cbar)
        return NoTangent(), project(a, _t(g) if upper else g), *(NoTangent() for _ in args)

    return c, cholesky_pullback


def cholesky_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    upper = _cholesky_upper(a, args, kwargs)
    c = sl.cholesky(a, *args, **kwargs)
    low = _t(c) if upper else c
    symmetric = _unfold(np.asarray(dense_tangent(a, tangents[1]), dtype=float), lower=not upper)
    ldot = low @ linalg._phi(_inverse_sandwich(low, symmetric))
    return c, project(c, _t(ldot) if upper else ldot)


def _lower_factor(c: Any, lower: bool) -> Any:
    """``L`` with ``A = L L^T`` from ``cho_factor``'s packed result."""
    return np.tril(c) if lower else np.triu(c).T


def _packed(m: Any, lower: bool) -> Any:
    """A lower-triangular ``m`` (a factor or its cotangent) in ``cho_factor``'s layout."""
    return np.tril(m) if lower else np.triu(m.T)


def _phi(m: Any) -> Any:
    return np.tril(m) - np.diag(np.diag(m)) / 2


def cho_factor_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.cho_factor, a)
    c, lower = out = sl.cho_factor(a, *args, **kwargs)
    factor = _lower_factor(c, lower)
    inverse = sl.solve_triangular(factor, np.eye(factor.shape[0]), lower=True)

    def cho_factor_pullback(ybar: Any) -> Any:
        cbar = np.asarray(dense_tangent(c, entries(ybar, 2)[0]), dtype=float)
        read = _packed(_lower_factor(cbar, lower), lower)
        s = inverse.T @ _phi(factor.T @ _lower_factor(cbar, lower)) @ inverse
        sym = (s + s.T) / 2
        folded = _packed(np.tril(2 * sym) - np.diag(np.diag(sym)), lower)  # the triangle a is read in
        return NoTangent(), project(a, folded + (cbar - read)), *(NoTangent() for _ in args)

    return out, cho_factor_pullback


def cho_factor_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.cho_factor, a)
    c, lower = out = sl.cho_factor(a, *args, **kwargs)
    factor = _lower_factor(c, lower)
    adot = np.asarray(tangents[1], dtype=float)
    read = _packed(_lower_factor(adot, lower), lower)
    half = _lower_factor(adot, lower)
    sym = half + half.T - np.diag(np.diag(half))
    inverse = sl.solve_triangular(factor, np.eye(factor.shape[0]), lower=True)
    factor_dot = factor @ _phi(inverse @ sym @ inverse.T)
    cdot = _packed(factor_dot, lower) + (adot - read)
    return out, tangent_type(tuple)(cdot, NoTangent())


def _factor_cotangent_formula(c: Any, lower: bool, mm: Any, xm: Any) -> Any:
    """The cotangent of ``cho_solve``'s factor in its packed layout, for ``A = L L^T`` (``L`` in
    the triangle of ``c`` that ``lower`` names) and ``Abar = -m x^T``: ``(Abar + Abar^T) L``,
    which has rank ``2k`` (``b``'s ``k`` columns), as ``-(m (x^T L) + x (m^T L))``, without an
    ``n x n`` product."""
    factor = _lower_factor(c, lower)
    return _packed(-(mm @ (_t(xm) @ factor) + xm @ (_t(mm) @ factor)), lower)


def _factor_cotangent(c: Any, lower: bool, mm: Any, xm: Any) -> Any:
    """:func:`_factor_cotangent_formula`, computed for plain matrices with BLAS's ``trmm`` for
    ``L^T x`` (it reads the triangle of ``c`` in place: no copy of the factor), the outer
    products in place, the triangle by a kept mask. Its rules are the formula's."""
    if _plain_matrices(c, mm, xm):
        trmm = sl.get_blas_funcs("trmm", (c,))
        # c^T in Fortran order is c's transpose without a copy: L^T = c^T (lower) or c (upper)
        lt_x = trmm(1.0, c.T, xm, lower=not lower, trans_a=not lower)
        lt_m = trmm(1.0, c.T, mm, lower=not lower, trans_a=not lower)
        g = np.dot(mm, lt_x.T)  # np.dot: matmul of a column by a row (k = 1) skips BLAS
        g += np.dot(xm, lt_m.T)
        g *= _lower_ones(c.shape[0], g.dtype)
        np.negative(g, out=g)
        return g if lower else g.T
    return _factor_cotangent_formula(c, lower, mm, xm)


def _through_formula(formula: Any) -> tuple[Any, Any]:
    """The rrule and frule of a fast helper whose value is ``formula``'s: the engine that runs
    the rule differentiates ``formula`` (``rc.rrule_via_ad`` / ``rc.frule_via_ad``), so a
    derivative of a pullback using the helper (second order) is the formula's."""

    def through_formula_rrule(config: RuleConfig, *args: Any) -> Any:
        return rrule_via_ad(config, formula, *args)

    def through_formula_frule(config: RuleConfig, tangents: Any, *args: Any) -> Any:
        return frule_via_ad(config, tangents, formula, *args)

    return through_formula_rrule, through_formula_frule


def cho_solve_rrule(c_and_lower: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    c, lower = c_and_lower
    _real(sl.cho_solve, c, b)
    x = sl.cho_solve(c_and_lower, b, *args, **kwargs)

    def cho_solve_pullback(ybar: Any) -> Any:
        m = sl.cho_solve(c_and_lower, ybar, check_finite=False)
        cbar = _factor_cotangent(c, lower, _as_matrix(m), _as_matrix(x))
        return (NoTangent(), tangent_type(tuple)(project(c, cbar), NoTangent()), project(b, m),
                *(NoTangent() for _ in args))

    return x, cho_solve_pullback


def cho_solve_frule(tangents: Any, c_and_lower: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    c, lower = c_and_lower
    _real(sl.cho_solve, c, b)
    x = sl.cho_solve(c_and_lower, b, *args, **kwargs)
    factor = _lower_factor(c, lower)
    factor_dot = _lower_factor(np.asarray(dense_tangent(c, entries(tangents[1], 2)[0]), dtype=float), lower)
    rhs = (_as_matrix(dense_tangent(b, tangents[2]))
           - (factor_dot @ factor.T + factor @ factor_dot.T) @ _as_matrix(x))
    return x, project(x, np.reshape(sl.cho_solve(c_and_lower, rhs), np.shape(x)))


# -- lu_factor, lu_solve -----------------------------------------------------------------------

def _permutation(piv: Any) -> Any:
    """``perm`` with ``a[perm] = L U``, from LAPACK's row interchanges."""
    perm = np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _unpack_lu(lu: Any) -> tuple[Any, Any]:
    return np.tril(lu, -1) + np.eye(lu.shape[0]), np.triu(lu)


def _unpermute(m_perm: Any, perm: Any) -> Any:
    out = np.empty_like(m_perm)
    out[perm] = m_perm
    return out


def lu_factor_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.lu_factor, a)
    lu, piv = out = sl.lu_factor(a, *args, **kwargs)
    low, up = _unpack_lu(lu)

    def lu_factor_pullback(ybar: Any) -> Any:
        lubar = np.asarray(dense_tangent(lu, entries(ybar, 2)[0]), dtype=float)
        inner = np.tril(low.T @ np.tril(lubar, -1), -1) + np.triu(np.triu(lubar) @ up.T)
        abar_perm = sl.solve_triangular(low, sl.solve_triangular(up, inner.T, lower=False).T,
                                        lower=True, unit_diagonal=True, trans=1)
        return NoTangent(), project(a, _unpermute(abar_perm, _permutation(piv))), *(NoTangent() for _ in args)

    return out, lu_factor_pullback


def lu_factor_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.lu_factor, a)
    lu, piv = out = sl.lu_factor(a, *args, **kwargs)
    low, up = _unpack_lu(lu)
    adot = np.asarray(tangents[1], dtype=float)[_permutation(piv)]
    x = sl.solve_triangular(low, adot, lower=True, unit_diagonal=True)
    x = sl.solve_triangular(up, x.T, lower=False, trans=1).T  # L^-1 adot U^-1
    ludot = np.tril(low @ np.tril(x, -1), -1) + np.triu(np.triu(x) @ up)
    return out, tangent_type(tuple)(ludot, NoTangent())


def _lu_trans(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    trans = kwargs.get("trans", args[0] if args else 0)
    return _TRANS[trans]


def lu_solve_rrule(lu_and_piv: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    lu, piv = lu_and_piv
    _real(sl.lu_solve, lu, b)
    trans = _lu_trans(args, kwargs)
    x = sl.lu_solve(lu_and_piv, b, *args, **kwargs)
    low, up = _unpack_lu(lu)
    perm = _permutation(piv)

    def lu_solve_pullback(ybar: Any) -> Any:
        m = sl.lu_solve(lu_and_piv, ybar, trans=1 - trans)
        outer = -_as_matrix(m) @ _t(_as_matrix(x))
        abar_perm = (outer.T if trans else outer)[perm]
        lubar = np.tril(abar_perm @ up.T, -1) + np.triu(low.T @ abar_perm)
        return (NoTangent(), tangent_type(tuple)(project(lu, lubar), NoTangent()), project(b, m),
                *(NoTangent() for _ in args))

    return x, lu_solve_pullback


def lu_solve_frule(tangents: Any, lu_and_piv: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    lu, piv = lu_and_piv
    _real(sl.lu_solve, lu, b)
    trans = _lu_trans(args, kwargs)
    x = sl.lu_solve(lu_and_piv, b, *args, **kwargs)
    low, up = _unpack_lu(lu)
    ludot = np.asarray(dense_tangent(lu, entries(tangents[1], 2)[0]), dtype=float)
    adot = _unpermute(np.tril(ludot, -1) @ up + low @ np.triu(ludot), _permutation(piv))
    rhs = _as_matrix(dense_tangent(b, tangents[2])) - (adot.T if trans else adot) @ _as_matrix(x)
    return x, project(x, np.reshape(sl.lu_solve(lu_and_piv, rhs, trans=trans), np.shape(x)))


# -- Sylvester and Lyapunov equations -----------------------------------------------------------

def solve_sylvester_rrule(a: Any, b: Any, q: Any) -> Any:
    _real(sl.solve_sylvester, a, b, q)
    x = sl.solve_sylvester(a, b, q)

    def solve_sylvester_pullback(ybar: Any) -> Any:
        # a x + x b = q: qbar solves a^T m + m b^T = ybar; abar = -m x^T, bbar = -x^T m
        m = sl.solve_sylvester(_t(a), _t(b), ybar)
        return NoTangent(), project(a, -m @ _t(x)), project(b, -_t(x) @ m), project(q, m)

    return x, solve_sylvester_pullback


def solve_sylvester_frule(tangents: Any, a: Any, b: Any, q: Any) -> Any:
    _real(sl.solve_sylvester, a, b, q)
    x = sl.solve_sylvester(a, b, q)
    adot, bdot, qdot = tangents[1:]
    rhs = dense_tangent(q, qdot) - dense_tangent(a, adot) @ x - x @ dense_tangent(b, bdot)
    return x, project(x, sl.solve_sylvester(a, b, rhs))


def solve_continuous_lyapunov_rrule(a: Any, q: Any) -> Any:
    _real(sl.solve_continuous_lyapunov, a, q)
    x = sl.solve_continuous_lyapunov(a, q)

    def solve_continuous_lyapunov_pullback(ybar: Any) -> Any:
        # a x + x a^T = q: qbar solves a^T m + m a = ybar; abar = -m x^T - m^T x
        m = sl.solve_sylvester(_t(a), a, ybar)
        return NoTangent(), project(a, -m @ _t(x) - _t(m) @ x), project(q, m)

    return x, solve_continuous_lyapunov_pullback


def solve_continuous_lyapunov_frule(tangents: Any, a: Any, q: Any) -> Any:
    _real(sl.solve_continuous_lyapunov, a, q)
    x = sl.solve_continuous_lyapunov(a, q)
    adot, qdot = tangents[1:]
    adot = dense_tangent(a, adot)
    rhs = dense_tangent(q, qdot) - adot @ x - x @ _t(adot)
    return x, project(x, sl.solve_continuous_lyapunov(a, rhs))


# -- block_diag ----------------------------------------------------------------------------------

def _blocks(arrs: tuple[Any, ...]) -> list[tuple[int, int, tuple[int, ...]]]:
    """Per argument: its top-left corner in ``block_diag``'s result and its shape."""
    out, row, col = [], 0, 0
    for a in arrs:
        shape = np.shape(a)
        rows, cols = (1, 1) if len(shape) == 0 else ((1, shape[0]) if len(shape) == 1 else shape)
        out.append((row, col, shape))
        row, col = row + rows, col + cols
    return out


def _block_of(m: Any, corner: tuple[int, int, tuple[int, ...]]) -> Any:
    row, col, shape = corner
    rows, cols = (1, 1) if len(shape) == 0 else ((1, shape[0]) if len(shape) == 1 else shape)
    return np.reshape(m[row:row + rows, col:col + cols], shape)


def block_diag_rrule(*arrs: Any) -> Any:
    y = sl.block_diag(*arrs)
    corners = _blocks(arrs)

    def block_diag_pullback(ybar: Any) -> Any:
        return NoTangent(), *(proj(a, _block_of(ybar, c)) for a, c in zip(arrs, corners, strict=True))

    return y, block_diag_pullback


def block_diag_frule(tangents: Any, *arrs: Any) -> Any:
    y = sl.block_diag(*arrs)
    dots = [dense_tangent(a, t) for a, t in zip(arrs, tangents[1:], strict=True)]
    return y, project(y, sl.block_diag(*dots))


# -- solve_banded -------------------------------------------------------------------------------

def _band_positions(l_and_u: Any, n: int) -> tuple[Any, Any, Any]:
    """For the dense ``n x n`` matrix: the row of banded storage each entry sits in, and which
    entries lie in the band (``A[i, j] = ab[u + i - j, j]``)."""
    lower, upper = (int(v) for v in l_and_u)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    r = upper + i - j
    inside = (r >= 0) & (r <= lower + upper)
    return np.where(inside, r, 0), j, inside


def _band_to_dense(l_and_u: Any, ab: Any) -> Any:
    r, j, inside = _band_positions(l_and_u, np.shape(ab)[-1])
    return np.where(inside, ab[r, j], 0.0)


def _dense_to_band(l_and_u: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """The cotangent of ``ab`` from that of the dense matrix (entries outside the band, which
    LAPACK never reads, get zero)."""
    lower, upper = (int(v) for v in l_and_u)
    n = shape[-1]
    rows, cols = np.meshgrid(np.arange(lower + upper + 1), np.arange(n), indexing="ij")
    i = rows - upper + cols
    used = (i >= 0) & (i < n)
    return np.where(used, g[np.where(used, i, 0), cols], 0.0)


def solve_banded_rrule(l_and_u: Any, ab: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    """The dense adjoint (``bbar = A^-T xbar``, ``Abar = -bbar x^T``) read back into the band."""
    _real(sl.solve_banded, ab, b)
    x = sl.solve_banded(l_and_u, ab, b, *args, **kwargs)
    a = _band_to_dense(l_and_u, np.asarray(ab, dtype=float))

    def solve_banded_pullback(ybar: Any) -> Any:
        m = np.linalg.solve(_t(a), _as_matrix(ybar))
        abar = _dense_to_band(l_and_u, -m @ _t(_as_matrix(x)), np.shape(ab))
        return (NoTangent(), NoTangent(), project(ab, abar), project(b, np.reshape(m, np.shape(b))),
                *(NoTangent() for _ in args))

    return x, solve_banded_pullback


def solve_banded_frule(tangents: Any, l_and_u: Any, ab: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
    _real(sl.solve_banded, ab, b)
    x = sl.solve_banded(l_and_u, ab, b, *args, **kwargs)
    a = _band_to_dense(l_and_u, np.asarray(ab, dtype=float))
    abdot = np.asarray(dense_tangent(ab, tangents[2]), dtype=float)
    rhs = _as_matrix(dense_tangent(b, tangents[3])) - _band_to_dense(l_and_u, abdot) @ _as_matrix(x)
    return x, project(x, np.reshape(np.linalg.solve(a, rhs), np.shape(x)))


def _keeping_inputs(primal: Any, rrule: Any, frule: Any) -> tuple[Any, Any]:
    """``primal``'s rrule and frule calling SciPy with its ``overwrite_*`` options off: the rules
    read their arguments after the call, and so may an engine's other pullbacks."""
    names = inspect.signature(primal).parameters
    slots = [i for i, name in enumerate(names) if name.startswith("overwrite_")]

    def keeping(rule: Any, first: int) -> Any:  # first: the primal's first argument among the rule's
        if not slots:
            return rule

        @functools.wraps(rule)
        def keeping_inputs(*args: Any, **kwargs: Any) -> Any:
            args = tuple(False if i - first in slots else a for i, a in enumerate(args))
            kwargs = {k: False if k.startswith("overwrite_") else v for k, v in kwargs.items()}
            return rule(*args, **kwargs)

        return keeping_inputs

    return keeping(rrule, 0), keeping(frule, 1)


_FAST_HELPERS = ((_cholesky_cotangent, _through_formula(_cholesky_cotangent_formula)),
                 (_factor_cotangent, _through_formula(_factor_cotangent_formula)))

RULES: tuple[RulePair, ...] = (
    RulePair(sl.expm, expm_rrule, expm_frule),
    RulePair(sl.expm_frechet, expm_frechet_rrule, expm_frechet_frule),
    RulePair(sl.eigh, *_keeping_inputs(sl.eigh, eigh_rrule, eigh_frule)),
    RulePair(sl.logm, logm_rrule, logm_frule),
    RulePair(sl.sqrtm, sqrtm_rrule, sqrtm_frule),
    RulePair(sl.inv, *_keeping_inputs(sl.inv, inv_rrule, inv_frule)),
    RulePair(sl.det, *_keeping_inputs(sl.det, det_rrule, det_frule)),
    RulePair(sl.solve, *_keeping_inputs(sl.solve, solve_rrule, solve_frule)),
    RulePair(sl.solve_triangular,
             *_keeping_inputs(sl.solve_triangular, solve_triangular_rrule, solve_triangular_frule)),
    RulePair(sl.cholesky, *_keeping_inputs(sl.cholesky, cholesky_rrule, cholesky_frule)),
    # the pullbacks' fast helpers: their derivatives (second order) are their formulas'
    *(RulePair(helper, reverse, config=HasReverseMode) for helper, (reverse, _) in _FAST_HELPERS),
    *(RulePair(helper, frule=forward, config=HasForwardsMode) for helper, (_, forward) in _FAST_HELPERS),
    RulePair(sl.cho_factor, *_keeping_inputs(sl.cho_factor, cho_factor_rrule, cho_factor_frule)),
    RulePair(sl.cho_solve, *_keeping_inputs(sl.cho_solve, cho_solve_rrule, cho_solve_frule)),
    RulePair(sl.lu_factor, *_keeping_inputs(sl.lu_factor, lu_factor_rrule, lu_factor_frule)),
    RulePair(sl.lu_solve, *_keeping_inputs(sl.lu_solve, lu_solve_rrule, lu_solve_frule)),
    RulePair(sl.solve_sylvester, solve_sylvester_rrule, solve_sylvester_frule),
    RulePair(sl.solve_continuous_lyapunov, solve_continuous_lyapunov_rrule, solve_continuous_lyapunov_frule),
    RulePair(sl.block_diag, block_diag_rrule, block_diag_frule),
    RulePair(sl.solve_banded, *_keeping_inputs(sl.solve_banded, solve_banded_rrule, solve_banded_frule)),
)
