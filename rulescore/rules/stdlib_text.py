"""Formatting a value as text needs no derivative: ``json.dumps``/``json.dump`` and the logging
calls (``logger.info("loss %f", loss)``, ``logging.warning(...)``) are non-differentiable, so
an engine calls them with the plain values (registered when ``json`` and ``logging`` are
imported, see :mod:`rulescore.rules._optional`; ``str.format`` and ``%``-formatting of strings
are in :mod:`rulescore.rules.builtins`).

Example:
    >>> import json, rulescore as rc
    >>> y, back = rc.rrule(json.dumps, {"loss": 0.25})
    >>> y, back("ignored")
    ('{"loss": 0.25}', (NoTangent(), NoTangent()))
"""

from __future__ import annotations

import json
import logging

from rulescore import RulePair

_LEVELS = ("debug", "info", "warning", "error", "critical", "exception", "log")

#: The logging calls, as methods of ``Logger`` (``logger.info(...)``) and module functions.
LOGGING_CALLS = (*(getattr(logging.Logger, name) for name in _LEVELS),
                 *(getattr(logging, name) for name in _LEVELS), logging.LogRecord.getMessage)

RULES: tuple[RulePair, ...] = tuple(
    RulePair(f, kind="non_differentiable") for f in (json.dumps, json.dump, *LOGGING_CALLS))
