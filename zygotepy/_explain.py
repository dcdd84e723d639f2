"""Which rule or path differentiates each call: ``explain`` prints it for one call of a function.

The engine writes one DEBUG record per call to the ``"zygotepy"`` logger (a rule, a legacy
adjoint, a Python function traced through, a primitive run as it is) whenever that logger
emits DEBUG records; whether it does is read once per differentiation, so logging costs
nothing when it is off. ``explain`` turns it on for one call and prints the records as a table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zygotepy._reverse import pullback


def explain(f: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Print, for one reverse-mode call ``f(*args, **kwargs)``, how each call inside it is
    differentiated: ``rule`` (with the rule picked and where it was registered), ``adjoint``,
    ``non-differentiable``, ``traced through`` (a Python function without a rule) or
    ``primitive`` (run as it is: containers, constructors of user classes).

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
    """
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
