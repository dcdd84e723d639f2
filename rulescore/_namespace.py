"""``array_namespace``: write a function and its rule once, run them on any array library."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["array_namespace", "is_numpy_input"]


def is_numpy_input(x: Any) -> bool:
    """True for values NumPy handles as its own: arrays, NumPy scalars, Python numbers."""
    return isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)) or x is None


def array_namespace(*arrays: Any) -> Any:
    """The array-API namespace of ``arrays``: ``numpy`` itself for NumPy input (and Python
    numbers), otherwise array-api-compat's namespace (JAX, PyTorch, CuPy, Dask; the optional
    ``array-api`` extra, imported only then). A rule written against it runs natively in
    ``rulescore.interop.jax`` and ``rulescore.interop.torch``, with no host callback.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> def softsign(x):
        ...     xp = rc.array_namespace(x)
        ...     return x / (1 + xp.abs(x))
        >>> rc.array_namespace(np.ones(2)) is np
        True
        >>> softsign(np.array([1.0, -3.0]))
        array([ 0.5 , -0.75])
    """
    if all(is_numpy_input(a) for a in arrays):
        return np
    try:
        import array_api_compat
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("rc.array_namespace needs array-api-compat for non-NumPy arrays "
                          "(pip install 'rulescore[array-api]')") from err
    return array_api_compat.array_namespace(*(a for a in arrays if not is_numpy_input(a)))
