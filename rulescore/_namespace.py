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
    return _namespace_of([a for a in arrays if not is_numpy_input(a)])


#: array-api-compat's namespace by the types of the non-NumPy arrays it was found for: it depends
#: on their types only, and finding it costs more than many a rule's arithmetic on small arrays
_NAMESPACES: dict[tuple[type, ...], Any] = {}


def _namespace_of(foreign: list[Any]) -> Any:
    """array-api-compat's namespace of the non-NumPy arrays ``foreign`` (cached by their types)."""
    key = tuple(type(a) for a in foreign)
    found = _NAMESPACES.get(key)
    if found is not None:
        return found
    try:
        import array_api_compat
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("rc.array_namespace needs array-api-compat for non-NumPy arrays "
                          "(pip install 'rulescore[array-api]')") from err
    found = array_api_compat.array_namespace(*foreign)
    if len(_NAMESPACES) < 256:  # a bound: types made at run time (tracer classes) stay few
        _NAMESPACES[key] = found
    return found


def foreign_namespace(args: Any) -> Any:
    """The array namespace of ``args`` when one of them is a non-NumPy array (a JAX, PyTorch,
    CuPy array: a rule's native tier takes over), else ``None`` (NumPy computes as usual).

    Example:
        >>> import numpy as np
        >>> foreign_namespace((np.ones(2), 1.0)) is None
        True
    """
    if len(args) == 1:  # the element-wise rules' common case: the answer of the argument's class
        found = _FOREIGN_BY_CLASS.get(type(args[0]), _UNKNOWN)
        if found is not _UNKNOWN:
            return found
    foreign = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype") and not is_numpy_input(a)]
    found = _namespace_of(foreign) if foreign else None
    if len(args) == 1 and len(_FOREIGN_BY_CLASS) < 256:
        cls = type(args[0])
        if found is not None and hasattr(cls, "shape") and hasattr(cls, "dtype"):
            _FOREIGN_BY_CLASS[cls] = found  # an array class (its attributes are the class's own)
        elif found is None and cls in _NUMPY_CLASSES:
            _FOREIGN_BY_CLASS[cls] = None
    return found


_UNKNOWN = object()
#: :func:`foreign_namespace` of one argument, by its class, for the classes whose answer the class
#: decides: array classes with ``shape`` and ``dtype`` of their own, and NumPy's and Python's numbers
_FOREIGN_BY_CLASS: dict[type, Any] = {}
_NUMPY_CLASSES = frozenset({float, int, complex, bool, np.ndarray, np.float64, np.float32, np.complex128,
                            np.complex64, np.int64, np.int32, np.bool_})


#: whether a dtype (NumPy's, PyTorch's, ...) is complex, by the dtype: asked per rule application
_COMPLEX: dict[Any, bool] = {}


def is_complex_array(xp: Any, x: Any) -> bool:
    """Whether the array ``x`` of namespace ``xp`` has a complex dtype (``False`` for non-arrays).

    Example:
        >>> import numpy as np
        >>> [is_complex_array(np, x) for x in (np.ones(2, complex), np.ones(2), 1j)]
        [True, False, False]
    """
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return False
    try:
        found = _COMPLEX.get(dtype)
    except TypeError:  # an unhashable dtype object: asked each time
        return bool(xp.isdtype(dtype, "complex floating"))
    if found is None:
        found = bool(xp.isdtype(dtype, "complex floating"))
        if len(_COMPLEX) < 256:
            _COMPLEX[dtype] = found
    return found


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
