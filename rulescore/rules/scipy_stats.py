"""Rules for ``scipy.stats`` distributions (registered when SciPy imports ``scipy.stats``, see
:mod:`rulescore.rules._optional`).

``scipy.stats.norm.logpdf`` is a bound method of the ``norm_gen`` instance ``norm``; its
function is ``rv_continuous.logpdf``, shared by every continuous distribution. The rules are
registered on that function, dispatching on the instance's class (``types=(norm_gen,)``), so a
call ``norm.logpdf(x, mu, s)`` differentiates as ``rv_continuous.logpdf(norm, x, mu, s)``; the
instance gets ``NoTangent()``.

Continuous distributions (``norm``, ``t``, ``gamma``, ``beta``, ``expon``, ``laplace``,
``logistic``, ``cauchy``, ``lognorm``): ``logpdf``, ``pdf``, ``cdf``, ``logcdf``, ``sf``, ``logsf``
and ``ppf`` in ``x`` (or ``q``), every shape, ``loc`` and ``scale``. Each distribution gives
the partials of its standardized log-density ``l(z, *shapes)`` (``z = (x - loc) / scale``) and
of its standardized CDF in the shapes; the methods follow by the chain rule. The CDF has no
closed-form derivative in ``t``'s ``df``, ``gamma``'s ``a`` and ``beta``'s ``a``, ``b``: there it
is a fourth-order central difference (relative step ``1e-3``, relative error about ``1e-9``).

Parameters are accepted positionally and by keyword (``norm.logpdf(x, loc=mu, scale=s)``); the
pullback returns cotangents for the positional ones (an engine binds keywords itself).

Also ``multivariate_normal.logpdf``/``pdf`` in ``x``, ``mean`` and ``cov`` (SciPy reads only the
lower triangle of ``cov``, and so does the cotangent) and ``multivariate_normal.entropy`` in
``cov``, ``dirichlet.logpdf``/``pdf`` in ``x`` and ``alpha``, ``logpmf``/``pmf`` of ``poisson``
(``mu``), ``binom`` (``p``) and ``nbinom`` (``n``, ``p``), and ``poisson.cdf`` in ``mu``; counts
and ``loc`` of discrete distributions get ``NoTangent()``. ``chi2`` has every continuous method.

Example:
    >>> import numpy as np, rulescore as rc, scipy.stats as st
    >>> y, back = rc.rrule(st.norm.logpdf, 1.0, 0.5, 2.0)   # x, loc, scale
    >>> [round(float(g), 6) for g in back(1.0)[1:]]          # x, loc, scale
    [-0.125, 0.125, -0.46875]
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sp
import scipy.stats as st

from rulescore import RulePair
from rulescore._linear import dense_tangent
from rulescore._parameters import declare_parameters
from rulescore._projection import project
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules._common import proj

Partials = tuple[Any, ...]


# -- standardized log-density partials: (dl/dz, dl/dshape, ...) ------------------------------

def norm_logpdf_partials(z: Any) -> Partials:
    return (-z,)


def expon_logpdf_partials(z: Any) -> Partials:
    return (np.where(z >= 0, -1.0, 0.0),)


def laplace_logpdf_partials(z: Any) -> Partials:
    return (-np.sign(z),)


def logistic_logpdf_partials(z: Any) -> Partials:
    return (-np.tanh(z / 2),)


def cauchy_logpdf_partials(z: Any) -> Partials:
    return (-2 * z / (1 + np.square(z)),)


def t_logpdf_partials(z: Any, df: Any) -> Partials:
    z2 = np.square(z)
    ddf = (sp.digamma((df + 1) / 2) - sp.digamma(df / 2) - 1 / df - np.log1p(z2 / df)
           + (df + 1) * z2 / (df * (df + z2))) / 2
    return -(df + 1) * z / (df + z2), ddf


def gamma_logpdf_partials(z: Any, a: Any) -> Partials:
    inside = z > 0
    safe = np.where(inside, z, 1.0)
    return np.where(inside, (a - 1) / safe - 1, 0.0), np.where(inside, np.log(safe) - sp.digamma(a), 0.0)


def beta_logpdf_partials(z: Any, a: Any, b: Any) -> Partials:
    inside = (z > 0) & (z < 1)
    safe = np.where(inside, z, 0.5)
    dab = sp.digamma(a + b)
    return (np.where(inside, (a - 1) / safe - (b - 1) / (1 - safe), 0.0),
            np.where(inside, np.log(safe) - sp.digamma(a) + dab, 0.0),
            np.where(inside, np.log1p(-safe) - sp.digamma(b) + dab, 0.0))


def chi2_logpdf_partials(z: Any, df: Any) -> Partials:
    inside = z > 0
    safe = np.where(inside, z, 1.0)
    return (np.where(inside, (df / 2 - 1) / safe - 0.5, 0.0),
            np.where(inside, (np.log(safe / 2) - sp.digamma(df / 2)) / 2, 0.0))


def lognorm_logpdf_partials(z: Any, s: Any) -> Partials:
    inside = z > 0
    safe = np.where(inside, z, 1.0)
    log_z = np.log(safe)
    return (np.where(inside, -(1 + log_z / np.square(s)) / safe, 0.0),
            np.where(inside, -1 / s + np.square(log_z) / s ** 3, 0.0))


# -- standardized CDF partials in the shapes: (dF/dshape, ...) -------------------------------

def _shape_central_difference(dist: Any, z: Any, shapes: tuple[Any, ...], i: int) -> Any:
    """``d cdf(z, *shapes) / d shapes[i]`` by a fourth-order central difference."""
    step = 1e-3 * np.abs(shapes[i])  # shapes of t, gamma and beta are positive

    def at(k: float) -> Any:
        moved = list(shapes)
        moved[i] = shapes[i] + k * step
        return dist.cdf(z, *moved)
    return (at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * step)


def no_shape_cdf_partials(dist: Any, z: Any) -> Partials:
    return ()


def numeric_cdf_partials(dist: Any, z: Any, *shapes: Any) -> Partials:
    return tuple(_shape_central_difference(dist, z, shapes, i) for i in range(len(shapes)))


def lognorm_cdf_partials(dist: Any, z: Any, s: Any) -> Partials:
    inside = z > 0
    w = np.log(np.where(inside, z, 1.0)) / s
    return (np.where(inside, -np.exp(-np.square(w) / 2) / np.sqrt(2 * np.pi) * w / s, 0.0),)


#: Per continuous distribution class: its log-density partials and its CDF shape partials.
CONTINUOUS: dict[type, tuple[Callable[..., Partials], Callable[..., Partials]]] = {
    type(st.norm): (norm_logpdf_partials, no_shape_cdf_partials),
    type(st.expon): (expon_logpdf_partials, no_shape_cdf_partials),
    type(st.laplace): (laplace_logpdf_partials, no_shape_cdf_partials),
    type(st.logistic): (logistic_logpdf_partials, no_shape_cdf_partials),
    type(st.cauchy): (cauchy_logpdf_partials, no_shape_cdf_partials),
    type(st.t): (t_logpdf_partials, numeric_cdf_partials),
    type(st.gamma): (gamma_logpdf_partials, numeric_cdf_partials),
    type(st.beta): (beta_logpdf_partials, numeric_cdf_partials),
    type(st.lognorm): (lognorm_logpdf_partials, lognorm_cdf_partials),
    type(st.chi2): (chi2_logpdf_partials, numeric_cdf_partials),
}


class _Call:
    """A continuous-distribution method call, its parameters parsed as SciPy does."""

    def __init__(self, dist: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> None:
        self.dist = dist
        self.shapes, self.loc, self.scale = dist._parse_args(*args, **kwds)
        self.logpdf_partials, self.cdf_partials = CONTINUOUS[type(dist)]

    def z(self, x: Any) -> Any:
        return (np.subtract(x, self.loc)) / self.scale

    def standard(self, z: Any) -> tuple[Any, Partials, Partials]:
        """``l(z)``, its partials ``(l_z, l_shapes...)`` and the density-scaled CDF partials
        ``(f(z), F_shapes...)``."""
        log_f = self.dist.logpdf(z, *self.shapes)
        dl = self.logpdf_partials(z, *self.shapes)
        return log_f, dl, (np.exp(log_f), *self.cdf_partials(self.dist, z, *self.shapes))

    def chain(self, dz: Any, dshapes: Partials, z: Any, extra_scale: Any = 0.0) -> Partials:
        """Partials in ``(x, *shapes, loc, scale)`` of a function of ``z`` and the shapes."""
        return (dz / self.scale, *dshapes, -dz / self.scale, -dz * z / self.scale - extra_scale)


def logpdf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    z = c.z(x)
    log_f, dl, _ = c.standard(z)
    return log_f - np.log(c.scale), c.chain(dl[0], dl[1:], z, 1 / c.scale)


def pdf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    y, d = logpdf_partials(c, x)
    pdf = np.exp(y)
    return pdf, tuple(pdf * p for p in d)


def cdf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    z = c.z(x)
    _, _, df = c.standard(z)
    return c.dist.cdf(z, *c.shapes), c.chain(df[0], df[1:], z)


def logcdf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    z = c.z(x)
    log_f, _, df = c.standard(z)
    y = c.dist.logcdf(z, *c.shapes)
    # f / F computed in logs (finite in the left tail); the shapes' dF / F directly
    return y, c.chain(np.exp(log_f - y), tuple(d / np.exp(y) for d in df[1:]), z)


def sf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    z = c.z(x)
    _, _, df = c.standard(z)
    return c.dist.sf(z, *c.shapes), c.chain(-df[0], tuple(-d for d in df[1:]), z)


def logsf_partials(c: _Call, x: Any) -> tuple[Any, Partials]:
    z = c.z(x)
    log_f, _, df = c.standard(z)
    y = c.dist.logsf(z, *c.shapes)
    return y, c.chain(-np.exp(log_f - y), tuple(-d / np.exp(y) for d in df[1:]), z)


def ppf_partials(c: _Call, q: Any) -> tuple[Any, Partials]:
    z = c.dist.ppf(q, *c.shapes)
    _, _, df = c.standard(z)
    dq = c.scale / df[0]
    return c.loc + c.scale * z, (dq, *(-dq * d for d in df[1:]), 1.0, z)


def _partials_pullback(skip: int, inputs: tuple[Any, ...], d: Partials) -> Any:
    """The pullback of a distribution method given its partials in ``inputs`` (``x`` and the
    parameters), after ``skip`` arguments without a tangent (the distribution, a pmf's ``k``):
    ``ybar`` times each partial."""
    lead = (NoTangent(),) * (1 + skip)

    def distribution_pullback(ybar: Any) -> Any:
        return (*lead, *(proj(a, ybar * p) for a, p in zip(inputs, d[:len(inputs)], strict=True)))

    return distribution_pullback


def _push(y: Any, partials: Partials, tangents: tuple[Any, ...]) -> Any:
    """``sum(partial * tangent)`` projected on ``y`` (a zero tangent or partial adds nothing)."""
    ydot = sum((p * t for p, t in zip(partials[:len(tangents)], tangents, strict=True)), 0.0)
    return project(y, np.broadcast_to(ydot, np.shape(y)) if np.ndim(y) else ydot)


def continuous_rules(method: Any, partials: Callable[[_Call, Any], tuple[Any, Partials]]
                     ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The rrule and frule of the ``rv_continuous`` method ``method`` (``logpdf``, ``cdf``, ...)
    from ``partials(call, x)``: the value and its partials in ``x``, the shapes, loc and scale."""

    def continuous_rrule(dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        y, d = partials(_Call(dist, args, kwds), x)
        return y, _partials_pullback(1, (x, *args), d)

    def continuous_frule(tangents: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
        y, d = partials(_Call(dist, args, kwds), x)
        return y, _push(y, d, tangents[2:])

    continuous_rrule.__name__ = continuous_rrule.__qualname__ = f"{method.__name__}_rrule"
    continuous_frule.__name__ = continuous_frule.__qualname__ = f"{method.__name__}_frule"
    return continuous_rrule, continuous_frule


# -- discrete distributions: logpmf in the float parameters -----------------------------------

def poisson_logpmf_partials(k: Any, mu: Any) -> Partials:
    return (np.asarray(k) / mu - 1,)


def binom_logpmf_partials(k: Any, n: Any, p: Any) -> Partials:
    return NoTangent(), np.asarray(k) / p - np.subtract(n, k) / (1 - p)


def nbinom_logpmf_partials(k: Any, n: Any, p: Any) -> Partials:
    return sp.digamma(np.add(k, n)) - sp.digamma(n) + np.log(p), n / p - np.asarray(k) / (1 - p)


DISCRETE: dict[type, Callable[..., Partials]] = {
    type(st.poisson): poisson_logpmf_partials,
    type(st.binom): binom_logpmf_partials,
    type(st.nbinom): nbinom_logpmf_partials,
}


def _discrete_partials(dist: Any, k: Any, args: tuple[Any, ...],
                       kwds: dict[str, Any]) -> tuple[Any, Partials]:
    shapes, loc, _ = dist._parse_args(*args, **kwds)
    y = dist.logpmf(k, *args, **kwds)
    return y, (*DISCRETE[type(dist)](np.subtract(k, loc), *shapes), NoTangent())  # loc: a shift of k


def logpmf_rrule(dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    y, d = _discrete_partials(dist, k, args, kwds)
    return y, _partials_pullback(2, args, d)


def logpmf_frule(tangents: Any, dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    y, d = _discrete_partials(dist, k, args, kwds)
    return y, _push(y, d, tangents[3:])


# -- multivariate_normal and dirichlet ---------------------------------------------------------

def _lower(g: Any) -> Any:
    """The gradient in the entries SciPy reads (the lower triangle) of a symmetric-matrix
    gradient ``g``."""
    return np.tril(g + g.T) - np.diag(np.diag(g))


class _Gaussian:
    """``multivariate_normal.logpdf(x, mean, cov)`` and its partials (``cov`` a matrix, a
    vector of variances or a scalar)."""

    def __init__(self, dist: Any, x: Any, mean: Any, cov: Any) -> None:
        self.logpdf = dist.logpdf(x, mean, cov)
        self.x, self.mean, self.cov = x, mean, cov
        # the dimension as SciPy infers it: from mean, else from cov, else 1
        d = np.shape(mean)[-1] if np.ndim(mean) else (np.shape(cov)[-1] if np.ndim(cov) else 1)
        matrix = np.asarray(cov, dtype=float)
        self.full = np.diag(np.broadcast_to(matrix, (d,))) if matrix.ndim < 2 else matrix
        xs = np.asarray(x, dtype=float)
        self.xs = xs[..., None] if d == 1 and (xs.ndim == 0 or xs.shape[-1] != 1) else xs
        self.r = self.xs - (0.0 if mean is None else np.asarray(mean, dtype=float))
        self.precision = np.linalg.inv(self.full)
        self.pr = self.r @ self.precision  # precision is symmetric: rows are (Sigma^-1 r)^T

    def partials(self, w: Any) -> tuple[Any, Any, Any]:
        """Cotangents of ``(x, mean, cov)`` for the per-point weights ``w`` (``ybar``, or
        ``ybar * pdf``)."""
        w = np.asarray(w, dtype=float)[..., None]
        xbar = np.reshape(-w * self.pr, np.shape(self.x))
        w_rows = np.reshape(w, (-1, 1))
        pr = np.reshape(self.pr, (-1, self.pr.shape[-1]))
        mbar = np.sum(w_rows * pr, axis=0)
        g = -0.5 * (np.sum(w_rows) * self.precision - (w_rows * pr).T @ pr)
        cov = np.asarray(self.cov)
        covbar = _lower(g) if cov.ndim == 2 else (np.diag(g) if cov.ndim == 1 else np.sum(np.diag(g)))
        mean_bar = (NoTangent() if self.mean is None
                    else proj(self.mean, np.reshape(mbar, np.shape(self.mean))))
        return proj(self.x, xbar), mean_bar, proj(self.cov, covbar)


def _gaussian_arguments(x: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> tuple[Any, Any]:
    named = dict(zip(("mean", "cov"), args, strict=False))
    return kwds.get("mean", named.get("mean")), kwds.get("cov", named.get("cov", 1))


def mvn_logpdf_rrule(dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
    gauss = _Gaussian(dist, x, *_gaussian_arguments(x, args, kwds))

    def mvn_logpdf_pullback(ybar: Any) -> Any:
        return (NoTangent(), NoTangent(), *gauss.partials(ybar)[:1 + len(args[:2])],
                *(NoTangent() for _ in args[2:]))

    return gauss.logpdf, mvn_logpdf_pullback


def mvn_pdf_rrule(dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
    gauss = _Gaussian(dist, x, *_gaussian_arguments(x, args, kwds))
    pdf = np.exp(gauss.logpdf)

    def mvn_pdf_pullback(ybar: Any) -> Any:
        return (NoTangent(), NoTangent(), *gauss.partials(ybar * pdf)[:1 + len(args[:2])],
                *(NoTangent() for _ in args[2:]))

    return pdf, mvn_pdf_pullback


def _mvn_directional(gauss: _Gaussian, tangents: tuple[Any, ...], nargs: int) -> Any:
    """``d logpdf`` along the tangents of ``(x, mean, cov)``, per point."""
    xdot = dense_tangent(gauss.x, tangents[0])  # any of the three tangents may be zero
    out = -np.sum(gauss.pr * np.reshape(xdot, np.shape(gauss.r)), axis=-1)
    if nargs >= 1 and gauss.mean is not None:
        out = out + gauss.pr @ np.reshape(dense_tangent(gauss.mean, tangents[1]), (-1,))
    if nargs >= 2:
        c = np.asarray(dense_tangent(gauss.cov, tangents[2]), dtype=float)
        d = gauss.full.shape[0]
        sym = np.tril(c) + np.tril(c, -1).T if c.ndim == 2 else np.diag(np.broadcast_to(c, (d,)))
        quad = np.einsum("...i,ij,...j->...", gauss.pr, sym, gauss.pr)
        out = out - 0.5 * (np.sum(gauss.precision * sym) - quad)
    return np.reshape(out, np.shape(gauss.logpdf))


def mvn_logpdf_frule(tangents: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
    gauss = _Gaussian(dist, x, *_gaussian_arguments(x, args, kwds))
    return gauss.logpdf, project(gauss.logpdf, _mvn_directional(gauss, tangents[2:], len(args)))


def mvn_pdf_frule(tangents: Any, dist: Any, x: Any, *args: Any, **kwds: Any) -> Any:
    gauss = _Gaussian(dist, x, *_gaussian_arguments(x, args, kwds))
    pdf = np.exp(gauss.logpdf)
    return pdf, project(pdf, pdf * _mvn_directional(gauss, tangents[2:], len(args)))


def _dirichlet_partials(x: Any, alpha: Any) -> tuple[Any, Any]:
    """Partials of ``dirichlet.logpdf`` in ``x`` (components on the first axis) and ``alpha``."""
    a = np.asarray(alpha, dtype=float)
    xs = np.asarray(x, dtype=float)
    shape = (-1,) + (1,) * (xs.ndim - 1)
    log_x = np.log(xs)
    dalpha = sp.digamma(np.sum(a)) - sp.digamma(a)
    return (np.reshape(a, shape) - 1) / xs, (np.reshape(dalpha, shape) + log_x)


def dirichlet_logpdf_rrule(dist: Any, x: Any, alpha: Any) -> Any:
    def dirichlet_logpdf_pullback(ybar: Any) -> Any:
        dx, dalpha = _dirichlet_partials(x, alpha)
        abar = np.sum(np.reshape(ybar * dalpha, (np.shape(dalpha)[0], -1)), axis=1)
        return NoTangent(), NoTangent(), proj(x, ybar * dx), proj(alpha, abar)

    return dist.logpdf(x, alpha), dirichlet_logpdf_pullback


def dirichlet_logpdf_frule(tangents: Any, dist: Any, x: Any, alpha: Any) -> Any:
    y = dist.logpdf(x, alpha)
    dx, dalpha = _dirichlet_partials(x, alpha)
    xdot, adot = dense_tangent(x, tangents[2]), dense_tangent(alpha, tangents[3])
    shape = (-1,) + (1,) * (np.ndim(x) - 1)
    ydot = np.sum(dx * xdot, axis=0) + np.sum(dalpha * np.reshape(adot, shape), axis=0)
    return y, project(y, np.reshape(ydot, np.shape(y)))


# -- pmf, poisson's cdf, dirichlet.pdf, multivariate_normal.entropy (autograd's coverage) ------

def pmf_rrule(dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    """``exp(logpmf)``: the logpmf partials times the pmf."""
    logp, d = _discrete_partials(dist, k, args, kwds)
    y = np.exp(logp)

    logpmf_pullback = _partials_pullback(2, args, d)

    def pmf_pullback(ybar: Any) -> Any:
        return logpmf_pullback(ybar * y)

    return y, pmf_pullback


def pmf_frule(tangents: Any, dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    logp, d = _discrete_partials(dist, k, args, kwds)
    y = np.exp(logp)
    return y, _push(y, tuple(y * p for p in d), tangents[3:])  # a zero partial (loc's) adds nothing


def _poisson_cdf_partial(dist: Any, k: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> tuple[Any, Any]:
    """``d/dmu P(K <= k) = -pmf(floor(k), mu)`` (the loc shifts k: no tangent)."""
    (mu,), loc, _ = dist._parse_args(*args, **kwds)
    return dist.cdf(k, *args, **kwds), -st.poisson.pmf(np.floor(np.subtract(k, loc)), mu)


def poisson_cdf_rrule(dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    y, dmu = _poisson_cdf_partial(dist, k, args, kwds)

    def poisson_cdf_pullback(ybar: Any) -> Any:
        rest = [NoTangent()] * len(args)
        if args:
            rest[0] = proj(args[0], ybar * dmu)
        return (NoTangent(), NoTangent(), NoTangent(), *rest)

    return y, poisson_cdf_pullback


def poisson_cdf_frule(tangents: Any, dist: Any, k: Any, *args: Any, **kwds: Any) -> Any:
    y, dmu = _poisson_cdf_partial(dist, k, args, kwds)
    return y, _push(y, (dmu,), tuple(tangents[3:4]))


def dirichlet_pdf_rrule(dist: Any, x: Any, alpha: Any) -> Any:
    """``exp(logpdf)``: the logpdf's cotangents for ``ybar * pdf``."""
    y = dist.pdf(x, alpha)
    _, back = dirichlet_logpdf_rrule(dist, x, alpha)

    def dirichlet_pdf_pullback(ybar: Any) -> Any:
        return back(ybar * y)

    return y, dirichlet_pdf_pullback


def dirichlet_pdf_frule(tangents: Any, dist: Any, x: Any, alpha: Any) -> Any:
    y = dist.pdf(x, alpha)
    _, dlog = dirichlet_logpdf_frule(tangents, dist, x, alpha)
    return y, project(y, y * dlog)


def _entropy_partial(args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
    """``d entropy / d cov``: ``inv(cov) / 2`` in the entries SciPy reads (the lower triangle);
    ``1 / (2 v)`` per variance of a diagonal; ``dim / (2 v)`` for one isotropic variance."""
    bound = dict(zip(("mean", "cov"), args, strict=False)) | kwds
    cov, mean = bound.get("cov", 1), bound.get("mean")
    if np.ndim(cov) == 0:
        return (1 if mean is None else np.size(mean)) / (2 * np.asarray(cov, dtype=float))
    if np.ndim(cov) == 1:
        return 1 / (2 * np.asarray(cov, dtype=float))
    return _lower(np.linalg.inv(cov) / 2)


def mvn_entropy_rrule(dist: Any, *args: Any, **kwds: Any) -> Any:
    y = dist.entropy(*args, **kwds)

    def mvn_entropy_pullback(ybar: Any) -> Any:
        rest: list[Any] = [NoTangent()] * len(args)
        if args:
            rest[0] = ZeroTangent()  # the entropy does not depend on the mean
        if len(args) >= 2:
            rest[1] = proj(args[1], ybar * _entropy_partial(args, kwds))
        return (NoTangent(), NoTangent(), *rest)

    return y, mvn_entropy_pullback


def mvn_entropy_frule(tangents: Any, dist: Any, *args: Any, **kwds: Any) -> Any:
    y = dist.entropy(*args, **kwds)
    return y, project(y, np.sum(_entropy_partial(args, kwds) * tangents[3]))  # wrt=(2,): cov's


#: The partials of each ``rv_continuous`` method with a rule.
_METHODS = {
    st.rv_continuous.logpdf: logpdf_partials,
    st.rv_continuous.pdf: pdf_partials,
    st.rv_continuous.cdf: cdf_partials,
    st.rv_continuous.logcdf: logcdf_partials,
    st.rv_continuous.sf: sf_partials,
    st.rv_continuous.logsf: logsf_partials,
    st.rv_continuous.ppf: ppf_partials,
}

_MVN = type(st.multivariate_normal)
_DIRICHLET = type(st.dirichlet)

RULES: tuple[RulePair, ...] = (
    *(RulePair(method, *continuous_rules(method, partials), (dist,))
      for method, partials in _METHODS.items() for dist in CONTINUOUS),
    *(RulePair(st.rv_discrete.logpmf, logpmf_rrule, logpmf_frule, (dist,)) for dist in DISCRETE),
    RulePair(_MVN.logpdf, mvn_logpdf_rrule, mvn_logpdf_frule, (_MVN,)),
    RulePair(_MVN.pdf, mvn_pdf_rrule, mvn_pdf_frule, (_MVN,)),
    RulePair(_DIRICHLET.logpdf, dirichlet_logpdf_rrule, dirichlet_logpdf_frule, (_DIRICHLET,)),
    *(RulePair(st.rv_discrete.pmf, pmf_rrule, pmf_frule, (dist,)) for dist in DISCRETE),
    RulePair(st.rv_discrete.cdf, poisson_cdf_rrule, poisson_cdf_frule, (type(st.poisson),)),
    RulePair(_DIRICHLET.pdf, dirichlet_pdf_rrule, dirichlet_pdf_frule, (_DIRICHLET,)),
    RulePair(_MVN.entropy, mvn_entropy_rrule, mvn_entropy_frule, (_MVN,), wrt=(2,)),
)


# -- parameters, for engines binding keywords (``norm.logpdf(x, loc=mu, scale=s)``) ------------

def _parameter(name: str, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)


def distribution_parameters(args: tuple[Any, ...], first: str = "x", scale: bool = True) -> Any:
    """The positional parameters of a distribution method called as ``method(dist, x, ...)``:
    ``x`` (or ``q``, ``k``), the instance's shapes, ``loc`` and (continuous) ``scale``.

    Example:
        >>> import scipy.stats as st
        >>> str(distribution_parameters((st.t,)))
        '(self, x, df, loc=0.0, scale=1.0)'
    """
    if not args or type(args[0]) not in CONTINUOUS and type(args[0]) not in DISCRETE:
        return None
    shapes = [s.strip() for s in (args[0].shapes or "").split(",") if s.strip()]
    return inspect.Signature([_parameter("self"), _parameter(first), *map(_parameter, shapes),
                              _parameter("loc", 0.0), *([_parameter("scale", 1.0)] if scale else [])])


for _method in _METHODS:
    declare_parameters(_method, functools.partial(
        distribution_parameters, first="q" if _method is st.rv_continuous.ppf else "x"))
for _method in (st.rv_discrete.logpmf, st.rv_discrete.pmf, st.rv_discrete.cdf):
    declare_parameters(_method, functools.partial(distribution_parameters, first="k", scale=False))
