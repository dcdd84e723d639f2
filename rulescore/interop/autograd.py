"""f's registered rules as HIPS autograd derivatives: ``wrap(f)`` is a primitive (``autograd`` extra).

Each output leaf of ``f`` is one autograd primitive whose VJP is the rrule's pullback, itself
applied as the same primitive on the pullback op (so ``grad`` of ``grad`` works, to any order:
beyond the first, the pullback is differentiated by the installed engine), and whose JVP is the
frule. autograd's complex convention is JAX's, the conjugate of rulescore's: converted here.

Example:
    >>> import autograd, rulescore as rc, rulescore.interop.autograd as rag
    >>> def cube(x):
    ...     return x ** 3
    >>> rc.scalar_rule(cube, lambda x: 3 * x ** 2)
    >>> g = rag.wrap(cube)
    >>> float(autograd.grad(g)(2.0)), float(autograd.grad(autograd.grad(g))(2.0))
    (12.0, 12.0)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from autograd.builtins import DictBox, SequenceBox
from autograd.extend import Box, defjvp_argnums, defvjp_argnums, primitive

from rulescore.interop._host import (
    WEAK,
    HostOp,
    OpCache,
    explanation,
    flatten,
    is_dynamic,
    op_name,
    reject_hidden_arrays,
    rule_op,
    value_key,
)

__all__ = ["wrap"]


def _conj(x: Any) -> Any:
    return np.conj(x) if np.iscomplexobj(x) else x


@primitive
def _call(op: HostOp, index: int, *xs: Any) -> Any:
    """Output ``index`` of ``op.fun(*xs)``."""
    out = op.fun(*(np.asarray(x) for x in xs))[index]
    return out if np.ndim(out) else out[()]


def _call_vjp(argnums: Any, ans: Any, args: Any, kwargs: Any) -> Callable[[Any], Any]:
    op, index, *xs = args

    needed = tuple(k + 2 in argnums for k, d in enumerate(op.diff_in) if d)
    vjp_op = op.vjp_op_for(needed)

    def pullback(g: Any) -> tuple[Any, ...]:
        cts = [_conj(g) if i == index else np.zeros(sh, dt)
               for i, (sh, dt) in enumerate(op.out_specs) if op.diff_out[i]]
        return tuple(_conj(_call(vjp_op, sum(op.diff_in[: a - 2]), *xs, *cts)) if op.diff_in[a - 2]
                     else np.zeros(np.shape(_value(xs[a - 2]))) for a in argnums)

    return pullback


def _call_jvp(argnums: Any, gs: Any, ans: Any, args: Any, kwargs: Any) -> Any:
    op, index, *xs = args
    ts = [np.zeros(sh, dt) for sh, dt in op.in_specs]
    for a, g in zip(argnums, gs, strict=True):
        ts[a - 2] = g
    ts = [t for t, d in zip(ts, op.diff_in, strict=True) if d]
    j = sum(op.diff_out[:index])
    return _call(op.jvp_op, j, *xs, *ts)


defvjp_argnums(_call, _call_vjp)
defjvp_argnums(_call, _call_jvp)


def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` as an autograd primitive with derivatives from ``f``'s registered rules.

    Arguments may be arrays, floats, and tuples / lists / dicts of them; other leaves (ints,
    strings) are passed as they are and get no gradient. Outputs keep ``f``'s structure.
    ``wrapped.tier`` is ``"host"`` after a call (``None`` before), and ``wrapped.explain(*args)``
    says why: autograd runs on NumPy arrays, and has no native tier.

    Example:
        >>> import numpy as np, autograd, rulescore.interop.autograd as rag
        >>> g = rag.wrap(np.tanh)           # the library's rule for np.tanh
        >>> float(autograd.grad(g)(0.5)) == float(1 - np.tanh(0.5) ** 2)
        True
        >>> g.tier, g.explain(0.5).split(": ")[:2]
        ('host', ['rulescore.interop.autograd.wrap(tanh) at float64[]', 'the host tier'])
    """
    cache = OpCache()

    def resolve(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[HostOp, list[Any]]:
        leaves, structure = flatten(_open_boxes(args))
        mask = tuple(is_dynamic(_value(x)) for x in leaves)
        static = tuple(x for x, d in zip(leaves, mask, strict=True) if not d)
        reject_hidden_arrays(op_name(f), static, lambda v: isinstance(v, Box))
        dyn = [x for x, d in zip(leaves, mask, strict=True) if d]
        specs = tuple((np.shape(_value(x)), np.result_type(_value(x))) for x in dyn)
        kinds = tuple(WEAK if isinstance(_value(x), (float, complex)) else None for x in dyn)
        concrete = [np.asarray(_value(x)) for x in dyn]
        key = (structure, mask, repr(static), repr(sorted(kwargs.items())), specs, kinds, value_key(concrete))
        op = cache.get(key)
        if op is None:
            op = rule_op(f, structure, static, mask, kwargs, [np.ones(sh, dt) for sh, dt in specs],
                         concrete=concrete, kinds=kinds)
            op.reason = _HOST_REASON.format(name=op_name(f))
            cache.put(key, op)
        return op, dyn

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        op, dyn = resolve(args, kwargs)
        wrapped.tier = op.tier  # type: ignore[attr-defined]
        return op.out_structure.rebuild([_call(op, i, *dyn) for i in range(len(op.out_specs))])

    def explain(*args: Any, **kwargs: Any) -> str:
        """Which tier ``wrapped(*args, **kwargs)`` runs in (always ``"host"``), and why."""
        return explanation("autograd", op_name(f), resolve(args, kwargs)[0])

    wrapped.tier = None  # type: ignore[attr-defined]
    wrapped.explain = explain  # type: ignore[attr-defined]
    return wrapped


_HOST_REASON = (
    "autograd's arrays are NumPy's, so {name} and its rules run on them with no conversion, each output one "
    "autograd primitive; autograd cannot trace into a rule's body, so derivatives beyond the first "
    "differentiate the pullback with the installed AD engine (zygotepy): there is no native tier for "
    "autograd")


def _open_boxes(x: Any) -> Any:
    """``x`` with autograd's container boxes (a dict or tuple argument being differentiated, a
    ``DictBox`` or ``SequenceBox``) opened into containers of boxed leaves: each leaf then reaches
    the rule as an input autograd tracks, never as a constant.

    Example:
        >>> import autograd
        >>> float(autograd.grad(lambda p: _open_boxes(p)["a"] * 3.0)({"a": 1.0})["a"])
        3.0
    """
    if isinstance(x, DictBox):
        return {k: _open_boxes(x[k]) for k in x._value}
    if isinstance(x, SequenceBox):
        return _rebuilt(x._value, [_open_boxes(x[i]) for i in range(len(x._value))])
    if isinstance(x, dict):
        return {k: _open_boxes(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return _rebuilt(x, [_open_boxes(v) for v in x])
    return x


def _rebuilt(like: Any, items: list[Any]) -> Any:
    """A sequence of ``like``'s type (tuple, list, NamedTuple) holding ``items``."""
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def _value(x: Any) -> Any:
    """The value inside autograd's boxes (any depth)."""
    while hasattr(x, "_value") and type(x).__module__.startswith("autograd"):
        x = x._value
    return x
