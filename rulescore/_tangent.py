"""``Tangent[P]``: the structural tangent of a composite primal of type ``P``.

Backed by fields for dataclasses, NamedTuples and plain objects (``Tangent[Point](x=1.0)``),
by positions for tuples and lists (``Tangent[tuple](1.0, 2.0)``) and by keys for dicts
(``Tangent[dict]({"a": 1.0})``). Fields that are absent read as ``ZeroTangent()``.

``Tangent[P]`` classes are made on first use and cached for as long as ``P`` lives (weakly:
a class defined inside a function is not kept alive by its tangents' cache). Their arithmetic
(``+``, ``-``, ``*``, ``/``, negation, ``conjugate``) is installed by :mod:`rulescore._arithmetic`.
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from rulescore._abstract_tangent import AbstractTangent
from rulescore._structure import is_namedtuple_type
from rulescore._thunks import unthunk
from rulescore._zeros import AbstractZero, ZeroTangent

P = TypeVar("P")


#: How a ``Tangent[P]`` holds its entries, fixed when the class is made: by position (tuples,
#: lists), by key (dicts) or by field name (everything else).
_POSITIONAL, _KEYED, _NAMED = "positional", "keyed", "named"


def _layout_of(primal_type: type) -> str:
    if issubclass(primal_type, (tuple, list)) and not is_namedtuple_type(primal_type):
        return _POSITIONAL
    return _KEYED if issubclass(primal_type, dict) else _NAMED


#: ``weakref(P) -> Tangent[P]``: an entry goes when ``P`` is collected (a WeakKeyDictionary
#: without its Python-level lookup, as ``tangent_type`` is on projection's fast path)
_SPECIALISED: dict[weakref.ref[type], type] = {}
_ref = weakref.ref


def _forget(primal_ref: weakref.ref[type]) -> None:
    _SPECIALISED.pop(primal_ref, None)


class _TangentType(type):
    """Metaclass of :class:`Tangent`: ``Tangent[P].primal_type`` reads a weak reference to ``P``,
    so the cache of ``Tangent[P]`` classes (keyed weakly on ``P``) does not keep ``P`` alive."""

    @property
    def primal_type(cls) -> Any:
        """``P`` (``None`` once ``P`` has been garbage-collected)."""
        return cls._primal_ref()  # type: ignore[attr-defined]


class Tangent(AbstractTangent, Generic[P], metaclass=_TangentType):
    """Structural tangent of a primal of type ``P``: ``Tangent[P](field=tangent, ...)``.

    Supports field-wise ``+``, scalar ``*``, equality (absent fields equal zero), indexing by
    position or key, and ``primal + tangent`` which rebuilds the primal (an optimiser step).

    Example:
        >>> import rulescore as rc
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class Point:
        ...     x: float
        ...     y: float
        >>> t = rc.Tangent[Point](x=0.5)
        >>> t.y, 2 * t, Point(1.0, 2.0) + t
        (ZeroTangent(), Tangent[Point](x=1.0), Point(x=1.5, y=2.0))
    """

    __slots__ = ("_backing",)
    __array_ufunc__ = None  # `array * tangent` must defer to Tangent.__rmul__
    _primal_ref: ClassVar[weakref.ref[type]] = weakref.ref(object)
    _layout: ClassVar[str | None] = None  # None: the unspecialised base, which has no instances
    _field_names: ClassVar[tuple[str, ...] | None] = None  # a NamedTuple's, in order

    def __class_getitem__(cls, primal_type: Any) -> Any:
        if not isinstance(primal_type, type):
            return super().__class_getitem__(primal_type)  # type: ignore[misc]
        spec = _SPECIALISED.get(_ref(primal_type))
        if spec is None:
            # a class defined inside a function shows as `Point`, not `make.<locals>.Point`
            name = primal_type.__qualname__.rsplit("<locals>.", 1)[-1]
            spec = _TangentType(f"Tangent[{name}]", (Tangent,), {
                "__slots__": (), "__module__": "rulescore", "_primal_ref": weakref.ref(primal_type),
                "_layout": _layout_of(primal_type), "_field_names": getattr(primal_type, "_fields", None),
            })
            _SPECIALISED[_ref(primal_type, _forget)] = spec
        return spec

    @property
    def primal_type(self) -> Any:
        """The primal's type ``P`` (``None`` once ``P`` has been garbage-collected)."""
        return type(self)._primal_ref()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        layout = cls._layout
        if layout is _POSITIONAL:
            if kwargs:
                raise TypeError(f"{cls.__name__} takes positional entries only")
            self._backing: Any = tuple(args)
        elif layout is _KEYED:
            if len(args) > 1 or (args and not isinstance(args[0], dict)):
                raise TypeError("Tangent[dict] takes one dict (or keyword entries)")
            self._backing = {**(args[0] if args else {}), **kwargs}
        elif layout is None:
            raise TypeError("use Tangent[P](...) with the primal type P, e.g. Tangent[tuple](1.0, 2.0)")
        else:
            if args:
                names = cls._field_names
                if names is None or len(args) > len(names):
                    raise TypeError(f"{cls.__name__} takes keyword fields")
                kwargs = {**dict(zip(names[: len(args)], args, strict=True)), **kwargs}
            self._backing = kwargs

    @classmethod
    def _from_backing(cls, backing: Any) -> Tangent[Any]:
        new = object.__new__(cls)
        new._backing = backing
        return new

    @property
    def backing(self) -> Any:
        """The tuple (positional) or dict (named) holding the field tangents."""
        return self._backing

    def items(self) -> list[tuple[Any, Any]]:
        """``(field, tangent)`` pairs: positions for tuples and lists, names or keys otherwise."""
        if isinstance(self._backing, tuple):
            return list(enumerate(self._backing))
        return list(self._backing.items())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        backing = object.__getattribute__(self, "_backing")
        if isinstance(backing, dict):
            return backing.get(name, ZeroTangent())
        raise AttributeError(f"{type(self).__name__} is positional; index it instead of .{name}")

    def __getitem__(self, key: Any) -> Any:
        backing = self._backing
        if isinstance(backing, tuple):
            if isinstance(key, slice):
                return type(self)._from_backing(backing[key])
            return backing[key] if -len(backing) <= key < len(backing) else ZeroTangent()
        names = self._field_names
        if names is not None and isinstance(key, int):
            key = names[key]
        return backing.get(key, ZeroTangent())

    def __len__(self) -> int:
        return len(self._backing)

    def __iter__(self) -> Any:
        if isinstance(self._backing, tuple):
            return iter(self._backing)
        names = self._field_names
        if names is not None:
            return iter([self[n] for n in names])
        raise TypeError(f"{type(self).__name__} is not iterable; use .items()")

    def __repr__(self) -> str:
        if isinstance(self._backing, tuple):
            inner = ", ".join(repr(v) for v in self._backing)
        elif self._layout is _KEYED:
            inner = repr(self._backing)
        else:
            inner = ", ".join(f"{k}={v!r}" for k, v in self._backing.items())
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AbstractZero) or other is None:
            return all(_equal(v, ZeroTangent()) for _, v in self.items())
        if not isinstance(other, Tangent) or type(other) is not type(self):  # one class per primal type
            return NotImplemented
        mine, theirs = dict(self.items()), dict(other.items())
        return all(
            _equal(mine.get(k, ZeroTangent()), theirs.get(k, ZeroTangent()))
            for k in mine.keys() | theirs.keys()
        )

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # `Tangent[P]` classes are made on demand, so pickle by primal type, not by class name
        return (_tangent_from_backing, (self.primal_type, self._backing))



def tangent_type(primal_type: type) -> type[Tangent[Any]]:
    """``Tangent[primal_type]`` as a class (for code that cannot use the subscript syntax)."""
    spec: type[Tangent[Any]] = Tangent[primal_type]  # type: ignore[valid-type]
    return spec


def _tangent_from_backing(primal_type: type, backing: Any) -> Tangent[Any]:
    return tangent_type(primal_type)._from_backing(backing)


def _map_backing(fn: Any, backing: Any) -> Any:
    if isinstance(backing, tuple):
        return tuple(fn(v) for v in backing)
    return {k: fn(v) for k, v in backing.items()}


def _equal(a: Any, b: Any) -> bool:
    a, b = unthunk(a), unthunk(b)
    a_zero = a is None or isinstance(a, AbstractZero)
    b_zero = b is None or isinstance(b, AbstractZero)
    if a_zero and b_zero:
        return True
    if a_zero or b_zero:
        other = b if a_zero else a
        if isinstance(other, Tangent):
            return bool(other == ZeroTangent())
        return bool(np.all(np.asarray(other) == 0))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)
