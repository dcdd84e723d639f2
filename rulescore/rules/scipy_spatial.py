"""Rules for ``scipy.spatial.distance`` (registered when SciPy imports it, see
:mod:`rulescore.rules._optional`): ``pdist`` and ``cdist`` for the metrics ``sqeuclidean``,
``euclidean`` and ``cityblock``, and ``squareform`` both ways (condensed vector to matrix and
back), on real arrays: the distances of scikit-learn's kernels and of Gaussian-process code.

SciPy computes these in compiled code; the rules keep SciPy's values and write the derivatives
with matrix products of the points (no array of all pairwise differences, except for
``cityblock``), with NumPy and these functions themselves, so an outer derivative traces them
again (second order). ``euclidean`` and ``cityblock`` are not differentiable where two points coincide (a
zero distance, a zero coordinate difference): there the rules take the zero subgradient, as
``numpy.linalg.norm`` and ``numpy.abs`` do. Other metrics, weights (``w=``) and a callable metric
raise ``NotImplementedError`` naming the function and the metric rather than give a wrong
gradient.

Example:
    >>> import numpy as np, rulescore as rc, scipy.spatial.distance as ssd
    >>> x = np.array([[0.0, 0.0], [3.0, 4.0]])
    >>> y, back = rc.rrule(ssd.pdist, x, "euclidean")
    >>> y
    array([5.])
    >>> back(np.array([1.0]))[1]
    array([[-0.6, -0.8],
           [ 0.6,  0.8]])
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import scipy.spatial.distance as ssd

from rulescore import RulePair
from rulescore._checks import callable_name
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._zeros import NoTangent
from rulescore.rules._common import bind_arguments

#: The metrics with rules.
METRICS = ("sqeuclidean", "euclidean", "cityblock")
#: SciPy's other spellings of them.
_ALIASES = {"sqe": "sqeuclidean", "sqeuclid": "sqeuclidean", "euclid": "euclidean", "eu": "euclidean",
            "e": "euclidean", "cblock": "cityblock", "cb": "cityblock", "c": "cityblock",
            "manhattan": "cityblock"}


def _metric(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], arrays: tuple[Any, ...]) -> str:
    """The metric of a ``pdist``/``cdist`` call (after refusing what these rules do not cover)."""
    options = bind_arguments(f, (*arrays, *args), kwargs)
    metric = options["metric"]
    name = _ALIASES.get(metric, metric) if isinstance(metric, str) else metric
    if name not in METRICS:
        shown = metric if isinstance(metric, str) else callable_name(metric)
        raise NotImplementedError(
            f"the rules for {callable_name(f)} cover the metrics {', '.join(METRICS)}, not {shown!r}: "
            "write that distance with NumPy broadcasting (for example "
            "np.abs(x[:, None, :] - x[None, :, :]).max(-1) for chebyshev), or register rules for "
            f"{callable_name(f)} with rc.rrule.register and rc.frule.register")
    extra = {k: v for k, v in options.get("kwargs", {}).items() if v is not None}
    if options.get("out") is not None or extra:
        raise NotImplementedError(f"the rules for {callable_name(f)} take no out= and no metric options "
                                  f"({', '.join(sorted(extra)) or 'out'}); weight the coordinates "
                                  "before the call instead (x * np.sqrt(w) for sqeuclidean)")
    for a in arrays:
        if np.iscomplexobj(a):
            raise TypeError(f"the rules for {callable_name(f)} handle real arrays only")
    return str(name)


@functools.lru_cache(maxsize=8)
def _pair_index(n: int) -> tuple[Any, Any]:
    """The rows and columns of the pairs ``i < j`` in ``pdist``'s (condensed) order (read-only
    arrays, kept for a few sizes: a GP's gradient asks for the same ``n`` every time)."""
    rows, cols = np.triu_indices(n, 1)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def _scale(metric: str, distances: Any, dbar: Any) -> Any:
    """For ``sqeuclidean`` and ``euclidean``: the factor ``s`` of each pair's cotangent of the
    difference ``a - b`` (``s (a - b)``): ``2 dbar``, or ``dbar / d`` (zero where ``d`` is)."""
    if metric == "sqeuclidean":
        return 2.0 * dbar
    positive = distances > 0
    return np.where(positive, dbar / np.where(positive, distances, 1.0), 0.0)


def _signs(a: Any, b: Any) -> Any:
    """``sign(a_i - b_j)`` per pair and coordinate, ``(na, nb, d)`` (``cityblock``'s derivative)."""
    return np.sign(a[:, None, :] - b[None, :, :])


def _cross_cotangents(metric: str, a: Any, b: Any, distances: Any, g: Any) -> tuple[Any, Any]:
    """The cotangents of ``a`` and ``b`` for the cotangent ``g`` of ``cdist(a, b, metric)``, with
    matrix products (``(na, nb)`` weights), no ``(na, nb, d)`` array except for ``cityblock``."""
    if metric == "cityblock":
        signs = _signs(a, b)
        return np.einsum("ab,abk->ak", g, signs), -np.einsum("ab,abk->bk", g, signs)
    s = _scale(metric, distances, g)
    return (np.sum(s, axis=1)[:, None] * a - s @ b, np.sum(s, axis=0)[:, None] * b - s.T @ a)


def _cross_tangent(metric: str, a: Any, b: Any, distances: Any, adot: Any, bdot: Any) -> Any:
    """The tangent of ``cdist(a, b, metric)`` along ``(adot, bdot)``."""
    if metric == "cityblock":
        return np.sum(_signs(a, b) * (adot[:, None, :] - bdot[None, :, :]), axis=-1)
    # (a - b) . (adot - bdot), expanded into matrix products
    inner = (np.sum(a * adot, axis=1)[:, None] + np.sum(b * bdot, axis=1)[None, :] - a @ bdot.T - adot @ b.T)
    if metric == "sqeuclidean":
        return 2.0 * inner
    return _scale(metric, distances, inner)


# -- pdist, cdist -------------------------------------------------------------------------------

def pdist_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.pdist, args, kwargs, (x,))
    y = ssd.pdist(x, *args, **kwargs)

    def pdist_pullback(ybar: Any) -> Any:
        # the pairs i < j are half of cdist(x, x): with the symmetric cotangent each counts twice,
        # and x's two roles give the same cotangent (the derivative is symmetric)
        g = ssd.squareform(ybar, checks=False)
        distances = ssd.squareform(y, checks=False) if metric == "euclidean" else None
        xbar = _cross_cotangents(metric, np.asarray(x), np.asarray(x), distances, g)[0]
        return NoTangent(), project(x, xbar), *(NoTangent() for _ in args)

    return y, pdist_pullback


def pdist_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.pdist, args, kwargs, (x,))
    y = ssd.pdist(x, *args, **kwargs)
    xs, xdot = np.asarray(x), np.asarray(dense_tangent(x, tangents[1]))
    distances = ssd.squareform(y, checks=False) if metric == "euclidean" else None
    rows, cols = _pair_index(xs.shape[0])
    return y, project(y, _cross_tangent(metric, xs, xs, distances, xdot, xdot)[rows, cols])


def cdist_rrule(xa: Any, xb: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.cdist, args, kwargs, (xa, xb))
    y = ssd.cdist(xa, xb, *args, **kwargs)

    def cdist_pullback(ybar: Any) -> Any:
        abar, bbar = _cross_cotangents(metric, np.asarray(xa), np.asarray(xb), y, ybar)
        return NoTangent(), project(xa, abar), project(xb, bbar), *(NoTangent() for _ in args)

    return y, cdist_pullback


def cdist_frule(tangents: Any, xa: Any, xb: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.cdist, args, kwargs, (xa, xb))
    y = ssd.cdist(xa, xb, *args, **kwargs)
    adot, bdot = (np.asarray(dense_tangent(v, t)) for v, t in ((xa, tangents[1]), (xb, tangents[2])))
    return y, project(y, _cross_tangent(metric, np.asarray(xa), np.asarray(xb), y, adot, bdot))


def _pair_matrix(values: Any, n: int) -> Any:
    """``(n, n)``: the pair ``i < j``'s entry of ``values`` at ``[i, j]``, zero elsewhere (a
    gather, which an outer derivative traces)."""
    rows, cols = _pair_index(n)
    slot = np.zeros((n, n), dtype=int)
    slot[rows, cols] = np.arange(1, len(rows) + 1)
    return np.concatenate([np.zeros(1, dtype=np.result_type(values, float)), values])[slot]


def _t(m: Any) -> Any:
    return np.swapaxes(m, -1, -2)


# -- squareform ---------------------------------------------------------------------------------

def _side(x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[bool, int]:
    """Whether ``squareform`` makes a matrix of ``x`` (not a vector), and the matrix's size."""
    options = bind_arguments(ssd.squareform, (x, *args), kwargs)
    force, shape = str(options["force"]).lower(), np.shape(x)
    to_matrix = force == "tomatrix" or (force != "tovector" and len(shape) == 1)
    if to_matrix:
        return True, int(np.ceil(np.sqrt(2 * shape[0])))
    return False, shape[0]


def squareform_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    y = ssd.squareform(x, *args, **kwargs)
    to_matrix, n = _side(x, args, kwargs)

    def squareform_pullback(ybar: Any) -> Any:
        # to a matrix: each entry of v appears twice, at [i, j] and [j, i] (the upper triangle of
        # ybar + ybar^T, which squareform reads in v's order); to a vector: SciPy reads the upper triangle
        xbar = ssd.squareform(ybar + _t(ybar), checks=False) if to_matrix else _pair_matrix(ybar, n)
        return NoTangent(), project(x, xbar), *(NoTangent() for _ in args)

    return y, squareform_pullback


def _symmetric(v: Any, n: int) -> Any:
    """The symmetric matrix of a condensed vector, zero diagonal."""
    upper = _pair_matrix(v, n)
    return upper + upper.T


def squareform_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    y = ssd.squareform(x, *args, **kwargs)
    to_matrix, n = _side(x, args, kwargs)
    xdot = dense_tangent(x, tangents[1])
    rows, cols = _pair_index(n)
    return y, project(y, _symmetric(xdot, n) if to_matrix else xdot[rows, cols])


RULES: tuple[RulePair, ...] = (
    RulePair(ssd.pdist, pdist_rrule, pdist_frule),
    RulePair(ssd.cdist, cdist_rrule, cdist_frule),
    RulePair(ssd.squareform, squareform_rrule, squareform_frule),
)
