"""Rules for ``scipy.signal`` (registered when SciPy imports ``scipy.signal``, see
:mod:`rulescore.rules._optional`): ``convolve``, ``correlate`` and ``fftconvolve`` of real
N-dimensional arrays in every mode (``full``, ``same``, ``valid``), and ``convolve2d`` and
``correlate2d`` of real matrices with the zero boundary (``boundary="fill"``, ``fillvalue=0``,
their defaults; other boundaries raise ``NotImplementedError`` naming the fix).

Every mode is a window of the full result (SciPy centres ``same`` and ``valid`` in it;
``correlate2d`` rounds the centre of ``same`` up), so the pullback embeds the output cotangent in
a zero full-size array and correlates it with the other input in ``valid`` mode. ``fftconvolve``
with ``axes`` (a batched convolution) and complex inputs raise ``TypeError`` rather than give a
wrong gradient.

Example:
    >>> import numpy as np, rulescore as rc, scipy.signal as ss
    >>> y, back = rc.rrule(ss.convolve, np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0]))
    >>> back(np.ones(4))[1:3]
    (array([0., 0., 0.]), array([6., 6.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.signal as ss

from rulescore import RulePair
from rulescore._checks import callable_name
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._zeros import NoTangent


def _check(f: Any, a: Any, b: Any, options: dict[str, Any]) -> str:
    """The mode of the call, after refusing what these rules do not cover."""
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        raise TypeError(f"the rule for {callable_name(f)} handles real arrays only")
    if options.get("boundary", "fill") != "fill" or options.get("fillvalue", 0) != 0:
        raise NotImplementedError(
            f"the rule for {callable_name(f)} covers boundary='fill' with fillvalue=0: pad the input "
            "first (np.pad with mode='wrap' or 'symmetric', or constant_values=fillvalue) and use "
            "mode='valid'")
    if options.get("axes") is not None:
        raise TypeError(f"the rule for {callable_name(f)} does not take axes=: "
                        "convolve the whole arrays, or differentiate a loop over the batch")
    return str(options.get("mode", "full"))


def _options(args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    options = dict(zip(names, args, strict=False))
    options.update(kwargs)
    return options


def _embed(ybar: Any, a: Any, b: Any, round_up: bool = False) -> Any:
    """``ybar`` placed where SciPy's output window sits in the full convolution (its centre
    rounded up for ``correlate2d``)."""
    full_shape = tuple(n + m - 1 for n, m in zip(np.shape(a), np.shape(b), strict=True))
    full = np.zeros(full_shape, dtype=np.result_type(ybar, float))
    window = tuple(slice((f - n + round_up) // 2, (f - n + round_up) // 2 + n)
                   for f, n in zip(full_shape, np.shape(ybar), strict=True))
    full[window] = ybar
    return full


def _flip(x: Any) -> Any:
    return np.flip(x, axis=tuple(range(np.ndim(x)))) if np.ndim(x) else x


def _pullback_cotangents(g: Any, a: Any, b: Any, correlation: bool) -> tuple[Any, Any]:
    """Cotangents of ``a`` and ``b`` given ``g``, the cotangent of the full result.

    In the full convolution ``a * b`` the cotangent of ``a`` is ``g`` correlated with ``b``;
    ``correlate(a, b)`` is the convolution of ``a`` with ``b`` flipped."""
    kernel = _flip(b) if correlation else b
    abar = ss.correlate(g, kernel, mode="valid")
    kernel_bar = ss.correlate(g, a, mode="valid")
    return project(a, abar), project(b, _flip(kernel_bar) if correlation else kernel_bar)


def _rrule(f: Any, names: tuple[str, ...], in1: Any, in2: Any, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Any:
    """The rrule of a convolution ``f`` (``names``: its parameters after the two inputs)."""
    _check(f, in1, in2, _options(args, kwargs, names))
    y = f(in1, in2, *args, **kwargs)

    def convolution_pullback(ybar: Any) -> Any:
        correlation = f is ss.correlate or f is ss.correlate2d
        cotangents = _pullback_cotangents(_embed(ybar, in1, in2, f is ss.correlate2d), in1, in2, correlation)
        return (NoTangent(), *cotangents, *(NoTangent() for _ in args))

    return y, convolution_pullback


def _frule(f: Any, names: tuple[str, ...], tangents: Any, in1: Any, in2: Any, args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> Any:
    """The frule of a convolution ``f``: it is bilinear."""
    _check(f, in1, in2, _options(args, kwargs, names))
    y = f(in1, in2, *args, **kwargs)
    d1, d2 = dense_tangent(in1, tangents[1]), dense_tangent(in2, tangents[2])
    return y, project(y, f(d1, in2, *args, **kwargs) + f(in1, d2, *args, **kwargs))


_CONVOLVE_NAMES = ("mode", "method")
_FFTCONVOLVE_NAMES = ("mode", "axes")
_CONVOLVE2D_NAMES = ("mode", "boundary", "fillvalue")


def convolve_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _rrule(ss.convolve, _CONVOLVE_NAMES, in1, in2, args, kwargs)


def convolve_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _frule(ss.convolve, _CONVOLVE_NAMES, tangents, in1, in2, args, kwargs)


def correlate_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _rrule(ss.correlate, _CONVOLVE_NAMES, in1, in2, args, kwargs)


def correlate_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _frule(ss.correlate, _CONVOLVE_NAMES, tangents, in1, in2, args, kwargs)


def fftconvolve_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _rrule(ss.fftconvolve, _FFTCONVOLVE_NAMES, in1, in2, args, kwargs)


def fftconvolve_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _frule(ss.fftconvolve, _FFTCONVOLVE_NAMES, tangents, in1, in2, args, kwargs)


def convolve2d_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _rrule(ss.convolve2d, _CONVOLVE2D_NAMES, in1, in2, args, kwargs)


def convolve2d_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _frule(ss.convolve2d, _CONVOLVE2D_NAMES, tangents, in1, in2, args, kwargs)


def correlate2d_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _rrule(ss.correlate2d, _CONVOLVE2D_NAMES, in1, in2, args, kwargs)


def correlate2d_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    return _frule(ss.correlate2d, _CONVOLVE2D_NAMES, tangents, in1, in2, args, kwargs)


RULES: tuple[RulePair, ...] = (
    RulePair(ss.convolve, convolve_rrule, convolve_frule),
    RulePair(ss.correlate, correlate_rrule, correlate_frule),
    RulePair(ss.fftconvolve, fftconvolve_rrule, fftconvolve_frule),
    RulePair(ss.convolve2d, convolve2d_rrule, convolve2d_frule),
    RulePair(ss.correlate2d, correlate2d_rrule, correlate2d_frule),
)
