"""The dispatcher: every call, operator and NumPy call inside differentiated code lands here.

``call(fn, *args)`` only classifies a call; what happens to it is the registry's answer, read
once, and the trace kind's:

1. no trace active: just call it;
2. the callable is normalized (a bound method becomes its function with ``self`` first, a builtin
   method of an array, a number, a string or a container its class's method, a ``partial`` its
   function) and, for builtins that iterate or inspect their arguments (``list``, ``sum``,
   ``len``, ...), an argument's Python protocol methods are run through here;
3. a handling entry of ``rulescore.rrule`` (``rc.HANDLING_KINDS``, the engine's entries are
   :data:`ENGINE_ENTRIES`) says what to do with a callable that needs no rule: a special form
   runs the engine's implementation, a structural helper runs on plain values, a pass-through
   helper hands back its argument, a reference-only builtin runs as it is when no rule applies;
4. a rule (a legacy ``@adjoint`` first, then an rrule or frule) applies at the innermost level
   that traces the arguments, and that trace kind applies it in its one ``process_rule``
   (a reverse trace records the pullback, a forward trace pushes tangents). The rule runs with
   the arguments unboxed for that level and only the outer levels active, so the outer levels
   see inside it (nested AD);
5. otherwise a Python function is differentiated through: its rewritten code (the trace's
   ``python_target``) runs, so calls inside it come back here (Zygote's "rrule first, else
   recurse");
6. a compiled function with no rule that receives a traced value raises ``UntraceableError``.
"""

from __future__ import annotations

import collections
import contextvars
import copy
import functools
import heapq
import inspect
import operator
import os
import sys
import types
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._arithmetic import conj
from rulescore._checks import callable_name
from rulescore._fitting import fit, proj, stand_in
from rulescore._projection import project
from rulescore._zeros import NO_TANGENT_DATA
from zygotepy._adjoint_table import ADJOINTS
from zygotepy._caches import BoundedCache
from zygotepy._errors import LIBRARY_CALL, UntraceableError, user_code
from zygotepy._trace import (
    LEVELS,
    NO_RULE,
    NOT_FAST,
    PLAIN_ATTRIBUTES,
    BoundBoxMethod,
    Box,
    Trace,
    dispatch_from_box,
    escaped,
    log_call,
    opaque_callable,
    unbox_all,
)
from zygotepy._views import FlatIndexer, latest, note_stored, ufunc_into

#: Builtins that only move references around: they may see boxes and need no rule (those with
#: rules for some argument types, ``sum`` of floats, run as they are when none applies).
_REFERENCES = (
    list, tuple, dict, set, frozenset, zip, enumerate, iter, next, reversed, isinstance,
    issubclass, hasattr, setattr, object.__setattr__, callable, id, super, object, slice, vars, dir,
    types.SimpleNamespace, sum, min, max,  # over an iterable their rules do not cover: Python adds
    heapq.heappush, heapq.heappop, heapq.heapify, heapq.heappushpop, heapq.heapreplace,
    *(getattr(heapq, n) for n in ("_heapify_max", "_heappop_max", "_heapreplace_max", "heapify_max",
                                  "heappop_max", "heapreplace_max", "heappush_max", "heappushpop_max")
      if hasattr(heapq, n)),  # nsmallest/nlargest's helpers (public from Python 3.14)
    collections.deque, copy.copy, operator.itemgetter, operator.attrgetter,
    rc.Thunk, rc.InplaceableThunk,  # a lazy tangent keeps its function (pullbacks traced again build them)
)
CONTAINERS = (tuple, list, dict)
MUTABLE_CONTAINERS = (list, dict, set, collections.deque)
#: Classes whose builtin methods dispatch as the class's method (``xs.append`` as ``list.append``).
_METHOD_OWNERS = frozenset({np.ndarray, float, complex, str, bytes, *MUTABLE_CONTAINERS})
#: Callable objects that only fetch references (``itemgetter(0)(pair)``).
_REFERENCE_CALLABLE_TYPES = frozenset({operator.itemgetter, operator.attrgetter})
_BUILTIN_GETITEMS = frozenset({tuple.__getitem__, list.__getitem__, dict.__getitem__})


def plain_container(x: Any) -> bool:
    """A tuple, list or dict, or a subclass indexing as they do (``defaultdict``, namedtuples):
    reading or writing an entry only moves a reference."""
    t = type(x)
    return t in CONTAINERS or (
        t is not Box and isinstance(x, CONTAINERS) and t.__getitem__ in _BUILTIN_GETITEMS)


def _type_of(x: Any, *rest: Any) -> Any:
    return type(x, *rest) if rest else x.__class__  # a box reports its primal's class


def _map(fn: Any, *iterables: Any) -> Any:
    iterables = tuple(python_iterator(it) for it in iterables)
    return (call(fn, *items) for items in zip(*iterables))  # noqa: B905  (map stops at the shortest)


def _filter(fn: Any, iterable: Any) -> Any:
    return (v for v in python_iterator(iterable) if (v if fn is None else call(fn, v)))


def _sorted(iterable: Any, /, *, key: Any = None, reverse: bool = False) -> Any:
    return sorted(python_iterator(iterable), key=None if key is None else (lambda v: call(key, v)),
                  reverse=reverse)


def _reduce(fn: Any, iterable: Any, *initial: Any) -> Any:
    items = iter(python_iterator(iterable))
    acc = initial[0] if initial else next(items)
    for v in items:
        acc = call(fn, acc, v)
    return acc


def _sort(xs: list[Any], /, *, key: Any = None, reverse: bool = False) -> None:
    xs.sort(key=None if key is None else (lambda v: call(key, v)), reverse=reverse)


def _extending(method: Any) -> Any:
    """``list.extend``, ``dict.update``, ...: an argument with Python protocol methods is iterated
    through the dispatcher; what is stored is noted (:func:`~zygotepy._views.note_stored`)."""
    def extend(container: Any, *args: Any, **kwargs: Any) -> Any:
        for v in (*args, *kwargs.values()):
            note_stored(container, v)
        if args and type(args[0]) not in _PLAIN_ARGUMENTS:
            args = (python_iterator(args[0]), *args[1:])
        return method(container, *args, **kwargs)

    return extend


def note_reference_stores(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """What a reference builtin stores where it outlives the call (:func:`~zygotepy._views.note_stored`):
    ``xs.append(v)``, ``d.setdefault(k, v)``, ``heapq.heappush(h, v)`` into their container,
    ``setattr(o, name, v)`` into ``o``."""
    if type(args[0]) in MUTABLE_CONTAINERS:
        for v in (*args[1:], *kwargs.values()):
            note_stored(args[0], v)
    elif (fn is setattr or fn is object.__setattr__) and len(args) == 3:
        note_stored(args[0], args[2])


#: Values never searched for boxes inside.
_LEAVES = (np.ndarray, np.generic, int, float, complex, str, bytes, types.ModuleType, type)
#: Outputs that never carry a tangent: rules returning them are not recorded.
PLAIN_OUTPUTS = frozenset(NO_TANGENT_DATA)
_NO_LEVELS: tuple[Trace, ...] = ()


RRULES, FRULES = rc.rrule, rc.frule
#: callable -> how the engine handles it without a rule (the registry's handling entries)
HANDLED = RRULES.handled
_RRULE_PRIMALS, _FRULE_PRIMALS, _ADJOINT_PRIMALS = RRULES.primals, FRULES.primals, ADJOINTS.primals


def call(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` the way the engine differentiates it (see the module documentation)."""
    levels = LEVELS.get()
    if not levels:
        return fn(*args, **kwargs)
    tf = type(fn)
    if tf is types.FunctionType:
        # a Python function without rules (a helper, a closure, a rule's body traced by an outer
        # level) runs rewritten: resolve's answer, without its search for a rule
        top = levels[-1]
        if (not top.with_params and top.log is None and fn not in _RRULE_PRIMALS
                and fn not in _FRULE_PRIMALS and fn not in _ADJOINT_PRIMALS):
            entry = HANDLED.get(fn)
            if entry is not None:
                if entry.kind == "structural":
                    return structural_call(fn, args, kwargs)
                if entry.kind == "pass_through" and not kwargs:
                    y = entry.impl(fn, args)  # type: ignore[misc]
                    if y is not NOT_FAST:
                        return y
            target = top.python_target(fn, False)
            if target is not None:
                return target(*args, **kwargs)
    elif (fn is type or fn is isinstance or fn is len or fn is issubclass) and levels[-1].log is None:
        # answered on the spot: ``type`` (a special form) and inspections whose only rule is
        # rulescore's non-differentiable one, which see a box as its primal (``isinstance``
        # through ``__class__``, ``len`` through ``__len__``). Rule bodies and helpers traced at
        # outer levels call them on most lines (``type(x) is float``); the general path would
        # look up their rules and unbox their arguments level by level.
        if fn is not len or not args or type(args[0]) in _PLAIN_ARGUMENTS or python_dunder(
                type(args[0]), "__len__") is None:
            return (_type_of if fn is type else fn)(*args, **kwargs)
    if not kwargs:  # traced_call's first step, inlined
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(fn, args, top)
            if y is not NOT_FAST:
                return y
    return resolve(levels, fn, args, kwargs, True)


class DispatchedTrace(Trace):
    """The base of every trace kind: what a box's operations ask of the innermost trace
    (:class:`~zygotepy._trace.Box` defines them and delegates here), answered by this module."""

    __slots__ = ()

    def call(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return call(fn, *args, **kwargs)

    def traced(self, levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               recurse: bool) -> Any:
        return traced_call(levels, fn, args, kwargs, recurse)

    def resolve(self, levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                recurse: bool) -> Any:
        return resolve(levels, fn, args, kwargs, recurse)

    def attribute(self, box: Box, name: str) -> Any:
        """``box.name``: a method of the primal's class bound to the box, a property or cached
        property run (rewritten) on the box, a Python ``__getattr__`` differentiated through, or
        the ``getattr`` rule; ``.flat`` of an array is an index map into its traced value."""
        primal = box._zp_value
        while type(primal) is Box:
            primal = primal._zp_value
        if type(primal) is np.ndarray:  # (no instance fields: T and mT are its class's descriptors)
            function = _ARRAY_ATTRIBUTE_FUNCTIONS.get(name)
            if function is not None and not _own_array_getattr(primal, name):
                # (a call of it: rule bodies traced at nested levels read them on most calls)
                return traced_call(LEVELS.get(), function, (box,), {}, True)
            if name == "flat":  # reads and writes through it are traced
                return FlatIndexer(box)
        if name in getattr(primal, "__dict__", ()):
            if opaque_callable(primal.__dict__[name]):  # a function kept in a field (SciPy's _asarray)
                return primal.__dict__[name]
            kind, attr = attribute_kind(type(primal), name)
            if kind == "cached":  # a cache is a function of the fields: recompute it from them
                return dispatch_from_box(attr, box)
            return dispatch_from_box(getattr, box, name)  # an instance attribute shadows the class's
        kind, attr = attribute_kind(type(primal), name)
        if kind == "method":
            return types.MethodType(attr, box)
        if kind == "cmethod":
            return BoundBoxMethod(attr, box)
        if kind == "property" or kind == "cached":  # run (rewritten) on the box; a cache is not filled
            return dispatch_from_box(attr, box)
        if kind == "hook" and not getattr_has_own_rule(primal, name):
            return dispatch_from_box(attr, box, name)
        if kind == "class":
            return getattr(box._zp_value, name)
        return dispatch_from_box(getattr, box, name)


#: rulescore's helpers that pullbacks call on every cotangent (``"pass_through"`` entries), by
#: the position of the argument each may hand back unchanged: ``project``/``proj`` (a cotangent already of its
#: primal's type, shape and dtype), ``fit`` (the same for an frule's output tangent), ``conj``
#: (a real value) and ``stand_in`` (anything but an array; an array gives a constant of its
#: shape and dtype). Their branches read only types,
#: shapes and dtypes, which boxing does not change, so the plain call on the unboxed values
#: says what the traced call would do; when the answer is the argument itself, the traced call
#: would return the box unchanged: nested levels skip tracing these bodies line by line.
_PLAIN_NUMBERS = (float, np.float64, np.ndarray)


def _passing(kept: int) -> Any:
    """The handler of a ``"pass_through"`` helper that may hand back ``args[kept]``."""
    return functools.partial(_pass_through, kept=kept)


def _pass_through(fn: Any, args: tuple[Any, ...], kept: int) -> Any:
    """``fn(*args)`` for a pass-through helper on floats and arrays (boxed or not) when it hands
    back ``args[kept]`` (or, for ``stand_in``, a constant); ``NOT_FAST`` otherwise."""
    n = len(args)
    if n <= kept:
        return NOT_FAST
    plain = []
    for p in args:
        tp = type(p)
        while tp is Box:
            p = p._zp_value
            tp = type(p)
        if tp not in _PLAIN_NUMBERS or (tp is np.ndarray and p.dtype.kind not in "fc"):
            return NOT_FAST
        plain.append(p)
    y = fn(*plain)
    if y is plain[kept]:
        return args[kept]
    return y if fn is stand_in else NOT_FAST  # a stand-in depends on the shape and dtype alone


def _fitting_pass_through(fn: Any, args: tuple[Any, ...]) -> Any:
    """:func:`_pass_through` of ``project``, ``proj`` and ``fit`` (a value onto its primal's
    space), whose commonest answer is told by one comparison: a value that already fits its primal
    (a float onto a float, a NumPy float64 onto one, a real or complex array of the primal's shape
    and dtype) is what each of the three returns as it is. Pullbacks call them on every cotangent,
    so at a nested level this replaces a call on the plain values per cotangent.

    Example:
        >>> from zygotepy._trace import Trace
        >>> d = Box(np.ones(2), Trace(()), 0)
        >>> _fitting_pass_through(proj, (np.zeros(2), d)) is d
        True
    """
    if len(args) == 2:
        x, d = args
        while type(x) is Box:
            x = x._zp_value
        v = d
        while type(v) is Box:
            v = v._zp_value
        tx = type(x)
        if tx is np.ndarray:
            if type(v) is np.ndarray and v.shape == x.shape and v.dtype == x.dtype and x.dtype.kind in "fc":
                return d
        elif (tx is float or tx is np.float64) and type(v) is tx:
            return d
    return _pass_through(fn, args, 1)


def structural_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` for a helper marked :func:`rulescore.structural`, on the plain
    values under the boxes (in tuples, lists and dicts too): its answer depends on types, shapes
    and dtypes only, so it is what the traced body would give, and it must carry no derivative
    (checked: a helper marked by mistake raises instead of cutting the derivative)."""
    plain = [_plain(a) if type(a) in _HOLDERS else a for a in args]  # (a frame per holder only)
    y = fn(*plain, **{k: _plain(v) for k, v in kwargs.items()}) if kwargs else fn(*plain)
    if not rc.carries_no_derivative(y):
        raise UntraceableError(
            f"{callable_name(fn)} is marked rulescore.structural, so {user_code()} ran it on plain values, "
            f"but it returned {type(y).__name__}, which can carry a derivative: remove the marker "
            "(its result depends on the numbers it is given) or return shapes, dtypes, flags or ints only")
    return y


def _plain(x: Any) -> Any:
    """``x`` with every box in it (through tuples, lists and dicts) replaced by its primal."""
    t = type(x)
    if t is Box:
        x = x._zp_value
        while type(x) is Box:
            x = x._zp_value
        return x
    if t is tuple or t is list:
        return t([_plain(v) if type(v) in _HOLDERS else v for v in x])
    if t is dict:
        return {k: _plain(v) if type(v) in _HOLDERS else v for k, v in x.items()}
    return x


#: What :func:`_plain` looks inside.
_HOLDERS = frozenset({Box, tuple, list, dict})


def traced_call(levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                recurse: bool) -> Any:
    """Differentiate ``fn(*args, **kwargs)`` under the active ``levels`` (``recurse``: a Python
    function without a rule may be differentiated through)."""
    if not kwargs:
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(fn, args, top)
            if y is not NOT_FAST:
                return y
    return resolve(levels, fn, args, kwargs, recurse)


def resolve(levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
             recurse: bool) -> Any:
    """:func:`traced_call` past its first-order fast path: every case of the module documentation."""
    tf = type(fn)
    if (tf is types.MethodType and not RRULES.has_rules(fn) and not FRULES.has_rules(fn)
            and not ADJOINTS.has_rules(fn)) or tf is BoundBoxMethod:
        fn, args, tf = fn.__func__, (fn.__self__, *args), type(fn.__func__)
        if random_source(args[0]):
            note_random_source(args[0])
    elif tf is Box:  # a traced callable object: call its class's __call__ with the box as self
        fn, args = type(unbox_all(fn)).__call__, (fn, *args)
        tf = type(fn)
    elif tf is functools.partial:
        return traced_call(levels, fn.func, (*fn.args, *args), {**fn.keywords, **kwargs}, recurse)
    elif tf is operator.methodcaller and args:  # methodcaller("sum")(x): x.sum() through the dispatcher
        maker, called = fn.__reduce__()  # (methodcaller, (name, *args)), or a partial holding the keywords
        if type(maker) is functools.partial:
            name, keywords = maker.args[0], maker.keywords
        else:
            (name, *called), keywords = called, {}
        owner = args[0]
        method = getattr(owner, name) if type(owner) is Box else python_attribute(owner, name)
        return call(method, *called, **keywords)
    elif tf is types.BuiltinFunctionType:  # also the type of builtin methods
        owner = fn.__self__
        towner = type(owner)
        if towner in _ATOMS and _atoms_only(args, kwargs) and levels[-1].log is None and not (
                _ATOM_ADJOINTS[1] if _ATOM_ADJOINTS[0] == ADJOINTS.version else _adjoints_on_atoms()):
            return fn(*args, **kwargs)  # "x_".startswith("x"): C code on strings and numbers alone
        if towner in _METHOD_OWNERS or isinstance(owner, np.generic):
            # x.clip(lo, traced_hi), W.sum() for a parameter W, xs.append(box), "{:.3f}".format(loss):
            # the class's method, with its rule or its handling entry
            fn, args = getattr(towner, fn.__name__), (owner, *args)
            tf = type(fn)
    if (tf is types.BuiltinFunctionType or tf is type) and fn in ITERATING:
        y = protocol_call(fn, args, kwargs)
        if y is not NOT_FAST:
            return y
    try:
        entry = HANDLED.get(fn)
    except TypeError:  # an unhashable callable object
        entry = None
    if entry is not None:
        kind = entry.kind
        if levels[-1].log is not None and (kind != "reference" or not RRULES.has_rules(fn)):
            log_call(levels[-1], fn, args, kind.replace("_", " "), entry)
        if kind == "special_form":
            return entry.impl(*args, **kwargs)  # type: ignore[misc]
        if kind == "structural":
            return structural_call(fn, args, kwargs)
        if kind == "reference" and fn not in _RRULE_PRIMALS and fn not in _FRULE_PRIMALS:
            if args:
                note_reference_stores(fn, args, kwargs)
            return fn(*args, **kwargs)
    if levels[-1].with_params:
        args, kwargs = _substitute_params(levels, args, kwargs)
    if fn is operator.getitem and (plain_container(args[0]) or isinstance(args[0], rc.Tangent)):
        return args[0][args[1]]  # reading a plain container only moves a reference
    if fn is getattr and len(args) > 1 and args[1] in PLAIN_ATTRIBUTES:
        return getattr(unbox_all(args[0]), *args[1:])  # shape, dtype, ...: no derivative, hot

    if tf is not np.ufunc and len(args) > 2 and "out" not in kwargs:
        args, kwargs = _out_by_keyword(fn, args, kwargs)
    if (tf is np.ufunc and len(args) > fn.nin) or (kwargs and _names_an_array(kwargs.get("out"))):
        return ufunc_into(levels, fn, args, kwargs)  # a write into out=: functional
    given = args, kwargs  # f's own call: a declared positional form is its rules' only
    if kwargs and (RRULES.has_rules(fn) or FRULES.has_rules(fn)):
        args, kwargs = bind_traced_keywords(fn, args, kwargs)
    dunders = OPERATOR_DUNDERS.get(fn) if tf is types.BuiltinFunctionType else None
    if dunders is not None:
        result = _user_operator(dunders, args)
        if result is not _NOT_USER:
            return result
    top = levels[-1]
    if types.GeneratorType in map(type, args) and (RRULES.has_rules(fn) or FRULES.has_rules(fn)):
        args = tuple(list(a) if type(a) is types.GeneratorType else a for a in args)  # math.fsum(genexpr)
        given = args, kwargs
    deep = top.may_have_rule(fn, args)
    if deep and _closure_argument(args, kwargs):
        rule = top.lookup(fn, args)
        if rule is not None and rule.config:  # a rule calling back into the engine (a solver's)
            args, kwargs = _closure_converted(fn, args, kwargs, levels)
            given = args, kwargs
    trace = innermost(levels, args, kwargs, deep)
    if trace is None and top.records and ADJOINTS.active and ADJOINTS.has_rules(fn):
        trace = top  # a legacy adjoint applies even with no traced argument (nestlevel() relies on it)
    if deep and trace is not None:  # the trace that owns the arguments decides how (its mode)
        y = trace.differentiate(fn, args, kwargs)
        if y is not NO_RULE:
            return y
    args, kwargs = given
    if recurse:
        target = top.python_target(fn, top.with_params)
        if target is None and fn is operator.getitem:
            method = python_dunder(type(unbox_all(args[0])), "__getitem__")  # np.r_[a, b]
            if method is not None:
                return call(method, *args)
        if target is not None:
            if top.log is not None:
                log_call(top, fn, args, "traced through")
            return target(*args, **kwargs)
    if trace is None or (entry is not None and entry.kind == "reference") or _user_class(fn) or (
            tf in _REFERENCE_CALLABLE_TYPES):
        if top.log is not None:
            how = "reference" if entry is not None and entry.kind == "reference" else "primitive"
            log_call(top, fn, args, "constant (no traced argument)" if trace is None else how, entry)
        return fn(*args, **kwargs)
    return _untraceable(fn, args, kwargs, trace)


#: Values no traced value can hide in (exact types: a subclass may run Python code).
_ATOMS = frozenset({str, bytes, int, bool, float, type(None)})


def _atoms_only(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether every argument is a string, a number or ``None`` (see :data:`_ATOMS`): a C method of
    such a value called on such values (sklearn's ``name.startswith("hyperparameter_")``) reaches
    no traced value, and no rule of it can see one: it runs as it is.

    Example:
        >>> _atoms_only(("a", 1, None), {"sep": ","}), _atoms_only(([1.0],), {})
        (True, False)
    """
    for a in args:
        if type(a) not in _ATOMS:
            return False
    for a in kwargs.values():
        if type(a) not in _ATOMS:
            return False
    return True


#: ``(ADJOINTS.version, whether a legacy adjoint is defined for a method of an atom's class)``
_ATOM_ADJOINTS = [-1, True]


def _adjoints_on_atoms() -> bool:
    """Whether a legacy adjoint (which applies even without traced arguments) is defined for a
    method of ``str``, ``bytes`` or a number's class (see :data:`_ATOMS`), cached per definition."""
    version = ADJOINTS.version
    found = any(getattr(f, "__objclass__", None) in _ATOMS or type(getattr(f, "__self__", ...)) in _ATOMS
                for f in ADJOINTS.primals)
    _ATOM_ADJOINTS[:] = [version, found]
    return found


def scalar_form(fn: Any) -> Any:
    """The scalar form of ``fn``'s one rrule (registered without types or a config: see
    :class:`rulescore.RulePair`'s ``scalar``) when a call of ``fn`` on real scalars has no other
    answer than that rule (no legacy adjoint, no special handling), else ``None``. A caller keeps
    it only while the registries' versions stay.

    Example:
        >>> import math
        >>> scalar_form(math.sin)(0.0), scalar_form(print)
        ((0.0, (np.float64(1.0),)), None)
    """
    entry = HANDLED.get(fn)
    if ADJOINTS.has_rules(fn) or fn is getattr or (entry is not None and entry.kind != "reference"):
        return None
    rule = RRULES.sole_rule(fn)
    return None if rule is None else rule.scalar


#: Per NumPy function, the position of its ``out`` parameter, or -1.
_OUT_POSITIONS = BoundedCache(1024)


def out_position(fn: Any) -> int:
    """The position of a NumPy function's positional ``out`` parameter (``np.dot(a, b, out)``),
    or -1 (cached): the fast paths leave a call giving it by position to the full path."""
    try:
        return _OUT_POSITIONS[fn]  # type: ignore[no-any-return]
    except KeyError:
        pass
    except TypeError:  # unhashable
        return -1
    position = -1
    if (getattr(fn, "__module__", None) or "").startswith("numpy") and type(fn) is not np.ufunc:
        try:
            names = [p.name for p in inspect.signature(fn).parameters.values() if p.kind in _POSITIONAL]
        except (TypeError, ValueError):
            names = []
        position = names.index("out") if "out" in names else -1
    _OUT_POSITIONS.put(fn, position)
    return position


def _out_by_keyword(fn: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``np.dot(a, b, c)`` as ``np.dot(a, b, out=c)``: a NumPy function's ``out`` given by position."""
    position = out_position(fn)
    if 0 <= position < len(args) and isinstance(args[position], np.ndarray | Box):
        return args[:position] + args[position + 1:], {**kwargs, "out": args[position]}
    return args, kwargs


def _names_an_array(out: Any) -> bool:
    """Whether a ufunc's ``out=`` names an array (not ``None``, a tuple of ``None`` or ``...``,
    which only asks for an array rather than a scalar)."""
    if out is None or out is Ellipsis:
        return False
    return not (type(out) is tuple and all(o is None for o in out))


def random_source(obj: Any) -> bool:
    """Whether ``obj``'s methods draw random numbers (a ``Generator`` or ``RandomState``): a
    checkpointed region notes the state of each one it draws from, so the recomputation draws
    the same numbers. ``numpy.random`` is not imported for this: without it, none exists."""
    random = sys.modules.get("numpy.random")
    return random is not None and type(obj) in (random.Generator, random.RandomState)


#: The region being watched: ``id -> (source, state before its first draw)``, or ``None``.
RANDOM_DRAWS: contextvars.ContextVar[dict[int, tuple[Any, Any]] | None] = contextvars.ContextVar(
    "zygotepy_random_draws", default=None)


def note_random_source(source: Any) -> None:
    """Remember ``source``'s state before the watched region's first draw from it."""
    draws = RANDOM_DRAWS.get()
    if draws is not None and id(source) not in draws:
        draws[id(source)] = (source, random_state(source))


def random_state(source: Any) -> Any:
    """The state of a ``Generator`` (its bit generator's) or a ``RandomState``."""
    return source.bit_generator.state if type(source) is np.random.Generator else source.get_state()


def set_random_state(source: Any, state: Any) -> None:
    if type(source) is np.random.Generator:
        source.bit_generator.state = state
    else:
        source.set_state(state)


#: (class, attribute name) -> how a box reads it; bounded: user classes may come and go.
ATTRIBUTE_KINDS = BoundedCache(1024)


def attribute_kind(cls: type, name: str) -> tuple[str, Any]:
    """How an attribute of a ``cls`` instance is read: ``("method", function)``, ``("cmethod",
    C method)``, ``("property", getter)``, ``("cached", cached_property function)``, ``("hook",
    Python __getattr__)`` (not on the class), ``("class", None)`` or ``("data", None)``."""
    key = (cls, name)
    kind = ATTRIBUTE_KINDS.get(key)
    if kind is None:
        try:
            attr = inspect.getattr_static(cls, name)
        except AttributeError:  # a field, or made by a Python __getattr__ (run in C: rewrite it)
            hook = inspect.getattr_static(cls, "__getattr__", None)
            kind = ("hook", hook) if isinstance(hook, types.FunctionType) else ("data", None)
        else:
            if isinstance(attr, types.FunctionType):
                kind = ("method", attr)
            elif isinstance(attr, (staticmethod, classmethod)):
                kind = ("class", None)
            elif isinstance(attr, property):
                kind = ("property", attr.fget)
            elif isinstance(attr, functools.cached_property):
                kind = ("cached", attr.func)
            elif isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType,
                                   types.BuiltinFunctionType)):
                kind = ("cmethod", _scalar_method(cls, name))
            elif hasattr(type(attr), "__get__"):
                kind = ("data", None)  # any other descriptor (slots, NamedTuple fields, ...)
            else:
                kind = ("class", None)  # a plain class-level constant
        ATTRIBUTE_KINDS.put(key, kind)
    return kind


def _scalar_method(cls: type, name: str) -> Any:
    """``cls.name``; for a NumPy scalar's method without rules (``np.float64.reshape``), the NumPy
    function it computes (``np.reshape``), whose rules then apply."""
    method = getattr(cls, name)
    if issubclass(cls, np.generic) and not RRULES.has_rules(method):
        function = getattr(np, name, None)
        if function is not None and RRULES.has_rules(function):
            return function
    return method


#: Array attributes that are a NumPy function of the array (the same view): a box of an array
#: reads them as that function's call, whose rule the fast paths apply, where ``getattr``'s rule
#: asks which attribute of what it reads in a body that nested levels trace line by line (``L.T``
#: and linalg's ``x.mT`` cost about 1,000 bytecodes each at the outer level of an HVP).
_ARRAY_ATTRIBUTE_FUNCTIONS = {"T": np.transpose, "mT": np.linalg.matrix_transpose}
#: ``(RRULES.version, FRULES.version, name) -> whether a getattr rule registered for arrays (not
#: the generic one) reads that attribute``; bounded (a handful of names, versions move rarely).
_OWN_ARRAY_GETATTR = BoundedCache(16)


def _own_array_getattr(array: Any, name: str) -> bool:
    """Whether a ``getattr`` rule or frule registered for arrays' class answers ``array.name``:
    then the box reads it through ``getattr`` (rules first), not as its NumPy function."""
    key = (RRULES.version, FRULES.version, name)
    own = _OWN_ARRAY_GETATTR.get(key)
    if own is None:
        rules = RRULES.lookup(getattr, (array, name)), FRULES.lookup(getattr, (array, name))
        own = any(rule is not None and bool(rule.types) for rule in rules)
        _OWN_ARRAY_GETATTR.put(key, own)
    return bool(own)


def getattr_has_own_rule(obj: Any, name: str) -> bool:
    """Whether a ``getattr`` rule registered for ``obj``'s class (not the generic one) reads
    ``obj.name``: then its Python ``__getattr__`` is not differentiated through (rules first)."""
    rule = RRULES.lookup(getattr, (obj, name))
    return rule is not None and bool(rule.types)


#: Classes whose attributes are read as they are in rewritten code: none runs Python code
#: the engine must see (a box reads its own attributes through the dispatcher).
PLAIN_ATTRIBUTE_OWNERS = frozenset({
    types.ModuleType, Box, np.ndarray, float, int, bool, complex, str, bytes, tuple, list, dict, set,
    frozenset, type, type(None), types.FunctionType, types.MethodType, types.BuiltinFunctionType,
    np.float64, np.float32, np.int64, np.dtype, np.ufunc, type(np.sum)})


def python_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` in rewritten code: a property, ``cached_property``, ``__getattribute__`` or
    ``__getattr__`` written in Python runs through the dispatcher (Python would call it from C,
    where the calls it makes are not seen). A cache is filled only with a value that holds no
    traced value (a traced one must not outlive its differentiation)."""
    cls = type(obj)
    if cls in PLAIN_ATTRIBUTE_OWNERS or isinstance(obj, type):
        return getattr(obj, name)
    kind, attr = attribute_kind(cls, name)
    if kind == "property" and attr is not None:
        return call(attr, obj)
    if kind == "cached":
        found = getattr(obj, "__dict__", {})
        if name in found:
            return found[name]
        value = call(attr, obj)
        if not LEVELS.get() or innermost(LEVELS.get(), (value,), {}, True) is None:
            found[name] = value
        return value
    if kind == "hook" and name not in getattr(obj, "__dict__", ()) and not getattr_has_own_rule(obj, name):
        return call(attr, obj, name)
    custom = python_dunder(cls, "__getattribute__")
    if custom is not None:
        return call(custom, obj, name)
    return getattr(obj, name)


def python_setattr(obj: Any, name: str, value: Any) -> None:
    """``obj.name = value`` in rewritten code: a property's setter or a ``__setattr__`` written in
    Python runs through the dispatcher."""
    cls = type(obj)
    if cls not in PLAIN_ATTRIBUTE_OWNERS and not isinstance(obj, type):
        setter = _descriptor_method(cls, name, "fset")
        if setter is None:
            setter = python_dunder(cls, "__setattr__")
            if setter is not None:
                call(setter, obj, name, value)
                return
        else:
            call(setter, obj, value)
            return
    setattr(obj, name, value)
    note_stored(obj, value)


def python_delattr(obj: Any, name: str) -> None:
    """``del obj.name`` in rewritten code: a property's deleter or a ``__delattr__`` written in
    Python runs through the dispatcher."""
    cls = type(obj)
    if cls not in PLAIN_ATTRIBUTE_OWNERS and not isinstance(obj, type):
        deleter = _descriptor_method(cls, name, "fdel")
        if deleter is None:
            deleter = python_dunder(cls, "__delattr__")
            if deleter is not None:
                call(deleter, obj, name)
                return
        else:
            call(deleter, obj)
            return
    delattr(obj, name)


def _descriptor_method(cls: type, name: str, which: str) -> Any:
    """The Python setter or deleter (``which``: ``"fset"``/``"fdel"``) of a property ``name`` of
    ``cls``, or ``None``."""
    try:
        attr = inspect.getattr_static(cls, name)
    except AttributeError:
        return None
    method = getattr(attr, which, None) if isinstance(attr, property) else None
    return method if isinstance(method, types.FunctionType) else None


#: Operators whose operands may be user classes defining them in Python: those methods are
#: differentiated through (as Zygote does) rather than given the numeric rules.
OPERATOR_DUNDERS: dict[Any, tuple[str, str | None]] = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.neg: ("__neg__", None), operator.pos: ("__pos__", None), operator.abs: ("__abs__", None),
    abs: ("__abs__", None),
}
_NOT_USER: Any = object()
#: (class, operator name) -> its Python method or None; bounded: user classes may come and go.
_PYTHON_DUNDERS = BoundedCache(1024)
NUMERIC_TYPES = frozenset({float, int, complex, bool, np.ndarray, np.float64, np.float32, list, tuple})


def python_dunder(cls: type, name: str) -> Any:
    """The Python-level ``name`` method of a user class, or ``None`` (cached)."""
    key = (cls, name)
    try:
        return _PYTHON_DUNDERS[key]
    except KeyError:
        pass
    method = None
    if cls not in NUMERIC_TYPES and not issubclass(cls, (np.ndarray, np.generic)):
        for klass in cls.__mro__:
            if name in klass.__dict__:
                candidate = klass.__dict__[name]
                method = candidate if isinstance(candidate, types.FunctionType) else None
                break
    _PYTHON_DUNDERS.put(key, method)
    return method


def python_iterator(x: Any) -> Any:
    """An iterator over ``x`` whose ``__iter__``/``__next__`` (or old-style ``__getitem__``),
    when written in Python, run through the dispatcher; ``x`` itself when none is."""
    cls = type(x)
    if cls is Box or cls in _PLAIN_ARGUMENTS or isinstance(x, (np.generic, np.ndarray, str, bytes)):
        return x  # a box iterates itself through the dispatcher; the others run no Python code
    method = python_dunder(cls, "__iter__")
    if method is not None:
        return _python_next(call(method, x))
    if getattr(cls, "__iter__", None) is None:
        getitem = python_dunder(cls, "__getitem__")
        if getitem is not None:
            return _indexed(x, getitem)
    return _python_next(x) if python_dunder(cls, "__next__") is not None else x


def _python_next(it: Any) -> Any:
    method = python_dunder(type(it), "__next__")
    return it if method is None else _driven(it, method)


def _driven(it: Any, method: Any) -> Any:
    """The values of ``it`` by its Python ``__next__``, run through the dispatcher."""
    while True:
        try:
            value = call(method, it)
        except StopIteration:
            return
        yield value


def _indexed(x: Any, getitem: Any) -> Any:
    """Python's old iteration protocol (``x[0]``, ``x[1]``, ... until ``IndexError``) through the
    dispatcher."""
    i = 0
    while True:
        try:
            value = call(getitem, x, i)
        except IndexError:
            return
        yield value
        i += 1


#: Builtins that iterate their arguments from C (``sum(obj)``, ``list(obj)``) or call ``len``,
#: ``next`` or a ``key`` function on them: an argument whose protocol methods are written in
#: Python is handed over as an iterator that runs them through the dispatcher, and a Python
#: ``key`` function is called through it.
ITERATING = frozenset({list, tuple, set, frozenset, sum, min, max, zip, enumerate, any, all, iter, next, len,
                       bool, collections.deque})
_PLAIN_ARGUMENTS = frozenset({list, tuple, dict, float, int, str, np.ndarray, Box, type(None), range, bool,
                              types.FunctionType, types.GeneratorType})


def protocol_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)`` for an :data:`ITERATING` builtin whose arguments (or ``key``) may
    run Python protocol methods, or ``NOT_FAST`` when none does."""
    key = kwargs.get("key")
    if all(type(a) in _PLAIN_ARGUMENTS for a in args) and type(key) is not types.FunctionType:
        return NOT_FAST
    if key is not None and type(key) is types.FunctionType:
        kwargs = {**kwargs, "key": lambda *v: call(key, *v)}
    if not args:
        return fn(**kwargs)
    first, cls = args[0], type(args[0])
    if fn is len or fn is bool:
        method = python_dunder(cls, "__len__" if fn is len else "__bool__")
        if method is not None:
            return fn(call(method, first)) if fn is bool else operator.index(call(method, first))
        if fn is bool and python_dunder(cls, "__len__") is not None:
            return call(python_dunder(cls, "__len__"), first) != 0
        return fn(first)
    if fn is next:
        method = python_dunder(cls, "__next__")
        if method is None:
            return fn(*args)
        try:
            return call(method, first)
        except StopIteration:
            if len(args) > 1:
                return args[1]
            raise
    if fn is iter:
        return iter(python_iterator(first)) if len(args) == 1 else fn(*args)
    if (fn is min or fn is max) and len(args) > 1:
        return fn(*args, **kwargs)  # values, not an iterable
    return fn(*(python_iterator(a) for a in args), **kwargs)


def _user_operator(dunders: tuple[str, str | None], args: tuple[Any, ...]) -> Any:
    forward, reflected = dunders
    a = args[0]
    ta = type(a._zp_value) if type(a) is Box else type(a)
    if ta is not float and ta is not np.ndarray and ta is not Box:
        method = python_dunder(type(unbox_all(a)), forward)
        if method is not None:
            result = call(method, *args)
            if result is not NotImplemented:
                return result
    if reflected is not None and len(args) == 2:
        b = args[1]
        tb = type(b._zp_value) if type(b) is Box else type(b)
        if tb is not float and tb is not np.ndarray:
            method = python_dunder(type(unbox_all(b)), reflected)
            if method is not None:
                result = call(method, b, a)
                if result is not NotImplemented:
                    return result
    return _NOT_USER


def _user_class(fn: Any) -> bool:
    """A class defined in Python outside NumPy, or an exception: constructing it only stores
    references."""
    return isinstance(fn, type) and (issubclass(fn, BaseException) or (
        fn.__module__ not in ("builtins", "numpy") and not fn.__module__.startswith("numpy.")))


def _untraceable(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], trace: Trace) -> Any:
    where = [f"argument {i + 1}" for i, a in enumerate(args) if _contains(a, trace)]
    where += [f"keyword {k!r}" for k, v in kwargs.items() if _contains(v, trace)]
    name = public_name(fn, args)
    reason = trace.missing_rule(fn)
    if reason is not None:
        raise UntraceableError(reason)
    library = LIBRARY_CALL.get()
    if library is not None:
        outer = public_name(*library)
        raise UntraceableError(
            f"{name} has no rrule and cannot be differentiated through, but it received a traced value as "
            f"{', '.join(where)} inside {outer}, which has no rule and was differentiated through "
            f"its source. Register a rule for {outer}: @rulescore.rrule.register({outer}) (see "
            "docs/writing-rules.md), or keep traced values out of this call."
        )
    compiled = compiled_origin(fn, args)
    if compiled is not None:
        raise UntraceableError(
            f"{name} ({compiled[1]}) has no rrule and compiled code cannot be differentiated through, but "
            f"it received a traced value as {', '.join(where)} inside {_caller_outside(_COMPILERS)}. "
            "Register a rule: "
            f"@rulescore.rrule.register({name}) (see docs/writing-rules.md), or keep traced values out "
            "of this call.")
    raise UntraceableError(
        f"{name} has no rrule and cannot be differentiated through (it is not a Python function "
        f"with source), but it received a traced value as {', '.join(where)}. Register a rule: "
        f"@rulescore.rrule.register({name}) (see docs/writing-rules.md), or keep traced values out "
        f"of this call."
    )


def public_name(fn: Any, args: tuple[Any, ...] = ()) -> str:
    """The name a user reaches ``fn`` by, for errors: a method unbound by the dispatcher is named
    through its instance (``scipy.stats.norm.logpdf``, not ``rv_continuous.logpdf``); NumPy's
    array methods and ``_operator`` by their public modules (``numpy.ndarray.partition``).

    Example:
        >>> import numpy as np
        >>> public_name(np.ndarray.partition), public_name(np.diff)
        ('numpy.ndarray.partition', 'numpy.diff')
    """
    compiled = compiled_origin(fn, args)
    if compiled is not None:
        return compiled[0]
    owner = args[0] if args else None
    attribute = getattr(fn, "__name__", "") if type(fn) is types.FunctionType else ""
    if attribute and owner is not None and not isinstance(owner, type) and (
            getattr(type(owner), attribute, None) is fn):
        return callable_name(getattr(owner, attribute))  # the method bound to the instance again
    name = callable_name(fn)
    for private, public in (("_operator.", "operator."), ("ndarray.", "numpy.ndarray.")):
        if name.startswith(private):
            return public + name[len(private):]
    return name


#: Packages compiling Python functions into callables that keep the function (``py_func``).
_COMPILERS = frozenset({"numba"})


def compiled_origin(fn: Any, args: tuple[Any, ...] = ()) -> tuple[str, str] | None:
    """For compiled code from outside NumPy and SciPy (numba's ``@njit``, ``@vectorize`` and
    ``@guvectorize``, a bare ufunc), ``(dotted name, what it is)``: the name of the Python function
    it was compiled from, or of the module attribute holding it; ``None`` for anything else.
    Errors name it so rather than by the ufunc's type (``numpy.``) or its class's ``__call__``.

    Example:
        >>> import numpy as np
        >>> double = np.frompyfunc(lambda v: 2 * v, 1, 1)
        >>> compiled_origin(np.sin), compiled_origin(double)
        (None, None)
    """
    target = fn
    if getattr(fn, "__name__", "") == "__call__":  # dufunc.__call__(x), DUFunc.__call__(dufunc, x)
        owner = getattr(fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType):
            target = owner
        elif args and type(args[0]).__dict__.get("__call__") is fn:
            target = args[0]
    source = getattr(target, "py_func", None) or getattr(target, "__wrapped__", None)
    maker = (type(target).__module__ or "").split(".")[0]
    if type(source) is types.FunctionType and maker in _COMPILERS:
        return f"{source.__module__}.{source.__qualname__}", f"compiled by {maker} from that Python function"
    if isinstance(target, np.ufunc) and "." not in callable_name(target):
        name = target.__name__
        for module in list(sys.modules.values()):
            if type(module) is not types.ModuleType:
                continue  # a stand-in object (torch.classes) whose attributes may raise
            held = module.__dict__.get(name)
            if held is not None and (held is target or getattr(held, "ufunc", None) is target):
                return f"{module.__name__}.{name}", "a compiled ufunc"
    return None


def _caller_outside(packages: frozenset[str]) -> str:
    """``user_code()`` past the frames of ``packages`` (numba's own Python ``__call__``): the
    Python function that called the compiled code."""
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith(_ENGINE_DIRS) or str(
            frame.f_globals.get("__name__", "")).split(".")[0] in packages):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "unknown code"
    return f"{frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})"


_ENGINE_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def _contains(x: Any, trace: Trace) -> bool:
    return unbox(x, trace)[1] is not None


#: Argument types :func:`innermost` need not search (no box inside): the commonest first.
_FLAT = frozenset({float, np.ndarray, int, bool, str, type(None), np.float64, types.FunctionType})


def innermost(levels: tuple[Trace, ...], args: tuple[Any, ...], kwargs: dict[str, Any],
              deep: bool) -> Trace | None:
    """The innermost active trace among the boxes in the arguments (containers searched;
    object fields searched when ``deep``)."""
    best: Trace | None = None
    level = -1
    for a in args:
        t = type(a)
        if t is Box:
            tr = a._zp_trace
        elif t in CONTAINERS or (deep and t not in _FLAT):
            tr = _scan(a, deep)
            if tr is None:
                continue
        else:
            continue
        if tr.level > level:
            best, level = tr, tr.level
    if kwargs:
        tr = _scan(tuple(kwargs.values()), deep)
        if tr is not None and tr.level > level:
            best = tr
    if best is not None and not (best.level < len(levels) and levels[best.level] is best):
        raise UntraceableError(escaped())
    return best


def _filled(cell: Any) -> bool:
    """Whether a closure cell holds a value (a name assigned later in its scope leaves it empty)."""
    try:
        cell.cell_contents  # noqa: B018  (reading it is the test)
    except ValueError:
        return False
    return True


def _scan(x: Any, deep: bool, seen: set[int] | None = None) -> Trace | None:
    t = type(x)
    if t is Box:
        return x._zp_trace  # type: ignore[no-any-return]
    if t is tuple or t is list or (deep and isinstance(x, (tuple, list))):
        items: Any = x
    elif t is dict:
        items = x.values()
    elif deep and not isinstance(x, _LEAVES) and not opaque_callable(x):
        items = rc.fields_of(x).values() if hasattr(x, "__dict__") or hasattr(x, "__slots__") else ()
    else:
        return None
    seen = set() if seen is None else seen
    if id(x) in seen:
        return None  # an object graph with a cycle
    seen.add(id(x))
    best: Trace | None = None
    for v in items:
        tr = _scan(v, deep, seen)
        if tr is not None and (best is None or tr.level > best.level):
            best = tr
    return best


def unbox(x: Any, trace: Trace, seen: set[int] | None = None) -> tuple[Any, Any]:
    """``(primal for this level, route)``: route is the box, a list of ``(path, box)`` for boxes
    inside a container or object, or ``None`` when no box of ``trace`` is inside."""
    t = type(x)
    if t is Box:
        if x._zp_trace is trace:
            return x._zp_value, x
        return x, None
    if t in CONTAINERS or isinstance(x, (tuple, list)):
        pairs: Any = enumerate(x) if not isinstance(x, dict) else x.items()
        kind = "k" if isinstance(x, dict) else "i"
    elif isinstance(x, _LEAVES) or opaque_callable(x) or not (
            hasattr(x, "__dict__") or hasattr(x, "__slots__")):
        return x, None
    else:
        pairs, kind = rc.fields_of(x).items(), "a"
    seen = set() if seen is None else seen  # the objects on the path here: a cycle stops, sharing does not
    if id(x) in seen:
        return x, None
    seen.add(id(x))
    updates: dict[Any, Any] = {}
    routes: list[tuple[tuple[Any, ...], Box]] = []
    for key, v in pairs:
        p, r = unbox(v, trace, seen)
        if r is None:
            continue
        updates[key] = p
        step = ((kind, key),)
        if type(r) is Box:
            routes.append((step, r))
        else:
            routes.extend((step + path, b) for path, b in r)
    seen.discard(id(x))
    if not routes:
        return x, None
    return rc.rebuild(x, updates), routes


def _substitute_params(levels: tuple[Trace, ...], args: tuple[Any, ...],
                       kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    written = any(t.shadows for t in levels)
    return (tuple(_substitute(levels, written, a) for a in args),
            {k: _substitute(levels, written, v) for k, v in kwargs.items()})


def _substitute(levels: tuple[Trace, ...], written: bool, x: Any) -> Any:
    """``x`` with implicit parameters as their boxes (a module function, not a closure calling
    itself: that would be a reference cycle per call, keeping the traces alive until a collection)."""
    t = type(x)
    if written and (t is np.ndarray or t is Box):
        x = latest(levels, x)  # written through a view or an alias: its value now
        t = type(x)
    if t is np.ndarray:
        for tr in reversed(levels):
            if tr.params and tr.params.get(id(x)) is x:
                return tr.param_box(x)
    elif t is tuple or t is list:
        return t(_substitute(levels, written, v) for v in x)
    return x


def unbox_arguments(args: tuple[Any, ...], trace: Trace) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``(primals, routes)`` of a call's arguments for ``trace``: each argument unboxed for that
    level, and the flat routes of a tape node (``position, target, position, target, ...``; a
    target is a tape index, or ``[(path, index), ...]`` for boxes inside a container or object)."""
    primals: list[Any] = []
    routes: list[Any] = []
    for i, a in enumerate(args):
        if type(a) is Box and a._zp_trace is trace:
            primals.append(a._zp_value)
            routes += (i, a._zp_index)
            continue
        p, r = unbox(a, trace)
        primals.append(p)
        if r is not None:
            routes += (i, r._zp_index if type(r) is Box else [(path, b._zp_index) for path, b in r])
    return tuple(primals), tuple(routes)


def constant_of_params(y: Any, trace: Trace) -> Any:
    """A non-differentiable call's output with every implicit parameter in it (``dropgrad(W)``
    hands back ``W`` itself) replaced by a view of it: the same values, which no later call takes
    for the parameter again."""
    if type(y) is np.ndarray:
        array: np.ndarray = y
        for t in (*trace.outer, trace):
            if t.params.get(id(array)) is array:
                return array.view()
        return array
    if type(y) is tuple or type(y) is list:
        return type(y)(constant_of_params(v, trace) for v in y)
    return y


def _closure_argument(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether an argument is a Python function with a closure (a solver's right-hand side that may
    capture traced values: see :func:`_closure_converted`).

    Example:
        >>> def scaled(k):
        ...     return lambda y: k * y
        >>> _closure_argument((1.0, scaled(2.0)), {}), _closure_argument((1.0,), {"f": abs})
        (True, False)
    """
    for a in args:
        if type(a) is types.FunctionType and a.__closure__:
            return True
    if kwargs:
        for a in kwargs.values():
            if type(a) is types.FunctionType and a.__closure__:
                return True
    return False


def _captured(callback: types.FunctionType, levels: tuple[Trace, ...]) -> list[tuple[int, str]]:
    """The closure cells of ``callback`` holding a value traced at an active level, as
    ``(position, variable name)``."""
    found = []
    cells = zip(callback.__code__.co_freevars, callback.__closure__ or (), strict=True)
    for i, (name, cell) in enumerate(cells):
        tr = _scan(cell.cell_contents, False) if _filled(cell) else None
        if tr is not None and tr.level < len(levels) and levels[tr.level] is tr:
            found.append((i, name))
    return found


def _closure_converted(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                       levels: tuple[Trace, ...]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``fn``'s call with its function argument that captures active traced values (a solver's
    right-hand side closing over a parameter: ``odeint(lambda y, t: -a * y, ...)``) replaced by
    one taking those values as trailing extra arguments, which the call then passes through its
    ``args=`` (JAX's ``closure_convert``): the solver's rule differentiates its ``args``, so the
    captured values get their gradients. Refuses, naming the value, when ``fn`` has no ``args``
    parameter; the call as it is when nothing is captured."""
    callbacks = [(k, v, _captured(v, levels)) for k, v in (*enumerate(args), *kwargs.items())
                 if type(v) is types.FunctionType and v.__closure__]
    callbacks = [c for c in callbacks if c[2]]
    if not callbacks:
        return args, kwargs
    signature = rc.parameters_of(fn, args)
    try:
        bound = None if signature is None else signature.bind(*args, **kwargs)
    except TypeError:
        bound = None  # the call itself is wrong: it raises as it would
    _, callback, cells = callbacks[0]
    if bound is None or "args" not in signature.parameters or len(callbacks) > 1:  # type: ignore[union-attr]
        name = cells[0][1]
        raise UntraceableError(
            f"{public_name(fn)} receives {callable_name(callback)}, which captures the traced value "
            f"{name!r} in its closure, and {public_name(fn)} has no args= through which the engine could "
            f"pass it on to the rule: the gradient through {name!r} would be lost. Make it a parameter of "
            f"{callable_name(callback)} and pass it explicitly; the rule differentiates the arguments it "
            "is given")
    extra = bound.arguments.get("args")
    extra = () if extra is None else extra if type(extra) is tuple else (extra,)
    values = tuple(callback.__closure__[i].cell_contents for i, _ in cells)  # type: ignore[index]
    for key, v in bound.arguments.items():
        if v is callback:
            bound.arguments[key] = _taking_captured(callback, [i for i, _ in cells])
    bound.arguments["args"] = (*extra, *values)
    return bind_traced_keywords(fn, bound.args, bound.kwargs)


def _taking_captured(callback: types.FunctionType, positions: list[int]) -> Any:
    """``callback`` with the closure cells at ``positions`` read from its last arguments instead."""
    n = len(positions)

    def closure_converted(*a: Any) -> Any:
        cells = list(callback.__closure__)  # type: ignore[arg-type]
        for k, i in enumerate(positions):
            cells[i] = types.CellType(a[len(a) - n + k])
        inner = types.FunctionType(callback.__code__, callback.__globals__, callback.__name__,
                                   callback.__defaults__, tuple(cells))
        inner.__kwdefaults__ = callback.__kwdefaults__
        inner.__qualname__ = callback.__qualname__
        return call(inner, *a[:len(a) - n])  # rewritten while differentiated, as the callback would be

    closure_converted.__qualname__ = closure_converted.__name__ = callback.__qualname__
    return closure_converted


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def bind_traced_keywords(fn: Any, args: tuple[Any, ...],
                         kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Move each traced keyword argument that names a positional parameter of ``fn`` into its
    slot (the slots before it get their defaults), so a rule's pullback gives its cotangent:
    ``logsumexp(a, b=w)`` is differentiated as ``logsumexp(a, None, w)``."""
    traced = [k for k, v in kwargs.items() if _scan(v, True) is not None]
    if not traced:
        return args, kwargs
    RRULES.rules_for(fn)  # a family registered on first use declares its parameters as it loads
    FRULES.rules_for(fn)
    signature = rc.parameters_of(fn, args)
    if signature is None:
        return args, kwargs
    positional = [p for p in signature.parameters.values() if p.kind in _POSITIONAL]
    names = [p.name for p in positional]
    last = max((names.index(k) for k in traced if k in names), default=-1)
    if last < len(args):
        return args, kwargs
    bound, rest = list(args), dict(kwargs)
    for p in positional[len(args):last + 1]:
        if p.name in rest:
            bound.append(rest.pop(p.name))
        elif p.default is not inspect.Parameter.empty:
            bound.append(p.default)
        else:
            return args, kwargs  # a required parameter is missing: let the call raise as it would
    return tuple(bound), rest


def refuse_traced_keywords(fn: Any, kwargs: dict[str, Any], trace: Trace) -> None:
    """Rules (rrules and frules) give derivatives for positional arguments only; a traced keyword
    left after :func:`bind_traced_keywords` names no positional parameter (keyword-only, or
    ``**kwargs``): say so, naming the keyword."""
    for k, v in kwargs.items():
        if unbox(v, trace)[1] is not None:
            raise UntraceableError(
                f"{callable_name(fn)} received a traced value as keyword argument {k!r}, which is "
                "not one of its positional parameters (keyword-only or collected by **kwargs), and "
                "its rule gives derivatives for positional arguments only. Pass the value through an "
                "equivalent positional parameter if the function has one, or declare the parameters "
                "with rulescore.declare_parameters (docs/writing-rules.md)"
            )


def plain_output(y: Any) -> bool:
    ty = type(y)
    return ty is not float and ty is not np.ndarray and (ty in PLAIN_OUTPUTS or isinstance(y, np.dtype))



#: How the engine handles each callable that needs no rule: one entry per callable, registered
#: in ``rulescore.rrule`` (see ``rulescore.HANDLING_KINDS``), where this dispatcher, ``zp.explain``
#: and ``rc.rrule.explain`` all read it. ``"special_form"``: the engine's implementation runs
#: instead (it sees through boxes, ``type``, or calls a function argument from C, which must come
#: back here: ``map(math.sin, xs)``, ``xs.sort(key=f)``); ``"pass_through"``: see
#: :func:`_pass_through`; ``"reference"``: run as it is, boxes and all, when no rule applies.
#: rulescore's own ``"structural"`` helpers (:func:`rulescore.structural`) register themselves.
ENGINE_ENTRIES: tuple[tuple[Any, str, Any], ...] = (
    (type, "special_form", _type_of),
    (map, "special_form", _map),
    (filter, "special_form", _filter),
    (sorted, "special_form", _sorted),
    (functools.reduce, "special_form", _reduce),
    (list.sort, "special_form", _sort),
    (list.extend, "special_form", _extending(list.extend)),
    (dict.update, "special_form", _extending(dict.update)),
    (set.update, "special_form", _extending(set.update)),
    (collections.deque.extend, "special_form", _extending(collections.deque.extend)),
    (collections.deque.extendleft, "special_form", _extending(collections.deque.extendleft)),
    (project, "pass_through", _fitting_pass_through),
    (proj, "pass_through", _fitting_pass_through),
    (fit, "pass_through", _fitting_pass_through),
    (conj, "pass_through", _passing(0)),
    (stand_in, "pass_through", _passing(0)),
    *((fn, "reference", fn) for fn in _REFERENCES),
    # every other method of the builtin mutable containers only moves references
    *((method, "reference", method) for cls in MUTABLE_CONTAINERS for method in vars(cls).values()
      if type(method) in (types.MethodDescriptorType, types.WrapperDescriptorType)),
)
for _fn, _kind, _impl in ENGINE_ENTRIES:
    if _fn not in HANDLED:  # the first entry of a callable wins (list.sort's, not the generic one)
        RRULES.register_kind(_fn, (), _impl, _kind)
