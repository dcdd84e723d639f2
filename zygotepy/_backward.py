"""The backward pass: one reverse sweep over a trace's tape, no recursion.

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
from rulescore._contract import check_count, plain_cotangent
from rulescore._zeros import AbstractZero
from zygotepy._dispatch import call
from zygotepy._trace import LEVELS, Trace, gc_paused


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


def backward(trace: Trace, seeds: list[tuple[int, Any]], once: bool = False) -> list[Any]:
    """Cotangents of every node of ``trace``, given cotangents for some nodes (by tape index).

    ``once``: the tape is not swept again (``gradient``, a checkpointed block), so each pullback
    is dropped as soon as it has run, freeing the values it kept while the sweep goes on."""
    with gc_paused():
        return _sweep(trace, seeds, once)


def _sweep(trace: Trace, seeds: list[tuple[int, Any]], once: bool) -> list[Any]:
    pullbacks, links = trace.tape, trace.links
    cts: list[Any] = [None] * len(pullbacks)
    last = -1
    for i, ct in seeds:
        cts[i] = add(cts[i], ct)
        last = max(last, i)
    nested = bool(LEVELS.get())
    for i in range(last, -1, -1):
        ct = cts[i]
        if ct is None:
            continue
        pullback = pullbacks[i]
        if pullback is None:
            continue  # an input: its cotangent is the answer
        cts[i] = None
        if once:
            pullbacks[i] = None
        tc = type(ct)
        if tc is not float and tc is not np.ndarray and tc is not np.float64:
            ct = plain_cotangent(ct)  # the rule contract: pullbacks see plain, non-zero cotangents
            if ct is None:
                continue
        in_cts = call(pullback, ct) if nested else pullback(ct)
        link = links[i]
        if type(link) is int:  # one argument, a box (the commonest node: see trace.link)
            if type(in_cts) is not tuple or len(in_cts) != 2:
                check_count(in_cts, 1, pullback)  # raises, naming the pullback
            del pullback, ct  # with ``once``, what the pullback kept is freed now
            c = in_cts[1]
            if c is not None and not isinstance(c, AbstractZero):
                prev = cts[link]
                cts[link] = c if prev is None else prev + c if type(prev) is float is type(c) else add(prev, c)
            continue
        if type(in_cts) is not tuple or len(in_cts) != link[0] + 1:
            check_count(in_cts, link[0], pullback)
        del pullback, ct
        for k in range(1, len(link), 2):
            c = in_cts[link[k] + 1]
            if c is None or isinstance(c, AbstractZero):
                continue
            target = link[k + 1]
            if type(target) is int:
                prev = cts[target]
                cts[target] = c if prev is None else prev + c if type(prev) is float is type(c) else add(prev, c)
            else:
                for path, j in target:
                    part = extract(c, path)
                    if part is None or isinstance(part, AbstractZero):
                        continue
                    cts[j] = part if cts[j] is None else add(cts[j], part)
    return cts
