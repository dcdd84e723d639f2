"""The rule library: one module per family, each with one table, ``RULES`` (a tuple of
:class:`rulescore.RulePair`), registered by the one loop below.

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

from rulescore._rule_pair import register_rules
from rulescore.rules._on_import import when_imported
from rulescore.rules._optional import watch
from rulescore.rules.random import register_random

FAMILIES = ("operators", "math", "builtins", "ufuncs", "contractions", "reductions", "shape",
            "indexing", "linalg", "fft", "random", "numeric", "ufunc_methods", "writes", "broadcasting",
            "numpy_index_helpers")

#: Families for modules NumPy imports only on first use, registered then (importing the module
#: costs time ``import rulescore`` should not pay): family -> module.
ON_IMPORT = {"fft": "numpy.fft"}


def register_family(family: str) -> None:
    """Import the family module ``family`` and register its ``RULES`` table."""
    register_rules(*importlib.import_module(f"rulescore.rules.{family}").RULES)


for _family in FAMILIES:
    if _family not in ON_IMPORT and _family != "random":
        register_family(_family)

# numpy.random is costly to import and NumPy imports it only on first use: so do its rules
when_imported("numpy.random", register_random)
for _family, _name in ON_IMPORT.items():
    when_imported(_name, lambda module, family=_family: register_family(family))  # type: ignore[misc]
watch()
