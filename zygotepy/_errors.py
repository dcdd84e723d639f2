"""Errors the engine raises: each names the function, the argument and what to do."""

import os
import sys

_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class UntraceableError(TypeError):
    """Differentiated code reached something the engine cannot see into (a compiled routine
    given a traced value, or a traced value converted to a plain number/array there), or a
    construct it refuses rather than differentiate wrongly (an in-place write that another
    reference to the array would not see)."""


class NotScalarError(TypeError):
    """``gradient`` was given a function whose output is not a real scalar."""


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
