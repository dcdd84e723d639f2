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
from rulescore._checks import callable_name
from rulescore._zeros import NoTangent, ZeroTangent
from zygotepy._adjoint import adjoint
from zygotepy._backward import backward
from zygotepy._dispatch import RANDOM_DRAWS, call, innermost, random_state, set_random_state, unbox
from zygotepy._errors import UntraceableError
from zygotepy._reverse import ReverseTrace, _assemble, _box_args, _seeds, pullback
from zygotepy._trace import LEVELS, Box, Trace, isolated, new_trace, unbox_all
from zygotepy._views import hand_over, release_escaped


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
    """``x`` unchanged going forward; prints ``x``'s gradient when it arrives, labelled ``name`` or,
    without one, by the argument's source text at the call (Zygote's ``@showgrad``), or by the
    call's file and line where that text cannot be read.

    Example:
        >>> import zygotepy as zp
        >>> zp.gradient(lambda a: zp.showgrad(a, "a") * 3.0, 2.0)
        ∂(a) = 3.0
        (3.0,)
        >>> zp.gradient(lambda a, b: zp.showgrad(a * b) + zp.showgrad(b), 2.0, 5.0)
        ∂(b) = 1.0
        ∂(a * b) = 1.0
        (5.0, 3.0)
    """
    return x


def _argument_text(function_name: str) -> str:
    """The source text of the first argument of the call of ``function_name`` running in the nearest
    frame outside zygotepy and rulescore, or ``file:line`` of that call."""
    import ast
    import linecache
    import os
    import sys

    engine = tuple(os.path.dirname(m.__file__ or "") + os.sep for m in (rc, sys.modules[__name__]))
    frame = sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(engine):
        frame = frame.f_back
    code, where = frame.f_code, f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    # the call being made (Python 3.11+): the rewriter keeps the user's source positions
    first, last, start, end = list(code.co_positions())[frame.f_lasti // 2] \
        if hasattr(code, "co_positions") else (None, None, None, None)
    candidates = []
    if first is not None and last is not None and start is not None and end is not None and lines:
        text = "".join(lines[first - 1:last])
        candidates.append(text[start:len(text) - len(lines[last - 1]) + end])
    if lines and 0 < frame.f_lineno <= len(lines):
        candidates.append(lines[frame.f_lineno - 1].strip())
    for text in candidates:
        try:
            tree = ast.parse(text.strip(), mode="eval") if text.strip() else None
        except SyntaxError:
            tree = None  # a line inside a multi-line statement
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
                 and ast.unparse(n.func).split(".")[-1] == function_name] if tree is not None else []
        if len(calls) == 1:
            return ast.unparse(calls[0].args[0])
    return where


@adjoint(showgrad)
def _showgrad_adjoint(x: Any, name: str | None = None) -> Any:
    label = name if name is not None else _argument_text("showgrad")

    def show(xbar: Any) -> Any:
        print(f"∂({label}) = {xbar}")
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
    # what its adjoint answers wherever the adjoint applies (the innermost level records
    # pullbacks), for code that runs as it is inside a differentiation
    levels = LEVELS.get()
    return bool(levels) and levels[-1].records


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

    The recomputation draws the same random numbers: every ``np.random.Generator`` and
    ``RandomState`` (NumPy's global one included) that ``f`` draws from, captured or passed in,
    is put back to its state before the forward pass while ``f`` is recomputed, then returned
    to where it was. Implicit parameters used inside ``f`` get their gradients; a traced value
    captured by ``f`` from outside (not passed as an argument) raises an error instead of
    losing its gradient.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> zp.gradient(lambda x: zp.checkpointed(lambda h: np.tanh(h).sum(), x), np.zeros(2))
        (array([1., 1.]),)
        >>> rng = np.random.default_rng(0)
        >>> def dropout(h):
        ...     return np.sum(h * (rng.random(h.shape) > 0.5))
        >>> zp.gradient(lambda x: zp.checkpointed(dropout, x), np.ones(4))
        (array([1., 0., 0., 0.]),)
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

    implicit = trace.params  # not the trace: its tape will hold run, and a cycle would outlive it

    def run(draws: dict[int, tuple[Any, Any]]) -> tuple[Trace, list[Any], Any]:
        """``f`` on a trace of its own (outer levels active), noting the random sources it draws from."""
        token = RANDOM_DRAWS.set(draws)
        try:
            with new_trace(ReverseTrace, implicit) as sub:
                # arguments that were constants outside stay constants: no cotangent is built for them
                boxed = [_box_args(sub, p) if t else p for p, t in zip(primals, traced, strict=True)]
                out = call(f, *boxed)
        finally:
            RANDOM_DRAWS.reset(token)
        enclosing = RANDOM_DRAWS.get()
        if enclosing is not None:  # a region inside a watched region: the enclosing one drew too
            for key, entry in draws.items():
                enclosing.setdefault(key, entry)
        return sub, boxed, out

    global_state = np.random.get_state()  # NumPy's global functions draw without a method call
    drawn: dict[int, tuple[Any, Any]] = {}
    token = LEVELS.set(levels[: trace.level])
    try:
        sub, _, out = run(drawn)
    finally:
        LEVELS.reset(token)
    y = unbox(out, sub)[0]
    for home, new in sub.shadows.values():  # writes into arrays: as NumPy leaves them, or refused
        if type(new) is Box and new._zp_trace is sub:
            raise UntraceableError(
                f"checkpointed: {callable_name(f)} writes a value computed from its arguments into an array "
                f"of shape {home.shape} it did not create, whose derivative the checkpoint cannot carry "
                "(only the returned value's). Return the value and write it outside the checkpointed call.")
    hand_over(sub, levels)
    sub.tape.clear()  # the forward tape is dropped here: only the inputs are kept
    sub.shapes.clear()
    trace.spent.append(sub)  # what f stored where it outlives the call raises until trace ends, then is plain
    del sub, out
    forward_print = _fingerprint(y)
    params = list(trace.params.values())
    routes += [(len(args) + k, trace.param_box(p)) for k, p in enumerate(params)]
    if not routes:
        return y
    sources = list(drawn.values())

    def checkpointed_pullback(ybar: Any) -> tuple[Any, ...]:
        now = [(source, random_state(source)) for source, _ in sources]
        global_now = np.random.get_state()
        np.random.set_state(global_state)
        for source, before in sources:
            set_random_state(source, before)
        try:
            sub, boxed, out = isolated(run, {})  # (the backward pass runs in the caller's context)
            if _fingerprint(unbox(out, sub)[0]) != forward_print:
                raise UntraceableError(
                    f"checkpointed: recomputing {callable_name(f)} in the backward pass gave another "
                    "result than the forward pass, so its gradient would be wrong. It reads something "
                    "that changed in between (random numbers drawn by code without source, the time, "
                    "state updated after the call). Draw random numbers from an np.random.Generator "
                    "called in Python code, pass them in as an argument, or do not checkpoint it.")
            seeds = _seeds(out, sub, ybar)
            del out  # the recomputed output is not kept
            cts = backward(sub, seeds, once=True)
            arg_cts = [_assemble(b, cts) if t else ZeroTangent() for b, t in zip(boxed, traced, strict=True)]
            del boxed
            release_escaped(sub)  # what the recomputation stored where it outlives it: plain values
        finally:
            for source, state in now:
                set_random_state(source, state)
            np.random.set_state(global_now)
        param_cts = [cts[sub.param_boxes[id(p)]._zp_index] if id(p) in sub.param_boxes else ZeroTangent()
                     for p in params]
        return (NoTangent(), *arg_cts, *param_cts)

    return trace.box(y, checkpointed_pullback, tuple(routes), len(args) + len(params))


def _fingerprint(y: Any) -> tuple[Any, ...]:
    """The numbers in ``y`` (shapes, dtypes and a hash of their bytes), to tell a recomputation
    that differs from the forward pass without keeping the forward pass's output."""
    prints = []
    for leaf in rc.tree_flatten(y)[0]:
        v = unbox_all(leaf)
        if isinstance(v, (np.ndarray, np.generic, int, float, complex)):
            a = np.asarray(v)
            prints.append((a.shape, a.dtype.str, hash(a.tobytes())))
    return tuple(prints)


__all__ = ["checkpointed", "dropgrad", "forward", "hook", "ignore", "isderiving", "refresh", "showgrad"]
