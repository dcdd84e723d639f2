"""Helpers shared by several rule families."""

from __future__ import annotations

import inspect
from typing import Any

_SIGNATURES: dict[Any, inspect.Signature] = {}


def bind_arguments(f: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``f``'s arguments by name, defaults filled in (signatures cached per callable).

    Example:
        >>> import numpy as np
        >>> bind_arguments(np.linalg.norm, (np.ones(2),), {})["ord"] is None
        True
    """
    sig = _SIGNATURES.get(f)
    if sig is None:
        sig = _SIGNATURES[f] = inspect.signature(f)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
