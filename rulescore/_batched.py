"""``Batched``: the tangents of one primal in several directions, stacked on a leading axis.

A forward-mode engine pushing ``k`` directions at once hands an frule one ``Batched`` per
argument instead of calling it ``k`` times. Frules need no change: ``Batched`` behaves like a
tangent of the primal's shape (``shape``, ``ndim``, arithmetic, NumPy ufuncs and a table of
NumPy functions all act on the logical shape, the direction axis carried along), the way
``jax.vmap`` batches a function. Anything without a batching rule here (``float(t)``,
``np.asarray(t)``, item assignment, an unlisted NumPy function) raises :class:`NotBatchable`,
and the engine falls back to one direction at a time: an frule either gives the batched
answer or fails, it never silently mixes directions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin


class NotBatchable(TypeError):
    """An operation on a :class:`Batched` tangent that has no batching rule.

    Example:
        >>> import numpy as np
        >>> from rulescore import Batched, NotBatchable
        >>> try:
        ...     float(Batched(np.zeros((2, 1)))[0])
        ... except NotBatchable as err:
        ...     print(err)
        a batched tangent has no single value
    """


def _data(x: Any, ndim: int) -> Any:
    """``x`` lined up for broadcasting at logical rank ``ndim`` (direction axis first)."""
    if type(x) is not Batched:
        return x
    d = x.data
    missing = ndim - (d.ndim - 1)
    return d.reshape((d.shape[0],) + (1,) * missing + d.shape[1:]) if missing else d


def _plain(x: Any) -> bool:
    return isinstance(x, (np.ndarray, np.generic, int, float, complex)) and not (
        isinstance(x, np.ndarray) and x.dtype.kind == "O")


_UFUNC_KWARGS = frozenset(("dtype", "casting"))


class Batched(NDArrayOperatorsMixin):
    """``k`` tangents of one primal, one per direction: ``data[i]`` is direction ``i``'s tangent.

    Example:
        >>> import numpy as np
        >>> from rulescore import Batched
        >>> t = Batched(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))  # 3 directions, shape (2,)
        >>> t.shape, (np.cos(np.zeros(2)) * t).data[2]
        ((2,), array([1., 1.]))
        >>> (np.array([[1.0, 2.0], [3.0, 4.0]]) @ t).data[2]
        array([3., 7.])
    """

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    @property
    def directions(self) -> int:
        return int(self.data.shape[0])

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape[1:])

    @property
    def ndim(self) -> int:
        return int(self.data.ndim - 1)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.data.dtype

    @property
    def real(self) -> Batched:
        return Batched(self.data.real)

    @property
    def imag(self) -> Batched:
        return Batched(self.data.imag)

    @property
    def T(self) -> Batched:
        return self.transpose()

    def conjugate(self) -> Batched:
        return Batched(self.data.conjugate())

    conj = conjugate

    def astype(self, dtype: Any, copy: bool = True) -> Batched:
        return Batched(self.data.astype(dtype, copy=copy))

    def copy(self) -> Batched:
        return Batched(self.data.copy())

    def reshape(self, *shape: Any, order: str = "C") -> Batched:
        if order != "C":
            raise NotBatchable(f"reshape(order={order!r})")
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return Batched(self.data.reshape((self.directions, *shape)))

    def ravel(self, order: str = "C") -> Batched:
        return self.reshape(-1, order=order)

    flatten = ravel

    def transpose(self, *axes: Any) -> Batched:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        order = range(self.ndim)[::-1] if not axes else [a % self.ndim for a in axes]
        return Batched(self.data.transpose((0, *(a + 1 for a in order))))

    def _axes(self, axis: Any) -> Any:
        if axis is None:
            return tuple(range(1, self.data.ndim))
        if isinstance(axis, (tuple, list)):
            return tuple(int(a) % self.ndim + 1 for a in axis)
        return int(axis) % self.ndim + 1

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Batched:
        return Batched(self.data.sum(axis=self._axes(axis), dtype=dtype, keepdims=keepdims))

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Batched:
        return Batched(self.data.mean(axis=self._axes(axis), dtype=dtype, keepdims=keepdims))

    def squeeze(self, axis: Any = None) -> Batched:
        if axis is None:
            return Batched(self.data.reshape((self.directions, *(n for n in self.shape if n != 1))))
        return Batched(self.data.squeeze(self._axes(axis)))

    def __getitem__(self, index: Any) -> Batched:
        return Batched(self.data[batched_index(index)])

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if method != "__call__" or not _UFUNC_KWARGS.issuperset(kwargs):
            raise NotBatchable(f"np.{ufunc.__name__}.{method} with {sorted(kwargs)}")
        if not all(type(x) is Batched or _plain(x) for x in inputs):
            return NotImplemented
        if ufunc is np.matmul:
            return _matmul(*inputs, **kwargs)
        if ufunc.signature is not None:
            raise NotBatchable(f"generalised ufunc np.{ufunc.__name__}")
        ndim = max(np.ndim(x) for x in inputs)
        out = ufunc(*(_data(x, ndim) for x in inputs), **kwargs)
        return tuple(Batched(o) for o in out) if ufunc.nout > 1 else Batched(out)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        rule = _FUNCTIONS.get(func)
        if rule is None:
            raise NotBatchable(f"np.{func.__name__} has no batching rule")
        return rule(*args, **kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotBatchable("a batched tangent cannot become one array")

    def _refuse(self, *args: Any) -> Any:
        raise NotBatchable("a batched tangent has no single value")

    __bool__ = __float__ = __complex__ = __int__ = __index__ = __len__ = __iter__ = _refuse
    __setitem__ = _refuse

    def __repr__(self) -> str:
        return f"Batched({self.directions} directions of shape {self.shape}, {self.dtype})"


def batched_index(index: Any) -> tuple[Any, ...]:
    """``index`` of a tangent, as the index of its stack (the direction axis kept in front).

    Example:
        >>> batched_index((0, slice(1, None)))
        (slice(None, None, None), 0, slice(1, None, None))
    """
    index = index if isinstance(index, tuple) else (index,)
    advanced = [i for i in index if not isinstance(i, (slice, type(None), type(Ellipsis)))]
    fancy = any(not isinstance(i, (int, np.integer)) for i in advanced)
    if fancy and len(advanced) > 1:  # NumPy would move the indexed axes before the direction axis
        raise NotBatchable("indexing with an array and another integer or array index")
    if any(type(i) is Batched for i in index):
        raise NotBatchable("indexing by a batched tangent")
    return (slice(None), *index)


def _matmul(a: Any, b: Any, **kwargs: Any) -> Batched:
    if max(np.ndim(a), np.ndim(b)) > 2 or min(np.ndim(a), np.ndim(b)) == 0:
        raise NotBatchable("matmul of arrays of more than two dimensions")
    A = a.data if type(a) is Batched else a
    B = b.data if type(b) is Batched else b
    row, col = np.ndim(a) == 1, np.ndim(b) == 1
    if row:
        A = A[..., None, :]
    if col:
        B = B[..., None]
    out = np.matmul(A, B, **kwargs)
    return Batched(out[..., 0, 0] if row and col else out[..., 0, :] if row else out[..., 0] if col else out)


def _lift(f: Callable[..., Any]) -> Callable[..., Any]:
    """A NumPy function whose first argument is the array, as the method of the same name."""
    return lambda x, *args, **kwargs: getattr(_as_batched(x), f.__name__)(*args, **kwargs)


def _as_batched(x: Any) -> Batched:
    if type(x) is not Batched:
        raise NotBatchable("a batched tangent expected")
    return x


def _reshape(x: Any, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> Batched:
    return _as_batched(x).reshape(newshape if shape is None else shape, order=order)


def _expand_dims(x: Any, axis: Any) -> Batched:
    x = _as_batched(x)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = x.ndim + len(axes)
    return Batched(np.expand_dims(x.data, tuple(int(a) % ndim + 1 for a in axes)))


def _broadcast_to(x: Any, shape: Any, subok: bool = False) -> Batched:
    x = _as_batched(x)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return Batched(np.broadcast_to(_data(x, len(shape)), (x.directions, *shape)))


def _where(cond: Any, a: Any, b: Any) -> Batched:
    if type(cond) is Batched or not all(type(v) is Batched or _plain(v) for v in (a, b)):
        raise NotBatchable("np.where with a batched condition")
    ndim = max(np.ndim(cond), np.ndim(a), np.ndim(b))
    return Batched(np.where(cond, _data(a, ndim), _data(b, ndim)))


def _dot(a: Any, b: Any) -> Any:
    return a * b if np.ndim(a) == 0 or np.ndim(b) == 0 else _matmul(a, b)


def _zeros_like(x: Any, dtype: Any = None) -> Batched:
    return Batched(np.zeros_like(_as_batched(x).data, dtype=dtype))


def _moveaxis(x: Any, source: Any, destination: Any) -> Batched:
    x = _as_batched(x)
    src, dst = np.atleast_1d(source), np.atleast_1d(destination)
    return Batched(np.moveaxis(x.data, [int(a) % x.ndim + 1 for a in src],
                               [int(a) % x.ndim + 1 for a in dst]))


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    **{f: _lift(f) for f in (np.sum, np.mean, np.ravel, np.transpose, np.squeeze, np.copy)},
    np.reshape: _reshape,
    np.real: lambda x: _as_batched(x).real,
    np.imag: lambda x: _as_batched(x).imag,
    np.shape: lambda x: x.shape,
    np.ndim: lambda x: x.ndim,
    np.size: lambda x, axis=None: x.size if axis is None else x.shape[axis],
    np.iscomplexobj: lambda x: x.dtype.kind == "c",
    np.isrealobj: lambda x: x.dtype.kind != "c",
    np.expand_dims: _expand_dims,
    np.broadcast_to: _broadcast_to,
    np.where: _where,
    np.dot: _dot,
    np.zeros_like: _zeros_like,
    np.moveaxis: _moveaxis,
    np.swapaxes: lambda x, a, b: _as_batched(x).transpose(
        *[b if i == a % x.ndim else a if i == b % x.ndim else i for i in range(x.ndim)]),
}
