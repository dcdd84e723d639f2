"""Lazy tangents: ``Thunk`` (computed once, on first use) and ``InplaceableThunk``.

Unlike Julia's ChainRulesCore, a ``Thunk`` here memoises its value, so unthunking it twice
costs once. Arithmetic on a thunk unthunks it first (times a zero is zero, unevaluated); its
operators are installed by :mod:`rulescore._arithmetic`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rulescore._abstract_tangent import AbstractTangent

_UNSET: Any = object()


class Thunk(AbstractTangent):
    """A tangent computed only when needed: ``Thunk(lambda: expensive())``.

    Example:
        >>> import rulescore as rc
        >>> t = rc.Thunk(lambda: 2.0 * 3.0)
        >>> rc.unthunk(t), t + 1.0
        (6.0, 7.0)
    """

    __slots__ = ("_fn", "_value")
    __array_ufunc__ = None

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._value = _UNSET

    def unthunk(self) -> Any:
        """The value, computed on the first call and remembered."""
        if self._value is _UNSET:
            value = self._fn()
            self._value = value.unthunk() if isinstance(value, Thunk) else value  # (unthunk, inline)
            self._fn = None  # type: ignore[assignment]  # free what the closure held
        return self._value

    def __repr__(self) -> str:
        state = "unevaluated" if self._value is _UNSET else repr(self._value)
        return f"{type(self).__name__}({state})"

    if TYPE_CHECKING:  # installed by rulescore._arithmetic

        def __rtruediv__(self, other: Any) -> Any: ...

        def __matmul__(self, other: Any) -> Any: ...

        def __rmatmul__(self, other: Any) -> Any: ...


class InplaceableThunk(Thunk):
    """A thunk that can also add itself into an accumulator in place.

    ``add_into(acc)`` must add the value into ``acc`` (an array the caller owns) and return it;
    ``fn`` computes the value out of place. Accumulators use ``add_into`` to save an allocation.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> t = rc.InplaceableThunk(lambda acc: np.add(acc, 1.0, out=acc), lambda: np.ones(2))
        >>> t.add_into(np.zeros(2)), rc.unthunk(t)
        (array([1., 1.]), array([1., 1.]))
    """

    __slots__ = ("add_into",)

    def __init__(self, add_into: Callable[[Any], Any], fn: Callable[[], Any]) -> None:
        super().__init__(fn)
        self.add_into = add_into


def unthunk(x: Any) -> Any:
    """The value of a thunk; anything else is returned unchanged.

    Example:
        >>> import rulescore as rc
        >>> rc.unthunk(rc.Thunk(lambda: 1.5)), rc.unthunk(2.0)
        (1.5, 2.0)
    """
    return x.unthunk() if isinstance(x, Thunk) else x
