"""The rule library: one module per family, each with one table, ``RULES`` (a tuple of
:class:`rulescore.RulePair`), registered by the one loop below (:func:`register_family`).

Families: :mod:`.operators`, :mod:`.math`, :mod:`.builtins`, :mod:`.ufuncs`, :mod:`.contractions`,
:mod:`.reductions`, :mod:`.shape`, :mod:`.indexing`, :mod:`.linalg`, :mod:`.numeric`,
:mod:`.ufunc_methods`, :mod:`.writes`, :mod:`.broadcasting`, :mod:`.numpy_index_helpers`;
:mod:`.fft` and :mod:`.random` when ``numpy.fft`` and ``numpy.random`` are first imported; the
SciPy families (:mod:`.scipy_special`, :mod:`.scipy_stats`, :mod:`.scipy_linalg`,
:mod:`.scipy_signal`, :mod:`.scipy_integrate`, :mod:`.scipy_optimize`, :mod:`.scipy_spatial`,
:mod:`.scipy_interpolate`)
when SciPy imports them, and :mod:`.numpy_polynomial`, :mod:`.stdlib_statistics`,
:mod:`.stdlib_text` when ``numpy.polynomial``, ``statistics``, ``json`` or ``logging`` is
imported (:mod:`._optional`).
"""

import importlib
import sys
from collections.abc import Callable

from rulescore import RulePair, frule, rrule
from rulescore.rules._on_import import when_imported
from rulescore.rules._optional import watch

FAMILIES = ("operators", "math", "builtins", "ufuncs", "contractions", "reductions", "shape",
            "indexing", "linalg", "fft", "random", "numeric", "ufunc_methods", "writes", "broadcasting",
            "numpy_index_helpers")

#: Families for modules NumPy imports only on first use, registered then (importing the module
#: costs time ``import rulescore`` should not pay): family -> module.
ON_IMPORT = {"fft": "numpy.fft", "random": "numpy.random"}

#: Families imported on the first lookup of a callable they cover (:mod:`._index` lists them), or
#: when something imports them; the others (the operators, the ufuncs and their methods, indexing
#: and writes, which zygotepy imports itself) at once.
LAZY = ("math", "builtins", "contractions", "reductions", "shape", "linalg", "numeric", "broadcasting")

_REGISTERED: set[str] = set()


def register_family(family: str) -> None:
    """Import the family module ``family`` and register its ``RULES`` table (once).

    Example:
        >>> import numpy as np, rulescore as rc
        >>> register_family("linalg")
        >>> rc.rrule.rules_for(np.linalg.inv)  # doctest: +ELLIPSIS
        [<rrule(numpy.linalg.inv) at ...linalg.py:...>]
    """
    if family in _REGISTERED:
        return
    table = getattr(importlib.import_module(f"rulescore.rules.{family}"), "RULES", None)
    if table is None or family in _REGISTERED:  # being imported: its import hook registers it
        return
    _REGISTERED.add(family)
    for pair in table:
        if not isinstance(pair, RulePair):
            raise TypeError(f"rulescore.rules.{family}.RULES holds {pair!r}: write rc.RulePair entries")
        if pair.reverse:
            rrule.declare(pair, family)
        if pair.forward:
            frule.declare(pair, family)


def _loader(family: str) -> Callable[[], bool]:
    def load_family() -> bool:
        register_family(family)
        return family in _REGISTERED

    return load_family


def _defer(family: str) -> None:
    """Note the callables of a lazy family in the registry, and register it when it is imported."""
    from rulescore.rules._index import COVERS

    if family not in COVERS:  # not in the index (yet): at once
        register_family(family)
        return
    both, reverse, forward = COVERS[family]
    load = _loader(family)
    for f in (*both, *reverse):
        rrule.placeholder(f, family, load)
    for f in (*both, *forward):
        frule.placeholder(f, family, load)
    when_imported(f"rulescore.rules.{family}", lambda module: register_family(family))


for _family in FAMILIES:
    if _family in LAZY and f"rulescore.rules.{_family}" not in sys.modules:
        _defer(_family)
    elif _family not in ON_IMPORT:
        register_family(_family)

# numpy.fft and numpy.random are costly to import and NumPy imports them only on first use: so
# do their rules
for _family, _name in ON_IMPORT.items():
    when_imported(_name, lambda module, family=_family: register_family(family))  # type: ignore[misc]
watch()
