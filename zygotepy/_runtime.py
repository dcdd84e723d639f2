"""The runtime of rewritten code: the helpers its call sites call, and the binding of a
Python function to its rewritten version.

:mod:`zygotepy._transform` turns a function's source into code whose calls, operators and
subscripts go through helper names; this module gives those names their values (the
dispatcher's ``call``, functional ``x[i] = v`` updates, implicit-parameter lookups) and makes
the new function share the original's globals, closure cells (matched by name, so
``nonlocal`` writes are shared), defaults and class. Trace kinds hand :func:`python_target` to
the dispatcher, which uses it for every Python function without a rule.
"""

from __future__ import annotations

import collections
import copy
import functools
import importlib.util
import inspect
import operator
import os
import sys
import types
import weakref
from typing import Any

import numpy as np

import rulescore as rc
from rulescore._checks import callable_name
from rulescore.rules.writes import IN_PLACE
from zygotepy import _dispatch, _views
from zygotepy._adjoint_table import ADJOINTS
from zygotepy._caches import BoundedCache, WeakBoundedCache
from zygotepy._errors import LIBRARY_CALL, UntraceableError, user_code
from zygotepy._trace import LEVELS, NO_RULE, NOT_FAST, Box, note_escape, unbox_all
from zygotepy._transform import OPERATOR_HELPERS, ORIGINAL, SITE_PREFIX, callees, is_generated, rewritten

_SKIP_MODULES = ("zygotepy",)
#: Libraries whose Python code is differentiated through when no rule applies, but only for calls
#: that receive a traced value (a constant call runs as it is, at full speed).
_LIBRARY_MODULES = ("numpy", "scipy")
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _package_dirs(names: tuple[str, ...]) -> tuple[str, ...]:
    dirs = []
    for name in names:
        spec = importlib.util.find_spec(name)
        for location in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.abspath(location) + os.sep)
    return tuple(dirs)


#: The engine's code, called as it is.
_SKIP_DIRS = _package_dirs(_SKIP_MODULES)
_LIBRARY_DIRS = _package_dirs(_LIBRARY_MODULES)
#: NumPy's dispatching functions (``np.diff``): their Python implementation is ``_implementation``.
_DISPATCHER = type(np.diff)
_FUNCTION = types.FunctionType
#: Library functions never differentiated through: they build arrays from another array's memory
#: (a traced value has none), so they need a rule on the function that calls them.
_OPAQUE = frozenset({np.lib.stride_tricks.as_strided})
#: Standard-library code run as it is, traced values and all: it only formats or moves them
#: (``logging``), only inspects code (``inspect``: scikit-learn's ``get_params`` reads the
#: signature of ``__init__`` at every parameter access), or has no source to rewrite (frozen
#: modules: ``os.path``, ``codecs``).
_AS_IS = (*_package_dirs(("logging",)), os.path.abspath(inspect.__file__), "<frozen ")
#: Of these, the code that may keep its arguments where other code reaches them (a log record in
#: a handler; frozen ``_collections_abc`` mixins storing into a user's container): a traced
#: value given to it has escaped (:func:`_noting_escapes`).
_KEEPING = (*_package_dirs(("logging",)), "<frozen ")
#: Standard-library functions run as they are: copying reaches a traced value's own
#: ``Box.__copy__``/``Box.__deepcopy__``, which copies it differentiably.
_AS_IS_FUNCTIONS = frozenset({copy.copy, copy.deepcopy})


def inplace(op: Any, iop: Any, x: Any, v: Any, target: str = "") -> Any:
    """``x op= v``: in place for plain values and containers, functional when traced. For a
    ``target`` that is a local ``"name"`` or an ``"attribute"`` holding an array another reference
    may see (an alias, a container, the array it is a view of; an attribute's array always), the
    update is written into that array's traced value (:mod:`zygotepy._views`), so every reference
    reads it, and the target keeps the array."""
    levels = LEVELS.get()
    if levels and type(x) is not Box and type(x) not in _dispatch.NUMERIC_TYPES:
        method = _dispatch.python_dunder(type(x), _INPLACE_DUNDERS.get(op, ""))
        if method is not None:  # a user class's own __iadd__: differentiated through
            result = _dispatch.call(method, x, v)
            if result is not NotImplemented:
                return result
    if levels and type(x) is not set and not _dispatch.plain_container(x) and (
        type(x) is Box or type(v) is Box or _dispatch.innermost(levels, (x, v), {}, False)
        or (levels[-1].with_params and type(x) is np.ndarray and _views.shadowed(levels, x))
    ):
        refs = sys.getrefcount(x) if target == "name" else _SHARED_REFCOUNT  # an attribute's: shared
        if target and _shared(levels, x, refs):
            _write(levels, x, None, _dispatch.call(op, x, v))
            return x
        return _dispatch.call(op, x, v)
    return iop(x, v)


def _shared(levels: tuple[Any, ...], x: Any, refs: int) -> bool:
    """Whether another reference may see the array ``x`` (``refs`` references, counted in a
    runtime helper): an alias, a container, the array it is a view of, or a view of it."""
    v = unbox_all(x)
    return isinstance(v, np.ndarray) and (  # (a subclass's write is then refused: _views.write)
        refs > _LOCAL_ONLY_REFCOUNT or v.base is not None or _views.shadowed(levels, v))


_INPLACE_DUNDERS = {operator.add: "__iadd__", operator.sub: "__isub__", operator.mul: "__imul__",
                    operator.truediv: "__itruediv__", operator.floordiv: "__ifloordiv__",
                    operator.mod: "__imod__", operator.pow: "__ipow__", operator.matmul: "__imatmul__"}


def _write(levels: tuple[Any, ...], target: Any, index: Any, value: Any) -> None:
    """``target[index] = value`` (``index`` ``None``: all of it) into the traced value of the array
    owning ``target``'s memory, never in place (:mod:`zygotepy._views`)."""
    _views.write(levels, target, index, value)


def store(container: Any, index: Any, value: Any) -> None:
    """``a.b[i] = v`` and other stores that cannot be rebound: into an array that is traced or
    shares memory with a written one, written into its traced value (:mod:`zygotepy._views`);
    refused if they would hide a gradient otherwise."""
    levels = LEVELS.get()
    if levels and type(container) is np.flatiter:  # a.flat[i] = v: a write into a
        _views.FlatIndexer(container.base)[index] = value
        return
    method = _python_setitem(container) if levels else None
    if method is not None:
        _dispatch.call(method, container, index, value)
        return
    if levels and type(unbox_all(container)) is np.ndarray and (
            type(container) is Box or _dispatch.innermost(levels, (value,), {}, False) or (
            levels[-1].with_params and _views.shadowed(levels, unbox_all(container)))):
        _write(levels, container, index, value)
        return
    if levels and type(container) is not Box and type(value) is Box and not isinstance(
            container, (list, dict)):
        raise UntraceableError(
            f"in-place assignment of a traced value into a {type(container).__name__} inside "
            f"{user_code()} is not differentiable: the target is not a local name, so it cannot be "
            "rebound to the updated array. Assign to a local name first (`y = obj.buf; y[i] = v`) "
            "or build a new array with np.where/np.concatenate"
        )
    container[index] = value
    _views.note_stored(container, value)


def setitem(x: Any, index: Any, value: Any) -> Any:
    """``x[index] = value`` for a local name: in place unless a traced array is involved, then a
    functional update the name is rebound to; when another reference may see the array (an
    alias, a container, a view), written into the traced value of the array owning its memory
    (:mod:`zygotepy._views`), so every reference reads it."""
    levels = LEVELS.get()
    method = _python_setitem(x) if levels else None
    if method is not None:
        _dispatch.call(method, x, index, value)
        return x
    if levels and not _dispatch.plain_container(x) and (
            type(x) is Box or _dispatch.innermost(levels, (value,), {}, False) or (
            levels[-1].with_params and type(x) is np.ndarray and _views.shadowed(levels, x))):
        if _shared(levels, x, sys.getrefcount(x)):
            _write(levels, x, index, value)
            return x
        from rulescore.rules.indexing import setindex

        return _dispatch.call(setindex, x, index, value)
    x[index] = value
    # a list or dict only the caller's local holds (no weak reference can reach either): a
    # traced value stored into it is still only in frames (counted before the call below takes x)
    local = (type(x) is dict or type(x) is list) and sys.getrefcount(x) <= _LOCAL_ONLY_REFCOUNT
    _views.note_stored(x, value, local)
    return x


def _python_setitem(container: Any) -> Any:
    """A ``__setitem__`` written in Python for ``container``'s class (it then runs rewritten), or ``None``."""
    tc = type(container)
    if tc in _dispatch.PLAIN_ATTRIBUTE_OWNERS or tc is Box:
        return None
    return _dispatch.python_dunder(tc, "__setitem__")


#: References to an array held only by one local name, seen from inside ``setitem``: the
#: caller's local, ``setitem``'s parameter and ``getrefcount``'s own argument.
_LOCAL_ONLY_REFCOUNT = 3
_SHARED_REFCOUNT = _LOCAL_ONLY_REFCOUNT + 1


def param(x: Any) -> Any:
    """The box of an implicit parameter, for the array ``x`` read by an attribute (``W.T``) or an
    iteration (``for row in W``) that no call sees; anything else unchanged."""
    if type(x) is np.ndarray:
        levels = LEVELS.get()
        if levels and levels[-1].with_params:
            x = _views.latest(levels, x)  # written through a view or an alias
            if type(x) is np.ndarray:
                for trace in reversed(levels):
                    if trace.params.get(id(x)) is x:
                        return trace.param_box(x)
    return x


def compare(op: Any, a: Any, b: Any) -> Any:
    """``a < b`` and the other comparisons: an array written through a view or an alias is
    compared at its current value (:mod:`zygotepy._views`)."""
    levels = LEVELS.get()
    if levels and levels[-1].with_params:
        if type(a) is np.ndarray:
            a = _views.latest(levels, a)
        if type(b) is np.ndarray:
            b = _views.latest(levels, b)
    return op(a, b)


def attribute(x: Any, name: str) -> Any:
    """``x.name`` in rewritten code: a property, ``cached_property`` or ``__getattr__`` written in
    Python runs rewritten on any object (see :func:`zygotepy._dispatch.python_attribute`); in
    code rewritten for implicit parameters ``x`` may also be a parameter (``W.T``)."""
    tx = type(x)
    if tx is np.ndarray:
        levels = LEVELS.get()
        if levels and name == "flat":
            return _views.flat_of(levels, x)
        if levels and levels[-1].with_params:
            x = param(x)
        return getattr(x, name)
    if tx in _dispatch.PLAIN_ATTRIBUTE_OWNERS or not LEVELS.get():
        return getattr(x, name)
    return _dispatch.python_attribute(x, name)


def set_attribute(x: Any, name: str, value: Any) -> None:
    """``x.name = value`` in rewritten code: a property's setter or a ``__setattr__`` written in
    Python runs rewritten."""
    if type(x) in _dispatch.PLAIN_ATTRIBUTE_OWNERS or not LEVELS.get():
        setattr(x, name, value)
        _views.note_stored(x, value)  # a module's, a class's or a function's attribute
    else:
        _dispatch.python_setattr(x, name, value)


def as_is(*args: Any, **kwargs: Any) -> bool:
    """The check a rewritten function begins with (``zygotepy._transform._with_as_is_check``):
    whether this call of it may run the original function instead (:func:`runs_as_is`)."""
    for a in args:
        if type(a) is Box:  # the commonest answer first
            return False
    return runs_as_is(args, kwargs)


def escaping(value: Any = None) -> Any:
    """What a rewritten function calls as it starts (a lambda: with its value) when it may put a
    value where other code reaches it without a store the engine sees (``global``, ``nonlocal``,
    ``exec``, a closure over its locals): the active levels then run no call as it is
    (:func:`runs_as_is`)."""
    note_escape()
    return value


def delete_attribute(x: Any, name: str) -> None:
    """``del x.name`` in rewritten code: a property's deleter or a ``__delattr__`` written in
    Python runs rewritten."""
    if type(x) in _dispatch.PLAIN_ATTRIBUTE_OWNERS or not LEVELS.get():
        delattr(x, name)
    else:
        _dispatch.python_delattr(x, name)


#: Iterables whose iteration runs no Python code of the user's (a box iterates itself through
#: the dispatcher).
_PLAIN_ITERABLES = frozenset({list, tuple, dict, range, str, bytes, set, frozenset, Box, zip, enumerate,
                              type({}.items()), type({}.keys()), type({}.values()), types.GeneratorType,
                              map, filter, reversed})


def iterate(x: Any) -> Any:
    """What a ``for`` loop, a comprehension or an unpacking in rewritten code iterates: ``x``
    itself, unless its ``__iter__``/``__next__`` (or old-style ``__getitem__``) is written in
    Python; then an iterator that runs those rewritten. In code rewritten for implicit
    parameters, an array may be a parameter (``for row in W``)."""
    tx = type(x)
    if tx in _PLAIN_ITERABLES:
        return x
    if tx is np.ndarray:
        return param(x)
    if not LEVELS.get():
        return x
    return _dispatch.python_iterator(x)


def with_manager(manager: Any) -> Any:
    """The context manager a ``with`` statement in rewritten code enters: ``manager`` itself,
    unless its ``__enter__``/``__exit__`` is written in Python; then one that runs them rewritten."""
    if not LEVELS.get():
        return manager
    cls = type(manager)
    enter, exit_ = _dispatch.python_dunder(cls, "__enter__"), _dispatch.python_dunder(cls, "__exit__")
    if enter is None and exit_ is None:
        return manager
    return _Managed(manager, enter, exit_)


class _Managed:
    """A context manager whose Python ``__enter__``/``__exit__`` run through the dispatcher; a
    library's (``np.errstate``) run as they are when no traced value is reachable from the manager
    as the block begins (:func:`runs_as_is`, which reads it by its type's plan) and none has
    escaped the frames of rewritten code when it ends (a store into the manager would have): what
    their runner decides after its search of the manager's fields, about 1,400 bytecodes a call."""

    __slots__ = ("manager", "enter", "exit", "as_is")

    def __init__(self, manager: Any, enter: Any, exit_: Any) -> None:
        self.manager, self.enter, self.exit = manager, enter, exit_
        self.as_is = False

    def __enter__(self) -> Any:
        manager, enter = self.manager, self.enter
        self.as_is = _library_code(enter) and _library_code(self.exit) \
            and runs_as_is((manager,), _NO_KEYWORDS)
        if enter is None or self.as_is:
            return type(manager).__enter__(manager)
        return _dispatch.call(enter, manager)

    def __exit__(self, *exc: Any) -> Any:
        if self.exit is None or (self.as_is and runs_as_is((), _NO_KEYWORDS)):
            return type(self.manager).__exit__(self.manager, *exc)
        return _dispatch.call(self.exit, self.manager, *exc)


_NO_KEYWORDS: dict[str, Any] = {}


def _library_code(fn: Any) -> bool:
    """Whether ``fn`` is absent or a Python function of NumPy's or SciPy's (run as it is on values
    that hold no traced one: see :func:`_library_target`)."""
    if fn is None:
        return True
    if type(fn) is not types.FunctionType:
        return False
    code = fn.__code__
    known = _CODE_KINDS.get(id(code))
    if known is not None and known[0] is code:
        return known[1] is _LIBRARY_SOURCE
    kind = _code_kind(fn)
    _CODE_KINDS.put(id(code), (code, kind))
    return kind is _LIBRARY_SOURCE


def contains(container: Any, item: Any) -> bool:
    """``item in container`` in rewritten code: a ``__contains__`` (or ``__iter__``) written in
    Python runs rewritten."""
    tc = type(container)
    if tc in _PLAIN_ITERABLES or tc is np.ndarray or not LEVELS.get():
        return item in container
    method = _dispatch.python_dunder(tc, "__contains__")
    if method is not None:
        return bool(_dispatch.call(method, container, item))
    if _dispatch.python_dunder(tc, "__iter__") is not None or _dispatch.python_dunder(tc, "__getitem__"):
        return any(v is item or v == item for v in _dispatch.python_iterator(container))
    return item in container


def delete_item(container: Any, index: Any) -> None:
    """``del container[index]`` in rewritten code: a ``__delitem__`` written in Python runs rewritten."""
    method = _dispatch.python_dunder(type(container), "__delitem__") if LEVELS.get() else None
    if method is not None:
        _dispatch.call(method, container, index)
    else:
        del container[index]


def user_locals(names: dict[str, Any]) -> dict[str, Any]:
    """``locals()`` in rewritten code: the user's names, without the engine's (``_zp_...``)."""
    return {k: v for k, v in names.items() if not k.startswith("_zp_")}


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: reading a list, tuple or dict only moves a reference (no dispatch, unless
    implicit parameters may be inside); anything else goes through the dispatcher."""
    tx = type(x)
    if tx is list or tx is tuple or tx is dict or (tx is not Box and _dispatch.plain_container(x)):
        levels = LEVELS.get()
        if not levels or not levels[-1].with_params:
            return x[index]
    elif tx is np.flatiter:  # a.flat[i] of an array written through a view: its current value
        levels = LEVELS.get()
        if levels and _views.shadowed(levels, x.base):
            return _views.FlatIndexer(x.base)[index]
    elif tx is Box and type(index) is int:
        y = _tuple_entry(x, index)
        if y is not NO_RULE:
            return y
    return _dispatch.call(operator.getitem, x, index)


def _tuple_entry(x: Box, index: int) -> Any:
    """``x[index]`` for a reverse level's box of a tuple (a rule's result: ``slogdet``'s,
    ``eigh``'s, a namedtuple), or ``NO_RULE``: the rule applied by the level owning the box,
    which is what the dispatcher's general path comes to after its questions (none of which
    such a call changes the answer of: the fast paths take numbers and arrays only). A rule
    body traced by an outer level indexes one on every call (about 700 bytecodes less per level)."""
    value = x._zp_value
    while type(value) is Box:
        value = value._zp_value
    if not isinstance(value, tuple):
        return NO_RULE
    levels = LEVELS.get()
    trace = x._zp_trace
    if (not levels or levels[-1].log is not None or levels[-1].with_params or not trace.records
            or trace.level >= len(levels) or levels[trace.level] is not trace):
        return NO_RULE  # (a box of a finished differentiation: the general path says so)
    return trace.differentiate(operator.getitem, (x, index), _NO_KEYWORDS)


def class_of(fn: Any, x: Any) -> Any:
    """``fn(x)`` for a call spelled ``type(x)``: the class of the primal under any boxes when
    ``fn`` is the builtin (what the dispatcher answers for it), without the dispatcher's
    preamble; rule bodies traced by outer levels ask it on most lines."""
    if fn is type:
        levels = LEVELS.get()
        if levels and levels[-1].log is None:
            while type(x) is Box:
                x = x._zp_value
            return x.__class__
    return _dispatch.call(fn, x)


# -- call sites: each keeps the dispatcher's answer for the callable it calls -----------------------
#: What a call site does with the callable it met last (see :func:`call_site`):
#: ``_BY_RULE``: the dispatcher's tail (the innermost trace's fast path, then its search), for a
#: callable with rules (which it keeps: tables only grow); ``_RUN_TARGET``: run its rewritten code
#: (a Python function without rules); ``_CONSTRUCT``: construct it with its Python ``__new__`` or
#: ``__init__`` rewritten (a class without rules, while its ``__init__`` is the one it had);
#: ``_PASS_THROUGH``: a ``"pass_through"`` helper's handler, else its rewritten code;
#: ``_INSPECTION``: ``isinstance`` or ``issubclass`` as it is (a box answers as its primal);
#: ``_STRUCTURAL``: a helper marked ``rulescore.structural``, run on the plain values;
#: ``_ON_ARRAYS``: ``_BY_RULE`` where the numbers path missed on the last call (arrays, in a
#: rule body or an MLP): skipped until the fast path gives a traced value that is not an array
#: for a first argument that is not one;
#: ``_AS_IT_RUNS``: call it as it is when no argument is or holds a traced value (compiled code
#: without rules); ``_REFERENCE``: call it as it is (a reference-only builtin without rules);
#: ``_DISPATCH``: ``_dispatch.call`` (the rest). ``_BY_RULE`` keeps the scalar form of the
#: callable's one rule (or None): while the registries' versions are the ones it was found at, a
#: first-order reverse trace's ``numbers_path`` tries it first (scalar code: a tape of numbers).
_BY_RULE, _RUN_TARGET, _CONSTRUCT, _PASS_THROUGH = "rule", "target", "construct", "pass through"
_INSPECTION, _STRUCTURAL, _ON_ARRAYS = "inspection", "structural", "rule, on arrays"
_AS_IT_RUNS, _REFERENCE, _DISPATCH = "as it runs", "reference", "dispatch"
#: Per callable a site may keep, ``(registry versions, what to do, what to run)``: a site meeting
#: several callables (a helper calling the function it is given) pays a lookup per change, not the
#: classification. Bounded; holds only callables that hold no traced value (:func:`_keepable`).
_SITE_ANSWERS = BoundedCache(1024)


def _versions() -> int:
    """A number that moves whenever a rule, an opt-out, a handling entry or an adjoint is
    registered (``rulescore.RuleTable.changes``: every table's registrations)."""
    return rc.RuleTable.changes


def _keepable(fn: Any) -> bool:
    """Whether a call site may keep ``fn`` between calls: a callable whose identity is its meaning
    and which holds no traced value (a Python function without a closure, not made by rewritten
    code; a class; a module's compiled function or a ufunc). A closure or a bound method, made
    afresh per call, is answered by the dispatcher each time.

    Example:
        >>> import math
        >>> closure = (lambda k: lambda: k)(1.0)
        >>> _keepable(math.sin), _keepable(_keepable), _keepable([].append), _keepable(closure)
        (True, True, False, False)
    """
    tf = type(fn)
    if tf is types.FunctionType:
        return fn.__closure__ is None and not is_generated(fn.__code__)
    if tf is types.BuiltinFunctionType:
        owner = fn.__self__
        return owner is None or type(owner) is types.ModuleType
    return tf is type or tf is np.ufunc or tf is _DISPATCHER or tf is types.MethodDescriptorType \
        or tf is types.WrapperDescriptorType


#: Classes whose builtin methods the dispatcher calls as the class's (``d.get(k)`` as
#: ``dict.get(d, k)``: see ``_dispatch.resolve``) and a call site may too.
_UNBOUND_OWNERS = frozenset({np.ndarray, list, dict, set, collections.deque})


def _method_of(fn: Any) -> tuple[Any, Any] | None:
    """``(function, self)`` for a bound method the dispatcher calls as its function with ``self``
    first (``_dispatch.resolve``): a Python method whose function a site may keep (and no rule is
    registered for a method bound to that function), or a builtin method of an array or a mutable
    container (as its class's method); ``None`` for any other callable.

    Example:
        >>> d = {}
        >>> _method_of(d.get) == (dict.get, d), _method_of(len)
        (True, None)
    """
    tf = type(fn)
    if tf is types.MethodType:
        function = fn.__func__
        if type(function) is types.FunctionType and _keepable(function) \
                and function not in _bound_entries()[0]:
            return function, fn.__self__
    elif tf is types.BuiltinFunctionType:
        owner = fn.__self__
        towner = type(owner)
        if towner in _UNBOUND_OWNERS:
            return getattr(towner, fn.__name__), owner
    return None


def _compiled_method(fn: Any) -> bool:
    """Whether ``fn`` is a builtin method of an object the dispatcher has no answer for but its
    rules (not a module, a number, a string, an array, a NumPy scalar or a container, whose methods
    it calls its own way: see ``_dispatch.resolve``), and no rule, handling entry or functional
    update is registered for a method of that object's class (``cls.__dict__.get`` of a mapping
    proxy, in a constructor): compiled code without rules, which runs as it is when no argument
    holds a traced value.

    Example:
        >>> _compiled_method(type.__dict__["__dict__"].__get__(int).get), _compiled_method({}.get)
        (True, False)
    """
    if type(fn) is not types.BuiltinFunctionType:
        return False
    towner = type(fn.__self__)
    return towner is not types.ModuleType and towner not in _dispatch._METHOD_OWNERS \
        and towner not in _dispatch._ATOMS and not issubclass(towner, np.generic) \
        and towner not in _bound_entries()[1]


#: ``versions -> (the functions of the bound Python methods with a rule or an adjoint, the classes
#: whose bound builtin methods have a rule, an adjoint, a handling entry or a functional update)``:
#: one entry, made again when a registration moves the versions.
_BOUND_ENTRIES = BoundedCache(1)


def _bound_entries() -> tuple[frozenset[Any], frozenset[type]]:
    """What the registry says of bound methods (see :data:`_BOUND_ENTRIES`): a method bound to one
    of those functions (NumPy's ``np.random.normal`` is bound to the global ``RandomState``), or a
    builtin method of one of those classes (a ufunc's ``.at``), is the dispatcher's to answer."""
    versions = _versions()
    found: tuple[frozenset[Any], frozenset[type]] | None = _BOUND_ENTRIES.get(versions)
    if found is None:
        tables = (_dispatch.RRULES.primals, _dispatch.FRULES.primals, ADJOINTS.primals)
        functions = frozenset(f.__func__ for table in tables for f in table if type(f) is types.MethodType)
        owners = frozenset(type(f.__self__) for table in (*tables, _dispatch.HANDLED, IN_PLACE) for f in table
                           if type(f) is types.BuiltinFunctionType and type(f.__self__) is not _MODULE)
        found = functions, owners
        _BOUND_ENTRIES.put(versions, found)
    return found


_MODULE = types.ModuleType


def _site_answer(fn: Any, top: Any) -> tuple[int, str, Any]:
    """``(versions, what to do, what to run)`` for a keepable ``fn`` (see :func:`call_site`)."""
    versions = _versions()  # read first: a registration meanwhile leaves the answer stale, not wrong
    try:
        found = _SITE_ANSWERS.get(fn)
    except TypeError:  # a class with an unhashable metaclass
        return versions, _DISPATCH, None
    if found is not None and found[0] == versions:
        return found  # type: ignore[no-any-return]
    answer = versions, *_decide(fn, top)
    _SITE_ANSWERS.put(fn, answer)
    return answer


def _decide(fn: Any, top: Any) -> tuple[str, Any]:
    """What ``_dispatch.call`` (and ``_dispatch.resolve``, for a callable without rules) does with
    a call of ``fn`` under a trace without implicit parameters or a log, as far as it depends on
    ``fn`` and the registry alone: ``(what to do, what to run)`` (see :data:`_BY_RULE`)."""
    if fn is isinstance or fn is issubclass:
        return _INSPECTION, None
    if fn is type or fn is len:
        return _DISPATCH, None
    if _dispatch.RRULES.has_rules(fn) or _dispatch.FRULES.has_rules(fn) or ADJOINTS.has_rules(fn):
        return _BY_RULE, _dispatch.scalar_form(fn)
    tf = type(fn)
    if tf is np.ufunc or tf is _DISPATCHER or fn in _dispatch.ITERATING:
        return _DISPATCH, None  # writes into out=, Python implementations: the dispatcher's business
    entry = _dispatch.HANDLED.get(fn)
    if tf is types.FunctionType:
        if entry is not None and entry.kind == "structural":
            return _STRUCTURAL, None
        if _dispatch.out_position(fn) >= 0:
            return _DISPATCH, None
        target = top.python_target(fn, False)
        if target is None:
            return _DISPATCH, None
        if entry is not None and entry.kind == "pass_through":
            return _PASS_THROUGH, (entry.impl, target)
        # with what the target was made from: code and defaults assigned since make it stale
        return _RUN_TARGET, (target, fn.__code__, fn.__defaults__, fn.__kwdefaults__)
    if entry is not None:
        return (_REFERENCE, None) if entry.kind == "reference" else (_DISPATCH, None)
    if _dispatch.out_position(fn) >= 0:
        return _DISPATCH, None
    target = top.python_target(fn, False)
    if target is None:
        return _AS_IT_RUNS, None
    if tf is not type:
        return _DISPATCH, None
    return _CONSTRUCT, (fn.__init__, target, _library_class(fn))  # (the __init__ as _CLASS_TARGETS)


def _library_class(cls: Any) -> bool:
    """Whether ``cls``'s Python ``__new__`` and ``__init__`` (those it has) are NumPy's or SciPy's
    code, which runs as it is when no traced value is among its arguments (``np.errstate``: see
    :func:`_library_target`)."""
    parts = [f for f in (cls.__new__, cls.__init__) if isinstance(f, types.FunctionType)]
    return bool(parts) and all(_library_code(f) for f in parts) and not _has_post_init(cls)


def call_site() -> Any:
    """A call site's own ``_zp_call``: rewritten code calls one per site (``_zp_site_<k>``, see
    :func:`zygotepy._transform.rewritten`), which keeps the dispatcher's answer for the callable it
    met last, so the next call of it there skips the dispatcher's classification: a rule body
    traced by an outer level calls the same helpers, rules and constructors on every line, and
    met each through the dispatcher's questions (a constructor or a plain builtin through its
    whole search). The answer is kept while the registries' versions stay (a registration after
    the first call takes effect) and used under a trace without implicit parameters or a log;
    anything else goes to ``_dispatch.call``, which answers every call alike."""
    kept: tuple[Any, int, str, Any] = (_NOTHING_SEEN, -1, _DISPATCH, None)  # replaced whole: threads
    dispatch, resolve, levels_var = _dispatch.call, _dispatch.resolve, LEVELS
    tables = rc.RuleTable  # (its ``changes``: every table's registrations)

    def site(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        nonlocal kept
        levels = levels_var.get()
        if not levels:
            return fn(*args, **kwargs)
        top = levels[-1]
        seen, versions, kind, target = kept
        if fn is not seen or (kind is not _BY_RULE
                              and versions != tables.changes):
            if not _keepable(fn):
                if type(fn) is _FUNCTION:  # a closure (a rule's helper, a user's lambda): the dispatcher's
                    return dispatch(fn, *args, **kwargs)
                method = _method_of(fn)
                if method is None:
                    if (_compiled_method(fn) and top.log is None and not top.with_params
                            and _holds_nothing_traced(args, kwargs)):
                        return fn(*args, **kwargs)
                    return dispatch(fn, *args, **kwargs)
                fn, args = method[0], (method[1], *args)  # a bound method: its function, self first
            if fn is not seen or (kind is not _BY_RULE
                                  and versions != tables.changes):
                versions, kind, target = _site_answer(fn, top)
                kept = fn, versions, kind, target
        if kind is _BY_RULE:  # _dispatch.call's last lines, past its questions (inlined: per op)
            numbers = top.numbers_path
            if numbers is not None and target is not None and not kwargs:
                if versions != tables.changes:
                    versions, kind, target = _site_answer(fn, top)  # is the kept scalar form the rule's?
                    kept = fn, versions, kind, target  # (still by rule: tables only grow)
                if target is not None:
                    y = numbers(target, args, top)
                    if y is not NOT_FAST:
                        return y
                    kept = fn, versions, _ON_ARRAYS, target  # the next call here skips the numbers
            if not kwargs:
                fast = top.fast_path
                if fast is not None:
                    y = fast(fn, args, top)
                    if y is not NOT_FAST:
                        return y
            elif _constant_keywords(kwargs):  # logsumexp(z, axis=1): the rule takes them as they are
                fast = top.fast_path
                if fast is not None:
                    y = fast(fn, args, top, kwargs)
                    if y is not NOT_FAST:
                        return y
            return resolve(levels, fn, args, kwargs, True)
        if kind is _ON_ARRAYS:  # as _BY_RULE, past the numbers path, which missed here last time
            fast = top.fast_path
            if fast is not None and not kwargs:
                y = fast(fn, args, top)
                if y is not NOT_FAST:
                    if type(y) is Box and type(y._zp_value) is not np.ndarray and not _array_first(args):
                        kept = fn, versions, _BY_RULE, target  # a scalar's call: the numbers path again
                    return y
                return resolve(levels, fn, args, kwargs, True)
            kept = fn, versions, _BY_RULE, target  # (keywords: _BY_RULE's way from the next call)
            return dispatch(fn, *args, **kwargs)
        if top.log is None and not top.with_params:
            if kind is _RUN_TARGET:
                if (fn.__code__ is target[1] and fn.__defaults__ is target[2]
                        and fn.__kwdefaults__ is target[3]):
                    return target[0](*args, **kwargs) if kwargs else target[0](*args)
                _SITE_ANSWERS.pop(fn, None)  # fn's code or defaults were assigned: decided again
                kept = (_NOTHING_SEEN, -1, _DISPATCH, None)
            if kind is _CONSTRUCT and fn.__init__ is target[0]:  # (an __init__ replaced since: dispatched)
                if target[2] and _plain_values(args, kwargs):
                    return fn(*args, **kwargs)  # library code on plain values: what its runner does
                if args or kwargs:
                    _dispatch.innermost(levels, args, kwargs, False)  # refuses a finished trace's box
                return target[1](*args, **kwargs)
            if kind is _PASS_THROUGH:
                if not kwargs:
                    y = target[0](fn, args)
                    if y is not NOT_FAST:
                        return y
                return target[1](*args, **kwargs)
            if kind is _INSPECTION:
                return fn(*args, **kwargs)
            if kind is _REFERENCE:
                if args:  # xs.append(box), d.update(k=box), setattr(o, name, box): as the dispatcher notes
                    _dispatch.note_reference_stores(fn, args, kwargs)
                return fn(*args, **kwargs)
            if kind is _STRUCTURAL:  # (rule bodies a nested level traces: their layout helpers)
                return _dispatch.structural_call(fn, args, kwargs)
            if kind is _AS_IT_RUNS and _holds_nothing_traced(args, kwargs):
                return fn(*args, **kwargs)
        return dispatch(fn, *args, **kwargs)

    return site


_NOTHING_SEEN: Any = object()


def _array_first(args: tuple[Any, ...]) -> bool:
    """Whether the first argument is an array or a box of one, which the numbers path refuses
    (a real scalar comes first there): a reduction's scalar result leaves a site on arrays."""
    if not args:
        return False
    first = args[0]
    if type(first) is Box:
        first = first._zp_value
    return type(first) is np.ndarray


#: Argument types that are plain values (never a traced value, nor a holder of one).
_PLAIN_VALUES = frozenset({bool, int, float, complex, str, bytes, type(None), type, np.float64, np.int64,
                           np.bool_, np.dtype})


#: Types of the keyword arguments the fast paths pass to a rule as they are.
_CONSTANT_KEYWORD_TYPES = frozenset({int, bool, float, str, type(None), type})


def _constant_keywords(kwargs: dict[str, Any]) -> bool:
    """Whether a call's keyword arguments are constants (numbers, flags, names, ``None``, types,
    tuples of ints: ``axis=1``, ``keepdims=True``, ``dtype=np.float32``) and none is ``out``: what
    the general path would hand to the rule unchanged, so the fast paths may take the call.

    Example:
        >>> _constant_keywords({"axis": (0, 1), "keepdims": True}), _constant_keywords({"out": None})
        (True, False)
        >>> _constant_keywords({"where": np.array([True])})
        False
    """
    if "out" in kwargs:
        return False
    for v in kwargs.values():
        tv = type(v)
        if tv not in _CONSTANT_KEYWORD_TYPES:
            if tv is not tuple:
                return False
            for i in v:
                if type(i) is not int:
                    return False
    return True


def _plain_values(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether every argument is a plain value (:data:`_PLAIN_VALUES`, or an array of numbers), so
    that no traced value is reachable from the call (what a library runner searches for)."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        ta = type(a)
        if ta not in _PLAIN_VALUES and not (ta is np.ndarray and a.dtype.kind in "biufc"):
            return False
    return True


def _holds_nothing_traced(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether no argument is a traced value or a tuple, list or dict (which the dispatcher
    searches for one), and no keyword names ``out``."""
    for a in args:
        ta = type(a)
        if ta is Box or ta is tuple or ta is list or ta is dict:
            return False
    if kwargs:
        if "out" in kwargs:
            return False
        for a in kwargs.values():
            ta = type(a)
            if ta is Box or ta is tuple or ta is list or ta is dict:
                return False
    return True


#: The values of the rewritten code's helper names (``zygotepy._transform.HELPER_NAMES``).
HELPERS: dict[str, Any] = {"_zp_param": param, "_zp_attr": attribute, "_zp_locals": user_locals,
                           "_zp_call": _dispatch.call, "_zp_slice": slice, "_zp_setitem": setitem,
                           "_zp_store": store, "_zp_inplace": inplace, "_zp_getitem": getitem,
                           "_zp_compare": compare, "_zp_class_of": class_of, "_zp_setattr": set_attribute,
                           "_zp_delattr": delete_attribute, "_zp_iter": iterate, "_zp_with": with_manager,
                           "_zp_contains": contains, "_zp_delitem": delete_item, "_zp_escaping": escaping,
                           "_zp_as_is": as_is, **OPERATOR_HELPERS}
#: Per function (weakly, and at most 1024), ``(code, defaults, keyword defaults, its rewritten
#: version)``: one table without and one with implicit parameters.
_BY_FUNCTION = (WeakBoundedCache(1024), WeakBoundedCache(1024))


def transformed(fn: types.FunctionType, params: bool = False) -> Any:
    """The rewritten version of ``fn`` (``fn`` itself when it cannot be rewritten); with
    ``params``, the variant that also sees implicit parameters reached without a call."""
    cache = _BY_FUNCTION[params]
    code = fn.__code__
    entry = cache.get(fn)
    # kept while fn's code and defaults are the ones it was made from (IPython's autoreload and
    # other tools assign a function's __code__ and __defaults__ in place)
    if (entry is not None and entry[0] is code and entry[1] is fn.__defaults__
            and entry[2] is fn.__kwdefaults__):
        return entry[3]
    result = _rewritten_function(fn, params)
    cache.put(fn, (code, fn.__defaults__, fn.__kwdefaults__, result))
    return result


def _rewritten_function(fn: types.FunctionType, params: bool) -> Any:
    """:func:`transformed`'s answer, made (from the recipe of ``fn``'s code, kept per code)."""
    code = fn.__code__
    known = _RECIPES.get((id(code), params))
    if known is not None and known[0] is code:
        recipe = known[1]
    else:
        recipe = _AS_IT_IS if is_generated(code) else _recipe(fn, params)
        _RECIPES.put((id(code), params), (code, recipe))
    if recipe is _AS_IT_IS:
        result = fn
    else:
        if recipe is _NOT_REWRITTEN:
            _refuse_hidden_rules(fn)
            if params:
                _refuse_hidden_params(fn)
            result = fn
        else:
            new, sources = recipe
            cells = fn.__closure__
            # (a list, not a generator: a closure made per call, a lambda given to a nested gradient,
            # is rebuilt on every call, and a generator resumes once per cell)
            closure = tuple([cells[s] if type(s) is int else  # type: ignore[index]
                             types.CellType(weakref.ref(fn)) if s is _ORIGINAL_CELL else s for s in sources])
            result = types.FunctionType(new, fn.__globals__, fn.__name__, fn.__defaults__, closure)
            result.__kwdefaults__ = fn.__kwdefaults__
            result.__qualname__ = fn.__qualname__
    return result


#: Per ``(id(code), params)``, ``(code, recipe)``: the rewritten code and, per free variable of
#: it, the position of the original closure's cell to share or the engine helper's cell (one per
#: helper: rewritten code only reads it); or that the code runs as it is (made by the rewriter, or
#: not rewritable). A function made afresh per call (a lambda in a loop) is then rebuilt from this
#: without reading its free variables' names again. Bounded; holds code objects only (keyed by
#: id, as :data:`_CODE_KINDS`: the entry keeps its code alive, so the id stays its own).
_RECIPES = BoundedCache(4096)
_NOT_REWRITTEN: Any = object()
_AS_IT_IS: Any = object()  # code the rewriter made (a closure of rewritten code): already traced
_HELPER_CELLS = {name: types.CellType(helper) for name, helper in HELPERS.items()}
#: In a recipe, the cell made per function holding a weak reference to it (``_zp_original``: the
#: rewritten function runs it when a call reaches no traced value).
_ORIGINAL_CELL: Any = object()


def _recipe(fn: types.FunctionType, params: bool) -> Any:
    # code to rewrite (not NumPy's or SciPy's, run as they are by _library_run's own test) begins
    # with the check that runs it as it is when the call reaches no traced value
    new = rewritten(fn, params, _code_kind(fn) is _REWRITE)
    if new is None:
        return _NOT_REWRITTEN
    position = {name: i for i, name in enumerate(fn.__code__.co_freevars)}
    return new, tuple(position[n] if n in position else _ORIGINAL_CELL if n == ORIGINAL else _cell_of(n)
                      for n in new.co_freevars)


def _cell_of(helper: str) -> Any:
    """The cell rewritten code reads the helper ``helper`` from: the engine's, shared by all, or
    a call site's own (:func:`call_site`), new for each site of each code object."""
    return types.CellType(call_site()) if helper.startswith(SITE_PREFIX) else _HELPER_CELLS[helper]


def _refuse_hidden_rules(fn: types.FunctionType) -> None:
    """A function that cannot be rewritten runs as it is: its arithmetic is still seen, but the
    functions it calls are not. Refuse when one of them (or one they call in turn) has a rule or
    an adjoint, which would be silently skipped."""
    culprit = _hidden_rule(fn, {id(fn)})
    if culprit is not None:
        code = fn.__code__
        raise UntraceableError(
            f"{code.co_qualname} ({code.co_filename}) cannot be rewritten (no source: the REPL, "
            f"`python -c` or exec), and it calls {culprit}, whose rule or adjoint would be skipped. "
            "Define the function in a file (a module or a script), or call it outside "
            "differentiated code.")


def _refuse_hidden_params(fn: types.FunctionType) -> None:
    """A function run as it is cannot see the implicit parameters (``zp.params``) it reads as a
    global or a closure variable, here or in a Python function it calls: their gradient would be
    lost. Refuse, naming the variable."""
    params = {key for trace in LEVELS.get() for key in trace.params}
    found = _hidden_param(fn, params, {id(fn)}) if params else None
    if found is not None:
        code = fn.__code__
        raise UntraceableError(
            f"{code.co_qualname} ({code.co_filename}) cannot be rewritten (no source: `python -c`, exec or "
            f"a generated function), and it reads {found}, which is or holds an implicit parameter "
            "(zygotepy.params) whose gradient would be lost. Define the function in a file, or pass the "
            "parameter as an argument (zygotepy.gradient(f, W) instead of zygotepy.params(W))")


def _hidden_param(fn: types.FunctionType, params: set[int], seen: set[int]) -> str | None:
    code = fn.__code__
    cells = zip(code.co_freevars, fn.__closure__ or (), strict=True)
    values = [(n, fn.__globals__.get(n)) for n in code.co_names] + [
        (n, c.cell_contents) for n, c in cells if _filled_cell(c)]
    for name, value in values:
        if _holds_param(value, params, 3):
            return f"{name!r} of {code.co_qualname}"
    for obj in callees(fn):
        target = obj.__func__ if type(obj) is types.MethodType else obj
        if type(target) is types.FunctionType and id(target) not in seen and not _skipped(target):
            seen.add(id(target))
            inner = _hidden_param(target, params, seen)
            if inner is not None:
                return inner
    return None


def _holds_param(value: Any, params: set[int], depth: int) -> bool:
    """Whether ``value`` is an implicit parameter or holds one (in containers and object fields,
    ``depth`` levels down: ``model.W``)."""
    if type(value) is np.ndarray:
        return id(value) in params
    if depth == 0 or isinstance(value, (type, types.ModuleType, types.FunctionType, str, bytes, int, float)):
        return False
    if isinstance(value, (list, tuple)):
        items: Any = value
    elif isinstance(value, dict):
        items = value.values()
    else:
        items = getattr(value, "__dict__", {}).values()
    return any(_holds_param(v, params, depth - 1) for v in list(items)[:256])


def _filled_cell(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _hidden_rule(fn: types.FunctionType, seen: set[int]) -> str | None:
    for obj in callees(fn):
        target = obj.__func__ if type(obj) is types.MethodType else obj
        if type(target) is not types.FunctionType:
            continue
        if (_dispatch.RRULES.has_rules(target) or _dispatch.FRULES.has_rules(target)
                or ADJOINTS.has_rules(target) or ADJOINTS.has_rules(obj)):
            return callable_name(obj)
        if id(target) not in seen and not _skipped(target):
            seen.add(id(target))
            inner = _hidden_rule(target, seen)
            if inner is not None:
                return f"{callable_name(obj)}, which calls {inner}"
    return None


def _skipped(fn: Any) -> bool:
    code = getattr(fn, "__code__", None)
    if code is not None:  # by file, so doctests run in a library's namespace are still user code
        name = code.co_filename
        return name.startswith(_SKIP_DIRS) and not (name.startswith(_ENGINE_DIR) and
                                                     not os.path.basename(name).startswith("_"))
    module = getattr(fn, "__module__", None) or ""
    return module.split(".", 1)[0] in _SKIP_MODULES


#: How :func:`python_target` treats the functions of a code object: the engine's own (run as
#: they are: nested gradients, hooks manage traces themselves), standard-library code run as it
#: is (``_AS_IS``), library code not traced, NumPy's and SciPy's Python code (differentiated
#: through when it receives a traced value),
#: code made by the rewriter (a closure of rewritten code, made afresh per call: already
#: traced) or code to rewrite. Decided from the code alone, once: nested differentiation calls
#: ``python_target`` for every helper and pullback a rule body calls. Keyed by ``id(code)``, each
#: entry ``(code, kind)``: hashing a code object hashes its constants, nested code included, at
#: every call; the entry keeps its code alive, so the id stays its own. Bounded.
_ENGINE_OWN, _AS_IS_CODE, _LIBRARY = "engine", "as-is", "library"
_GENERATED_CODE, _REWRITE, _LIBRARY_SOURCE = "generated", "rewrite", "library source"
_CODE_KINDS = BoundedCache(4096)


def _code_kind(fn: types.FunctionType) -> str:
    code = fn.__code__
    filename = code.co_filename
    if filename.startswith(_ENGINE_DIR) and os.path.basename(filename).startswith("_"):
        return _ENGINE_OWN
    if filename.startswith(_AS_IS) or fn in _AS_IS_FUNCTIONS:
        return _AS_IS_CODE
    if _skipped(fn):
        return _LIBRARY
    if is_generated(code):
        return _GENERATED_CODE  # also a lambda or nested function of library code already rewritten
    return _LIBRARY_SOURCE if filename.startswith(_LIBRARY_DIRS) else _REWRITE


def python_target(fn: Any, params: bool = False) -> Any:
    """What to run to differentiate through ``fn``, or ``None`` if it is not Python code.

    NumPy's and SciPy's Python functions are differentiated through too (NumPy's dispatching
    functions through their Python implementation), but only when they receive a traced value:
    a call on constants runs the library code as it is."""
    tf = type(fn)
    if tf is _FUNCTION:
        code = fn.__code__
        known = _CODE_KINDS.get(id(code))
        if known is not None and known[0] is code:
            kind = known[1]
            if kind is _GENERATED_CODE:  # a closure of rewritten code (a pullback a nested level calls)
                return fn
        else:
            kind = _code_kind(fn)
            _CODE_KINDS.put(id(code), (code, kind))
        if kind is _REWRITE:
            target = transformed(fn, params)
            return _noting_escapes(fn) if target is fn else target  # fn: no source, its stores unseen
        if kind is _LIBRARY_SOURCE:
            return None if fn in _OPAQUE else _library_target(fn, fn, params)
        if kind is _AS_IS_CODE and code.co_filename.startswith(_KEEPING):
            return _noting_escapes(fn)
        return None if kind is _LIBRARY else fn
    if tf is functools._lru_cache_wrapper:  # differentiate the cached function itself, uncached
        return python_target(fn.__wrapped__, params)
    if tf is _DISPATCHER or tf is types.BuiltinFunctionType or tf is types.MethodDescriptorType:
        functional = IN_PLACE.get(fn)
        if functional is not None:  # np.place, np.add.at, ...: a functional update of the array
            return _in_place(fn, functional)
    if tf is _DISPATCHER:
        try:
            return _LIBRARY_TARGETS[fn, params]
        except KeyError:
            pass
        implementation = fn._implementation
        if type(implementation) is types.FunctionType and not _skipped(implementation):
            return _library_target(fn, implementation, params)
        _LIBRARY_TARGETS.put((fn, params), None)
        return None
    if tf is type:
        init = fn.__init__
        try:
            known, target = _CLASS_TARGETS[fn]
            if known is init:
                return target
        except KeyError:
            pass
        target = _class_target(fn)
        _CLASS_TARGETS.put(fn, (init, target))
        return target
    method = tf.__dict__.get("__call__") or next(
        (k.__dict__["__call__"] for k in tf.__mro__ if "__call__" in k.__dict__), None)
    if isinstance(method, types.FunctionType) and not _skipped(tf):
        return lambda *args, **kwargs: _dispatch.call(method, fn, *args, **kwargs)
    return None


def runs_as_it_is(fn: Any) -> bool:
    """Whether ``_dispatch.call`` runs ``fn`` itself under a trace without implicit parameters or
    a log: a Python function of code the rewriter made (a rule's pullback: a closure of rule code
    rewritten at import, whose calls already come back to the dispatcher) or of the engine's own,
    with no rule or handling entry of its own. Its code's kind is the one :func:`python_target`
    kept (a code met for the first time is the dispatcher's to classify): the sweep of a tape
    under outer levels asks this per pullback instead of the dispatcher's questions.

    Example:
        >>> runs_as_it_is(runs_as_it_is), runs_as_it_is(len)
        (True, False)
    """
    if type(fn) is not types.FunctionType:
        return False
    code = fn.__code__
    known = _CODE_KINDS.get(id(code))
    if known is None or known[0] is not code:
        kind = _code_kind(fn)
        _CODE_KINDS.put(id(code), (code, kind))
    else:
        kind = known[1]
    return (kind is _GENERATED_CODE or kind is _ENGINE_OWN) and fn not in _RULE_PRIMALS[0] \
        and fn not in _RULE_PRIMALS[1] and fn not in _RULE_PRIMALS[2] and fn not in _dispatch.HANDLED


#: The callables with rules of any table (read by :func:`runs_as_it_is`: live views, not copies).
_RULE_PRIMALS = (_dispatch.RRULES.primals, _dispatch.FRULES.primals, ADJOINTS.primals)


def runs_as_is(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a Python function without a rule (source code to rewrite, so made outside
    rewritten code) may run as it is on these arguments: rewriting it changes nothing when no
    traced value is reachable from the call, since no rule applies to a call without one. That
    holds when the arguments hold none (:func:`zygotepy._views.may_hold_traced`) and no active
    level has let one escape the frames of rewritten code (``Trace.values_escaped``: stored into
    an object, a container another reference sees, a class, a module, a closure cell, which is
    how one would reach the function's globals, closure or defaults); when no level substitutes
    values for plain arrays (``with_params``: implicit parameters, arrays written through a view
    or an alias), logs its calls or watches random draws (a checkpointed region); and when no
    legacy adjoint from outside zygotepy is defined (an adjoint applies without traced arguments:
    Zygote's ``nestlevel``). The code then computes what its rewritten version would, at the
    interpreter's speed (scikit-learn's parameter plumbing: ``clone``, ``get_params``).

    Left out: a traced value read from a caller's frame (``sys._getframe(1).f_locals``) or found
    by ``gc`` would reach code run as it is."""
    for trace in LEVELS.get():
        if trace.values_escaped or trace.with_params or trace.log is not None:
            return False
    if _dispatch.RANDOM_DRAWS.get() is not None or _foreign_adjoints():
        return False
    for a in args:
        if type(a) not in _views.HOLDS_NOTHING and _views.may_hold_traced(a):
            return False
    for a in kwargs.values():
        if type(a) not in _views.HOLDS_NOTHING and _views.may_hold_traced(a):
            return False
    return True


#: ``(ADJOINTS.version, whether an adjoint is defined for a function outside zygotepy)``
_FOREIGN_ADJOINTS = [-1, True]


def _foreign_adjoints() -> bool:
    """Whether a legacy adjoint is defined for a callable outside zygotepy (whose own adjoints'
    values are their functions' own: ``isderiving`` reads the trace stack), cached per definition."""
    version = ADJOINTS.version
    if _FOREIGN_ADJOINTS[0] != version:
        _FOREIGN_ADJOINTS[:] = [version, any(
            (getattr(f, "__module__", None) or "").split(".")[0] != "zygotepy" for f in ADJOINTS.primals)]
    return bool(_FOREIGN_ADJOINTS[1])


#: Per function run as it is that may keep its arguments, its runner (bounded: it holds its function).
_NOTING = WeakBoundedCache(256)


def _noting_escapes(fn: types.FunctionType) -> Any:
    """``fn`` (code run as it is that may keep its arguments: standard-library code of
    :data:`_KEEPING`, a function without source) as a runner that notes a traced value among the
    arguments as escaped (:func:`note_escape`)."""
    run = _NOTING.get(fn)
    if run is None:
        def run(*args: Any, **kwargs: Any) -> Any:
            if _views.may_hold_traced(args) or (kwargs and _views.may_hold_traced(kwargs)):
                note_escape()
            return fn(*args, **kwargs)

        run.__qualname__ = run.__name__ = fn.__qualname__
        _NOTING.put(fn, run)
    return run


#: Per class, ``(its __init__ when decided, what constructs it differentiably or None)``: rule
#: bodies traced by outer levels construct ``Thunk``s, ``NoTangent()``s and bookkeeping objects
#: on most calls; deciding means reading the class's file and attributes.
_CLASS_TARGETS = WeakBoundedCache(256)


def _class_target(cls: Any) -> Any:
    """What constructs ``cls`` with its Python ``__new__``, ``__init__`` or ``__post_init__`` (its
    own or inherited) traced, or ``None`` for a class constructed as it is."""
    if _skipped(cls):
        return None
    if _has_post_init(cls):
        return _post_init_constructor(cls)
    new = cls.__new__
    python_new = isinstance(new, types.FunctionType) and new.__code__.co_filename[:1] != "<"
    init = cls.__init__
    python_init = isinstance(init, types.FunctionType) and init.__code__.co_filename[:1] != "<"
    if not (python_new or (python_init and new is object.__new__)):
        return None
    if not python_new and new is not object.__new__:
        return None  # a compiled __new__ (a tuple or ndarray subclass): constructed as it is
    return _constructor(cls, new if python_new else None, init if python_init else None)


def _in_place(fn: Any, functional: Any) -> Any:
    """Run ``fn``, a NumPy function writing into its first argument (``np.add.at(a, i, b)``), as
    ``a = functional(a, i, b)`` on the traced value of the array owning ``a``'s memory
    (:mod:`zygotepy._views`), when a traced value is involved; else as it is."""

    def write(target: Any, *args: Any, **kwargs: Any) -> None:
        levels = LEVELS.get()
        if _dispatch.innermost(levels, (target, *args), kwargs, False) is None and not (
                type(target) is np.ndarray and _views.shadowed(levels, target)):
            fn(target, *args, **kwargs)
            return
        current = param(_views.latest(levels, target))
        _write(levels, target, None, _dispatch.call(functional, current, *args, **kwargs))

    return write


#: Per ``(public function, params)``, what :func:`_library_target` runs: NumPy's functions without
#: a rule (``np.broadcast_to`` in a pullback) are met at every call of a rule body an outer level
#: traces. Bounded; library functions live as long as their modules.
_LIBRARY_TARGETS = BoundedCache(1024)


def _library_target(public: Any, fn: types.FunctionType, params: bool) -> Any:
    """Run library code (``fn``, the code of ``public``) rewritten when a traced value is among
    the arguments (inside containers and objects too: a frozen SciPy distribution holds its
    parameters), else as it is. Errors inside it name ``public``, the function the user called."""
    key = (public, params)
    try:
        return _LIBRARY_TARGETS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable callable object
        return _library_run(public, fn, params)
    run = _library_run(public, fn, params)
    _LIBRARY_TARGETS.put(key, run)
    return run


def _library_run(public: Any, fn: types.FunctionType, params: bool) -> Any:
    target = transformed(fn, params)  # fn itself without source: then operator overloading only

    def run(*args: Any, **kwargs: Any) -> Any:
        if _dispatch.innermost(LEVELS.get(), args, kwargs, True) is None:
            return fn(*args, **kwargs)
        if LIBRARY_CALL.get() is not None:
            return target(*args, **kwargs)
        token = LIBRARY_CALL.set((public, args))
        try:
            return target(*args, **kwargs)
        finally:
            LIBRARY_CALL.reset(token)

    return run


def _has_post_init(cls: Any) -> bool:
    """A dataclass with a Python ``__post_init__`` (its generated ``__init__`` has no source)."""
    init = getattr(cls.__init__, "__code__", None)
    return (hasattr(cls, "__dataclass_fields__") and cls.__new__ is object.__new__
            and init is not None and init.co_filename.startswith("<")
            and isinstance(getattr(cls, "__post_init__", None), types.FunctionType) and not _skipped(cls))


#: Per dataclass, the constructor that runs its ``__post_init__`` rewritten.
_POST_INIT_CONSTRUCTORS = WeakBoundedCache(256)


def _post_init_constructor(cls: Any) -> Any:
    """A dataclass's constructor whose ``__post_init__`` goes through the dispatcher.

    The generated ``__init__`` assigns the fields and calls ``__post_init__`` from code without
    source. It runs on an instance of a subclass whose ``__post_init__`` only records the
    init-only values it is given; the instance then becomes a ``cls`` and the real
    ``__post_init__`` is called through the dispatcher with them."""
    try:
        return _POST_INIT_CONSTRUCTORS[cls]
    except KeyError:
        pass
    received: dict[int, tuple[Any, ...]] = {}

    def record(self: Any, *init_only: Any) -> None:
        received[id(self)] = init_only

    namespace = {"__slots__": (), "__post_init__": record, "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__}
    shadow = types.new_class(cls.__name__, (cls,), exec_body=lambda ns: ns.update(namespace))

    def construct(*args: Any, **kwargs: Any) -> Any:
        obj: Any = object.__new__(shadow)
        cls.__init__(obj, *args, **kwargs)
        object.__setattr__(obj, "__class__", cls)
        _dispatch.call(cls.__post_init__, obj, *received.pop(id(obj), ()))
        return obj

    _POST_INIT_CONSTRUCTORS.put(cls, construct)
    return construct


def _constructor(cls: Any, new: Any, init: Any) -> Any:  # a class (Any: mypy refuses cls.__init__ on a type)
    """Construct ``cls`` as Python does, with its Python ``__new__`` (``new``) and ``__init__``
    (``init``, run only on an instance of ``cls``) going through the dispatcher."""

    def construct(*args: Any, **kwargs: Any) -> Any:
        obj: Any = object.__new__(cls) if new is None else _dispatch.call(new, cls, *args, **kwargs)
        if init is not None and isinstance(obj, cls):
            _dispatch.call(init, obj, *args, **kwargs)
        elif init is None and isinstance(obj, cls) and type(obj).__init__ is not object.__init__:
            type(obj).__init__(obj, *args, **kwargs)  # a compiled __init__ after a Python __new__
        return obj

    return construct
