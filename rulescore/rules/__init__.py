"""The rule library: one module per family, each with one table, ``RULES`` (a tuple of
:class:`rulescore.RulePair`), registered by the one loop below.

Families: :mod:`.operators`, :mod:`.math`, :mod:`.builtins`, :mod:`.ufuncs`, :mod:`.reductions`,
:mod:`.shape`, :mod:`.indexing`, :mod:`.linalg`; :mod:`.fft` and :mod:`.random` when
``numpy.fft`` and ``numpy.random`` are first imported.
"""

import importlib
from collections.abc import Callable
from types import ModuleType

from rulescore._rule_pair import register_rules
from rulescore.rules._on_import import when_imported
from rulescore.rules.random import register_random

FAMILIES = ("operators", "math", "builtins", "ufuncs", "reductions", "shape", "indexing",
            "linalg", "fft", "random")

#: Families for modules NumPy imports only on first use, registered then (importing the module
#: costs time ``import rulescore`` should not pay): family -> module.
ON_IMPORT = {"fft": "numpy.fft"}

for _family in FAMILIES:
    if _family in ON_IMPORT or _family == "random":
        continue
    _module = importlib.import_module(f"rulescore.rules.{_family}")
    _table = getattr(_module, "RULES", ())
    if isinstance(_table, tuple):  # families not yet converted register themselves on import
        register_rules(*_table)

# numpy.random is costly to import and NumPy imports it only on first use: so do its rules
when_imported("numpy.random", register_random)


def _importer(family: str) -> Callable[[ModuleType], None]:
    """The callback importing ``family`` (which registers itself) once its module is imported."""
    def import_family(module: ModuleType) -> None:
        importlib.import_module(f"rulescore.rules.{family}")
    return import_family


for _family, _name in ON_IMPORT.items():
    when_imported(_name, _importer(_family))
