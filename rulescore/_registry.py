"""The rule registry: ``rrule`` and ``frule``, dispatching on the callable and argument types.

Each callable owns a small list of rules. A lookup picks, among the rules whose argument types
match (``issubclass`` on ``arg.__class__``, so tracers can stand in for their primals), the one
that is most specific position by position in the MRO; the answer is cached per tuple of
argument classes. Registering a rule clears only that callable's cache, so a rule takes effect
at once, and the cost of a lookup does not grow with the number of rules registered elsewhere.
"""

from __future__ import annotations

import threading
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any

from rulescore._checks import (
    callable_name,
    check_frule_result,
    check_rrule_result,
    checks_enabled,
    describe_call,
)
from rulescore._config import RuleConfig
from rulescore._contract import keep_rrule_contract, plain_tangents, zero_of
from rulescore._rule_pair import RulePair, TypeSpec

_MISSING: Any = object()


class AmbiguousRuleError(TypeError):
    """Two rules match a call and neither is more specific than the other."""


@dataclass(frozen=True, eq=False)
class Rule:
    """One registered rule: the callable it is for, its argument types and its implementation.

    ``kind`` is ``"rule"``, ``"non_differentiable"`` (every input gets ``NoTangent``; engines may
    skip recording) or ``"opt_out"`` (no rule: let the AD system recurse into the callable), or
    one of the :data:`HANDLING_KINDS`, which say how an engine handles a call without a rule.
    """

    table: str
    primal: Any
    types: tuple[TypeSpec, ...]
    impl: Callable[..., Any] | None
    config: type | None = None
    kind: str = "rule"
    origin: str = field(default="")
    #: The positions (among the positional arguments) of the arguments the frule differentiates
    #: with respect to; ``None``: all. The frule is not called when all their tangents are zero.
    wrt: tuple[int, ...] | None = None
    #: ``False``: a float argument without a tangent reaches the frule as zeros of its shape
    #: (the rule contract, see ``plain_tangents``); ``True``: as ``ZeroTangent()``, which the
    #: frule handles itself (faster: it can skip the work).
    zero_tangents: bool = True
    #: ``scalar(*xs) -> (y, partials)`` at real scalar arguments, or ``None`` (see
    #: :class:`~rulescore.RulePair`'s ``scalar``): an engine may record the numbers instead of
    #: running the rule.
    scalar: Callable[..., Any] | None = None
    #: An rrule called with the primals alone (no ``RuleConfig``): an engine may run it as it is.
    plain: bool = field(init=False, repr=False)

    def __post_init__(self) -> None:
        plain = self.kind == "rule" and self.table == "rrule" and not self.config
        object.__setattr__(self, "plain", plain)

    @property
    def non_differentiable(self) -> bool:
        return self.kind == "non_differentiable"

    def __repr__(self) -> str:
        tys = ", ".join(_type_name(t) for t in self.types)
        cfg = f"config={self.config.__name__}, " if self.config else ""
        sig = f"{self.table}({cfg}{callable_name(self.primal)}{', ' + tys if tys else ''})"
        kind = "" if self.kind == "rule" else f" [{self.kind}]"
        return f"<{sig}{kind} at {self.origin}>"

    def matches(self, classes: tuple[type, ...], config: RuleConfig | None) -> bool:
        if self.config is not None and not isinstance(config, self.config):
            return False
        if len(classes) < len(self.types):
            return False
        return all(issubclass(c, t) for c, t in zip(classes, self.types, strict=False))

    def distance(self, classes: tuple[type, ...]) -> tuple[float, ...]:
        """Per argument, how far up the MRO the matching registered type sits (0 = exact).

        A type matched only through ``issubclass`` (an ABC such as ``numbers.Real`` or
        ``collections.abc.Sequence``, not in the MRO) ranks just below ``object``, a deeper ABC
        (``Real``) before a shallower one (``Number``); an untyped position ranks last.
        """
        out: list[float] = [0 if self.config is not None else 1]
        for i, c in enumerate(classes):
            mro = c.__mro__
            if i >= len(self.types):
                out.append(len(mro))
                continue
            t = self.types[i]
            options = t if isinstance(t, tuple) else (t,)
            out.append(min(_mro_distance(mro, o) for o in options if issubclass(c, o)))
        return tuple(out)


#: What an engine does with a callable that needs no rule, registered with
#: :meth:`RuleTable.register_kind` for every argument type (``impl`` is the engine's handler):
#: ``"structural"`` (run on the plain values; the answer depends on types and shapes only and
#: carries no derivative: :func:`rulescore.structural`), ``"pass_through"`` (a helper that hands
#: back one of its arguments unchanged when it already fits: the engine may skip tracing its
#: body), ``"special_form"`` (the engine runs its own implementation: ``type``, ``map``,
#: ``sorted``, ...) and ``"reference"`` (only moves references, so traced values may go
#: through it as they are: containers' methods, ``isinstance``). ``lookup`` never returns them
#: (they are not rules); :attr:`RuleTable.handled` and ``explain`` do.
HANDLING_KINDS = frozenset({"structural", "pass_through", "special_form", "reference"})


#: Held while a callable's pending entries become rules (and while entries are declared): see
#: :meth:`_CallableRules.materialize`. Reentrant: loading a family declares its entries.
_BUILDING = threading.RLock()


def _mro_distance(mro: tuple[type, ...], t: type) -> float:
    if t in mro:
        return mro.index(t)
    # a virtual superclass (an ABC): after every real base but before object, deeper ABCs first
    return max(len(mro) - 2, 0) + 1 / len(t.__mro__)


def _type_name(t: TypeSpec) -> str:
    if isinstance(t, tuple):
        return " | ".join(x.__name__ for x in t)
    return t.__name__


def _origin(fn: Any) -> str:
    try:
        code = fn.__code__
        return f"{code.co_filename}:{code.co_firstlineno}"
    except AttributeError:
        return callable_name(fn)


class _Placeholder:
    """A family of rules covering a callable, not imported yet: looking the callable up imports
    it (``load()``, true once its entries are declared, which go before the placeholder)."""

    __slots__ = ("family", "load")

    def __init__(self, family: str, load: Callable[[], bool]) -> None:
        self.family, self.load = family, load


class _CallableRules:
    """The rules of one callable plus its dispatch cache.

    Rules are indexed by their first argument type when it is a plain class, so the first
    lookup for new argument classes only looks at rules on that class's MRO (plus the untyped,
    tuple-typed and ABC-typed ones), however many rules the callable has. Entries declared but
    not looked up yet wait in ``pending``: their rules are derived and indexed on first use.
    """

    __slots__ = ("by_signature", "by_first", "general", "cache", "only", "pending", "table")

    def __init__(self, table: RuleTable) -> None:
        # keyed by (types, config): registering the same signature again replaces in O(1)
        self.by_signature: dict[tuple[Any, ...], Rule] = {}
        self.by_first: dict[type, dict[tuple[Any, ...], Rule]] = {}
        self.general: dict[tuple[Any, ...], Rule] = {}
        self.cache: dict[Any, Rule | None] = {}
        self.only: Rule | None = None  # the single untyped, config-free rule, if that is all
        self.pending: list[tuple[RulePair, tuple[TypeSpec, ...]] | _Placeholder] = []
        self.table = table

    @property
    def rules(self) -> list[Rule]:
        if self.pending:
            self.materialize()
        return list(self.by_signature.values())

    def declare(self, pair: RulePair, types: tuple[TypeSpec, ...], family: str | None = None) -> None:
        """Keep ``pair`` (for the signature ``types``) until a lookup needs its rule; an entry of
        a family with a placeholder here takes the placeholder's place in the order."""
        with _BUILDING:
            at = len(self.pending)
            if family is not None:
                at = next((i for i, item in enumerate(self.pending)
                           if isinstance(item, _Placeholder) and item.family == family), at)
            self.pending.insert(at, (pair, types))
            self.cache = {}
            self.only = None

    def materialize(self) -> None:
        """Load the families still to load, then build the rules of the pending entries, in the
        order they were declared (a family that cannot load yet, being imported, stays pending).
        One thread at a time, and an entry leaves ``pending`` only once its rule is indexed: a
        lookup in another thread meanwhile waits here rather than pick among the older rules."""
        with _BUILDING:
            for item in [i for i in self.pending if isinstance(i, _Placeholder)]:
                if item.load():
                    self.pending.remove(item)
            while True:
                at = next((i for i, item in enumerate(self.pending)
                           if not isinstance(item, _Placeholder)), None)
                if at is None:
                    break
                pair, signature = self.pending[at]  # type: ignore[misc]
                self.add(self.table.rule_of(pair, signature))
                del self.pending[at]
            rules = list(self.by_signature.values())
            if len(rules) == 1 and not self.pending and not rules[0].types and rules[0].config is None:
                self.only = rules[0]

    def add(self, rule: Rule) -> None:
        key = (rule.types, rule.config)
        old = self.by_signature.pop(key, None)  # a replacement moves to the end, as a new rule
        if old is not None:
            self._bucket(old).pop(key, None)
        self.by_signature[key] = rule
        self._bucket(rule)[key] = rule
        self.cache = {}
        single = len(self.by_signature) == 1 and not rule.types and rule.config is None
        self.only = rule if single and not self.pending else None

    def _bucket(self, rule: Rule) -> dict[tuple[Any, ...], Rule]:
        first = rule.types[0] if rule.types else None
        # only a class whose metaclass is `type` matches exactly the classes with it in their MRO
        if first is None or type(first) is not type:
            return self.general
        return self.by_first.setdefault(first, {})

    def select(self, classes: tuple[type, ...], config: RuleConfig | None) -> Rule | None:
        if self.pending:
            self.materialize()
        pool = list(self.general.values())
        if classes:
            for klass in classes[0].__mro__:
                bucket = self.by_first.get(klass)
                if bucket:
                    pool.extend(bucket.values())
        candidates = [r for r in pool if r.matches(classes, config)]
        if not candidates:
            return None
        scored = [(r.distance(classes), r) for r in candidates]
        best = [
            (d, r) for d, r in scored
            if not any(_dominates(e, d) for e, _ in scored)
        ]
        if len(best) > 1:
            names = ", ".join(repr(r) for _, r in best)
            raise AmbiguousRuleError(f"ambiguous rules for {callable_name(candidates[0].primal)}"
                                     f"({', '.join(c.__name__ for c in classes)}): {names}; "
                                     "register one for these exact types")
        return best[0][1]


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a != b and all(x <= y for x, y in zip(a, b, strict=True))


def unbind(f: Any) -> tuple[Any, Any] | None:
    """``(function, self)`` for a bound method (Python or builtin), else ``None``.

    Example:
        >>> import numpy as np
        >>> x = np.ones(2)
        >>> unbind(x.sum)[0] is np.ndarray.sum
        True
    """
    if isinstance(f, types.MethodType):
        return f.__func__, f.__self__
    if isinstance(f, types.BuiltinMethodType):
        owner = f.__self__
        if owner is None or isinstance(owner, (types.ModuleType, type)):
            return None
        func = getattr(type(owner), f.__name__, None)
        return (func, owner) if func is not None else None
    return None


class RuleTable:
    """``rrule`` or ``frule``: a callable that finds and applies rules, plus registration.

    ``rrule(f, *args, **kw)`` returns ``(y, pullback)`` or ``None`` when no rule applies;
    ``rrule(config, f, *args)`` also considers rules that asked for a :class:`RuleConfig`.
    ``frule((fdot, *xdots), f, *args, **kw)`` returns ``(y, ydot)`` or ``None``.

    Example:
        >>> import math, rulescore as rc
        >>> def double(x): return 2 * x
        >>> @rc.rrule.register(double)
        ... def _(x):
        ...     return double(x), lambda ybar: (rc.NoTangent(), 2 * ybar)
        >>> y, back = rc.rrule(double, 3.0)
        >>> y, back(1.0)
        (6.0, (NoTangent(), 2.0))
        >>> double in rc.rrule.primals, double in rc.frule.primals
        (True, False)
    """

    #: A number that moves whenever any table registers anything (each table's ``version`` moves
    #: with its own registrations): an engine keeping answers that depend on several tables
    #: compares one number.
    changes = 0

    def __init__(self, name: str) -> None:
        self.name = name
        self._forward = name == "frule"
        self._by_callable: dict[Any, _CallableRules] = {}
        #: Every callable with a rule or an opt-out, as a read-only mapping: ``f in table.primals``
        #: is :meth:`has_rules` for a hashable ``f``, without a method call (engines ask it of
        #: every function they meet).
        self.primals: Mapping[Any, Any] = types.MappingProxyType(self._by_callable)
        #: How many rules (and opt-outs) have been registered: an engine caching what it found
        #: (:meth:`sole_rule`) looks again when this changes.
        self.version = 0
        self._handled: dict[Any, Rule] = {}
        #: callable -> its entry of one of the :data:`HANDLING_KINDS`, as a read-only mapping:
        #: one lookup tells an engine how to handle a call that needs no rule.
        self.handled: Mapping[Any, Rule] = types.MappingProxyType(self._handled)
        #: The families with placeholders here, not loaded yet: family -> its loader.
        self._unloaded: dict[str, Callable[[], bool]] = {}

    # -- registration --------------------------------------------------------------------------
    def register(
        self, f: Any, *types: TypeSpec, config: type | None = None, zero_tangents: bool = False
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: register the decorated function as the rule for ``f`` (an
        :class:`~rulescore.RulePair` entry naming it, registered as the library's are).

        ``types`` restrict the rule to calls whose positional arguments are instances of them
        (a tuple means any of; a trailing ``...`` is ignored). With ``config=HasReverseMode``
        (or another capability) the rule receives the engine's config as its first argument.
        An frule receives zeros of the argument's shape for a float argument without a tangent
        (one held constant), unless ``zero_tangents=True``: then ``ZeroTangent()``, which it
        handles itself.
        """
        types = _clean_types(types)

        def decorate(impl: Callable[..., Any]) -> Callable[..., Any]:
            self.register_kind(f, types, impl, "rule", config, zero_tangents=zero_tangents)
            return impl

        return decorate

    def opt_out(self, f: Any, *types: TypeSpec) -> None:
        """Declare that ``f`` has no rule for these argument types: the AD system recurses
        (the entry ``RulePair(f, types=types, kind="opt_out")``, in this table only).

        Example:
            >>> import rulescore as rc
            >>> def g(x): return x
            >>> rc.rrule.register(g)(lambda x: (x, lambda d: (rc.NoTangent(), d)))  # doctest: +ELLIPSIS
            <function <lambda> at ...>
            >>> rc.rrule.opt_out(g, int)
            >>> rc.rrule(g, 1) is None, rc.rrule(g, 1.0) is None
            (True, False)
        """
        self.declare(RulePair(f, types=types, kind="opt_out"))

    def register_kind(self, f: Any, types: tuple[TypeSpec, ...], impl: Callable[..., Any],
                      kind: str = "rule", config: type | None = None,
                      wrt: tuple[int, ...] | None = None, zero_tangents: bool = True) -> None:
        """Register ``impl`` for ``f`` with a kind (``"rule"``, ``"non_differentiable"``) and,
        for an frule, the positions of the arguments it differentiates (``wrt``, default all)
        and whether it takes ``ZeroTangent()`` for a float argument without a tangent
        (``zero_tangents``; else zeros of the argument's shape). An entry of one of the
        :data:`HANDLING_KINDS` applies to every argument type (``types`` must be empty).

        Example:
            >>> import rulescore as rc
            >>> def dims(x): return len(x.shape)
            >>> rc.rrule.register_kind(dims, (), dims, "structural")
            >>> print(rc.rrule.explain(dims, [1.0]))  # doctest: +ELLIPSIS
            rrule for ...dims(list): structural: run on the plain values (...)
        """
        if kind in HANDLING_KINDS:
            if types:
                raise TypeError(f"a {kind!r} entry applies to every argument type: give no types")
            try:
                self._handled[f] = Rule(self.name, f, (), impl, None, kind, _origin(impl))
            finally:
                self.version += 1
                RuleTable.changes += 1
            return
        reverse, forward = (None, impl) if self._forward else (impl, None)
        self.declare(RulePair(f, reverse, forward, types, config, kind, wrt, zero_tangents))

    def declare(self, pair: RulePair, family: str | None = None) -> None:
        """Add the entry ``pair``'s rule of this table (its frule in ``frule``, else its rrule).

        The rule is derived and indexed when a lookup first needs it; the types are checked now.
        ``family``: the entry is one of that family's (see :meth:`placeholder`).

        Example:
            >>> import rulescore as rc
            >>> def halve(x): return x / 2
            >>> rc.rrule.declare(rc.RulePair(halve, partials=lambda x: 0.5))
            >>> rc.rrule(halve, 3.0)[1](1.0), rc.frule.has_rules(halve)
            ((NoTangent(), 0.5), False)
        """
        types = _clean_types(pair.types)
        try:
            entry = self._by_callable.get(pair.primal)
        except TypeError:
            raise TypeError(f"cannot register a rule for unhashable {pair.primal!r}") from None
        try:
            if entry is None:
                entry = self._by_callable[pair.primal] = _CallableRules(self)
            entry.declare(pair, types, family)
        finally:  # even if interrupted: what engines cached from the old rules is looked up again
            self.version += 1
            RuleTable.changes += 1

    def placeholder(self, f: Any, family: str, load: Callable[[], bool]) -> None:
        """Note that the rule family ``family`` has rules for ``f`` without importing it: ``f``
        has rules (:meth:`has_rules`, :attr:`primals`), and its first lookup calls ``load()``,
        which imports the family and declares its entries (true once done).

        Example:
            >>> import rulescore as rc
            >>> from rulescore._registry import RuleTable
            >>> def cube(x): return x ** 3
            >>> table = RuleTable("rrule")
            >>> def load():
            ...     table.declare(rc.RulePair(cube, partials=lambda x: 3 * x ** 2), family="cubes")
            ...     return True
            >>> table.placeholder(cube, "cubes", load)
            >>> table.has_rules(cube), table(cube, 2.0)[1](1.0)
            (True, (NoTangent(), 12.0))
        """
        entry = self._by_callable.get(f)
        if entry is None:
            entry = self._by_callable[f] = _CallableRules(self)
        entry.pending.append(_Placeholder(family, load))
        self._unloaded[family] = load
        entry.cache = {}
        entry.only = None
        self.version += 1
        RuleTable.changes += 1

    def rule_of(self, pair: RulePair, types: tuple[TypeSpec, ...]) -> Rule:
        """The :class:`Rule` of this table that the entry ``pair`` gives, for the signature ``types``."""
        impl = pair.frule if self._forward else pair.rrule
        if impl is None and pair.derives:
            reverse, forward = pair.rules()
            impl = forward if self._forward else reverse
        if pair.kind == "opt_out":
            return Rule(self.name, pair.primal, types, None, None, "opt_out", "opt_out")
        source = pair.partials or pair.transpose or impl  # where the author wrote the derivative
        if self._forward:
            return Rule(self.name, pair.primal, types, impl, pair.config, pair.kind, _origin(source),
                        pair.wrt, pair.zero_tangents, pair.scalar_form())
        return Rule(self.name, pair.primal, types, impl, pair.config, pair.kind, _origin(source),
                    scalar=pair.scalar_form())

    # -- lookup --------------------------------------------------------------------------------
    def lookup(self, f: Any, args: tuple[Any, ...], config: RuleConfig | None = None) -> Rule | None:
        """The rule that applies to ``f(*args)``, or ``None`` (also for an opt-out).

        Engines call this once per call site and then ``run``; it is the fast path.
        """
        try:
            entry = self._by_callable.get(f)
        except TypeError:  # unhashable callable object: it cannot have rules
            return None
        if entry is None:
            return None
        rule = entry.only
        if rule is None:
            n = len(args)  # building the tuple by hand is 3x faster than tuple(genexpr)
            if n == 1:
                classes: tuple[type, ...] = (args[0].__class__,)
            elif n == 2:
                classes = (args[0].__class__, args[1].__class__)
            else:
                classes = tuple([a.__class__ for a in args])
            key = classes if config is None else (classes, type(config))  # cannot collide
            cache = entry.cache  # one dict throughout: a registration meanwhile replaces it, so an
            rule = cache.get(key, _MISSING)  # answer found under the old rules is never stored in the new
            if rule is _MISSING:
                rule = cache[key] = entry.select(classes, config)
            if rule is None:
                return None
        return None if rule.kind == "opt_out" else rule

    def sole_rule(self, f: Any) -> Rule | None:
        """The rule of ``f`` whatever its arguments' types and the config, when ``f`` has just
        one rule, registered without types or a config (``np.sin``, ``operator.mul``); else
        ``None``. Until :attr:`version` changes an engine may keep it instead of calling
        :meth:`lookup` at every call.

        Example:
            >>> import math, rulescore as rc
            >>> rc.rrule.sole_rule(math.sin) is rc.rrule.lookup(math.sin, (0.5,))
            True
        """
        try:
            entry = self._by_callable.get(f)
        except TypeError:
            return None
        if entry is not None and entry.pending:
            entry.materialize()
        rule = None if entry is None else entry.only
        return None if rule is None or rule.kind == "opt_out" else rule

    def has_rules(self, f: Any) -> bool:
        """Whether any rule (or opt-out) is registered for ``f``, whatever the types."""
        try:
            return f in self._by_callable
        except TypeError:
            return False

    def rules_for(self, f: Any) -> list[Rule]:
        """Every rule registered for ``f`` (for a bound method without rules of its own: for
        its function, which is what a call dispatches to). Unhashable callables have none.

        Example:
            >>> import math, rulescore as rc
            >>> rc.rrule.rules_for(math.sin)  # doctest: +ELLIPSIS
            [<rrule(math.sin...)...>]
        """
        try:
            entry = self._by_callable.get(f)
        except TypeError:
            entry = None
        if entry is None:
            bound = unbind(f)
            return self.rules_for(bound[0]) if bound is not None else []
        return entry.rules

    def callables(self) -> list[Any]:
        """Every callable that has at least one rule in this table (the families not imported
        yet are imported first: some of their callables are their own)."""
        for family, load in list(self._unloaded.items()):
            if load():
                self._unloaded.pop(family, None)
        return list(self._by_callable)

    def explain(self, f: Any, *args: Any, config: RuleConfig | None = None) -> str:
        """A sentence saying which rule ``f(*args)`` picks, and why.

        Example:
            >>> import math, rulescore as rc
            >>> print(rc.rrule.explain(math.sin, 0.5))  # doctest: +ELLIPSIS
            rrule for math.sin(float): picks <rrule(math.sin...)...> out of 1 registered
        """
        call = describe_call(f, args)
        try:
            handled = self._handled.get(f)
        except TypeError:  # an unhashable callable object
            handled = None
        if handled is not None:
            how = f"{handled.kind.replace('_', ' ')}: {_HANDLING[handled.kind]}"
            return f"{self.name} for {call}: {how} ({handled!r})"
        bound = None if self.has_rules(f) else unbind(f)
        if bound is not None and self.has_rules(bound[0]):
            inner = self.explain(bound[0], bound[1], *args, config=config)
            return f"{self.name} for {call}: a bound method, dispatched as {inner}"
        rules = self.rules_for(f)
        if not rules:
            return f"{self.name} for {call}: no rule registered for {callable_name(f)}"
        try:
            rule = self.lookup(f, args, config)
        except AmbiguousRuleError as err:
            return f"{self.name} for {call}: {err}"
        if rule is None:
            return (f"{self.name} for {call}: no rule applies (opt-out or no type match) "
                    f"out of {len(rules)} registered: {rules}")
        return f"{self.name} for {call}: picks {rule!r} out of {len(rules)} registered"

    # -- application ---------------------------------------------------------------------------
    def __call__(self, *call: Any, **kwargs: Any) -> Any:
        # slices, not `f, *rest = call`: this is on every engine's hot path
        config: RuleConfig | None = None
        if call and isinstance(call[0], RuleConfig):
            config, call = call[0], call[1:]
        if self._forward:
            if len(call) < 2:
                raise TypeError("frule needs the tangents and the callable: frule(tangents, f, *args)")
            return self.apply_frule(config, call[0], call[1], call[2:], kwargs)
        if not call:
            raise TypeError("rrule needs the callable: rrule(f, *args)")
        return self.apply_rrule(config, call[0], call[1:], kwargs)

    def apply_rrule(self, config: RuleConfig | None, f: Any, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """``rrule`` with the config and arguments already split out."""
        rule = self.lookup(f, args, config)
        if rule is None:
            bound = unbind(f)
            if bound is None:
                return None
            result = self.apply_rrule(config, bound[0], (bound[1], *args), kwargs)
            if result is None:
                return None
            y, back = result

            def bound_method_pullback(ybar: Any) -> Any:
                fbar, selfbar, *rest = back(ybar)
                return (selfbar, *rest)  # the tangent of a bound method is that of its self

            return y, bound_method_pullback
        return keep_rrule_contract(rule, f, len(args), self.run(rule, config, f, args, kwargs))

    def run(self, rule: Rule, config: RuleConfig | None, f: Any, args: tuple[Any, ...],
            kwargs: dict[str, Any]) -> Any:
        """Apply an rrule already looked up (checking it in checking mode): the author's
        ``(y, pullback)``. ``rrule(...)`` wraps that pullback to keep the rule contract; an
        engine calling ``run`` keeps it itself, with :func:`rulescore._contract.plain_cotangent`
        and :func:`~rulescore._contract.check_count` around each call of the pullback."""
        assert rule.impl is not None
        out = rule.impl(config, *args, **kwargs) if rule.config else rule.impl(*args, **kwargs)
        if checks_enabled():
            out = check_rrule_result(rule, f, args, out)
        return out

    def apply_frule(self, config: RuleConfig | None, tangents: Any, f: Any,
                    args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``frule`` with the config and arguments already split out."""
        rule = self.lookup(f, args, config)
        if rule is None:
            bound = unbind(f)
            if bound is None:
                return None
            fdot, *xdots = tangents
            return self.apply_frule(config, (None, fdot, *xdots), bound[0], (bound[1], *args),
                                    kwargs)
        if len(tangents) != 1 + len(args):
            raise ValueError(f"frule for {describe_call(f, args)}: got {len(tangents)} tangents, "
                             f"expected {1 + len(args)} (one for f, then one per argument)")
        assert rule.impl is not None
        plain = plain_tangents(tangents, rule.wrt, None if rule.zero_tangents else args)
        if plain is None:  # every tangent is zero: so is the output's, without the author's frule
            return f(*args, **kwargs), zero_of(rule)
        tangents = plain
        if rule.config:
            out = rule.impl(config, tangents, *args, **kwargs)
        else:
            out = rule.impl(tangents, *args, **kwargs)
        if checks_enabled():
            out = check_frule_result(rule, f, args, out)
        return out


_HANDLING = {
    "structural": "run on the plain values (the answer depends on types and shapes only)",
    "pass_through": "hands back its argument when it already fits, without tracing its body",
    "special_form": "the engine runs its own implementation, which differentiates its callbacks",
    "reference": "only moves references: traced values go through it as they are",
}


def _clean_types(types: tuple[Any, ...]) -> tuple[TypeSpec, ...]:
    if types and types[-1] is Ellipsis:
        types = types[:-1]
    out: list[TypeSpec] = []
    for t in types:
        if isinstance(t, UnionType) or typing.get_origin(t) is typing.Union:  # `int | float`
            t = typing.get_args(t)
        options = t if isinstance(t, tuple) else (t,)
        if not all(isinstance(o, type) for o in options):
            raise TypeError(f"argument types must be classes or tuples of classes, got {t!r}")
        out.append(t)
    return tuple(out)


rrule = RuleTable("rrule")
frule = RuleTable("frule")


def register_rules(*pairs: RulePair) -> None:
    """Register every entry's rrule and frule (the one registration path of the library and of
    every decorator). The rules are derived and indexed on the first lookup of the callable.

    Example:
        >>> import rulescore as rc
        >>> def double(x): return 2 * x
        >>> def double_rrule(x):
        ...     return double(x), lambda ybar: (rc.NoTangent(), 2 * ybar)
        >>> rc.register_rules(rc.RulePair(double, double_rrule))
        >>> rc.rrule(double, 1.0)[1](1.0)
        (NoTangent(), 2.0)
    """
    for pair in pairs:
        if not isinstance(pair, RulePair):
            raise TypeError(f"register_rules takes rc.RulePair entries, got {pair!r}")
        if pair.reverse:
            rrule.declare(pair)
        if pair.forward:
            frule.declare(pair)
