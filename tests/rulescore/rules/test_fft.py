"""Rules for ``numpy.fft`` (rulescore/rules/fft.py): the table of cases checked against finite
differences (every transform, ``n=``/``s=`` cropping and padding, axes, the three
normalisations, real and complex inputs), plus targeted tests of the real-transform bin weights
and of real inputs getting real cotangents."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import rulescore as rc
import rulescore.testing.strategies as S
from tests.rulescore.rules._cases import RuleCase, case_id, check_case

F = np.fft
N = 3  # hypothesis examples per case
NORMS = (None, "ortho", "forward")


def case(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, name: str = "",
         **options: Any) -> RuleCase:
    return RuleCase(f, args, kwargs or {}, name=name, max_examples=options.pop("max_examples", N),
                    **options)


R6, R7 = S.arrays(shape=(6,)), S.arrays(shape=(7,))
C6, C4 = S.arrays(shape=(6,), dtype=np.complex128), S.arrays(shape=(4,), dtype=np.complex128)
R345, C345 = S.arrays(shape=(3, 4, 5)), S.arrays(shape=(3, 4, 5), dtype=np.complex128)


def _name(kw: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in kw.items())


CASES = [
    # complex transforms
    *[case(f, (x,), kw, name=f"{label}-{_name(kw)}")
      for f in (F.fft, F.ifft)
      for x, label in ((C6, "complex"), (R7, "real"))
      for kw in ({"norm": m} for m in NORMS)],
    *[case(f, (C6,), {"n": n}, name=f"n={n}") for f in (F.fft, F.ifft) for n in (4, 9)],
    case(F.fft, (C345,), {"axis": 1, "n": 3, "norm": "ortho"}, name="axis"),
    case(F.fft, (S.arrays(shape=(5,), dtype=np.float32),), name="float32"),
    *[case(f, (C345,), {"norm": m}, name=f"norm={m}") for f in (F.fft2, F.ifft2, F.fftn, F.ifftn)
      for m in NORMS],
    *[case(f, (R345,), {"s": (2, 7), "axes": (0, 2)}, name="s-axes")
      for f in (F.fft2, F.ifft2, F.fftn, F.ifftn)],
    case(F.fftn, (C345,), {"axes": (1,)}, name="one-axis"),
    # real-to-complex
    *[case(f, (x,), {"n": n, "norm": m}, name=f"{label}-n={n}-norm={m}")
      for f in (F.rfft, F.ihfft)
      for x, label in ((R6, "even"), (R7, "odd"))
      for n in (None, 4, 9)
      for m in NORMS],
    case(F.rfft, (R345,), {"axis": 1}, name="axis"),
    case(F.rfft, (S.arrays(shape=(6,), dtype=np.float32),), name="float32"),
    *[case(f, (R345,), {"norm": m}, name=f"norm={m}") for f in (F.rfft2, F.rfftn) for m in NORMS],
    case(F.rfftn, (R345,), {"s": (3, 8), "axes": (2, 0)}, name="s-axes"),
    case(F.rfft2, (R345,), {"s": (5, 3)}, name="s"),
    # complex-to-real
    *[case(f, (x,), {"n": n, "norm": m}, name=f"{label}-n={n}-norm={m}")
      for f in (F.irfft, F.hfft)
      for x, label in ((C6, "6"), (C4, "4"))
      for n in (None, 5, 8, 11)
      for m in NORMS],
    case(F.irfft, (R6,), name="real-input"),
    case(F.irfft, (C345,), {"axis": 0}, name="axis"),
    *[case(f, (C345,), {"norm": m}, name=f"norm={m}") for f in (F.irfft2, F.irfftn) for m in NORMS],
    case(F.irfftn, (C345,), {"s": (3, 7), "axes": (2, 0)}, name="s-axes"),
    case(F.irfft2, (C345,), {"s": (5, 4)}, name="s"),
    # shifts and frequencies
    case(F.fftshift, (R345,)),
    case(F.fftshift, (R7,), name="odd"),
    case(F.ifftshift, (C345,), {"axes": 1}, name="axis"),
    case(F.ifftshift, (R7,), name="odd"),
    case(F.fftfreq, (7, S.scalars(0.1, 2.0)), nondiff=(0,)),
    case(F.fftfreq, (6,), {"d": 0.5}, nondiff=(0,), name="d-keyword"),
    case(F.rfftfreq, (8, S.scalars(0.1, 2.0)), nondiff=(0,)),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_rule(case: RuleCase) -> None:
    check_case(case)


def test_rfft_pullback_halves_the_inner_bins() -> None:
    x = np.arange(6.0)
    _, back = rc.rrule(F.rfft, x)
    _, xbar = back(np.ones(4, dtype=complex))
    # d/dx_j of sum_k Re(y_k) with y = rfft(x): sum_k cos(2 pi j k / 6) over k = 0..3
    k = np.arange(4)
    expected = np.cos(2 * np.pi * np.outer(np.arange(6), k) / 6).sum(axis=1)
    np.testing.assert_allclose(xbar, expected, atol=1e-12)
    assert xbar.dtype == np.float64


def test_irfft_pullback_doubles_the_inner_bins() -> None:
    z = np.ones(4, dtype=complex)
    y, back = rc.rrule(F.irfft, z)
    _, zbar = back(np.ones(6))
    # sum(irfft(z)) = z_0 (the DC bin): only it has a nonzero derivative
    np.testing.assert_allclose(zbar, [1.0, 0.0, 0.0, 0.0], atol=1e-12)
    _, zbar = back(np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
    # irfft(z)[0] = (z_0 + 2 Re z_1 + 2 Re z_2 + Re z_3) / 6
    np.testing.assert_allclose(zbar, np.array([1.0, 2.0, 2.0, 1.0]) / 6, atol=1e-12)


@pytest.mark.parametrize("f", [F.fft, F.fft2, F.rfftn, F.ifftn])
def test_real_input_gets_a_real_cotangent(f: Any) -> None:
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    y, back = rc.rrule(f, x)
    _, xbar = back(np.ones_like(y) * (1 + 2j))
    assert xbar.dtype == np.float32 and xbar.shape == x.shape


# --------------------------------------------------------------------------------------------
# second derivatives: the pullbacks differentiate again (through zygotepy)
# --------------------------------------------------------------------------------------------

_X = np.array([0.3, -1.2, 0.8, 2.0, -0.4, 1.1])


def _h_fft(x: Any) -> Any:
    return np.sum(np.abs(F.fft(x * x, n=8, norm="ortho")) ** 4) + np.sum(np.real(F.ifft(x, n=4)) ** 3)


def _h_rfft(x: Any) -> Any:
    return np.sum(np.abs(F.rfft(x, n=5)) ** 4) + np.sum(F.irfft(F.rfft(x) * (1 + x[:4]), norm="forward") ** 3)


def _h_nd(x: Any) -> Any:
    m = np.reshape(x, (2, 3))
    return (np.sum(np.abs(F.fftn(m)) ** 4) + np.sum(np.abs(F.rfft2(m, norm="ortho")) ** 4)
            + np.sum(F.irfftn(F.rfftn(m) ** 2, s=(2, 3), axes=(0, 1)) ** 2) + np.sum(np.abs(F.ifft2(m)) ** 4))


def _h_hermitian(x: Any) -> Any:
    return np.sum(F.hfft(x[:4] * (1 + 1j), n=6) ** 3) + np.sum(np.abs(F.ihfft(x)) ** 4)


def _h_shift(x: Any) -> Any:
    return np.sum(F.fftshift(x) * x**2) + np.sum(F.ifftshift(x) ** 3 * x)


@pytest.mark.parametrize("f", [_h_fft, _h_rfft, _h_nd, _h_hermitian, _h_shift], ids=lambda f: f.__name__[3:])
def test_second_derivatives(f: Any) -> None:
    zp = pytest.importorskip("zygotepy")
    v = np.random.default_rng(0).standard_normal(_X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", getattr(zp, "ZygoteWarning", Warning))

        def grad(y: Any) -> Any:
            return zp.gradient(f, y)[0]

        def directional(y: Any) -> Any:
            return np.sum(grad(y) * v)

        hv = zp.gradient(directional, _X)[0]
        h = 1e-5
        fd = (grad(_X + h * v) - grad(_X - h * v)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-6, atol=1e-6 * (1 + np.max(np.abs(fd))))
