"""``+`` and ``-`` for every tangent type, by :func:`rulescore.add` and :func:`rulescore.sub`.

A mixin, so the zeros, ``Tangent`` and thunks share one definition. The arithmetic module is
imported at call time because it imports the tangent types themselves.
"""

from __future__ import annotations

from typing import Any


class Additive:
    """Mixin: tangent ``+``/``-`` (zeros are the identity, structures add field-wise)."""

    __slots__ = ()

    def __add__(self, other: Any) -> Any:
        from rulescore._arithmetic import add

        return add(self, other)

    def __radd__(self, other: Any) -> Any:
        from rulescore._arithmetic import add

        return add(other, self)

    def __sub__(self, other: Any) -> Any:
        from rulescore._arithmetic import sub

        return sub(self, other)

    def __rsub__(self, other: Any) -> Any:
        from rulescore._arithmetic import sub

        return sub(other, self)
