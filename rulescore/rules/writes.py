"""Functional forms of NumPy's functions that write into their first argument, and their rules.

``np.place(a, mask, vals)``, ``np.putmask(a, mask, values)``, ``np.put(a, ind, v)`` (and
``ndarray.put``), ``np.copyto(dst, src, where=...)``, ``ndarray.fill(value)``,
``np.fill_diagonal(a, val, wrap=False)`` and ``ufunc.at``
(its functional form is :func:`rulescore.rules.ufunc_methods.ufunc_at`) change ``a`` in place
and return ``None``, which no rule can express. Each has a functional form here with the same
arguments that returns the written copy and leaves ``a`` alone (as JAX's
``x.at[i].set(v)``): ``place(a, mask, vals)`` is ``a`` after ``np.place(a, mask, vals)``. An
engine turns the in-place call into ``a = place(a, mask, vals)`` on the traced value of the
array owning ``a``'s memory (:data:`IN_PLACE` maps each NumPy callable to its form; zygotepy
does so in ``zygotepy._runtime``, through ``zygotepy._views``).

Each write puts some elements of the values (``vals`` repeated cyclically for ``place`` and
``putmask``, broadcast for ``copyto``) at some positions of ``a``: the derivative in ``a`` is
the cotangent with the written positions zeroed, that in the values the cotangent of the
written positions summed back onto the elements they came from. Where ``put`` writes a position
twice, NumPy keeps the last write, and so does the derivative.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._zeros import NoTangent, ZeroTangent
from rulescore.rules.ufunc_methods import AT_UFUNCS, ufunc_at

__all__ = ["IN_PLACE", "RULES", "copyto", "fill", "fill_diagonal", "place", "put", "putmask"]

_NT = NoTangent()
_ZT = ZeroTangent()


def _written(a: Any, write: Callable[..., Any], *args: Any, **kwargs: Any) -> np.ndarray:
    out = np.array(a, copy=True)
    write(out, *args, **kwargs)
    return out


def place(arr: Any, mask: Any, vals: Any) -> np.ndarray:
    """``arr`` after ``np.place(arr, mask, vals)``, as a new array (``arr`` is not changed).

    Example:
        >>> import numpy as np
        >>> place(np.zeros(4), np.array([True, False, True, True]), [1.0, 2.0])
        array([1., 0., 2., 1.])
    """
    return _written(arr, np.place, mask, vals)


def putmask(a: Any, mask: Any, values: Any) -> np.ndarray:
    """``a`` after ``np.putmask(a, mask, values)``, as a new array (``a`` is not changed).
    Unlike :func:`place`'s, the values repeat along all of ``a``'s positions, written or not.

    Example:
        >>> import numpy as np
        >>> putmask(np.zeros(4), np.array([True, False, True, True]), [1.0, 2.0])
        array([1., 0., 1., 2.])
    """
    return _written(a, np.putmask, mask, values)


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> np.ndarray:
    """``a`` after ``np.put(a, ind, v, mode)``, as a new array (``a`` is not changed).

    Example:
        >>> import numpy as np
        >>> put(np.zeros(3), [2, 0, 2], [1.0, 2.0, 3.0])
        array([2., 0., 3.])
    """
    return _written(a, np.put, ind, v, mode=mode)


def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> np.ndarray:
    """``dst`` after ``np.copyto(dst, src, casting, where)``, as a new array (``dst`` is not
    changed).

    Example:
        >>> import numpy as np
        >>> copyto(np.zeros(3), 5.0, where=np.array([True, False, True]))
        array([5., 0., 5.])
    """
    return _written(dst, np.copyto, src, casting=casting, where=where)


def fill(a: Any, value: Any) -> np.ndarray:
    """``a`` after ``a.fill(value)``, as a new array (``a`` is not changed).

    Example:
        >>> import numpy as np
        >>> fill(np.zeros(2), 3.0)
        array([3., 3.])
    """
    return _written(a, np.ndarray.fill, value)


def fill_diagonal(a: Any, val: Any, wrap: bool = False) -> np.ndarray:
    """``a`` after ``np.fill_diagonal(a, val, wrap)``, as a new array (``a`` is not changed).

    Example:
        >>> import numpy as np
        >>> fill_diagonal(np.zeros((2, 2)), [1.0, 2.0])
        array([[1., 0.],
               [0., 2.]])
    """
    return _written(a, np.fill_diagonal, val, wrap)


# -- where each write puts which value ------------------------------------------------------------


def _place_slots(a: Any, mask: Any, vals: Any) -> tuple[np.ndarray, np.ndarray]:
    pos = np.flatnonzero(mask)
    return pos, np.arange(pos.size) % max(np.size(vals), 1)


def _putmask_slots(a: Any, mask: Any, values: Any) -> tuple[np.ndarray, np.ndarray]:
    pos = np.flatnonzero(mask)
    return pos, pos % max(np.size(values), 1)


def _put_slots(a: Any, ind: Any, v: Any, mode: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    size = np.size(a)
    flat = np.asarray(ind, dtype=np.intp).ravel()
    flat = np.clip(flat, 0, size - 1) if mode == "clip" else flat % max(size, 1)
    src = np.arange(flat.size) % max(np.size(v), 1)
    # NumPy keeps the last write to a position: keep only that one
    last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
    return flat[last], src[last]


def _copyto_slots(dst: Any, src: Any, casting: str = "same_kind",
                  where: Any = True) -> tuple[np.ndarray, np.ndarray]:
    shape = np.shape(dst)
    pos = np.flatnonzero(np.broadcast_to(where, shape))
    sources = np.broadcast_to(np.arange(np.size(src)).reshape(np.shape(src)), shape)
    return pos, sources.ravel()[pos]


def _fill_slots(a: Any, value: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(np.size(a)), np.zeros(np.size(a), dtype=np.intp)


def _fill_diagonal_slots(a: Any, val: Any, wrap: bool = False) -> tuple[np.ndarray, np.ndarray]:
    shape = np.shape(a)
    if len(shape) == 2:  # NumPy's own stride: a.flat[:end:cols + 1], end = cols * cols unless wrap
        size, cols = shape[0] * shape[1], shape[1]
        pos = np.arange(0, size if wrap else min(size, cols * cols), cols + 1)
    else:
        diagonal = np.zeros(shape, dtype=bool)
        np.fill_diagonal(diagonal, True, wrap)
        pos = np.flatnonzero(diagonal)
    return pos, np.arange(pos.size) % max(np.size(val), 1)


def _write_rules(f: Any, slots: Callable[..., tuple[np.ndarray, np.ndarray]], at: int) -> tuple[Any, Any]:
    """The rules of the functional write ``f(a, ...)`` whose values are its argument ``at``:
    ``slots(a, ...)`` says which flat positions of ``a`` get which flat element of the values."""
    name = f.__name__

    def write_rrule(a: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(a, *args, **kwargs)
        pos, src = slots(a, *args, **kwargs)
        values = args[at - 1]

        def write_pullback(ybar: Any) -> Any:
            flat = np.array(ybar, copy=True).reshape(-1)
            taken = flat[pos]
            flat[pos] = 0
            vbar = np.zeros(np.size(values), dtype=taken.dtype)
            np.add.at(vbar, src, taken)
            cts: list[Any] = [_NT] * len(args)
            # nothing written (SciPy places its bounds under masks that are often all False): a
            # zero, not zeros, so no pullback upstream multiplies it by an infinite bound
            cts[at - 1] = project(values, vbar.reshape(np.shape(values))) if pos.size else _ZT
            return (_NT, project(a, flat.reshape(np.shape(a))), *cts)

        write_pullback.__name__ = write_pullback.__qualname__ = f"{name}_pullback"
        return y, write_pullback

    def write_frule(tangents: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(a, *args, **kwargs)
        pos, src = slots(a, *args, **kwargs)
        values = args[at - 1]
        ydot = np.array(dense_tangent(a, tangents[1]), dtype=np.result_type(y, np.float64), copy=True)
        flat = ydot.reshape(-1)
        flat[pos] = np.reshape(dense_tangent(values, tangents[at + 1]), -1)[src]
        return y, project(y, ydot)

    write_rrule.__name__ = write_rrule.__qualname__ = f"{name}_rrule"
    write_frule.__name__ = write_frule.__qualname__ = f"{name}_frule"
    return write_rrule, write_frule


RULES: tuple[RulePair, ...] = (
    RulePair(place, *_write_rules(place, _place_slots, 2), wrt=(0, 2)),
    RulePair(putmask, *_write_rules(putmask, _putmask_slots, 2), wrt=(0, 2)),
    RulePair(put, *_write_rules(put, _put_slots, 2), wrt=(0, 2)),
    RulePair(copyto, *_write_rules(copyto, _copyto_slots, 1), wrt=(0, 1)),
    RulePair(fill, *_write_rules(fill, _fill_slots, 1), wrt=(0, 1)),
    RulePair(fill_diagonal, *_write_rules(fill_diagonal, _fill_diagonal_slots, 1), wrt=(0, 1)),
)

#: Each NumPy callable that writes into its first argument -> its functional form (same
#: arguments); ``ufunc.at`` of every ufunc with a rule included, and the sorting methods
#: (``a.sort()`` is ``a = np.sort(a)``).
IN_PLACE: dict[Any, Callable[..., np.ndarray]] = {
    np.place: place, np.putmask: putmask, np.put: put, np.ndarray.put: put, np.copyto: copyto,
    np.ndarray.fill: fill, np.fill_diagonal: fill_diagonal, np.ndarray.sort: np.sort,
    np.ndarray.partition: np.partition,
    **{uf.at: partial(ufunc_at, uf) for uf in AT_UFUNCS},
}
