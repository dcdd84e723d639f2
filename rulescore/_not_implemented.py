"""``rc.not_implemented``: a derivative the rule author chose not to implement (ChainRulesCore's
``@not_implemented``), for one argument of a rule whose other derivatives are there.

The pullback (or frule) returns ``rc.not_implemented("why")`` in that argument's place. Any use
of it (adding it to another cotangent, scaling it, converting it to an array) raises
``NotImplementedError`` naming the rule's location and the reason, never a silent zero; an
argument held constant never uses it, so the rule serves the others. ``rulescore.testing``
skips the argument in its checks.
"""

from __future__ import annotations

import inspect
from typing import Any, NoReturn

from rulescore._abstract_tangent import AbstractTangent


class NotImplementedTangent(AbstractTangent):
    """The tangent of an argument whose derivative is not implemented; see :func:`not_implemented`.

    Example:
        >>> import rulescore as rc
        >>> t = rc.not_implemented("the derivative in the order nu")
        >>> rc.is_zero(t), isinstance(t, rc.NotImplementedTangent)
        (False, True)
        >>> t + 1.0  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        NotImplementedError: a derivative that is not implemented was used: the derivative in the order...
    """

    __slots__ = ("info", "where")
    __array_ufunc__ = None  # NumPy defers `array + t` to t's reflected operator, which raises

    def __init__(self, info: str = "", where: str = "") -> None:
        self.info = info
        self.where = where

    def refuse(self, *_: Any, **__: Any) -> NoReturn:
        """Raise the ``NotImplementedError`` every use of this tangent raises."""
        raise NotImplementedError(
            f"a derivative that is not implemented was used: {self.info or 'no reason given'} "
            f"({self.where}). "
            "Differentiate with respect to the other arguments only (hold this one constant), or implement "
            "the derivative in the rule")

    def __array__(self, *_: Any, **__: Any) -> NoReturn:
        self.refuse()

    def __float__(self) -> float:
        self.refuse()

    def __complex__(self) -> complex:
        self.refuse()

    def __repr__(self) -> str:
        return f"NotImplementedTangent({self.info!r}, {self.where!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NotImplementedTangent):
            return False
        return (other.info, other.where) == (self.info, self.where)

    def __hash__(self) -> int:
        return hash((self.info, self.where))


def not_implemented(info: str = "") -> NotImplementedTangent:
    """The tangent of an argument whose derivative the rule does not implement, with the reason;
    it records where the rule calls it. Using it raises ``NotImplementedError``.

    Example:
        >>> import numpy as np, rulescore as rc, scipy.special as sp
        >>> @rc.rrule.register(sp.jv)
        ... def jv_rrule(nu, x):
        ...     def jv_pullback(ybar):
        ...         dx = ybar * (sp.jv(nu - 1, x) - sp.jv(nu + 1, x)) / 2
        ...         return rc.NoTangent(), rc.not_implemented("d/dnu of the Bessel function"), dx
        ...     return sp.jv(nu, x), jv_pullback
        >>> _, back = rc.rrule(sp.jv, 1.5, 2.0)
        >>> back(1.0)[1]  # doctest: +ELLIPSIS
        NotImplementedTangent('d/dnu of the Bessel function', '... in jv_pullback')
    """
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    where = f"{caller.f_code.co_filename}:{caller.f_lineno} in {caller.f_code.co_name}" if caller else ""
    return NotImplementedTangent(info, where)
