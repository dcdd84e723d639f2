"""The backward pass: one reverse sweep over a trace's tape, no recursion.

A node is ``(pullback, nargs, position, target, ...)``, or, for a rule applied to real scalars at
first order, a numbers node (:data:`zygotepy._trace.NUMBERS`): its partial derivatives,
which the sweep multiplies by a real cotangent itself (no call per node).

Boxes are numbered in the order they were recorded, which is a topological order, so walking
the tape backwards visits every node after all of its consumers. Each node's cotangent is
accumulated with ``rulescore.add`` (zeros and ``None`` are the identity; a primal-typed
cotangent from a legacy adjoint uses its own ``+``), handed to its pullback once, and then
freed. When outer traces are active, pullbacks run through the dispatcher so those traces
differentiate them (second derivatives).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import rulescore as rc
from rulescore._arithmetic import add
from rulescore._contract import check_count, plain_cotangent, wrong_cotangent
from rulescore._thunks import Thunk
from rulescore._zeros import AbstractZero
from zygotepy._adjoint_table import ADJOINTS
from zygotepy._dispatch import call
from zygotepy._runtime import runs_as_it_is
from zygotepy._trace import LEVELS, NUMBERS, Box, Trace, unbox_all


def extract(ct: Any, path: tuple[tuple[str, Any], ...]) -> Any:
    """The part of a structured cotangent at ``path`` (``("i", 0)``, ``("k", key)``, ``("a", name)``)."""
    for kind, key in path:
        ct = rc.unthunk(ct)
        if ct is None or isinstance(ct, AbstractZero):
            return ct
        if kind == "a":
            ct = getattr(ct, key)
        elif isinstance(ct, rc.Tangent) or not isinstance(ct, dict):
            ct = ct[key]
        else:
            ct = ct.get(key)
    return ct


def _scatter(cts: list[Any], c: Any, target: list[tuple[Any, int]], shapes: dict[int, tuple[int, ...]],
             position: int, pullback: Any) -> None:
    """Accumulate the parts of a structured cotangent ``c`` into the boxes it came from (each
    checked as :func:`backward` checks a cotangent of one box)."""
    for path, j in target:
        part = extract(c, path)
        if part is None or isinstance(part, AbstractZero):
            continue
        v = unbox_all(part)
        tv = type(v)
        if (tv is np.ndarray and v.shape != shapes.get(j, v.shape)) or tv is str or tv is bytes:
            raise wrong_cotangent(v, shapes.get(j), position, pullback, TABLES)
        cts[j] = part if cts[j] is None else add(cts[j], part)


def _check_other(c: Any, target: Any, shapes: dict[int, tuple[int, ...]], position: int,
                 pullback: Any) -> None:
    """:func:`backward`'s check of a cotangent that is an outer level's box (nested
    differentiation: the array inside is checked) or not a number at all (refused)."""
    v = unbox_all(c)
    tv = type(v)
    if (tv is np.ndarray and v.shape != shapes.get(target, v.shape)) or tv is str or tv is bytes:
        raise wrong_cotangent(v, shapes.get(target), position, pullback, TABLES)


def _numeric_box(b: Box) -> bool:
    """Whether an outer level's box holds a number or an array (under any further boxes): a
    cotangent as plain as it gets, which ``plain_cotangent`` would hand back after three
    ``isinstance`` tests, each a Python property call on a box.

    Example:
        >>> from zygotepy._trace import Trace
        >>> _numeric_box(Box(2.0, Trace(()), 0)), _numeric_box(Box((1.0, 2.0), Trace(()), 0))
        (True, False)
    """
    v = b._zp_value
    while type(v) is Box:
        v = v._zp_value
    tv = type(v)
    return tv is float or tv is np.float64 or tv is np.ndarray


def _numbers_pullback_node(node: tuple[Any, ...]) -> tuple[Any, ...]:
    """A numbers node (see :data:`zygotepy._trace.NUMBERS`) as a pullback node, for a
    cotangent that is not a real number: an outer level's box, a 0-d array, a complex number (each
    product projected onto its argument's type, the partial's, through the dispatcher, so outer
    levels see it).

    Example:
        >>> pullback, nargs, *routes = _numbers_pullback_node((NUMBERS, 2.0, 5, -1.0, 7))
        >>> pullback(np.array(3.0)), nargs, routes
        ((NoTangent(), 6.0, -3.0), 2, [0, 5, 1, 7])
    """
    partials = node[1::2]

    def recorded_partials_pullback(ybar: Any) -> tuple[Any, ...]:
        return (rc.NoTangent(), *[call(rc.project, d, ybar * d) for d in partials])

    routes = [part for k, target in enumerate(node[2::2]) for part in (k, target)]
    return (recorded_partials_pullback, len(partials), *routes)


def _direct_pullbacks(levels: tuple[Trace, ...]) -> bool:
    """Whether the sweep may call a pullback that the dispatcher would run as it is
    (:func:`~zygotepy._runtime.runs_as_it_is`: a rule's, already rewritten) directly under
    ``levels``: outer levels without implicit parameters or a log, as ``_dispatch.call`` asks
    first. (Under no level every pullback is called directly.)"""
    return bool(levels) and not levels[-1].with_params and levels[-1].log is None


#: The rule tables a pullback on a tape comes from: an error names its rule from them.
TABLES = (rc.rrule, ADJOINTS)


def backward(trace: Trace, seeds: list[tuple[int, Any]], once: bool = False) -> list[Any]:
    """Cotangents of every node of ``trace``, given cotangents for some nodes (by tape index).

    ``once``: the tape is not swept again (``gradient``, a checkpointed block), so each pullback
    is dropped as soon as it has run, freeing the values it kept while the sweep goes on."""
    tape, shapes = trace.tape, trace.shapes
    ndarray, float64 = np.ndarray, np.float64  # (local names: read on every node)
    cts: list[Any] = [None] * len(tape)
    last = -1
    for i, ct in seeds:
        cts[i] = add(cts[i], ct)
        last = max(last, i)
    levels = LEVELS.get()
    nested = bool(levels)
    direct = _direct_pullbacks(levels)
    for i in range(last, -1, -1):
        ct = cts[i]
        if ct is None:
            continue
        node = tape[i]
        if node is None:
            continue  # an input: its cotangent is the answer
        cts[i] = None
        tc = type(ct)
        if tc is float or tc is float64:
            if node[0] is NUMBERS:  # the sweep's own products
                d = node[1]
                c = ct * d
                if tc is float64 and type(d) is float:  # (a Python float's partial is one: so is
                    c = float(c)  # its cotangent)
                target = node[2]
                prev = cts[target]
                if prev is None:
                    cts[target] = c
                else:
                    tp = type(prev)
                    cts[target] = prev + c if tp is float or tp is float64 else add(prev, c)
                if len(node) == 5:  # (two traced arguments: unrolled, the sweep's hottest lines)
                    d = node[3]
                    c = ct * d
                    if tc is float64 and type(d) is float:
                        c = float(c)
                    target = node[4]
                    prev = cts[target]
                    if prev is None:
                        cts[target] = c
                    else:
                        tp = type(prev)
                        cts[target] = prev + c if tp is float or tp is float64 else add(prev, c)
                elif len(node) > 5:
                    for k in range(3, len(node), 2):
                        d = node[k]
                        c = ct * d
                        if tc is float64 and type(d) is float:
                            c = float(c)
                        target = node[k + 1]
                        prev = cts[target]
                        if prev is None:
                            cts[target] = c
                        else:
                            tp = type(prev)
                            cts[target] = prev + c if tp is float or tp is float64 else add(prev, c)
                continue
        elif tc is not ndarray and (tc is not Box or not _numeric_box(ct)):
            # the rule contract: pullbacks see plain, non-zero cotangents (an outer level's box of a
            # number or an array is one)
            ct = plain_cotangent(ct)
            if ct is None:
                continue
        if once:  # (a numbers node keeps numbers only: left as it is)
            tape[i] = None
        n = len(node)  # (see _trace.node) two routes unpacked, any more read as the loop goes
        if n & 1:  # a numbers node (odd: a mark, then pairs) given a cotangent that is not a real number
            node = _numbers_pullback_node(node)
            n = len(node)
        if n == 4:
            pullback, nargs, pos, target = node
            pos2, rest = -1, None
        elif n == 2:
            continue  # no traced arguments: nothing to send the cotangent to
        else:
            pullback, nargs, pos, target, pos2, target2 = node if n == 6 else node[:6]
            rest, k = (node, 6) if n > 6 else (None, n)
        del node
        in_cts = pullback(ct) if not nested or (direct and runs_as_it_is(pullback)) else call(pullback, ct)
        if type(in_cts) is not tuple or len(in_cts) != nargs + 1:
            check_count(in_cts, nargs, pullback, None, TABLES)  # raises, naming the pullback and its rule
        del ct
        while True:
            c = in_cts[pos + 1]
            tc = type(c)
            if tc is Thunk and type(target) is int:  # a lazy cotangent of a traced argument: its
                c = c.unthunk()  # node reads it in any case, so now (checked below as any other);
                tc = type(c)  # only the thunks of constants go unread
            if tc is ndarray and type(target) is int:  # the commonest (real scalars are mostly numbers nodes)
                if (s := shapes.get(target)) is not None and s != c.shape:
                    raise wrong_cotangent(c, s, pos + 1, pullback, TABLES)
                prev = cts[target]  # (an array of the shape checked when it was accumulated)
                cts[target] = c if prev is None else prev + c if type(prev) is ndarray else add(prev, c)
            elif (tc is float or tc is float64) and type(target) is int:  # no shape
                prev = cts[target]
                cts[target] = c if prev is None else prev + c if type(prev) is tc else add(prev, c)
            elif tc is Box and type(target) is int:  # an outer level's box (nested differentiation)
                v = c._zp_value
                while type(v) is Box:
                    v = v._zp_value
                tv = type(v)
                if tv is ndarray:
                    if (s := shapes.get(target)) is not None and s != v.shape:
                        raise wrong_cotangent(v, s, pos + 1, pullback, TABLES)
                elif tv is not float and tv is not float64:
                    _check_other(c, target, shapes, pos + 1, pullback)
                prev = cts[target]
                if prev is None:
                    cts[target] = c
                else:  # two numbers or arrays: add's own last step, without its isinstance tests (each
                    p = prev  # a Python property call on a box)
                    while type(p) is Box:
                        p = p._zp_value
                    tp = type(p)
                    numbers = (tp is float or tp is float64 or tp is ndarray) and (
                        tv is float or tv is float64 or tv is ndarray)
                    cts[target] = prev + c if numbers else add(prev, c)
            elif c is not None and not isinstance(c, AbstractZero):
                if type(target) is int:
                    if tc is str or tc is bytes:
                        _check_other(c, target, shapes, pos + 1, pullback)
                    prev = cts[target]
                    cts[target] = c if prev is None else add(prev, c)
                else:
                    _scatter(cts, c, target, shapes, pos + 1, pullback)
            if pos2 < 0:
                break
            pos, target = pos2, target2
            if rest is not None and k < n:
                pos2, target2 = rest[k], rest[k + 1]
                k += 2
            else:
                pos2 = -1
        del pullback  # with ``once``, what the pullback kept is freed now
    return cts
