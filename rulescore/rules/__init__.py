"""The rule library: one module per family, each with one table, ``RULES`` (a tuple of
:class:`rulescore.RulePair`), registered by the one loop below.

Families: :mod:`.operators`, :mod:`.math`, :mod:`.builtins`, :mod:`.ufuncs`, :mod:`.contractions`,
:mod:`.reductions`, :mod:`.shape`, :mod:`.indexing`, :mod:`.linalg`, :mod:`.fft`; the SciPy families
(:mod:`.scipy_special`, :mod:`.scipy_stats`, :mod:`.scipy_linalg`, :mod:`.scipy_signal`,
:mod:`.scipy_integrate`) register when SciPy imports them (:mod:`._optional`).
"""

import importlib

from rulescore._rule_pair import register_rules
from rulescore.rules._optional import watch

FAMILIES = ("operators", "math", "builtins", "ufuncs", "contractions", "reductions", "shape",
            "indexing", "linalg", "fft")

for _family in FAMILIES:
    _module = importlib.import_module(f"rulescore.rules.{_family}")
    _table = getattr(_module, "RULES", ())
    if isinstance(_table, tuple):  # families not yet converted register themselves on import
        register_rules(*_table)

watch()
