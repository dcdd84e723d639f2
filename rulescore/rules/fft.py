"""Rules for ``numpy.fft``: an rrule and an frule for every transform, in two tables.

Every transform is linear, so the frule applies the transform itself to the input tangent and
the pullback applies the adjoint:

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

from rulescore._projection import project
from rulescore._registry import frule, rrule
from rulescore._thunks import unthunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent
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


def _ct(t: Any) -> Any:
    t = unthunk(t)
    if t is None or isinstance(t, AbstractZero):
        return None
    return t


def _cts(nargs: int, ct: Any) -> tuple[Any, ...]:
    """``(NoTangent(), ct, NoTangent(), ...)`` for ``nargs`` positional arguments."""
    return (NoTangent(), ct, *(NoTangent() for _ in range(nargs - 1)))






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
# the generic rules: each transform is a (real-)linear map L; the frule is L, the pullback L^*
# --------------------------------------------------------------------------------------------


def _linear_rules(f: Any, adjoint: Any) -> tuple[Any, Any]:
    """rrule and frule for a linear ``f``; ``adjoint(x, p, ybar)`` is the pullback's value."""
    name = f.__name__

    def linear_rrule(*args: Any, **kwargs: Any) -> Any:
        p = _bind(f, args, kwargs)
        x = p[next(iter(p))]
        x_ = _arr(x)
        y = f(*args, **kwargs)

        def pullback(ybar: Any) -> Any:
            ybar = _ct(ybar)
            if ybar is None:
                return _cts(len(args), ZeroTangent())
            return _cts(len(args), project(x, adjoint(x_, p, _arr(ybar))))

        pullback.__name__ = pullback.__qualname__ = f"{name}_pullback"
        return y, pullback

    def linear_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        y = f(*args, **kwargs)
        xdot = _ct(tangents[1])
        if xdot is None:
            return y, ZeroTangent()
        p = _bind(f, args, kwargs)
        first = next(iter(p))
        p[first] = xdot
        p.pop("out", None)
        return y, project(y, f(**p))

    linear_rrule.__name__ = linear_rrule.__qualname__ = f"{name}_rrule"
    linear_frule.__name__ = linear_frule.__qualname__ = f"{name}_frule"
    return linear_rrule, linear_frule


def _c2c_adjoint(inverse: Any, default_axes: Any = None, one_d: bool = False) -> Any:
    """Adjoint of fft/ifft/fftn/ifftn...: the other direction with the dual normalisation."""

    def adjoint(x: Any, p: dict[str, Any], ybar: Any) -> Any:
        if one_d:
            ax = [int(p["axis"]) % x.ndim]
            sizes = [x.shape[ax[0]] if p["n"] is None else int(p["n"])]
        else:
            ax, sizes = _axes_sizes(x, p["s"], p["axes"], default_axes)
        g = inverse(ybar, s=sizes, axes=ax, norm=_dual(p["norm"]))
        return _fit_all(g, ax, x.shape)

    return adjoint


def _r2c_adjoint(default_axes: Any = None, one_d: bool = False, conj_out: bool = False,
                 swap_norm: bool = False) -> Any:
    """Adjoint of rfft/rfftn/ihfft: inverse real transform of the half-weighted cotangent."""

    def adjoint(x: Any, p: dict[str, Any], ybar: Any) -> Any:
        if one_d:
            ax = [int(p["axis"]) % x.ndim]
            sizes = [x.shape[ax[0]] if p["n"] is None else int(p["n"])]
        else:
            ax, sizes = _axes_sizes(x, p["s"], p["axes"], default_axes)
        norm = _dual(p["norm"]) if swap_norm else p["norm"]
        if conj_out:
            ybar = np.conj(ybar)
        w = _bin_weights(sizes[-1], ybar.shape[ax[-1]], ybar.ndim, ax[-1], 0.5, _real_dtype(ybar))
        g = FFT.irfftn(ybar * w, s=sizes, axes=ax, norm=_dual(norm))
        return _fit_all(g, ax, x.shape)

    return adjoint


def _c2r_adjoint(default_axes: Any = None, one_d: bool = False, conj_in: bool = False,
                 swap_norm: bool = False) -> Any:
    """Adjoint of irfft/irfftn/hfft: forward real transform of the cotangent, inner bins doubled."""

    def adjoint(x: Any, p: dict[str, Any], ybar: Any) -> Any:
        if one_d:
            ax = [int(p["axis"]) % x.ndim]
            sizes = [2 * (x.shape[ax[0]] - 1) if p["n"] is None else int(p["n"])]
        else:
            ax, sizes = _irfft_sizes(x, p["s"], p["axes"], default_axes)
        norm = _dual(p["norm"]) if swap_norm else p["norm"]
        if np.dtype(ybar.dtype).kind == "c":
            ybar = np.real(ybar)
        g = FFT.rfftn(ybar, s=sizes, axes=ax, norm=_dual(norm))
        g = g * _bin_weights(sizes[-1], g.shape[ax[-1]], g.ndim, ax[-1], 2.0, _real_dtype(g))
        if conj_in:
            g = np.conj(g)
        return _fit_all(g, ax, x.shape)

    return adjoint


def _shift_adjoint(other: Any) -> Any:
    def adjoint(x: Any, p: dict[str, Any], ybar: Any) -> Any:
        return other(ybar, axes=p["axes"])

    return adjoint


# --------------------------------------------------------------------------------------------
# fftfreq / rfftfreq: differentiable in the sample spacing d
# --------------------------------------------------------------------------------------------


def _freq_rules(f: Any) -> tuple[Any, Any]:
    name = f.__name__

    def freq_rrule(*args: Any, **kwargs: Any) -> Any:
        p = _bind(f, args, kwargs)
        y = f(*args, **kwargs)
        d = p["d"]

        def freq_pullback(ybar: Any) -> Any:
            ybar = _ct(ybar)
            if ybar is None or len(args) < 2:
                return (NoTangent(), NoTangent(), *(ZeroTangent() for _ in args[1:2]))
            return NoTangent(), NoTangent(), project(d, -np.sum(np.real(ybar) * y) / d)

        freq_pullback.__name__ = freq_pullback.__qualname__ = f"{name}_pullback"
        return y, freq_pullback

    def freq_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        p = _bind(f, args, kwargs)
        y = f(*args, **kwargs)
        ddot = _ct(tangents[2]) if len(tangents) > 2 else None
        if ddot is None:
            return y, ZeroTangent()
        return y, project(y, -(y / p["d"]) * ddot)

    freq_rrule.__name__ = freq_rrule.__qualname__ = f"{name}_rrule"
    freq_frule.__name__ = freq_frule.__qualname__ = f"{name}_frule"
    return freq_rrule, freq_frule


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------

#: ``{transform: adjoint(x, bound_arguments, ybar)}``; the rules are built from it.
ADJOINTS: dict[Any, Any] = {
    np.fft.fft: _c2c_adjoint(FFT.ifftn, one_d=True),
    np.fft.ifft: _c2c_adjoint(FFT.fftn, one_d=True),
    np.fft.fft2: _c2c_adjoint(FFT.ifftn, default_axes=(-2, -1)),
    np.fft.ifft2: _c2c_adjoint(FFT.fftn, default_axes=(-2, -1)),
    np.fft.fftn: _c2c_adjoint(FFT.ifftn),
    np.fft.ifftn: _c2c_adjoint(FFT.fftn),
    np.fft.rfft: _r2c_adjoint(one_d=True),
    np.fft.rfft2: _r2c_adjoint(default_axes=(-2, -1)),
    np.fft.rfftn: _r2c_adjoint(),
    np.fft.irfft: _c2r_adjoint(one_d=True),
    np.fft.irfft2: _c2r_adjoint(default_axes=(-2, -1)),
    np.fft.irfftn: _c2r_adjoint(),
    np.fft.hfft: _c2r_adjoint(one_d=True, conj_in=True, swap_norm=True),
    np.fft.ihfft: _r2c_adjoint(one_d=True, conj_out=True, swap_norm=True),
    np.fft.fftshift: _shift_adjoint(FFT.ifftshift),
    np.fft.ifftshift: _shift_adjoint(FFT.fftshift),
}

RRULES: dict[Any, Any] = {}
FRULES: dict[Any, Any] = {}
for _f, _adjoint in ADJOINTS.items():
    RRULES[_f], FRULES[_f] = _linear_rules(_f, _adjoint)
for _f in (np.fft.fftfreq, np.fft.rfftfreq):
    RRULES[_f], FRULES[_f] = _freq_rules(_f)

for _f, _impl in RRULES.items():
    rrule.register(_f)(_impl)
    frule.register(_f)(FRULES[_f])
