"""Hypothesis strategies for primals (numbers, arrays, matrices, structures) and their tangents.

Every strategy draws finite values in a modest range (default ``[-3, 3]``) so that finite
differences stay accurate; complex dtypes draw the real and imaginary parts in that range.

Example:
    >>> import numpy as np
    >>> from hypothesis import given
    >>> from rulescore.testing import strategies as S
    >>> @given(S.arrays(shape=(2, 3), dtype=np.float32))
    ... def check(x):
    ...     assert x.shape == (2, 3) and x.dtype == np.float32
    >>> check()
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rulescore.testing._vec import build_node

__all__ = [
    "NamedPair", "Pair", "arrays", "broadcasting_arrays", "hermitian_matrices", "nested",
    "scalars", "shapes", "spd_matrices", "square_matrices", "symmetric_matrices", "tangents_for",
    "well_conditioned_matrices",
]


def _float_width(dtype: Any) -> Any:
    dt = np.dtype(dtype)
    if dt.kind == "c":
        return int(dt.itemsize * 4)  # half of the complex size, in bits
    if dt.kind == "f":
        return int(dt.itemsize * 8)
    return 64


def _real_elements(min_value: float, max_value: float, width: Any = 64) -> st.SearchStrategy[float]:
    return st.floats(min_value=min_value, max_value=max_value, allow_nan=False, allow_infinity=False,
                     allow_subnormal=False, width=width)


def scalars(min_value: float = -3.0, max_value: float = 3.0, dtype: Any = float) -> st.SearchStrategy[Any]:
    """A Python ``float`` in ``[min_value, max_value]``; a ``complex`` (both parts in range) when
    ``dtype=complex``; a NumPy scalar for a NumPy dtype (``np.float32``, ``np.complex128``...).

    Example:
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.scalars(dtype=complex))
        ... def check(z):
        ...     assert isinstance(z, complex) and abs(z.real) <= 3 and abs(z.imag) <= 3
        >>> check()
    """
    if dtype is float:
        return _real_elements(min_value, max_value)
    if dtype is complex:
        part = _real_elements(min_value, max_value)
        return st.builds(complex, part, part)
    if dtype is int:
        return st.integers(int(np.ceil(min_value)), int(np.floor(max_value)))
    dt = np.dtype(dtype)
    return arrays(shape=(), dtype=dt, min_value=min_value, max_value=max_value).map(lambda a: a[()])


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
           ) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes (a thin wrapper of ``hypothesis.extra.numpy.array_shapes``).

    Example:
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.shapes(min_dims=2, max_dims=2))
        ... def check(shape):
        ...     assert len(shape) == 2
        >>> check()
    """
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


@st.composite
def _arrays(draw: st.DrawFn, shape: Any, dtype: np.dtype[Any], min_value: float,
            max_value: float) -> np.ndarray[Any, Any]:
    if not isinstance(shape, tuple):
        shape = draw(shape)
    if dtype.kind == "c":
        real_dtype = np.dtype(f"f{dtype.itemsize // 2}")
        elements = _real_elements(min_value, max_value, _float_width(dtype))
        re = draw(hnp.arrays(real_dtype, shape, elements=elements))
        im = draw(hnp.arrays(real_dtype, shape, elements=elements))
        return (re + 1j * im).astype(dtype)
    if dtype.kind == "f":
        return draw(hnp.arrays(dtype, shape, elements=_real_elements(min_value, max_value,
                                                                     _float_width(dtype))))
    if dtype.kind in "iu":
        lo = max(int(np.ceil(min_value)), int(np.iinfo(dtype).min))
        return draw(hnp.arrays(dtype, shape, elements=st.integers(lo, int(np.floor(max_value)))))
    return draw(hnp.arrays(dtype, shape))


def arrays(shape: Any = None, dtype: Any = np.float64, min_value: float = -3.0, max_value: float = 3.0,
           min_dims: int = 0, max_dims: int = 3, min_side: int = 1, max_side: int = 4
           ) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """NumPy arrays of ``dtype`` with finite elements in ``[min_value, max_value]``.

    ``shape`` is a fixed tuple, a strategy of shapes, or ``None`` (any shape with ``min_dims`` to
    ``max_dims`` dimensions of ``min_side`` to ``max_side``). Complex dtypes draw both parts in
    range; integer dtypes draw integers in range; other dtypes (bool) draw anything.

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.arrays(dtype=np.complex64, min_dims=1))
        ... def check(z):
        ...     assert z.dtype == np.complex64 and z.ndim >= 1 and np.all(np.abs(z.real) <= 3)
        >>> check()
    """
    if shape is None:
        shape = shapes(min_dims, max_dims, min_side, max_side)
    elif isinstance(shape, int):
        shape = (shape,)
    return _arrays(shape, np.dtype(dtype), min_value, max_value)


@st.composite
def _broadcasting(draw: st.DrawFn, n: int, dtype: np.dtype[Any], min_value: float, max_value: float,
                  max_dims: int, max_side: int) -> tuple[np.ndarray[Any, Any], ...]:
    shapes_ = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims,
                                                     min_side=1, max_side=max_side)
                   .filter(lambda s: len(set(s.input_shapes)) > 1))
    return tuple(draw(_arrays(s, dtype, min_value, max_value)) for s in shapes_.input_shapes)


def broadcasting_arrays(n: int = 2, dtype: Any = np.float64, min_value: float = -3.0,
                        max_value: float = 3.0, max_dims: int = 3, max_side: int = 4
                        ) -> st.SearchStrategy[tuple[np.ndarray[Any, Any], ...]]:
    """A tuple of ``n`` arrays whose shapes broadcast together and are not all equal.

    Use it with ``.map`` or unpack it in the test: ``@given(S.broadcasting_arrays(2))``.

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.broadcasting_arrays(3))
        ... def check(xs):
        ...     assert len(xs) == 3 and len({x.shape for x in xs}) > 1
        ...     np.broadcast_shapes(*(x.shape for x in xs))
        >>> check()
    """
    return _broadcasting(n, np.dtype(dtype), min_value, max_value, max_dims, max_side)


def _sizes(n: int | None, max_n: int = 4) -> st.SearchStrategy[int]:
    return st.just(n) if n is not None else st.integers(1, max_n)


def square_matrices(n: int | None = None, dtype: Any = np.float64, min_value: float = -3.0,
                    max_value: float = 3.0) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """``n`` x ``n`` matrices (``n`` from 1 to 4 when not given); may be singular.

    Example:
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.square_matrices())
        ... def check(a):
        ...     assert a.ndim == 2 and a.shape[0] == a.shape[1]
        >>> check()
    """
    dt = np.dtype(dtype)
    return _sizes(n).flatmap(lambda k: _arrays((k, k), dt, min_value, max_value))


def _eye_like(k: int, dt: np.dtype[Any]) -> np.ndarray[Any, Any]:
    return np.eye(k, dtype=dt)


def well_conditioned_matrices(n: int | None = None, dtype: Any = np.float64
                              ) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """Square matrices with condition number below about 10 (strictly diagonally dominant).

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.well_conditioned_matrices())
        ... def check(a):
        ...     assert np.linalg.cond(a) < 10
        >>> check()
    """
    dt = np.dtype(dtype)

    def make(k: int) -> st.SearchStrategy[np.ndarray[Any, Any]]:
        def fix(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
            sign = np.where(np.real(np.diag(a)) < 0, -1.0, 1.0)
            return (a + np.diag(sign * (np.abs(a).sum(axis=1) + 1.0))).astype(dt)

        return _arrays((k, k), dt, -1.0, 1.0).map(fix)

    return _sizes(n).flatmap(make)


@st.composite
def _orthogonal(draw: st.DrawFn, k: int, dt: np.dtype[Any]) -> np.ndarray[Any, Any]:
    a = draw(well_conditioned_matrices(k, dt))
    q, r = np.linalg.qr(a)
    out: np.ndarray[Any, Any] = (q * np.sign(np.real(np.diag(r)))).astype(dt)
    return out


def symmetric_matrices(n: int | None = None, dtype: Any = np.float64, min_eigengap: float = 0.0,
                       min_value: float = -3.0, max_value: float = 3.0
                       ) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """Real symmetric ``n`` x ``n`` matrices. With ``min_eigengap > 0`` they are built from an
    orthogonal basis and eigenvalues at least that far apart (for eigendecomposition rules).

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.symmetric_matrices(3, min_eigengap=0.5))
        ... def check(a):
        ...     assert np.array_equal(a, a.T) and np.diff(np.linalg.eigvalsh(a)).min() >= 0.49
        >>> check()
    """
    dt = np.dtype(dtype)
    if min_eigengap > 0:
        return _sizes(n).flatmap(lambda k: _spectral(k, dt, min_eigengap, hermitian=False))
    return square_matrices(n, dt, min_value, max_value).map(lambda a: ((a + a.T) / 2).astype(dt))


def hermitian_matrices(n: int | None = None, dtype: Any = np.complex128, min_eigengap: float = 0.0
                       ) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """Hermitian ``n`` x ``n`` matrices (``min_eigengap`` as in :func:`symmetric_matrices`).

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.hermitian_matrices(2))
        ... def check(a):
        ...     assert np.allclose(a, a.conj().T)
        >>> check()
    """
    dt = np.dtype(dtype)
    if min_eigengap > 0:
        return _sizes(n).flatmap(lambda k: _spectral(k, dt, min_eigengap, hermitian=True))
    return square_matrices(n, dt).map(lambda a: ((a + a.conj().T) / 2).astype(dt))


@st.composite
def _spectral(draw: st.DrawFn, k: int, dt: np.dtype[Any], gap: float, hermitian: bool
              ) -> np.ndarray[Any, Any]:
    q = draw(_orthogonal(k, dt))
    start = draw(_real_elements(-3.0, 3.0))
    steps = draw(st.lists(_real_elements(gap, gap + 2.0), min_size=k, max_size=k))
    lam = start + np.cumsum(steps)
    a = (q * lam) @ q.conj().T
    out: np.ndarray[Any, Any] = ((a + a.conj().T) / 2).astype(dt)
    return out


def spd_matrices(n: int | None = None, dtype: Any = np.float64) -> st.SearchStrategy[np.ndarray[Any, Any]]:
    """Symmetric (Hermitian, for complex dtypes) positive definite matrices, eigenvalues >= 1.

    Example:
        >>> import numpy as np
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.spd_matrices())
        ... def check(a):
        ...     assert np.linalg.eigvalsh(a).min() >= 0.99
        >>> check()
    """
    dt = np.dtype(dtype)

    def make(k: int) -> st.SearchStrategy[np.ndarray[Any, Any]]:
        return _arrays((k, k), dt, -1.0, 1.0).map(
            lambda m: ((m @ m.conj().T + np.eye(k)) + (m @ m.conj().T + np.eye(k)).conj().T) / 2
        ).map(lambda a: a.astype(dt))

    return _sizes(n).flatmap(make)


@dataclasses.dataclass
class Pair:
    """A small dataclass used by :func:`nested` to exercise structural tangents."""

    a: Any
    b: Any


class NamedPair(NamedTuple):
    """A small NamedTuple used by :func:`nested` to exercise structural tangents."""

    a: Any
    b: Any


def nested(leaves: st.SearchStrategy[Any] | None = None, max_leaves: int = 4) -> st.SearchStrategy[Any]:
    """Nested primals: tuples, lists, dicts, :class:`Pair` dataclasses and :class:`NamedPair`
    NamedTuples whose leaves come from ``leaves`` (default: floats and small arrays).

    Example:
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> @given(S.nested())
        ... def check(x):
        ...     assert x is not None
        >>> check()
    """
    if leaves is None:
        leaves = st.one_of(scalars(), arrays(max_dims=2, max_side=3))

    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            st.tuples(children, children),
            st.lists(children, min_size=1, max_size=3),
            st.dictionaries(st.sampled_from(["a", "b", "c"]), children, min_size=1, max_size=3),
            st.builds(Pair, children, children),
            st.builds(NamedPair, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def tangents_for(x: Any) -> st.SearchStrategy[Any]:
    """Tangents in the tangent space of the primal ``x``: same dtype and shape for arrays, a
    ``float`` for ints and floats, ``rc.Tangent`` for tuples, dicts, dataclasses and NamedTuples,
    ``NoTangent()`` where ``x`` has no tangent space (bools, strings, ``rct.no_tangent(...)``).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> from hypothesis import given
        >>> from rulescore.testing import strategies as S
        >>> x = (np.zeros(2, np.float32), "label", 1.0)
        >>> @given(S.tangents_for(x))
        ... def check(t):
        ...     assert isinstance(t, rc.Tangent[tuple]) and t[0].dtype == np.float32
        ...     assert t[1] == rc.NoTangent() and rc.ProjectTo(x)(t) == t
        >>> check()
    """
    node = build_node(x, ints=True)
    if node.n == 0:
        return st.just(node.tangent(np.zeros(0)))
    vec = hnp.arrays(np.float64, (node.n,), elements=_real_elements(-3.0, 3.0))
    return vec.map(node.tangent)

