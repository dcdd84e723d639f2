"""The one way to declare a rule: a :class:`RulePair` naming the callable and how it is
differentiated, registered by :func:`register_rules`.

Every family of the rule library is a module with one literal table, ``RULES``: a tuple of
``RulePair`` entries that reference the rule functions directly. An entry gives the rrule and
the frule (``RulePair(np.dot, dot_rrule, dot_frule)``), or what both are derived from: the
partial derivatives of an element-wise function (``partials=``), the transpose of a function
linear in its first argument (``transpose=``), or no derivative at all
(``kind="non_differentiable"``); an explicit rrule or frule beside ``partials`` or ``transpose``
replaces the derived one. The public decorators and helpers (``@rc.rrule.register``,
``rc.scalar_rule``, ``rc.non_differentiable``, ``rc.deflinear``, ``rc.rrule.opt_out``) build the
same entry and register it the same way, so a third-party package has everything the library
has.

Registering is cheap: the registry keeps the entry and derives and indexes its rules on the
first lookup of its callable (``import rulescore`` does not build hundreds of closures).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rulescore._checks import callable_name

#: What a rule's argument types may be: a class, or a tuple of classes (any of them).
TypeSpec = type | tuple[type, ...]

#: The kinds whose rules an entry derives itself when it names no rrule or frule.
_DERIVED_KINDS = frozenset({"non_differentiable", "opt_out"})


@dataclass(frozen=True, eq=False)
class RulePair:
    """The rules of one callable for one signature: the one declarative rule entry.

    - ``rrule`` / ``frule``: the rule functions (either may be ``None``: the entry then
      registers only the other, unless it derives both).
    - ``partials``: the partial derivatives of an element-wise ``primal`` (one per argument, a
      tuple of rows for ``outputs=n``), from which both rules are derived (ChainRules'
      ``@scalar_rule``); its options ``needs_inputs``, ``check_kwargs``, ``errstate``,
      ``native`` (a name in the arrays' namespace), ``native_complex`` and ``outputs`` are those
      of :func:`~rulescore.partials_rules`.
    - ``transpose``: ``transpose(ybar, x, *args, **kwargs)``, the adjoint of a ``primal``
      linear in its first argument, from which both rules are derived (JAX's ``deflinear``);
      ``native`` is then the primal written with an array namespace ``native(xp, x, ...)``
      (:func:`~rulescore.linear_rules`).
    - ``kind``: ``"rule"``, ``"non_differentiable"`` (every input gets ``NoTangent()``; the
      rules are derived when none is given) or ``"opt_out"`` (no rule: the AD system recurses).
    - ``types`` restrict the rules to calls whose positional arguments are instances of them;
      ``config`` asks for the engine's :class:`~rulescore.RuleConfig` as first argument.
    - ``wrt`` lists the positions of the positional arguments with a derivative (default: all):
      the frule is called only when one of their tangents is non-zero, so it never tests the
      tangents of the others (an axis, a shape). ``zero_tangents=True`` (the default of this
      table form): the frule receives ``ZeroTangent()`` for a float argument without a tangent
      and skips its work; ``False``: zeros of the argument's shape (what
      ``@rc.frule.register`` gives by default).
    - ``scalar``: ``scalar(*xs) -> (y, (d1, ..., dn))``, the primal and its partial derivatives
      (real numbers, one per argument) at real scalar arguments (Python floats, ints and NumPy
      float64 scalars, no keywords), or ``None`` where it gives none; an engine may record these
      numbers instead of running the rrule (a tape of numbers for scalar code). Derived from
      ``partials=``; given with an explicit rrule, it must agree with it (the test suite checks
      every registered one).

    Example:
        >>> import math, rulescore as rc
        >>> def sin_rrule(x):
        ...     def sin_pullback(ybar):
        ...         return rc.NoTangent(), ybar * math.cos(x)
        ...     return math.sin(x), sin_pullback
        >>> rc.RulePair(math.sin, sin_rrule).rrule(0.0)[1](2.0)
        (NoTangent(), 2.0)
        >>> def cube(x): return x ** 3
        >>> reverse, forward = rc.RulePair(cube, partials=lambda x: 3 * x ** 2).rules()
        >>> reverse(2.0)[1](1.0), forward((None, 1.0), 2.0)
        ((NoTangent(), 12.0), (8.0, 12.0))
    """

    primal: Any
    rrule: Callable[..., Any] | None = None
    frule: Callable[..., Any] | None = None
    types: tuple[TypeSpec, ...] = ()
    config: type | None = None
    kind: str = "rule"
    wrt: tuple[int, ...] | None = None
    zero_tangents: bool = True
    partials: Callable[..., Any] | None = None
    transpose: Callable[..., Any] | None = None
    needs_inputs: bool = True
    check_kwargs: Callable[[Any, dict[str, Any]], Any] | None = None
    errstate: bool = False
    native: str | Callable[..., Any] | None = None
    native_complex: bool = True
    outputs: int = 1
    scalar: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.partials is not None and self.transpose is not None:
            raise TypeError(f"RulePair({_name(self.primal)}, ...): give partials= (an element-wise function) "
                            "or transpose= (a linear one), not both")
        if self.partials is None and (not self.needs_inputs or self.check_kwargs is not None or self.errstate
                                      or not self.native_complex or self.outputs != 1):
            raise TypeError(f"RulePair({_name(self.primal)}, ...): needs_inputs, check_kwargs, errstate, "
                            "native_complex and outputs are options of partials=; give the partials")
        if self.outputs != 1 and (self.native is not None or self.check_kwargs is not None or self.errstate
                                  or not self.needs_inputs):
            raise TypeError(f"RulePair({_name(self.primal)}, ..., outputs={self.outputs}): the options "
                            "native, check_kwargs, errstate and needs_inputs are for functions of one output")
        if self.scalar is not None and self.kind != "rule":
            raise TypeError(f"RulePair({_name(self.primal)}, ..., kind={self.kind!r}): scalar= gives "
                            "derivatives; an entry of this kind has none")
        if self.native is not None and self.partials is None and self.transpose is None:
            raise TypeError(f"RulePair({_name(self.primal)}, ...): native= is an option of partials= or "
                            "transpose=")

    @property
    def reverse(self) -> bool:
        """Whether the entry registers an rrule (given or derived)."""
        return self.rrule is not None or self.derives

    @property
    def forward(self) -> bool:
        """Whether the entry registers an frule (given or derived)."""
        return self.frule is not None or self.derives

    @property
    def derives(self) -> bool:
        """Whether the entry derives its rules (from partials, a transpose or its kind)."""
        return self.partials is not None or self.transpose is not None or self.kind in _DERIVED_KINDS

    def rules(self) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
        """``(rrule, frule)``: the given rules, else the derived ones (built once, on first use).

        Example:
            >>> import numpy as np, rulescore as rc
            >>> def flip_transpose(ybar, x):
            ...     return np.flip(ybar)
            >>> reverse, forward = rc.RulePair(np.flip, transpose=flip_transpose).rules()
            >>> reverse(np.arange(2.0))[1](np.array([1.0, 0.0]))
            (NoTangent(), array([0., 1.]))
        """
        built = self.__dict__.get("_rules")
        if built is None:
            derived = _derive(self)
            built = (self.rrule or derived[0], self.frule or derived[1])
            object.__setattr__(self, "_rules", built)
        return built

    def scalar_form(self) -> Callable[..., Any] | None:
        """``scalar``, else the one derived from ``partials`` (built once, on first use).

        Example:
            >>> import rulescore as rc
            >>> def cube(x): return x ** 3
            >>> rc.RulePair(cube, partials=lambda x: 3 * x ** 2).scalar_form()(2.0)
            (8.0, (12.0,))
        """
        if self.scalar is not None or self.partials is None or self.outputs != 1:
            return self.scalar
        built = self.__dict__.get("_scalar")
        if built is None:
            built = SCALAR_DERIVERS["partials"](self)
            object.__setattr__(self, "_scalar", built)
        return built

    def resolved(self) -> RulePair:
        """The entry with its derived rules filled in as ``rrule`` and ``frule`` (callable).

        Example:
            >>> import rulescore as rc
            >>> def sign_of(x): return 1 if x > 0 else -1
            >>> rc.RulePair(sign_of, kind="non_differentiable").resolved().rrule(2.0)[1](1.0)
            (NoTangent(), NoTangent())
        """
        reverse, forward = self.rules()
        return RulePair(self.primal, reverse, forward, self.types, self.config, self.kind, self.wrt,
                        self.zero_tangents, scalar=self.scalar_form())


def _name(f: Any) -> str:
    return callable_name(f)


#: How an entry derives its rules, by what it gives (``"partials"``, ``"transpose"``, ``"kind"``):
#: :mod:`rulescore._helpers` and :mod:`rulescore._linear` fill it in (they build on this module).
DERIVERS: dict[str, Callable[[RulePair], tuple[Callable[..., Any], Callable[..., Any]]]] = {}
#: How an entry derives its scalar form, by what it gives (``"partials"``): filled in by
#: :mod:`rulescore._helpers`.
SCALAR_DERIVERS: dict[str, Callable[[RulePair], Callable[..., Any]]] = {}


def _derive(pair: RulePair) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
    """The rrule and frule an entry derives (``(None, None)`` when it derives none)."""
    if pair.partials is not None:
        return DERIVERS["partials"](pair)
    if pair.transpose is not None:
        return DERIVERS["transpose"](pair)
    if pair.kind == "non_differentiable":
        return DERIVERS["kind"](pair)
    return None, None
