"""How rulescore sees the inside of a primal: its fields, and how to rebuild it.

Dataclasses and plain objects are seen by field name, NamedTuples by field name (and
position), tuples and lists by position, dicts by key. Every structural operation in the
package (``Tangent``, ``ProjectTo``, ``primal + tangent``) goes through these two functions.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any


def is_namedtuple_type(cls: type) -> bool:
    """True for classes made by ``collections.namedtuple`` / ``typing.NamedTuple``."""
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


def fields_of(x: Any) -> dict[str, Any]:
    """The named fields of an object (dataclass, NamedTuple, ``__dict__`` or ``__slots__``).

    Example:
        >>> from typing import NamedTuple
        >>> class P(NamedTuple):
        ...     x: float
        ...     y: float
        >>> fields_of(P(1.0, 2.0))
        {'x': 1.0, 'y': 2.0}
    """
    cls = type(x)
    if dataclasses.is_dataclass(x):
        return {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    if is_namedtuple_type(cls):
        return dict(zip(cls._fields, x, strict=True))
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        for slot in klass.__dict__.get("__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(x, slot):
                out[slot] = getattr(x, slot)
    if hasattr(x, "__dict__"):
        out.update(vars(x))
    return out


def rebuild(x: Any, updates: dict[Any, Any]) -> Any:
    """A copy of ``x`` with the fields (or positions, or keys) in ``updates`` replaced.

    The original is never mutated: frozen dataclasses and NamedTuples are rebuilt, other objects
    are shallow-copied and their attributes set.

    Example:
        >>> rebuild((1.0, 2.0), {1: 5.0})
        (1.0, 5.0)
    """
    cls = type(x)
    if is_namedtuple_type(cls):
        fields = cls._fields
        return x._replace(**{fields[k] if isinstance(k, int) else k: v for k, v in updates.items()})
    if isinstance(x, (tuple, list)):
        items = list(x)
        for i, v in updates.items():
            items[i] = v
        return cls(items)
    if isinstance(x, dict):
        new = copy.copy(x)
        new.update(updates)
        return new
    new = copy.copy(x)
    for name, value in updates.items():
        object.__setattr__(new, name, value)
    return new
