"""The user's edge: the one conversion each way between gradients as users write and read
them and rulescore's internal tangents.

Users see ``None`` for no gradient, their own containers mirrored (tuples, lists, dicts),
floats for ints' gradients and ``Tangent`` for objects; inside, zeros are rulescore's zero
types and containers are structural ``Tangent``s. :func:`to_user` is used for everything the
engine hands out (``gradient``, ``pullback``, ``jvp``, what an ``@adjoint``'s ``back``
receives), :func:`to_internal` for everything it takes in (what ``back`` returns).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._checks import callable_name
from rulescore._structure import fields_of, is_namedtuple_type
from rulescore._tangent import tangent_type
from rulescore._zeros import AbstractZero, ZeroTangent
from zygotepy._dispatch import call
from zygotepy._trace import Box, unbox_all

_NDARRAY = np.ndarray  # (a global: one load per leaf)


def owned_by_caller(a: np.ndarray) -> bool:
    """Whether the array ``a``, held by the caller in one local variable and one list entry, is
    held by nothing else, owns its memory and is writable: it can be handed to the user, who
    may write into it, without changing another gradient, a constant or a rule's saved value.

    Example:
        >>> import numpy as np
        >>> def hand_out(cts):
        ...     g = cts[0]
        ...     return owned_by_caller(g)
        >>> shared = np.zeros(2)
        >>> hand_out([np.zeros(2)]), hand_out([shared]), hand_out([np.broadcast_to(1.0, (2,))])
        (True, False, False)
    """
    # the references: the list entry, the caller's local, this parameter and getrefcount's argument
    return a.base is None and a.flags.writeable and sys.getrefcount(a) <= 4


def to_user(ct: Any, primal: Any) -> Any:
    """A cotangent as users see it: ``None`` for zeros, containers mirrored, ints -> floats;
    every array in it a fresh copy (the user may write into it).

    Example:
        >>> import rulescore as rc
        >>> to_user(rc.Tangent[tuple](1.0, rc.ZeroTangent()), (1, "a")), to_user(rc.ZeroTangent(), 1.0)
        ((1.0, None), None)
    """
    ct = rc.unthunk(ct)
    if ct is None or isinstance(ct, AbstractZero):
        return None
    if isinstance(ct, (str, bytes)):
        raise rc.ProjectionError(
            f"a rule's pullback gave a cotangent of type {type(ct).__name__} ({ct!r:.40}) for an argument "
            f"of type {type(unbox_all(primal)).__name__}: a cotangent is a number, an array or a tangent; "
            "run with RULESCORE_CHECKS=1 to name the rule and the call")
    if type(primal) is Box:
        primal = unbox_all(primal)
    return _user_form(call(rc.project, primal, ct), primal)  # projected once, the whole structure


def _user_form(ct: Any, primal: Any) -> Any:
    """A projected cotangent with zeros as ``None`` and structural tangents as the primal's containers."""
    ct = rc.unthunk(ct)
    if ct is None or isinstance(ct, AbstractZero):
        return None
    if type(ct) is Box:  # traced by an outer level: a value no code writes into (the writes of
        return ct        # rewritten code rebind, a box refuses the others); that level's end copies it
    if not isinstance(ct, rc.Tangent):
        return ct.copy() if isinstance(ct, np.ndarray) else ct  # the user's own: never shared
    if isinstance(primal, (tuple, list)) and not is_namedtuple_type(type(primal)):
        out = [_user_form(c, p) for c, p in zip(ct.backing, primal, strict=True)]
        return None if all(o is None for o in out) else type(primal)(out)
    entries = dict(ct.items())
    if isinstance(primal, dict):
        d = {k: _user_form(entries.get(k), v) for k, v in primal.items()}
        return None if all(v is None for v in d.values()) else d
    return type(ct)(**{k: _user_form(entries.get(k), v) for k, v in fields_of(primal).items()})


def to_internal(g: Any, primal: Any) -> Any:
    """A user's gradient (``None``, containers mirroring ``primal``'s, anything else as it is) ->
    rulescore's representation for ``primal``: the one conversion into the engine.

    Example:
        >>> to_internal((1.0, None), (2.0, "a"))
        Tangent[tuple](1.0, ZeroTangent())
    """
    if g is None:
        return ZeroTangent()
    if isinstance(primal, (tuple, list)) and not hasattr(primal, "_fields") and isinstance(g, (tuple, list)):
        return tangent_type(type(primal))(*(to_internal(c, p) for c, p in zip(g, primal, strict=True)))
    if isinstance(primal, dict) and isinstance(g, dict):
        return tangent_type(dict)({k: to_internal(v, primal[k]) for k, v in g.items()})
    return g


def check_arguments(entry: str, f: Any, args: tuple[Any, ...],
                    selected: tuple[int, ...] | None = None) -> None:
    """Refuse, before ``f`` runs, an argument the engine would differentiate wrongly or not at all:
    an ``np.matrix`` (``*`` is a matrix product, shapes stay 2-d), a masked array (the mask is
    not a derivative's), an array of objects or of structured records, a ``Fraction`` or
    ``Decimal`` (exact arithmetic a float derivative would round), a generator or other iterator
    (used up by the first pass). The error names the type and the fix. Only the ``selected``
    positions are checked (``None``: all): the others are passed as they are.

    Example:
        >>> import numpy as np
        >>> check_arguments("gradient", np.sum, (np.ones(2), [1.0, {"a": 2}]))  # nothing to refuse
        >>> check_arguments("gradient", np.sum, (np.array([1.0], dtype=object),))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        TypeError: gradient of numpy.sum: argument 0 is an array of dtype object, ...; pass a.astype(float)
    """
    for i, a in enumerate(args):
        if selected is not None and i not in selected:
            continue
        t = type(a)
        if t is float or (t is np.ndarray and a.dtype.kind in "fc"):
            continue  # the common case, at no cost
        problem = _unsupported(a, set())
        if problem is not None:
            raise TypeError(f"{entry} of {callable_name(f)}: argument {i} {problem}")


class RefusedArgument(TypeError):
    """An argument :func:`check_arguments` refuses, met by an entry point that checks arguments as
    it boxes them (the reverse entry points: one walk of the arguments, not two); the entry point
    then runs :func:`check_arguments`, whose error names the argument and the fix."""


def refuses(a: Any) -> bool:
    """Whether :func:`check_arguments` refuses ``a``, an argument or a leaf of one that is not a
    list, tuple or dict (the walk that meets it walks those itself).

    Example:
        >>> import numpy as np
        >>> refuses(np.array([1.0], dtype=object)), refuses(np.array(["a"])), refuses(iter([1.0]))
        (True, False, True)
    """
    return _unsupported(a, set()) is not None


def _unsupported(a: Any, seen: set[int]) -> str | None:
    """What makes ``a`` (or a value in the containers it is) an argument the engine refuses, with
    the fix; ``None`` if nothing does."""
    t = type(a)
    if t is float or t is int or (t is np.ndarray and a.dtype.kind in "fcbiu"):
        return None  # the common leaves, at no cost
    if t is tuple or t is list:  # nested tuples and lists walked here, without a call each
        pending = [a]
        while pending:
            container = pending.pop()
            if type(container) is list:  # (a tuple reaches itself only through a list or a dict)
                if id(container) in seen:
                    continue
                seen.add(id(container))
            for v in container:
                tv = type(v)
                if tv is _NDARRAY:  # (the common leaves without a call: arrays, floats, containers)
                    if v.dtype.kind in "fcbiu":
                        continue
                elif tv is float:
                    continue
                elif tv is tuple or tv is list:
                    pending.append(v)
                    continue
                problem = _unsupported(v, seen)
                if problem is not None:
                    return problem
        return None
    if t is dict:
        if id(a) in seen:
            return None
        seen.add(id(a))
        for k, v in a.items():
            problem = _unsupported(v, seen)
            if problem is not None:
                return f"(its entry {k!r}) {problem}"
        return None
    if isinstance(a, np.matrix):
        return "is an np.matrix, whose * and ** are matrix products; pass np.asarray(m) and use @"
    if isinstance(a, np.ma.MaskedArray):
        return ("is a masked array (np.ma), whose mask the gradient would ignore; pass its data, "
                "np.ma.getdata(a), and apply the mask in the function (np.where(mask, 0.0, a))")
    if isinstance(a, (np.ndarray, np.void)):
        if a.dtype.kind == "O":
            return "is an array of dtype object, whose gradient cannot be computed; pass a.astype(float)"
        if a.dtype.kind == "V":
            return ("is a structured array (fields " + ", ".join(map(repr, a.dtype.names or ())) + "), "
                    "whose fields cannot be differentiated in place; pass each field as an array "
                    "(s['a'], ...) or numpy.lib.recfunctions.structured_to_unstructured(s)")
        return None
    if isinstance(a, (Fraction, Decimal)):
        return (f"is a {type(a).__name__}, whose exact arithmetic a derivative would round; pass "
                "float(x)")
    if isinstance(a, Iterator) and not isinstance(a, (str, bytes)):
        return (f"is a {type(a).__name__}, an iterator the function would use up on its first pass; "
                "pass a list or tuple of its values (list(it))")
    return None
