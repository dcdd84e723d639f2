"""rulescore.testing: ChainRulesTestUtils for Python, built on hypothesis.

``test_rrule`` / ``test_frule`` check a rule against high-accuracy finite differences over any
structure of arguments (numbers, complex numbers, arrays, tuples, dicts, dataclasses,
NamedTuples), ``test_frule_rrule`` checks that the two rules agree, ``test_scalar`` covers scalar
functions, and :mod:`rulescore.testing.strategies` draws primals and tangents with hypothesis.
This module only re-exports; the implementation lives in private modules.

Example:
    >>> import math, rulescore.testing as rct
    >>> rct.test_rrule(math.sin, 0.5)
    >>> rct.test_frule(math.exp, 0.5)
"""

try:
    import hypothesis as _hypothesis  # noqa: F401  (checked first: the error should name the extra)
except ModuleNotFoundError as missing:
    if missing.name != "hypothesis":
        raise
    raise ModuleNotFoundError(
        "rulescore.testing needs hypothesis, which rulescore installs with its `testing` extra: "
        "pip install 'rulescore[testing]' (from a checkout: pip install '.[testing]')",
        name="hypothesis") from missing

from rulescore.testing import strategies as strategies
from rulescore.testing._engines import (
    SYSTEMS,
    check_systems,
    frule_from_jvp,
    installed_systems,
    rrule_from_pullback,
    test_rrule,
)
from rulescore.testing._finite_differences import (
    FiniteDifferenceError,
    FiniteDifferences,
    fd_jvp,
    fd_vjp,
)
from rulescore.testing._given import RuleTester, check_rule
from rulescore.testing._result_checks import Tolerance, default_tolerance, tangent_space_problem
from rulescore.testing._test_config import TestConfig
from rulescore.testing._testers import (
    test_frule,
    test_frule_rrule,
    test_scalar,
)
from rulescore.testing._vec import NoTangentArg, no_tangent

__all__ = [
    "SYSTEMS", "TestConfig", "check_systems", "installed_systems",
    "FiniteDifferenceError", "FiniteDifferences", "NoTangentArg", "RuleTester", "Tolerance", "check_rule",
    "default_tolerance", "frule_from_jvp", "rrule_from_pullback",
    "fd_jvp", "fd_vjp", "no_tangent", "strategies", "tangent_space_problem", "test_frule",
    "test_frule_rrule", "test_rrule", "test_scalar",
]
