"""What a failed rule check tells a person: descriptions of calls and values, and the report
that collects problems and raises one ``AssertionError``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import rulescore as rc
from rulescore.testing._vec import (
    NoTangentArg,
)

_MAX_ELEMENTWISE = 400  # element-wise finite differences in reports, up to this many reals
_MAX_LISTED = 8


# --------------------------------------------------------------------------------------------
# descriptions and reports


def _name(f: Any) -> str:
    if isinstance(f, np.ufunc):
        return f"numpy.{f.__name__}"
    module = getattr(f, "__module__", None) or ""
    qual = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__
    return qual if module in ("builtins", "", "__main__") else f"{module}.{qual}"


def _kind(x: Any) -> str:
    if isinstance(x, NoTangentArg):
        return f"no_tangent({_kind(x.value)})"
    if isinstance(x, np.ndarray):
        return f"ndarray[{x.dtype} {x.shape}]"
    if isinstance(x, np.generic):
        return f"{x.dtype}"
    return type(x).__name__


def _call(f: Any, args: Sequence[Any]) -> str:
    return f"{_name(f)}({', '.join(_kind(a) for a in args)})"


def _show(x: Any, limit: int = 600) -> str:
    with np.printoptions(precision=17, threshold=64, linewidth=100):
        text = repr(x)
    return text if len(text) <= limit else text[:limit] + " ..."


def _fmt(v: float) -> str:
    return f"{v:.10g}"


def _rule_text(table: rc.RuleTable, f: Any, primals: tuple[Any, ...], custom: Any) -> str:
    if custom is not None:
        return f"{table.name} computed by {_name(custom)} (an AD engine or custom {table.name})"
    try:
        bound = rc.unbind(f)
        if bound is not None and not table.has_rules(f):
            return table.explain(bound[0], bound[1], *primals) + " (via the bound method's function)"
        return table.explain(f, *primals)
    except Exception as err:  # noqa: BLE001 - a report must not fail while explaining
        return f"(could not explain the {table.name}: {type(err).__name__}: {err})"


class _Report:
    """Collects failures of one check and raises one ``AssertionError`` describing them all."""

    def __init__(self, what: str, f: Any, args: tuple[Any, ...], kwargs: dict[str, Any], rule: str) -> None:
        self.what, self.f, self.args, self.kwargs, self.rule = what, f, args, kwargs, rule
        self.failures: list[str] = []
        self.context: list[tuple[str, Any]] = []

    def fail(self, message: str) -> None:
        self.failures.append(message)

    def fatal(self, message: str) -> AssertionError:
        self.fail(message)
        return self.error()

    def error(self) -> AssertionError:
        n = len(self.failures)
        lines = [f"{self.what} failed for {_call(self.f, self.args)}: {n} problem{'s' * (n != 1)}"]
        for k, msg in enumerate(self.failures, 1):
            body = msg.replace("\n", "\n     ")
            lines.append(f"  {k}. {body}")
        lines.append(f"  rule: {self.rule}")
        for i, a in enumerate(self.args, 1):
            lines.append(f"  argument {i}: {_show(a)}")
        if self.kwargs:
            lines.append(f"  keyword arguments: {_show(self.kwargs)}")
        for label, value in self.context:
            lines.append(f"  {label}: {_show(value)}")
        return AssertionError("\n".join(lines))

    def finish(self) -> None:
        if self.failures:
            raise self.error()


def _invoke(report: _Report, what: str, fn: Callable[[], Any]) -> Any:
    """Run part of a rule; turn any exception into the report's ``AssertionError``."""
    try:
        return fn()
    except rc.RuleError as err:
        raise report.fatal(f"rulescore's checking mode rejected {what}: {err}") from err
    except Exception as err:
        raise report.fatal(f"{what} raised {type(err).__name__}: {err}") from err


def _arg_label(i: int, x: Any) -> str:
    return "f itself" if i == 0 else f"argument {i} ({_kind(x)})"


def _dof_label(i: int) -> str:
    return "f" if i == 0 else f"arg{i}"
