"""Workload 10, nested differentiation nobody tuned for: 14 problems people nest, against autograd.

Issue 30 found the nested workloads of ``wl_nested.py`` (workload 8) flattering: on other
workloads of the same kinds zygotepy was up to 1.5x HIPS autograd. This module was written
before any tuning for issue 30 and is the benchmark the tuning answers to. Each problem is a
table whose reference row is HIPS autograd (its answer is what every zygotepy row is checked
against, to 1e-9 relative); zygotepy runs each problem forward-over-reverse (``jvp`` of
``gradient``, ``hessian``, ``jacobian(mode="forward")`` of ``gradient``, nested ``jvp``) and
reverse-over-reverse (``gradient`` of a ``gradient``, ``hessian_reverse``, ``jacobian`` of
``gradient``) where both make sense. autograd has one way (reverse-over-reverse).

The problems (``PROBLEMS``): Hessian-vector products of log-likelihoods with
``scipy.special.logsumexp`` (softmax regression), ``scipy.special.log_softmax`` (cross-entropy of
a one-hidden-layer network), ``np.linalg.solve`` (Gaussian-process marginal likelihood in the
noise parameters), ``np.linalg.slogdet`` (Gaussian log-likelihood in a covariance factor);
Hessians of small networks (in the weights, and in the input); ``jacobian`` of ``gradient`` of a
softplus regression; derivatives 1-4 of compositions of special functions (``erf``, ``expit``,
``gammaln``, ``log1p``) element-wise on a vector and at a float; meta-learning (the gradient of a
query loss through three SGD steps on a support loss, for a linear model and for a tanh
network); a gradient penalty (gradient of ``loss + |d loss / d x|^2`` in the weights); and
Newton's step of logistic regression (Hessian plus gradient, ``np.log1p``/``np.exp``).

Timed in one run, interleaved rounds, medians (``harness.compare``). The target of issue 30:
every zygotepy row at or under 1.0x autograd, the median of the best row per problem at or under
0.8x.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sp
from harness import AUTOGRAD, ZYGOTE, Case, Config, Section, Target, compare, peers

ORDERS = 4
SGD_STEPS, SGD_RATE = 3, 0.1


def _data() -> dict[str, Any]:
    rng = np.random.default_rng(30)
    d: dict[str, Any] = {}
    # softmax regression: 40 samples, 10 features, 5 classes
    d["X_soft"] = rng.standard_normal((40, 10))
    d["Y_soft"] = np.eye(5)[rng.integers(0, 5, 40)]
    d["W_soft"], d["V_soft"] = 0.3 * rng.standard_normal((10, 5)), rng.standard_normal((10, 5))
    # one hidden layer classifier: 32 samples, 6 -> 8 -> 4
    d["X_cls"] = rng.standard_normal((32, 6))
    d["Y_cls"] = np.eye(4)[rng.integers(0, 4, 32)]
    d["P_cls"] = (0.4 * rng.standard_normal((6, 8)), 0.1 * rng.standard_normal(8),
                  0.4 * rng.standard_normal((8, 4)))
    d["V_cls"] = tuple(rng.standard_normal(p.shape) for p in d["P_cls"])
    # Gaussian process: 20 points, K = K0 + diag(exp(theta))
    t = np.linspace(0.0, 3.0, 20)
    d["K0_gp"] = np.exp(-0.5 * (t[:, None] - t[None, :]) ** 2)
    d["y_gp"] = np.sin(2.0 * t) + 0.1 * rng.standard_normal(20)
    d["theta_gp"], d["v_gp"] = -1.0 + 0.2 * rng.standard_normal(20), rng.standard_normal(20)
    # Gaussian log-likelihood in a covariance factor: S = L L' + I, 8x8, 30 observations
    d["Z_gauss"] = rng.standard_normal((30, 8))
    d["L_gauss"], d["V_gauss"] = 0.5 * rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    # small network, 3 -> 6 -> 1, tanh, 16 samples, all weights in one flat vector
    d["X_net"], d["y_net"] = rng.standard_normal((16, 3)), rng.standard_normal(16)
    d["w_net"] = 0.5 * rng.standard_normal(3 * 6 + 6 + 6 + 1)
    # network in its input: 8 -> 16 -> 16 -> 1, tanh
    d["P_in"] = (0.4 * rng.standard_normal((8, 16)), 0.3 * rng.standard_normal((16, 16)),
                 0.3 * rng.standard_normal(16))
    d["x_in"] = rng.standard_normal(8)
    # softplus regression, 30 parameters, 40 rows
    d["A_sp"], d["x_sp"] = rng.standard_normal((40, 30)) / 5.0, rng.standard_normal(30)
    # special functions
    d["x_vec"] = np.linspace(-1.5, 1.5, 100)
    d["x_float"] = 0.8
    # meta-learning: support and query sets
    d["Xs_meta"], d["ys_meta"] = rng.standard_normal((20, 5)), rng.standard_normal(20)
    d["Xq_meta"], d["yq_meta"] = rng.standard_normal((20, 5)), rng.standard_normal(20)
    d["w_meta"], d["v_meta"] = 0.3 * rng.standard_normal(5), rng.standard_normal(5)
    d["P_mnet"] = (0.4 * rng.standard_normal((5, 8)), 0.1 * rng.standard_normal(8),
                   0.4 * rng.standard_normal(8))
    # gradient penalty: 16 points in 4 dims, a 4 -> 8 -> 1 critic
    d["X_gp"] = rng.standard_normal((16, 4))
    d["P_gpen"] = (0.5 * rng.standard_normal((4, 8)), 0.5 * rng.standard_normal(8))
    # logistic regression: 50 rows, 12 features
    d["X_log"] = rng.standard_normal((50, 12))
    d["y_log"] = (rng.random(50) < 0.5).astype(float)
    d["w_log"] = 0.2 * rng.standard_normal(12)
    return d


D = _data()


# -- the problems, written once against a NumPy-like namespace ---------------------------------------
# ``np_`` is ``numpy`` for zygotepy and ``autograd.numpy`` for autograd; ``sp_`` the matching
# ``scipy.special``; ``la_`` the matching ``numpy.linalg``. The same source runs on both systems.
def softmax_nll(np_: Any, sp_: Any, W: Any) -> Any:
    z = D["X_soft"] @ W
    return np_.sum(sp_.logsumexp(z, axis=1)) - np_.sum(D["Y_soft"] * z)


def classifier_nll(np_: Any, log_softmax: Callable[[Any], Any], P: Any) -> Any:
    W1, b1, W2 = P
    h = np_.tanh(D["X_cls"] @ W1 + b1)
    return -np_.sum(D["Y_cls"] * log_softmax(h @ W2)) / 32.0


def gp_nll(np_: Any, la_: Any, theta: Any) -> Any:
    K = D["K0_gp"] + np_.diag(np_.exp(theta))
    y = D["y_gp"]
    return 0.5 * (y @ la_.solve(K, y)) + 0.5 * la_.slogdet(K)[1]


def gauss_nll(np_: Any, la_: Any, L: Any) -> Any:
    S = L @ L.T + np_.eye(8)
    Z = D["Z_gauss"]
    return 0.5 * np_.sum(Z * la_.solve(S, Z.T).T) + 15.0 * la_.slogdet(S)[1]


def net_loss(np_: Any, w: Any) -> Any:
    W1, b1, W2, b2 = w[:18].reshape(3, 6), w[18:24], w[24:30], w[30]
    h = np_.tanh(D["X_net"] @ W1 + b1)
    return np_.sum((h @ W2 + b2 - D["y_net"]) ** 2) / 16.0


def net_input(np_: Any, x: Any) -> Any:
    W1, W2, w3 = D["P_in"]
    return np_.tanh(np_.tanh(x @ W1) @ W2) @ w3


def softplus_loss(np_: Any, x: Any) -> Any:
    return np_.sum(np_.logaddexp(0.0, D["A_sp"] @ x)) + 0.5 * (x @ x)


def special_vec(np_: Any, sp_: Any, x: Any) -> Any:
    return sp_.erf(np_.sin(x)) * np_.exp(-0.5 * x * x) + sp_.expit(np_.tanh(x))


def special_float(np_: Any, sp_: Any, x: Any) -> Any:
    return sp_.gammaln(1.0 + x * x) + np_.log1p(np_.exp(-x)) * sp_.erf(x)


def meta_linear(np_: Any, grad: Callable[..., Any], w: Any) -> Any:
    def support(u: Any) -> Any:
        return np_.sum((D["Xs_meta"] @ u - D["ys_meta"]) ** 2) / 20.0

    for _ in range(SGD_STEPS):
        w = w - SGD_RATE * grad(support, w)
    return np_.sum((D["Xq_meta"] @ w - D["yq_meta"]) ** 2) / 20.0


def meta_net(np_: Any, grad: Callable[..., Any], P: Any) -> Any:
    def predict(Q: Any, X: Any) -> Any:
        W1, b1, w2 = Q
        return np_.tanh(X @ W1 + b1) @ w2

    def support(Q: Any) -> Any:
        return np_.sum((predict(Q, D["Xs_meta"]) - D["ys_meta"]) ** 2) / 20.0

    for _ in range(SGD_STEPS):
        g = grad(support, P)
        P = tuple(p - SGD_RATE * gp for p, gp in zip(P, g, strict=True))
    return np_.sum((predict(P, D["Xq_meta"]) - D["yq_meta"]) ** 2) / 20.0


def penalised_critic(np_: Any, grad: Callable[..., Any], P: Any) -> Any:
    W, w = P

    def critic(X: Any) -> Any:
        return np_.sum(np_.tanh(X @ W) @ w)

    g = grad(critic, D["X_gp"])
    return critic(D["X_gp"]) + np_.sum((np_.sqrt(np_.sum(g * g, axis=1)) - 1.0) ** 2)


def logistic_nll(np_: Any, w: Any) -> Any:
    z = D["X_log"] @ w
    return np_.sum(np_.log1p(np_.exp(z)) - D["y_log"] * z)


# -- zygotepy: the functions on plain NumPy, and the nested entry points -----------------------------
def _zp() -> Any:
    import zygotepy as zp

    return zp


def zp_grad(f: Callable[[Any], Any], x: Any) -> Any:
    return _zp().gradient(f, x)[0]


def zp_hvp_for(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
    zp = _zp()
    return zp.jvp(lambda u: zp.gradient(f, u)[0], (x,), (v,))[1]


def zp_hvp_ror(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
    zp = _zp()
    return zp.gradient(lambda u: _inner(zp.gradient(f, u)[0], v), x)[0]


def _inner(g: Any, v: Any) -> Any:
    if isinstance(g, tuple):
        return sum(np.sum(a * b) for a, b in zip(g, v, strict=True))
    return np.sum(g * v)


def zp_derivatives_ror(f: Callable[[Any], Any], x: Any) -> list[Any]:
    """Derivatives 1-ORDERS of an element-wise ``f``: nested gradients of sums."""
    zp = _zp()
    out = []
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.gradient(lambda w: np.sum(g(w)), v)[0])(f)
        out.append(f(x))
    return out


def zp_derivatives_for(f: Callable[[Any], Any], x: Any) -> list[Any]:
    """Derivatives 1-ORDERS of an element-wise ``f``: nested ``jvp`` with a tangent of ones."""
    zp = _zp()
    out = []
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.jvp(g, (v,), (np.ones_like(v),))[1])(f)
        out.append(f(x))
    return out


def zp_derivatives_float_ror(f: Callable[[Any], Any], x: float) -> list[Any]:
    zp = _zp()
    out = []
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.gradient(g, v)[0])(f)
        out.append(f(x))
    return out


def zp_derivatives_float_for(f: Callable[[Any], Any], x: float) -> list[Any]:
    zp = _zp()
    out = []
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.jvp(g, (v,), (1.0,))[1])(f)
        out.append(f(x))
    return out


def _zp_log_softmax(z: Any) -> Any:
    return sp.log_softmax(z, axis=1)


def _zp_grad2(f: Callable[[Any], Any], x: Any) -> Any:
    return _zp().gradient(f, x)[0]


#: zygotepy's variants of each problem: ``{key: {variant: callable}}``.
def zygote_cases() -> dict[str, dict[str, Callable[[], Any]]]:
    zp = _zp()
    la = np.linalg
    softmax = lambda W: softmax_nll(np, sp, W)  # noqa: E731
    classifier = lambda P: classifier_nll(np, _zp_log_softmax, P)  # noqa: E731
    gp = lambda t: gp_nll(np, la, t)  # noqa: E731
    gauss = lambda L: gauss_nll(np, la, L)  # noqa: E731
    net = lambda w: net_loss(np, w)  # noqa: E731
    net_x = lambda x: net_input(np, x)  # noqa: E731
    softplus = lambda x: softplus_loss(np, x)  # noqa: E731
    vec = lambda x: special_vec(np, sp, x)  # noqa: E731
    flt = lambda x: special_float(np, sp, x)  # noqa: E731
    meta_lin = lambda w: meta_linear(np, _zp_grad2, w)  # noqa: E731
    meta_nn = lambda P: meta_net(np, _zp_grad2, P)  # noqa: E731
    critic = lambda P: penalised_critic(np, _zp_grad2, P)  # noqa: E731
    logistic = lambda w: logistic_nll(np, w)  # noqa: E731

    def newton(hess: Callable[..., Any]) -> Callable[[], Any]:
        return lambda: np.linalg.solve(hess(logistic, D["w_log"]), zp.gradient(logistic, D["w_log"])[0])

    return {
        "softmax_hvp": {
            "jvp of gradient": lambda: zp_hvp_for(softmax, D["W_soft"], D["V_soft"]),
            "gradient of <gradient, v>": lambda: zp_hvp_ror(softmax, D["W_soft"], D["V_soft"]),
        },
        "log_softmax_hvp": {
            "jvp of gradient": lambda: zp_hvp_for(classifier, D["P_cls"], D["V_cls"]),
            "gradient of <gradient, v>": lambda: zp_hvp_ror(classifier, D["P_cls"], D["V_cls"]),
        },
        "solve_hvp": {
            "jvp of gradient": lambda: zp_hvp_for(gp, D["theta_gp"], D["v_gp"]),
            "gradient of <gradient, v>": lambda: zp_hvp_ror(gp, D["theta_gp"], D["v_gp"]),
        },
        "slogdet_hvp": {
            "jvp of gradient": lambda: zp_hvp_for(gauss, D["L_gauss"], D["V_gauss"]),
            "gradient of <gradient, v>": lambda: zp_hvp_ror(gauss, D["L_gauss"], D["V_gauss"]),
        },
        "net_hessian": {
            "zp.hessian": lambda: zp.hessian(net, D["w_net"]),
            "zp.hessian_reverse": lambda: zp.hessian_reverse(net, D["w_net"]),
        },
        "net_input_hessian": {
            "zp.hessian": lambda: zp.hessian(net_x, D["x_in"]),
            "zp.hessian_reverse": lambda: zp.hessian_reverse(net_x, D["x_in"]),
        },
        "jacobian_of_gradient": {
            "jacobian(mode='forward') of gradient":
                lambda: zp.jacobian(lambda x: zp.gradient(softplus, x)[0], D["x_sp"], mode="forward")[0],
            "jacobian(mode='reverse') of gradient":
                lambda: zp.jacobian(lambda x: zp.gradient(softplus, x)[0], D["x_sp"], mode="reverse")[0],
        },
        "special_vec_1to4": {
            "nested jvp": lambda: zp_derivatives_for(vec, D["x_vec"]),
            "nested gradient of sum": lambda: zp_derivatives_ror(vec, D["x_vec"]),
        },
        "special_float_1to4": {
            "nested jvp": lambda: zp_derivatives_float_for(flt, D["x_float"]),
            "nested gradient": lambda: zp_derivatives_float_ror(flt, D["x_float"]),
        },
        "meta_linear": {
            "jvp (directional derivative)":
                lambda: zp.jvp(meta_lin, (D["w_meta"],), (D["v_meta"],))[1],
            "gradient": lambda: zp.gradient(meta_lin, D["w_meta"])[0],
        },
        "meta_net": {
            "gradient": lambda: zp.gradient(meta_nn, D["P_mnet"])[0],
        },
        "gradient_penalty": {
            "gradient": lambda: zp.gradient(critic, D["P_gpen"])[0],
        },
        "logistic_newton": {
            "solve(zp.hessian, gradient)": newton(zp.hessian),
            "solve(zp.hessian_reverse, gradient)": newton(zp.hessian_reverse),
        },
        "softplus_hvp": {
            "jvp of gradient": lambda: zp_hvp_for(softplus, D["x_sp"], D["x_sp"][::-1].copy()),
            "gradient of <gradient, v>": lambda: zp_hvp_ror(softplus, D["x_sp"], D["x_sp"][::-1].copy()),
        },
    }


# -- autograd: the same functions on autograd.numpy -------------------------------------------------
def autograd_cases() -> dict[str, Callable[[], Any]]:
    import autograd
    import autograd.numpy as anp
    import autograd.scipy.special as asp

    ala = anp.linalg
    grad = lambda f, x: autograd.grad(f)(x)  # noqa: E731

    def log_softmax(z: Any) -> Any:
        return z - asp.logsumexp(z, axis=1, keepdims=True)

    softmax = lambda W: softmax_nll(anp, asp, W)  # noqa: E731
    classifier = lambda P: classifier_nll(anp, log_softmax, P)  # noqa: E731
    gp = lambda t: gp_nll(anp, ala, t)  # noqa: E731
    gauss = lambda L: gauss_nll(anp, ala, L)  # noqa: E731
    net = lambda w: net_loss(anp, w)  # noqa: E731
    net_x = lambda x: net_input(anp, x)  # noqa: E731
    softplus = lambda x: softplus_loss(anp, x)  # noqa: E731
    vec = lambda x: special_vec(anp, asp, x)  # noqa: E731
    flt = lambda x: special_float(anp, asp, x)  # noqa: E731
    meta_lin = lambda w: meta_linear(anp, grad, w)  # noqa: E731
    meta_nn = lambda P: meta_net(anp, grad, P)  # noqa: E731
    critic = lambda P: penalised_critic(anp, grad, P)  # noqa: E731
    logistic = lambda w: logistic_nll(anp, w)  # noqa: E731

    def inner(g: Any, v: Any) -> Any:
        if isinstance(v, tuple):
            return sum(anp.sum(a * b) for a, b in zip(g, v, strict=True))
        return anp.sum(g * v)

    def hvp(f: Callable[[Any], Any], x: Any, v: Any) -> Any:
        """``autograd.hessian_vector_product``, which takes arrays only, for tuples too."""
        return autograd.grad(lambda u: inner(autograd.grad(f)(u), v))(x)

    def derivatives(f: Callable[[Any], Any], x: Any, step: Callable[..., Any]) -> list[Any]:
        out = []
        for _ in range(ORDERS):
            f = step(f)
            out.append(f(x))
        return out

    def newton() -> Any:
        w = D["w_log"]
        return np.linalg.solve(autograd.hessian(logistic)(w), autograd.grad(logistic)(w))

    def meta_lin_jvp() -> Any:
        return np.sum(autograd.grad(meta_lin)(D["w_meta"]) * D["v_meta"])

    return {
        "softmax_hvp": lambda: hvp(softmax, D["W_soft"], D["V_soft"]),
        "log_softmax_hvp": lambda: hvp(classifier, D["P_cls"], D["V_cls"]),
        "solve_hvp": lambda: hvp(gp, D["theta_gp"], D["v_gp"]),
        "slogdet_hvp": lambda: hvp(gauss, D["L_gauss"], D["V_gauss"]),
        "net_hessian": lambda: autograd.hessian(net)(D["w_net"]),
        "net_input_hessian": lambda: autograd.hessian(net_x)(D["x_in"]),
        "jacobian_of_gradient": lambda: autograd.jacobian(autograd.grad(softplus))(D["x_sp"]),
        "special_vec_1to4": lambda: derivatives(vec, D["x_vec"], autograd.elementwise_grad),
        "special_float_1to4": lambda: derivatives(flt, D["x_float"], autograd.grad),
        "meta_linear": lambda: autograd.grad(meta_lin)(D["w_meta"]),
        "meta_net": lambda: autograd.grad(meta_nn)(D["P_mnet"]),
        "gradient_penalty": lambda: autograd.grad(critic)(D["P_gpen"]),
        "logistic_newton": newton,
        "softplus_hvp": lambda: hvp(softplus, D["x_sp"], D["x_sp"][::-1].copy()),
        # the meta_linear jvp row is checked against the directional derivative of autograd's gradient
        "meta_linear_jvp": meta_lin_jvp,
    }


TITLES = {
    "softmax_hvp": "HVP, softmax regression NLL (scipy.special.logsumexp), W 10x5",
    "log_softmax_hvp": "HVP, 6-8-4 tanh classifier NLL (log_softmax), 3 parameter arrays",
    "solve_hvp": "HVP, GP marginal likelihood (np.linalg.solve, slogdet) in 20 noise parameters",
    "slogdet_hvp": "HVP, Gaussian NLL in a covariance factor L (S = LL' + I: solve, slogdet), 8x8",
    "net_hessian": "Hessian of a 3-6-1 tanh network's loss in its 31 weights",
    "net_input_hessian": "Hessian of an 8-16-16-1 tanh network in its input",
    "jacobian_of_gradient": "jacobian of gradient, softplus regression (logaddexp), n = 30",
    "special_vec_1to4": f"derivatives 1-{ORDERS} of erf(sin x) exp(-x^2/2) + expit(tanh x), x of 100",
    "special_float_1to4": f"derivatives 1-{ORDERS} of gammaln(1 + x^2) + log1p(exp(-x)) erf(x) at a float",
    "meta_linear": f"meta-learning, linear model: query loss after {SGD_STEPS} SGD steps, d/d(init)",
    "meta_net": f"meta-learning, 5-8-1 tanh network: query loss after {SGD_STEPS} SGD steps, d/d(init)",
    "gradient_penalty": "gradient penalty: d/d(weights) of critic + (|d critic / d x| - 1)^2, 16 points",
    "logistic_newton": ("Newton step of logistic regression (log1p, exp): solve(Hessian, gradient), "
                        "12 weights"),
    "softplus_hvp": "HVP, softplus regression (logaddexp), n = 30",
}


def run(cfg: Config) -> Section:
    section = Section(
        "nested_wide",
        "10. Nested differentiation nobody tuned for (issue 30)",
        "14 problems of the kinds people nest, each zygotepy row checked against HIPS autograd's "
        "answer (1e-9 relative) and timed interleaved with it; ratios are to autograd.",
    )
    if not (cfg.wants(AUTOGRAD) and ZYGOTE in cfg.systems):
        section.notes.append("skipped: needs zygotepy and HIPS autograd (`pip install autograd`)")
        return section
    assert peers.autograd is not None
    ag, zps = autograd_cases(), zygote_cases()
    best: list[float] = []
    worst = 0.0
    for key, title in TITLES.items():
        cases = [Case(AUTOGRAD, "autograd (reverse-over-reverse)", ag[key])]
        cases += [Case(ZYGOTE, variant, fn) for variant, fn in zps[key].items()
                  if not (key == "meta_linear" and variant.startswith("jvp"))]
        table = compare(title, cases, cfg, rtol=1e-9)
        if key == "meta_linear":
            jvp_cases = [Case(AUTOGRAD, "grad, dotted with v", ag["meta_linear_jvp"]),
                         Case(ZYGOTE, "jvp (directional derivative)",
                              zps[key]["jvp (directional derivative)"])]
            extra = compare(title + " (jvp row)", jvp_cases, cfg, rtol=1e-9)
            table.rows += extra.rows[1:]
            # the jvp row's ratio is to autograd's gradient (the directional derivative costs it that)
            table.rows[-1].note = "vs autograd's gradient dotted with v"
        table.reference = AUTOGRAD
        section.tables.append(table)
        ratios = [r for r in (table.ratio(ZYGOTE, v) for v in zps[key]) if r is not None]
        if ratios:
            best.append(min(ratios))
            worst = max(worst, max(ratios))
    median = statistics.median(best) if best else math.nan
    section.targets.append(Target("issue 30: every zygotepy row at or under 1.0x autograd",
                                  f"worst {worst:.2f}x", bool(best) and worst <= 1.0))
    section.targets.append(Target("issue 30: median (best row per problem) at or under 0.8x autograd",
                                  f"{median:.2f}x", bool(best) and median <= 0.8))
    return section
