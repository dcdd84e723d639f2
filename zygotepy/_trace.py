"""Trace state: a context-local stack of active traces, and the ``Box`` that carries a traced value.

Every ``gradient``/``pullback``/``jvp`` call pushes a trace of some kind (a subclass of
:class:`Trace`; its ``level`` is its depth in the stack), and the values it traces are
:class:`Box` objects on it. A reverse trace's box is a node of its tape, remembering the rule
pullback that made it and where its inputs came from (its routes); a forward trace's box
carries tangents. A value traced by an outer level may sit
inside the box of an inner level: nesting is by wrapping, so perturbations never mix.
The stack lives in a ``ContextVar``, so threads and asyncio tasks differentiate independently.
"""

from __future__ import annotations

import contextvars
import gc
import operator
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import numpy as np

from rulescore._checks import callable_name, checks_enabled
from zygotepy._errors import UntraceableError, unseen_code, user_code

#: Attributes read straight off the primal: they carry no derivative and are hot.
PLAIN_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "strides",
                              "flags", "__len__", "_fields", "__dataclass_fields__", "__dict__"})

LEVELS: contextvars.ContextVar[tuple[Trace, ...]] = contextvars.ContextVar("zygotepy_levels", default=())


def debug_logger() -> Any:
    """The ``"zygotepy"`` logger if it emits DEBUG records, else ``None``. The logging module is
    not imported for this: if nobody imported it, nobody asked for DEBUG. The logger is looked
    up once (``getLogger`` takes the logging module's lock; every trace asks)."""
    logging = sys.modules.get("logging")
    if logging is None:
        return None
    log = _LOGGER.get("zygotepy")
    if log is None:
        log = _LOGGER["zygotepy"] = logging.getLogger("zygotepy")
    return log if log.isEnabledFor(logging.DEBUG) else None


#: The ``"zygotepy"`` logger once looked up (a logger lives as long as the logging module).
_LOGGER: dict[str, Any] = {}


def log_call(trace: Trace, fn: Any, args: tuple[Any, ...], how: str, rule: Any = None) -> None:
    """One DEBUG record naming how a call is differentiated (``trace.log`` is set)."""
    types = ", ".join(type(unbox_all(a)).__name__ for a in args)
    call = f"{callable_name(fn)}({types})"
    trace.log.debug("%s: %s%s", call, how, "" if rule is None else f" {rule!r}",
                    extra={"zygotepy_call": call, "zygotepy_how": how, "zygotepy_level": trace.level,
                           "zygotepy_rule": "" if rule is None else repr(rule)})


class Trace:
    """One active differentiation: its tape of boxes and its implicit parameters.

    The base of the trace kinds: each kind decides how a call with a rule is differentiated
    (``differentiate``), with which rule table and ``RuleConfig`` (``rules``, ``config``), and how
    a Python function without a rule is run (``python_target``). A reverse trace records
    pullbacks on its tape (``zygotepy._reverse``); a forward trace pushes tangents through frules
    (``zygotepy._forward``). The dispatcher only asks the trace.
    """

    __slots__ = ("level", "outer", "with_params", "uniform", "fast_path", "numbers_path", "checks", "log",
                 "tape", "params", "param_boxes", "shadows", "owners", "shapes", "spent", "stored",
                 "values_escaped", "__weakref__")

    #: Whether this kind records pullbacks on its tape (reverse mode; legacy adjoints apply).
    records = True
    #: The rulescore table this kind's rules come from, and the config its rules receive.
    rules: Any = None
    config: Any = None

    def __init__(self, outer: tuple[Trace, ...], params: dict[int, Any] | None = None) -> None:
        self.level = len(outer)
        self.outer = outer  # the traces active around this one (a rule's body runs with these)
        # (the innermost outer trace's flags already say it of every trace around it)
        self.with_params: bool = bool(params) or (bool(outer) and outer[-1].with_params)
        #: every active trace of one kind
        self.uniform: bool = not outer or (outer[-1].uniform and type(outer[-1]) is type(self))
        #: the dispatcher's hot path for this trace, ``fast_path(fn, args, trace)``, or None
        self.fast_path: Any = None
        #: a rule's scalar form applied to real scalars, ``numbers_path(scalar, args, trace)`` (a
        #: tape of numbers, see :data:`NUMBERS`), or None
        self.numbers_path: Any = None
        self.checks = checks_enabled()  # rulescore's checking mode, read once per differentiation
        self.log = debug_logger()  # read once per differentiation: calls check only this attribute
        self.tape: list[Any] = []  # per node: None (an input) or one flat tuple (see :func:`node`)
        self.params = params or {}
        self.param_boxes: dict[int, Box] = {}
        #: arrays written through a view or an alias: id -> (array, its traced value now)
        self.shadows: dict[int, tuple[Any, Any]] = {}
        #: arrays a rule made a view of: id -> (array, the box holding it, or None if unknown)
        self.owners: dict[int, tuple[Any, Any]] = {}
        #: tape index -> shape, for every node whose value is an array: the sweep refuses a
        #: cotangent of another shape (a rule's mistake, which summing back would hide)
        self.shapes: dict[int, tuple[int, ...]] = {}
        #: traces that ran and ended inside this one, whose values the function may have stored where
        #: they outlive it (a checkpointed forward pass): released with this trace's own
        self.spent: list[Trace] = []
        #: objects and containers rewritten code stored this trace's values into (id -> holder):
        #: its end replaces them there without searching the heap
        self.stored: dict[int, Any] = {}
        #: whether a traced value (this level's or an outer one's) may be reachable from outside
        #: the frames of rewritten code (an attribute, a global, a shared container, a closure that
        #: may outlive its frame): until then a call whose arguments hold none reaches none, and may
        #: run as it is (see :func:`note_escape`)
        self.values_escaped: bool = bool(outer) and outer[-1].values_escaped

    def lookup(self, fn: Any, args: tuple[Any, ...]) -> Any:
        """This kind's rule for ``fn(*args)``, or ``None``."""
        return self.rules.lookup(fn, args, self.config)

    def may_have_rule(self, fn: Any, args: tuple[Any, ...]) -> bool:
        """Whether a rule of some active trace may apply to ``fn(*args)`` (the dispatcher then
        searches objects' fields for boxes). Exact when every active trace is of one kind."""
        if self.uniform:
            return self.lookup(fn, args) is not None
        return any(t.has_rules(fn) for t in (*self.outer, self))

    def has_rules(self, fn: Any) -> bool:
        """Whether this kind has any rule for ``fn`` (for some argument types)."""
        return bool(self.rules.has_rules(fn))

    def differentiate(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``fn(*args, **kwargs)`` by this trace's rule, or ``NO_RULE`` (defined by each kind)."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    def missing_rule(self, fn: Any) -> str | None:
        """Why this kind cannot differentiate ``fn`` when another kind could, or ``None``."""
        return None

    def python_target(self, fn: Any, params: bool) -> Any:
        """What runs a Python function without a rule so that its calls come back to the
        dispatcher, or ``None`` (defined by each kind)."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    # What a box's operations ask of the innermost trace: the dispatcher, which sits above this
    # module, answers them (``zygotepy._dispatch.DispatchedTrace``, the base of every kind).
    def call(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``fn(*args, **kwargs)`` the way the engine differentiates it (rewritten code's call)."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    def traced(self, levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
               recurse: bool) -> Any:
        """``fn(*args, **kwargs)`` with a traced value involved (``recurse``: a Python function
        without a rule may be differentiated through; False for NumPy's protocols)."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    def resolve(self, levels: tuple[Trace, ...], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                recurse: bool) -> Any:
        """:meth:`traced` past this trace's ``fast_path`` (which a box's operator tried itself)."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    def attribute(self, box: Box, name: str) -> Any:
        """``box.name`` for an attribute that may carry a derivative or run Python code."""
        raise NotImplementedError(f"{type(self).__name__} is not a trace kind")

    def box(self, value: Any, pullback: Any = None, routes: tuple[Any, ...] = (), nargs: int = 0) -> Box:
        """Record a new node: ``pullback`` maps its cotangent to ``nargs + 1`` cotangents, and
        ``routes`` (``(argument position, box or [(path, box), ...])``) says which boxes get them.

        The tape keeps tape indices, never boxes, so a finished trace is freed by reference
        counting alone (no box -> trace -> tape -> box cycle)."""
        tape = self.tape
        index = len(tape)
        v = value
        while type(v) is Box:  # (nested: an outer level's box)
            v = v._zp_value
        if type(v) is np.ndarray:
            self.shapes[index] = v.shape
        tape.append(None if pullback is None else node(pullback, tuple(
            (i, t._zp_index if type(t) is Box else [(path, b._zp_index) for path, b in t])
            for i, t in routes), nargs))
        box = object.__new__(Box)  # Box(value, self, index) without the Python frame of its __init__
        box._zp_value = value
        box._zp_trace = self
        box._zp_index = index
        return box

    def param_box(self, value: Any) -> Box:
        """The one input box standing for an implicit parameter, made on first sight."""
        key = id(value)
        b = self.param_boxes.get(key)
        if b is None:
            b = self.param_boxes[key] = self.box(value)
        return b

    def __repr__(self) -> str:
        return f"<{type(self).__name__} level={self.level} nodes={len(self.tape)}>"


def note_escape() -> None:
    """A traced value may now be reachable from outside the frames of rewritten code (stored into
    an object, a class, a module, a container another reference sees, a closure cell): every
    active level stops running calls as they are (``Trace.values_escaped``) for the rest of its
    life. Every level, not only the value's own: an inner level's value may wrap an outer one's."""
    for trace in LEVELS.get():
        trace.values_escaped = True


def node(pullback: Any, routes: tuple[tuple[int, Any], ...], nargs: int) -> tuple[Any, ...]:
    """A tape node as one flat tuple, ``(pullback, nargs, position, target, position, target,
    ...)``, a target being a tape index or ``[(path, index), ...]``: one object per node rather
    than a tuple per route, which a long tape pays for in memory and in the sweep's cache misses.

    Example:
        >>> node(abs, ((0, 7), (1, 3)), 2)
        (<built-in function abs>, 2, 0, 7, 1, 3)
    """
    return (pullback, nargs, *[part for route in routes for part in route])


class _Numbers:
    """The mark of a numbers node (one instance, :data:`NUMBERS`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<numbers>"


#: The first item of a numbers node, the tape node of a rule applied to real scalars at first
#: order, its partial derivatives as numbers: ``(NUMBERS, partial, target, partial, target, ...)``,
#: one pair per traced argument (``target``: its tape index), each partial of its argument's type
#: (a Python float or a NumPy float64). The sweep multiplies a real cotangent by each partial
#: itself, a product with a Python float made one (a projection): no pullback is made or called.
NUMBERS = _Numbers()


#: What :meth:`Trace.differentiate` returns when the trace has no rule for the call.
NO_RULE: Any = object()


#: Python's collector runs its youngest generation this many allocations apart while any thread
#: differentiates (at least): a gradient's tape, freed by reference counting when it is done,
#: then seldom meets a collection that would scan it for cycles it does not have.
YOUNG_THRESHOLD = 100_000

P = ParamSpec("P")
R = TypeVar("R")

#: The differentiations running in the process (one key per :func:`isolated` call), and the
#: collector's thresholds as they were before the first of them began (``_USER["thresholds"]``).
_RUNNING: dict[Any, None] = {}
_USER: dict[str, tuple[int, ...]] = {}
_RUNNING_LOCK = threading.Lock()


def isolated(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` in a copy of the current context: the trace stack (and every other
    context variable) is the caller's again when it returns or raises, whatever happened inside.
    While it runs, the collector's youngest generation is collected at most every
    :data:`YOUNG_THRESHOLD` allocations (the collector stays on, for every thread); the user's
    thresholds are back when the last differentiation of the process ends.

    A ``with`` block restores state in Python code, which a ``KeyboardInterrupt`` can skip (it is
    raised at the first bytecode of ``__exit__`` as readily as anywhere else); ``Context.run``
    restores the caller's context in C. The thresholds are raised and restored by statements
    that an interrupt cannot separate from their bookkeeping: each change is the last call of
    its block, after only subscript stores (Python checks for signals after calls and at the
    start of Python functions, never between those).

    Example:
        >>> import gc
        >>> with new_trace(Trace):
        ...     def interrupted():
        ...         LEVELS.set(())  # a push or pop never undone
        ...         raise KeyboardInterrupt
        ...     try:
        ...         isolated(interrupted)
        ...     except KeyboardInterrupt:
        ...         pass
        ...     len(LEVELS.get())
        1
        >>> isolated(gc.get_threshold)[0] >= YOUNG_THRESHOLD, gc.get_threshold()[0] < YOUNG_THRESHOLD
        (True, True)
    """
    if LEVELS.get():
        # a differentiation inside another of this context (a nested ``gradient``): the outer
        # one's call of this function, further up this thread's stack, holds the raised
        # thresholds until after this one returns
        return contextvars.copy_context().run(fn, *args, **kwargs)
    key = object()
    try:
        with _RUNNING_LOCK:
            user = gc.get_threshold()
            if not _RUNNING:
                _USER["thresholds"] = user
            _RUNNING[key] = None
            if user[0]:  # (0: the user turned automatic collection off)
                gc.set_threshold(max(user[0], YOUNG_THRESHOLD), *user[1:])
        return contextvars.copy_context().run(fn, *args, **kwargs)
    finally:
        with _RUNNING_LOCK:
            if key in _RUNNING:
                del _RUNNING[key]
                if not _RUNNING:  # the last one out
                    gc.set_threshold(*_USER["thresholds"])


class new_trace:  # noqa: N801  (used as a function: ``with new_trace(kind) as trace``)
    """Push a new innermost trace of class ``kind`` for the block; extra arguments go to the
    kind's constructor after the traces already active. The entry points run the block inside
    :func:`isolated`, so an interrupt between the push and the pop cannot leave the trace on
    the caller's stack.

    Python's cyclic collector keeps running (a tape holds no reference cycles, so it has nothing
    to find there, and pausing it would pause it for every thread of the process), and the
    recursion limit is the user's: code as deep as the limit allows raises ``RecursionError``
    rather than overflowing the C stack.

    Example:
        >>> with new_trace(Trace) as trace:
        ...     trace.level, LEVELS.get() == (trace,)
        (0, True)
    """

    __slots__ = ("trace", "token")

    def __init__(self, kind: type[Trace], *args: Any, **kwargs: Any) -> None:
        self.trace = kind(LEVELS.get(), *args, **kwargs)

    def __enter__(self) -> Any:
        trace = self.trace
        self.token = LEVELS.set((*trace.outer, trace))
        return trace

    def __exit__(self, *exc: object) -> None:
        LEVELS.reset(self.token)


#: What a trace's ``fast_path`` returns for a call it leaves to the full path.
NOT_FAST: Any = object()


def escaped() -> str:
    """The error for a traced value used outside its differentiation, naming the user's code."""
    return (f"a traced value was used in {user_code()} where its differentiation is not active (it "
            "finished, it runs in another thread, or this is the body of a rule or checkpoint it "
            "belongs to). Pass the value as an argument instead of capturing it; to keep a value "
            "for after the differentiation (a log, a history), store zygotepy.dropgrad(value), "
            "its plain value")


def dispatch(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` through the innermost active trace's dispatcher (a plain call when
    none is active): how the modules below the dispatcher call it.

    Example:
        >>> dispatch(max, 1.0, 2.0)  # no differentiation active: a plain call
        2.0
    """
    levels = LEVELS.get()
    if not levels:
        return fn(*args, **kwargs)
    return levels[-1].call(fn, args, kwargs)


def dispatch_from_box(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for an operation a box received itself (an attribute, an index, a
    call): refused when the box's differentiation is no longer active."""
    levels = LEVELS.get()
    if not levels:
        raise UntraceableError(escaped())
    return levels[-1].traced(levels, fn, args, kwargs, True)


def _binary(op: Any, name: str, reflected: bool = False) -> Any:
    """A box's operator method: the innermost trace's fast path (most of the calls a program
    makes are operators: one Python frame less per operation), else the dispatcher's full path."""
    def method(self: Box, other: Any) -> Any:
        levels = LEVELS.get()
        if not levels:
            raise UntraceableError(escaped())
        args = (other, self) if reflected else (self, other)
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(op, args, top)
            if y is not NOT_FAST:
                return y
        return top.resolve(levels, op, args, {}, True)

    method.__name__, method.__qualname__ = name, f"Box.{name}"
    return method


def _unary(op: Any, name: str) -> Any:
    def method(self: Box) -> Any:
        levels = LEVELS.get()
        if not levels:
            raise UntraceableError(escaped())
        top = levels[-1]
        fast = top.fast_path
        if fast is not None:
            y = fast(op, (self,), top)
            if y is not NOT_FAST:
                return y
        return top.resolve(levels, op, (self,), {}, True)

    method.__name__, method.__qualname__ = name, f"Box.{name}"
    return method


def _refuse(kind: str, name: str) -> Any:
    """A conversion that would drop the gradient where the engine does not see it: it raises."""
    def method(self: Box, *args: Any, **kwargs: Any) -> Any:
        where, why = unseen_code()
        raise UntraceableError(
            f"a traced value was converted to a plain {kind} inside {where}, so its gradient would be "
            f"lost. That code runs as it is: {why}. Register an rrule for the function that does the "
            f"conversion (@rulescore.rrule.register(fn)), or call it on values that are not "
            f"differentiated (zygotepy.dropgrad(x)).")

    method.__name__, method.__qualname__ = name, f"Box.{name}"
    return method


def _refuse_plain_out(fn: Any, kwargs: dict[str, Any]) -> None:
    """NumPy hands a box its protocols only from code the engine did not rewrite (rewritten code
    calls through the dispatcher). A write of a traced value into a plain array's memory there
    (``acc += x``, ``out=acc``) cannot be followed: that code reads ``acc`` afterwards as it is."""
    out = kwargs.get("out")
    targets = out if type(out) is tuple else (out,)
    if any(type(t) is np.ndarray for t in targets):
        where, why = unseen_code()
        raise UntraceableError(
            f"{callable_name(fn)} writes a traced value into a plain array (out=, or an in-place "
            f"operator such as +=) inside {where}, which runs as it is: {why}. The array's later reads "
            "there would not see the traced value, so the result and its gradient would be wrong. Build "
            "a new array instead (acc = acc + x), or call that code explicitly from the differentiated "
            "function.")


#: Attributes NumPy reads to take a box's memory: refused, so it reaches ``__array__``, which raises.
_NUMPY_EXPORTS = frozenset({"__array_interface__", "__array_struct__"})


class Box:
    """A traced value: the primal ``value`` plus its node on a trace's tape.

    ``isinstance`` sees the primal's class (``box.__class__`` is forwarded), so user code and
    rules that check types keep working; ``type(box)`` is still ``Box``. Every operation routes
    to the innermost trace's dispatcher: binary operators (and their reflections), unary
    operators, NumPy's ``__array_ufunc__`` and ``__array_function__`` protocols, indexing,
    iteration, calls and attribute access. Conversions that would silently drop the gradient
    outside rewritten code (``__float__``, ``__complex__``, ``__array__``) raise instead.
    """

    __slots__ = ("_zp_value", "_zp_trace", "_zp_index", "_zp_tangents")
    _zp_tangents: Any  # forward mode's tangents, set only on forward traces' boxes
    __array_priority__ = 1000  # NumPy defers to the box's reflected operators

    def __init__(self, value: Any, trace: Trace, index: int) -> None:
        self._zp_value = value
        self._zp_trace = trace
        self._zp_index = index

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # noqa: F811
        return self._zp_value.__class__

    __add__, __radd__ = _binary(operator.add, "__add__"), _binary(operator.add, "__radd__", True)
    __sub__, __rsub__ = _binary(operator.sub, "__sub__"), _binary(operator.sub, "__rsub__", True)
    __mul__, __rmul__ = _binary(operator.mul, "__mul__"), _binary(operator.mul, "__rmul__", True)
    __truediv__ = _binary(operator.truediv, "__truediv__")
    __rtruediv__ = _binary(operator.truediv, "__rtruediv__", True)
    __floordiv__ = _binary(operator.floordiv, "__floordiv__")
    __rfloordiv__ = _binary(operator.floordiv, "__rfloordiv__", True)
    __mod__, __rmod__ = _binary(operator.mod, "__mod__"), _binary(operator.mod, "__rmod__", True)
    __pow__, __rpow__ = _binary(operator.pow, "__pow__"), _binary(operator.pow, "__rpow__", True)
    __matmul__ = _binary(operator.matmul, "__matmul__")
    __rmatmul__ = _binary(operator.matmul, "__rmatmul__", True)
    __and__, __rand__ = _binary(operator.and_, "__and__"), _binary(operator.and_, "__rand__", True)
    __or__, __ror__ = _binary(operator.or_, "__or__"), _binary(operator.or_, "__ror__", True)
    __xor__, __rxor__ = _binary(operator.xor, "__xor__"), _binary(operator.xor, "__rxor__", True)
    __lshift__ = _binary(operator.lshift, "__lshift__")
    __rlshift__ = _binary(operator.lshift, "__rlshift__", True)
    __rshift__ = _binary(operator.rshift, "__rshift__")
    __rrshift__ = _binary(operator.rshift, "__rrshift__", True)
    __divmod__, __rdivmod__ = _binary(divmod, "__divmod__"), _binary(divmod, "__rdivmod__", True)
    __lt__, __le__ = _binary(operator.lt, "__lt__"), _binary(operator.le, "__le__")
    __gt__, __ge__ = _binary(operator.gt, "__gt__"), _binary(operator.ge, "__ge__")
    __eq__, __ne__ = _binary(operator.eq, "__eq__"), _binary(operator.ne, "__ne__")
    __neg__, __pos__ = _unary(operator.neg, "__neg__"), _unary(operator.pos, "__pos__")
    __abs__, __invert__ = _unary(operator.abs, "__abs__"), _unary(operator.invert, "__invert__")

    __float__ = _refuse("float", "__float__")
    __complex__ = _refuse("complex", "__complex__")
    __array__ = _refuse("NumPy array", "__array__")

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return self._protocol(fn, inputs, kwargs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        return self._protocol(func, args, kwargs)

    @staticmethod
    def _protocol(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A NumPy function NumPy handed to the box: differentiated, never run as Python."""
        if kwargs:
            _refuse_plain_out(fn, kwargs)
        levels = LEVELS.get()
        if not levels:
            raise UntraceableError(escaped())
        return levels[-1].traced(levels, fn, args, kwargs, False)

    def __getitem__(self, index: Any) -> Any:
        return dispatch_from_box(operator.getitem, self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        raise UntraceableError(
            f"in-place assignment into a traced value inside {user_code()} is not differentiable "
            "here (the target is not a local name, so it cannot be rebound to the updated array); "
            "assign to a local name first (`y = obj.buf; y[i] = v`) or build a new array, e.g. with "
            "np.where or np.concatenate"
        )

    def __iter__(self) -> Any:
        value = self._zp_value
        if isinstance(value, dict):
            return iter(value)
        return (self[i] for i in range(len(value)))

    def __len__(self) -> int:
        return len(self._zp_value)

    def __bool__(self) -> bool:
        return bool(unbox_all(self))

    def __index__(self) -> int:
        return operator.index(unbox_all(self))

    def __int__(self) -> int:
        return int(unbox_all(self))

    def __str__(self) -> str:
        return str(unbox_all(self))

    def __repr__(self) -> str:
        return f"Traced({unbox_all(self)!r}, level={self._zp_trace.level})"

    def __format__(self, spec: str) -> str:
        return format(unbox_all(self), spec)

    def __hash__(self) -> int:
        """Integers, strings and bytes keep their value's hash, so traced ones still index tables.
        Any other traced value refuses, as JAX's tracers do: a lookup keyed on it would be decided
        by its value (a hash by identity misses equal keys; a hash by value answers with a
        constant), and the gradient through that choice would be lost."""
        value = unbox_all(self)
        if isinstance(value, (int, np.integer, str, bytes)):
            return hash(value)
        raise TypeError(
            f"a traced {type(value).__name__} is used as a dictionary key or set member inside "
            f"{user_code()}; which entry is found would depend on its value, which differentiation "
            "cannot follow. Look it up by its plain value, zygotepy.dropgrad(x) (no gradient flows "
            "through the lookup), or compare values explicitly (x == key)")

    def __getattr__(self, name: str) -> Any:
        if name in _NUMPY_EXPORTS:
            raise AttributeError(name)  # NumPy must reach __array__, which refuses, not read the buffer
        if name in PLAIN_ATTRIBUTES or (name.startswith("__") and name.endswith("__")):
            value = self._zp_value  # (unbox_all, inlined: rule bodies read x.dtype on most calls)
            while type(value) is Box:
                value = value._zp_value
            return getattr(value, name)
        levels = LEVELS.get()
        if not levels:
            raise UntraceableError(escaped())
        return levels[-1].attribute(self, name)

    def __copy__(self) -> Any:
        """``copy.copy``/``copy.deepcopy`` of a traced value: an array is copied by ``np.copy``
        (its gradient flows to the original); a number is immutable and is its own copy."""
        value = unbox_all(self)
        if isinstance(value, np.ndarray):
            return dispatch_from_box(np.copy, self)
        if isinstance(value, (int, float, complex, np.generic)):
            return self
        raise UntraceableError(
            f"copying a traced {type(value).__name__} inside {user_code()} is not differentiable here; "
            "copy its fields one by one, or build a new object from them")

    def __deepcopy__(self, memo: Any = None) -> Any:
        return self.__copy__()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return dispatch_from_box(self, *args, **kwargs)


class BoundBoxMethod:
    """A C-level method of the primal's class bound to a box (``box.sum``): calling it dispatches
    ``type(primal).sum(box, ...)`` so the method's rule applies."""

    __slots__ = ("__func__", "__self__")

    def __init__(self, func: Any, box: Box) -> None:
        self.__func__ = func
        self.__self__ = box

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return dispatch_from_box(self.__func__, self.__self__, *args, **kwargs)


def primals_of(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with each box (of an outer differentiation, for a nested entry point) replaced
    by its primal: what the entry points check (a box answers ``isinstance`` through a Python
    property, its primal in C).

    Example:
        >>> with new_trace(Trace) as trace:
        ...     primals_of((Box(2.0, trace, 0), "a"))
        (2.0, 'a')
    """
    for a in args:
        if type(a) is Box:
            return tuple(unbox_all(a) for a in args)
    return args


def opaque_callable(x: Any) -> bool:
    """Whether ``x`` is only called, never looked into for traced values: a function, method,
    class or builtin; not an object of a Python class with ``__call__`` (a SciPy spline holds
    traced coefficients).

    Example:
        >>> import numpy as np
        >>> from scipy.interpolate import CubicSpline
        >>> opaque_callable(np.sum), opaque_callable(CubicSpline([0, 1, 2], [0, 1, 0]))
        (True, False)
    """
    call = next((k.__dict__["__call__"] for k in type(x).__mro__ if "__call__" in k.__dict__), None)
    return call is not None and not isinstance(call, types.FunctionType)


def unbox_all(x: Any) -> Any:
    """The primal under every level of boxing (for printing and plain conversions)."""
    while type(x) is Box:
        x = x._zp_value
    return x
