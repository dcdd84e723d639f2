"""The rule library: one module per family, each a set of registration tables.

Importing this package registers every rule. Families: :mod:`.operators`, :mod:`.math`,
:mod:`.builtins`, :mod:`.ufuncs`, :mod:`.reductions`, :mod:`.shape`, :mod:`.indexing`,
:mod:`.linalg`, :mod:`.fft`.
"""

import importlib

FAMILIES = ("operators", "math", "builtins", "ufuncs", "reductions", "shape", "indexing",
            "linalg", "fft")

for _family in FAMILIES:
    try:
        importlib.import_module(f"rulescore.rules.{_family}")
    except ModuleNotFoundError as err:  # a family not written yet
        if err.name != f"rulescore.rules.{_family}":
            raise
