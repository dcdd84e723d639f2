"""Central finite differences, the reference the engine tests compare gradients with."""

import numpy as np


def fd(f, x, h=1e-6):
    """Central finite differences of a scalar function of a float or an array."""
    if np.ndim(x) == 0:
        return (f(x + h) - f(x - h)) / (2 * h)
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def check(f, x, expected=None, rtol=1e-5, atol=1e-7):
    """zp.gradient of f at x against finite differences (or an exact expected value)."""
    import zygotepy as zp

    (g,) = zp.gradient(f, x)
    want = fd(f, x) if expected is None else expected
    assert g is not None, "gradient silently dropped (None)"
    np.testing.assert_allclose(np.asarray(g, dtype=float), want, rtol=rtol, atol=atol)
    return g
