"""Which rule or path differentiates each call: ``explain`` prints it for one call of a function.

The engine writes one DEBUG record per call to the ``"zygotepy"`` logger (a rule, a legacy
adjoint, a Python function traced through, a primitive run as it is) whenever that logger
emits DEBUG records; whether it does is read once per differentiation, so logging costs
nothing when it is off. ``explain`` turns it on for one call and prints the records as a table;
with ``source=True`` it first prints the function as the engine rewrites it (Zygote's
``@code_adjoint``: what actually runs while it is differentiated).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from rulescore._checks import callable_name
from zygotepy._reverse import pullback
from zygotepy._transform import rewritten_source


def _show_source(f: Any) -> None:
    fn = inspect.unwrap(getattr(f, "__func__", f))
    while isinstance(fn, functools.partial):
        fn = inspect.unwrap(fn.func)
    text = rewritten_source(fn) if isinstance(fn, types.FunctionType) else None
    if text is None:
        function = isinstance(fn, types.FunctionType)
        why = "it has no Python source" if function else "it is not a Python function"
        print(f"# {callable_name(f)} is not rewritten: {why}; the engine runs it as it is")
        return
    print(f"# {callable_name(f)} as zygotepy rewrites it: each call, operator, subscript and comparison\n"
          "# goes through _zp_call and the other _zp_ helpers, which pick a rule or trace the callee")
    print(text)


def explain(f: Callable[..., Any], *args: Any, source: bool = False, **kwargs: Any) -> None:
    """Print, for one reverse-mode call ``f(*args, **kwargs)``, how each call inside it is
    differentiated: ``rule`` (with the rule picked and where it was registered), ``adjoint``,
    ``non-differentiable``, ``traced through`` (a Python function without a rule), one of the
    registry's handling entries (``special form``, ``structural``, ``pass through``,
    ``reference``: see ``rulescore.HANDLING_KINDS``) or ``primitive`` (run as it is:
    constructors of user classes).

    ``source=True`` first prints ``f`` as the engine rewrites it, every call routed through the
    dispatcher (Zygote's ``@code_adjoint``); without arguments, that is all it prints.

    Example:
        >>> import numpy as np, zygotepy as zp
        >>> def model(w, x):
        ...     return np.sum(np.tanh(w * x))
        >>> zp.explain(model, np.ones(2), np.ones(2))  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        call...how...rule
        zygotepy._explain.model(ndarray, ndarray)...traced through
        _operator.mul(ndarray, ndarray)...rule...<rrule(_operator.mul) at ...operators.py:...>
        numpy.tanh(ndarray)...rule...<rrule(numpy.tanh) at ...>
        numpy.sum(ndarray)...rule...<rrule(numpy.sum) at ...>
        >>> zp.explain(model, source=True)
        # zygotepy._explain.model as zygotepy rewrites it: ...
        def model(w, x):
            return _zp_call(np.sum, _zp_call(np.tanh, _zp_call(_zp_op_mul, w, x)))
    """
    if source:
        _show_source(f)
        if not args and not kwargs:
            return
    import logging  # here, not at the top: ``import zygotepy`` does not pay for logging

    rows: list[tuple[str, str, str]] = [("call", "how", "rule")]

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            depth = getattr(record, "zygotepy_level", 0)
            rows.append(("  " * depth + getattr(record, "zygotepy_call", ""),
                         getattr(record, "zygotepy_how", ""), getattr(record, "zygotepy_rule", "")))

    log = logging.getLogger("zygotepy")
    handler = Collect(logging.DEBUG)
    level, propagate = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False  # the table is the output, not the application's log
    try:
        pullback(f, *args, **kwargs)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate
    widths = [max(len(r[i]) for r in rows) + 4 for i in range(2)]
    for call, how, rule in rows:
        print(f"{call:<{widths[0]}}{how:<{widths[1]}}{rule}".rstrip())
