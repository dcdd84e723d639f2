"""rulescore.testing.strategies: what the strategies draw."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings

from rulescore.testing import strategies as S

# ---------------------------------------------------------------------------------------------
# strategies


@settings(max_examples=25)
@given(S.arrays(dtype=np.complex64, min_value=-2.0, max_value=1.0))
def test_complex_arrays_draw_both_parts_in_range(z: np.ndarray) -> None:
    assert z.dtype == np.complex64 and 0 <= z.ndim <= 3 and all(1 <= n <= 4 for n in z.shape)
    assert np.all((z.real >= -2.0) & (z.real <= 1.0) & (z.imag >= -2.0) & (z.imag <= 1.0))


@settings(max_examples=10)
@given(S.arrays(shape=(2, 3), dtype=np.int32), S.scalars(dtype=np.float32), S.scalars(dtype=int))
def test_other_dtypes(a: np.ndarray, s: Any, i: int) -> None:
    assert a.shape == (2, 3) and a.dtype == np.int32 and np.all(np.abs(a) <= 3)
    assert isinstance(s, np.float32) and isinstance(i, int)


@settings(max_examples=15)
@given(S.broadcasting_arrays(3, dtype=np.float32))
def test_broadcasting_arrays(xs: tuple[np.ndarray, ...]) -> None:
    assert len(xs) == 3 and len({x.shape for x in xs}) > 1 and all(x.dtype == np.float32 for x in xs)
    np.broadcast_shapes(*(x.shape for x in xs))


@settings(max_examples=15)
@given(S.well_conditioned_matrices(dtype=np.complex128), S.spd_matrices(3, dtype=np.complex128),
       S.symmetric_matrices(), S.hermitian_matrices(3, min_eigengap=0.3))
def test_matrices(w: np.ndarray, p: np.ndarray, s: np.ndarray, h: np.ndarray) -> None:
    assert w.dtype == np.complex128 and np.linalg.cond(w) < 10
    assert p.shape == (3, 3) and np.allclose(p, p.conj().T) and np.linalg.eigvalsh(p).min() > 0.99
    assert np.array_equal(s, s.T)
    assert np.allclose(h, h.conj().T) and np.diff(np.linalg.eigvalsh(h)).min() > 0.29
