"""pytest plugin for rule authors, opt-in: installing rulescore changes no other project's tests.

Enable it with ``pytest -p rulescore.testing.plugin``, or in a top-level ``conftest.py`` with
``pytest_plugins = ["rulescore.testing.plugin"]`` (needs the ``testing`` extra: hypothesis). Then it

- turns rulescore's checking mode on (``RULESCORE_CHECKS=1`` before rulescore is imported, and
  ``rc.checking()`` around every test, unless the environment sets ``RULESCORE_CHECKS=0``);
- registers the hypothesis profiles ``rulescore`` (deterministic, no deadline, modest number of
  examples; loaded by default) and ``rulescore-thorough`` (random, many examples);
  the ini option ``rulescore_hypothesis_profile`` picks another one (empty: leave hypothesis
  alone), and ``--hypothesis-profile`` always wins;
- gives tests the fixture ``rule_tester`` (a :class:`rulescore.testing.RuleTester`).

A test file needs nothing else::

    def test_my_rule(rule_tester):
        rule_tester.rrule(my_function, 1.5)
"""

from __future__ import annotations

import os

os.environ.setdefault("RULESCORE_CHECKS", "1")  # before rulescore is imported

from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import rulescore as rc  # noqa: E402
from rulescore.testing._given import RuleTester  # noqa: E402

PROFILE = "rulescore"
THOROUGH_PROFILE = "rulescore-thorough"
_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]


def register_profiles() -> None:
    """Register the ``rulescore`` and ``rulescore-thorough`` hypothesis profiles (idempotent).

    Example:
        >>> from hypothesis import settings
        >>> from rulescore.testing.plugin import register_profiles
        >>> register_profiles()
        >>> settings.get_profile("rulescore").derandomize
        True
    """
    settings.register_profile(PROFILE, derandomize=True, deadline=None, max_examples=20, database=None,
                              suppress_health_check=_HEALTH, print_blob=True)
    settings.register_profile(THOROUGH_PROFILE, derandomize=False, deadline=None, max_examples=300,
                              suppress_health_check=_HEALTH)


def load_profile(name: str = PROFILE) -> None:
    """Register the profiles and load ``name`` (for conftest files when the plugin is not active).

    Example:
        >>> from hypothesis import settings
        >>> from rulescore.testing.plugin import load_profile
        >>> current = settings._current_profile
        >>> load_profile()
        >>> settings.default.deadline is None
        True
        >>> settings.load_profile(current)
    """
    register_profiles()
    settings.load_profile(name)


def checks_wanted() -> bool:
    """Whether checking mode should be on: unless ``RULESCORE_CHECKS=0`` in the environment.

    Example:
        >>> from rulescore.testing.plugin import checks_wanted
        >>> isinstance(checks_wanted(), bool)
        True
    """
    return os.environ.get("RULESCORE_CHECKS", "1") != "0"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("rulescore_hypothesis_profile",
                  help="hypothesis profile the rulescore plugin loads (empty: none)", default=PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    register_profiles()
    chosen = config.getoption("hypothesis_profile", default=None)
    name = str(config.getini("rulescore_hypothesis_profile") or "")
    if chosen is None and name:
        settings.load_profile(name)


@pytest.fixture(autouse=True)
def _rulescore_checking_mode() -> Iterator[None]:
    """Every test runs with rulescore's checking mode on (``RULESCORE_CHECKS=0`` turns it off)."""
    with rc.checking(checks_wanted()):
        yield


@pytest.fixture
def rule_tester() -> RuleTester:
    """A :class:`rulescore.testing.RuleTester`: ``rule_tester.rrule(f, *args)``, ``.frule``,
    ``.both``, ``.scalar`` and ``.given(f, *strategies)`` with the suite's defaults."""
    return RuleTester()


__all__: list[Any] = ["PROFILE", "THOROUGH_PROFILE", "checks_wanted", "load_profile", "register_profiles",
                      "rule_tester"]
