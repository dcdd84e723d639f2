"""Shared test setup: rule checking mode is on for the whole suite, XLA compiles without its LLVM
backend optimizations, and the heap built by collection (every test module, JAX, PyTorch, SciPy: some
800,000 objects per worker) is frozen out of the garbage collector's generations once collection ends."""

import gc
import os

import pytest

os.environ.setdefault("RULESCORE_CHECKS", "1")
# The suite compiles some thousand small JAX programs once each (Hessians of every native rule, say) and
# runs each once: LLVM's optimization passes were about half of each compilation and speed up nothing
# here. XLA's own graph passes still run; only the machine code is less optimized. Read when JAX starts
# its CPU backend (first computation), so setting it here, before any test runs, is early enough.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")


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
