"""Interop tests run in float64 under JAX too (finite-difference-grade comparisons)."""

import pytest

jax = pytest.importorskip("jax", reason="the JAX interop tests need jax (the `jax` extra)")
jax.config.update("jax_enable_x64", True)
