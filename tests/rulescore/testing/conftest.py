"""Make the ``rulescore`` pytest plugin's fixtures and profile available from a source checkout."""

from rulescore.testing.plugin import (  # noqa: F401  (fixtures are found by name)
    _rulescore_checking_mode,
    load_profile,
    rule_tester,
)

load_profile()
