"""Shared test setup: rule checking mode is on for the whole suite, and the heap built by collection
(every test module, JAX, PyTorch, SciPy: some 800,000 objects per worker) is frozen out of the
garbage collector's generations once collection ends."""

import gc
import os

import pytest

os.environ.setdefault("RULESCORE_CHECKS", "1")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection left alive (``gc.freeze``): the collector and ``gc.get_referrers``, which
    zygotepy uses to find traced values a differentiation let escape (``release_escaped``), then scan
    only what the tests themselves create, not the libraries' and collection's objects. The search
    scanned the whole heap on each call: a few tenths of a second in a full worker, 20-30 s per test for
    the nested-derivative and logging tests, against 2-4 s when run alone. Tests create the objects
    they check (models, containers, loggers' records) after this point, so the searches still see them."""
    gc.collect()
    gc.freeze()
