"""Rules for ``numpy.fft``: every transform is linear, so each is declared once with its
transpose (``RulePair(f, transpose=...)``): the frule applies the transform itself to the input
tangent and the pullback applies the adjoint:

- complex transforms (``fft``, ``ifft``, ``fft2``, ``ifft2``, ``fftn``, ``ifftn``): the adjoint
  of a transform with normalisation ``norm`` is the inverse transform with the *dual*
  normalisation (``"backward"`` <-> ``"forward"``, ``"ortho"`` <-> ``"ortho"``);
- ``rfft``/``rfftn``/``rfft2`` keep only the non-negative frequencies, so the adjoint is the
  inverse real transform of the cotangent with its non-DC, non-Nyquist bins *halved* (the
  inverse real transform counts each of them twice);
- ``irfft``/``irfftn``/``irfft2`` read only the non-negative frequencies of a Hermitian
  spectrum (and only the real part of the DC and Nyquist bins), so the adjoint is the forward
  real transform of the cotangent with those bins *doubled*;
- ``hfft``/``ihfft`` are ``irfft``/``rfft`` of conjugates with swapped normalisation;
- the size arguments (``n=``, ``s=``) crop or zero-pad the input: the adjoint zero-pads or
  crops the cotangent back to the input's shape;
- ``fftshift``/``ifftshift`` are permutations (each is the other's adjoint), and ``fftfreq`` /
  ``rfftfreq`` depend on the sample spacing ``d`` as ``1/d``.

Real inputs get real cotangents (the projection keeps the real part), and the pullbacks call
only ``numpy.fft`` functions, operators, slicing and ``np.concatenate``, so they differentiate
again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rulescore import RulePair
from rulescore._projection import project
from rulescore._zeros import NoTangent
from rulescore.rules._common import bind_arguments as _bind

FFT: Any = np.fft

_DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def _arr(x: Any) -> Any:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return x
    return np.asarray(x)


def _dual(norm: Any) -> str:
    if norm not in _DUAL:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return _DUAL[norm]


def _fit(x: Any, axis: int, size: int) -> Any:
    """Crop or zero-pad ``x`` along ``axis`` to ``size`` (the adjoint of the transforms' n=)."""
    cur = x.shape[axis]
    if cur == size:
        return x
    if cur > size:
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, size)
        return x[tuple(index)]
    pad_shape = list(x.shape)
    pad_shape[axis] = size - cur
    return np.concatenate([x, np.zeros(pad_shape, dtype=x.dtype)], axis=axis)


def _fit_all(x: Any, axes: list[int], shape: tuple[int, ...]) -> Any:
    for ax in axes:
        x = _fit(x, ax, shape[ax])
    return x


def _bin_weights(n: int, length: int, ndim: int, axis: int, inner: float, dtype: Any) -> Any:
    """Weights along ``axis`` for a half spectrum of ``length`` bins of an ``n``-point signal:
    1 for the DC bin (and the Nyquist bin when ``n`` is even), ``inner`` for the others."""
    w = np.full(length, inner, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0 and length > n // 2:
        w[n // 2] = 1.0
    shape = [1] * ndim
    shape[axis] = length
    return w.reshape(shape)


def _real_dtype(x: Any) -> Any:
    dt = np.dtype(x.dtype)
    return np.finfo(dt).dtype if dt.kind == "c" else (dt if dt.kind == "f" else np.dtype(np.float64))


def _axes_sizes(x: Any, s: Any, axes: Any, default_axes: Any) -> tuple[list[int], list[int]]:
    """Normalised transform axes and sizes of an n-dimensional transform (NumPy's rules)."""
    if axes is None:
        if default_axes is not None:
            axes = default_axes
        elif s is None:
            axes = range(x.ndim)
        else:
            axes = range(-len(s), 0)
    ax = [int(a) % x.ndim for a in axes]
    sizes = [x.shape[a] for a in ax] if s is None else [int(n) for n in s]
    return ax, sizes


def _irfft_sizes(x: Any, s: Any, axes: Any, default_axes: Any) -> tuple[list[int], list[int]]:
    if axes is None and default_axes is None and s is None:
        axes = range(x.ndim)
    ax, sizes = _axes_sizes(x, s, axes, default_axes)
    if s is None:
        sizes[-1] = 2 * (x.shape[ax[-1]] - 1)
    return ax, sizes


# --------------------------------------------------------------------------------------------
# the transposes: ``transpose(ybar, x, *args, **kwargs)`` of each transform
# --------------------------------------------------------------------------------------------


def _call(f: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The input as an array and the call's arguments by name."""
    return _arr(x), _bind(f, (x, *args), kwargs)


def _one_axis(x: Any, p: dict[str, Any], c2r: bool = False) -> tuple[list[int], list[int]]:
    """Axis and size of a one-dimensional transform (``n=`` or the input's length)."""
    ax = int(p["axis"]) % x.ndim
    length = 2 * (x.shape[ax] - 1) if c2r else x.shape[ax]
    return [ax], [length if p["n"] is None else int(p["n"])]


def _c2c(inverse: Any, x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    """Adjoint of a complex transform: the other direction with the dual normalisation."""
    return _fit_all(inverse(_arr(ybar), s=sizes, axes=ax, norm=_dual(norm)), ax, x.shape)


def _r2c(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    """Adjoint of rfft/rfftn: inverse real transform of the half-weighted cotangent."""
    ybar = _arr(ybar)
    w = _bin_weights(sizes[-1], ybar.shape[ax[-1]], ybar.ndim, ax[-1], 0.5, _real_dtype(ybar))
    return _fit_all(FFT.irfftn(ybar * w, s=sizes, axes=ax, norm=_dual(norm)), ax, x.shape)


def _c2r(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    """Adjoint of irfft/irfftn: forward real transform of the cotangent, inner bins doubled."""
    ybar = _arr(ybar)
    if np.dtype(ybar.dtype).kind == "c":
        ybar = np.real(ybar)
    g = FFT.rfftn(ybar, s=sizes, axes=ax, norm=_dual(norm))
    g = g * _bin_weights(sizes[-1], g.shape[ax[-1]], g.ndim, ax[-1], 2.0, _real_dtype(g))
    return _fit_all(g, ax, x.shape)


def _axes_2d(x: Any, p: dict[str, Any]) -> tuple[list[int], list[int]]:
    return _axes_sizes(x, p["s"], p["axes"], (-2, -1))


def _axes_nd(x: Any, p: dict[str, Any]) -> tuple[list[int], list[int]]:
    return _axes_sizes(x, p["s"], p["axes"], None)


def _irfft_2d(x: Any, p: dict[str, Any]) -> tuple[list[int], list[int]]:
    return _irfft_sizes(x, p["s"], p["axes"], (-2, -1))


def _irfft_nd(x: Any, p: dict[str, Any]) -> tuple[list[int], list[int]]:
    return _irfft_sizes(x, p["s"], p["axes"], None)


def _one_axis_c2r(x: Any, p: dict[str, Any]) -> tuple[list[int], list[int]]:
    return _one_axis(x, p, c2r=True)


def _to_time(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    return _c2c(FFT.ifftn, x, ax, sizes, norm, ybar)


def _to_frequency(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    return _c2c(FFT.fftn, x, ax, sizes, norm, ybar)


def _hfft_adjoint(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    """``hfft`` is ``irfft`` of the conjugate with the dual normalisation."""
    return np.conj(_c2r(x, ax, sizes, _dual(norm), ybar))


def _ihfft_adjoint(x: Any, ax: list[int], sizes: list[int], norm: Any, ybar: Any) -> Any:
    """``ihfft`` is the conjugate of ``rfft`` with the dual normalisation."""
    return _r2c(x, ax, sizes, _dual(norm), np.conj(ybar))


#: Each transform's adjoint (of ``(x, axes, sizes, norm, ybar)``) and how its axes and sizes
#: are read from the call (one axis and ``n=``, or ``s=``/``axes=`` with 2-D or n-D defaults).
_TRANSFORMS: dict[Any, tuple[Any, Any]] = {
    FFT.fft: (_to_time, _one_axis),
    FFT.ifft: (_to_frequency, _one_axis),
    FFT.fft2: (_to_time, _axes_2d),
    FFT.ifft2: (_to_frequency, _axes_2d),
    FFT.fftn: (_to_time, _axes_nd),
    FFT.ifftn: (_to_frequency, _axes_nd),
    FFT.rfft: (_r2c, _one_axis),
    FFT.rfft2: (_r2c, _axes_2d),
    FFT.rfftn: (_r2c, _axes_nd),
    FFT.irfft: (_c2r, _one_axis_c2r),
    FFT.irfft2: (_c2r, _irfft_2d),
    FFT.irfftn: (_c2r, _irfft_nd),
    FFT.hfft: (_hfft_adjoint, _one_axis_c2r),
    FFT.ihfft: (_ihfft_adjoint, _one_axis),
}


def transform_transpose(f: Any) -> Any:
    """The transpose of the Fourier transform ``f`` (``np.fft.fft``, ...), for
    ``RulePair(f, transpose=...)``: its adjoint at the call's axes, sizes and normalisation.

    Example:
        >>> import numpy as np
        >>> transform_transpose(np.fft.fft)(np.ones(2, dtype=complex), np.zeros(2))
        array([2.+0.j, 0.+0.j])
    """
    adjoint, geometry = _TRANSFORMS[f]

    def fourier_transpose(ybar: Any, a: Any, *args: Any, **kwargs: Any) -> Any:
        x, p = _call(f, a, args, kwargs)
        return adjoint(x, *geometry(x, p), p["norm"], ybar)

    fourier_transpose.__name__ = fourier_transpose.__qualname__ = f"{f.__name__}_transpose"
    return fourier_transpose


def fftshift_transpose(ybar: Any, x: Any, axes: Any = None) -> Any:
    return FFT.ifftshift(ybar, axes=axes)


def ifftshift_transpose(ybar: Any, x: Any, axes: Any = None) -> Any:
    return FFT.fftshift(ybar, axes=axes)


# --------------------------------------------------------------------------------------------
# fftfreq / rfftfreq: differentiable in the sample spacing d (y = k / (n d))
# --------------------------------------------------------------------------------------------


def freq_rules(f: Any) -> tuple[Any, Any]:
    """The rules of ``np.fft.fftfreq`` or ``rfftfreq``: ``y = k / (n d)``, differentiable in
    the sample spacing ``d`` (given positionally: by keyword it has no tangent slot).

    Example:
        >>> import numpy as np
        >>> reverse, forward = freq_rules(np.fft.fftfreq)
        >>> reverse(4, 0.5)[1](np.ones(4))[2], forward((None, None, 1.0), 4, 0.5)[1]
        (2.0, array([-0., -1.,  2.,  1.]))
    """

    def freq_rrule(*args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)

        def freq_pullback(ybar: Any) -> Any:
            if len(args) < 2:  # d given by keyword (or not at all): no positional slot for it
                return NoTangent(), NoTangent()
            d = _bind(f, args, kwargs)["d"]
            return NoTangent(), NoTangent(), project(d, -np.sum(np.real(ybar) * y) / d)

        freq_pullback.__name__ = freq_pullback.__qualname__ = f"{f.__name__}_pullback"
        return y, freq_pullback

    def freq_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)
        return y, project(y, -(y / _bind(f, args, kwargs)["d"]) * tangents[2])

    freq_rrule.__name__ = freq_rrule.__qualname__ = f"{f.__name__}_rrule"
    freq_frule.__name__ = freq_frule.__qualname__ = f"{f.__name__}_frule"
    return freq_rrule, freq_frule


RULES: tuple[RulePair, ...] = (
    *(RulePair(f, transpose=transform_transpose(f)) for f in _TRANSFORMS),
    RulePair(np.fft.fftshift, transpose=fftshift_transpose),
    RulePair(np.fft.ifftshift, transpose=ifftshift_transpose),
    # differentiable in the sample spacing d only
    RulePair(np.fft.fftfreq, *freq_rules(np.fft.fftfreq), wrt=(1,)),
    RulePair(np.fft.rfftfreq, *freq_rules(np.fft.rfftfreq), wrt=(1,)),
)
