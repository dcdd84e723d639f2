"""Run a callback once a module has been imported, without importing it: rule families for
modules that are costly to import (``numpy.random``) register on first use of their module,
so ``import rulescore`` does not pay for them."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


class _AfterImport:
    """A meta-path finder that finds nothing itself: it wraps the real loader of one module so
    that ``callback(module)`` runs right after the module executes, then removes itself."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.callback = callback
        self.finding = False

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name or self.finding:
            return None
        self.finding = True  # another hook for the same module asks every finder, this one too
        try:
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                spec = None if finder is self or find is None else find(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.finding = False
        if getattr(spec.loader, "exec_module", None) is None:
            return spec
        # a loader of our own around the real one: a loader may serve many modules (pytest's
        # assertion rewriter does), so it is never changed itself
        spec.loader = _ThenCallback(spec.loader, self)
        return spec

    def done(self, module: ModuleType) -> None:
        """The module has executed: unhook, bind it in its parent package, run the callback."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        parent, _, child = self.name.rpartition(".")
        if parent in sys.modules:  # as the import system does next: `numpy.fft` reads it
            setattr(sys.modules[parent], child, module)
        self.callback(module)


class _ThenCallback:
    """The real loader of one module, then the hook's callback (other attributes delegated)."""

    def __init__(self, loader: Any, hook: _AfterImport) -> None:
        self.loader, self.hook = loader, hook

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.hook.done(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> None:
    """``callback(module)`` now if module ``name`` is imported already, else right after its import.

    Example:
        >>> import sys
        >>> seen = []
        >>> when_imported("json", lambda m: seen.append(m.__name__))
        >>> import json
        >>> seen
        ['json']
    """
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
    else:
        sys.meta_path.insert(0, _AfterImport(name, callback))
