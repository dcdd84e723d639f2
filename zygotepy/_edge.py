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
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._structure import fields_of, is_namedtuple_type
from rulescore._tangent import tangent_type
from rulescore._zeros import AbstractZero, ZeroTangent
from zygotepy._dispatch import call
from zygotepy._trace import Box, unbox_all


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
    if type(primal) is Box:
        primal = unbox_all(primal)
    return _user_form(call(rc.project, primal, ct), primal)  # projected once, the whole structure


def _user_form(ct: Any, primal: Any) -> Any:
    """A projected cotangent with zeros as ``None`` and structural tangents as the primal's containers."""
    ct = rc.unthunk(ct)
    if ct is None or isinstance(ct, AbstractZero):
        return None
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
