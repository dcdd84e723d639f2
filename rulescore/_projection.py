"""``ProjectTo``: put a cotangent into the tangent space of a primal.

| primal                                   | projected cotangent                                 |
|------------------------------------------|-----------------------------------------------------|
| ``float`` / ``int``                      | ``float`` (imaginary part dropped)                  |
| ``complex``                              | ``complex``                                         |
| ``bool``, ``str``, ``bytes``, ``None``,  | ``NoTangent()``                                     |
| types, functions, modules, ranges, ...   | (the list is ``rulescore._zeros.NO_TANGENT_TYPES``) |
| NumPy float / complex scalar             | same dtype (a real one drops the imaginary part)    |
| NumPy integer scalar                     | ``numpy.float64``                                   |
| ``ndarray`` of floats / complexes        | same dtype and shape; a cotangent of a broadcast    |
|                                          | shape is summed back; real drops imaginary          |
| ``ndarray`` of ints                      | ``float64`` array of the same shape                 |
| ``ndarray`` of bools or strings          | ``NoTangent()``                                     |
| JAX / PyTorch / CuPy array (or a tracer) | the same, in the array's own namespace              |
| ``tuple`` / ``list``                     | ``Tangent[tuple]`` / ``Tangent[list]``, per entry   |
| ``dict``                                 | ``Tangent[dict]``, per key                          |
| dataclass, NamedTuple, object            | ``Tangent[P]``, per field; an instance of ``P``     |
|                                          | (from a legacy custom adjoint) is kept as it is;    |
|                                          | a NamedTuple also takes a tuple, by position        |

Zeros (``None``, ``ZeroTangent()``, ``NoTangent()``) pass through (``None`` as ``ZeroTangent()``)
and thunks are evaluated first. A :class:`~rulescore.Batched` stack of tangents (forward mode
pushing several directions) is projected direction by direction, in one vectorised step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rulescore._batched import Batched
from rulescore._namespace import array_namespace, is_numpy_input
from rulescore._not_implemented import NotImplementedTangent
from rulescore._structure import fields_of, is_namedtuple_type
from rulescore._tangent import Tangent, tangent_type
from rulescore._thunks import Thunk
from rulescore._zeros import NO_TANGENT_TYPES, AbstractZero, NoTangent, ZeroTangent


class ProjectionError(ValueError):
    """A cotangent cannot be put into its primal's tangent space (wrong shape or kind)."""


def _scalar(dx: Any) -> Any:
    if isinstance(dx, np.ndarray):
        if dx.ndim != 0:  # strict: a rule must sum a broadcast scalar's cotangent itself
            raise ProjectionError(f"cotangent of shape {dx.shape} for a scalar primal")
        dx = dx[()]
    if not isinstance(dx, (int, float, complex, np.number)):
        raise ProjectionError(f"cotangent of type {type(dx).__name__} for a scalar primal")
    return dx


def _real_float(dx: Any) -> Any:
    if type(dx) is Batched:
        return _project_batched(dx, np.dtype(np.float64), ())
    dx = _scalar(dx)
    return float(dx.real) if isinstance(dx, (complex, np.complexfloating)) else float(dx)


def _complex(dx: Any) -> Any:
    if type(dx) is Batched:
        return _project_batched(dx, np.dtype(np.complex128), ())
    return complex(_scalar(dx))


def unbroadcast(dx: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``dx`` over the axes along which an array of ``shape`` was broadcast.

    Example:
        >>> import numpy as np
        >>> unbroadcast(np.ones((2, 3)), (3,))
        array([2., 2., 2.])
    """
    if dx.shape == shape:
        return dx
    key = (dx.shape, shape)
    axes = _SUMMED_AXES.get(key)
    if axes is None:
        axes = _summed_axes(dx.shape, shape)
        if len(_SUMMED_AXES) >= 512:
            _SUMMED_AXES.clear()
        _SUMMED_AXES[key] = axes
    if not axes:
        out = dx
    elif type(dx) is np.ndarray and dx.dtype.kind in "fc":
        out = np.add.reduce(dx, axis=axes)  # what dx.sum does for floats, without its Python layer
    else:
        out = dx.sum(axis=axes)
    return out.reshape(shape) if out.shape != shape else out


#: ``(cotangent shape, primal shape) -> axes to sum``, for :func:`unbroadcast` (bounded cache).
_SUMMED_AXES: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}


def _summed_axes(dx_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    extra = len(dx_shape) - len(shape)
    # `shape` must broadcast to dx_shape: same trailing sizes, except where `shape` has a 1
    if extra < 0 or any(n != m for n, m in zip(dx_shape[extra:], shape, strict=True) if m != 1):
        raise ProjectionError(f"cotangent of shape {dx_shape} for a primal of shape {shape}")
    return tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and dx_shape[extra + i] != 1
    )


def _project_batched(dx: Batched, dtype: np.dtype[Any], shape: tuple[int, ...]) -> Batched:
    """Every direction of ``dx`` projected onto an array of ``dtype`` and ``shape``, in one step."""
    d = dx.data
    if dtype.kind == "f" and d.dtype.kind == "c":
        d = d.real
    if d.dtype != dtype:
        d = d.astype(dtype)
    extra = d.ndim - 1 - len(shape)
    if extra > 0:
        d = d.sum(axis=tuple(range(1, 1 + extra)))
    if d.shape[1:] != shape:
        d = unbroadcast(d, (d.shape[0], *shape))
    return Batched(d)


def _array_projector(x: np.ndarray | np.generic) -> Callable[[Any], Any] | None:
    kind = x.dtype.kind
    if kind in "bSUVOMm":
        return None
    dtype = x.dtype if kind in "fc" else np.dtype(np.float64)
    real = dtype.kind == "f"
    if isinstance(x, np.generic):
        scalar_type = dtype.type

        def project_scalar(dx: Any) -> Any:
            if type(dx) is Batched:
                return _project_batched(dx, dtype, ())
            dx = np.asarray(dx)
            if dx.ndim != 0:
                raise ProjectionError(f"cotangent of shape {dx.shape} for a {dtype} scalar")
            return scalar_type(dx.real if real else dx)

        return project_scalar
    shape = x.shape

    def project_array(dx: Any) -> Any:
        if type(dx) is Batched:
            return _project_batched(dx, dtype, shape)
        dx = np.asarray(dx)
        if real and dx.dtype.kind == "c":
            dx = dx.real
        if dx.dtype != dtype:
            dx = dx.astype(dtype)
        if dx.shape != shape:
            dx = unbroadcast(dx, shape)
            if not shape and not isinstance(dx, np.ndarray):
                dx = np.asarray(dx)  # a 0-d primal keeps a 0-d array, not a NumPy scalar
        return dx

    return project_array


class ProjectTo:
    """``ProjectTo(x)(dx)`` puts the cotangent ``dx`` into the tangent space of ``x``.

    See the module documentation for the behaviour on each type.

    Example:
        >>> import numpy as np, rulescore as rc
        >>> rc.ProjectTo(np.zeros(3, np.float32))(np.ones((2, 3)))
        array([2., 2., 2.], dtype=float32)
        >>> rc.ProjectTo(1.0)(2 + 3j), rc.ProjectTo("a")(1.0)
        (2.0, NoTangent())
    """

    __slots__ = ("_fn", "_primal_type")

    def __init__(self, x: Any) -> None:
        self._primal_type = type(x)
        self._fn = _projector_for(x)

    def __call__(self, dx: Any) -> Any:
        if isinstance(dx, Thunk):
            dx = dx.unthunk()
        if dx is None:
            return ZeroTangent()
        if isinstance(dx, (AbstractZero, NotImplementedTangent)):
            return dx  # a derivative that is not implemented stays one: its use raises
        return self._fn(dx)

    def __repr__(self) -> str:
        return f"ProjectTo({self._primal_type.__name__})"


def project(x: Any, dx: Any) -> Any:
    """``ProjectTo(x)(dx)`` without building a projector: the fast path for hot rules.

    Example:
        >>> import numpy as np
        >>> project(1.0, 2.0), project(np.zeros(2, np.float32), np.ones((3, 2)))
        (2.0, array([3., 3.], dtype=float32))
    """
    tx = type(x)
    if tx is float:
        tdx = type(dx)
        if tdx is float:
            return dx
        if tdx is np.float64:  # what ProjectTo(x) does, without building it
            return float(dx)
    elif tx is np.float64:
        if type(dx) is np.float64:
            return dx
    elif tx is np.ndarray and type(dx) is np.ndarray and dx.dtype == x.dtype and x.dtype.kind in "fc":
        if dx.shape == x.shape:
            return dx
        if x.ndim:
            return unbroadcast(dx, x.shape)  # a broadcast bias: summed back
    elif (tx is tuple or tx is list) and type(dx) is tangent_type(tx) and len(dx.backing) == len(x):
        # entry by entry, each with its own fast path (a list of parameters, say)
        return type(dx)(*(d if d is None or isinstance(d, AbstractZero) else project(v, d)
                          for v, d in zip(x, dx.backing, strict=True)))
    return ProjectTo(x)(dx)


def _no_tangent(dx: Any) -> Any:
    return NoTangent()


def _projector_for(x: Any) -> Callable[[Any], Any]:
    if isinstance(x, NO_TANGENT_TYPES) or isinstance(x, AbstractZero):
        return _no_tangent
    if isinstance(x, (np.ndarray, np.generic)):
        return _array_projector(x) or _no_tangent
    if isinstance(x, (int, float)):
        return _real_float
    if isinstance(x, complex):
        return _complex
    if _is_foreign_array(x):
        return _foreign_array_projector(x)
    if isinstance(x, (tuple, list)) and not is_namedtuple_type(type(x)):
        return _sequence_projector(x)
    if isinstance(x, dict):
        return _dict_projector(x)
    return _struct_projector(x)


def _is_foreign_array(x: Any) -> bool:
    """An array of another library (JAX, PyTorch, CuPy), traced ones included: an array-API object."""
    if is_numpy_input(x) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return False
    try:
        import array_api_compat
    except ImportError:  # pragma: no cover - depends on the environment
        return False
    return bool(array_api_compat.is_array_api_obj(x))


def _foreign_array_projector(x: Any) -> Callable[[Any], Any]:
    """The array projector of :func:`_array_projector` for a JAX / PyTorch / CuPy array, written in
    its own namespace, so a pullback using ``rc.project`` runs natively (under ``jax.jit`` too)."""
    xp = array_namespace(x)
    if not xp.isdtype(x.dtype, "numeric"):
        return _no_tangent  # booleans
    floating = xp.isdtype(x.dtype, ("real floating", "complex floating"))
    dtype = x.dtype if floating else xp.asarray(0.0).dtype  # integers: the library's default float
    real = not xp.isdtype(dtype, "complex floating")
    shape = tuple(x.shape)

    def project_foreign_array(dx: Any) -> Any:
        if not (hasattr(dx, "shape") and hasattr(dx, "dtype")):
            dx = xp.asarray(dx)  # a Python number
        elif is_numpy_input(dx):
            dx = xp.asarray(dx, device=getattr(x, "device", None))
        if real and xp.isdtype(dx.dtype, "complex floating"):
            dx = xp.real(dx)
        if tuple(dx.shape) != shape:
            axes = _summed_axes(tuple(dx.shape), shape)
            if axes:
                dx = xp.sum(dx, axis=axes)
            dx = xp.reshape(dx, shape)
        return dx if dx.dtype == dtype else xp.astype(dx, dtype)

    return project_foreign_array


def _sequence_projector(x: tuple[Any, ...] | list[Any]) -> Callable[[Any], Any]:
    parts = [ProjectTo(v) for v in x]
    make = tangent_type(type(x))

    def project_sequence(dx: Any) -> Any:
        if isinstance(dx, Tangent) and isinstance(dx.backing, tuple):
            entries = list(dx.backing)
        elif isinstance(dx, (tuple, list)) or (isinstance(dx, np.ndarray) and dx.ndim >= 1):
            # an array for an array-like list (np.sum([a, b])): one entry per row
            entries = list(dx)
        else:
            raise ProjectionError(f"cotangent of type {type(dx).__name__} for a {type(x).__name__}")
        if len(entries) != len(parts):
            raise ProjectionError(f"cotangent with {len(entries)} entries for a "
                                  f"{type(x).__name__} of length {len(parts)}")
        return make(*(p(d) for p, d in zip(parts, entries, strict=True)))

    return project_sequence


def _dict_projector(x: dict[Any, Any]) -> Callable[[Any], Any]:
    parts = {k: ProjectTo(v) for k, v in x.items()}
    make = tangent_type(type(x))

    def project_dict(dx: Any) -> Any:
        entries = dict(dx.items()) if isinstance(dx, (Tangent, dict)) else None
        if entries is None:
            raise ProjectionError(f"cotangent of type {type(dx).__name__} for a dict")
        unknown = entries.keys() - parts.keys()
        if unknown:
            raise ProjectionError(f"cotangent has keys {sorted(map(repr, unknown))} the dict lacks")
        return make({k: parts[k](d) for k, d in entries.items()})

    return project_dict


def _struct_projector(x: Any) -> Callable[[Any], Any]:
    primal_type = type(x)
    parts = {k: ProjectTo(v) for k, v in fields_of(x).items()}
    make = tangent_type(primal_type)

    def project_struct(dx: Any) -> Any:
        if isinstance(dx, primal_type):
            return dx  # a legacy adjoint's primal-typed cotangent is kept as it is
        positional = isinstance(dx, (tuple, list)) or (
            isinstance(dx, Tangent) and isinstance(dx.backing, tuple))
        if positional and is_namedtuple_type(primal_type):
            # a NamedTuple is a tuple: a cotangent built by position names its fields in order
            by_position = list(dx.backing if isinstance(dx, Tangent) else dx)
            if len(by_position) != len(parts):
                raise ProjectionError(f"cotangent with {len(by_position)} entries for a "
                                      f"{primal_type.__name__} of {len(parts)} fields")
            entries = dict(zip(parts, by_position, strict=True))
        elif isinstance(dx, Tangent):
            if type(dx) is not make:
                raise ProjectionError(f"{type(dx).__name__} for a {primal_type.__name__}")
            entries = dict(dx.items())
        elif isinstance(dx, dict):
            entries = dx
        else:
            raise ProjectionError(f"cotangent of type {type(dx).__name__} for a "
                                  f"{primal_type.__name__}")
        unknown = entries.keys() - parts.keys()
        if unknown:
            raise ProjectionError(f"{primal_type.__name__} has no field(s) {sorted(unknown)}")
        return make(**{k: parts[k](d) for k, d in entries.items()})

    return project_struct
