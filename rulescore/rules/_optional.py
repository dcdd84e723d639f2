"""Rule families for optional dependencies (SciPy), registered when their module is imported.

``import rulescore`` never imports SciPy (it takes a few hundred milliseconds). Each optional
family, a module of :mod:`rulescore.rules` with a ``RULES`` table, is registered once the SciPy
module it covers has been executed: at once if it already was, otherwise by a one-shot
``sys.meta_path`` hook that wraps that module's loader and removes itself when every watched
module has loaded. A program that never imports SciPy pays one failed name test per import.

Example:
    >>> import rulescore as rc, scipy.special
    >>> rc.rrule.has_rules(scipy.special.gammaln)
    True
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from rulescore._rule_pair import register_rules

#: The module whose import registers a family -> the family module of :mod:`rulescore.rules`.
OPTIONAL_FAMILIES: dict[str, str] = {
    "scipy.special": "scipy_special",
    "scipy.stats": "scipy_stats",
    "scipy.linalg": "scipy_linalg",
    "scipy.signal": "scipy_signal",
    "scipy.integrate": "scipy_integrate",
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


class _AfterImport:
    """The meta-path finder that registers a family right after its SciPy module, or the
    family module itself, executes. ``names`` maps each watched module to its SciPy module."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.finding: set[str] = set()  # another hook that asks every finder asks this one too

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self.names or fullname in self.finding:
            return None
        self.finding.add(fullname)
        try:
            spec = self._others_spec(fullname, path, target)
        finally:
            self.finding.discard(fullname)
        if spec is None:
            return None
        original = getattr(spec.loader, "exec_module", None)
        if original is None:
            return spec

        scipy_name = self.names[fullname]

        def exec_module(module: Any) -> None:
            original(module)
            register_family(scipy_name)
            if set(OPTIONAL_FAMILIES) <= _REGISTERED and self in sys.meta_path:
                sys.meta_path.remove(self)

        spec.loader.exec_module = exec_module
        return spec

    def _others_spec(self, fullname: str, path: Any, target: Any) -> Any:
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(fullname, path, target)
            if spec is not None:
                return spec
        return None


def watch() -> None:
    """Register the families of the SciPy modules already imported; hook the others."""
    pending: dict[str, str] = {}
    for name in OPTIONAL_FAMILIES:
        if name in sys.modules:
            register_family(name)
        else:
            pending[name] = pending[_family_module(name)] = name
    if pending:
        sys.meta_path.insert(0, _AfterImport(pending))
