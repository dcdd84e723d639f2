"""Reverse mode: the reverse trace, and ``gradient``, ``withgradient``, ``pullback``, the reverse
Jacobian and implicit parameters (``params``/``Grads``).

A :class:`ReverseTrace` records every rule's pullback on its tape (its first-order calls take
a fast path that skips the dispatcher's general case). Arguments are boxed on a new trace
(tuples, lists and dicts leaf by leaf, everything else as one value), the function runs
through the dispatcher, and one backward sweep gives every argument's cotangent. Cotangents
stay in rulescore's representation until the very edge (:mod:`zygotepy._edge`).
"""

from __future__ import annotations

import enum
import functools
import inspect
import numbers
import operator
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

import rulescore as rc
from rulescore._checks import callable_name
from rulescore._structure import fields_of
from rulescore._tangent import tangent_type
from rulescore._thunks import Thunk
from rulescore._zeros import NO_TANGENT_TYPES, AbstractZero, NoTangent, ZeroTangent
from zygotepy._adjoint_table import ADJOINTS
from zygotepy._backward import backward, extract
from zygotepy._caches import BoundedCache
from zygotepy._dispatch import (
    HANDLED,
    RRULES,
    DispatchedTrace,
    call,
    constant_of_params,
    out_position,
    plain_output,
    refuse_traced_keywords,
    unbox,
    unbox_arguments,
)
from zygotepy._edge import RefusedArgument, check_arguments, owned_by_caller, refuses, to_user
from zygotepy._errors import NotScalarError, object_array_error
from zygotepy._runtime import python_target
from zygotepy._trace import (
    LEVELS,
    NO_RULE,
    NOT_FAST,
    NUMBERS,
    Box,
    Trace,
    isolated,
    log_call,
    new_trace,
    primals_of,
    unbox_all,
)
from zygotepy._views import (
    as_before,
    note_view,
    release_escaped,
    settle,
    write_back,
    write_back_keeping,
)


class Config(rc.RuleConfig, rc.HasReverseMode, rc.NoForwardsMode):
    """The ``RuleConfig`` zygotepy hands to config-aware rrules: reverse mode via ``pullback``."""

    def rrule_via_ad(self, f: Any, *args: Any, **kwargs: Any) -> Any:
        return rrule_via_engine(f, *args, **kwargs)


CONFIG = Config()


class ReverseTrace(DispatchedTrace):
    """A trace that records: a call with an rrule becomes a tape node holding its pullback."""

    __slots__ = ("direct", "direct_nested")
    records = True
    rules = RRULES
    config = CONFIG

    def __init__(self, outer: tuple[Trace, ...], params: dict[int, Any] | None = None) -> None:
        super().__init__(outer, params)
        #: whether a plain rrule (``Rule.plain``) runs as it is, on this level's
        #: primals: first order, no log, no checking mode
        self.direct = not outer and self.log is None and not self.checks
        #: whether a plain rrule's rewritten body runs at the outer levels directly: nested, no
        #: log, no checking mode, no implicit parameters
        self.direct_nested = bool(outer) and self.log is None and not self.checks and not self.with_params
        if not self.with_params and self.log is None:  # the dispatcher's hot paths (they log nothing)
            if not outer:
                self.fast_path = _apply_first_order
                if self.direct:  # (rulescore's checking mode checks each rule it runs: no numbers)
                    self.numbers_path = record_numbers
            elif not _logging(outer):
                self.fast_path = _apply_nested

    def lookup(self, fn: Any, args: tuple[Any, ...]) -> Any:
        """The rule for ``fn(*args)``: a legacy ``@adjoint`` first (it takes priority, as in
        Zygote), then an rrule; ``None`` when there is neither."""
        if ADJOINTS.active and ADJOINTS.has_rules(fn):
            adjoint = ADJOINTS.lookup(fn, args)
            if adjoint is not None:
                return adjoint
        return RRULES.lookup(fn, args, CONFIG)

    def has_rules(self, fn: Any) -> bool:
        return RRULES.has_rules(fn) or (ADJOINTS.active and ADJOINTS.has_rules(fn))

    def differentiate(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Record ``fn``'s rule on this trace's tape, or ``NO_RULE``."""
        rule = self.lookup(fn, args)
        if rule is None:
            return NO_RULE
        refuse_traced_keywords(fn, kwargs, self)
        primals, routes = unbox_arguments(args, self)
        return self.process_rule(rule, fn, args, primals, routes, kwargs)

    def process_rule(self, rule: rc.Rule, fn: Any, args: tuple[Any, ...], primals: tuple[Any, ...],
                     routes: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The one place a reverse trace applies a rule (an rrule, a non-differentiable rule or a
        legacy adjoint) to ``fn(*args)``: run it on the arguments unboxed for this level
        (``primals``) with only the outer levels active, so they see inside it (nested AD), and
        record its pullback as a node whose cotangents go to ``routes`` (flat ``position,
        target, ...``, see :func:`~zygotepy._dispatch.unbox_arguments`). The dispatcher's fast
        paths (:func:`_apply_first_order`, :func:`_apply_nested`) only classify a call and come
        here."""
        if rule.plain and self.direct:  # the first-order hot path: no level switch
            if primals and type(primals[0]) in _REAL_CONSTANTS and rule.scalar is not None and not kwargs:
                y = record_numbers(rule.scalar, args, self)  # real scalars: the partials as numbers
                if y is not NOT_FAST:
                    return y
            y, pullback = rule.impl(*primals, **kwargs) if kwargs else rule.impl(*primals)  # type: ignore[misc]
        elif rule.plain and self.direct_nested and (body := _TRACED_IMPLS[rule]) is not None:
            # the nested hot path: the rule's rewritten body, called directly at the outer levels
            # (what ``call(rule.impl, ...)`` resolves to when no level logs or holds implicit parameters)
            token = LEVELS.set(self.outer)
            try:
                y, pullback = body(*primals, **kwargs) if kwargs else body(*primals)
            finally:
                LEVELS.reset(token)
        else:
            if self.log is not None:
                how = "adjoint" if rule.table == "adjoint" else rule.kind.replace("_", "-")
                log_call(self, fn, args, how, rule)
            plain = rule.plain and not self.checks
            outer = self.outer
            if plain and not outer:  # first order, logging
                y, pullback = rule.impl(*primals, **kwargs) if kwargs else rule.impl(*primals)  # type: ignore[misc]
            else:
                table = RRULES if rule.table == "rrule" else ADJOINTS
                # the rule's rewritten body, called directly (what ``call(rule.impl, ...)``
                # resolves to when no level logs or holds implicit parameters)
                target = _traced_impl(rule) if plain and not self.with_params and self.log is None else None
                token = LEVELS.set(outer)
                try:
                    if target is not None:
                        y, pullback = target(*primals, **kwargs)
                    elif rule.kind == "non_differentiable":
                        y = call(fn, *primals, **kwargs)
                        return constant_of_params(y, self) if self.with_params else y
                    elif not outer:  # first order, with a config or in checking mode
                        y, pullback = table.run(rule, CONFIG, fn, primals, kwargs)
                    elif self.checks or not rule.impl:
                        y, pullback = call(table.run, rule, CONFIG, fn, primals, kwargs)
                    elif rule.config:
                        y, pullback = call(rule.impl, CONFIG, *primals, **kwargs)
                    else:
                        y, pullback = call(rule.impl, *primals, **kwargs)
                finally:
                    LEVELS.reset(token)
        ty = type(y)
        if not routes or (ty not in _RECORDED and plain_output(y)):
            return y
        tape = self.tape
        index = len(tape)
        if ty is np.ndarray:
            if y.dtype is _OBJECT:
                raise object_array_error(fn)
            self.shapes[index] = y.shape  # the sweep refuses a cotangent of another shape
            if y.base is not None:
                note_view(self, y, args)
        elif ty is Box:  # an outer level's box (of a view?)
            value = y._zp_value
            while type(value) is Box:
                value = value._zp_value
            if type(value) is np.ndarray:
                self.shapes[index] = value.shape
                if value.base is not None:
                    note_view(self, y, args)
        tape.append((pullback, len(args)) + routes)  # one flat node (see zygotepy._trace.node)
        box = _new_box(Box)  # Box(y, self, index) without the Python frame of its __init__
        box._zp_value = y
        box._zp_trace = self
        box._zp_index = index
        return box

    #: The rewritten ``fn`` (see :func:`zygotepy._runtime.python_target`), called directly: the
    #: dispatcher asks it of every Python function a nested level traces.
    python_target = staticmethod(python_target)


def _logging(traces: tuple[Trace, ...]) -> bool:
    """Whether one of ``traces`` logs its calls (then no fast path: they log nothing)."""
    for t in traces:
        if t.log is not None:
            return True
    return False


#: callable -> ``(rc.RuleTable.changes, its sole rrule or None)`` when found plain, -1 when not;
#: bounded: callables may come and go.
_PLAIN_CALLABLES = BoundedCache(1024)
_TABLES = rc.RuleTable  # (its ``changes``: every table's registrations, adjoints' too)
#: ufuncs, Python functions and NumPy's dispatching functions (``np.sum``, ``np.concatenate``).
_PLAIN_CALLABLE_TYPES = frozenset({np.ufunc, types.FunctionType, type(np.sum)})
#: Classes called as plain callables: the numeric conversions (``float(x)`` in a pullback), whose
#: only answers are their rules (the fast paths give them a box of a number or an array, or a constant).
_PLAIN_CLASSES = frozenset({float, complex})


def _plain_entry(fn: Any) -> tuple[int, Any] | None:
    """For a callable with rules that needs none of the dispatcher's general handling before its
    rule (a ufunc, a module-level builtin, a Python or NumPy function, not a special form, with
    no legacy adjoint): ``(rc.RuleTable.changes, its sole rrule or None)``, cached until a rule
    or an adjoint is defined; ``None`` for any other callable."""
    changes = _TABLES.changes  # read first: a registration meanwhile leaves the entry stale, not wrong
    try:
        cached = _PLAIN_CALLABLES.get(fn)
    except TypeError:  # an unhashable callable object
        return None
    if type(cached) is tuple:
        if cached[0] == _TABLES.changes:
            return cached
    elif cached is not None:
        return None  # not plain, by its type
    elif fn not in RRULES.primals:
        return None  # not cached: a rule may be registered later
    tf = type(fn)
    owner = getattr(fn, "__self__", None)
    module_builtin = tf is types.BuiltinFunctionType and (owner is None or type(owner) is types.ModuleType)
    handled = HANDLED.get(fn)
    # (operator.getitem is plain: the fast paths take a box of a number or an array, or constants,
    # never the plain container, Tangent or Python __getitem__ the general path answers itself)
    plain = (tf in _PLAIN_CALLABLE_TYPES or module_builtin or fn in _PLAIN_CLASSES) and fn is not getattr \
        and (handled is None or handled.kind == "reference")
    if not plain:
        _PLAIN_CALLABLES.put(fn, -1)
        return None
    if ADJOINTS.has_rules(fn):
        _PLAIN_CALLABLES.pop(fn, None)
        return None
    entry = (changes, RRULES.sole_rule(fn))
    _PLAIN_CALLABLES.put(fn, entry)
    return entry


def record_numbers(scalar: Any, args: tuple[Any, ...], trace: ReverseTrace) -> Any:
    """A first-order reverse trace's ``numbers_path``, the one place a rule's scalar form is
    applied: when ``args`` are this trace's boxes of real scalars (Python floats, NumPy float64
    scalars) and real numbers, and the form gives a real scalar with real partials for the traced
    ones, record them as a numbers node (:data:`zygotepy._trace.NUMBERS`) and return the
    output's box; else ``NOT_FAST`` (the rule is run: it answers, or raises, as it does). Each
    partial is made of its argument's type, so each cotangent is of its value's type, as its
    projection makes it (a Python float times a ``np.float16`` is a ``np.float16``; a NumPy
    float64 times one is a float64); a partial that is not a real number (a float16, an array, a
    zero) runs the rule instead. A NumPy float64 made by another numbers node is the exception:
    its cotangent only ever meets that node's partials in the sweep (double precision either way,
    the same numbers), so its partial is a Python float and the sweep multiplies Python floats
    (NumPy scalar arithmetic cost the ``np.sin`` chain 5% of its time). (The conversion is written
    at each partial: a helper's call cost it as much.)

    Example:
        >>> import operator, rulescore as rc
        >>> trace = ReverseTrace(())
        >>> form = rc.rrule.lookup(operator.mul, (2.0, 3.0)).scalar
        >>> y = record_numbers(form, (trace.box(2.0), np.float64(3.0)), trace)
        >>> y._zp_value, trace.tape[-1]
        (np.float64(6.0), (<numbers>, 3.0, 0))
    """
    n = len(args)
    tape = trace.tape
    if n == 2:  # one argument or two: unrolled
        a, b = args
        if type(a) is Box:
            x = a._zp_value
            tx = type(x)
            if (tx is not float and tx is not _FLOAT64) or a._zp_trace is not trace:
                return NOT_FAST  # (an array, the commonest refusal: at the first test)
            if tx is _FLOAT64 and (p := tape[a._zp_index]) is not None and p[0] is NUMBERS:
                tx = float  # (made by a numbers node: see above)
        elif type(a) in _REAL_CONSTANTS:
            x, tx = a, None
        else:
            return NOT_FAST
        if type(b) is Box:
            y = b._zp_value
            ty = type(y)
            if (ty is not float and ty is not _FLOAT64) or b._zp_trace is not trace:
                return NOT_FAST
            if ty is _FLOAT64 and (p := tape[b._zp_index]) is not None and p[0] is NUMBERS:
                ty = float
        elif type(b) in _REAL_CONSTANTS and tx is not None:
            y, ty = b, None
        else:
            return NOT_FAST
        try:
            z, (d, d1) = scalar(x, y)  # (None: no numbers here)
        except Exception:  # noqa: BLE001 (the rule, run next, raises it or answers the point itself)
            return NOT_FAST
        if tx is not None:
            if type(d) is not tx:  # (made of its argument's type: see above)
                if type(d) not in _REAL_CONSTANTS:
                    return NOT_FAST
                d = float(d) if tx is float else _ONE64 * d
            if ty is not None:
                if type(d1) is not ty:  # (made of its argument's type: see above)
                    if type(d1) not in _REAL_CONSTANTS:
                        return NOT_FAST
                    d1 = float(d1) if ty is float else _ONE64 * d1
                node: tuple[Any, ...] = (NUMBERS, d, a._zp_index, d1, b._zp_index)
            else:
                node = (NUMBERS, d, a._zp_index)
        else:
            if type(d1) is not ty:  # (made of its argument's type: see above)
                if type(d1) not in _REAL_CONSTANTS:
                    return NOT_FAST
                d1 = float(d1) if ty is float else _ONE64 * d1
            node = (NUMBERS, d1, b._zp_index)
    elif n == 1:
        a = args[0]
        if type(a) is not Box or a._zp_trace is not trace:
            return NOT_FAST
        x = a._zp_value
        tx = type(x)
        if tx is not float and tx is not _FLOAT64:
            return NOT_FAST
        if tx is _FLOAT64 and (p := tape[a._zp_index]) is not None and p[0] is NUMBERS:
            tx = float
        try:
            z, (d,) = scalar(x)
        except Exception:  # noqa: BLE001 (as above)
            return NOT_FAST
        if type(d) is not tx:  # (made of its argument's type: see above)
            if type(d) not in _REAL_CONSTANTS:
                return NOT_FAST
            d = float(d) if tx is float else _ONE64 * d
        node = (NUMBERS, d, a._zp_index)
    else:
        return NOT_FAST
    tz = type(z)
    if tz is not float and tz is not _FLOAT64:
        return NOT_FAST
    index = len(tape)
    tape.append(node)
    box = _new_box(Box)  # Box(z, trace, index) without the Python frame of its __init__
    box._zp_value = z
    box._zp_trace = trace
    box._zp_index = index
    return box


#: Untraced arguments of a rule's scalar form (a number the program wrote: ``y * 2``, ``x + 0.1``).
_REAL_CONSTANTS = frozenset({float, int, np.float64})
_FLOAT64 = np.float64
_ONE64 = np.float64(1.0)  # (``_ONE64 * d``: a float64 of ``d``, cheaper than ``np.float64(d)``)
#: ``object.__new__``: the fast paths make a box and set its three slots themselves.
_new_box = object.__new__
#: Traced values the fast path takes: floats, arrays, and the NumPy scalars that NumPy functions of
#: Python floats return (``np.sin(0.5)`` is an ``np.float64``; without it every later operation of
#: a chain written with ``np`` on scalars would take the general path).
_FAST_VALUES = frozenset({float, np.ndarray, np.float64})
#: Outputs always recorded (an outer level's box: a rule's body traced at the outer levels).
_RECORDED = frozenset({*_FAST_VALUES, Box})
#: NumPy's object dtype (one instance): an array of it made from traced values is refused.
_OBJECT = np.dtype(object)
#: Untraced arguments the fast path takes as they are (a string: ``hasattr(x, "name")``, a subscript).
_FAST_CONSTANTS = frozenset({float, np.ndarray, np.float64, int, str})
#: (a module name: the fast paths test it on every call of two arguments)
UFUNC = np.ufunc


def _is_shape(t: tuple[Any, ...]) -> bool:
    """A tuple of ints, slices of ints, ``None`` and ``...`` (a shape, axes, an index): a constant
    the fast path takes as a second argument (``np.broadcast_to(g, x.shape)``, ``np.reshape(x, (2,
    3))``, ``x[:, 0]``, ``b[..., None]``).

    Example:
        >>> _is_shape((2, 3)), _is_shape((slice(None, 2), 0, None)), _is_shape((slice(0.5, 2),))
        (True, True, False)
        >>> _is_shape((..., None)), _is_shape((..., 0.5))
        (True, False)
    """
    for v in t:
        tv = type(v)
        if tv is not int and v is not None and v is not Ellipsis and not (
                tv is slice and _int_or_none(v.start) and _int_or_none(v.stop) and _int_or_none(v.step)):
            return False
    return True


def _int_or_none(v: Any) -> bool:
    return v is None or type(v) is int


#: The keyword arguments of a call without any (never written: callees get copies).
_NO_KEYWORDS: dict[str, Any] = {}


def _apply_first_order(fn: Any, args: tuple[Any, ...], trace: ReverseTrace,
                       kwargs: dict[str, Any] = _NO_KEYWORDS) -> Any:
    """A first-order reverse trace's ``fast_path``: classify the commonest call (a plain callable
    with rules; arguments that are floats, ints, arrays or this trace's boxes of floats and
    arrays) without the dispatcher's general search, and hand it to
    :meth:`ReverseTrace.process_rule`. Anything else is left to the full path (``NOT_FAST``)."""
    if type(fn) is Box:
        return NOT_FAST  # a traced callable object: never hashed here
    try:
        plain_entry = _PLAIN_CALLABLES.get(fn)  # _plain_entry's cache hit, inlined
    except TypeError:
        return NOT_FAST
    if type(plain_entry) is not tuple or plain_entry[0] != _TABLES.changes:
        plain_entry = _plain_entry(fn)
        if plain_entry is None:
            return NOT_FAST
    # the node's routes (position, tape index, ...) and the primals: one and two arguments
    # unrolled (nearly every call), any other count in a loop
    n = len(args)
    if n == 2:
        if type(fn) is UFUNC and fn.nin == 1:
            return NOT_FAST  # np.sin(x, out): the full path writes into out
        a, b = args
        ta, tb = type(a), type(b)
        if ta is Box:
            x = a._zp_value
            if a._zp_trace is not trace or type(x) not in _FAST_VALUES:
                return NOT_FAST
            if tb is Box:
                y = b._zp_value
                if b._zp_trace is not trace or type(y) not in _FAST_VALUES:
                    return NOT_FAST
                routes: tuple[Any, ...] = (0, a._zp_index, 1, b._zp_index)
            elif tb in _FAST_CONSTANTS or (tb is tuple and _is_shape(b)):
                y, routes = b, (0, a._zp_index)
            else:
                return NOT_FAST
        elif ta in _FAST_CONSTANTS:
            if tb is not Box:  # nothing traced: just this
                constant = tb in _FAST_CONSTANTS or (tb is tuple and _is_shape(b))
                return fn(a, b, **kwargs) if constant else NOT_FAST
            y = b._zp_value
            if b._zp_trace is not trace or type(y) not in _FAST_VALUES:
                return NOT_FAST
            x, routes = a, (1, b._zp_index)
        else:
            return NOT_FAST
        plain: tuple[Any, ...] = (x, y)
    elif n == 1:
        (a,) = args
        ta = type(a)
        if ta is not Box:
            return fn(a, **kwargs) if ta in _FAST_CONSTANTS else NOT_FAST
        x = a._zp_value
        if a._zp_trace is not trace or type(x) not in _FAST_VALUES:
            return NOT_FAST
        plain, routes = (x,), (0, a._zp_index)
    else:
        if out_position(fn) >= 0 or (type(fn) is np.ufunc and n > fn.nin):
            return NOT_FAST  # np.dot(a, b, out), np.add(a, b, out): the full path writes into out
        primals: Any = args
        flat: list[Any] = []
        for i, a in enumerate(args):
            ta = type(a)
            if ta is Box:
                if a._zp_trace is not trace or type(a._zp_value) not in _FAST_VALUES:
                    return NOT_FAST
                if primals is args:
                    primals = list(args)
                primals[i] = a._zp_value
                flat += (i, a._zp_index)
            elif ta not in _FAST_CONSTANTS:
                return NOT_FAST
        if primals is args:
            return fn(*args, **kwargs)  # nothing traced: the rule would compute just this, and record nothing
        plain, routes = tuple(primals), tuple(flat)
    rule = plain_entry[1] or RRULES.lookup(fn, plain, CONFIG)
    if rule is None:
        return NOT_FAST
    return trace.process_rule(rule, fn, args, plain, routes, kwargs)




class _TracedBodies(BoundedCache):
    """rule -> the rewritten body of its rrule, which an outer level traces line by line (see
    :func:`_traced_impl`): a miss is answered by ``__missing__``, so a hit is a dict read without
    a Python frame (nested levels ask it once per operation)."""

    __slots__ = ()

    def __missing__(self, rule: Any) -> Any:
        impl = rule.impl
        plain = type(impl) is types.FunctionType and not (
            RRULES.has_rules(impl) or rc.frule.has_rules(impl) or ADJOINTS.has_rules(impl)
            or impl in HANDLED)
        target = python_target(impl, False) if plain else None
        self.put(rule, target)
        return target


_TRACED_IMPLS = _TracedBodies(4096)


def _traced_impl(rule: Any) -> Any:
    """``rule.impl`` (an rrule's or an frule's) as the dispatcher runs it at the outer levels
    (what ``call(rule.impl, ...)`` resolves to: its rewritten version), or ``None`` when that
    call needs the full path (the body has rules of its own, is marked structural or is not
    Python)."""
    return _TRACED_IMPLS[rule]


def owning_level(args: tuple[Any, ...]) -> Any:
    """For a nested fast path: the innermost level owning one of ``args`` (boxes of floats or
    arrays at any level, or numeric constants), ``None`` when none is traced, ``NOT_FAST`` when an
    argument is of another kind."""
    best: Any = None
    for a in args:
        ta = type(a)
        if ta is Box:
            tr = a._zp_trace
            if best is None or tr.level > best.level:
                best = tr
            value = a._zp_value
            while type(value) is Box:
                value = value._zp_value
            if type(value) not in _FAST_VALUES:
                return NOT_FAST
        elif ta not in _FAST_CONSTANTS and not (ta is tuple and _is_shape(a)):
            return NOT_FAST
    return best


def _apply_nested(fn: Any, args: tuple[Any, ...], top: ReverseTrace,
                  kwargs: dict[str, Any] = _NO_KEYWORDS) -> Any:
    """:func:`_apply_first_order` under nested levels (a reverse trace innermost, none logging or
    holding implicit parameters; the outer ones reverse or forward): a plain callable with an
    rrule and arguments that are boxes of floats or arrays (at any level) or constants. When the
    level owning the innermost argument is a reverse trace, that trace's
    :meth:`~ReverseTrace.process_rule` applies the rule; a forward level's call takes the full
    path. One and two arguments (nearly every call) are unrolled: this runs once per operation of
    every rule body an outer level traces."""
    if type(fn) is Box:
        return NOT_FAST  # a traced callable object: never hashed here
    try:
        plain_entry = _PLAIN_CALLABLES.get(fn)
    except TypeError:
        return NOT_FAST
    if type(plain_entry) is not tuple or plain_entry[0] != _TABLES.changes:
        plain_entry = _plain_entry(fn)
        if plain_entry is None:
            return NOT_FAST
    n = len(args)
    if n == 2:  # owning_level(args), inlined and unrolled
        a, b = args
        ta, tb = type(a), type(b)
        if ta is Box:
            best = a._zp_trace
            value = a._zp_value
            while type(value) is Box:
                value = value._zp_value
            if type(value) not in _FAST_VALUES:
                return NOT_FAST
        elif ta in _FAST_CONSTANTS or (ta is tuple and _is_shape(a)):
            best = None
        else:
            return NOT_FAST
        if tb is Box:
            tr = b._zp_trace
            if best is None or tr.level > best.level:
                best = tr
            value = b._zp_value
            while type(value) is Box:
                value = value._zp_value
            if type(value) not in _FAST_VALUES:
                return NOT_FAST
        elif tb not in _FAST_CONSTANTS and not (tb is tuple and _is_shape(b)):
            return NOT_FAST
        if best is None:
            return fn(a, b, **kwargs)  # nothing traced at any level
    elif n == 1:
        (a,) = args
        ta = type(a)
        if ta is not Box:
            if ta in _FAST_CONSTANTS or (ta is tuple and _is_shape(a)):
                return fn(a, **kwargs)
            return NOT_FAST
        best = a._zp_trace
        value = a._zp_value
        while type(value) is Box:
            value = value._zp_value
        if type(value) not in _FAST_VALUES:
            return NOT_FAST
    else:
        best = owning_level(args)
        if best is None:
            return fn(*args, **kwargs)
        if best is NOT_FAST:
            return NOT_FAST
    if best is not top:  # (top is this kind's: a reverse trace)
        if best.level >= top.level or top.outer[best.level] is not best:
            return NOT_FAST  # a box of a finished differentiation: the full path says so
        if type(best) is not ReverseTrace:  # an outer forward level's call: its own fast path, if any
            fast = best.fast_path
            return NOT_FAST if fast is None else fast(fn, args, best, kwargs)
    if (type(fn) is UFUNC and n > fn.nin) or (n > 2 and out_position(fn) >= 0):
        return NOT_FAST  # out= given positionally
    if n == 2:
        if ta is Box and a._zp_trace is best:
            if tb is Box and b._zp_trace is best:
                plain: tuple[Any, ...] = (a._zp_value, b._zp_value)
                routes: tuple[Any, ...] = (0, a._zp_index, 1, b._zp_index)
            else:
                plain, routes = (a._zp_value, b), (0, a._zp_index)
        else:
            plain, routes = (a, b._zp_value), (1, b._zp_index)
    elif n == 1:
        plain, routes = (a._zp_value,), (0, a._zp_index)
    else:
        primals: list[Any] = []
        flat: list[Any] = []
        for i, a in enumerate(args):
            if type(a) is Box and a._zp_trace is best:
                primals.append(a._zp_value)
                flat += (i, a._zp_index)
            else:
                primals.append(a)
        plain, routes = tuple(primals), tuple(flat)
    rule = plain_entry[1] or RRULES.lookup(fn, plain, CONFIG)
    if rule is None:
        return NOT_FAST
    return best.process_rule(rule, fn, args, plain, routes, kwargs)


def _box_args(trace: Trace, x: Any) -> Any:
    """``x`` (an argument to differentiate) with its numbers and arrays boxed, each leaf checked on
    the way as :func:`~zygotepy._edge.check_arguments` checks it (``RefusedArgument`` when it
    refuses one: an array of objects, an ``np.matrix``, a ``Fraction``, an iterator, ...)."""
    t = type(x)
    if t is np.ndarray or t is float or t is Box:
        v = unbox_all(x) if t is Box else x  # (an outer differentiation's box: nested AD)
        tv = type(v)
        if tv is np.ndarray:
            if v.dtype.kind not in "fcbiu" and refuses(v):
                raise RefusedArgument(f"an array of dtype {v.dtype}")
            return trace.box(x)
        if tv in _FAST_VALUES:
            return trace.box(x)
    if t is tuple or t is list:  # (an array of numbers or a float boxed without a call of its own)
        return t([trace.box(v) if type(v) is float or (type(v) is np.ndarray and v.dtype.kind in "fcbiu")
                  else _box_args(trace, v) for v in x])
    if t is dict:
        return {k: _box_args(trace, v) for k, v in x.items()}
    if refuses(unbox_all(x)):
        raise RefusedArgument(f"a {type(x).__name__}")
    if not holds_numbers(x):
        return x  # an enum, a sentinel, a callable, a Generator, a set of names: the same object
    return trace.box(x)


def holds_numbers(x: Any, seen: set[int] | None = None) -> bool:
    """Whether ``x`` is or holds (in containers and object fields) a number or a numeric array: only
    such an argument is traced. Enums, sets, callables without numeric fields, random generators
    and objects such as ``object()`` sentinels pass through as the same objects, so ``is``,
    ``in`` and dictionary lookups on them behave as without differentiation.

    Example:
        >>> import enum, functools, numpy as np
        >>> class Act(enum.Enum):
        ...     RELU = 1
        >>> [holds_numbers(v) for v in (1.5, np.ones(2), Act.RELU, object(), {"a"}, np.tanh)]
        [True, True, False, False, False, False]
    """
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, float, complex, np.number, numbers.Number)):
        return True  # (a Fraction, a Decimal: traced, and their rules decide)
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iufcO"
    if (isinstance(x, _PASSING_THROUGH) or isinstance(x, NO_TANGENT_TYPES) or inspect.isroutine(x)
            or inspect.ismodule(x) or isinstance(x, type) or _random_object(x)):
        return False
    seen = set() if seen is None else seen
    if id(x) in seen:
        return False
    seen.add(id(x))
    if isinstance(x, (tuple, list)):
        return any(holds_numbers(v, seen) for v in x)
    if isinstance(x, dict):
        return any(holds_numbers(v, seen) for v in x.values())
    if not (hasattr(x, "__dict__") or hasattr(x, "__slots__")):
        return False  # an object() sentinel, a compiled value with no fields
    return any(holds_numbers(v, seen) for v in fields_of(x).values())


#: Values never traced, whatever they hold.
_PASSING_THROUGH = (enum.Enum, set, frozenset, functools.partial, range, slice, str, bytes)


def _random_object(x: Any) -> bool:
    random = sys.modules.get("numpy.random")
    return random is not None and isinstance(x, (random.Generator, random.RandomState, random.BitGenerator))


def _assemble(boxed: Any, cts: list[Any]) -> Any:
    """The internal cotangent of one argument, from the cotangents of its boxes."""
    t = type(boxed)
    if t is Box:
        ct = cts[boxed._zp_index]
        return ZeroTangent() if ct is None else ct
    if t is tuple or t is list:
        parts = [_assemble(v, cts) for v in boxed]
        return tangent_type(t)(*parts) if any(not rc.is_zero(p) for p in parts) else ZeroTangent()
    if t is dict:
        entries = {k: _assemble(v, cts) for k, v in boxed.items()}
        nonzero = any(not rc.is_zero(p) for p in entries.values())
        return tangent_type(dict)(entries) if nonzero else ZeroTangent()
    return NoTangent()


def user_gradient(boxed: Any, primal: Any, cts: list[Any]) -> Any:
    """``to_user(_assemble(boxed, cts), primal)`` without building structural tangents: an
    argument's boxes read straight into the user's containers. A leaf whose cotangent is already
    an array of the primal's shape and float dtype (or a float for a float) is final as it is;
    any other leaf goes through :func:`to_user`. An array is handed out only if nothing else holds
    it (:func:`~zygotepy._edge.owned_by_caller`): the user may write into it."""
    t = type(boxed)
    if t is Box or t is _Slot:
        index = boxed._zp_index if t is Box else boxed.position
        ct = cts[index]
        if type(ct) is Thunk:  # (kept in the list too: owned_by_caller counts that reference)
            ct = cts[index] = ct.unthunk()
        tp = type(primal)
        if tp is np.ndarray:
            if type(ct) is np.ndarray and ct.dtype == primal.dtype and primal.dtype.kind in "fc":
                return ct if owned_by_caller(ct) else ct.copy()  # (a broadcast view, a shared array)
        elif tp is float and type(ct) is float:
            return ct
        elif tp is Box and type(ct) is Box:  # nested: an outer level traces the gradient
            v, p = unbox_all(ct), unbox_all(primal)  # (to_user's projection would pass it through)
            tv = type(v)
            if tv is type(p) and (tv is float or (tv is np.ndarray and v.dtype == p.dtype
                                                 and v.shape == p.shape and p.dtype.kind in "fc")):
                return ct
        return to_user(ZeroTangent() if ct is None else ct, primal)
    if t is tuple or t is list:
        parts = []
        for v, p in zip(boxed, primal, strict=True):
            if type(v) is Box and type(p) is np.ndarray:  # the commonest leaf (a parameter array), inline
                ct = cts[v._zp_index]
                if type(ct) is Thunk:
                    ct = cts[v._zp_index] = ct.unthunk()
                if type(ct) is np.ndarray and ct.dtype == p.dtype and p.dtype.kind in "fc":
                    parts.append(ct if owned_by_caller(ct) else ct.copy())
                    continue
                ct = None  # (not held here while the general path hands it out)
            parts.append(user_gradient(v, p, cts))
        for part in parts:  # (a loop: no generator frame for all(...))
            if part is not None:
                return parts if t is list else tuple(parts)
        return None
    if t is dict:
        entries = {k: user_gradient(v, primal[k], cts) for k, v in boxed.items()}
        return None if all(v is None for v in entries.values()) else entries
    return None


def _check_scalar(f: Any, y: Any) -> None:
    v = unbox_all(y)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        what = (f"an array of shape {v.shape}" if isinstance(v, np.ndarray)
                else "a complex number" if isinstance(v, (complex, np.complexfloating))
                else f"a {type(v).__name__}")
        raise NotScalarError(
            f"gradient needs {getattr(f, '__qualname__', f)!s} to return a real scalar, but it returned "
            f"{what}; " + ("for a function returning (loss, extras), pass has_aux=True or use "
                           "zygotepy.withgradient" if isinstance(v, tuple) else
                           "use zygotepy.jacobian or zygotepy.pullback (with an explicit output cotangent) "
                           "instead")
        )


def _seeds(out: Any, trace: Trace, ybar: Any) -> list[tuple[int, Any]]:
    if type(out) is Box and out._zp_trace is trace:  # the commonest: one traced output
        value = out._zp_value
        while type(value) is Box:
            value = value._zp_value
        return [(out._zp_index, _seed_value(value, ybar))]
    return _seeds_at(_seed_slots(out, trace), ybar)


def _seed_slots(out: Any, trace: Trace) -> list[tuple[Any, int, Any]]:
    """Where each traced leaf of ``out`` sits: its path in ``out`` (``None``: ``out`` itself), its
    tape index and its plain value; what seeds a sweep, without holding ``out``'s boxes."""
    _, route = unbox(out, trace)
    if route is None:
        return []
    if type(route) is Box:
        return [(None, route._zp_index, unbox_all(route._zp_value))]
    return [(path, box._zp_index, unbox_all(box._zp_value)) for path, box in route]


def _seeds_at(slots: list[tuple[Any, int, Any]], ybar: Any) -> list[tuple[int, Any]]:
    return [(index, _seed_value(value, ybar if path is None else extract(ybar, path)))
            for path, index, value in slots]


def _seed_value(value: Any, ybar: Any) -> Any:
    """The seed ``ybar`` of an output whose plain value is ``value``, projected onto it."""
    if ybar is None or isinstance(ybar, AbstractZero):
        return ZeroTangent()
    if type(ybar) is float and (type(value) is float or type(value) is np.float64):
        return type(value)(ybar)  # gradient's seed for a real scalar output: already projected
    return call(rc.ProjectTo(value), ybar)  # (a list's projector from the list, not an outer box of it)


class _Slot(NamedTuple):
    """A traced argument's place on the tape: what ``pullback``'s ``back`` keeps instead of the
    argument's box, which the end of the forward pass replaces by its value wherever ``f``
    stored it (:func:`~zygotepy._views.release_escaped`)."""

    position: int  # on the tape


def _slots(boxed: Any) -> Any:
    """``boxed`` (the traced arguments) with each box as its :class:`_Slot`, in new containers."""
    t = type(boxed)
    if t is Box:
        return _Slot(boxed._zp_index)
    if t is tuple or t is list:
        return t(_slots(v) for v in boxed)
    if t is dict:
        return {k: _slots(v) for k, v in boxed.items()}
    return None


def _run(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], selected: tuple[int, ...] | None,
         params: dict[int, Any] | None = None) -> tuple[Trace, tuple[Any, ...], Any]:
    return isolated(_run_traced, f, args, kwargs, selected, params)  # (see zygotepy._trace.isolated)


def _run_traced(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], selected: tuple[int, ...] | None,
                params: dict[int, Any] | None) -> tuple[Trace, tuple[Any, ...], Any]:
    with new_trace(ReverseTrace, params) as trace:
        try:  # (the arguments checked as they are boxed, before f runs)
            boxed = tuple([_box_args(trace, a) if selected is None or i in selected else a
                           for i, a in enumerate(args)])  # (a list: no generator frame)
        except RefusedArgument:
            check_arguments("gradient", f, primals_of(args), selected)  # raises, naming it and the fix
            raise
        out = settle(LEVELS.get(), call(f, *boxed, **kwargs))
    return trace, boxed, out


def _pullback(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple[Any, ...], Any]:
    """``(y, boxed arguments, sweep)``: ``sweep(ybar)`` gives the cotangent of every tape node."""
    trace, boxed, out = _run(f, args, kwargs, None)
    y = unbox(out, trace)[0]

    def sweep(ybar: Any) -> list[Any]:
        return backward(trace, _seeds(out, trace, ybar))

    return y, boxed, sweep


def pullback(f: Callable[..., Any], *args: Any, has_aux: bool = False, **kwargs: Any) -> Any:
    """``(y, back)``: ``y = f(*args)`` and ``back(ybar)``, the vector-Jacobian product.

    ``back`` returns one gradient per argument (``None`` where there is none) and may be called
    any number of times. With ``has_aux=True``, ``f`` returns ``(y, aux)`` and the result is
    ``(y, back, aux)`` (JAX's ``vjp``); ``aux`` is not differentiated. With a single
    :class:`Params` argument (implicit parameters, as Zygote's ``pullback(f, ps)``), ``f`` takes no
    arguments and ``back`` returns :class:`Grads`.

    Example:
        >>> import math, zygotepy as zp
        >>> y, back = zp.pullback(math.sin, 0.5)
        >>> round(y, 6), back(1.0)
        (0.479426, (0.8775825618903728,))
        >>> y, back, aux = zp.pullback(lambda x: (x * 3.0, "note"), 2.0, has_aux=True)
        >>> y, back(1.0), aux
        (6.0, (3.0,), 'note')
        >>> import numpy as np
        >>> W = np.array([1.0, 2.0])
        >>> y, back = zp.pullback(lambda: W * W, zp.params(W))
        >>> back(np.array([1.0, 10.0]))[W]
        array([ 2., 40.])
    """
    check_keywords("pullback", f, kwargs)
    trace, result = _vjp(f, args, has_aux, kwargs)
    written = write_back_keeping(trace)  # f's writes into arrays, as NumPy leaves them
    release_escaped(trace, kept=1)  # what f stored where it outlives the call: plain there (back keeps trace)
    if not written:
        return result
    sweep = result[1]

    def back(ybar: Any) -> Any:
        return as_before(written, sweep, ybar)  # the tape's rules read the arrays as f found them

    return (result[0], back, *result[2:])


def _vjp(f: Any, args: tuple[Any, ...], has_aux: bool, kwargs: dict[str, Any]) -> tuple[Trace, Any]:
    """The trace and :func:`pullback`'s result, ``f``'s writes into arrays not written back yet."""
    implicit = len(args) == 1 and isinstance(args[0], Params)
    trace, boxed, out = (_run(f, (), kwargs, None, args[0].by_id()) if implicit
                         else _run(f, args, kwargs, None))
    main = out
    if has_aux:
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"pullback with has_aux=True needs {callable_name(f)} to return a pair "
                            f"(y, aux), but it returned {type(unbox_all(out)).__name__}")
        main = out[0]

    y = unbox(main, trace)[0]
    result = (y, unbox(out[1], trace)[0]) if has_aux else (y,)
    seeds, slots = _seed_slots(main, trace), _slots(boxed)  # (back holds no box: see _Slot)
    del out, main, boxed

    def back(ybar: Any) -> Any:
        if implicit:
            return _grads_from(trace, _seeds_at(seeds, ybar), args[0])
        cts = isolated(backward, trace, _seeds_at(seeds, ybar))
        return tuple(user_gradient(b, a, cts) for b, a in zip(slots, args, strict=True))

    return trace, (result[0], back, *result[1:])


def _selection(f: Any, nargs: int, argnums: Any, wrt: Any, entry: str = "gradient") -> tuple[int, ...] | None:
    """The selected argument positions (``None``: all), validated and with negative ``argnums``
    counted from the end."""
    if argnums is None and wrt is None:
        return None
    if argnums is not None and wrt is not None:
        raise TypeError(f"{entry} takes argnums or wrt, not both")
    if wrt is not None:
        names = list(inspect.signature(f).parameters)
        wanted = (wrt,) if isinstance(wrt, str) else tuple(wrt) if isinstance(wrt, (tuple, list)) else (wrt,)
        if not all(isinstance(w, str) for w in wanted):
            positions = all(isinstance(w, int) and not isinstance(w, bool) for w in wanted)
            raise TypeError(f"{entry}: wrt must name parameters of {callable_name(f)} (a string or a tuple "
                            f"of strings from {names[:nargs]}), got {wrt!r}; to select arguments by position "
                            f"use {f'argnums={wrt!r}' if positions else 'argnums='}")
        missing = [w for w in wanted if w not in names[:nargs]]
        if missing:
            raise ValueError(f"wrt names {missing} are not positional arguments of {callable_name(f)} "
                             f"({names[:nargs]})")
        nums: tuple[Any, ...] = tuple(names.index(w) for w in wanted)
    else:
        nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else \
            tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    selected = []
    for n in nums:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{entry}: argnums must be an int or a tuple of ints, got {argnums!r} "
                            f"(differentiating {callable_name(f)})")
        if not -nargs <= n < nargs:
            raise ValueError(f"{entry}: argnums={argnums!r} is out of range: {callable_name(f)} was given "
                             f"{nargs} positional argument{'s' if nargs != 1 else ''}, so argnums must lie "
                             f"in {-nargs}..{nargs - 1}")
        selected.append(int(n) % nargs)
    if len(set(selected)) != len(selected):
        raise ValueError(f"{entry}: argnums={argnums!r} selects an argument of {callable_name(f)} more "
                         "than once")
    return tuple(selected)


#: The keyword arguments of each entry point; others are passed to the user's function.
RESERVED = {
    "gradient": ("argnums", "wrt", "has_aux"), "withgradient": ("argnums", "wrt"),
    "pullback": ("has_aux",), "jacobian": ("mode", "chunk", "has_aux"), "hessian": ("chunk",),
}


def check_keywords(entry: str, f: Any, kwargs: dict[str, Any]) -> None:
    """Refuse, before ``f`` runs, a keyword argument meant for ``entry`` but misspelt, or one ``f``
    does not take. Keywords ``f`` names as parameters are passed through undifferentiated."""
    if not kwargs:
        return
    try:
        parameters = inspect.signature(f).parameters
    except (TypeError, ValueError):  # no signature (some builtins): pass everything through
        return
    named = {k for k, p in parameters.items() if p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL)}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    own = RESERVED[entry]
    for key in kwargs:
        if key in named:
            continue
        import difflib  # only for a keyword f does not name: import zygotepy does not pay for it

        close = difflib.get_close_matches(key, own, n=1, cutoff=0.7)
        if close:
            raise TypeError(
                f"{entry} got an unknown keyword argument {key!r}; did you mean {close[0]}=? ({entry}'s own "
                f"keywords are {', '.join(own)}; other keywords are passed to {callable_name(f)}, "
                f"which does not name {key!r} as a parameter)")
        if not takes_any:
            raise TypeError(
                f"{entry} got the keyword argument {key!r}, which {callable_name(f)} does not take "
                f"({entry}'s own keywords are {', '.join(own)}; other keywords are passed to the "
                f"function undifferentiated)")


def gradient(f: Callable[..., Any], *args: Any, argnums: Any = None, wrt: Any = None,
             has_aux: bool = False, **kwargs: Any) -> Any:
    """The gradient of a real-scalar-valued ``f`` at ``args``: a tuple, one entry per argument.

    ``argnums`` (an int or tuple of ints, negative counting from the end) or ``wrt`` (argument
    names) select the arguments to differentiate; the tuple then has one entry per selected
    argument. With ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``(grads, aux)``, as in JAX. Other keyword arguments are passed to ``f`` and not
    differentiated; a misspelt one of gradient's own (``argnum=``) is an error. With a single
    :class:`Params` argument, ``f`` takes no arguments and the result is a :class:`Grads`.

    Example:
        >>> import zygotepy as zp
        >>> zp.gradient(lambda x, y: x * y + y, 2.0, 3)
        (3.0, 3.0)
        >>> zp.gradient(lambda x, y: x * y, 2.0, 3.0, argnums=-1)
        (2.0,)
        >>> zp.gradient(lambda x: (x ** 2, "aux"), 3.0, has_aux=True)
        ((6.0,), 'aux')
    """
    check_keywords("gradient", f, kwargs)
    result = isolated(_withgradient, f, args, argnums, wrt, kwargs, "gradient" if has_aux else None)
    return (result.grad, result.val[1]) if has_aux else result.grad


class WithGradient(NamedTuple):
    """``withgradient``'s result: the value and the gradient tuple."""

    val: Any
    grad: Any


def withgradient(f: Callable[..., Any], *args: Any, argnums: Any = None, wrt: Any = None,
                 **kwargs: Any) -> WithGradient:
    """``(val, grad)``: the value of ``f`` and its gradient (as :func:`gradient`), in one pass.

    If ``f`` returns a tuple, its first entry is differentiated and ``val`` is the whole tuple
    (Zygote's ``withgradient``): extra outputs ride along undifferentiated.

    Example:
        >>> import zygotepy as zp
        >>> zp.withgradient(lambda x: x ** 2, 3.0)
        WithGradient(val=9.0, grad=(6.0,))
        >>> zp.withgradient(lambda x, y: x * y, 2.0, 5.0, argnums=0)
        WithGradient(val=10.0, grad=(5.0,))
        >>> zp.withgradient(lambda x: (x ** 2, x + 1), 3.0)
        WithGradient(val=(9.0, 4.0), grad=(6.0,))
    """
    check_keywords("withgradient", f, kwargs)
    return isolated(_withgradient, f, args, argnums, wrt, kwargs, "withgradient")  # (see _trace.isolated)


def _loss(f: Any, out: Any, tuples: str | None) -> Any:
    """The differentiated part of ``f``'s output: all of it, or the first entry of a tuple when
    ``tuples`` names the entry point that allows it (``gradient`` only with ``has_aux``)."""
    if tuples is None or not isinstance(out, tuple):
        if tuples == "gradient":
            raise TypeError(f"gradient with has_aux=True needs {callable_name(f)} to return a pair "
                            f"(value, aux), but it returned {type(unbox_all(out)).__name__}")
        return out
    if tuples == "gradient" and len(out) != 2:
        raise TypeError(f"gradient with has_aux=True needs {callable_name(f)} to return a pair "
                        f"(value, aux), but it returned a tuple of length {len(out)}")
    if not out:
        raise NotScalarError(f"{tuples} needs {callable_name(f)} to return a real scalar (or a tuple whose "
                             "first entry is one), but it returned an empty tuple")
    return out[0]


def _withgradient(f: Any, args: tuple[Any, ...], argnums: Any, wrt: Any,
                  kwargs: dict[str, Any], tuples: str | None) -> WithGradient:
    if len(args) == 1 and isinstance(args[0], Params):
        trace, _, out = _run_traced(f, (), {}, None, args[0].by_id())  # (the caller isolated it)
        loss = _loss(f, out, tuples)
        _check_scalar(f, loss)
        result = WithGradient(unbox(out, trace)[0], _grads_from(
            trace, _seeds(loss, trace, 1.0), args[0], once=True))
        write_back(trace)
        del out, loss
        release_escaped(trace)
        return result
    selected = _selection(f, len(args), argnums, wrt, "gradient" if tuples != "withgradient" else tuples)
    trace, boxed, out = _run_traced(f, args, kwargs, selected, None)  # (the caller isolated it)
    loss = _loss(f, out, tuples)
    _check_scalar(f, loss)
    cts = backward(trace, _seeds(loss, trace, 1.0), once=True)
    grads = tuple([user_gradient(b, a, cts) for b, a in zip(boxed, args, strict=True)])
    if selected is not None:
        grads = tuple(grads[i] for i in selected)
    write_back(trace)
    result = WithGradient(unbox(out, trace)[0], grads)
    del boxed, out, loss, cts
    release_escaped(trace)
    return result


def reverse_jacobian(f: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """The Jacobian by reverse mode: one pullback per output element (see ``zygotepy.jacobian``).

    Example:
        >>> import numpy as np
        >>> reverse_jacobian(lambda x: x ** 2, np.array([1.0, 2.0]))
        (array([[2., 0.],
               [0., 4.]]),)
    """
    trace, (y, back) = _vjp(f, args, False, kwargs)
    y_arr = np.asarray(unbox_all(y))  # only its shape and dtype: seeds are constants
    rows: list[tuple[Any, ...]] = []
    for index in np.ndindex(*y_arr.shape):
        seed = np.zeros_like(y_arr, dtype=np.result_type(y_arr.dtype, np.float64))
        seed[index] = 1.0
        rows.append(back(seed if y_arr.ndim else seed[()]))
    out = []
    for i, a in enumerate(args):
        shape = np.shape(unbox_all(a))
        # entries may be traced by an outer differentiation: assemble them through the dispatcher
        block = [np.zeros(shape) if r[i] is None else r[i] for r in rows]
        stacked = call(np.stack, block) if block else np.zeros((0, *shape))
        out.append(call(np.reshape, stacked, y_arr.shape + shape))
    write_back(trace)  # f's writes into arrays, once every row is pulled back
    del back, y, rows
    release_escaped(trace)  # traced values f stored where they outlive the call: plain there
    return tuple(out)


def rrule_via_engine(f: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``(y, pullback)`` in rulescore's protocol, computed by differentiating ``f``."""
    y, boxed, sweep = _pullback(f, args, kwargs)

    def via_ad_pullback(ybar: Any) -> tuple[Any, ...]:
        cts = sweep(ybar)
        return (NoTangent(), *(_assemble(b, cts) for b in boxed))

    return y, via_ad_pullback


# -- implicit parameters -----------------------------------------------------------------------------
def _arrays_in(x: Any, out: list[np.ndarray], seen: set[int]) -> None:
    if id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, np.ndarray):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _arrays_in(v, out, seen)
    elif isinstance(x, dict):
        for v in x.values():
            _arrays_in(v, out, seen)
    elif not isinstance(x, (int, float, complex, str, bytes, type(None))):
        for v in fields_of(x).values():
            _arrays_in(v, out, seen)


class Params:
    """Implicit parameters: arrays tracked by identity wherever the code reaches them (closures,
    globals, attributes). Objects, lists, tuples and dicts are searched for arrays.

    Zygote's ``push!``, ``union!`` and ``delete!`` are :meth:`add`, :meth:`update` (or
    :meth:`union`, which returns a new ``Params``) and :meth:`discard`; ``copy!`` between the
    parameters and a flat vector is :meth:`copy_to` and :meth:`copy_from`.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> W = np.array([1.0, 2.0])
        >>> gs = zp.gradient(lambda: (W * W).sum(), zp.params(W))
        >>> gs[W]
        array([2., 4.])
        >>> b = np.zeros(1)
        >>> ps = zp.params(W)
        >>> ps.add(b); ps.add(W); len(ps)       # by identity: W is there once
        2
        >>> ps.discard(b); b in ps, len(ps.union([b, np.ones(3)]))
        (False, 3)
    """

    def __init__(self, *xs: Any) -> None:
        arrays: list[np.ndarray] = []
        _arrays_in(xs, arrays, set())
        self._arrays = arrays

    def by_id(self) -> dict[int, np.ndarray]:
        return {id(a): a for a in self._arrays}

    def add(self, x: Any) -> None:
        """Add the arrays in ``x`` (an array, or an object or container holding arrays) that are not
        parameters yet (Zygote's ``push!``)."""
        self.update(x)

    def update(self, *xs: Any) -> None:
        """Add the arrays in each of ``xs`` (another :class:`Params` too) not already present
        (Zygote's ``union!``)."""
        found: list[np.ndarray] = []
        _arrays_in(xs, found, {id(a) for a in self._arrays})
        self._arrays.extend(found)

    def union(self, *xs: Any) -> Params:
        """A new :class:`Params` with these parameters and the arrays of ``xs``, each once."""
        return Params(self._arrays, *xs)

    def discard(self, x: Any) -> None:
        """Remove the arrays in ``x`` that are parameters (absent ones are ignored: Zygote's ``delete!``)."""
        gone: list[np.ndarray] = []
        _arrays_in(x, gone, set())
        self._arrays = [a for a in self._arrays if all(a is not g for g in gone)]

    def copy_to(self, out: np.ndarray | None = None) -> np.ndarray:
        """The parameters' values, flattened in order into one vector (``out``, if given: Zygote's
        ``copy!(x, ps)``), for optimisers that work on flat vectors (``scipy.optimize``)."""
        return _flatten_into(out, self._arrays, "Params.copy_to")

    def copy_from(self, flat: Any) -> None:
        """Write a flat vector back into the parameter arrays, in place and in order (Zygote's
        ``copy!(ps, x)``); its length must be the parameters' total size."""
        flat = np.asarray(flat)
        if flat.shape != (self._size(),):
            raise ValueError(f"Params.copy_from needs a vector of length {self._size()} (the parameters' "
                             f"total size), got shape {flat.shape}")
        start = 0
        for a in self._arrays:
            a[...] = flat[start:start + a.size].reshape(a.shape)
            start += a.size

    def _size(self) -> int:
        return sum(a.size for a in self._arrays)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __contains__(self, x: object) -> bool:
        return any(a is x for a in self._arrays)

    def __repr__(self) -> str:
        return f"Params([{', '.join(f'{a.dtype}{list(a.shape)}' for a in self._arrays)}])"


def _flatten_into(out: np.ndarray | None, values: list[Any], entry: str) -> np.ndarray:
    """``values`` raveled one after the other into the vector ``out`` (a new one if ``None``)."""
    size = sum(np.size(v) for v in values)
    if out is None:
        out = np.empty(size, dtype=np.result_type(np.float64, *values))
    elif out.shape != (size,):
        raise ValueError(f"{entry} needs a vector of length {size} (the parameters' total size), "
                         f"got shape {out.shape}")
    start = 0
    for v in values:
        out[start:start + np.size(v)] = np.ravel(v)
        start += np.size(v)
    return out


def params(*xs: Any) -> Params:
    """Collect implicit parameters (arrays, or objects/containers holding arrays).

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> len(zp.params(np.ones(2), [np.zeros(3), {"b": np.ones(1)}]))
        3
    """
    return Params(*xs)


def _add_or_none(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


class Grads(Mapping[Any, Any]):
    """Gradients of implicit parameters, indexed by the parameter arrays themselves; ``None`` for a
    parameter the result does not depend on.

    As Zygote's ``Grads``: ``gs[W]``, ``keys()``, ``items()``; arithmetic ``gs1 + gs2``,
    ``gs1 - gs2``, ``-gs``, ``gs * 2``, ``2 * gs``, ``gs / 2`` (``None`` read as zero between two
    ``Grads``, kept by scalars); :meth:`map`, :meth:`merge` (``merge!``) and :meth:`copy_to`
    (``copy!`` into a flat vector).

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> W = np.array([3.0])
        >>> gs = zp.gradient(lambda: (W ** 2).sum(), zp.params(W))
        >>> (2 * gs)[W], (gs + gs)[W], (gs - gs * 0.5)[W], (gs / 2)[W]
        (array([12.]), array([12.]), array([3.]), array([3.]))
        >>> gs.map(np.sign)[W], gs.copy_to()
        (array([1.]), array([6.]))
    """

    def __init__(self, params: Params, grads: dict[int, Any]) -> None:
        self.params = params
        self._grads = grads

    def __getitem__(self, p: Any) -> Any:
        if p not in self.params:
            raise KeyError("not one of the parameters (parameters are matched by identity)")
        return self._grads.get(id(p))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def _combine(self, other: Any, op: Callable[[Any, Any], Any]) -> Grads:
        if isinstance(other, Grads):
            ps = self.params.union(other.params)
            return Grads(ps, {id(p): op(self._grads.get(id(p)), other._grads.get(id(p))) for p in ps})
        return Grads(self.params, {id(p): op(self[p], other) for p in self.params})

    def __add__(self, other: Grads) -> Grads:
        if not isinstance(other, Grads):
            return NotImplemented
        return self._combine(other, _add_or_none)

    def __sub__(self, other: Grads) -> Grads:
        if not isinstance(other, Grads):
            return NotImplemented
        return self._combine(other, lambda a, b: _add_or_none(a, None if b is None else -b))

    def __neg__(self) -> Grads:
        return self.map(operator.neg)

    def __mul__(self, s: Any) -> Grads:
        if isinstance(s, Grads):
            return self._combine(s, lambda a, b: None if a is None or b is None else a * b)
        return self._combine(s, lambda a, b: None if a is None else a * b)

    __rmul__ = __mul__

    def __truediv__(self, s: Any) -> Grads:
        if isinstance(s, Grads):
            return NotImplemented
        return self._combine(s, lambda a, b: None if a is None else a / b)

    def map(self, f: Callable[[Any], Any]) -> Grads:
        """``f`` applied to each gradient (``None`` stays ``None``), as new ``Grads``.

        Example:
            >>> import numpy as np, zygotepy as zp
            >>> W, b = np.array([-2.0, 3.0]), np.zeros(1)
            >>> gs = zp.gradient(lambda: (W * W).sum(), zp.params(W, b))
            >>> clipped = gs.map(lambda g: np.clip(g, -1.0, 1.0))
            >>> clipped[W], clipped[b]
            (array([-1.,  1.]), None)
        """
        return Grads(self.params, {id(p): None if (g := self._grads.get(id(p))) is None else f(g)
                                   for p in self.params})

    def merge(self, *others: Grads) -> Grads:
        """Accumulate the gradients of ``others`` into these, in place (Zygote's ``merge!``): a
        parameter of ``others`` not among these is added (to these ``Grads``, not to the
        :class:`Params` they came from). Returns ``self``.

        Example:
            >>> import numpy as np, zygotepy as zp
            >>> W, V = np.array([1.0]), np.array([2.0])
            >>> total = zp.gradient(lambda: (W * 3.0).sum(), zp.params(W))
            >>> total.merge(zp.gradient(lambda: (W * V).sum(), zp.params(W, V)))
            Grads(2 parameters)
            >>> total[W], total[V]
            (array([5.]), array([1.]))
        """
        for other in others:
            self.params = self.params.union(other.params)
            for p in other.params:
                self._grads[id(p)] = _add_or_none(self._grads.get(id(p)), other._grads.get(id(p)))
        return self

    def copy_to(self, out: np.ndarray | None = None) -> np.ndarray:
        """The gradients flattened in the parameters' order into one vector (``out``, if given;
        zeros for ``None``): Zygote's ``copy!(x, gs)``, for optimisers working on flat vectors.

        Example:
            >>> import numpy as np, zygotepy as zp
            >>> W, b = np.array([[1.0, 2.0]]), np.zeros(1)
            >>> zp.gradient(lambda: (W * W).sum(), zp.params(W, b)).copy_to()
            array([2., 4., 0.])
        """
        values = [np.zeros(p.shape) if (g := self._grads.get(id(p))) is None else g for p in self.params]
        return _flatten_into(out, values, "Grads.copy_to")

    def __repr__(self) -> str:
        return f"Grads({len(self)} parameters)"


def _grads_from(trace: Trace, seeds: list[tuple[int, Any]], ps: Params, once: bool = False) -> Grads:
    cts = backward(trace, seeds, once)
    grads = {}
    for p in ps:
        box = trace.param_boxes.get(id(p))
        grads[id(p)] = None if box is None else user_gradient(box, p, cts)
    return Grads(ps, grads)
