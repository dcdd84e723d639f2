"""Rules for constructing ``numpy.polynomial``'s series classes (``Polynomial``, ``Chebyshev``,
``Legendre``, ``Hermite``, ``HermiteE``, ``Laguerre``) from traced coefficients (registered when
``numpy.polynomial`` is imported, see :mod:`rulescore.rules._optional`).

The constructor only stores its arguments (as arrays): the cotangent of ``coef``, ``domain`` and
``window`` is the output's tangent's field of the same name. Evaluating a series, adding and
multiplying series are then traced through NumPy's own code.

Example:
    >>> import numpy as np, rulescore as rc
    >>> from numpy.polynomial import Polynomial
    >>> p, back = rc.rrule(Polynomial, np.array([1.0, 2.0]))
    >>> back(rc.Tangent[Polynomial](coef=np.array([0.5, -1.0])))
    (NoTangent(), array([ 0.5, -1. ]))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.polynomial as npp

from rulescore import RulePair
from rulescore._linear import dense_tangent
from rulescore._projection import project
from rulescore._tangent import Tangent, tangent_type
from rulescore._zeros import NoTangent, ZeroTangent

#: The series classes, all constructed as ``C(coef, domain=None, window=None, symbol="x")``.
SERIES = (npp.Polynomial, npp.Chebyshev, npp.Legendre, npp.Hermite, npp.HermiteE, npp.Laguerre)
_STORED = ("coef", "domain", "window")


def _field(ybar: Any, name: str) -> Any:
    return getattr(ybar, name) if isinstance(ybar, Tangent) else ZeroTangent()


def _series_rules(cls: Any) -> tuple[Any, Any]:
    def series_rrule(*args: Any, **kwargs: Any) -> Any:
        y = cls(*args, **kwargs)

        def series_pullback(ybar: Any) -> Any:
            cotangents = [project(v, _field(ybar, name)) if name in _STORED and v is not None else NoTangent()
                          for v, name in zip(args, (*_STORED, "symbol"), strict=False)]
            return NoTangent(), *cotangents

        return y, series_pullback

    def series_frule(tangents: Any, *args: Any, **kwargs: Any) -> Any:
        y = cls(*args, **kwargs)
        fields = {name: np.asarray(dense_tangent(v, t), dtype=np.result_type(getattr(y, name), float))
                  for v, t, name in zip(args, tangents[1:], _STORED, strict=False) if v is not None}
        return y, tangent_type(cls)(**fields)

    name = cls.__name__.lower()
    series_rrule.__name__ = series_rrule.__qualname__ = f"{name}_rrule"
    series_frule.__name__ = series_frule.__qualname__ = f"{name}_frule"
    return series_rrule, series_frule


RULES: tuple[RulePair, ...] = tuple(RulePair(cls, *_series_rules(cls)) for cls in SERIES)
