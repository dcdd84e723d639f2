"""The two zero tangents: ``ZeroTangent`` (the derivative is zero) and ``NoTangent``
(the primal has no tangent space: ints used as indices, strings, bools), and the one list of
the types with no tangent space.

Both zeros are falsy singletons, the identity of ``+`` and absorbing under ``*``; their
operators are installed by :mod:`rulescore._arithmetic`, with the rest of tangent arithmetic.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # importing typing_extensions costs a few ms at import time
    from typing_extensions import Self

from rulescore._abstract_tangent import AbstractTangent

#: Data with no tangent space: flags, text, ``None``, classes, index ranges, dtypes. A value of
#: these types is a constant to every rule and engine; a non-zero cotangent for one is a bug.
NO_TANGENT_DATA: tuple[type, ...] = (
    bool, np.bool_, str, bytes, type(None), type, range, slice, type(Ellipsis), np.dtype,
)
#: Every type with no tangent space: the data above, functions and modules. ``ProjectTo``
#: gives ``NoTangent()`` for them and engines do not trace them as inputs. (An engine that
#: differentiates closures may still see a rule's bound-method *output* as its ``__self__``.)
NO_TANGENT_TYPES: tuple[type, ...] = NO_TANGENT_DATA + (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, np.ufunc,
)


class AbstractZero(AbstractTangent):
    """Base of :class:`ZeroTangent` and :class:`NoTangent`: a tangent that is known to be zero.

    Example:
        >>> import rulescore as rc
        >>> isinstance(rc.NoTangent(), rc.AbstractZero), bool(rc.ZeroTangent())
        (True, False)
    """

    __slots__ = ()
    __array_ufunc__ = None  # make NumPy defer `array + zero` to our reflected operators
    _instance: AbstractZero | None = None

    def __new__(cls) -> Self:
        inst = cls.__dict__.get("_instance")
        if inst is None:
            inst = super().__new__(cls)
            cls._instance = inst
        return inst

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())

    def __iter__(self) -> Any:
        return iter(())

    def __getattr__(self, name: str) -> Any:
        # A zero tangent of a struct has every field zero: `z.x` reads as zero.
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: Any) -> Any:
        return self

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions that are linear in each array argument (``np.sum``, ``np.dot``,
        ``np.reshape``, ...) give the zero itself, as the operators do: a tangent map written
        with them needs no zero guard. Every other function behaves as without this method."""
        if func in _LINEAR_FUNCTIONS:
            return self
        return func._implementation(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(type(self))

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if other is None or isinstance(other, AbstractZero):
            return False
        return NotImplemented  # let `zero == Tangent(...)` ask the Tangent, as the reverse does

    @property
    def real(self) -> Any:
        return self

    @property
    def imag(self) -> Any:
        return self

    if TYPE_CHECKING:  # installed by rulescore._arithmetic: `*`, `/`, `@`, `-`, `+` give the zero

        def __pos__(self) -> Any: ...

        def __matmul__(self, other: Any) -> Any: ...

        def __rmatmul__(self, other: Any) -> Any: ...


class ZeroTangent(AbstractZero):
    """The derivative is zero. ``None`` means the same thing wherever a tangent is accepted.

    Example:
        >>> import rulescore as rc
        >>> rc.ZeroTangent() + 3.0, 2.0 * rc.ZeroTangent()
        (3.0, ZeroTangent())
    """

    __slots__ = ()


class NoTangent(AbstractZero):
    """The primal has no tangent space (an integer index, a string, a bool, a function).

    Rules return it for such arguments; a test harness distinguishes it from ``ZeroTangent``.

    Example:
        >>> import rulescore as rc
        >>> rc.NoTangent() + rc.NoTangent(), rc.NoTangent() + rc.ZeroTangent()
        (NoTangent(), ZeroTangent())
    """

    __slots__ = ()


#: NumPy functions whose result is zero when an array argument is a zero (linear in each array
#: argument, or a reshaping of one): ``AbstractZero.__array_function__`` gives the zero for them.
_LINEAR_FUNCTIONS = frozenset(
    getattr(np, name) for name in (
        "sum", "mean", "cumsum", "diff", "trace", "diagonal", "dot", "vdot", "inner", "outer",
        "tensordot", "einsum", "kron", "cross", "reshape", "ravel", "transpose", "moveaxis", "swapaxes",
        "squeeze", "expand_dims", "broadcast_to", "flip", "roll", "real", "imag",
    ) if hasattr(np, name))  # ufuncs (np.multiply, np.conj) defer to the operators: __array_ufunc__
