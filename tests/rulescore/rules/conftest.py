"""Set-up for the rule-family tests.

At import time, before any family test module registers rules of its own, this records which
callables the rule library registered (``LIBRARY_RRULES`` / ``LIBRARY_FRULES``); the coverage test
compares them with the family modules' ``CASES``. It also makes the ``rulescore`` pytest plugin's
fixtures and hypothesis profile available when the plugin is not installed as an entry point.
"""

from __future__ import annotations

import os

os.environ.setdefault("RULESCORE_CHECKS", "1")

from typing import Any  # noqa: E402

import rulescore as rc  # noqa: E402
from rulescore.testing.plugin import (  # noqa: E402, F401  (fixtures are found by name)
    _rulescore_checking_mode,
    load_profile,
    rule_tester,
)

load_profile()

_PACKAGE_DIR = os.path.dirname(os.path.abspath(rc.__file__))


def _from_the_library(table: rc.RuleTable, f: Any) -> bool:
    """A callable whose rules come from rulescore itself, not from a test, a doctest or zygotepy."""
    module = getattr(f, "__module__", None) or ""
    if module.startswith(("tests.", "test_", "conftest", "__main__", "zygotepy")) or ".test_" in module:
        return False
    origins = [r.origin for r in table.rules_for(f)]
    return any(os.path.abspath(o.rsplit(":", 1)[0]).startswith(_PACKAGE_DIR) for o in origins)


#: Callables with an rrule / frule registered by the rule library itself (snapshot at import).
LIBRARY_RRULES: tuple[Any, ...] = tuple(f for f in rc.rrule.callables() if _from_the_library(rc.rrule, f))
LIBRARY_FRULES: tuple[Any, ...] = tuple(f for f in rc.frule.callables() if _from_the_library(rc.frule, f))
