"""Rules for ``scipy.spatial.distance`` (registered when SciPy imports it, see
:mod:`rulescore.rules._optional`): ``pdist`` and ``cdist`` for the metrics ``sqeuclidean``,
``euclidean`` and ``cityblock``, and ``squareform`` both ways (condensed vector to matrix and
back), on real arrays: the distances of scikit-learn's kernels and of Gaussian-process code.

SciPy computes these in compiled code. The rules write each distance from the pairwise
differences with NumPy, so their pullbacks are traced again by an outer derivative (second
order). ``euclidean`` and ``cityblock`` are not differentiable where two points coincide (a
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

from typing import Any

import numpy as np
import scipy.spatial.distance as ssd

from rulescore._checks import callable_name
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._rule_pair import RulePair
from rulescore._zeros import NoTangent
from rulescore.rules._common import bind_arguments, family_rules

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


def _pair_index(n: int) -> tuple[Any, Any]:
    """The rows of the pairs ``i < j`` in ``pdist``'s (condensed) order."""
    return np.triu_indices(n, 1)


def _differences(a: Any, b: Any, rows: Any, cols: Any) -> Any:
    return a[rows] - b[cols]


def _distances(metric: str, differences: Any) -> Any:
    """Each pair's distance from its coordinate differences (the last axis)."""
    if metric == "cityblock":
        return np.sum(np.abs(differences), axis=-1)
    squared = np.sum(differences * differences, axis=-1)
    if metric == "sqeuclidean":
        return squared
    # the square root away from zero: a traced derivative of this body (second order) takes the
    # zero subgradient at coincident points too, not 0 * inf
    positive = squared > 0
    return np.where(positive, np.sqrt(np.where(positive, squared, 1.0)), 0.0)


def _difference_weights(metric: str, differences: Any, distances: Any, dbar: Any) -> Any:
    """The cotangent of the coordinate differences for the distances' cotangent ``dbar``."""
    if metric == "cityblock":
        return dbar[..., None] * np.sign(differences)
    if metric == "sqeuclidean":
        return 2.0 * dbar[..., None] * differences
    positive = distances > 0
    scale = np.where(positive, dbar / np.where(positive, distances, 1.0), 0.0)
    return scale[..., None] * differences


def _difference_tangent(metric: str, differences: Any, distances: Any, ddot: Any) -> Any:
    """The tangent of the distances along the tangent ``ddot`` of the differences."""
    if metric == "cityblock":
        return np.sum(np.sign(differences) * ddot, axis=-1)
    inner = np.sum(differences * ddot, axis=-1)
    if metric == "sqeuclidean":
        return 2.0 * inner
    positive = distances > 0
    return np.where(positive, inner / np.where(positive, distances, 1.0), 0.0)


def _pair_matrix(weights: Any, n: int) -> Any:
    """``(n, n, ...)``: the pair ``i < j``'s row of ``weights`` at ``[i, j]``, zero elsewhere (a
    gather, which an outer derivative traces)."""
    rows, cols = _pair_index(n)
    slot = np.zeros((n, n), dtype=int)
    slot[rows, cols] = np.arange(1, len(rows) + 1)
    zero = np.zeros((1, *np.shape(weights)[1:]), dtype=np.result_type(weights, float))
    return np.concatenate([zero, weights])[slot]


# -- pdist, cdist -------------------------------------------------------------------------------

def pdist_rrule(x: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.pdist, args, kwargs, (x,))
    xs = np.asarray(x)
    rows, cols = _pair_index(xs.shape[0])
    differences = _differences(xs, xs, rows, cols)
    y = _distances(metric, differences)

    def pdist_pullback(ybar: Any) -> Any:
        pairs = _pair_matrix(_difference_weights(metric, differences, y, ybar), xs.shape[0])
        return NoTangent(), project(x, np.sum(pairs, axis=1) - np.sum(pairs, axis=0)), *(
            NoTangent() for _ in args)

    return y, pdist_pullback


def pdist_frule(tangents: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.pdist, args, kwargs, (x,))
    xs = np.asarray(x)
    rows, cols = _pair_index(xs.shape[0])
    differences = _differences(xs, xs, rows, cols)
    y = _distances(metric, differences)
    xdot = dense_tangent(x, tangents[1])
    return y, project(y, _difference_tangent(metric, differences, y, _differences(xdot, xdot, rows, cols)))


def _all_pairs(na: int, nb: int) -> tuple[Any, Any]:
    rows, cols = np.meshgrid(np.arange(na), np.arange(nb), indexing="ij")
    return rows.ravel(), cols.ravel()


def cdist_rrule(xa: Any, xb: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.cdist, args, kwargs, (xa, xb))
    a, b = np.asarray(xa), np.asarray(xb)
    rows, cols = _all_pairs(a.shape[0], b.shape[0])
    differences = _differences(a, b, rows, cols)
    flat = _distances(metric, differences)

    def cdist_pullback(ybar: Any) -> Any:
        weights = _difference_weights(metric, differences, flat, np.reshape(ybar, -1))
        pairs = np.reshape(weights, (a.shape[0], b.shape[0], -1))
        return (NoTangent(), project(xa, np.sum(pairs, axis=1)), project(xb, -np.sum(pairs, axis=0)),
                *(NoTangent() for _ in args))

    return np.reshape(flat, (a.shape[0], b.shape[0])), cdist_pullback


def cdist_frule(tangents: Any, xa: Any, xb: Any, *args: Any, **kwargs: Any) -> Any:
    metric = _metric(ssd.cdist, args, kwargs, (xa, xb))
    a, b = np.asarray(xa), np.asarray(xb)
    rows, cols = _all_pairs(a.shape[0], b.shape[0])
    differences = _differences(a, b, rows, cols)
    flat = _distances(metric, differences)
    adot, bdot = dense_tangent(xa, tangents[1]), dense_tangent(xb, tangents[2])
    ydot = _difference_tangent(metric, differences, flat, _differences(adot, bdot, rows, cols))
    y = np.reshape(flat, (a.shape[0], b.shape[0]))
    return y, project(y, np.reshape(ydot, y.shape))


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
    rows, cols = _pair_index(n)

    def squareform_pullback(ybar: Any) -> Any:
        # to a matrix: each entry of v appears twice; to a vector: SciPy reads the upper triangle
        xbar = ybar[rows, cols] + ybar[cols, rows] if to_matrix else _pair_matrix(ybar, n)
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


RULES: tuple[RulePair, ...] = family_rules(globals(), (ssd.pdist, ssd.cdist, ssd.squareform))
