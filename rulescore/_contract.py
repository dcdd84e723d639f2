"""The rule contract, kept once for every consumer of the registry.

A rule author's pullback is called only with a plain, non-zero, unthunked cotangent, and an
author's frule only when some tangent is non-zero (each tangent unthunked, ``None`` read as
``ZeroTangent()``). Everything else (zeros, ``None``, thunks, the count of cotangents a pullback
returns) is dealt with here, so an engine, the tester and the exporters to other AD systems all
see the same behaviour, and no rule in the library repeats it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from rulescore._checks import RuleError, callable_name
from rulescore._namespace import foreign_namespace
from rulescore._tangent import Tangent
from rulescore._thunks import Thunk
from rulescore._zeros import AbstractZero, NoTangent, ZeroTangent

_NT = NoTangent()
_ZT = ZeroTangent()


def pullback_name(pullback: Any) -> str:
    """The name of the pullback an author wrote (through the contract's wrapper)."""
    inner = pullback
    while hasattr(inner, "__wrapped__"):
        inner = inner.__wrapped__
    return str(getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or inner)


def zero_of(rule: Any) -> AbstractZero:
    """The zero a rule's tangents take: ``NoTangent()`` for a non-differentiable rule (none of
    its inputs or outputs has a tangent), else ``ZeroTangent()``."""
    return _NT if getattr(rule, "kind", "rule") == "non_differentiable" else _ZT


def plain_cotangent(ybar: Any) -> Any:
    """``ybar`` unthunked, or ``None`` when it is a zero (``None``, ``ZeroTangent()``,
    ``NoTangent()``, or a structural tangent whose entries are all zeros): then no pullback is
    called and every input's cotangent is zero. A structural tangent (the cotangent of a tuple
    output such as ``divmod``'s or ``np.linalg.qr``'s) comes with its entries unthunked and its
    ``None`` entries as ``ZeroTangent()``, so a pullback reads each part as it is.

    Example:
        >>> import rulescore as rc
        >>> plain_cotangent(rc.Thunk(lambda: 2.0)), plain_cotangent(rc.ZeroTangent())
        (2.0, None)
        >>> plain_cotangent(rc.Tangent[tuple](rc.Thunk(lambda: 1.0), None))
        Tangent[tuple](1.0, ZeroTangent())
        >>> plain_cotangent(rc.Tangent[tuple](rc.ZeroTangent(), None)) is None
        True
    """
    tb = type(ybar)
    if tb is float or tb is np.ndarray or tb is np.float64:  # the common cotangents, at once
        return ybar
    if isinstance(ybar, Thunk):
        ybar = ybar.unthunk()
    if ybar is None or isinstance(ybar, AbstractZero):
        return None
    if isinstance(ybar, Tangent):
        return _plain_entries(ybar)
    return ybar


def plain_entry(v: Any) -> Any:
    """One entry of a structural tangent as a rule reads it: unthunked, ``None`` as
    ``ZeroTangent()``.

    Example:
        >>> import rulescore as rc
        >>> plain_entry(rc.Thunk(lambda: 1.0)), plain_entry(None)
        (1.0, ZeroTangent())
    """
    if isinstance(v, Thunk):
        v = v.unthunk()
    return _ZT if v is None else v


def entries(t: Any, n: int) -> list[Any]:
    """The ``n`` entries of a structural (tuple/list) tangent, each read by :func:`plain_entry`;
    a zero gives ``n`` zeros. A rule reads the parts of a tuple output's cotangent (or of a
    list argument's tangent) with it and never tests for zeros itself.

    Example:
        >>> import rulescore as rc
        >>> entries(rc.Tangent[tuple](1.0, None), 2), entries(rc.ZeroTangent(), 2)
        ([1.0, ZeroTangent()], [ZeroTangent(), ZeroTangent()])
    """
    if isinstance(t, AbstractZero):
        return [_ZT] * n
    if isinstance(t, Tangent):
        items = list(t.backing) if isinstance(t.backing, tuple) else [t[i] for i in range(n)]
    else:
        items = list(t)
    return [plain_entry(v) for v in items]


def _plain_entries(t: Tangent[Any]) -> Any:
    """``t`` with plain entries, or ``None`` when every entry is a zero."""
    backing = t.backing
    values = backing if isinstance(backing, tuple) else tuple(backing.values())
    if all(isinstance(v, AbstractZero) for v in values):
        return None
    if not any(v is None or isinstance(v, Thunk) for v in values):
        return t
    if isinstance(backing, tuple):
        plain: Any = tuple(plain_entry(v) for v in backing)
    else:
        plain = {k: plain_entry(v) for k, v in backing.items()}
    if all(isinstance(v, AbstractZero) for v in (plain if isinstance(plain, tuple) else plain.values())):
        return None
    return type(t)._from_backing(plain)


def _function_of(pullback: Any) -> Any:
    """The function a pullback runs: unwrapped, a ``functools.partial``'s function, a bound
    method's function, a callable object's ``__call__``."""
    inner = pullback
    while hasattr(inner, "__wrapped__"):
        inner = inner.__wrapped__
    inner = getattr(inner, "func", inner)  # functools.partial
    inner = getattr(inner, "__func__", inner)  # a bound method
    if getattr(inner, "__code__", None) is None and callable(inner):
        inner = type(inner).__call__  # a callable object
    return inner


def _made_by(impl: Any, fn: Any, code: Any) -> bool:
    """Whether the rrule ``impl`` makes the pullback function ``fn`` (whose code is ``code``):
    defines it (a closure inside it), or returns one it closes over or names as a global."""
    impl_code = getattr(impl, "__code__", None)
    if impl_code is None:
        return False
    if impl_code.co_filename == code.co_filename and (
            impl_code is code or code.co_qualname.startswith(impl_code.co_qualname + ".<locals>.")):
        return True
    for cell in impl.__closure__ or ():
        try:
            if cell.cell_contents is fn:
                return True
        except ValueError:  # an empty cell
            continue
    names = getattr(impl, "__globals__", {})
    return any(names.get(name) is fn for name in impl_code.co_names)


def rule_of_pullback(pullback: Any, tables: Iterable[Any]) -> Any:
    """The rule (of one of ``tables``, each with ``callables()`` and ``rules_for(f)``) whose rrule
    made ``pullback`` (defines it, or returns a function it closes over or names), or ``None``.
    Only error messages ask: this searches every registered rule.

    Example:
        >>> import rulescore as rc
        >>> def double(x): return 2.0 * x
        >>> @rc.rrule.register(double)
        ... def double_rrule(x):
        ...     return double(x), lambda ybar: (rc.NoTangent(), 2.0 * ybar)
        >>> y, back = double_rrule(1.0)
        >>> rule_of_pullback(back, [rc.rrule]).primal is double
        True
    """
    fn = _function_of(pullback)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    found = [rule for table in tables for f in table.callables() for rule in table.rules_for(f)
             if _made_by(rule.impl, fn, code)]
    if len(found) > 1:  # one factory made several rules: the one whose variables the pullback shares
        cells = {id(c) for c in getattr(fn, "__closure__", None) or ()}
        found = [r for r in found if cells & {id(c) for c in r.impl.__closure__ or ()}] or found
    return found[0] if found else None


def describe_pullback(pullback: Any, tables: Iterable[Any], rule: Any = None) -> str:
    """``the pullback name (file:line) of the rrule for primal (registered at file:line)``: where
    a misbehaving pullback and its rule are, and the primal's public name, for an error message.
    ``rule`` is found from ``tables`` when not given (:func:`rule_of_pullback`).

    Example:
        >>> import rulescore as rc
        >>> def halve(x): return x / 2.0
        >>> @rc.rrule.register(halve)
        ... def halve_rrule(x):
        ...     return halve(x), lambda ybar: (rc.NoTangent(), ybar / 2.0)
        >>> print(describe_pullback(halve_rrule(1.0)[1], [rc.rrule]))  # doctest: +ELLIPSIS
        the pullback halve_rrule.<locals>.<lambda> (<doctest ...) of the rrule for ...halve (registered ...)
    """
    code = getattr(_function_of(pullback), "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    text = f"the pullback {pullback_name(pullback)}{where}"
    if rule is None:
        rule = rule_of_pullback(pullback, tables)
    if rule is None:
        return text
    kind = getattr(rule, "table", "rrule")
    return f"{text} of the {kind} for {callable_name(rule.primal)} (registered at {rule.origin})"


def check_count(cts: Any, nargs: int, pullback: Any, rule: Any = None,
                tables: Iterable[Any] = ()) -> tuple[Any, ...]:
    """``cts`` if it is a tuple of ``1 + nargs`` cotangents; else a :class:`RuleError` naming
    the pullback, its rule (given, or found in ``tables``) and the rule's primal function.

    Example:
        >>> check_count((None, 1.0), 1, abs)
        (None, 1.0)
        >>> check_count((1.0,), 1, abs)
        Traceback (most recent call last):
        rulescore._checks.RuleError: the pullback abs returned 1 cotangents; expected 2 (a tuple: \
one for the function, then one per positional argument)
    """
    if type(cts) is tuple and len(cts) == nargs + 1:
        return cts
    got = f"{len(cts)} cotangents" if isinstance(cts, tuple) else f"a {type(cts).__name__}"
    raise RuleError(f"{describe_pullback(pullback, tables, rule)} returned {got}; expected {nargs + 1} "
                    "(a tuple: one for the function, then one per positional argument)")


def wrong_cotangent(ct: Any, primal_shape: tuple[int, ...] | None, position: int, pullback: Any,
                    tables: Iterable[Any]) -> RuleError:
    """The error for a pullback's cotangent that cannot be its argument's: of another shape
    (``primal_shape``) or not a number at all. It is refused rather than summed back (which
    would be a wrong gradient unless the rule broadcast the argument: ChainRules' ``ProjectTo``
    refuses a size mismatch the same way; a rule that broadcasts sums its cotangent back itself,
    with ``rulescore.unbroadcast``). The message names the pullback, its rule and the primal.

    Example:
        >>> import numpy as np
        >>> print(wrong_cotangent(np.ones((3, 3)), (3,), 1, abs, []))  # doctest: +ELLIPSIS
        the pullback abs returned a cotangent of shape (3, 3) for its argument 1, of shape (3,): ...
    """
    if isinstance(ct, (str, bytes)) or primal_shape is None:
        what = f"of type {type(ct).__name__} ({ct!r:.40})"
        fix = "a cotangent is a number, an array or a tangent"
    else:
        what = f"of shape {np.shape(ct)}"
        fix = ("it is refused rather than summed back, which would be a wrong gradient unless the rule "
               "broadcast the argument; a rule that broadcasts sums its cotangent back itself "
               "(rulescore.unbroadcast)")
    of = "" if primal_shape is None else f", of shape {primal_shape}"  # (an array's)
    return RuleError(f"{describe_pullback(pullback, tables)} returned a cotangent {what} for its argument "
                     f"{position}{of}: {fix}")


def rrule_pair(rule: Any, f: Any, result: Any) -> tuple[Any, Callable[[Any], Any]]:
    """The rrule's ``result`` as the author's ``(y, pullback)``, or a :class:`RuleError` naming the
    rule and the primal function when it is not such a pair.

    Example:
        >>> rrule_pair("<rule>", abs, (1.0, abs))[0]
        1.0
        >>> rrule_pair("<rule>", abs, 1.0)
        Traceback (most recent call last):
        rulescore._checks.RuleError: the rrule for abs (<rule>) returned float; expected a (y, pullback) pair
    """
    if type(result) is not tuple or len(result) != 2 or not callable(result[1]):
        raise RuleError(f"the rrule for {callable_name(f)} ({rule}) returned {type(result).__name__}; "
                        "expected a (y, pullback) pair")
    return result


def pull_back(rule: Any, back: Callable[[Any], Any], nargs: int, ybar: Any) -> tuple[Any, ...]:
    """The author's pullback ``back`` (of ``rule``, for ``nargs`` arguments) applied to ``ybar`` as
    the contract applies it: zeros for every argument on a zero (or ``None``) cotangent without
    calling ``back``, a thunk unthunked once, and a :class:`RuleError` naming the rule and the
    primal when ``back`` returns anything but a tuple of ``1 + nargs`` cotangents. The wrapper of
    :func:`keep_rrule_contract` calls it; a caller that keeps the pullback of many calls (an
    exporter) calls it directly.

    Example:
        >>> import rulescore as rc
        >>> pull_back("<rule>", lambda ybar: (rc.NoTangent(), 2 * ybar), 1, rc.Thunk(lambda: 3.0))
        (NoTangent(), 6.0)
        >>> pull_back("<rule>", lambda ybar: (rc.NoTangent(), 2 * ybar), 1, None)
        (NoTangent(), ZeroTangent())
    """
    ybar = plain_cotangent(ybar)
    if ybar is None:
        return (_NT, *((zero_of(rule),) * nargs))
    return check_count(back(ybar), nargs, back, rule)


def keep_rrule_contract(rule: Any, f: Any, nargs: int, result: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(y, pullback)`` of an rrule, its pullback wrapped to keep the contract.

    The wrapper returns zeros for every argument on a zero (or ``None``) cotangent without
    calling the author's pullback, unthunks a thunk once, and raises :class:`RuleError` naming
    the rule and the primal function when the author's pullback returns anything but a tuple of
    ``1 + nargs`` cotangents (:func:`pull_back`). (Engines that sweep a tape call
    :func:`plain_cotangent` and :func:`check_count` themselves around the author's pullback, and
    skip the wrapper.)

    Example:
        >>> import rulescore as rc
        >>> def twice(x): return 2 * x
        >>> @rc.rrule.register(twice)
        ... def twice_rrule(x):
        ...     return twice(x), lambda ybar: (rc.NoTangent(), 2 * ybar)   # no zero handling
        >>> y, back = rc.rrule(twice, 1.5)
        >>> back(1.0), back(None), back(rc.Thunk(lambda: 3.0))
        ((NoTangent(), 2.0), (NoTangent(), ZeroTangent()), (NoTangent(), 6.0))
    """
    y, back = rrule_pair(rule, f, result)
    zero = zero_of(rule)
    zeros = (_NT, *((zero,) * nargs))

    def pullback(ybar: Any) -> Any:
        ybar = plain_cotangent(ybar)
        if ybar is None:
            return zeros
        return check_count(back(ybar), nargs, back, rule)

    pullback.__wrapped__ = back  # type: ignore[attr-defined]
    pullback.__name__ = getattr(back, "__name__", "pullback")
    pullback.__qualname__ = getattr(back, "__qualname__", pullback.__name__)
    return y, pullback


def plain_tangents(tangents: Any, wrt: tuple[int, ...] | None = None,
                   primals: tuple[Any, ...] | None = None) -> tuple[Any, ...] | None:
    """The tangents an frule author receives (unthunked, ``None`` as ``ZeroTangent()``, a
    structural tangent with plain entries), or ``None`` when every one is zero, or every one of
    the arguments at positions ``wrt`` (those the rule differentiates: a tangent given for an
    axis or a shape is ignored). Then the frule is not called: the output tangent is zero.

    With ``primals`` (a rule registered without ``zero_tangents=True``), a zero tangent of a
    float or complex argument (a number, an array of NumPy or of another library) next to a
    non-zero one arrives as zeros of that argument's shape and dtype, so the author's frule
    computes with plain arrays only (``np.sum(xdot)``, ``xdot.reshape``) and never tests for zeros.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> plain_tangents((None, rc.Thunk(lambda: 2.0))), plain_tangents((None, None))
        ((ZeroTangent(), 2.0), None)
        >>> plain_tangents((None, rc.ZeroTangent(), 1.0), wrt=(0,)) is None
        True
        >>> plain_tangents((None, None, 1.0), primals=(np.ones(2, np.float32), 3.0))
        (ZeroTangent(), array([0., 0.], dtype=float32), 1.0)
    """
    out = []
    nonzero = False
    for i, t in enumerate(tangents):
        if isinstance(t, Thunk):
            t = t.unthunk()
        if isinstance(t, Tangent):
            t = _plain_entries(t)
        if t is None:
            t = _ZT
        elif not isinstance(t, AbstractZero) and (wrt is None or i - 1 in wrt):
            nonzero = True
        out.append(t)
    if not nonzero:
        return None
    if primals is not None:
        for i, (t, x) in enumerate(zip(out[1:], primals, strict=False), start=1):
            if type(t) is ZeroTangent:
                out[i] = zeros_like_primal(x, t)
    return tuple(out)


def zeros_like_primal(x: Any, zero: Any) -> Any:
    """Zeros of the float or complex primal ``x``'s shape and dtype (a number for a number, an
    array of ``x``'s own library for an array), or ``zero`` for anything else (integers,
    structures, objects).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> zeros_like_primal(2.5, None), zeros_like_primal(np.ones(2), None), zeros_like_primal(3, None)
        (0.0, array([0., 0.]), None)
    """
    tx = type(x)
    if tx is float or tx is complex:
        return tx(0)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.zeros_like(x) if x.dtype.kind in "fc" else zero
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (int, bool)):
        try:
            xp = foreign_namespace((x,))
        except TypeError:  # not an array of a known library (an engine's traced value): left as is
            return zero
        if xp is not None and xp.isdtype(x.dtype, ("real floating", "complex floating")):
            return xp.zeros_like(x)
    return zero
