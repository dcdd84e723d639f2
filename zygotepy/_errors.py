"""Errors the engine raises: each names the function, the argument and what to do; and
:func:`warn_user`, which attributes the engine's warnings to the user's line."""

from __future__ import annotations

import contextvars
import linecache
import os
import sys
import warnings
from typing import Any

import rulescore
from rulescore._checks import callable_name

_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


#: The outermost NumPy or SciPy function being differentiated through its source (it has no rule)
#: and its positional arguments, or ``None`` outside library code: errors inside it name it.
LIBRARY_CALL: contextvars.ContextVar[tuple[Any, tuple[Any, ...]] | None] = contextvars.ContextVar(
    "zygotepy_library_call", default=None)


class UntraceableError(TypeError):
    """Differentiated code reached something the engine cannot see into (a compiled routine
    given a traced value, or a traced value converted to a plain number/array there), or a
    construct it refuses rather than differentiate wrongly (a write through a view it cannot
    place in the array owning the memory)."""


class NotScalarError(TypeError):
    """``gradient`` was given a function whose output is not a real scalar."""


#: Where the engine's own frames live: a warning is attributed to the first frame outside them.
_PACKAGE_DIRS = tuple(os.path.dirname(os.path.abspath(m.__file__ or "")) + os.sep for m in (rulescore,)) + (
    os.path.dirname(os.path.abspath(__file__)) + os.sep,)


def warn_user(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the user's line: the innermost frame outside zygotepy and
    rulescore (rewritten user functions keep their own file names, so they count as the user's).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_user("look here", UserWarning)
        >>> caught[0].filename.endswith(".py") or caught[0].filename.startswith("<doctest")
        True
    """
    if sys.version_info >= (3, 12):
        warnings.warn(message, category, skip_file_prefixes=_PACKAGE_DIRS)  # type: ignore[call-arg,unused-ignore]
        return
    frame = sys._getframe(1)
    level = 2  # 1 is this function; 2 its caller
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def user_code() -> str:
    """The innermost frame outside zygotepy, as ``function (file:line)``: errors name the user's
    code that reached the construct.

    Example:
        >>> def loss():
        ...     return user_code()
        >>> loss().startswith("loss (")
        True
    """
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_ENGINE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "unknown code"
    code = frame.f_code
    return f"{code.co_qualname} ({code.co_filename}:{frame.f_lineno})"


def unseen_code() -> tuple[str, str]:
    """``user_code()`` for code running without the engine rewriting it, and why it runs as it
    is: a traced value reached it through an operation Python or compiled code made on its behalf.

    Example:
        >>> def callback():
        ...     return unseen_code()
        >>> callback()[0].startswith("callback (")
        True
    """
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_ENGINE_DIR):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "unknown code", "it is not Python code"
    code = frame.f_code
    where = f"{code.co_qualname} ({code.co_filename}:{frame.f_lineno})"
    if not linecache.getlines(code.co_filename, frame.f_globals):
        why = "it has no Python source (exec of a string, or a compiled routine's callback)"
    elif "site-packages" in code.co_filename or "dist-packages" in code.co_filename:
        why = "it is library code that zygotepy runs as it is"
    else:
        why = ("it was called by Python itself or by compiled code (a callback or a special method "
               "zygotepy does not rewrite), so zygotepy does not see the calls it makes")
    return where, why


def object_array_error(fn: Any) -> UntraceableError:
    """The refusal of an array of dtype object made from traced values (``np.array([x, 1.0],
    dtype=object)``, a traced value written into ``np.empty(n, dtype=object)``): NumPy's object
    arrays hold Python objects, which carry no tangent, so the derivative would be lost silently.

    Example:
        >>> import numpy as np
        >>> print(object_array_error(np.array))  # doctest: +ELLIPSIS
        numpy.array made an array of dtype object from traced values ...
    """
    return UntraceableError(
        f"{callable_name(fn)} made an array of dtype object from traced values inside "
        f"{user_code()}: its entries are Python objects, which carry no derivative, so the gradient "
        "through them would be lost; build a numeric array (dtype=float, or np.stack of the values) "
        "or keep the values in a list")
