"""Primals and tangents of any structure seen as real vectors (FiniteDifferences.jl's ``to_vec``).

A *node* describes the differentiable degrees of freedom of one primal: numbers, arrays
(complex entries count as two reals: real part, imaginary part), tuples, lists, dicts,
dataclasses, NamedTuples and objects with fields. It can perturb the primal along a real vector,
turn a real vector into a tangent of the primal's tangent space, turn a tangent (in any of the
forms rules return: zeros, thunks, arrays, ``Tangent``, plain containers) back into a real
vector, and name each degree of freedom for failure reports.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._zeros import NO_TANGENT_TYPES

_NO_TANGENT_TYPES = (*NO_TANGENT_TYPES, rc.AbstractZero)
_MAX_DEPTH = 32


@dataclasses.dataclass(frozen=True)
class NoTangentArg:
    """An argument marked as non-differentiable: the harness never perturbs it and the rule must
    give it ``NoTangent()``. Made by :func:`no_tangent`; the function sees ``value``."""

    value: Any


def no_tangent(x: Any) -> NoTangentArg:
    """Mark an argument (or a part of one) as non-differentiable for ``test_rrule``/``test_frule``.

    The argument is passed to the function unchanged, is never perturbed by finite differences,
    and the rule must return ``NoTangent()`` for it (not ``ZeroTangent()``).

    Example:
        >>> import numpy as np, rulescore.testing as rct
        >>> rct.test_rrule(np.take, np.array([1.0, 2.0, 3.0]), rct.no_tangent(1))  # doctest: +SKIP
        >>> rct.no_tangent(1).value
        1
    """
    return NoTangentArg(x)


class TangentMismatch(ValueError):
    """A tangent does not fit the primal's structure; ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class Node:
    """Degrees of freedom of one primal (see the module documentation)."""

    n: int = 0
    #: True when the primal has no tangent space (bool, str, marked with ``no_tangent``...).
    nodiff: bool = False

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        """The primal moved by the real vector ``v`` (``promote``: float32 -> float64)."""
        raise NotImplementedError

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        """The real degrees of freedom of ``y``, a value shaped like this primal."""
        raise NotImplementedError

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        """The tangent of this primal whose real coordinates are ``v``."""
        raise NotImplementedError

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        """The real coordinates of the tangent ``t``; :class:`TangentMismatch` if it does not fit."""
        raise NotImplementedError

    def labels(self, prefix: str) -> list[str]:
        """One name per degree of freedom, e.g. ``x[0, 1].imag``."""
        raise NotImplementedError


def _tangent_type(cls: type) -> Any:
    """``rc.Tangent[cls]`` for a class known only at run time."""
    return rc.Tangent.__class_getitem__(cls)


def _zeros(n: int) -> np.ndarray[Any, Any]:
    return np.zeros(n, dtype=np.float64)


class NoDiffNode(Node):
    """A primal with no degrees of freedom (no tangent space, or not perturbed)."""

    def __init__(self, x: Any, nodiff: bool = True) -> None:
        self.x = x
        self.nodiff = nodiff

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        return self.x

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        return _zeros(0)

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        return rc.NoTangent() if self.nodiff else rc.ZeroTangent()

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        return _zeros(0)

    def labels(self, prefix: str) -> list[str]:
        return []


def _as_array(t: Any, path: str) -> np.ndarray[Any, Any]:
    try:
        a = np.asarray(t)
    except Exception as err:  # noqa: BLE001 - any conversion failure is a mismatch
        raise TangentMismatch(path, f"cannot read a {type(t).__name__} as numbers ({err})") from None
    if a.dtype.kind not in "biufc":
        raise TangentMismatch(path, f"a {type(t).__name__} is not a numeric tangent")
    return a


def _real_coords(a: np.ndarray[Any, Any], is_complex: bool) -> np.ndarray[Any, Any]:
    if is_complex:
        return np.stack([np.real(a), np.imag(a)], axis=-1).astype(np.float64).ravel()
    return np.real(a).astype(np.float64).ravel()


class ScalarNode(Node):
    """A Python or NumPy number (ints count as reals)."""

    def __init__(self, x: Any) -> None:
        self.x = x
        self.is_complex = isinstance(x, (complex, np.complexfloating))
        self.n = 2 if self.is_complex else 1
        self.np_type: Any = type(x) if isinstance(x, np.generic) else None

    def _value(self, v: np.ndarray[Any, Any]) -> Any:
        return complex(v[0], v[1]) if self.is_complex else float(v[0])

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        if self.is_complex:
            val: Any = complex(self.x) + self._value(v)
        else:
            val = float(self.x) + self._value(v)
        if self.np_type is None:
            return val
        if promote or not issubclass(self.np_type, np.inexact):
            return np.complex128(val) if self.is_complex else np.float64(val)
        return self.np_type(val)

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        a = _as_array(y, "")
        if a.ndim != 0:
            raise TangentMismatch("", f"expected a number, got shape {a.shape}")
        return _real_coords(a, self.is_complex)

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        val = self._value(v)
        if self.np_type is not None and issubclass(self.np_type, np.inexact):
            return self.np_type(val)
        if self.np_type is not None:
            return np.float64(val)
        return val

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        t = rc.unthunk(t)
        if rc.is_zero(t):
            return _zeros(self.n)
        a = _as_array(t, path)
        if a.ndim != 0:
            raise TangentMismatch(path, f"a tangent of shape {a.shape} for a scalar")
        return _real_coords(a, self.is_complex)

    def labels(self, prefix: str) -> list[str]:
        return [f"{prefix}.real", f"{prefix}.imag"] if self.is_complex else [prefix]


class ArrayNode(Node):
    """A NumPy array of floats, complexes or (perturbed as floats) integers."""

    def __init__(self, x: np.ndarray[Any, Any]) -> None:
        self.x = x
        self.is_complex = x.dtype.kind == "c"
        self.n = x.size * (2 if self.is_complex else 1)
        self.tangent_dtype = x.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)

    def _delta(self, v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        if self.is_complex:
            w = v.reshape((*self.x.shape, 2))
            return w[..., 0] + 1j * w[..., 1]
        return v.reshape(self.x.shape)

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        dtype = self.tangent_dtype
        if promote:
            dtype = np.dtype(np.complex128 if self.is_complex else np.float64)
        return np.asarray(self.x.astype(dtype) + self._delta(v)).astype(dtype)

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        a = _as_array(y, "")
        if a.shape != self.x.shape:
            raise TangentMismatch("", f"expected shape {self.x.shape}, got {a.shape}")
        return _real_coords(a, self.is_complex)

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        return np.asarray(self._delta(v)).astype(self.tangent_dtype)

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        t = rc.unthunk(t)
        if rc.is_zero(t):
            return _zeros(self.n)
        a = _as_array(t, path)
        if a.shape != self.x.shape:
            raise TangentMismatch(path, f"a tangent of shape {a.shape} for an array of shape {self.x.shape}")
        return _real_coords(a, self.is_complex)

    def labels(self, prefix: str) -> list[str]:
        out = []
        for idx in np.ndindex(self.x.shape):
            name = f"{prefix}[{', '.join(map(str, idx))}]" if idx else prefix
            out.extend([f"{name}.real", f"{name}.imag"] if self.is_complex else [name])
        return out


class _Composite(Node):
    """Children addressed by keys (positions, dict keys or field names)."""

    def __init__(self, x: Any, children: dict[Any, Node]) -> None:
        self.x = x
        self.children = children
        self.n = sum(c.n for c in children.values())

    def _split(self, v: np.ndarray[Any, Any]) -> dict[Any, np.ndarray[Any, Any]]:
        out, start = {}, 0
        for k, c in self.children.items():
            out[k] = v[start:start + c.n]
            start += c.n
        return out

    def perturb(self, v: np.ndarray[Any, Any], promote: bool = False) -> Any:
        parts = self._split(v)
        updates = {k: c.perturb(parts[k], promote) for k, c in self.children.items()}
        changed = {k: v for k, v in updates.items() if v is not _get(self.x, k)}
        return rc.rebuild(self.x, changed) if changed else self.x

    def _entries_of_value(self, y: Any) -> dict[Any, Any]:
        raise NotImplementedError

    def _entries_of_tangent(self, t: Any, path: str) -> dict[Any, Any]:
        raise NotImplementedError

    def values(self, y: Any) -> np.ndarray[Any, Any]:
        entries = self._entries_of_value(y)
        if not self.children:
            return _zeros(0)
        return np.concatenate([c.values(entries[k]) for k, c in self.children.items()])

    def vec(self, t: Any, path: str = "") -> np.ndarray[Any, Any]:
        t = rc.unthunk(t)
        if rc.is_zero(t):
            return _zeros(self.n)
        entries = self._entries_of_tangent(t, path)
        if not self.children:
            return _zeros(0)
        return np.concatenate([c.vec(entries.get(k), self._child_path(path, k))
                               for k, c in self.children.items()])

    def _child_path(self, prefix: str, key: Any) -> str:
        return f"{prefix}[{key!r}]"

    def labels(self, prefix: str) -> list[str]:
        return [lab for k, c in self.children.items() for lab in c.labels(self._child_path(prefix, k))]


def _get(x: Any, k: Any) -> Any:
    if isinstance(x, (tuple, list, dict)) and not _is_namedtuple(x):
        return x[k]
    return getattr(x, k)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class SequenceNode(_Composite):
    """A tuple or list (not a NamedTuple): ``Tangent[tuple]`` / ``Tangent[list]``."""

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        parts = self._split(v)
        return _tangent_type(type(self.x))(*(c.tangent(parts[k]) for k, c in self.children.items()))

    def _entries_of_value(self, y: Any) -> dict[Any, Any]:
        if not isinstance(y, (tuple, list)) or len(y) != len(self.children):
            raise TangentMismatch("", f"expected a sequence of length {len(self.children)}, got {y!r}")
        return dict(enumerate(y))

    def _entries_of_tangent(self, t: Any, path: str) -> dict[Any, Any]:
        if isinstance(t, rc.Tangent):
            if not issubclass(type(self.x), t.primal_type):
                raise TangentMismatch(path, f"a {type(t).__name__} for a {type(self.x).__name__}")
            entries = list(t.backing)
        elif isinstance(t, (tuple, list)):
            entries = list(t)
        else:
            raise TangentMismatch(path, f"a {type(t).__name__} for a {type(self.x).__name__}")
        if len(entries) != len(self.children):
            raise TangentMismatch(path, f"a tangent with {len(entries)} entries for a "
                                        f"{type(self.x).__name__} of length {len(self.children)}")
        return dict(enumerate(entries))


class DictNode(_Composite):
    """A dict: ``Tangent[dict]``."""

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        parts = self._split(v)
        return _tangent_type(type(self.x))({k: c.tangent(parts[k]) for k, c in self.children.items()})

    def _entries_of_value(self, y: Any) -> dict[Any, Any]:
        if not isinstance(y, dict) or y.keys() != self.children.keys():
            raise TangentMismatch("", f"expected a dict with keys {list(self.children)}, got {y!r}")
        return dict(y)

    def _entries_of_tangent(self, t: Any, path: str) -> dict[Any, Any]:
        if isinstance(t, (rc.Tangent, dict)):
            entries = dict(t.items())
        else:
            raise TangentMismatch(path, f"a {type(t).__name__} for a dict")
        unknown = entries.keys() - self.children.keys()
        if unknown:
            raise TangentMismatch(path, f"a tangent with keys {sorted(map(repr, unknown))} the dict lacks")
        return entries


class StructNode(_Composite):
    """A dataclass, NamedTuple or object with fields: ``Tangent[P]`` by field name."""

    def _child_path(self, prefix: str, key: Any) -> str:
        return f"{prefix}.{key}"

    def tangent(self, v: np.ndarray[Any, Any]) -> Any:
        parts = self._split(v)
        return _tangent_type(type(self.x))(**{k: c.tangent(parts[k]) for k, c in self.children.items()})

    def _entries_of_value(self, y: Any) -> dict[Any, Any]:
        if type(y) is not type(self.x):
            raise TangentMismatch("", f"expected a {type(self.x).__name__}, got a {type(y).__name__}")
        return rc.fields_of(y)

    def _entries_of_tangent(self, t: Any, path: str) -> dict[Any, Any]:
        if isinstance(t, rc.Tangent):
            if t.primal_type is not type(self.x):
                raise TangentMismatch(path, f"a {type(t).__name__} for a {type(self.x).__name__}")
            entries = dict(t.items())
        elif isinstance(t, dict):
            entries = dict(t)
        elif isinstance(t, type(self.x)):
            entries = rc.fields_of(t)  # a legacy adjoint's primal-typed cotangent
        else:
            raise TangentMismatch(path, f"a {type(t).__name__} for a {type(self.x).__name__}")
        unknown = entries.keys() - self.children.keys()
        if unknown:
            raise TangentMismatch(path, f"{type(self.x).__name__} has no field(s) {sorted(unknown)}")
        return entries


def int_only(x: Any, depth: int = 0) -> bool:
    """Integers (not bools), integer arrays, and tuples/lists of them: indices, axes, sizes and
    shapes unless a rule says otherwise."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iu"
    if isinstance(x, (tuple, list)) and x and depth < 4 and not _is_namedtuple(x):
        return all(int_only(v, depth + 1) for v in x)
    return False


def build_node(x: Any, ints: bool = True, depth: int = 0, path: frozenset[int] = frozenset()) -> Node:
    """The :class:`Node` of the primal ``x``. With ``ints=False`` integers are not perturbed. An
    object met again below itself (``path``: the containers above it) is a leaf with no tangent
    space: a logger reaches every other logger through its manager, and back.

    Example:
        >>> import numpy as np
        >>> node = build_node((1.0, np.zeros(2, complex), "s"))
        >>> node.n, node.labels("x")
        (5, ['x[0]', 'x[1][0].real', 'x[1][0].imag', 'x[1][1].real', 'x[1][1].imag'])
    """
    if isinstance(x, NoTangentArg):
        return NoDiffNode(x.value)
    if isinstance(x, _NO_TANGENT_TYPES) or depth > _MAX_DEPTH:
        return NoDiffNode(x)
    if isinstance(x, (np.ndarray, np.generic)):
        kind = x.dtype.kind
        if kind in "fc" or (kind in "iu" and ints):
            return ArrayNode(x) if isinstance(x, np.ndarray) else ScalarNode(x)
        return NoDiffNode(x, nodiff=kind not in "iu")
    if isinstance(x, int):
        return ScalarNode(x) if ints else NoDiffNode(x, nodiff=False)
    if isinstance(x, (float, complex)):
        return ScalarNode(x)
    if id(x) in path:
        return NoDiffNode(x, nodiff=False)
    below = path | {id(x)}
    if isinstance(x, (tuple, list)) and not _is_namedtuple(x):
        return SequenceNode(x, {i: build_node(v, ints, depth + 1, below) for i, v in enumerate(x)})
    if isinstance(x, dict):
        return DictNode(x, {k: build_node(v, ints, depth + 1, below) for k, v in x.items()})
    try:
        fields = rc.fields_of(x)
    except Exception:  # noqa: BLE001 - an object we cannot look into has no tangent space here
        return NoDiffNode(x, nodiff=False)
    return StructNode(x, {k: build_node(v, ints, depth + 1, below) for k, v in fields.items()})


def unwrap(x: Any) -> Any:
    """``x`` with every :class:`NoTangentArg` marker replaced by its value (at any depth)."""
    if isinstance(x, NoTangentArg):
        return x.value
    if isinstance(x, (tuple, list)) and not _is_namedtuple(x):
        items = [unwrap(v) for v in x]
        if all(a is b for a, b in zip(items, x, strict=True)):
            return x
        return rc.rebuild(x, dict(enumerate(items)))
    if isinstance(x, dict):
        updates = {k: unwrap(v) for k, v in x.items() if isinstance(v, (NoTangentArg, tuple, list, dict))}
        updates = {k: v for k, v in updates.items() if v is not x[k]}
        return rc.rebuild(x, updates) if updates else x
    return x
