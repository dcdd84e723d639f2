"""Rules for ``numpy.linalg``: an rrule and an frule for every function, in one table.

Conventions (ChainRules'):

- The adjoint is the conjugate transpose; batched inputs (``(..., m, n)`` stacks) are handled
  by working on the last two axes (``np.swapaxes(x, -1, -2)``), and broadcast batch dimensions
  are summed back by :func:`rulescore.project`.
- Holomorphic functions (``inv``, ``det``, ``solve``, ``matrix_power``...) pull back with the
  conjugate derivative; real-valued functions of complex input (``norm``, ``slogdet``'s
  ``logabsdet``) give ``df/dRe + i df/dIm``.
- Pullbacks solve linear systems (``np.linalg.solve``) rather than forming inverses, never
  mutate, and are written with operators and ``np.*`` functions that have rules themselves, so
  second derivatives work.

Triangle conventions of ``eigh``, ``eigvalsh``, ``cholesky`` and the ``hermitian=True`` paths of
``svd`` and ``pinv``: NumPy reads *one* triangle of the input (the lower one by default,
``UPLO='U'`` / ``upper=True`` for the upper one) and never looks at the other. The rules
differentiate exactly that function: the frule uses the Hermitian matrix built from the read
triangle, and the cotangent is supported on the read triangle, each off-diagonal entry carrying
the sum of the two symmetric contributions (``G + G^H`` below the diagonal, the real part of
``G`` on it, where ``G`` is the gradient with respect to a Hermitian matrix). For every
symmetric perturbation this gives the same directional derivative as ChainRules' symmetrised
cotangent ``(G + G^H) / 2``; unlike it, it is also the true derivative for perturbations that
are not symmetric, which is what NumPy computes.

Gauges: ``svd``, ``eigh``, ``eig`` and ``qr`` return factors fixed only up to signs (phases).
The rules differentiate the factors LAPACK returns, which are locally smooth for distinct
eigenvalues / singular values and full-rank input; for complex ``svd`` the cotangent is assumed
gauge invariant (the loss does not depend on the joint phase of ``u_i`` and ``v_i``).

``svd(full_matrices=True)`` of a non-square matrix (NumPy's default) differentiates in reverse
mode when the result uses only the singular values and the first ``min(m, n)`` singular vectors;
a non-zero cotangent of the extra vectors (not unique) is refused, and so is the frule.

Not covered (no rule): ``qr(mode='raw')``, ``qr(mode='complete')`` of tall matrices, and
``matrix_rank`` (registered as non-differentiable).
"""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._abstract_tangent import AbstractTangent
from rulescore._arithmetic import is_zero
from rulescore._contract import plain_entry
from rulescore._linear import dense_tangent
from rulescore._namespace import (
    array_namespace,
    constant_like,
    foreign_namespace,
    is_complex_array,
    is_numpy_input,
    unbroadcast_to,
)
from rulescore._projection import project
from rulescore._structural import structural
from rulescore._tangent import Tangent, tangent_type
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import bind_arguments as _bind
from rulescore.rules._common import conj, is_complex, product_tangent

_NT = NoTangent()  # the singleton: a pullback returning it makes no traced call at a nested level

LA: Any = np.linalg

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _arr(x: Any) -> Any:
    """``x`` itself when it is array-like with a dtype (arrays, tracers), else ``np.asarray(x)``."""
    if type(x) is np.ndarray:
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return x
    return np.asarray(x)


def _real(x: Any) -> Any:
    tx = type(x)
    if tx is float or tx is np.float64 or (tx is np.ndarray and x.dtype.kind != "c"):
        return x  # what np.real gives, without a traced call at a nested level
    return np.real(x)  # a zero's is the zero


def _ns(x: Any) -> Any:
    """The array namespace the rules compute ``x`` with: NumPy for NumPy arrays, numbers and
    tangent types (a zero), the array's own otherwise (JAX, PyTorch: the native tier)."""
    if type(x) is np.ndarray or is_numpy_input(x) or isinstance(x, AbstractTangent):
        return np
    return array_namespace(x)


def _la(x: Any) -> Any:
    """``numpy.linalg``, or the ``linalg`` of ``x``'s own namespace (the native tier)."""
    return LA if type(x) is np.ndarray or (xp := _ns(x)) is np else xp.linalg


def _fit(x: Any, g: Any) -> Any:
    """The cotangent ``g`` projected on the argument ``x`` (in ``x``'s namespace)."""
    xp = np if type(x) is np.ndarray else _ns(x)
    return project(x, g) if xp is np else unbroadcast_to(xp, x, g)


def _mT(x: Any) -> Any:
    return x.mT  # any array library's; a zero's is the zero


def _conj(x: Any) -> Any:
    """The complex conjugate (of a zero: the zero), in ``x``'s namespace."""
    if type(x) is np.ndarray:
        return x if x.dtype.kind != "c" else np.conj(x)  # conj's own test, without its call
    if (xp := _ns(x)) is np:
        return conj(x)
    return xp.conj(x) if is_complex_array(xp, x) else x


def _H(x: Any) -> Any:
    """Batched conjugate transpose (of a zero: the zero)."""
    return _conj(x.mT)


def _real_dtype(x: Any) -> Any:
    dt = np.dtype(getattr(x, "dtype", np.float64))
    if dt.kind == "c":
        return np.finfo(dt).dtype
    return dt if dt.kind == "f" else np.dtype(np.float64)


def _constant(value: Any, like: Any) -> Any:
    """A NumPy mask or identity as a constant for ``like``: of its real dtype (its dtype and
    device for a non-NumPy array)."""
    if type(like) is np.ndarray or (xp := _ns(like)) is np:
        return value.astype(_real_dtype(like), copy=False)
    return xp.astype(constant_like(xp, value, like), like.dtype)


def _eye(n: int, like: Any) -> Any:
    if type(like) is np.ndarray or _ns(like) is np:
        return np.eye(n, dtype=_real_dtype(like))
    return _constant(np.eye(n), like)


def _strict(n: int, like: Any, lower: bool = True) -> Any:
    """Mask of the strictly lower (or upper) triangle."""
    m = np.tri(n, n, -1, dtype=bool)
    return _constant(m if lower else m.T, like)


def _sum(m: Any, axis: Any) -> Any:
    return (np if type(m) is np.ndarray else _ns(m)).sum(m, axis=axis)


def _diag(m: Any) -> Any:
    """Diagonal of the last two axes (square), as ``(..., n)``."""
    return _sum(m * _eye(m.shape[-1], m), -1)


def _diag_embed(v: Any, like: Any) -> Any:
    """``(..., n)`` -> ``(..., n, n)`` diagonal matrices; ``v`` has the shape of ``like`` (it may
    be a zero cotangent of ``like``)."""
    return v[..., None, :] * _eye(like.shape[-1], like)


def _tr(m: Any) -> Any:
    return _sum(m * _eye(m.shape[-1], m), (-2, -1))


def _safe(n: Any) -> Any:
    """``n`` with its zeros replaced by ones (for the subgradient 0 at 0)."""
    return n + (n == 0)


def _given(t: Any) -> bool:
    """Whether ``t`` (one entry of a structural cotangent, or the tangent of one of several
    arguments) is non-zero: a rule computes the terms of the parts given, and only those (the
    contract skips the call only when every part is zero)."""
    return not is_zero(t)


def _entry(t: Any, i: int, name: str | None = None) -> Any:
    """Entry ``i`` (field ``name``) of a structural tangent given in any accepted form, as the
    contract hands it (``ZeroTangent()`` for an absent part)."""
    if isinstance(t, Tangent):
        # read the backing directly: a plain tuple or dict, which AD engines index freely
        backing = t.backing
        if isinstance(backing, tuple):
            return plain_entry(backing[i] if i < len(backing) else None)
        if name is None:
            fields = getattr(t.primal_type, "_fields", None)
            name = fields[i] if fields is not None else None
        return plain_entry(backing.get(name))
    if isinstance(t, dict):
        return plain_entry(t.get(name) if name is not None else t.get(i))
    return plain_entry(t[i])  # a tuple, a list or a legacy primal-typed value


def _struct(y: Any, *parts: Any) -> Any:
    """A tangent of the (named) tuple ``y`` with the given entries."""
    fields = getattr(type(y), "_fields", None)
    make = tangent_type(type(y))
    if fields is not None:
        return make(**dict(zip(fields, parts, strict=True)))
    return make(*parts)


def _cts(nargs: int, *cts: Any) -> tuple[Any, ...]:
    """``(NoTangent(), ct_1, ..., ct_k)`` padded with ``NoTangent()`` to ``nargs`` arguments."""
    out = cts[:nargs]
    return (NoTangent(), *out, *(NoTangent() for _ in range(nargs - len(out))))


def _expand2(c: Any) -> Any:
    """A scalar (or ``(...,)`` array) of per-matrix factors as ``(..., 1, 1)``."""
    return (c if hasattr(c, "shape") else np.asarray(c))[..., None, None]  # a zero stays a zero


def _fold(g: Any, lower: bool) -> Any:
    """Cotangent of the read triangle from the gradient ``g`` w.r.t. the Hermitian matrix."""
    n = g.shape[-1]
    return _strict(n, g, lower) * (g + _H(g)) + _eye(n, g) * _real(g)


def _unfold(t: Any, lower: bool) -> Any:
    """The Hermitian matrix NumPy sees when it reads one triangle of ``t``."""
    n = t.shape[-1]
    low = _strict(n, t, lower) * t
    return low + _eye(n, t) * _real(t) + _H(low)


def _solve_vec(a: Any, b: Any) -> Any:
    """``solve`` with ``b`` a stack of vectors ``(..., m)`` whatever its number of dimensions."""
    return _la(a).solve(a, b[..., None])[..., 0]


def _outer(u: Any, v: Any) -> Any:
    """``u v^H`` for vectors (``(..., m)``, ``(..., n)``) or matrices (``u @ v^H``)."""
    return u[..., :, None] * _conj(v)[..., None, :]


# --------------------------------------------------------------------------------------------
# inv, det, slogdet, solve, matrix_power
# --------------------------------------------------------------------------------------------


def inv_rrule(a: Any) -> Any:
    y = _la(a).inv(a)

    def inv_pullback(ybar: Any) -> Any:
        yh = _H(y)
        return NoTangent(), _fit(a, -(yh @ ybar @ yh))

    return y, inv_pullback


def inv_frule(tangents: Any, a: Any) -> Any:
    y = _la(a).inv(a)
    adot = tangents[1]
    return y, _fit(y, -(y @ adot @ y))


def _adjugate(a: Any, d: Any) -> Any:
    """The adjugate of (a stack of) square matrices, exact at singular ones.

    Polynomial (Cayley-Hamilton) for n <= 3; ``det * inv`` through a solve for larger
    non-singular matrices; through the SVD (``det(U) det(Vh) Vh^H adj(S) U^H``) otherwise.
    """
    n = a.shape[-1]
    eye = _eye(n, a)
    if n == 1:
        return a * 0 + eye
    if n == 2:
        return _expand2(_tr(a)) * eye - a
    if n == 3:
        a2 = a @ a
        t = _tr(a)
        return a2 - _expand2(t) * a + _expand2(0.5 * (t * t - _tr(a2))) * eye
    if type(a) is not np.ndarray:  # traced (the native tier): no test of singularity
        return _la(a).solve(a, a * 0 + eye) * _expand2(d)
    if bool(np.all(d != 0)) and bool(np.all(np.isfinite(d))):
        return LA.solve(a, eye) * _expand2(d)
    u, s, vh = LA.svd(a)
    others = s[..., None, :] * (1 - eye) + eye  # row i: s with s_i replaced by 1
    adj_s = np.prod(others, axis=-1)
    phase = LA.det(u) * LA.det(vh)
    return _H(vh) @ (_diag_embed(adj_s, adj_s) @ _H(u)) * _expand2(phase)


def det_rrule(a: Any) -> Any:
    a_ = _arr(a)
    d = _la(a_).det(a_)

    def det_pullback(dbar: Any) -> Any:
        return NoTangent(), _fit(a, _H(_adjugate(a_, d)) * _expand2(dbar))

    return d, det_pullback


def det_frule(tangents: Any, a: Any) -> Any:
    a_ = _arr(a)
    d = _la(a_).det(a_)
    adot = tangents[1]
    return d, _fit(d, _sum(_mT(_adjugate(a_, d)) * adot, (-2, -1)))


def _numpy_result(out: Any, like: Any) -> Any:
    """The native tier's tuple result (JAX's or PyTorch's) as NumPy's named tuple ``type(like)``:
    the same output structure as the NumPy function, which other AD systems compare."""
    return out if type(out) is type(like) else type(like)(*out)


_SLOGDET = LA.slogdet(np.eye(1))
_EIGH = LA.eigh(np.eye(1))
_QR = LA.qr(np.eye(1))


def _is_complex(x: Any) -> bool:
    return is_complex(x) if _ns(x) is np else is_complex_array(_ns(x), x)


@structural
def _float64_matrix(a: Any) -> bool:
    """Whether ``a`` is a NumPy float64 matrix: the calls whose pullbacks take the straight lines
    below (no conjugates, stacks or namespaces)."""
    return type(a) is np.ndarray and a.ndim == 2 and a.dtype == np.float64


@structural
def _float64_solve_ndim(a: Any, b: Any) -> int:
    """``b.ndim`` (1 or 2) when ``a`` is a NumPy float64 matrix and ``b`` a NumPy float64 vector or
    matrix (the solves whose pullback takes straight lines), else 0."""
    if _float64_matrix(a) and type(b) is np.ndarray and b.dtype == np.float64 and b.ndim in (1, 2):
        return b.ndim
    return 0


def slogdet_rrule(a: Any) -> Any:
    a_ = _arr(a)
    y = _numpy_result(_la(a_).slogdet(a_), _SLOGDET)
    if _float64_matrix(a_):
        return y, _float64_slogdet_pullback(a, a_)
    sign = y[0]

    def slogdet_pullback(ybar: Any) -> Any:
        sbar, lbar = _entry(ybar, 0, "sign"), _entry(ybar, 1, "logabsdet")
        coef = _real(lbar)  # a real sign's cotangent has no effect (the sign is locally constant)
        if type(sign) is not np.float64 and _is_complex(sign):
            coef = coef + 1j * (sbar * _conj(sign)).imag
        return _NT, _fit(a, _la(a_).inv(_H(a_)) * _expand2(coef))

    return y, slogdet_pullback


def _float64_slogdet_pullback(a: Any, a_: Any) -> Any:
    """``slogdet_pullback`` for a float64 matrix: ``lbar inv(a)^T`` (a real sign's cotangent has
    no effect), without the general one's conjugates, namespace and shape helpers (each a traced
    call at a nested level)."""

    def slogdet_pullback(ybar: Any) -> Any:
        return _NT, project(a, LA.inv(a_.mT) * _entry(ybar, 1, "logabsdet"))

    return slogdet_pullback


def slogdet_frule(tangents: Any, a: Any) -> Any:
    a_ = _arr(a)
    y = _numpy_result(_la(a_).slogdet(a_), _SLOGDET)
    adot = tangents[1]
    t = _tr(_la(a_).solve(a_, adot))
    sdot: Any = ZeroTangent()
    if _is_complex(y[0]):
        sdot = _fit(y[0], y[0] * 1j * t.imag)
    return y, _struct(y, sdot, _fit(y[1], _real(t)))


def solve_rrule(a: Any, b: Any) -> Any:
    a_, b_ = _arr(a), _arr(b)
    x = _la(a_).solve(a_, b_)
    ndim = _float64_solve_ndim(a_, b_)
    if ndim:
        return x, _float64_solve_pullback(a, b, a_, x, ndim == 1)
    vec = b_.ndim == 1

    def solve_pullback(xbar: Any) -> Any:
        if vec:
            bbar = _solve_vec(_H(a_), xbar)
            abar = -_outer(bbar, x)
        else:
            bbar = _la(a_).solve(_H(a_), xbar)
            abar = -(bbar @ _H(x))
        return _NT, _fit(a, abar), _fit(b, bbar)

    return x, solve_pullback


def _float64_solve_pullback(a: Any, b: Any, a_: Any, x: Any, vec: bool) -> Any:
    """``solve_pullback`` for a float64 matrix and a float64 vector or matrix: ``bbar = solve(a^T,
    xbar)``, ``abar = -outer(bbar, x)`` (``-(bbar @ x^T)`` for a matrix), without the general one's
    stacks and conjugates (each a traced call at a nested level)."""

    def solve_pullback(xbar: Any) -> Any:
        bbar = LA.solve(a_.mT, xbar)
        return _NT, project(a, -np.outer(bbar, x) if vec else -(bbar @ x.mT)), project(b, bbar)

    return solve_pullback


def solve_frule(tangents: Any, a: Any, b: Any) -> Any:
    a_, b_ = _arr(a), _arr(b)
    x = _la(a_).solve(a_, b_)
    adot, bdot = tangents[1], tangents[2]  # one may be zero (wrt=(0, 1)): a zero flows through
    vec = b_.ndim == 1
    rhs = bdot - ((adot @ x[..., None])[..., 0] if vec else adot @ x)
    xdot = _solve_vec(a_, rhs) if vec else _la(a_).solve(a_, rhs)
    return x, _fit(x, xdot)


def _powers(base: Any, m: int) -> list[Any]:
    """``[None, base, base^2, ..., base^(m-1)]`` (``None`` stands for the identity)."""
    out: list[Any] = [None]
    for k in range(1, m):
        out.append(base if k == 1 else out[-1] @ base)
    return out


def _mul(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a @ b


def matrix_power_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.matrix_power, args, kwargs)
    a, n = p["a"], int(p["n"])
    a_ = _arr(a)
    y = _la(a_).matrix_power(a_, n)

    def matrix_power_pullback(ybar: Any) -> Any:
        if n == 0:
            return _cts(len(args), ZeroTangent())
        base = a_ if n > 0 else _la(a_).inv(a_)
        m = abs(n)
        pw = _powers(base, m)
        pwh = [None, *map(_H, pw[1:])]
        bbar: Any = ZeroTangent()
        for k in range(m):
            bbar = bbar + _mul(_mul(pwh[k], ybar), pwh[m - 1 - k])
        if n < 0:
            bh = _H(base)
            bbar = -(bh @ bbar @ bh)
        return _cts(len(args), _fit(a, bbar))

    return y, matrix_power_pullback


def matrix_power_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.matrix_power, args, kwargs)
    a_, n = _arr(p["a"]), int(p["n"])
    y = _la(a_).matrix_power(a_, n)
    adot = tangents[1]
    if n == 0:
        return y, ZeroTangent()
    base = a_ if n > 0 else _la(a_).inv(a_)
    bdot = adot if n > 0 else -(base @ adot @ base)
    m = abs(n)
    pw = _powers(base, m)
    ydot: Any = ZeroTangent()
    for k in range(m):
        ydot = ydot + _mul(_mul(pw[k], bdot), pw[m - 1 - k])
    return y, _fit(y, ydot)


# --------------------------------------------------------------------------------------------
# cholesky, qr
# --------------------------------------------------------------------------------------------


def _phi(x: Any) -> Any:
    """Lower triangle with the diagonal halved."""
    n = x.shape[-1]
    return x * (_strict(n, x) + 0.5 * _eye(n, x))


def _read_triangle(a: Any, lower: bool) -> Any:
    """``a`` for NumPy (LAPACK reads one triangle); for another library the Hermitian matrix that
    triangle stands for (JAX symmetrizes its input instead: the same function, spelled out)."""
    return a if type(a) is np.ndarray or _ns(a) is np else _unfold(a, lower)


def cholesky_rrule(a: Any, *, upper: bool = False) -> Any:
    a_ = _arr(a)
    c = _la(a_).cholesky(_read_triangle(a_, not upper), upper=upper)

    def cholesky_pullback(cbar: Any) -> Any:
        low = _H(c) if upper else c
        lbar = _H(cbar) if upper else cbar
        lh = _H(low)
        p = _phi(lh @ lbar)
        t = _la(a_).solve(lh, p)  # L^-H P
        g = _H(_la(a_).solve(lh, _H(t)))  # L^-H P L^-1
        return NoTangent(), _fit(a, _fold(g, lower=not upper))

    return c, cholesky_pullback


def cholesky_frule(tangents: Any, a: Any, *, upper: bool = False) -> Any:
    a_ = _arr(a)
    c = _la(a_).cholesky(_read_triangle(a_, not upper), upper=upper)
    adot = tangents[1]
    low = _H(c) if upper else c
    s = _unfold(adot, lower=not upper)
    y = _la(a_).solve(low, s)  # L^-1 S
    m = _H(_la(a_).solve(low, _H(y)))  # L^-1 S L^-H
    ldot = low @ _phi(m)
    return c, _fit(c, _H(ldot) if upper else ldot)


def _copyltu(m: Any) -> Any:
    n = m.shape[-1]
    low = m * _strict(n, m)
    return low + m * _eye(n, m) + _H(low)


def _qr_tall_pullback(q: Any, r: Any, qbar: Any, rbar: Any) -> Any:
    """Cotangent of A = QR (m >= n, Q m x n, R n x n) from those of Q and R (one may be a zero)."""
    m = r @ _H(rbar) - _H(qbar) @ q
    b = qbar + q @ _copyltu(m)
    return _H(_la(r).solve(r, _H(b)))  # b R^-H


def _qr_tall_frule(q: Any, r: Any, adot: Any) -> tuple[Any, Any]:
    d = _H(_la(r).solve(_H(r), _H(adot)))  # dA R^-1
    c = _H(q) @ d
    low = c * _strict(c.shape[-1], c)
    omega = low - _H(low)
    dr = (c - omega) @ r
    dq = d - q @ (c - omega)
    return dq, dr


def _qr_check(a: Any, mode: str) -> None:
    m, n = a.shape[-2], a.shape[-1]
    if mode not in ("reduced", "r", "complete") or (mode == "complete" and m > n):
        raise NotImplementedError(f"no rule for qr(mode={mode!r}) of a {m}x{n} matrix: "
                                  "use mode='reduced' (the extra columns of Q are not unique)")


def _qr(a: Any, mode: str) -> tuple[Any, Any, Any]:
    """``(np.linalg.qr(a, mode), Q, R)`` (natively on non-NumPy arrays: the array API's
    ``qr``; ``mode='r'`` is ``R`` of the reduced one)."""
    _qr_check(a, mode)
    if type(a) is np.ndarray or _ns(a) is np:
        out = LA.qr(a, mode=mode)
        q, r = LA.qr(a) if mode == "r" else out
        return out, q, r
    q, r = _la(a).qr(a, mode="complete" if mode == "complete" else "reduced")
    return (r if mode == "r" else _numpy_result((q, r), _QR)), q, r


def _concat(parts: list[Any]) -> Any:
    """The matrices ``parts`` side by side (the last axis), in their namespace."""
    if type(parts[0]) is np.ndarray or (xp := _ns(parts[0])) is np:
        return np.concatenate(parts, axis=-1)
    return xp.concat(parts, axis=-1)


def qr_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.qr, args, kwargs)
    a, mode = p["a"], p["mode"]
    a_ = _arr(a)
    out, q, r = _qr(a_, mode)
    m, n = a_.shape[-2], a_.shape[-1]

    def qr_pullback(ybar: Any) -> Any:
        if mode == "r":
            qbar, rbar = ZeroTangent(), ybar
        else:
            qbar, rbar = _entry(ybar, 0, "Q"), _entry(ybar, 1, "R")
        if m >= n:
            abar = _qr_tall_pullback(q, r, qbar, rbar)
        else:
            y = a_[..., :, m:]
            r1 = r[..., :, :m]
            r1bar, r2bar = rbar[..., :, :m], rbar[..., :, m:]
            xbar = _qr_tall_pullback(q, r1, qbar + y @ _H(r2bar), r1bar)
            zeros = np.zeros(y.shape, dtype=xbar.dtype) if type(y) is np.ndarray else y * 0
            abar = _concat([xbar, zeros + q @ r2bar])  # zeros when R's cotangent is
        return _cts(len(args), _fit(a, abar))

    return out, qr_pullback


def qr_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.qr, args, kwargs)
    a, mode = p["a"], p["mode"]
    a_ = _arr(a)
    out, q, r = _qr(a_, mode)
    adot = tangents[1]
    m, n = a_.shape[-2], a_.shape[-1]
    if m >= n:
        dq, dr = _qr_tall_frule(q, r, adot)
    else:
        dq, dr1 = _qr_tall_frule(q, r[..., :, :m], adot[..., :, :m])
        dr2 = _H(dq) @ a_[..., :, m:] + _H(q) @ adot[..., :, m:]
        dr = _concat([dr1, dr2])
    if mode == "r":
        return out, _fit(out, dr)
    return out, _struct(out, _fit(q, dq), _fit(r, dr))


# --------------------------------------------------------------------------------------------
# svd, svdvals, eigh, eigvalsh, eig, eigvals
# --------------------------------------------------------------------------------------------


def _svd_pullback(a: Any, u: Any, s: Any, vh: Any, ubar: Any, sbar: Any, vhbar: Any) -> Any:
    """Cotangent of A = U diag(s) Vh (thin SVD) from those of U, s, Vh (any but one may be zero)."""
    k = s.shape[-1]
    m, n = a.shape[-2], a.shape[-1]
    eye = _eye(k, s)
    s_row, s_col = s[..., None, :], s[..., :, None]
    f = (1 - eye) / (s_row * s_row - s_col * s_col + eye)  # 1 / (s_j^2 - s_i^2), 0 on the diagonal
    vbar = _H(vhbar)
    j, kk = _H(u) @ ubar, vh @ vbar  # zeros stay zeros through this algebra
    jj, kj = j - _H(j), kk - _H(kk)
    inner = _diag_embed(_real(sbar), s) + (f * jj) * s_row + s_col * (f * kj)
    if _is_complex(a):
        inner = inner + eye * (jj - kj) / (4 * s_row)  # the phase (gauge) direction
    abar = u @ inner @ vh
    if m > k:
        abar = abar + ((ubar - u @ j) / s_row) @ vh
    if n > k:
        abar = abar + u @ (_H(vbar - _H(vh) @ kk) / s_col)
    return abar


def _svd_frule(a: Any, u: Any, s: Any, vh: Any, adot: Any) -> tuple[Any, Any, Any]:
    k = s.shape[-1]
    m, n = a.shape[-2], a.shape[-1]
    eye = _eye(k, s)
    s_row, s_col = s[..., None, :], s[..., :, None]
    f = (1 - eye) / (s_row * s_row - s_col * s_col + eye)
    v = _H(vh)
    av = adot @ v
    dp = _H(u) @ av
    ds = _real(_diag(dp))
    om_u = f * (dp * s_row + s_col * _H(dp))
    om_v = f * (s_col * dp + _H(dp) * s_row)
    if _is_complex(a):
        om_u = om_u + eye * 1j * dp.imag / s_row
    du = u @ om_u
    if m > k:
        du = du + (av - u @ dp) / s_row
    dv = v @ om_v
    if n > k:
        ahu = _H(adot) @ u
        dv = dv + (ahu - v @ _H(dp)) / s_row
    return du, ds, _H(dv)


def _svd_check(a: Any, full_matrices: bool, compute_uv: bool) -> None:
    """The frule of ``svd(full_matrices=True)`` of a non-square matrix has no answer (the
    extra singular vectors are not unique, so neither are their tangents)."""
    m, n = a.shape[-2], a.shape[-1]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(f"numpy.linalg.svd's frule: no tangent for the extra singular vectors "
                                  f"of svd(full_matrices=True) of a {m}x{n} matrix (they are not "
                                  "unique): pass full_matrices=False")


def _thin_part(t: Any, k: int, axis: int, name: str) -> Any:
    """The cotangent of the first ``k`` singular vectors of a full SVD factor (a zero stays a
    zero); refuses a non-zero cotangent of the extra vectors, which are not unique."""
    if not isinstance(t, np.ndarray) or t.shape[axis] == k:
        return t
    extra = t[..., k:] if axis == -1 else t[..., k:, :]
    if np.any(extra != 0):
        raise NotImplementedError(
            f"numpy.linalg.svd(full_matrices=True): the result depends on the extra {name} "
            "(beyond min(m, n)), which are not unique, so it has no derivative; use only the first "
            "min(m, n) singular vectors, or pass full_matrices=False")
    return t[..., :k] if axis == -1 else t[..., :k, :]


def _svd(a: Any, full: bool, uv: bool, herm: bool) -> tuple[Any, Any, Any, Any]:
    """``(np.linalg.svd(a, full, uv, herm), U, s, Vh)`` with the thin factors; natively on
    non-NumPy arrays for the singular values alone (``compute_uv=False``; the array API's
    ``svd`` of the Hermitian matrix the lower triangle stands for when ``hermitian=True``)."""
    if type(a) is np.ndarray or (xp := _ns(a)) is np:
        out = LA.svd(a, full_matrices=full, compute_uv=uv, hermitian=herm)
        u, s, vh = out if uv else LA.svd(a, full_matrices=False, hermitian=herm)
        k = s.shape[-1]
        return out, u[..., :k], s, vh[..., :k, :]  # a full SVD's extra vectors are not unique
    if uv:  # the host tier returns NumPy's factors
        raise TypeError(f"numpy.linalg.svd: the native rule (on {getattr(xp, '__name__', xp)} arrays) "
                        "computes singular values only (compute_uv=False): the signs of the singular "
                        "vectors are each library's LAPACK's choice, and NumPy's differ from PyTorch's")
    u, s, vh = xp.linalg.svd(_unfold(a, lower=True) if herm else a, full_matrices=False)
    return s, u, s, vh


def svd_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.svd, args, kwargs)
    a, full, uv, herm = p["a"], p["full_matrices"], p["compute_uv"], p["hermitian"]
    a_ = _arr(a)
    out, u, s, vh = _svd(a_, full, uv, herm)
    k = s.shape[-1]

    def svd_pullback(ybar: Any) -> Any:
        if uv:
            parts = (_thin_part(_entry(ybar, 0, "U"), k, -1, "columns of U"), _entry(ybar, 1, "S"),
                     _thin_part(_entry(ybar, 2, "Vh"), k, -2, "rows of Vh"))
        else:
            parts = (ZeroTangent(), ybar, ZeroTangent())
        return _cts(len(args), _hermitian_fold(a, _svd_pullback(a_, u, s, vh, *parts), herm))

    return out, svd_pullback


def svd_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.svd, args, kwargs)
    a, full, uv, herm = p["a"], p["full_matrices"], p["compute_uv"], p["hermitian"]
    a_ = _arr(a)
    _svd_check(a_, full, uv)
    out, u, s, vh = _svd(a_, full, uv, herm)
    adot = tangents[1]
    if herm:
        adot = _unfold(adot, lower=True)
    if not uv:
        return out, _fit(out, _real(_diag(_H(u) @ adot @ _H(vh))))
    du, ds, dvh = _svd_frule(a_, u, s, vh, adot)
    return out, _struct(out, _fit(u, du), _fit(s, ds), _fit(vh, dvh))


def svdvals_rrule(x: Any) -> Any:
    x_ = _arr(x)
    s, u, _, vh = _svd(x_, False, False, False)

    def svdvals_pullback(sbar: Any) -> Any:
        return NoTangent(), _fit(x, (u * _real(sbar)[..., None, :]) @ vh)

    return s, svdvals_pullback


def svdvals_frule(tangents: Any, x: Any) -> Any:
    x_ = _arr(x)
    s, u, _, vh = _svd(x_, False, False, False)
    xdot = tangents[1]
    return s, _fit(s, _real(_diag(_H(u) @ xdot @ _H(vh))))


def _eigh_grad(w: Any, v: Any, wbar: Any, vbar: Any) -> Any:
    """Gradient w.r.t. the Hermitian matrix V diag(w) V^H (one cotangent may be a zero)."""
    eye = _eye(w.shape[-1], w)
    f = (1 - eye) / (w[..., None, :] - w[..., :, None] + eye)  # 1 / (w_j - w_i)
    inner = _diag_embed(_real(wbar), w) + f * (_H(v) @ vbar)
    return v @ inner @ _H(v)


def _uplo_lower(uplo: str) -> bool:
    if uplo not in ("L", "U", "l", "u"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo.upper() == "L"


def _hermitian_fold(a: Any, abar: Any, hermitian: bool) -> Any:
    """``abar`` projected on ``a``; for ``hermitian=True`` (only the lower triangle is read)
    folded onto it."""
    return _fit(a, _fold(abar, lower=True) if hermitian else abar)


def _hermitian_input(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, str, bool]:
    """``(a, a as an array, UPLO, whether the lower triangle is read)`` of ``eigh``/``eigvalsh``."""
    p = _bind(f, args, kwargs)
    return p["a"], _arr(p["a"]), p["UPLO"], _uplo_lower(p["UPLO"])


def eigh_rrule(*args: Any, **kwargs: Any) -> Any:
    a, a_, uplo, lower = _hermitian_input(np.linalg.eigh, args, kwargs)
    out = _numpy_result(_la(a_).eigh(_read_triangle(a_, lower), UPLO=uplo), _EIGH)
    w, v = out

    def eigh_pullback(ybar: Any) -> Any:
        wbar, vbar = _entry(ybar, 0, "eigenvalues"), _entry(ybar, 1, "eigenvectors")
        return _cts(len(args), _fit(a, _fold(_eigh_grad(w, v, wbar, vbar), lower)))

    return out, eigh_pullback


def eigh_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    _, a_, uplo, lower = _hermitian_input(np.linalg.eigh, args, kwargs)
    out = _numpy_result(_la(a_).eigh(_read_triangle(a_, lower), UPLO=uplo), _EIGH)
    w, v = out
    mm = _H(v) @ _unfold(tangents[1], lower) @ v
    n = w.shape[-1]
    eye = _eye(n, w)
    f = (1 - eye) / (w[..., None, :] - w[..., :, None] + eye)
    return out, _struct(out, _fit(w, _real(_diag(mm))), _fit(v, v @ (f * mm)))


def eigvalsh_rrule(*args: Any, **kwargs: Any) -> Any:
    a, a_, uplo, lower = _hermitian_input(np.linalg.eigvalsh, args, kwargs)
    w, v = _la(a_).eigh(_read_triangle(a_, lower), UPLO=uplo)

    def eigvalsh_pullback(wbar: Any) -> Any:
        return _cts(len(args), _fit(a, _fold(_eigh_grad(w, v, wbar, ZeroTangent()), lower)))

    return w, eigvalsh_pullback


def eigvalsh_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    _, a_, uplo, lower = _hermitian_input(np.linalg.eigvalsh, args, kwargs)
    w, v = _la(a_).eigh(_read_triangle(a_, lower), UPLO=uplo)
    return w, _fit(w, _real(_diag(_H(v) @ _unfold(tangents[1], lower) @ v)))


def _eig_grad(w: Any, v: Any, wbar: Any, vbar: Any) -> Any:
    """Cotangent of A from those of its eigenvalues and unit-norm eigenvectors (ChainRules; one
    may be a zero)."""
    inner = _diag_embed(wbar, w)
    if _given(vbar):  # the eigenvectors' term, only when they have a cotangent
        n = w.shape[-1]
        eye = _eye(n, w)
        g = _H(v) @ vbar
        g = g - (_H(v) @ v) * _real(_diag(g))[..., None, :]  # unit-norm constraint
        f = (1 - eye) / (w[..., None, :] - w[..., :, None] + eye)  # 1 / (w_j - w_i)
        inner = inner + conj(f) * g
    return LA.solve(_H(v), inner @ _H(v))


def _eig_coupling(v: Any, adot: Any) -> Any:
    """``V^-1 dA V``: its diagonal is the eigenvalues' tangent."""
    return LA.solve(v, adot @ v)


def _eig_dot(w: Any, v: Any, adot: Any) -> tuple[Any, Any]:
    n = w.shape[-1]
    eye = _eye(n, w)
    mm = _eig_coupling(v, adot)
    f = (1 - eye) / (w[..., None, :] - w[..., :, None] + eye)
    c = f * mm
    d = -_real(_diag(_H(v) @ v @ c))
    return _diag(mm), v @ (c + _diag_embed(d, w))


def eig_rrule(a: Any) -> Any:
    a_ = _arr(a)
    out = LA.eig(a_)
    w, v = out

    def eig_pullback(ybar: Any) -> Any:
        wbar, vbar = _entry(ybar, 0, "eigenvalues"), _entry(ybar, 1, "eigenvectors")
        return NoTangent(), project(a, _eig_grad(w, v, wbar, vbar))

    return out, eig_pullback


def eig_frule(tangents: Any, a: Any) -> Any:
    out = LA.eig(_arr(a))
    w, v = out
    dw, dv = _eig_dot(w, v, tangents[1])
    return out, _struct(out, project(w, dw), project(v, dv))


def eigvals_rrule(a: Any) -> Any:
    w = LA.eigvals(_arr(a))
    _, v = LA.eig(_arr(a))

    def eigvals_pullback(wbar: Any) -> Any:
        return NoTangent(), project(a, _eig_grad(w, v, wbar, ZeroTangent()))

    return w, eigvals_pullback


def eigvals_frule(tangents: Any, a: Any) -> Any:
    w = LA.eigvals(_arr(a))
    _, v = LA.eig(_arr(a))
    return w, project(w, _diag(_eig_coupling(v, tangents[1])))


# --------------------------------------------------------------------------------------------
# pinv, lstsq
# --------------------------------------------------------------------------------------------


def _pinv_pullback(a: Any, x: Any, xbar: Any) -> Any:
    xh = _H(x)
    t1 = -(xh @ xbar @ xh)
    w = _H(xbar) @ (x @ xh)
    t2 = w - a @ (x @ w)  # (I - A X) Xbar^H X X^H
    z = (xh @ x) @ _H(xbar)
    t3 = z - (z @ x) @ a  # X^H X Xbar^H (I - X A)
    return t1 + t2 + t3


def _pinv_dot(a: Any, x: Any, adot: Any) -> Any:
    xh = _H(x)
    adh = _H(adot)
    t1 = -(x @ adot @ x)
    g = adh - (adh @ a) @ x  # dA^H (I - A X)
    t2 = x @ (xh @ g)
    hh = adh @ (xh @ x)
    t3 = hh - x @ (a @ hh)  # (I - X A) dA^H X^H X
    return t1 + t2 + t3


def _pinv_call(p: dict[str, Any], a: Any) -> Any:
    """``np.linalg.pinv`` of ``a`` with the call's cut-off; natively on non-NumPy arrays (the
    array API's ``pinv``, whose ``rtol`` is NumPy's ``rcond``, of the Hermitian matrix the
    lower triangle stands for when ``hermitian=True``)."""
    rtol = p.get("rtol", inspect.Parameter.empty)
    if type(a) is not np.ndarray and (xp := _ns(a)) is not np:
        cutoff = p["rcond"]
        if cutoff is None and rtol is not _PINV_RTOL_DEFAULT:
            cutoff = rtol
        return xp.linalg.pinv(_unfold(a, lower=True) if p["hermitian"] else a, rtol=cutoff)
    kw: dict[str, Any] = {"hermitian": p["hermitian"]}
    if p["rcond"] is not None:
        kw["rcond"] = p["rcond"]
    if rtol is not _PINV_RTOL_DEFAULT:
        kw["rtol"] = rtol
    return LA.pinv(a, **kw)


_PINV_RTOL_DEFAULT = inspect.signature(np.linalg.pinv).parameters["rtol"].default


def pinv_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.pinv, args, kwargs)
    a = p["a"]
    a_ = _arr(a)
    x = _pinv_call(p, a_)
    herm = p["hermitian"]
    h = _unfold(a_, lower=True) if herm else a_  # the matrix pinv inverts (its read triangle's)

    def pinv_pullback(xbar: Any) -> Any:
        return _cts(len(args), _hermitian_fold(a, _pinv_pullback(h, x, xbar), herm))

    return x, pinv_pullback


def pinv_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.pinv, args, kwargs)
    a_ = _arr(p["a"])
    x = _pinv_call(p, a_)
    adot = tangents[1]
    if p["hermitian"]:
        a_, adot = _unfold(a_, lower=True), _unfold(adot, lower=True)
    return x, _fit(x, _pinv_dot(a_, x, adot))


def lstsq_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.lstsq, args, kwargs)
    a, b = p["a"], p["b"]
    a_, b_ = _arr(a), _arr(b)
    out = LA.lstsq(a_, b_, rcond=p["rcond"])
    x, res = out[0], out[1]
    vec = b_.ndim == 1
    pa = LA.pinv(a_)

    def lstsq_pullback(ybar: Any) -> Any:
        xbar, resbar, sbar = _entry(ybar, 0), _entry(ybar, 1), _entry(ybar, 3)
        abar: Any = ZeroTangent()
        bbar: Any = ZeroTangent()
        if _given(xbar):  # each part's terms only when it has a cotangent
            outer = _outer if vec else (lambda u, v: u @ _H(v))
            r = b_ - a_ @ x
            bbar = _H(pa) @ xbar
            proj = xbar - pa @ (a_ @ xbar)  # (I - X A) xbar
            abar = -outer(bbar, x) + outer(r, pa @ bbar) + outer(_H(pa) @ x, proj)
        if _given(resbar) and res.shape[-1] > 0:
            r = b_ - a_ @ x
            rr = r * (resbar[0] if vec else resbar[..., None, :])
            bbar = bbar + 2 * rr
            abar = abar - 2 * (_outer(rr, x) if vec else rr @ _H(x))
        if _given(sbar):
            u, _, vh = LA.svd(a_, full_matrices=False)
            abar = abar + (u * _real(sbar)[..., None, :]) @ vh
        return _cts(len(args), project(a, abar), project(b, bbar))

    return out, lstsq_pullback


def lstsq_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.lstsq, args, kwargs)
    a_, b_ = _arr(p["a"]), _arr(p["b"])
    out = LA.lstsq(a_, b_, rcond=p["rcond"])
    # a and b given by keyword have no tangent; either may be a zero (wrt=(0, 1))
    adot = tangents[1] if len(tangents) > 1 else ZeroTangent()
    bdot = tangents[2] if len(tangents) > 2 else ZeroTangent()
    x, res, _, s = out
    pa = LA.pinv(a_)
    r = b_ - a_ @ x
    dr = bdot - adot @ x  # the change of the residual at fixed x
    xdot = pa @ bdot
    sdot: Any = ZeroTangent()
    if _given(adot):  # a's terms need an SVD: only when a has a tangent
        adh = _H(adot)
        v = adh @ (_H(pa) @ x)
        xdot = xdot - pa @ (adot @ x) + pa @ (_H(pa) @ (adh @ r)) + (v - pa @ (a_ @ v))
        u, _, vh = LA.svd(a_, full_matrices=False)
        sdot = project(s, _real(_diag(_H(u) @ adot @ _H(vh))))
    resdot: Any = ZeroTangent()
    if res.shape[-1] > 0:
        resdot = 2 * _real(np.sum(conj(r) * dr, axis=0))
        resdot = project(res, np.reshape(resdot, res.shape))
    return out, _struct(out, project(x, xdot), resdot, NoTangent(), sdot)


# --------------------------------------------------------------------------------------------
# norms, cond
# --------------------------------------------------------------------------------------------


def _norm_layout(x: Any, ord: Any, axis: Any) -> tuple[str, tuple[int, ...]]:
    """("vector" | "matrix", normalised reduction axes) of ``np.linalg.norm(x, ord, axis)``."""
    nd = x.ndim
    if axis is None:
        if ord is None:
            return "vector", tuple(range(nd))
        return ("vector", (0,)) if nd == 1 else ("matrix", (0, 1))
    axes = tuple(int(ax) % nd for ax in axis) if isinstance(axis, (tuple, list)) else (int(axis) % nd,)
    return ("vector", axes) if len(axes) == 1 else ("matrix", axes)


def _extreme_mask(v: Any, axis: Any, largest: bool, xp: Any = np) -> Any:
    ext = xp.max(v, axis=axis, keepdims=True) if largest else xp.min(v, axis=axis, keepdims=True)
    mask = v == ext
    return mask / xp.sum(mask, axis=axis, keepdims=True)  # ties share the subgradient


def _sign(x: Any, xp: Any) -> Any:
    """``np.sign`` in the namespace ``xp`` (``x / |x|`` for complex ``x``; 0 at 0), written with
    comparisons: array-api-compat's PyTorch ``sign`` writes through a mask, which ``vmap`` refuses."""
    if xp is np:
        return np.sign(x)
    if is_complex_array(xp, x):
        return x / _safe(xp.abs(x))
    return xp.astype(x > 0, x.dtype) - xp.astype(x < 0, x.dtype)


def _moved_last(x: Any, axes: tuple[int, ...], xp: Any) -> Any:
    """``x`` with ``axes`` moved last (``permute_dims``: PyTorch's ``moveaxis`` has no vmap rule)."""
    return xp.permute_dims(x, [i for i in range(x.ndim) if i not in axes] + list(axes))


def _moved_back(x: Any, axes: tuple[int, ...], xp: Any) -> Any:
    """The inverse of :func:`_moved_last`."""
    moved = [i for i in range(x.ndim) if i not in axes] + list(axes)
    return xp.permute_dims(x, [moved.index(i) for i in range(x.ndim)])


def _norm_grad(x: Any, ord: Any, kind: str, axes: tuple[int, ...], y_k: Any, xp: Any = np) -> Any:
    """``g`` with ``d norm = Re sum(conj(g) dx)`` over ``axes`` (a subgradient at kinks), in the
    namespace ``xp`` of ``x``; or None."""
    if kind == "vector":
        if ord is None or ord == 2:
            return x / _safe(y_k)
        if ord == np.inf or ord == -np.inf:
            return _sign(x, xp) * _extreme_mask(xp.abs(x), axes, ord > 0, xp)
        if ord == 0:
            return None
        if ord == 1:
            return _sign(x, xp)
        base = xp.abs(x) / _safe(y_k)
        return _sign(x, xp) * (base + (base == 0)) ** (ord - 1)
    r, c = axes
    if ord is None or ord == "fro":
        return x / _safe(y_k)
    if ord in (1, -1):
        return _sign(x, xp) * _extreme_mask(xp.sum(xp.abs(x), axis=r, keepdims=True), c, ord > 0, xp)
    if ord == np.inf or ord == -np.inf:
        return _sign(x, xp) * _extreme_mask(xp.sum(xp.abs(x), axis=c, keepdims=True), r, ord > 0, xp)
    if ord in ("nuc", 2, -2):
        xm = _moved_last(x, (r, c), xp)
        u, s, vh = (LA if xp is np else xp.linalg).svd(xm, full_matrices=False)
        k = s.shape[-1]
        if ord == "nuc":
            eps = np.finfo(_real_dtype(x)).eps if xp is np else xp.finfo(x.dtype).eps
            tol = xp.max(s, axis=-1, keepdims=True) * max(xm.shape[-2:]) * eps
            gm = (u * (s > tol)[..., None, :]) @ vh
        elif ord == 2:
            gm = (u[..., :, :1] @ vh[..., :1, :]) * (s[..., :1, None] > 0)
        else:
            gm = u[..., :, k - 1:] @ vh[..., k - 1:, :]
        return _moved_back(gm, (r, c), xp)
    raise ValueError(f"invalid norm order {ord!r} for matrices")


def _keep_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _native_norm(xp: Any, x: Any, ord: Any, kind: str, axes: tuple[int, ...], keepdims: bool) -> Any:
    """``np.linalg.norm`` in the array namespace ``xp`` (the native tier): the array API's
    ``vector_norm``, or its ``matrix_norm`` of ``axes`` moved last."""
    if ord is None:  # NumPy's default: the 2-norm of vectors, the Frobenius norm of matrices
        ord = 2 if kind == "vector" else "fro"
    if kind == "vector":
        return xp.linalg.vector_norm(x, axis=axes, keepdims=keepdims, ord=ord)
    y = xp.linalg.matrix_norm(_moved_last(x, axes, xp), ord=ord)
    return xp.reshape(y, _keep_shape(tuple(x.shape), axes)) if keepdims else y


def _norm_pullback(x: Any, x_: Any, y: Any, ord: Any, kind: str, axes: tuple[int, ...], nargs: int,
                   name: str) -> Any:
    """The pullback of a norm of ``x`` (``x_``: it as an array) reduced over ``axes``."""
    keep = _keep_shape(tuple(x_.shape), axes)
    xp = np if type(x_) is np.ndarray else _ns(x_)

    def norm_pullback(ybar: Any) -> Any:
        g = _norm_grad(x_, ord, kind, axes, xp.reshape(y, keep), xp)
        if g is None:
            return _cts(nargs, ZeroTangent())
        if xp is not np:
            return _cts(nargs, _fit(x_, g * xp.reshape(_real(ybar), keep)))
        return _cts(nargs, project(x, g * np.reshape(_real(_arr(ybar)), keep)))

    norm_pullback.__name__ = norm_pullback.__qualname__ = name
    return norm_pullback


def _norm_tangent(x: Any, y: Any, ord: Any, kind: str, axes: tuple[int, ...], keepdims: bool,
                  xdot: Any) -> Any:
    xp = np if type(x) is np.ndarray else _ns(x)
    g = _norm_grad(x, ord, kind, axes, xp.reshape(y, _keep_shape(tuple(x.shape), axes)), xp)
    if g is None:
        return ZeroTangent()
    if xp is not np:
        return _fit(y, xp.sum(_real(_conj(g) * xdot), axis=axes, keepdims=keepdims))
    return project(y, np.sum(_real(conj(g) * xdot), axis=axes, keepdims=keepdims))


def _norm(x: Any, ord: Any, axis: Any, keepdims: bool) -> tuple[Any, str, tuple[int, ...]]:
    """``(np.linalg.norm(x, ord, axis, keepdims), kind, reduced axes)`` (natively on non-NumPy
    arrays)."""
    kind, axes = _norm_layout(x, ord, axis)
    if type(x) is np.ndarray or (xp := _ns(x)) is np:
        return LA.norm(x, ord, axis, keepdims), kind, axes
    return _native_norm(xp, x, ord, kind, axes, keepdims), kind, axes


def norm_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.norm, args, kwargs)
    x = _arr(p["x"])
    y, kind, axes = _norm(x, p["ord"], p["axis"], p["keepdims"])
    return y, _norm_pullback(p["x"], x, y, p["ord"], kind, axes, len(args), "norm_pullback")


def norm_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.norm, args, kwargs)
    x = _arr(p["x"])
    y, kind, axes = _norm(x, p["ord"], p["axis"], p["keepdims"])
    # an array-like x (a list of arrays) has a tangent of the same structure: as one array
    xdot = tangents[1] if x is p["x"] else np.asarray(dense_tangent(p["x"], tangents[1]))
    return y, _norm_tangent(x, y, p["ord"], kind, axes, p["keepdims"], xdot)


def _vector_norm_layout(x: Any, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(x.ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(int(ax) % x.ndim for ax in axis)
    return (int(axis) % x.ndim,)


def vector_norm_rrule(x: Any, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    x_ = _arr(x)
    y = _la(x_).vector_norm(x_, axis=axis, keepdims=keepdims, ord=ord)
    axes = _vector_norm_layout(x_, axis)
    return y, _norm_pullback(x, x_, y, ord, "vector", axes, 1, "vector_norm_pullback")


def vector_norm_frule(tangents: Any, x: Any, *, axis: Any = None, keepdims: bool = False,
                      ord: Any = 2) -> Any:
    x_ = _arr(x)
    y = _la(x_).vector_norm(x_, axis=axis, keepdims=keepdims, ord=ord)
    axes = _vector_norm_layout(x_, axis)
    return y, _norm_tangent(x_, y, ord, "vector", axes, keepdims, tangents[1])


def matrix_norm_rrule(x: Any, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    x_ = _arr(x)
    y = _la(x_).matrix_norm(x_, keepdims=keepdims, ord=ord)
    axes = (x_.ndim - 2, x_.ndim - 1)
    return y, _norm_pullback(x, x_, y, ord, "matrix", axes, 1, "matrix_norm_pullback")


def matrix_norm_frule(tangents: Any, x: Any, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    x_ = _arr(x)
    y = _la(x_).matrix_norm(x_, keepdims=keepdims, ord=ord)
    axes = (x_.ndim - 2, x_.ndim - 1)
    return y, _norm_tangent(x_, y, ord, "matrix", axes, keepdims, tangents[1])


def _cond_parts(x: Any, p: Any) -> tuple[Any, Any]:
    """``(cond, pullback of cond w.r.t. x as a function of a real cotangent)``."""
    if p in (None, 2, -2):
        u, s, vh = LA.svd(x, full_matrices=False)
        k = s.shape[-1]
        hi, lo = s[..., 0], s[..., k - 1]
        e_hi = u[..., :, :1] @ vh[..., :1, :]
        e_lo = u[..., :, k - 1:] @ vh[..., k - 1:, :]
        top, bottom, e_top, e_bottom = (hi, lo, e_hi, e_lo) if p != -2 else (lo, hi, e_lo, e_hi)
        c = top / bottom

        def grad(cbar: Any) -> Any:
            cb = _expand2(cbar)
            return cb * (e_top / _expand2(bottom) - e_bottom * _expand2(top / (bottom * bottom)))

        return c, grad
    n1, back1 = norm_rrule(x, p, (-2, -1))
    xi, back_inv = inv_rrule(x)
    n2, back2 = norm_rrule(xi, p, (-2, -1))

    def grad_composite(cbar: Any) -> Any:
        return back1(cbar * n2)[1] + back_inv(back2(cbar * n1)[1])[1]

    return n1 * n2, grad_composite


def cond_rrule(*args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.cond, args, kwargs)
    x_ = _arr(p["x"])
    y = LA.cond(x_, p["p"])
    _, grad = _cond_parts(x_, p["p"])

    def cond_pullback(ybar: Any) -> Any:
        return _cts(len(args), project(p["x"], grad(_real(_arr(ybar)))))

    return y, cond_pullback


def cond_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p = _bind(np.linalg.cond, args, kwargs)
    x_ = _arr(p["x"])
    y = LA.cond(x_, p["p"])
    xdot = tangents[1]
    _, grad = _cond_parts(x_, p["p"])
    g = grad(np.ones(np.shape(y), dtype=_real_dtype(x_)))
    return y, project(y, np.sum(_real(conj(g) * xdot), axis=(-2, -1)))


# --------------------------------------------------------------------------------------------
# products and array-API helpers (matmul, outer, vecdot and tensordot are contractions): multi_dot, cross,
# matrix_transpose, diagonal, trace
# --------------------------------------------------------------------------------------------


def _multi_dot_mats(arrays: Any) -> tuple[list[Any], bool, bool]:
    mats = [_arr(m) for m in arrays]
    first_vec, last_vec = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_vec:
        mats[0] = mats[0][None, :]
    if last_vec:
        mats[-1] = mats[-1][:, None]
    return mats, first_vec, last_vec


def _multi_dot_namespace(arrays: Any, out: Any) -> Any:
    """The namespace of ``multi_dot``'s matrices: a non-NumPy one when one of them is such an
    array (the native tier: a chain of ``@``, left to right), else NumPy."""
    if all(type(m) is np.ndarray for m in arrays) or (xp := foreign_namespace(tuple(arrays))) is None:
        return np
    if out is not None:
        raise TypeError(f"numpy.linalg.multi_dot: the native rule (on {getattr(xp, '__name__', xp)} arrays) "
                        "takes no out=: call it on NumPy arrays for that")
    return xp


def _chain(mats: list[Any]) -> Any:
    y = mats[0]
    for m in mats[1:]:
        y = y @ m
    return y


def multi_dot_rrule(arrays: Any, *, out: Any = None) -> Any:
    xp = _multi_dot_namespace(arrays, out)
    y = LA.multi_dot(arrays, out=out) if xp is np else _chain(list(arrays))
    mats, first_vec, last_vec = _multi_dot_mats(arrays)
    k = len(mats)

    def multi_dot_pullback(ybar: Any) -> Any:
        shape = (mats[0].shape[0], mats[-1].shape[1])
        yb = xp.reshape(_arr(ybar) if xp is np else ybar, shape)
        prefix: list[Any] = [None]
        for m in mats[:-1]:
            prefix.append(_mul(prefix[-1], m))
        suffix: list[Any] = [None]
        for m in reversed(mats[1:]):
            suffix.append(_mul(m, suffix[-1]))
        suffix.reverse()
        bars = []
        for i in range(k):
            left = _H(prefix[i]) if i > 0 else None  # None: no factor on that side
            right = _H(suffix[i]) if i < k - 1 else None
            bars.append(_mul(_mul(left, yb), right))
        if first_vec:
            bars[0] = bars[0][0, :]
        if last_vec:
            bars[-1] = bars[-1][:, 0]
        if xp is not np:
            bars = [_fit(m, g) for m, g in zip(arrays, bars, strict=True)]
            return NoTangent(), tangent_type(type(arrays))(*bars)
        return NoTangent(), project(arrays, type(arrays)(bars) if isinstance(arrays, tuple) else bars)

    return y, multi_dot_pullback


def multi_dot_frule(tangents: Any, arrays: Any, *, out: Any = None) -> Any:
    xp = _multi_dot_namespace(arrays, out)
    y = LA.multi_dot(arrays, out=out) if xp is np else _chain(list(arrays))
    dots = [_entry(tangents[1], i) for i in range(len(arrays))]
    mats, first_vec, last_vec = _multi_dot_mats(arrays)
    ydot: Any = ZeroTangent()
    for i, d in enumerate(dots):
        if not _given(d):  # a product per matrix with a tangent (the contract: at least one)
            continue
        if i == 0 and first_vec:
            d = d[None, :]
        if i == len(mats) - 1 and last_vec:
            d = d[:, None]
        term: Any = None
        for j, m in enumerate(mats):
            term = _mul(term, d if j == i else m)
        ydot = ydot + term
    if xp is not np:
        return y, _fit(y, xp.reshape(ydot, y.shape))
    return y, project(y, np.reshape(ydot, np.shape(y)))


def cross_rrule(x1: Any, x2: Any, *, axis: int = -1) -> Any:
    a, b = _arr(x1), _arr(x2)
    y = LA.cross(a, b, axis=axis)

    def cross_pullback(ybar: Any) -> Any:
        yb = _arr(ybar)
        return (NoTangent(), project(x1, LA.cross(conj(b), yb, axis=axis)),
                project(x2, LA.cross(yb, conj(a), axis=axis)))

    return y, cross_pullback


def cross_frule(tangents: Any, x1: Any, x2: Any, *, axis: int = -1) -> Any:
    a, b = _arr(x1), _arr(x2)
    y = LA.cross(a, b, axis=axis)
    return y, product_tangent(partial(LA.cross, axis=axis), y, (a, b), tangents, (0, 1))


def matrix_transpose_transpose(ybar: Any, x: Any) -> Any:
    return LA.matrix_transpose(ybar) if type(ybar) is np.ndarray or _ns(ybar) is np else ybar.mT


def matrix_transpose_native(xp: Any, x: Any) -> Any:
    return xp.matrix_transpose(x)


def _diag_selectors(m: int, n: int, offset: int, like: Any) -> tuple[Any, Any]:
    """``(Erow, Ecol)`` with ``x[..., r_l, c_l] = sum Erow[r, l] d_l Ecol[c, l]``."""
    rows = np.arange(m)[:, None]
    cols = np.arange(n)[:, None]
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    diag = np.arange(length)[None, :]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    return _constant(rows == diag + r0, like), _constant(cols == diag + c0, like)


def diagonal_transpose(ybar: Any, x: Any, *, offset: int = 0) -> Any:
    x_ = _arr(x)
    er, ec = _diag_selectors(x_.shape[-2], x_.shape[-1], offset, x_)
    return (er * _arr(ybar)[..., None, :]) @ ec.mT


def diagonal_native(xp: Any, x: Any, *, offset: int = 0) -> Any:
    return xp.linalg.diagonal(x, offset=offset)


def trace_transpose(ybar: Any, x: Any, *, offset: int = 0, dtype: Any = None) -> Any:
    x_ = _arr(x)
    return _expand2(ybar) * _constant(np.eye(x_.shape[-2], x_.shape[-1], k=offset), x_)


def trace_native(xp: Any, x: Any, *, offset: int = 0, dtype: Any = None) -> Any:
    if dtype is not None:
        raise TypeError(f"numpy.linalg.trace: the native rule (on {getattr(xp, '__name__', xp)} arrays) "
                        "takes offset only: call it on NumPy arrays for dtype=")
    return xp.linalg.trace(x, offset=offset)


# --------------------------------------------------------------------------------------------
# tensorinv, tensorsolve
# --------------------------------------------------------------------------------------------


def tensorinv_rrule(*args: Any, **kwargs: Any) -> Any:
    p_ = _bind(np.linalg.tensorinv, args, kwargs)
    a, ind = p_["a"], p_["ind"]
    a_ = _arr(a)
    y = LA.tensorinv(a_, ind=ind)
    p = int(np.prod(a_.shape[:ind]))
    y2 = np.reshape(y, (p, p))

    def tensorinv_pullback(ybar: Any) -> Any:
        yb = np.reshape(ybar, (p, p))
        yh = _H(y2)
        return _cts(len(args), project(a, np.reshape(-(yh @ yb @ yh), a_.shape)))

    return y, tensorinv_pullback


def tensorinv_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p_ = _bind(np.linalg.tensorinv, args, kwargs)
    a_, ind = _arr(p_["a"]), p_["ind"]
    y = LA.tensorinv(a_, ind=ind)
    adot = tangents[1]
    p = int(np.prod(a_.shape[:ind]))
    y2 = np.reshape(y, (p, p))
    return y, project(y, np.reshape(-(y2 @ np.reshape(adot, (p, p)) @ y2), y.shape))


def _tensorsolve_perm(nd: int, axes: Any) -> list[int]:
    """The axes of ``a`` as ``tensorsolve`` orders them (``axes`` moved last)."""
    allaxes = list(range(nd))
    for k in axes or ():
        allaxes.remove(k)
        allaxes.insert(nd, k)
    return allaxes


def tensorsolve_rrule(*args: Any, **kwargs: Any) -> Any:
    p_ = _bind(np.linalg.tensorsolve, args, kwargs)
    a, b, axes = p_["a"], p_["b"], p_["axes"]
    a_, b_ = _arr(a), _arr(b)
    x = LA.tensorsolve(a_, b_, axes=axes)
    perm = _tensorsolve_perm(a_.ndim, axes)
    at = np.transpose(a_, perm)
    p = int(np.prod(b_.shape))
    a2 = np.reshape(at, (p, p))
    x1 = np.reshape(x, (p,))

    def tensorsolve_pullback(xbar: Any) -> Any:
        bbar = LA.solve(_H(a2), np.reshape(xbar, (p,)))
        abar = np.transpose(np.reshape(-_outer(bbar, x1), at.shape), np.argsort(perm))
        return _cts(len(args), project(a, abar), project(b, np.reshape(bbar, b_.shape)))

    return x, tensorsolve_pullback


def tensorsolve_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    p_ = _bind(np.linalg.tensorsolve, args, kwargs)
    a_, b_, axes = _arr(p_["a"]), _arr(p_["b"]), p_["axes"]
    x = LA.tensorsolve(a_, b_, axes=axes)
    adot, bdot = tangents[1], tangents[2]  # one may be a zero (wrt=(0, 1))
    perm = _tensorsolve_perm(a_.ndim, axes)
    p = int(np.prod(b_.shape))
    a2 = np.reshape(np.transpose(a_, perm), (p, p))
    rhs: Any = np.reshape(bdot, (p,)) if _given(bdot) else ZeroTangent()
    if _given(adot):
        rhs = rhs - np.reshape(np.transpose(adot, perm), (p, p)) @ np.reshape(x, (p,))
    return x, project(x, np.reshape(LA.solve(a2, rhs), x.shape))


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------

RULES: tuple[RulePair, ...] = (
    # the frules differentiate the matrices (not ord, axis, rcond, ...)
    RulePair(LA.inv, inv_rrule, inv_frule, wrt=(0,)),
    RulePair(LA.det, det_rrule, det_frule, wrt=(0,)),
    RulePair(LA.slogdet, slogdet_rrule, slogdet_frule, wrt=(0,)),
    RulePair(LA.matrix_power, matrix_power_rrule, matrix_power_frule, wrt=(0,)),
    RulePair(LA.cholesky, cholesky_rrule, cholesky_frule, wrt=(0,)),
    RulePair(LA.qr, qr_rrule, qr_frule, wrt=(0,)),
    RulePair(LA.svd, svd_rrule, svd_frule, wrt=(0,)),
    RulePair(LA.svdvals, svdvals_rrule, svdvals_frule, wrt=(0,)),
    RulePair(LA.eigh, eigh_rrule, eigh_frule, wrt=(0,)),
    RulePair(LA.eigvalsh, eigvalsh_rrule, eigvalsh_frule, wrt=(0,)),
    RulePair(LA.eig, eig_rrule, eig_frule, wrt=(0,)),
    RulePair(LA.eigvals, eigvals_rrule, eigvals_frule, wrt=(0,)),
    RulePair(LA.pinv, pinv_rrule, pinv_frule, wrt=(0,)),
    RulePair(LA.norm, norm_rrule, norm_frule, wrt=(0,)),
    RulePair(LA.vector_norm, vector_norm_rrule, vector_norm_frule, wrt=(0,)),
    RulePair(LA.matrix_norm, matrix_norm_rrule, matrix_norm_frule, wrt=(0,)),
    RulePair(LA.cond, cond_rrule, cond_frule, wrt=(0,)),
    RulePair(LA.multi_dot, multi_dot_rrule, multi_dot_frule, wrt=(0,)),
    RulePair(LA.tensorinv, tensorinv_rrule, tensorinv_frule, wrt=(0,)),
    RulePair(LA.solve, solve_rrule, solve_frule, wrt=(0, 1)),
    RulePair(LA.lstsq, lstsq_rrule, lstsq_frule, wrt=(0, 1)),
    RulePair(LA.cross, cross_rrule, cross_frule, wrt=(0, 1)),
    RulePair(LA.tensorsolve, tensorsolve_rrule, tensorsolve_frule, wrt=(0, 1)),
    RulePair(LA.matrix_transpose, transpose=matrix_transpose_transpose, native=matrix_transpose_native),
    RulePair(LA.diagonal, transpose=diagonal_transpose, native=diagonal_native),
    RulePair(LA.trace, transpose=trace_transpose, native=trace_native),
    RulePair(LA.matrix_rank, kind="non_differentiable"),
)
