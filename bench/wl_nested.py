"""Workload 8, nested differentiation: derivatives of derivatives, as users write them.

Four cases, each a table: (a) derivatives 1-4 of ``tanh`` on a 200-vector, element-wise, as
nested ``gradient`` of ``sum`` (autograd's ``elementwise_grad``) and, as a second zygotepy row,
as nested ``jvp`` with a tangent of ones; (b) the second derivative of ``sin(x) * x**2`` at a
float, ``gradient`` of ``gradient``; (c) a Hessian-vector product of a 50-dim
``logsumexp(x) + x @ A @ x / 2``, ``jvp`` of ``gradient`` (forward-over-reverse); (d) the
Hessian of a 100-dim Rosenbrock function. The hand-written rows are the closed forms.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from harness import (
    AUTOGRAD,
    HAND,
    JAX_EAGER,
    JAX_JIT,
    TORCH,
    ZYGOTE,
    Case,
    Config,
    Section,
    Table,
    Target,
    compare,
    missing_systems,
    peers,
)

ORDERS = 4
X_TANH = np.linspace(-2.0, 2.0, 200)
X_SIN = 0.7
N_HVP, N_ROSEN = 50, 100


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(8)
    a = rng.standard_normal((N_HVP, N_HVP))
    return (a @ a.T / N_HVP, rng.standard_normal(N_HVP), rng.standard_normal(N_HVP),
            rng.standard_normal(N_ROSEN) * 0.5)


A, X_HVP, V_HVP, X_ROSEN = _data()


# -- the functions, written once for zygotepy (plain NumPy) --------------------------------------
def tanh_sum(x: Any) -> Any:
    return np.sum(np.tanh(x))


def sin_x2(x: Any) -> Any:
    return np.sin(x) * x**2


def lse_quadratic(x: Any) -> Any:
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m))) + 0.5 * (x @ (A @ x))


def rosenbrock(x: Any) -> Any:
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# -- hand-written closed forms --------------------------------------------------------------------
def tanh_derivatives_hand(x: np.ndarray) -> list[np.ndarray]:
    t = np.tanh(x)
    s = 1.0 - t * t
    return [s, -2.0 * t * s, s * (6.0 * t * t - 2.0), 8.0 * t * s * (2.0 - 3.0 * t * t)]


def sin_x2_second_hand(x: float) -> float:
    import math

    return (2.0 - x * x) * math.sin(x) + 4.0 * x * math.cos(x)


def lse_quadratic_hvp_hand(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x))
    p = e / np.sum(e)
    return p * v - p * (p @ v) + A @ v


def rosenbrock_hessian_hand(x: np.ndarray) -> np.ndarray:
    n = len(x)
    h = np.zeros((n, n))
    i = np.arange(n - 1)
    h[i, i] += 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    h[i + 1, i + 1] += 200.0
    h[i, i + 1] = h[i + 1, i] = -400.0 * x[:-1]
    return h


# -- zygotepy: what a user writes ---------------------------------------------------------------
def tanh_derivatives_zp(x: np.ndarray) -> list[Any]:
    import zygotepy as zp

    out, f = [], np.tanh
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.gradient(lambda w: np.sum(g(w)), v)[0])(f)
        out.append(f(x))
    return out


def tanh_derivatives_zp_jvp(x: np.ndarray) -> list[Any]:
    import zygotepy as zp

    out, f = [], np.tanh
    for _ in range(ORDERS):
        f = (lambda g: lambda v: zp.jvp(g, (v,), (np.ones_like(v),))[1])(f)
        out.append(f(x))
    return out


def sin_x2_second_zp(x: float) -> Any:
    import zygotepy as zp

    return zp.gradient(lambda u: zp.gradient(sin_x2, u)[0], x)[0]


def lse_quadratic_hvp_zp(x: np.ndarray, v: np.ndarray) -> Any:
    import zygotepy as zp

    return zp.jvp(lambda u: zp.gradient(lse_quadratic, u)[0], (x,), (v,))[1]


def _zygote_cases(cfg: Config) -> dict[str, list[Case]]:
    if not cfg.wants(ZYGOTE):
        return {}
    import zygotepy as zp

    return {
        "tanh": [
            Case(ZYGOTE, "nested gradient of sum", lambda: tanh_derivatives_zp(X_TANH)),
            Case(ZYGOTE, "nested jvp", lambda: tanh_derivatives_zp_jvp(X_TANH), note="tangent of ones"),
        ],
        "sin": [Case(ZYGOTE, "gradient of gradient", lambda: sin_x2_second_zp(X_SIN))],
        "hvp": [Case(ZYGOTE, "jvp of gradient", lambda: lse_quadratic_hvp_zp(X_HVP, V_HVP))],
        "rosen": [Case(ZYGOTE, "zp.hessian", lambda: zp.hessian(rosenbrock, X_ROSEN),
                       note="forward-over-reverse")],
    }


def _autograd_cases(cfg: Config) -> dict[str, list[Case]]:
    if not cfg.wants(AUTOGRAD):
        return {}
    import autograd
    import autograd.numpy as anp

    def tanh_derivatives(x: np.ndarray) -> list[Any]:
        out, f = [], anp.tanh
        for _ in range(ORDERS):
            f = autograd.elementwise_grad(f)
            out.append(f(x))
        return out

    second = autograd.grad(autograd.grad(lambda u: anp.sin(u) * u**2))

    def lse(x: Any) -> Any:
        m = anp.max(x)
        return m + anp.log(anp.sum(anp.exp(x - m))) + 0.5 * anp.dot(x, anp.dot(A, x))

    hvp = autograd.hessian_vector_product(lse)
    hess = autograd.hessian(
        lambda x: anp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))
    return {
        "tanh": [Case(AUTOGRAD, "nested elementwise_grad", lambda: tanh_derivatives(X_TANH))],
        "sin": [Case(AUTOGRAD, "grad of grad", lambda: second(X_SIN))],
        "hvp": [Case(AUTOGRAD, "hessian_vector_product", lambda: hvp(X_HVP, V_HVP),
                     note="reverse-over-reverse (autograd's only way)")],
        "rosen": [Case(AUTOGRAD, "autograd.hessian", lambda: hess(X_ROSEN))],
    }


def _torch_cases(cfg: Config) -> dict[str, list[Case]]:
    if not cfg.wants(TORCH):
        return {}
    torch = peers.torch
    from torch.func import grad, hessian, jvp

    tx, tA = torch.from_numpy(X_TANH), torch.from_numpy(A)

    def tanh_derivatives(x: Any) -> list[Any]:
        out, f = [], torch.tanh
        for _ in range(ORDERS):
            f = (lambda g: lambda v: jvp(g, (v,), (torch.ones_like(v),))[1])(f)
            out.append(f(x))
        return out

    def lse(x: Any) -> Any:
        return torch.logsumexp(x, 0) + 0.5 * (x @ (tA @ x))

    def rosen(x: Any) -> Any:
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    second = grad(grad(lambda u: torch.sin(u) * u**2))
    ts = torch.tensor(X_SIN, dtype=torch.float64)
    hx, hv, rx = torch.from_numpy(X_HVP), torch.from_numpy(V_HVP), torch.from_numpy(X_ROSEN)
    return {
        "tanh": [Case(TORCH, "nested torch.func.jvp", lambda: tanh_derivatives(tx))],
        "sin": [Case(TORCH, "torch.func.grad of grad", lambda: second(ts))],
        "hvp": [Case(TORCH, "torch.func.jvp of grad", lambda: jvp(grad(lse), (hx,), (hv,))[1])],
        "rosen": [Case(TORCH, "torch.func.hessian", lambda: hessian(rosen)(rx))],
    }


def _jax_cases(cfg: Config) -> dict[str, list[Case]]:
    if not cfg.wants(JAX_EAGER):
        return {}
    jax = peers.jax
    import jax.numpy as jnp

    ja = jnp.asarray(A)

    def tanh_derivatives(x: Any) -> list[Any]:
        out, f = [], jnp.tanh
        for _ in range(ORDERS):
            f = (lambda g: lambda v: jax.jvp(g, (v,), (jnp.ones_like(v),))[1])(f)
            out.append(f(x))
        return out

    def lse(x: Any) -> Any:
        return jax.nn.logsumexp(x) + 0.5 * (x @ (ja @ x))

    def rosen(x: Any) -> Any:
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    fns = {
        "tanh": (tanh_derivatives, (jnp.asarray(X_TANH),), "nested jax.jvp"),
        "sin": (jax.grad(jax.grad(lambda u: jnp.sin(u) * u**2)), (X_SIN,), "jax.grad of grad"),
        "hvp": (lambda x, v: jax.jvp(jax.grad(lse), (x,), (v,))[1],
                (jnp.asarray(X_HVP), jnp.asarray(V_HVP)), "jax.jvp of grad"),
        "rosen": (jax.hessian(rosen), (jnp.asarray(X_ROSEN),), "jax.hessian"),
    }
    out: dict[str, list[Case]] = {}
    for key, (fn, args, variant) in fns.items():
        out[key] = [Case(JAX_EAGER, variant, lambda fn=fn, args=args: jax.block_until_ready(fn(*args)))]
        if cfg.wants(JAX_JIT):
            jitted = jax.jit(fn)
            out[key].append(Case(JAX_JIT, variant,
                                 lambda j=jitted, args=args: jax.block_until_ready(j(*args)),
                                 note="compiled once, before timing"))
    return out


TITLES = {
    "tanh": f"derivatives 1-{ORDERS} of tanh, element-wise, x of 200",
    "sin": "second derivative of sin(x) * x**2 at a float",
    "hvp": f"Hessian-vector product, logsumexp + quadratic, n = {N_HVP}",
    "rosen": f"Hessian of Rosenbrock, n = {N_ROSEN}",
}
HAND_CASES = {
    "tanh": lambda: tanh_derivatives_hand(X_TANH),
    "sin": lambda: sin_x2_second_hand(X_SIN),
    "hvp": lambda: lse_quadratic_hvp_hand(X_HVP, V_HVP),
    "rosen": lambda: rosenbrock_hessian_hand(X_ROSEN),
}
#: The target of issue 18 for each case: zygotepy's time over autograd's.
GOALS = {"tanh": 1.0, "sin": 1.0, "hvp": 1.0, "rosen": 0.6}


def run(cfg: Config) -> Section:
    section = Section(
        "nested",
        "8. Nested differentiation",
        "Derivatives of derivatives as users write them: nested `gradient` (and `jvp`), "
        "forward-over-reverse Hessian-vector products and Hessians, float64 throughout.",
    )
    per_system = [_zygote_cases(cfg), _autograd_cases(cfg), _torch_cases(cfg), _jax_cases(cfg)]
    missing = missing_systems(cfg)
    for key, title in TITLES.items():
        cases = [Case(HAND, "closed form", HAND_CASES[key])]
        for system_cases in per_system:
            cases += system_cases.get(key, [])
        table = compare(title, cases, cfg, rtol=1e-9, missing=missing)
        section.tables.append(table)
        section.targets.append(_target(table, key))
    return section


def _target(table: Table, key: str) -> Target:
    goal = GOALS[key]
    zp_time, ag_time = table.value(ZYGOTE), table.value(AUTOGRAD)
    ratio = zp_time / ag_time if zp_time and ag_time else None
    return Target(
        f"{table.title}: zygotepy at or under {goal:.1f}x autograd",
        "-" if ratio is None else f"zygotepy / autograd = {ratio:.2f}",
        None if ratio is None else ratio <= goal,
    )
