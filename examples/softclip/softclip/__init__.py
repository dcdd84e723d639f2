"""softclip(x, c) = c * tanh(x / c): a smooth clip of ``x`` to ``(-c, c)``, with its rules.

Written with ``rc.array_namespace``, so the function and its rules run on NumPy arrays and, unchanged,
on JAX arrays and PyTorch tensors (rulescore's native tier: no host callback when exported).

Example:
    >>> import numpy as np
    >>> from softclip import softclip
    >>> softclip(np.array([0.0, 10.0]), 1.0)
    array([0., 1.])
"""

from __future__ import annotations

from typing import Any

import rulescore as rc

__all__ = ["softclip"]


def softclip(x: Any, c: Any) -> Any:
    """``c * tanh(x / c)``, element-wise; ``c > 0`` is a scalar (a float or a 0-d array)."""
    xp = rc.array_namespace(x, c)
    return c * xp.tanh(x / c)


def _partials(x: Any, c: Any) -> tuple[Any, Any, Any]:
    xp = rc.array_namespace(x, c)
    t = xp.tanh(x / c)
    dx = 1 - t * t
    dc = t - (x / c) * dx
    return c * t, dx, dc


@rc.rrule.register(softclip)
def softclip_rrule(x: Any, c: Any) -> Any:
    y, dx, dc = _partials(x, c)
    xp = rc.array_namespace(x, c)

    def softclip_pullback(ybar: Any) -> Any:
        cbar = xp.sum(ybar * dc)
        return rc.NoTangent(), ybar * dx, float(cbar) if isinstance(c, float) else cbar

    return y, softclip_pullback


@rc.frule.register(softclip)
def softclip_frule(tangents: Any, x: Any, c: Any) -> Any:
    _, xdot, cdot = tangents
    y, dx, dc = _partials(x, c)
    return y, xdot * dx + cdot * dc
