"""Tree helpers for the user's side of gradients.

Engines hand users gradients in the users' own containers, with ``None`` where there is no
gradient (an unused parameter, an integer). These helpers walk such trees (tuples, lists,
dicts, NamedTuples, dataclasses and ``Tangent``s of them) in step with the parameters they
belong to, reading a missing or ``None`` gradient as zero, so an optimiser step is one line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._structure import is_namedtuple_type, rebuild
from rulescore._tangent import Tangent
from rulescore._thunks import unthunk
from rulescore._zeros import AbstractZero


def _is_none(x: Any) -> bool:
    return x is None or isinstance(x, AbstractZero)


def zero_like(x: Any) -> Any:
    """A zero of ``x``'s kind: ``0.0`` for Python numbers, zeros of the same shape and dtype for
    arrays, ``x * 0`` for other leaves (arrays of other libraries).

    Example:
        >>> import numpy as np
        >>> zero_like(3), zero_like(np.ones(2, dtype=np.float32))
        (0.0, array([0., 0.], dtype=float32))
    """
    if isinstance(x, (bool, int, float)):
        return 0.0
    if isinstance(x, complex):
        return 0j
    if isinstance(x, (np.ndarray, np.generic)):
        return np.zeros_like(x)
    return x * 0


def _children(node: Any) -> list[tuple[Any, Any]] | None:
    """``[(key, child)]`` for a container node, ``None`` for a leaf."""
    if isinstance(node, Tangent):
        return list(node.items())
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, (tuple, list)):
        return list(enumerate(node))
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [(f.name, getattr(node, f.name)) for f in dataclasses.fields(node)]
    return None


def _child(node: Any, key: Any) -> Any:
    """The child ``key`` of a tree that runs alongside the first one (``None`` where it has none)."""
    if _is_none(node):
        return None
    node = unthunk(node)
    if isinstance(node, Tangent):
        return getattr(node, key) if isinstance(key, str) else node.backing[key]
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, (tuple, list)):
        return node[key]
    return getattr(node, key)


def _build(node: Any, parts: dict[Any, Any]) -> Any:
    if isinstance(node, Tangent):
        return type(node)(**parts) if isinstance(node.backing, dict) else type(node)(*parts.values())
    if isinstance(node, (tuple, list)) and not is_namedtuple_type(type(node)):
        return type(node)(parts.values())
    return rebuild(node, parts)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``f`` applied leaf by leaf to ``tree`` and the trees in ``rest``, in ``tree``'s structure.

    Containers are tuples, lists, dicts, NamedTuples, dataclasses and ``Tangent``s; everything
    else is a leaf. ``rest`` trees have ``tree``'s structure, except that ``None`` (or a zero
    tangent, or a missing dict key) anywhere in them stands for zeros: the leaves below it are
    passed to ``f`` as :func:`zero_like` of ``tree``'s leaf. A ``None`` leaf of ``tree`` stays
    ``None``.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> params = {"w": np.array([1.0, 2.0]), "unused": 5.0}
        >>> grads = {"w": np.array([0.5, 0.5]), "unused": None}
        >>> rc.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        {'w': array([0.95, 1.95]), 'unused': 5.0}
    """
    tree = unthunk(tree)
    if _is_none(tree):
        return None
    children = _children(tree)
    if children is None:
        return f(tree, *(zero_like(tree) if _is_none(r) else unthunk(r) for r in rest))
    parts = {k: tree_map(f, c, *(_child(r, k) for r in rest)) for k, c in children}
    return _build(tree, parts)


def tree_add(a: Any, b: Any) -> Any:
    """``a + b`` leaf by leaf, in ``a``'s structure; ``None`` in either is zero.

    Example:
        >>> import rulescore as rc
        >>> rc.tree_add({"w": 1.0, "b": None}, {"w": 2.0, "b": 3.0})
        {'w': 3.0, 'b': 3.0}
    """
    if _is_none(a):
        return b
    return tree_map(lambda x, y: x + y, _with_leaves(a, b), b)


def _with_leaves(a: Any, b: Any) -> Any:
    """``a`` with its ``None`` leaves replaced by zeros of ``b``'s corresponding leaves."""
    if _is_none(a):
        return None if _is_none(b) else tree_map(zero_like, b)
    children = _children(unthunk(a))
    if children is None:
        return a
    return _build(unthunk(a), {k: _with_leaves(c, _child(b, k)) for k, c in children})


def tree_sub(a: Any, b: Any) -> Any:
    """``a - b`` leaf by leaf, in ``a``'s structure; ``None`` in either is zero. Gradient descent
    on a dict of parameters is ``rc.tree_sub(params, rc.tree_scale(lr, grads))``.

    Example:
        >>> import rulescore as rc
        >>> rc.tree_sub({"w": 1.0, "b": 2.0}, {"w": 0.5, "b": None})
        {'w': 0.5, 'b': 2.0}
    """
    return tree_map(lambda x, y: x - y, _with_leaves(a, b), b)


def tree_scale(s: Any, tree: Any) -> Any:
    """``s * leaf`` for every leaf of ``tree`` (``None`` stays ``None``).

    Example:
        >>> import rulescore as rc
        >>> rc.tree_scale(0.5, [2.0, None, (4.0,)])
        [1.0, None, (2.0,)]
    """
    return tree_map(lambda x: s * x, tree)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in order (``None`` leaves left out).

    Example:
        >>> import rulescore as rc
        >>> rc.tree_leaves({"a": (1.0, None), "b": [2.0]})
        [1.0, 2.0]
    """
    tree = unthunk(tree)
    if _is_none(tree):
        return []
    children = _children(tree)
    if children is None:
        return [tree]
    return [leaf for _, c in children for leaf in tree_leaves(c)]


def tree_flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """``(leaves, unflatten)``: ``tree``'s leaves in order (``None`` included) and the function
    that puts a list of new leaves back into ``tree``'s structure.

    Example:
        >>> import rulescore as rc
        >>> leaves, unflatten = rc.tree_flatten({"a": (1.0, None), "b": [2.0]})
        >>> leaves, unflatten([10.0, 20.0, 30.0])
        ([1.0, None, 2.0], {'a': (10.0, 20.0), 'b': [30.0]})
    """
    leaves: list[Any] = []
    shape = _shape_of(tree, leaves)

    def unflatten(new: list[Any]) -> Any:
        if len(new) != len(leaves):
            raise ValueError(f"tree_flatten's unflatten expected {len(leaves)} leaves, got {len(new)}")
        return _fill(shape, iter(new))

    return leaves, unflatten


def _shape_of(tree: Any, leaves: list[Any]) -> Any:
    """``tree`` with its leaves collected into ``leaves`` (the skeleton is the tree itself)."""
    children = None if _is_none(tree) else _children(unthunk(tree))
    if children is None:
        leaves.append(tree)
        return _LEAF
    return (unthunk(tree), [(k, _shape_of(c, leaves)) for k, c in children])


_LEAF = object()


def _fill(shape: Any, new: Any) -> Any:
    if shape is _LEAF:
        return next(new)
    node, children = shape
    return _build(node, {k: _fill(c, new) for k, c in children})
