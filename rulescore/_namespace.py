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


def foreign_namespace(args: Any) -> Any:
    """The array namespace of ``args`` when one of them is a non-NumPy array (a JAX, PyTorch,
    CuPy array: a rule's native tier takes over), else ``None`` (NumPy computes as usual).

    Example:
        >>> import numpy as np
        >>> foreign_namespace((np.ones(2), 1.0)) is None
        True
    """
    foreign = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype") and not is_numpy_input(a)]
    return array_namespace(*foreign) if foreign else None


def is_complex_array(xp: Any, x: Any) -> bool:
    """Whether the array ``x`` of namespace ``xp`` has a complex dtype (``False`` for non-arrays)."""
    return hasattr(x, "dtype") and bool(xp.isdtype(x.dtype, "complex floating"))


def constant_like(xp: Any, value: Any, like: Any) -> Any:
    """The NumPy constant ``value`` (a mask, an identity matrix) as an array of the namespace
    ``xp`` on ``like``'s device: itself for NumPy.

    Example:
        >>> import numpy as np
        >>> constant_like(np, np.eye(2), np.ones(2)) is not None
        True
    """
    if xp is np:
        return value
    import array_api_compat

    return xp.asarray(value, device=array_api_compat.device(like))


def unbroadcast_to(xp: Any, x: Any, g: Any) -> Any:
    """The cotangent ``g`` of a value broadcast from ``x``: summed back to ``x``'s shape and
    cast to its dtype (real for a real ``x``), in ``x``'s array namespace ``xp``.

    Example:
        >>> import numpy as np
        >>> unbroadcast_to(np, np.zeros((1, 2), np.float32), np.ones((3, 2, 2)) + 0j)
        array([[6., 6.]], dtype=float32)
    """
    shape = tuple(x.shape)
    if tuple(g.shape) != shape:
        lead = len(g.shape) - len(shape)
        axes = (*range(lead), *(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1))
        if axes:
            g = xp.sum(g, axis=axes)
        g = xp.reshape(g, shape)
    if is_complex_array(xp, g) and not is_complex_array(xp, x):
        g = xp.real(g)
    return g if g.dtype == x.dtype else xp.astype(g, x.dtype)
