"""Zygote's utilities: gradient hooks, checkpointing, reflection and compatibility names.

``hook``, ``showgrad``, ``dropgrad``, ``ignore`` and ``isderiving`` are plain functions with
legacy adjoints (the same machinery users get from ``@zygotepy.adjoint``). ``checkpointed`` is
part of the engine: its node re-runs the function in the backward pass, and it also routes the
gradients of the trace's implicit parameters, so nothing used inside it is dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._zeros import NoTangent, ZeroTangent
from zygotepy._adjoint import adjoint
from zygotepy._backward import backward
from zygotepy._dispatch import call, innermost, unbox
from zygotepy._reverse import ReverseTrace, _assemble, _box_args, _seeds, pullback
from zygotepy._trace import LEVELS, new_trace, unbox_all


def hook(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` unchanged going forward; ``fn`` applied to ``x``'s gradient on the way back.

    Example:
        >>> import operator, zygotepy as zp
        >>> zp.gradient(lambda a, b: zp.hook(operator.neg, a) * b, 2, 3)
        (-3.0, 2.0)
    """
    return x


@adjoint(hook)
def _hook_adjoint(fn: Any, x: Any) -> Any:
    return x, lambda xbar: (None, fn(xbar))


def showgrad(x: Any, name: str | None = None) -> Any:
    """``x`` unchanged going forward; prints ``x``'s gradient when it arrives.

    Example:
        >>> import zygotepy as zp
        >>> zp.gradient(lambda a: zp.showgrad(a, "a") * 3.0, 2.0)
        ∂(a) = 3.0
        (3.0,)
    """
    return x


@adjoint(showgrad)
def _showgrad_adjoint(x: Any, name: str | None = None) -> Any:
    def show(xbar: Any) -> Any:
        print(f"∂({name or 'x'}) = {xbar}")
        return (xbar,) if name is None else (xbar, None)

    return x, show


def dropgrad(x: Any) -> Any:
    """``x`` unchanged going forward; no gradient flows back through it.

    Example:
        >>> import zygotepy as zp
        >>> zp.gradient(lambda a: a * zp.dropgrad(a), 3.0)
        (3.0,)
    """
    return x


rc.non_differentiable(dropgrad)  # a constant at every level, in reverse and forward mode


def ignore(fn: Callable[[], Any]) -> Any:
    """Run ``fn()`` without differentiating it (bookkeeping, logging, mutation): its result is
    a constant, at every level of differentiation, even if ``fn`` reads traced values.

    Example:
        >>> import zygotepy as zp
        >>> zp.gradient(lambda a: a * zp.ignore(lambda: a * 2), 3.0)
        (6.0,)
    """
    return _constant(call(fn))


def _constant(y: Any) -> Any:
    if type(y) in (tuple, list):
        return type(y)(_constant(v) for v in y)
    if type(y) is dict:
        return {k: _constant(v) for k, v in y.items()}
    return unbox_all(y)


def isderiving() -> bool:
    """``True`` while the calling code is being differentiated.

    Example:
        >>> import zygotepy as zp
        >>> seen = []
        >>> def f(x):
        ...     seen.append(zp.isderiving())
        ...     return x
        >>> _ = f(1.0); _ = zp.gradient(f, 1.0); seen
        [False, True]
    """
    return False


@adjoint(isderiving)
def _isderiving_adjoint() -> Any:
    return True, lambda ybar: None


def refresh() -> None:
    """A no-op kept for compatibility with Zygote: rules are found at call time.

    Example:
        >>> import zygotepy as zp
        >>> zp.refresh()
    """


def forward(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Deprecated alias of :func:`pullback` (Zygote's old name).

    Example:
        >>> import math, warnings, zygotepy as zp
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     y, back = zp.forward(math.sin, 0.0)
        >>> back(1.0)
        (1.0,)
    """
    warnings.warn("zygotepy.forward is deprecated; use zygotepy.pullback", DeprecationWarning, stacklevel=2)
    return pullback(f, *args, **kwargs)


def checkpointed(f: Callable[..., Any], *args: Any) -> Any:
    """``f(*args)``, with its intermediate values recomputed in the backward pass, not stored.

    NumPy's global random state is saved before the forward pass and restored around the
    recomputation, so seeded random code sees the same numbers twice. Implicit parameters used
    inside ``f`` get their gradients; a traced value captured by ``f`` from outside (not passed
    as an argument) raises an error instead of losing its gradient.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> zp.gradient(lambda x: zp.checkpointed(lambda h: np.tanh(h).sum(), x), np.zeros(2))
        (array([1., 1.]),)
    """
    levels = LEVELS.get()
    if not levels:
        return f(*args)
    trace = innermost(levels, args, {}, deep=True) or levels[-1]
    if not all(t.records for t in levels):
        return call(f, *args)  # nothing is stored in forward mode: checkpointing has nothing to save
    primals, routes, traced = [], [], []
    for i, a in enumerate(args):
        p, r = unbox(a, trace)
        primals.append(p)
        traced.append(r is not None)
        if r is not None:
            routes.append((i, r))
    random_state = np.random.get_state()
    token = LEVELS.set(levels[: trace.level])
    try:
        y = call(f, *primals)
    finally:
        LEVELS.reset(token)
    params = list(trace.params.values())
    routes += [(len(args) + k, trace.param_box(p)) for k, p in enumerate(params)]
    if not routes:
        return y

    def checkpointed_pullback(ybar: Any) -> tuple[Any, ...]:
        saved = np.random.get_state()
        np.random.set_state(random_state)
        try:
            with new_trace(ReverseTrace, trace.params) as sub:
                # arguments that were constants outside stay constants: no cotangent is built for them
                boxed = [_box_args(sub, p) if t else p for p, t in zip(primals, traced, strict=True)]
                seeds = _seeds(call(f, *boxed), sub, ybar)  # the recomputed output is not kept
            cts = backward(sub, seeds, once=True)
        finally:
            np.random.set_state(saved)
        param_cts = [cts[sub.param_boxes[id(p)]._zp_index] if id(p) in sub.param_boxes else ZeroTangent()
                     for p in params]
        arg_cts = (_assemble(b, cts) if t else ZeroTangent() for b, t in zip(boxed, traced, strict=True))
        return (NoTangent(), *arg_cts, *param_cts)

    return trace.box(y, checkpointed_pullback, tuple(routes), len(args) + len(params))


__all__ = ["checkpointed", "dropgrad", "forward", "hook", "ignore", "isderiving", "refresh", "showgrad"]
