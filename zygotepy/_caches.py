"""Caches keyed on what user code defines (classes, callables, code objects, files), bounded so
that a program creating them without end (classes in a loop, ``exec``) does not keep them all.
"""

from __future__ import annotations

import weakref
from typing import Any


class _Bounded:
    """What the bounded caches share: a ``limit``, and ``put``, which forgets everything first
    once the cache holds ``limit`` entries."""

    __slots__ = ()
    limit: int

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit  # type: ignore[misc]  # each subclass declares the slot

    def put(self, key: Any, value: Any) -> None:
        """Store ``value`` under ``key`` (after forgetting everything if full)."""
        if len(self) >= self.limit:  # type: ignore[arg-type]
            self.clear()  # type: ignore[attr-defined]
        self[key] = value  # type: ignore[index]


class BoundedCache(_Bounded, dict[Any, Any]):
    """A dict that forgets everything once it holds ``limit`` entries: a miss only costs the
    lookup again, and reads stay a plain dict's (the engine's hot paths read these).

    Example:
        >>> cache = BoundedCache(2)
        >>> cache.put("a", 1); cache.put("b", 2); cache.put("c", 3)
        >>> dict(cache)
        {'c': 3}
    """

    __slots__ = ("limit",)


class WeakBoundedCache(_Bounded, weakref.WeakKeyDictionary[Any, Any]):
    """A ``WeakKeyDictionary`` that also forgets everything once it holds ``limit`` entries: an
    entry whose value refers back to its key (a rewritten method whose closure holds its own
    class) is never freed by weakness alone, so the bound caps how many such stay alive.

    Example:
        >>> class Key: pass
        >>> cache, k = WeakBoundedCache(10), Key()
        >>> cache.put(k, 1); len(cache)
        1
        >>> del k; len(cache)
        0
    """
