"""Functions with hand-written rules used by the interop tests (host NumPy rules)."""

from __future__ import annotations

import numpy as np

import rulescore as rc


def scaled_sum(params, xs, n):
    """A dict and a tuple in, an int that only counts, a dict out."""
    a, b = xs
    return {"y": n * params["w"] * a + params["b"], "s": np.sum(b * b)}


@rc.rrule.register(scaled_sum)
def scaled_sum_rrule(params, xs, n):
    a, b = xs

    def scaled_sum_pullback(out_bar):
        ybar, sbar = out_bar["y"], out_bar["s"]
        ybar = np.zeros_like(a) if rc.is_zero(ybar) else ybar
        sbar = 0.0 if rc.is_zero(sbar) else sbar
        dparams = rc.Tangent[dict]({"w": n * np.sum(ybar * a), "b": np.sum(ybar)})
        dxs = rc.Tangent[tuple](n * params["w"] * ybar, 2 * sbar * b)
        return rc.NoTangent(), dparams, dxs, rc.NoTangent()

    return scaled_sum(params, xs, n), scaled_sum_pullback


@rc.frule.register(scaled_sum)
def scaled_sum_frule(tangents, params, xs, n):
    _, dparams, dxs, _ = tangents
    a, b = xs
    da, db = dxs
    dy = n * (dparams["w"] * a + params["w"] * da) + dparams["b"]
    return scaled_sum(params, xs, n), {"y": dy, "s": np.sum(2 * b * db)}


def abs2(z):
    """|z|^2: real output of a complex input (the complex convention at the boundary)."""
    return np.real(z * np.conj(z))


@rc.rrule.register(abs2)
def abs2_rrule(z):
    return abs2(z), lambda ybar: (rc.NoTangent(), 2 * ybar * z)  # ChainRules: df/dRe + i df/dIm


def no_frule(x):
    return 2.0 * x


@rc.rrule.register(no_frule)
def no_frule_rrule(x):
    return no_frule(x), lambda ybar: (rc.NoTangent(), 2.0 * ybar)


def softsign(x):
    """Written with rc.array_namespace: the native tier."""
    xp = rc.array_namespace(x)
    return x / (1 + xp.abs(x))


@rc.rrule.register(softsign)
def softsign_rrule(x):
    xp = rc.array_namespace(x)

    def softsign_pullback(ybar):
        return rc.NoTangent(), ybar / (1 + xp.abs(x)) ** 2

    return softsign(x), softsign_pullback


@rc.frule.register(softsign)
def softsign_frule(tangents, x):
    xp = rc.array_namespace(x)
    return softsign(x), tangents[1] / (1 + xp.abs(x)) ** 2


def softsign_d2(x):
    return -2 * np.sign(x) / (1 + np.abs(x)) ** 3


def logistic(x):
    """A NumPy function with a NumPy rule: the host (callback) tier."""
    return 1 / (1 + np.exp(-x))


rc.scalar_rule(logistic, lambda x, result: result * (1 - result))


def logistic_d2(x):
    s = logistic(x)
    return s * (1 - s) * (1 - 2 * s)
