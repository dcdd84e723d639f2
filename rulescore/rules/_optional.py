"""Rule families for optional dependencies (SciPy) and for modules ``import rulescore`` should not
import (``numpy.polynomial``, ``statistics``, ``json``, ``logging``), registered when their
module is imported.

``import rulescore`` never imports SciPy (it takes a few hundred milliseconds). Each optional
family, a module of :mod:`rulescore.rules` with a ``RULES`` table, is registered once the SciPy
module it covers has been executed: at once if it already was, otherwise right after its
import (:func:`~rulescore.rules._on_import.when_imported`). A program that never imports
SciPy pays one failed name test per import.

Example:
    >>> import rulescore as rc, scipy.special
    >>> rc.rrule.has_rules(scipy.special.gammaln)
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

from rulescore._rule_pair import register_rules
from rulescore.rules._on_import import when_imported

#: The module whose import registers a family -> the family module of :mod:`rulescore.rules`.
OPTIONAL_FAMILIES: dict[str, str] = {
    "scipy.special": "scipy_special",
    "scipy.stats": "scipy_stats",
    "scipy.linalg": "scipy_linalg",
    "scipy.signal": "scipy_signal",
    "scipy.integrate": "scipy_integrate",
    "scipy.optimize": "scipy_optimize",
    "scipy.spatial.distance": "scipy_spatial",
    "scipy.interpolate": "scipy_interpolate",
    "statistics": "stdlib_statistics",
    "json": "stdlib_text",
    "logging": "stdlib_text",
    "numpy.polynomial": "numpy_polynomial",
}

_REGISTERED: set[str] = set()


def register_family(module_name: str) -> None:
    """Register the rules of the family covering ``module_name`` (idempotent; the module must
    be importable). A family module that is itself being imported (it imports SciPy at its
    top) is registered when its own import finishes."""
    if module_name in _REGISTERED:
        return
    family = importlib.import_module(_family_module(module_name))
    table = getattr(family, "RULES", None)
    if table is None or module_name in _REGISTERED:  # partially initialised: the hook on its
        return  # own loader registers it; or that hook registered it during the import above
    _REGISTERED.add(module_name)
    register_rules(*table)


def _family_module(module_name: str) -> str:
    return f"rulescore.rules.{OPTIONAL_FAMILIES[module_name]}"


def watch() -> None:
    """Register the families of the SciPy modules already imported; hook the others (and the
    family modules themselves, for a family imported directly: its ``RULES`` exist only once
    its own import finishes)."""
    for name in OPTIONAL_FAMILIES:
        when_imported(name, _registering(name))
        if name not in _REGISTERED:
            when_imported(_family_module(name), _registering(name))


def _registering(name: str) -> Callable[[ModuleType], None]:
    """The callback registering the family of SciPy module ``name``, once a module is imported."""
    def register_after_import(module: ModuleType) -> None:
        register_family(name)
    return register_after_import
