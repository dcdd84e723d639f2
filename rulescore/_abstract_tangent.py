"""``AbstractTangent``: the base class of the tangent types (the zeros, thunks, ``Tangent``).

It holds no code. The tangent types' arithmetic operators are installed by
:mod:`rulescore._arithmetic`, the one home of tangent arithmetic, which imports the tangent
types and never the reverse (the layering of ChainRulesCore's ``tangent_types/`` and
``tangent_arithmetic.jl``). The operators every tangent type has are declared here, for type
checkers only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class AbstractTangent:
    """Base of every tangent type: ``+``/``-`` are ``rulescore.add``/``rulescore.sub``, ``*`` scales.

    Example:
        >>> import rulescore as rc
        >>> from rulescore._abstract_tangent import AbstractTangent
        >>> isinstance(rc.ZeroTangent(), AbstractTangent), rc.ZeroTangent() + 1.0, 1.0 - rc.Thunk(lambda: 3.0)
        (True, 1.0, -2.0)
    """

    __slots__ = ()

    if TYPE_CHECKING:  # installed by rulescore._arithmetic

        def __add__(self, other: Any) -> Any: ...

        def __radd__(self, other: Any) -> Any: ...

        def __sub__(self, other: Any) -> Any: ...

        def __rsub__(self, other: Any) -> Any: ...

        def __mul__(self, other: Any) -> Any: ...

        def __rmul__(self, other: Any) -> Any: ...

        def __truediv__(self, other: Any) -> Any: ...

        def __neg__(self) -> Any: ...

        def conjugate(self) -> Any: ...
