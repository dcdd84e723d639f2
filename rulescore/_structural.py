"""Structural helpers: functions whose results an AD engine need not trace.

A rule body or pullback that an engine differentiates again (nested AD) runs every line under
the outer levels. Helpers that only read types, shapes, dtypes and axis arguments (``_dtype(x)``,
``_not_args(n)``) give the same answer on a traced value as on its plain value, and their answer
carries no derivative. :func:`structural` marks such a helper so that engines may call it on
the plain values instead of tracing its body; :func:`carries_no_derivative` is the check an
engine applies to the answer, so that a helper marked by mistake raises instead of cutting a
derivative silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from rulescore._registry import rrule
from rulescore._zeros import NO_TANGENT_DATA, AbstractZero

F = TypeVar("F", bound=Callable[..., Any])
#: Scalars an answer may be built from: data with no tangent space, integers (shapes, axes,
#: counts) and the zero tangents.
_NO_DERIVATIVE = (*NO_TANGENT_DATA, int, np.integer, AbstractZero)
#: The commonest of them, tested by exact type first.
_NO_DERIVATIVE_EXACT = frozenset({bool, int, str, type(None), type, np.dtype})


def structural(fn: F) -> F:
    """Mark ``fn`` as structural: its result depends only on the types, shapes, dtypes and
    non-numeric arguments of its inputs, never on the numbers inside them, and is built from
    flags, integers, dtypes, types and zero tangents (:func:`carries_no_derivative`).

    An engine may then call ``fn`` on the plain values under its traced ones instead of
    differentiating through its body (what a nested level would otherwise do line by line).
    The function must not mutate its arguments. It is registered in ``rulescore.rrule`` as a
    ``"structural"`` entry (what engines look up). Returns ``fn`` itself, so it is a decorator.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> @rc.structural
        ... def leading_axis(x):
        ...     return 0 if np.ndim(x) else None
        >>> rc.is_structural(leading_axis), leading_axis(np.ones(3))
        (True, 0)
    """
    rrule.register_kind(fn, (), fn, "structural")
    return fn


def is_structural(fn: Any) -> bool:
    """Whether ``fn`` was marked with :func:`structural`.

    Example:
        >>> import rulescore as rc
        >>> rc.is_structural(len), rc.is_structural(rc.structural(lambda x: ()))
        (False, True)
    """
    try:
        entry = rrule.handled.get(fn)
    except TypeError:  # an unhashable callable object
        return False
    return entry is not None and entry.kind == "structural"


def carries_no_derivative(y: Any) -> bool:
    """Whether ``y`` is built only from values that cannot carry a derivative: flags, integers,
    text, ``None``, types, dtypes, slices, zero tangents, and tuples and frozensets of them.
    An engine calling a :func:`structural` helper on plain values checks its answer with this.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> rc.carries_no_derivative(((2, 3), np.dtype("float64"), rc.NoTangent()))
        True
        >>> rc.carries_no_derivative((2, 3.0))
        False
    """
    ty = type(y)
    if ty in _NO_DERIVATIVE_EXACT or isinstance(y, _NO_DERIVATIVE):
        return True
    if ty is tuple or ty is frozenset:
        for v in y:  # (a loop: engines check every structural call's answer)
            if not carries_no_derivative(v):
                return False
        return True
    return False
