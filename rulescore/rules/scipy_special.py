"""Rules for ``scipy.special`` (registered when SciPy imports ``scipy.special``, see
:mod:`rulescore.rules._optional`).

Most are element-wise ufuncs, declared by their partial derivatives with
``RulePair(f, partials=...)``; the partials are written with NumPy and SciPy calls so that
they differentiate again. ``softmax`` and ``log_softmax`` have their own rules (an axis-wise
Jacobian). Integer orders (``polygamma``'s ``n``, ``multigammaln``'s ``d``) get
``NoTangent()``.

Some derivatives have no closed form: ``zeta(x, q)`` in ``x``, ``gammainc``/``gammaincc`` in
``a``, ``wright_bessel``/``log_wright_bessel`` in ``a`` and ``b``. Their cotangents are a
fourth-order central difference with a relative step of ``1e-3`` (relative error about
``1e-10`` away from the poles); the derivatives the library documents as exact are ``zeta`` in
``q``, ``gammainc``/``gammaincc`` in ``x`` and the Wright functions in ``x``.

Example:
    >>> import numpy as np, rulescore as rc, scipy.special as sp
    >>> y, back = rc.rrule(sp.gammaln, 3.0)
    >>> bool(np.isclose(back(1.0)[1], sp.digamma(3.0)))
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sp

from rulescore import RulePair
from rulescore._projection import project
from rulescore._zeros import NoTangent
from rulescore.rules import reductions
from rulescore.rules._common import proj

_SQRT_PI_2 = np.sqrt(np.pi) / 2
_SQRT_2PI = np.sqrt(2 * np.pi)


# -- partial derivatives ---------------------------------------------------------------------

def expit_partials(x: Any, result: Any) -> Any:
    return result * (1 - result)


def expm1_partials(x: Any, result: Any) -> Any:
    return result + 1


def log1p_partials(x: Any) -> Any:
    return 1 / (1 + x)


def cosm1_partials(x: Any) -> Any:
    return -np.sin(x)


def logit_partials(p: Any) -> Any:
    return 1 / (p * (1 - p))


def gammaln_partials(x: Any) -> Any:
    return sp.digamma(x)


def digamma_partials(x: Any) -> Any:
    return sp.polygamma(1, x)


def gamma_partials(x: Any, result: Any) -> Any:
    return result * sp.digamma(x)


def beta_partials(a: Any, b: Any, result: Any) -> Any:
    dab = sp.digamma(np.add(a, b))
    return result * (sp.digamma(a) - dab), result * (sp.digamma(b) - dab)


def betaln_partials(a: Any, b: Any) -> Any:
    dab = sp.digamma(np.add(a, b))
    return sp.digamma(a) - dab, sp.digamma(b) - dab


def erf_partials(x: Any) -> Any:
    return np.exp(-np.square(x)) / _SQRT_PI_2


def erfc_partials(x: Any) -> Any:
    return -np.exp(-np.square(x)) / _SQRT_PI_2


def erfinv_partials(y: Any, result: Any) -> Any:
    return _SQRT_PI_2 * np.exp(np.square(result))


def erfcinv_partials(y: Any, result: Any) -> Any:
    return -_SQRT_PI_2 * np.exp(np.square(result))


def ndtr_partials(x: Any) -> Any:
    return np.exp(-np.square(x) / 2) / _SQRT_2PI


def log_ndtr_partials(x: Any, result: Any) -> Any:
    # phi(x) / Phi(x), in logs: finite far into the left tail
    return np.exp(-np.square(x) / 2 - result) / _SQRT_2PI


def ndtri_partials(p: Any, result: Any) -> Any:
    return _SQRT_2PI * np.exp(np.square(result) / 2)


def xlogy_partials(x: Any, y: Any) -> Any:
    return np.log(y), x / y


def xlog1py_partials(x: Any, y: Any) -> Any:
    return np.log1p(y), x / (1 + y)


def entr_partials(x: Any) -> Any:
    return -(np.log(x) + 1)


def rel_entr_partials(x: Any, y: Any) -> Any:
    return np.log(x / y) + 1, -x / y


def kl_div_partials(x: Any, y: Any) -> Any:
    return np.log(x / y), 1 - x / y


def i0_partials(x: Any) -> Any:
    return sp.i1(x)


def i0e_partials(x: Any, result: Any) -> Any:
    return sp.i1e(x) - np.sign(x) * result


def i1_partials(x: Any, result: Any) -> Any:
    # I1'(x) = I0(x) - I1(x)/x, which is 1/2 at 0
    return sp.i0(x) - np.where(x == 0, 0.5, result / np.where(x == 0, 1, x))


def i1e_partials(x: Any, result: Any) -> Any:
    return sp.i0e(x) - np.where(x == 0, 0.5, result / np.where(x == 0, 1, x)) - np.sign(x) * result


def _central_difference(f: Any, args: tuple[Any, ...], i: int, step: Any) -> Any:
    """``d f(*args) / d args[i]`` by a fourth-order central difference with step ``step``."""
    def at(k: float) -> Any:
        moved = list(args)
        moved[i] = np.add(args[i], k * step)
        return f(*moved)
    return (at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * step)


def zeta_partials(x: Any, q: Any = None) -> Any:
    # d/dx has no closed form: a central difference, with a step that keeps off the pole at 1;
    # zeta(x) alone is Riemann's zeta (defined below 1 too)
    step = 1e-3 * np.minimum(np.maximum(np.abs(x), 1), np.abs(np.subtract(x, 1)))
    dx = _central_difference(sp.zeta, (x,) if q is None else (x, q), 0, step)
    return dx if q is None else (dx, -x * sp.zeta(np.add(x, 1), q))


def _gammainc_density(a: Any, x: Any) -> Any:
    return np.exp((np.subtract(a, 1)) * np.log(x) - x - sp.gammaln(a))


def gammainc_partials(a: Any, x: Any) -> Any:
    step = 1e-3 * np.abs(a)  # a > 0
    return _central_difference(sp.gammainc, (a, x), 0, step), _gammainc_density(a, x)


def gammaincc_partials(a: Any, x: Any) -> Any:
    step = 1e-3 * np.abs(a)
    return _central_difference(sp.gammaincc, (a, x), 0, step), -_gammainc_density(a, x)


def _wright_order_steps(a: Any, b: Any) -> tuple[Any, Any]:
    return 1e-3 * np.maximum(np.abs(a), 1), 1e-3 * np.maximum(np.abs(b), 1)


def wright_bessel_partials(a: Any, b: Any, x: Any) -> Any:
    """In ``x``: ``d/dx Phi(a, b; x) = Phi(a, a + b; x)`` (the series term by term); in ``a`` and
    ``b`` a central difference (no closed form; ``a`` within ``2e-3`` of 0 has none)."""
    step_a, step_b = _wright_order_steps(a, b)
    return (_central_difference(sp.wright_bessel, (a, b, x), 0, step_a),
            _central_difference(sp.wright_bessel, (a, b, x), 1, step_b), sp.wright_bessel(a, np.add(a, b), x))


def log_wright_bessel_partials(a: Any, b: Any, x: Any, result: Any) -> Any:
    """``wright_bessel``'s partials over its value: in ``x``, ``exp(log Phi(a, a + b; x) - result)``."""
    step_a, step_b = _wright_order_steps(a, b)
    return (_central_difference(sp.log_wright_bessel, (a, b, x), 0, step_a),
            _central_difference(sp.log_wright_bessel, (a, b, x), 1, step_b),
            np.exp(sp.log_wright_bessel(a, np.add(a, b), x) - result))


# -- functions with an integer order: polygamma(n, x), multigammaln(a, d) ----------------------

def polygamma_rrule(n: Any, x: Any) -> Any:
    def polygamma_pullback(ybar: Any) -> Any:
        return NoTangent(), NoTangent(), proj(x, ybar * sp.polygamma(np.add(n, 1), x))

    return sp.polygamma(n, x), polygamma_pullback


def polygamma_frule(tangents: Any, n: Any, x: Any) -> Any:
    y = sp.polygamma(n, x)
    return y, project(y, tangents[2] * sp.polygamma(np.add(n, 1), x))


def _multidigamma(a: Any, d: int) -> Any:
    return sum(sp.digamma(np.subtract(a, j / 2)) for j in range(d))


def multigammaln_rrule(a: Any, d: int) -> Any:
    def multigammaln_pullback(ybar: Any) -> Any:
        return NoTangent(), proj(a, ybar * _multidigamma(a, d)), NoTangent()

    return sp.multigammaln(a, d), multigammaln_pullback


def multigammaln_frule(tangents: Any, a: Any, d: int) -> Any:
    y = sp.multigammaln(a, d)
    return y, project(y, tangents[1] * _multidigamma(a, d))


# -- Bessel functions, rgamma, gammasgn, betainc (autograd's scipy.special coverage) -----------
# Orders: jv/iv/ive differentiate in a float order v by a central difference (no closed form);
# yn's order is an integer (NoTangent). betainc has no closed form in a and b either.

def j0_partials(x: Any) -> Any:
    return -sp.j1(x)


def j1_partials(x: Any) -> Any:
    return (sp.j0(x) - sp.jv(2, x)) / 2


def y0_partials(x: Any) -> Any:
    return -sp.y1(x)


def y1_partials(x: Any) -> Any:
    return (sp.y0(x) - sp.yn(2, x)) / 2


def _order_step(v: Any) -> Any:
    return 1e-3 * np.maximum(np.abs(v), 1)


def jv_partials(v: Any, x: Any) -> Any:
    return _central_difference(sp.jv, (v, x), 0, _order_step(v)), (sp.jv(v - 1, x) - sp.jv(v + 1, x)) / 2


def iv_partials(v: Any, x: Any) -> Any:
    return _central_difference(sp.iv, (v, x), 0, _order_step(v)), (sp.iv(v - 1, x) + sp.iv(v + 1, x)) / 2


def ive_partials(v: Any, x: Any, result: Any) -> Any:
    dx = (sp.ive(v - 1, x) + sp.ive(v + 1, x)) / 2 - np.sign(x) * result
    return _central_difference(sp.ive, (v, x), 0, _order_step(v)), dx


def rgamma_partials(x: Any, result: Any) -> Any:
    """``-psi(x) / gamma(x)``; at the poles of gamma (where rgamma is 0) the limit
    ``(-1)^n n!`` for ``x = -n``."""
    pole = (x <= 0) & (x == np.round(x))
    n = np.where(pole, -x, 0)
    at_pole = np.where(np.mod(n, 2) == 0, 1.0, -1.0) * sp.gamma(n + 1)
    return np.where(pole, at_pole, -sp.digamma(np.where(pole, 0.5, x)) * result)


def betainc_partials(a: Any, b: Any, x: Any) -> Any:
    density = np.exp(sp.xlogy(a - 1, x) + sp.xlog1py(b - 1, -x) - sp.betaln(a, b))
    return (_central_difference(sp.betainc, (a, b, x), 0, 1e-3 * np.abs(a)),
            _central_difference(sp.betainc, (a, b, x), 1, 1e-3 * np.abs(b)), density)


def yn_rrule(n: Any, x: Any) -> Any:
    def yn_pullback(ybar: Any) -> Any:
        dx = (sp.yn(np.subtract(n, 1), x) - sp.yn(np.add(n, 1), x)) / 2
        return NoTangent(), NoTangent(), proj(x, ybar * dx)

    return sp.yn(n, x), yn_pullback


def yn_frule(tangents: Any, n: Any, x: Any) -> Any:
    y = sp.yn(n, x)
    return y, project(y, tangents[2] * (sp.yn(np.subtract(n, 1), x) - sp.yn(np.add(n, 1), x)) / 2)


# -- softmax and log_softmax -----------------------------------------------------------------

def _axis_sum(v: Any, axis: Any) -> Any:
    return np.sum(v, axis=axis, keepdims=True)


def _axis(args: tuple[Any, ...], axis: Any) -> Any:
    """``axis``, passed positionally (``softmax(x, 0)``) or by keyword."""
    return args[0] if args else axis


def _softmax_grad(y: Any, ybar: Any, axis: Any) -> Any:
    return y * (ybar - _axis_sum(ybar * y, axis))


def _log_softmax_grad(y: Any, ybar: Any, axis: Any) -> Any:
    return ybar - np.exp(y) * _axis_sum(ybar, axis)


def _log_softmax_push(y: Any, xdot: Any, axis: Any) -> Any:
    return xdot - _axis_sum(np.exp(y) * xdot, axis)


def normalizer_rules(f: Any, grad: Any, push: Any) -> tuple[Any, Any]:
    """The rules of ``softmax`` or ``log_softmax`` along ``axis`` (positional or keyword):
    ``grad(y, ybar, axis)`` is the cotangent and ``push(y, xdot, axis)`` the tangent.

    Example:
        >>> import numpy as np, scipy.special as sp
        >>> reverse, forward = normalizer_rules(sp.softmax, _softmax_grad, _softmax_grad)
        >>> reverse(np.zeros(2))[1](np.array([1.0, 0.0]))
        (NoTangent(), array([ 0.25, -0.25]))
    """

    def normalizer_rrule(x: Any, *args: Any, axis: Any = None) -> Any:
        axis = _axis(args, axis)
        y = f(x, axis=axis)

        def normalizer_pullback(ybar: Any) -> Any:
            return (NoTangent(), project(x, grad(y, ybar, axis)), *(NoTangent() for _ in args))

        normalizer_pullback.__name__ = normalizer_pullback.__qualname__ = f"{f.__name__}_pullback"
        return y, normalizer_pullback

    def normalizer_frule(tangents: Any, x: Any, *args: Any, axis: Any = None) -> Any:
        axis = _axis(args, axis)
        y = f(x, axis=axis)
        return y, project(y, push(y, tangents[1], axis))

    normalizer_rrule.__name__ = normalizer_rrule.__qualname__ = f"{f.__name__}_rrule"
    normalizer_frule.__name__ = normalizer_frule.__qualname__ = f"{f.__name__}_frule"
    return normalizer_rrule, normalizer_frule


#: The element-wise functions of ``scipy.special`` from their partial derivatives, then the others.
RULES: tuple[RulePair, ...] = (
    RulePair(sp.expit, partials=expit_partials),
    RulePair(sp.logit, partials=logit_partials),
    RulePair(sp.expm1, partials=expm1_partials),
    RulePair(sp.log1p, partials=log1p_partials),
    RulePair(sp.cosm1, partials=cosm1_partials),
    RulePair(sp.gammaln, partials=gammaln_partials),
    RulePair(sp.digamma, partials=digamma_partials),
    RulePair(sp.gamma, partials=gamma_partials),
    RulePair(sp.beta, partials=beta_partials),
    RulePair(sp.betaln, partials=betaln_partials),
    RulePair(sp.erf, partials=erf_partials),
    RulePair(sp.erfc, partials=erfc_partials),
    RulePair(sp.erfinv, partials=erfinv_partials),
    RulePair(sp.erfcinv, partials=erfcinv_partials),
    RulePair(sp.ndtr, partials=ndtr_partials),
    RulePair(sp.log_ndtr, partials=log_ndtr_partials),
    RulePair(sp.ndtri, partials=ndtri_partials),
    RulePair(sp.xlogy, partials=xlogy_partials),
    RulePair(sp.xlog1py, partials=xlog1py_partials),
    RulePair(sp.entr, partials=entr_partials),
    RulePair(sp.rel_entr, partials=rel_entr_partials),
    RulePair(sp.kl_div, partials=kl_div_partials),
    RulePair(sp.i0, partials=i0_partials),
    RulePair(sp.i0e, partials=i0e_partials),
    RulePair(sp.i1, partials=i1_partials),
    RulePair(sp.i1e, partials=i1e_partials),
    RulePair(sp.zeta, partials=zeta_partials),
    RulePair(sp.gammainc, partials=gammainc_partials),
    RulePair(sp.gammaincc, partials=gammaincc_partials),
    RulePair(sp.j0, partials=j0_partials),
    RulePair(sp.j1, partials=j1_partials),
    RulePair(sp.y0, partials=y0_partials),
    RulePair(sp.y1, partials=y1_partials),
    RulePair(sp.jv, partials=jv_partials),
    RulePair(sp.iv, partials=iv_partials),
    RulePair(sp.ive, partials=ive_partials),
    RulePair(sp.rgamma, partials=rgamma_partials),
    RulePair(sp.betainc, partials=betainc_partials),
    RulePair(sp.wright_bessel, partials=wright_bessel_partials),
    RulePair(sp.log_wright_bessel, partials=log_wright_bessel_partials),
    RulePair(sp.polygamma, polygamma_rrule, polygamma_frule),
    RulePair(sp.multigammaln, multigammaln_rrule, multigammaln_frule),
    RulePair(sp.yn, yn_rrule, yn_frule),
    RulePair(sp.softmax, *normalizer_rules(sp.softmax, _softmax_grad, _softmax_grad), wrt=(0,)),
    RulePair(sp.log_softmax, *normalizer_rules(sp.log_softmax, _log_softmax_grad, _log_softmax_push),
             wrt=(0,)),
    # logsumexp's rules are those of the reductions (its native tier, its b= weights)
    RulePair(sp.logsumexp, reductions.logsumexp_rrule, reductions.logsumexp_frule, wrt=(0, 2)),
    RulePair(sp.gammasgn, kind="non_differentiable"),
)
