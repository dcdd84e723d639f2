"""Rules for ``scipy.signal`` (registered when SciPy imports ``scipy.signal``, see
:mod:`rulescore.rules._optional`): ``convolve``, ``correlate`` and ``fftconvolve`` of real
N-dimensional arrays in every mode (``full``, ``same``, ``valid``).

Every mode is a window of the full result (SciPy centres ``same`` and ``valid`` in it), so the
pullback embeds the output cotangent in a zero full-size array and correlates it with the other
input in ``valid`` mode. ``fftconvolve`` with ``axes`` (a batched convolution) and complex
inputs raise ``TypeError`` rather than give a wrong gradient.

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

from rulescore._checks import callable_name
from rulescore._projection import project
from rulescore._rule_pair import RulePair
from rulescore._zeros import AbstractZero, NoTangent


def _check(f: Any, a: Any, b: Any, options: dict[str, Any]) -> str:
    """The mode of the call, after refusing what these rules do not cover."""
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        raise TypeError(f"the rule for {callable_name(f)} handles real arrays only")
    if options.get("axes") is not None:
        raise TypeError(f"the rule for {callable_name(f)} does not take axes=: "
                        "convolve the whole arrays, or differentiate a loop over the batch")
    return str(options.get("mode", "full"))


def _options(args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    options = dict(zip(names, args, strict=False))
    options.update(kwargs)
    return options


def _embed(ybar: Any, a: Any, b: Any) -> Any:
    """``ybar`` placed where SciPy's output window sits in the full convolution."""
    full_shape = tuple(n + m - 1 for n, m in zip(np.shape(a), np.shape(b), strict=True))
    full = np.zeros(full_shape, dtype=np.result_type(ybar, float))
    window = tuple(slice((f - n) // 2, (f - n) // 2 + n)
                   for f, n in zip(full_shape, np.shape(ybar), strict=True))
    full[window] = ybar
    return full


def _flip(x: Any) -> Any:
    return np.flip(x, axis=tuple(range(np.ndim(x)))) if np.ndim(x) else x


def _convolution_cotangents(g: Any, a: Any, b: Any) -> tuple[Any, Any]:
    """Cotangents of ``a`` and ``b`` in the full convolution ``a * b`` with cotangent ``g``."""
    return (project(a, ss.correlate(g, b, mode="valid")), project(b, ss.correlate(g, a, mode="valid")))


def _options_cotangents(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(NoTangent() for _ in args)


def _tangent(t: Any, x: Any) -> Any:
    return np.zeros(np.shape(x)) if isinstance(t, AbstractZero) else t


_CONVOLVE_NAMES = ("mode", "method")
_FFTCONVOLVE_NAMES = ("mode", "axes")


def convolve_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    _check(ss.convolve, in1, in2, _options(args, kwargs, _CONVOLVE_NAMES))
    y = ss.convolve(in1, in2, *args, **kwargs)

    def convolve_pullback(ybar: Any) -> Any:
        return (NoTangent(), *_convolution_cotangents(_embed(ybar, in1, in2), in1, in2),
                *_options_cotangents(args))

    return y, convolve_pullback


def convolve_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    _check(ss.convolve, in1, in2, _options(args, kwargs, _CONVOLVE_NAMES))
    y = ss.convolve(in1, in2, *args, **kwargs)
    d1, d2 = _tangent(tangents[1], in1), _tangent(tangents[2], in2)
    return y, project(y, ss.convolve(d1, in2, *args, **kwargs) + ss.convolve(in1, d2, *args, **kwargs))


def fftconvolve_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    _check(ss.fftconvolve, in1, in2, _options(args, kwargs, _FFTCONVOLVE_NAMES))
    y = ss.fftconvolve(in1, in2, *args, **kwargs)

    def fftconvolve_pullback(ybar: Any) -> Any:
        return (NoTangent(), *_convolution_cotangents(_embed(ybar, in1, in2), in1, in2),
                *_options_cotangents(args))

    return y, fftconvolve_pullback


def fftconvolve_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    _check(ss.fftconvolve, in1, in2, _options(args, kwargs, _FFTCONVOLVE_NAMES))
    y = ss.fftconvolve(in1, in2, *args, **kwargs)
    d1, d2 = _tangent(tangents[1], in1), _tangent(tangents[2], in2)
    return y, project(y, ss.fftconvolve(d1, in2, *args, **kwargs) + ss.fftconvolve(in1, d2, *args, **kwargs))


def correlate_rrule(in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    # correlate(a, b) is the convolution of a with b flipped
    _check(ss.correlate, in1, in2, _options(args, kwargs, _CONVOLVE_NAMES))
    y = ss.correlate(in1, in2, *args, **kwargs)

    def correlate_pullback(ybar: Any) -> Any:
        abar, flipped_bar = _convolution_cotangents(_embed(ybar, in1, in2), in1, _flip(in2))
        return NoTangent(), abar, _flip(flipped_bar), *_options_cotangents(args)

    return y, correlate_pullback


def correlate_frule(tangents: Any, in1: Any, in2: Any, *args: Any, **kwargs: Any) -> Any:
    _check(ss.correlate, in1, in2, _options(args, kwargs, _CONVOLVE_NAMES))
    y = ss.correlate(in1, in2, *args, **kwargs)
    d1, d2 = _tangent(tangents[1], in1), _tangent(tangents[2], in2)
    return y, project(y, ss.correlate(d1, in2, *args, **kwargs) + ss.correlate(in1, d2, *args, **kwargs))


RULES: tuple[RulePair, ...] = (
    RulePair(ss.convolve, convolve_rrule, convolve_frule),
    RulePair(ss.correlate, correlate_rrule, correlate_frule),
    RulePair(ss.fftconvolve, fftconvolve_rrule, fftconvolve_frule),
)
