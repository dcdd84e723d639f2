"""Checking mode: every rule application verifies that the rule keeps the protocol.

On when the environment variable ``RULESCORE_CHECKS`` is ``1`` (read at the first rule
application, so setting it after ``import rulescore`` but before using rules works), or inside
``with rc.checking():``. A pullback that returns the wrong number of cotangents, or a cotangent
whose shape, dtype or kind does not fit its primal, raises :class:`RuleError` naming the rule
and the primal call. The state is context-local, so threads and tests do not share it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from rulescore._not_implemented import NotImplementedTangent
from rulescore._thunks import unthunk
from rulescore._zeros import NO_TANGENT_DATA, AbstractZero

# None: not set in this context, use the environment's default (read once, when first needed)
_CHECKING: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "rulescore_checking", default=None
)
_env_default: bool | None = None


def _default() -> bool:
    global _env_default
    if _env_default is None:
        _env_default = os.environ.get("RULESCORE_CHECKS", "") == "1"
    return _env_default


class RuleError(Exception):
    """A rule broke the rrule/frule protocol; the message names the rule and the primal call."""


def checks_enabled() -> bool:
    """Whether rule applications are being checked in this context.

    Example:
        >>> import rulescore as rc
        >>> with rc.checking():
        ...     rc.checks_enabled()
        True
    """
    enabled = _CHECKING.get()
    if enabled is None:
        enabled = _env_default if _env_default is not None else _default()
    return enabled


@contextlib.contextmanager
def checking(enabled: bool = True) -> Iterator[None]:
    """Turn checking mode on (or off) for the code inside the ``with`` block.

    Example:
        >>> import rulescore as rc
        >>> with rc.checking(False):
        ...     rc.checks_enabled()
        False
    """
    token = _CHECKING.set(enabled)
    try:
        yield
    finally:
        _CHECKING.reset(token)


def describe_call(f: Any, args: tuple[Any, ...]) -> str:
    """``name(float, ndarray[float64 (3,)])``: a primal call, by argument kinds."""
    return f"{callable_name(f)}({', '.join(describe_value(a) for a in args)})"


def callable_name(f: Any) -> str:
    """A readable dotted name for any callable (``numpy.sin``, ``numpy.add.at``, ``math.exp``,
    ``Point``). A ufunc compiled outside NumPy and SciPy (numba's ``@vectorize``) is named by
    its own name, not as a NumPy function; a pybind11 function by its module and name, without the
    binding's record type.

    Example:
        >>> import numpy as np
        >>> callable_name(np.add.reduceat), callable_name(np.frompyfunc(abs, 1, 1))
        ('numpy.add.reduceat', 'abs (vectorized)')
    """
    if isinstance(f, np.ufunc):
        name = str(f.__name__)
        if getattr(np, name, None) is f:
            return f"numpy.{name}"
        if _public_scipy_name(f, "scipy.special", name):
            return f"scipy.special.{name}"
        return name  # compiled elsewhere (numba's @vectorize, np.frompyfunc): not a NumPy function
    owner = getattr(f, "__self__", None)
    if isinstance(owner, np.ufunc):  # a ufunc's method: numpy.add.at
        return f"{callable_name(owner)}.{f.__name__}"
    module = getattr(f, "__module__", None) or getattr(type(f), "__module__", "")
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    if qual is None:  # a callable object: name its class rather than its repr
        return f"<{callable_name(type(f))} object>"
    if qual.startswith("pybind11_"):  # pybind11's function record type: not part of the name
        qual = getattr(f, "__name__", qual)
    if isinstance(module, str) and module.startswith("scipy."):
        return _scipy_name(f, module, qual)
    return qual if module in ("builtins", "", None) else f"{module}.{qual}"


def _public_scipy_name(f: Any, public: str, name: str) -> bool:
    obj: Any = sys.modules.get(public)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj is not None and obj is f


def _scipy_name(f: Any, module: str, qual: str) -> str:
    """The public name of a SciPy callable: ``scipy.special.softmax`` (not its private module),
    ``scipy.stats.norm.logpdf`` for a method of a distribution instance."""
    owner = getattr(f, "__self__", None)
    dist = getattr(owner, "name", None)
    if isinstance(dist, str) and type(owner).__module__.startswith("scipy.stats"):
        return f"scipy.stats.{dist}.{f.__name__}"
    public = ".".join(p for p in module.split(".") if not p.startswith("_"))
    if public != module and _public_scipy_name(f, public, qual):
        return f"{public}.{qual}"
    return f"{module}.{qual}"


def describe_value(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"ndarray[{x.dtype} {x.shape}]"
    return type(x).__name__


def _kind_problem(primal: Any, ct: Any) -> str | None:
    ct = unthunk(ct)
    if ct is None or isinstance(ct, (AbstractZero, NotImplementedTangent)):
        return None  # a zero, or a derivative declared not implemented (its use raises)
    if isinstance(primal, NO_TANGENT_DATA):
        return f"a {type(ct).__name__} for a {type(primal).__name__} (which has no tangent space)"
    if isinstance(primal, np.ndarray) and primal.dtype.kind in "fciu":
        if not isinstance(ct, np.ndarray):
            if np.ndim(ct) == 0 and primal.ndim == 0:
                return None
            return f"a {type(ct).__name__} for an array of shape {primal.shape}"
        if ct.shape != primal.shape:
            return f"shape {ct.shape} for a primal of shape {primal.shape}"
        expected = primal.dtype if primal.dtype.kind in "fc" else np.dtype(np.float64)
        if ct.dtype != expected:
            return f"dtype {ct.dtype} for a primal of dtype {primal.dtype} (expected {expected})"
        return None
    if isinstance(primal, (int, float, np.integer, np.floating)):
        if isinstance(ct, (complex, np.complexfloating)) or (
            isinstance(ct, np.ndarray) and ct.dtype.kind == "c"
        ):
            return f"a complex {type(ct).__name__} for a real {type(primal).__name__}"
        if np.ndim(ct) != 0:
            return f"shape {np.shape(ct)} for a scalar {type(primal).__name__}"
    return None


def check_cotangents(rule: Any, f: Any, args: tuple[Any, ...], cts: tuple[Any, ...]) -> tuple[Any, ...]:
    """Raise :class:`RuleError` unless ``cts`` has one fitting cotangent per argument plus f."""
    where = f"the rrule for {describe_call(f, args)} ({rule})"
    if not isinstance(cts, tuple) or len(cts) != 1 + len(args):
        got = f"{len(cts)} cotangents" if isinstance(cts, tuple) else f"a {type(cts).__name__}"
        raise RuleError(f"{where}: its pullback returned {got}, expected {1 + len(args)} "
                        "(a tuple: one for f, then one per positional argument)")
    for i, (primal, ct) in enumerate(zip(args, cts[1:], strict=True)):
        problem = _kind_problem(primal, ct)
        if problem:
            raise RuleError(f"{where}: cotangent for argument {i + 1} has {problem}")
    return cts


def check_rrule_result(rule: Any, f: Any, args: tuple[Any, ...],
                       result: tuple[Any, Callable[..., Any]]) -> tuple[Any, Callable[..., Any]]:
    """Wrap the (contract-keeping) pullback of an rrule's result so every call is checked."""
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        raise RuleError(f"the rrule for {describe_call(f, args)} ({rule}) returned "
                        f"{type(result).__name__}; expected a (y, pullback) pair")
    y, pullback = result

    def checking_pullback(ybar: Any) -> Any:
        return check_cotangents(rule, f, args, pullback(ybar))

    checking_pullback.__name__ = getattr(pullback, "__name__", "pullback")
    checking_pullback.__qualname__ = checking_pullback.__name__
    return y, checking_pullback


def check_frule_result(rule: Any, f: Any, args: tuple[Any, ...], result: Any) -> Any:
    """Check that an frule returned ``(y, ydot)`` with ``ydot`` fitting ``y``."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuleError(f"the frule for {describe_call(f, args)} ({rule}) returned "
                        f"{type(result).__name__}; expected a (y, ydot) pair")
    problem = _kind_problem(result[0], result[1])
    if problem:
        raise RuleError(f"the frule for {describe_call(f, args)} ({rule}): its tangent has {problem}")
    return result
