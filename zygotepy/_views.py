"""Arrays that share memory: writes through a view or an alias, made exact.

In NumPy ``row = out[0]; row += v`` changes ``out``: a basic slice, a transpose or a reshape is
a view of the array that owns the memory (its ``base``), and a name, a dict entry or an
attribute may hold the very array another one holds. A traced write cannot change that memory
in place (the tape's pullbacks keep the old values), so it is functional, as JAX's
``x.at[i].set(v)`` or Zygote's ``Buffer``: the owner's traced value becomes
``setindex(owner, where, v)`` (``where``: the view's elements in the owner, found from its
offset and strides) and is kept on the trace (:attr:`Trace.shadows`). From then on the
dispatcher substitutes that value for the owner, and the matching part of it for any view, in
every call, whichever reference reaches it (as it does for implicit parameters), so all of them
read the update. Views the engine cannot place in an owner (made by C code such as
``np.lib.stride_tricks``, over another dtype, or repeating elements) are refused.

A rule whose output is a view of a traced argument (``y[1:3]``, ``y.T``) is noted
(:func:`note_view`): a write through that view then updates the traced array it came from.
"""

from __future__ import annotations

import collections
import functools
import gc
import operator
import re
import sys
import types
import warnings
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._checks import callable_name
from rulescore.rules.indexing import setindex
from zygotepy._caches import BoundedCache
from zygotepy._errors import UntraceableError, user_code
from zygotepy._trace import LEVELS, Box, Trace, dispatch, note_escape, opaque_callable, unbox_all

#: Marks an owner whose traced value is unknown (two different boxes hold it).
_UNKNOWN: Any = None


def owner(v: np.ndarray) -> np.ndarray | None:
    """The array owning ``v``'s memory (``v`` itself if it owns it), or ``None`` when that is not
    an array NumPy made (``np.frombuffer``, ``np.lib.stride_tricks``).

    Example:
        >>> import numpy as np
        >>> out = np.zeros((2, 3))
        >>> owner(out[0]) is out, owner(out) is out
        (True, True)
        >>> owner(np.lib.stride_tricks.sliding_window_view(out.ravel(), 2)) is None
        True
    """
    base = v.base
    if base is None:
        return v
    return base if type(base) is np.ndarray and base.base is None else None


def _slots(a: np.ndarray, start: int) -> np.ndarray | None:
    """The memory slot (in items, from ``start``) of every element of ``a``."""
    item = a.itemsize
    slots = np.full(a.shape, start, dtype=np.intp)
    for axis, (n, stride) in enumerate(zip(a.shape, a.strides, strict=True)):
        if stride % item:
            return None
        shape = [1] * a.ndim
        shape[axis] = n
        slots = slots + (np.arange(n, dtype=np.intp) * (stride // item)).reshape(shape)
    return slots


def positions(v: np.ndarray, own: np.ndarray) -> Any:
    """The index of ``v``'s elements in ``own``, its owner (``own[positions(v, own)]`` equals
    ``v``), or ``None`` when there is none: another dtype, memory ``own`` does not lay out
    densely, or elements repeated (a write through ``v`` would then be ambiguous).

    Example:
        >>> import numpy as np
        >>> out = np.arange(6.0).reshape(2, 3)
        >>> where = positions(out[:, 1], out)
        >>> out[where]
        array([1., 4.])
        >>> positions(np.broadcast_to(out[0], (2, 3)), out) is None
        True
    """
    if v.dtype != own.dtype or not (own.flags.c_contiguous or own.flags.f_contiguous):
        return None
    start, rest = divmod(v.__array_interface__["data"][0] - own.__array_interface__["data"][0], own.itemsize)
    mine, theirs = _slots(v, start), _slots(own, 0)
    if rest or mine is None or theirs is None:
        return None
    flat = mine.ravel()
    if flat.size and (flat.min() < 0 or flat.max() >= own.size):
        return None
    lookup = np.empty(own.size, dtype=np.intp)
    lookup[theirs.ravel()] = np.arange(own.size, dtype=np.intp)
    pos = lookup[flat]
    if np.unique(pos).size < pos.size:
        return None
    if own.ndim == 0:
        return ...
    return np.unravel_index(pos.reshape(v.shape), own.shape)


def basic_index(v: np.ndarray, own: np.ndarray) -> tuple[slice, ...] | None:
    """Slices of ``own`` giving ``v`` (``own[basic_index(v, own)]`` is ``v``, a view), when ``v``
    is ``own`` sliced axis by axis (no transpose or reshape), else ``None``.

    Example:
        >>> import numpy as np
        >>> out = np.zeros((2, 3))
        >>> basic_index(out[:, ::-1][:, 1:], out)
        (slice(0, 2, 1), slice(1, None, -1))
        >>> basic_index(out.T, out) is None
        True
    """
    if v.ndim != own.ndim or v.dtype != own.dtype or v.size == 0:
        return None
    offset = v.__array_interface__["data"][0] - own.__array_interface__["data"][0]
    starts = [0] * own.ndim
    for k in sorted(range(own.ndim), key=lambda k: -abs(own.strides[k])):
        if own.shape[k] > 1 and own.strides[k] > 0:
            starts[k], offset = divmod(offset, own.strides[k])
    steps = [1 if n == 1 else s // own.strides[k] if own.strides[k] and s % own.strides[k] == 0 else 0
             for k, (n, s) in enumerate(zip(v.shape, v.strides, strict=True))]
    if offset or 0 in steps:
        return None
    index = tuple(slice(a, None if a + t * n < 0 else a + t * n, t)
                  for a, t, n in zip(starts, steps, v.shape, strict=True))
    view = own[index]
    same = view.shape == v.shape and view.strides == v.strides and (
        view.__array_interface__["data"][0] == v.__array_interface__["data"][0])
    return index if same else None


def _refuse_view(v: np.ndarray, why: str) -> UntraceableError:
    return UntraceableError(
        f"inside {user_code()}, an array of shape {v.shape} written or read after an in-place write "
        f"shares memory with another in a way the engine cannot follow ({why}), so the write could "
        "not reach every reference. Copy it first (`v = v.copy()`) or build the new array "
        "functionally (np.where, np.concatenate)")


def _refuse_subclass(v: np.ndarray) -> UntraceableError:
    return UntraceableError(
        f"inside {user_code()}, a traced value is written in place into a {type(v).__name__} (a subclass "
        "of np.ndarray, such as np.memmap): the engine follows in-place writes only in plain arrays, so "
        "the other references to it would not see the write. Pass a plain array over the same data "
        "(np.asarray(x)), or build the new value functionally (x = x * 3.0, np.where)")


def _where(v: np.ndarray, own: np.ndarray) -> Any:
    where = positions(v, own)
    if where is None:
        raise _refuse_view(v, "a view over another dtype, with repeated elements, or of memory "
                              "NumPy does not own, as np.lib.stride_tricks makes")
    return where


def note_view(trace: Trace, y: Any, args: tuple[Any, ...]) -> None:
    """A rule gave ``y``, maybe a view of memory a traced argument holds (an array, or an outer
    level's box of one: nested differentiation): remember which of ``trace``'s boxes holds that
    memory, so a write through ``y`` reaches it (see the module)."""
    value = y
    while type(value) is Box:  # (unbox_all, inlined: nested levels meet a view on most rule calls)
        value = value._zp_value
    own = value.base if type(value) is np.ndarray else None
    if own is None:
        return
    for a in args:
        if type(a) is Box and a._zp_trace is trace:
            v = a._zp_value
            while type(v) is Box:
                v = v._zp_value
            if v is own:
                entry = trace.owners.get(id(own))
                if entry is None:
                    trace.owners[id(own)] = (own, a)
                elif entry[1] is not a:
                    trace.owners[id(own)] = (own, _UNKNOWN)  # two boxes of one array
            elif type(v) is np.ndarray and v.base is own and id(own) not in trace.owners:
                trace.owners[id(own)] = (own, _UNKNOWN)  # a view of memory no box is known to hold


def shadowed(levels: tuple[Trace, ...], v: Any) -> bool:
    """Whether the array ``v`` (a primal) shares memory some active trace has written or noted, or
    is (a view of) an implicit parameter: a write into it, even of a plain value, is then made
    into its traced value, never into memory while the tape may still read it.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> W = np.array([0.5, 1.0])
        >>> def loss():
        ...     y = np.sum(W * W)
        ...     W[0] = 3.0  # a plain value into a parameter the tape read
        ...     return y
        >>> zp.gradient(loss, zp.params(W))[W], W
        (array([1., 2.]), array([3., 1.]))
    """
    own = owner(v)
    for trace in levels:
        if trace.shadows or trace.owners or trace.params:
            for table in (trace.shadows, trace.owners, trace.params):
                if id(v) in table or (own is not None and id(own) in table):
                    return True
    return False


def locate(levels: tuple[Trace, ...], target: Any) -> tuple[np.ndarray, Any, Any]:
    """``(home, current, where)`` for a write into ``target`` (an array or a box of one): the
    array whose traced value the write changes, that value now, and the index of ``target``'s
    elements in it (``None`` when ``target`` is ``home``)."""
    v = unbox_all(target)
    for trace in reversed(levels):
        entry = trace.shadows.get(id(v))
        if entry is not None and entry[0] is v:
            return v, entry[1], None
    own = owner(v)
    if own is None:
        raise _refuse_view(v, "a view of memory NumPy does not own, as np.lib.stride_tricks or "
                              "np.frombuffer make")
    if own is v:
        for trace in levels:
            entry = trace.owners.get(id(v))
            if entry is not None and entry[0] is v and entry[1] is _UNKNOWN:
                raise _refuse_view(v, "a copy standing for a view the engine could not slice again")
        return v, target, None
    for trace in reversed(levels):
        for table in (trace.shadows, trace.owners):
            entry = table.get(id(own))
            if entry is not None and entry[0] is own:
                if entry[1] is _UNKNOWN:
                    raise _refuse_view(v, "a view of an array held by several traced values")
                return own, entry[1], _where(v, own)
    if type(target) is Box:
        trace = target._zp_trace
        if trace.records and trace.tape[target._zp_index] is None:
            return v, target, None  # an argument that is a view of the caller's array: its own value
        raise _refuse_view(v, "a view of an array the engine did not see being made")
    return own, own, _where(v, own)


def write(levels: tuple[Trace, ...], target: Any, index: Any, value: Any) -> None:
    """``target[index] = value`` (``index`` ``None``: all of it) into the traced value of the array
    owning ``target``'s memory, never in place (through the dispatcher: an implicit parameter's
    array becomes its box there). A read-only array refuses the write, as NumPy does.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> frozen = np.ones(2)
        >>> frozen.flags.writeable = False
        >>> def f(a):
        ...     a[0] = 5.0
        ...     return np.sum(a)
        >>> zp.gradient(f, frozen)
        Traceback (most recent call last):
        ValueError: assignment destination is read-only
    """
    if type(unbox_all(target)) is not np.ndarray:
        raise _refuse_subclass(unbox_all(target))
    home, current, where = locate(levels, target)  # (a view the engine cannot follow is refused first)
    if not unbox_all(target).flags.writeable:
        raise ValueError("assignment destination is read-only")
    if index is not None:
        index = tuple(unbox_all(i) for i in index) if type(index) is tuple else unbox_all(index)
    if where is None or where is Ellipsis:
        index = ... if index is None else index
    else:
        index = where if index is None else tuple(p[index] for p in where)
    record_write(levels, home, dispatch(setindex, current, index, value))


def ufunc_into(levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, out=o, where=w)`` (``fn`` a ufunc, a ufunc's ``reduce``, ``accumulate`` ..., or
    any other function writing into ``out=``: ``np.dot``, ``np.clip``, ``np.sum``) with a traced
    value involved: the result (kept from ``o`` where a ufunc's ``w`` is
    False) written into the traced value of ``o`` (:func:`write`), and ``o`` returned, as NumPy
    returns it."""
    method = type(fn) is not np.ufunc
    if not method and len(args) > fn.nin:  # out given positionally
        args, kwargs = args[:fn.nin], {**kwargs, "out": args[fn.nin]}
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    targets = out if type(out) is tuple else (out,)
    where = True if method else kwargs.pop("where", True)
    if not any(_holds_box(v) for v in (*args, *kwargs.values(), *targets, where)) and not any(
            type(t) is np.ndarray and shadowed(levels, t) for t in targets):
        return fn(*args, out=out, **kwargs) if method else fn(*args, out=out, where=where, **kwargs)
    target = targets[0]
    if len(targets) != 1 or np.result_type(unbox_all(target)).kind not in "fc":
        raise UntraceableError(
            f"inside {user_code()}, {callable_name(fn)} writes a traced value into out= "
            f"{'arrays' if len(targets) != 1 else 'an array of ' + str(unbox_all(target).dtype)}, "
            "where its derivative would be lost: use the returned value (drop out=) instead")
    value = dispatch(fn, *args, **kwargs)
    if where is not True:
        value = dispatch(np.where, where, value, latest(levels, target))
    write(levels, target, None, value)
    return out


def _holds_box(x: Any) -> bool:
    """Whether ``x`` is a box or a tuple, list or dict holding one (``np.concatenate([a, b], out=c)``)."""
    t = type(x)
    if t is Box:
        return True
    if t is tuple or t is list:
        return any(_holds_box(v) for v in x)
    if t is dict:
        return any(_holds_box(v) for v in x.values())
    return False


def record_write(levels: tuple[Trace, ...], home: np.ndarray, new: Any) -> None:
    """``home``'s traced value is now ``new``: keep it on the innermost trace ``new`` belongs to,
    and make that trace and the ones inside it substitute it (no fast path from now on)."""
    trace = new._zp_trace if type(new) is Box else levels[-1]
    trace.shadows[id(home)] = (home, new)
    for t in levels[trace.level:]:
        t.with_params = True
        t.fast_path = t.numbers_path = None


def latest(levels: tuple[Trace, ...], a: Any) -> Any:
    """The current traced value of the array ``a`` (or a box of one) after writes through views
    and aliases, or ``a`` itself when none reached it."""
    while True:
        v = unbox_all(a)
        if type(v) is not np.ndarray:
            return a
        new = None
        own = owner(v)
        for trace in reversed(levels):
            shadows = trace.shadows
            if not shadows:
                continue
            entry = shadows.get(id(v))
            if entry is not None and entry[0] is v:
                new = entry[1]
                break
            if own is not None and own is not v:
                entry = shadows.get(id(own))
                if entry is not None and entry[0] is own:
                    new = _view_of(trace, v, own, entry[1])
                    break
        if new is None or new is a:
            return a
        a = new


def _view_of(trace: Trace, v: np.ndarray, own: np.ndarray, current: Any) -> Any:
    """The part of ``own``'s traced value ``current`` that its view ``v`` shows: a view of it
    when slices give ``v``, so a write through it reaches ``own``; else a copy, marked held by
    no known value, so a write through it is refused rather than lost."""
    index = basic_index(v, own)
    if index is not None:
        return dispatch(operator.getitem, current, index)
    part = dispatch(operator.getitem, current, _where(v, own))
    value = unbox_all(part)
    if type(value) is np.ndarray:
        trace.owners[id(value)] = (value, _UNKNOWN)
    return part


def settle(levels: tuple[Trace, ...], out: Any) -> Any:
    """A differentiated function's output with every array in it (through tuples, lists, dicts
    and objects' fields) replaced by its current traced value (see :func:`latest`)."""
    for t in levels:  # (a loop: no generator frame per differentiation)
        if t.shadows:
            return _settle(levels, out, set())
    return out


def _settle(levels: tuple[Trace, ...], out: Any, seen: set[int]) -> Any:
    t = type(out)
    if t is np.ndarray or t is Box:
        return latest(levels, out)
    if isinstance(out, _LEAVES) or opaque_callable(out) or id(out) in seen:
        return out
    seen.add(id(out))
    if t is tuple or t is list:
        return t(_settle(levels, v, seen) for v in out)
    if t is dict:
        return {k: _settle(levels, v, seen) for k, v in out.items()}
    if not (hasattr(out, "__dict__") or hasattr(out, "__slots__")):
        return out
    fields = rc.fields_of(out)
    updates = {k: new for k, v in fields.items() if (new := _settle(levels, v, seen)) is not v}
    return rc.rebuild(out, updates) if updates else out


_LEAVES = (np.generic, int, float, complex, str, bytes, type)


def write_back(trace: Trace) -> None:
    """Once ``trace``'s tape is spent (``gradient`` after its backward pass, at the outermost
    level), put the final values of the arrays written through views and aliases into their
    memory, as NumPy would have: a global buffer or an argument written by the function holds
    the new values afterwards. Never earlier: the tape's pullbacks still read the old ones.

    A differentiation inside another (a nested ``gradient``) hands its writes to the traces
    around it instead: the written arrays' values, with this trace's level unboxed, become
    their traced values there, so the enclosing function reads them (and their derivatives),
    and the outermost differentiation writes them into memory."""
    if trace.outer:
        hand_over(trace, trace.outer)
        return
    for home, new in trace.shadows.values():
        if home.flags.writeable:
            home[...] = unbox_all(new)


def write_back_keeping(trace: Trace) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`write_back` for a tape that is swept later (``pullback``'s ``back``): each array
    written, with a copy of the values it held before (see :func:`as_before`).

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> x = np.array([1.0, 2.0])
        >>> def f(v):
        ...     y = np.sum(v * v)
        ...     v += 1.0
        ...     return y
        >>> y, back = zp.pullback(f, x)
        >>> x, back(1.0)  # written as NumPy would; the gradient at the point f was called at
        (array([2., 3.]), (array([2., 4.]),))
    """
    if trace.outer:
        hand_over(trace, trace.outer)
        return []
    kept = []
    for home, new in trace.shadows.values():
        if home.flags.writeable:
            kept.append((home, home.copy()))
            home[...] = unbox_all(new)
    return kept


def as_before(kept: list[tuple[np.ndarray, np.ndarray]], sweep: Any, *args: Any) -> Any:
    """``sweep(*args)`` while each array of ``kept`` (from :func:`write_back_keeping`) holds the
    values it held before the differentiated function wrote into it, which the tape's rules read;
    afterwards each holds what it held when this began (the user may have changed it since).

    The arrays are put back by one C call each way (``deque.extend`` over ``map(np.copyto, ...)``):
    Python runs a signal handler only after a call or at the start of a Python function, so a
    ``KeyboardInterrupt`` cannot leave them half restored.

    Example:
        >>> import numpy as np
        >>> a = np.array([2.0])
        >>> as_before([(a, np.array([1.0]))], lambda: float(a[0])), a
        (1.0, array([2.]))
    """
    homes = [home for home, _ in kept]
    restore = map(np.copyto, homes, [home.copy() for home in homes])
    back_to_old = map(np.copyto, homes, [old for _, old in kept])
    try:
        _consume(back_to_old)
        return sweep(*args)
    finally:
        _consume(restore)


#: Runs an iterator to its end in one C call.
_consume = collections.deque[Any](maxlen=0).extend


def hand_over(trace: Trace, levels: tuple[Trace, ...]) -> None:
    """Record the writes ``trace`` made (its :attr:`Trace.shadows`) on ``levels``, the traces
    still running around it, with ``trace``'s own level unboxed (see :func:`write_back`)."""
    for home, new in trace.shadows.values():
        record_write(levels, home, new._zp_value if type(new) is Box and new._zp_trace is trace else new)


def release_escaped(trace: Trace, kept: int = 0) -> None:
    """At the end of a differentiation: a traced value the call stored where it outlives the call
    (an object's attribute, a dict, a list, a closure cell) is replaced by its value there (plain
    at the outermost level; inside another differentiation, that one's traced value, replaced in
    turn when it ends), as the arrays written are (:func:`write_back`); one held where it cannot
    be replaced (a tuple in a set, say) gets a warning naming where. A box of a finished trace
    would only raise at its next use. Implicit parameters' boxes (an attribute set to a
    parameter inside the loss) are replaced by the parameter arrays, the same way, and so are
    the values of the traces that ended inside this one (:attr:`Trace.spent`).

    Finding them costs a few reference counts when nothing escaped: each live box refers to its
    trace, and the trace's own tables (implicit parameters, views, writes) hold some boxes, each
    a known number of times; the heap is searched only when a box is alive elsewhere. ``kept``:
    references to the trace the caller keeps on purpose (``pullback``'s ``back``).
    """
    if not (trace.spent or trace.owners or trace.shadows or trace.param_boxes) and (
            sys.getrefcount(trace) <= 3 + kept):  # the common case: no box alive but the caller's trace
        return
    while trace.spent:
        inner = trace.spent.pop()  # (a local: the reference count below expects the caller to hold one)
        release_escaped(inner)
        del inner
    for searched_stores in (False, True):
        own = [b for b in _table_boxes(trace) if type(b) is Box and b._zp_trace is trace] \
            if trace.owners or trace.shadows or trace.param_boxes else []
        held: dict[int, int] = {}
        for key in map(id, own):  # (no loop variable holding a box)
            held[key] = held.get(key, 0) + 1
        # references: the caller's, this parameter, getrefcount's, one per distinct box of the tables;
        # a box of the tables: the tables', own's (as many) and the generator's variable and getrefcount's
        if sys.getrefcount(trace) <= 3 + kept + len(held) and not _held_elsewhere(own, held):
            del own
            _forget_views(trace)
            return
        del own
        if searched_stores or not trace.stored:
            break
        _release_stored(trace)  # where rewritten code stored them: no search of the heap
    tables = (trace.param_boxes, trace.owners, trace.shadows)
    internal = {id(t) for t in tables} | {id(e) for t in tables[1:] for e in t.values()}
    escaped = [b for b in gc.get_referrers(trace) if type(b) is Box]

    def finished(v: Any) -> bool:
        return type(v) is Box and v._zp_trace is trace

    holders = gc.get_referrers(*escaped)  # one search of the heap for all of them (each holder once)
    for holder in holders:
        if holder is escaped or id(holder) in internal:
            continue
        if isinstance(holder, dict) or isinstance(getattr(holder, "__dict__", None), dict):
            attributes = holder if isinstance(holder, dict) else holder.__dict__  # (inline in 3.11+)
            for key in [k for k, v in attributes.items() if finished(v)]:
                attributes[key] = attributes[key]._zp_value
        elif isinstance(holder, list):
            for i in [i for i, v in enumerate(holder) if finished(v)]:
                holder[i] = holder[i]._zp_value
        elif isinstance(holder, types.CellType):
            if finished(holder.cell_contents):
                holder.cell_contents = holder.cell_contents._zp_value
        elif type(holder) is tuple and _replace(holder, tuple(
                v._zp_value if finished(v) else v for v in holder), (escaped, holders)):
            pass  # a tuple (a log record's arguments, say): its holders hold a plain copy now
        elif not isinstance(holder, (types.FrameType, Box)):  # (a box: an inner level's value)
            warnings.warn(
                f"zygotepy: a traced value stored in a {type(holder).__name__} during the "
                "differentiation outlives it and cannot be replaced by its plain value there; its next "
                "use will raise. Store zygotepy.dropgrad(value) instead", UserWarning, stacklevel=4)
    _forget_views(trace)


def _forget_views(trace: Trace) -> None:
    """Empty the table of views of a trace that has ended: its entries hold the trace's own boxes, a
    reference cycle that would keep the trace, and the values of the traces around it its boxes
    wrap, alive until a collection. (Its writes stay: some entry points write back after this.)"""
    trace.owners.clear()


def note_stored(holder: Any, value: Any, local: bool = False) -> None:
    """Rewritten code stored ``value`` into ``holder`` (an object's attribute, a container's
    entry): if it is a traced value, or a tuple, list or dict holding one, its trace remembers
    ``holder``, whose entries its end replaces without searching the heap (:func:`release_escaped`).
    Unless ``local`` (``holder`` is held by one local variable alone), a value that may hold a
    traced one has escaped the frames of rewritten code (:func:`~zygotepy._trace.note_escape`)."""
    t = type(value)
    if t is Box:
        value._zp_trace.stored[id(holder)] = holder
        if not local:
            note_escape()
        return
    if t in HOLDS_NOTHING:
        return
    if t is tuple or t is list or t is dict:
        for v in value.values() if t is dict else value:
            if type(v) is Box:
                v._zp_trace.stored[id(holder)] = holder
                break
    if not local and may_hold_traced(value):
        note_escape()


#: Classes whose instances hold no reference a traced value could hide behind (exact types):
#: numbers, strings, sentinels, and modules and classes, whose attributes rewritten code notes
#: when it sets them (``zygotepy._runtime.set_attribute``).
HOLDS_NOTHING = frozenset({float, int, bool, complex, str, bytes, type(None), range, type, types.ModuleType,
                            object, np.float64, np.int64, np.bool_, np.float32, np.ufunc, type(np.sum),
                            types.CodeType, type(Ellipsis), type(NotImplemented), types.MethodDescriptorType,
                            types.WrapperDescriptorType, types.GetSetDescriptorType,
                            types.MemberDescriptorType})
#: Objects a scan visits at most before it gives up (and answers that a traced value may be there).
_SCAN_BUDGET = 512
#: Per class, how :func:`may_hold_traced` looks inside its instances (see :func:`_scan_plan`).
_SCAN_PLANS = BoundedCache(1024)
_ITEMS, _MAPPING, _FUNCTION, _METHOD, _BOUND_BUILTIN, _PARTIAL, _ARRAY, _FIELDS, _OPAQUE, _LEAF = range(10)
_UNSET: Any = object()


def may_hold_traced(x: Any) -> bool:
    """Whether a traced value may be reachable from ``x``: through containers, objects' fields
    (``__dict__`` and slots), a function's closure cells and defaults, a bound method's or a
    partial's parts. Conservative: a generator, an iterator or another object whose references
    cannot be read, an array of Python objects, or a graph larger than :data:`_SCAN_BUDGET`
    answers ``True``. Classes and modules are not searched: rewritten code notes a traced value
    stored into their attributes (:func:`note_stored`).

    Example:
        >>> import numpy as np
        >>> may_hold_traced(({"a": [1.0, np.ones(3)]}, "s", np.sum)), may_hold_traced(iter([1.0]))
        (False, True)
    """
    stack, seen, budget = [x], set(), _SCAN_BUDGET
    while stack:
        v = stack.pop()
        t = type(v)
        if t in HOLDS_NOTHING:
            continue
        if t is Box:
            return True
        if t is tuple or t is list:  # the commonest containers, first (the budget ends a cycle)
            budget -= len(v) + 1
            if budget < 0:
                return True
            stack.extend(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        budget -= 1
        plan = _SCAN_PLANS.get(t)
        if plan is None:
            plan = _scan_plan(t)
            _SCAN_PLANS.put(t, plan)
        kind = plan[0]
        if kind == _ITEMS or kind == _MAPPING:
            budget -= len(v)
            if budget < 0:
                return True
            if kind == _MAPPING:
                stack.extend(v.keys())
                stack.extend(v.values())
                factory = getattr(v, "default_factory", None)  # a defaultdict's
                if factory is not None:
                    stack.append(factory)
            else:
                stack.extend(v)
        elif kind == _FUNCTION:
            for cell in v.__closure__ or ():
                try:
                    stack.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    pass
            stack.append(v.__defaults__)
            stack.append(v.__kwdefaults__)
        elif kind == _METHOD:
            stack.append(v.__func__)
            stack.append(v.__self__)
        elif kind == _BOUND_BUILTIN:
            stack.append(v.__self__)  # a module (nothing), or the object of a method (``xs.append``)
        elif kind == _PARTIAL:
            stack.append(v.func)
            stack.extend(v.args)
            stack.extend(v.keywords.values())
        elif kind == _ARRAY:
            if v.dtype.kind == "O":
                return True
        elif kind == _OPAQUE or budget < 0:
            return True
        for name in plan[1]:  # the object's own fields: its __dict__ and slots
            if name == "__dict__":
                fields = getattr(v, "__dict__", None)
                if fields is not None:
                    stack.extend(fields.values())
            else:
                field = getattr(v, name, _UNSET)
                if field is not _UNSET:
                    stack.append(field)
    return False


def _scan_plan(cls: type) -> tuple[int, tuple[str, ...]]:
    """How :func:`may_hold_traced` looks inside instances of ``cls``: a kind, and the names of
    the fields it reads besides (``"__dict__"`` for the instance dictionary, slot names). A class
    defined in C that keeps references of its own (an iterator, a generator, a C extension's
    object), or defined in Python over such a base, is opaque."""
    fields: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__"):
                fields.append(slot)
        if "__dict__" in klass.__dict__ and "__dict__" not in fields:
            fields.append("__dict__")
    named = tuple(fields)
    if issubclass(cls, (tuple, list, set, frozenset, collections.deque)):
        return _ITEMS, named
    if issubclass(cls, (dict, types.MappingProxyType)):
        return _MAPPING, named
    if cls is types.FunctionType or cls is types.MethodType or cls is types.BuiltinFunctionType:
        return {types.FunctionType: _FUNCTION, types.MethodType: _METHOD}.get(cls, _BOUND_BUILTIN), ()
    if issubclass(cls, functools.partial):
        return _PARTIAL, named
    if issubclass(cls, np.ndarray):
        return _ARRAY, named
    random = sys.modules.get("numpy.random")  # (not imported for this: without it, none exists)
    if issubclass(cls, (type, np.dtype, np.generic, re.Pattern)) or (random is not None and issubclass(
            cls, (random.Generator, random.RandomState, random.BitGenerator, random.SeedSequence))):
        return _LEAF, ()
    if issubclass(cls, BaseException):
        return _FIELDS, (*named, "args", "__cause__", "__context__")
    if cls is slice:
        return _FIELDS, ("start", "stop", "step")
    if cls is types.SimpleNamespace:
        return _FIELDS, ("__dict__",)
    # a class defined in Python over object or a number or string (an enum): its fields are all it holds
    base = next(k for k in cls.__mro__ if not k.__flags__ & _HEAP_TYPE)
    return (_FIELDS, named) if base in _ATOMIC_BASES else (_OPAQUE, ())


#: C classes whose instances hold no references of their own: a Python subclass holds its fields.
_ATOMIC_BASES = frozenset({object, int, float, complex, str, bytes})


#: ``type.__flags__``'s bit for a class defined in Python (or made by ``type()``).
_HEAP_TYPE = 1 << 9


def _release_stored(trace: Trace) -> None:
    """Replace ``trace``'s values in the attributes and entries of the holders it noted (and one
    level down, in tuples, lists and dicts there) by their values (see :func:`release_escaped`)."""
    stored = list(trace.stored.values())
    trace.stored.clear()
    for holder in stored:
        table = holder if type(holder) is dict else getattr(holder, "__dict__", None)
        if type(table) is dict:
            for key in list(table):
                new = _released(table[key], trace)
                if new is not table[key]:
                    table[key] = new
                    note_stored(holder, new)  # an outer level's value: released when that one ends
        elif isinstance(holder, (list, collections.deque)):
            for i, v in enumerate(holder):
                new = _released(v, trace)
                if new is not v:
                    holder[i] = new
                    note_stored(holder, new)


def _released(v: Any, trace: Trace) -> Any:
    """``v`` with ``trace``'s boxes in it (itself, or one level down in a tuple, list or dict)
    replaced by their values: a new tuple, the list or dict changed in place."""
    t = type(v)
    if t is Box:
        return v._zp_value if v._zp_trace is trace else v
    if t is tuple:
        if any(type(e) is Box and e._zp_trace is trace for e in v):
            return tuple(e._zp_value if type(e) is Box and e._zp_trace is trace else e for e in v)
    elif t is list:
        for i, e in enumerate(v):
            if type(e) is Box and e._zp_trace is trace:
                v[i] = e._zp_value
    elif t is dict:
        for k, e in v.items():
            if type(e) is Box and e._zp_trace is trace:
                v[k] = e._zp_value
    return v


def _held_elsewhere(own: list[Any], held: dict[int, int]) -> bool:
    """Whether a box of the trace's tables (``own``, each ``held[id]`` times there) has a reference
    besides the tables', ``own``'s, this frame's variable and ``getrefcount``'s."""
    for b in own:
        if sys.getrefcount(b) > 2 * held[id(b)] + 2:
            return True
    return False


def _table_boxes(trace: Trace) -> list[Any]:
    """The boxes the trace's own tables hold (implicit parameters, views' owners, writes), once
    per reference."""
    return [*trace.param_boxes.values(), *[e[1] for e in trace.owners.values()],
            *[e[1] for e in trace.shadows.values()]]  # (lists: no generator resumed per entry)


def _replace(old: Any, new: Any, skip: tuple[Any, ...]) -> bool:
    """Put ``new`` in place of ``old`` wherever a dict, an object's attributes, a list or a closure
    cell (not one of ``skip``, the searches' own) hold it; whether any did."""
    replaced = False
    found = gc.get_referrers(old)
    for holder in found:
        if holder is found or any(holder is s for s in skip):
            continue
        table = holder if isinstance(holder, dict) else getattr(holder, "__dict__", None)
        if isinstance(table, dict):
            for key in [k for k, v in table.items() if v is old]:
                table[key] = new
                replaced = True
        elif isinstance(holder, list):
            for i in [i for i, v in enumerate(holder) if v is old]:
                holder[i] = new
                replaced = True
        elif isinstance(holder, types.CellType) and holder.cell_contents is old:
            holder.cell_contents = new
            replaced = True
    return replaced


class FlatIndexer:
    """``a.flat`` of an array with a traced value (a box, or an array written through a view or
    an alias): the index map from ``a``'s positions in C order to its elements. Reading
    ``a.flat[i]`` indexes ``a``'s current traced value raveled; writing ``a.flat[i] = v`` (and the
    jitter idiom ``K.flat[::n + 1] += s``) is a functional write of those elements
    (:func:`write_flat`), so every reference to ``a`` reads it.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> def jittered(s):
        ...     K = np.ones((2, 2))
        ...     K.flat[::3] += s
        ...     return np.sum(K * K)
        >>> zp.gradient(jittered, 0.5)
        (6.0,)
    """

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def _raveled(self) -> Any:
        levels = LEVELS.get()
        current = latest(levels, self.array) if levels else self.array
        return dispatch(np.ravel, current)

    def __getitem__(self, index: Any) -> Any:
        return dispatch(operator.getitem, self._raveled(), unbox_all(index))

    def __setitem__(self, index: Any, value: Any) -> None:
        levels = LEVELS.get()
        if not levels or (type(self.array) is not Box and not _holds_box(value)
                          and not shadowed(levels, self.array)):
            unbox_all(self.array).flat[index] = value  # nothing traced: in place, as NumPy does
            return
        write_flat(levels, self.array, index, value)

    def __iter__(self) -> Any:
        raveled = self._raveled()
        return (dispatch(operator.getitem, raveled, i) for i in range(len(self)))

    def __len__(self) -> int:
        return int(np.size(unbox_all(self.array)))

    @property
    def base(self) -> Any:
        """The array iterated over, as ``np.flatiter.base``."""
        return self.array

    def copy(self) -> Any:
        """``a.flat.copy()``: a copy of ``a`` raveled."""
        return dispatch(np.copy, self._raveled())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise UntraceableError(
            f"inside {user_code()}, the flat iterator of a traced array is converted to a NumPy array, "
            "which would drop its derivative: use a.ravel() (or a.flat[...] to index it) instead")


def flat_of(levels: tuple[Trace, ...], a: Any) -> Any:
    """``a.flat`` in rewritten code: a :class:`FlatIndexer` when ``a`` is traced or has a traced
    value (written through a view or an alias), else NumPy's own ``np.flatiter``."""
    if type(a) is Box or (type(a) is np.ndarray and shadowed(levels, a)):
        return FlatIndexer(a)
    return a.flat


def write_flat(levels: tuple[Trace, ...], array: Any, index: Any, value: Any) -> None:
    """``array.flat[index] = value`` into ``array``'s traced value (:func:`write`): the flat index
    becomes the positions it selects, and ``value`` is repeated to fill them when it has fewer
    elements, as NumPy's flat assignment does."""
    primal = unbox_all(array)
    selected = np.arange(primal.size).reshape(-1)[unbox_all(index)]
    where = np.unravel_index(selected, primal.shape)
    given = np.shape(unbox_all(value))
    if given and given != np.shape(selected) and int(np.prod(given)) != np.size(selected):
        repeats = np.arange(np.size(selected)) % max(int(np.prod(given)), 1)
        value = dispatch(operator.getitem, dispatch(np.ravel, value), repeats.reshape(np.shape(selected)))
    elif given and given != np.shape(selected):
        value = dispatch(np.reshape, value, np.shape(selected))
    write(levels, array, where, value)
