"""Rules for NumPy's functions that broadcast several arrays against each other:
``np.broadcast_arrays`` and ``np.meshgrid``.

Both return one array per input, each a reshaped input broadcast to the common shape: linear,
so the frule is the function applied to the tangents, and the cotangent of each input is its
output's cotangent summed over the axes it was broadcast along, in its own shape. Their
Python source cannot be differentiated through: ``np.meshgrid`` assigns ``.shape`` to the
arrays it builds, ``np.broadcast_arrays`` makes views with ``np.nditer``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._linear import dense_tangent
from rulescore._projection import project, unbroadcast
from rulescore._tangent import Tangent
from rulescore._zeros import NoTangent

__all__ = ["RULES"]

_NT = NoTangent()


def _entries(ybar: Any, ys: Any) -> list[Any]:
    """The cotangent of a tuple or list output, one dense array per output array."""
    entries = list(ybar.backing) if isinstance(ybar, Tangent) else list(ybar)
    return [dense_tangent(y, e) for y, e in zip(ys, entries, strict=True)]


def _gathered(xs: tuple[Any, ...], pieces: list[Any], shapes: list[tuple[int, ...]]) -> tuple[Any, ...]:
    """Each input's cotangent: its piece summed down to ``shapes[i]``, reshaped to the input."""
    return tuple(project(x, np.reshape(unbroadcast(np.asarray(p), s), np.shape(x)))
                 for x, p, s in zip(xs, pieces, shapes, strict=True))


def broadcast_arrays_rrule(*args: Any, **kwargs: Any) -> Any:
    y = np.broadcast_arrays(*args, **kwargs)

    def broadcast_arrays_pullback(ybar: Any) -> Any:
        shapes = [np.shape(a) for a in args]
        return (_NT, *_gathered(args, _entries(ybar, y), shapes))

    return y, broadcast_arrays_pullback


def broadcast_arrays_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
    y = np.broadcast_arrays(*args, **kwargs)
    dense = (dense_tangent(a, t) for a, t in zip(args, tangents[1:], strict=True))
    dots = np.broadcast_arrays(*dense, **kwargs)
    return y, project(y, dots)


def meshgrid_rrule(*xi: Any, **kwargs: Any) -> Any:
    y = np.meshgrid(*xi, **kwargs)

    def meshgrid_pullback(ybar: Any) -> Any:
        # each input's own axis, the others of length one: the shapes of the sparse grid
        sparse = np.meshgrid(*xi, **{**kwargs, "sparse": True, "copy": False})
        return (_NT, *_gathered(xi, _entries(ybar, y), [np.shape(s) for s in sparse]))

    return y, meshgrid_pullback


def meshgrid_frule(tangents: Any, *xi: Any, **kwargs: Any) -> Any:
    y = np.meshgrid(*xi, **kwargs)
    dots = np.meshgrid(*(dense_tangent(x, t) for x, t in zip(xi, tangents[1:], strict=True)), **kwargs)
    return y, project(y, type(y)(dots))


RULES: tuple[RulePair, ...] = (
    RulePair(np.broadcast_arrays, broadcast_arrays_rrule, broadcast_arrays_frule),
    RulePair(np.meshgrid, meshgrid_rrule, meshgrid_frule),
)
