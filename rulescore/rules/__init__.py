"""The rule library: one module per family, each with one table, ``RULES`` (a tuple of
:class:`rulescore.RulePair`), registered by the one loop below.

Families: :mod:`.operators`, :mod:`.math`, :mod:`.builtins`, :mod:`.ufuncs`, :mod:`.reductions`,
:mod:`.shape`, :mod:`.indexing`, :mod:`.linalg`, :mod:`.fft`.
"""

import importlib

from rulescore._rule_pair import register_rules

FAMILIES = ("operators", "math", "builtins", "ufuncs", "reductions", "shape", "indexing",
            "linalg", "fft")

for _family in FAMILIES:
    _module = importlib.import_module(f"rulescore.rules.{_family}")
    _table = getattr(_module, "RULES", ())
    if isinstance(_table, tuple):  # families not yet converted register themselves on import
        register_rules(*_table)
