"""Root conftest: checking mode on before rulescore is imported (doctests included), the
rulescore pytest plugin enabled for this suite (it is opt-in: no entry point installs it), and
the ``--exhaustive`` option."""

import os

import pytest

os.environ.setdefault("RULESCORE_CHECKS", "1")

pytest_plugins = ["rulescore.testing.plugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--exhaustive", action="store_true", default=False,
        help="also run the long checks kept out of the default run: every rule-library family through "
             "every AD engine (tests/interop/test_registry.py); .ci/run runs them as a step of their own")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "exhaustive: a long check, collected only with --exhaustive")
    config.addinivalue_line("markers", "realworld: unmodified library code (needs the realworld extra)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``--exhaustive``, the tests marked ``exhaustive`` are deselected (not skipped: the
    default run's skip list stays the list of checks that could not be made)."""
    if config.getoption("--exhaustive"):
        return
    kept = [item for item in items if item.get_closest_marker("exhaustive") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("exhaustive")])
        items[:] = kept
