"""JAX in float64 for finite-difference-grade comparisons (when JAX is installed)."""

import importlib.util

if importlib.util.find_spec("jax") is not None:
    import jax

    jax.config.update("jax_enable_x64", True)
